//! Every kernel of the GEMM family that the tables and sweeps can build, by name, for the
//! shader validation test (`wgpu::shader_variants`): matmul's, and the convolutions' for the
//! gather each conv op supplies.

use super::codegen::{ConvGather, Epilogue, Stage, Variant};
use super::source::spec;
use super::table::{CONV, TABLE};
use super::tiles::{CoopTiles, Kernel, Load, MATVEC_MAX_M, MatVec};
use crate::expr::program::{Op, Program, Step, Value};
use crate::spec::elementwise::{BinaryOp, UnaryOp};
use crate::spec::kernel_name;
use crate::spec::matmul::MatmulOp;
use crate::wgpu::kernel::Index;
use crate::wgpu::kernel::Spec;
use crate::wgpu::nn::rows::RowNorm;
use crate::wgpu::repr::Caps;
use crate::{DType, Result};

/// Every matmul kernel for `caps`, named `matmul_{dtype}_{kernel}_{a load}_{b load}` (the first,
/// for contiguous operands, `matmul_{dtype}`): each tile configuration of the table the dtype
/// can get with load patterns that take every loader for each operand and every way the inner
/// products hold them (the loaders of A and B are independent code), and the matrix-vector
/// kernels with vector and element loads.
pub fn matmul(caps: Caps) -> Vec<(String, Result<Spec>)> {
    let mut v = vec![];
    let every = vec![
        (Load::KVec, Load::OVec),
        (Load::OVec, Load::KVec),
        (Load::KVec, Load::KVec),
        (Load::Gather, Load::Gather),
    ];
    let mv = [(Load::KVec, Load::OVec), (Load::KVec, Load::KVec), (Load::Gather, Load::Gather)];
    for dt in caps.dtypes().into_iter().filter(|d| MatmulOp::Matmul.dtypes().contains(d)) {
        let mut kernels: Vec<(Kernel, Vec<(Load, Load)>)> = if dt == DType::F64 {
            vec![(Kernel::Tiled(TABLE.f64), vec![(Load::Gather, Load::Gather)])]
        } else {
            TABLE.tiled().map(|t| (Kernel::Tiled(t), every.clone())).to_vec()
        };
        for m in [1, MATVEC_MAX_M as u32] {
            for rows in [false, true] {
                let tiles = if rows { TABLE.matvec_rows } else { TABLE.matvec };
                kernels.push((Kernel::MatVec(MatVec { m, rows, tiles }), mv.to_vec()));
            }
        }
        if dt == DType::F16 && caps.f16 {
            // Each way of feeding the workgroup buffers.
            for pipe in 0..=2 {
                kernels.push((Kernel::Coop(CoopTiles { pipe, ..TABLE.coop }), every.clone()));
            }
            kernels.push((Kernel::Coop(TABLE.coop_small), every.clone()));
        }
        let base = kernel_name(MatmulOp::Matmul.name(), dt);
        let mut first = true;
        for (k, loads) in kernels {
            for (i, (a, b)) in loads.into_iter().enumerate() {
                let c_vec = i % 2 == 0;
                // The first is the kernel of contiguous operands: it carries the plain name.
                let name = if first { base.clone() } else { format!("{base}_{k}_{a:?}_{b:?}") };
                first = false;
                let mut variant =
                    Variant { dtype: dt, a, b, c_vec, gather: None, split: false, epilogue: None, prologue: None };
                v.push((name.clone(), spec(caps, Stage::Gemm(k), &variant)));
                if i < 2 {
                    // Its stores with an epilogue, whole runs of four or not.
                    variant.epilogue = Some(epilogue(dt));
                    v.push((format!("{name}_epilogue"), spec(caps, Stage::Gemm(k), &variant)));
                }
                if i == 0 && matches!(k, Kernel::MatVec(m) if !m.rows) && dt != DType::F64 {
                    // A layer norm (weight and bias) before it with the epilogue; an rms norm
                    // (weight) without.
                    let layer = RowNorm { center: true, weight: true, bias: true };
                    variant.prologue = Some(layer);
                    v.push((format!("{name}_layer_norm_epilogue"), spec(caps, Stage::Gemm(k), &variant)));
                    variant.epilogue = None;
                    variant.prologue = Some(RowNorm { center: false, bias: false, ..layer });
                    v.push((format!("{name}_rms_norm"), spec(caps, Stage::Gemm(k), &variant)));
                }
            }
        }
        // Split-K (never f64): the parts' f32 products from the small tiles and (f16) the
        // cooperative kernel, and their sum into C with whole runs of four or not.
        if dt == DType::F64 {
            continue;
        }
        let mut split = vec![Kernel::Tiled(TABLE.small)];
        if dt == DType::F16 && caps.f16 {
            split.push(Kernel::Coop(TABLE.coop_small));
        }
        for k in split {
            let variant = Variant {
                dtype: dt,
                a: Load::KVec,
                b: Load::OVec,
                c_vec: true,
                gather: None,
                split: true,
                epilogue: None,
                prologue: None,
            };
            v.push((format!("{base}_{k}_split"), spec(caps, Stage::Gemm(k), &variant)));
        }
        for c_vec in [true, false] {
            for epilogue in [None, Some(epilogue(dt))] {
                let stores = if c_vec { "vec" } else { "elem" };
                let name = format!("{base}_split_sum_{stores}{}", if epilogue.is_some() { "_epilogue" } else { "" });
                v.push((name, spec(caps, Stage::Sum, &Variant::sum(dt, c_vec, epilogue))));
            }
        }
    }
    v
}

/// A transformer's epilogue: a bias row broadcast down C, a GELU and a residual add.
pub(crate) fn epilogue(dt: DType) -> Epilogue {
    let step = |op, args: &[Value]| Step { op, args: args.iter().map(|&a| (a, dt)).collect(), dtype: dt };
    let steps = vec![
        step(Op::Binary(BinaryOp::Add), &[Value::Input(0), Value::Input(1)]),
        step(Op::Unary(UnaryOp::Gelu), &[Value::Step(0)]),
        step(Op::Binary(BinaryOp::Add), &[Value::Input(2), Value::Step(1)]),
    ];
    Epilogue { program: Program { inputs: vec![dt; 3], steps }, index: vec![Index::Strided(2), Index::Contiguous] }
}

/// Every kernel of the convolution `op` (of `dtypes`, its B gathered by `gather`), named
/// `{op}_{dtype}` (weight loaded along K, through [`CONV`]'s tiles), then `_{kernel}_{a load}`:
/// those and matmul's large tiles (which a sweep may force) with the weight strided or along K,
/// and the cooperative kernels for f16; `first_only`: the first alone (the 1-D ops run the 2-D
/// kernels).
pub(crate) fn conv(
    caps: Caps,
    op: &str,
    dtypes: &[DType],
    first_only: bool,
    gather: ConvGather,
) -> Vec<(String, Result<Spec>)> {
    let mut v = vec![];
    for dt in caps.dtypes().into_iter().filter(|d| dtypes.contains(d)) {
        let mut kernels = if dt == DType::F64 {
            vec![Kernel::Tiled(TABLE.f64)]
        } else {
            let bands = CONV.bands.iter().map(|b| Kernel::Tiled(b.tiled));
            [CONV.big, TABLE.big, TABLE.big16, TABLE.f64].map(Kernel::Tiled).into_iter().chain(bands).collect()
        };
        if dt == DType::F16 && caps.f16 {
            kernels.extend(
                [CONV.coop, TABLE.coop]
                    .map(Kernel::Coop)
                    .into_iter()
                    .chain(CONV.bands.iter().map(|b| Kernel::Coop(b.coop))),
            );
        }
        // Each once (the bands repeat the tables' tiles), in order.
        let mut unique: Vec<Kernel> = vec![];
        for k in kernels {
            if !unique.contains(&k) {
                unique.push(k);
            }
        }
        let base = kernel_name(op, dt);
        let mut first = true;
        // The weight along K with whole runs of C, and strided with ragged ones (f64: strided).
        let loads: &[(Load, bool)] =
            if dt == DType::F64 { &[(Load::Gather, false)] } else { &[(Load::KVec, true), (Load::Gather, false)] };
        for k in unique {
            for &(a, c_vec) in loads {
                if !first && first_only {
                    break;
                }
                let name = if first { base.clone() } else { format!("{base}_{k}_{a:?}") };
                first = false;
                let variant = Variant {
                    dtype: dt,
                    a,
                    b: Load::Gather,
                    c_vec,
                    gather: Some(gather),
                    split: false,
                    epilogue: None,
                    prologue: None,
                };
                v.push((name, spec(caps, Stage::Gemm(k), &variant)));
            }
        }
    }
    v
}
