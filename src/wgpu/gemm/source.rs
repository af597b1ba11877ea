//! A GEMM-family kernel's [`Spec`]: the bindings, element code and metadata slots every kernel
//! shares, completed by the kernel's own specialisation (tiled, matrix-vector, cooperative).

use super::codegen::{Stage, Variant, element, input_code, output_binding, output_code, prologue_code, run4_code};
use super::tiles::Kernel;
use super::{coop, slots, tiled};
use crate::spec::Family;
use crate::spec::matmul::MatmulOp;
use crate::wgpu::kernel::{Index, Spec, family_source, header, section};
use crate::wgpu::repr::{Access, Caps, Repr};
use crate::{Error, Result};

/// The kernel of `stage` for problems of `shape`.
pub(crate) fn spec(caps: Caps, stage: Stage, shape: &Variant) -> Result<Spec> {
    match stage {
        Stage::Gemm(k) => gemm_spec(caps, &k, shape),
        Stage::Sum => sum_spec(caps, shape),
    }
}

/// Split-K's sum of the parts of C's `shape.dtype` (see `split_sum` in `shaders/matmul.wgsl`).
fn sum_spec(caps: Caps, shape: &Variant) -> Result<Spec> {
    let r = Repr::of(shape.dtype, caps, MatmulOp::Matmul.name())?;
    let (c_access, c_vector) = output_binding(r, shape.c_vec);
    let mut spec = Spec::new(Family::Matmul, "split_sum", caps).bind("p", Repr::F32, Access::Wide, Index::None).bind(
        "c",
        r,
        c_access,
        Index::None,
    );
    spec.bindings[1].vec = c_vector;
    let (_, alias) = element(r);
    Ok(spec
        .code(alias)
        .code(slots::wgsl())
        .code(input_code("p", Repr::F32))
        .code(run4_code("p", shape.c_vec))
        .code(output_code(r, shape.c_vec, shape.epilogue.is_some())))
    .and_then(|spec| with_epilogue(spec, caps, shape))
}

/// `spec` with `shape`'s epilogue, if any.
fn with_epilogue(spec: Spec, caps: Caps, shape: &Variant) -> Result<Spec> {
    match &shape.epilogue {
        Some(e) => e.add_to(spec, caps),
        None => Ok(spec),
    }
}

/// The kernel `k` for problems of `shape`.
fn gemm_spec(caps: Caps, k: &Kernel, shape: &Variant) -> Result<Spec> {
    let op = MatmulOp::Matmul;
    let r = Repr::of(shape.dtype, caps, op.name())?;
    let family = if shape.gather.is_some() { Family::Conv } else { Family::Matmul };
    let src = family_source(Family::Matmul);
    let input = |name| if r == Repr::F64 { (name, r, Access::Read) } else { (name, r, Access::Wide) };
    // Split-K's parts hold f32 products (f64 is never split).
    if shape.split && r == Repr::F64 {
        return Err(Error::InvalidParam { op: op.name(), msg: "split-K parts hold f32: f64 is not split".into() });
    }
    let out = if shape.split { Repr::F32 } else { r };
    let (c_access, c_vector) = output_binding(out, shape.c_vec);
    let entry = match k {
        Kernel::Tiled(_) => "tiled",
        Kernel::MatVec(v) if v.rows => "matvec_rows",
        Kernel::MatVec(_) => "matvec",
        Kernel::Coop(_) => "coop",
    };
    let mut spec = Spec::new(family, entry, caps);
    for (name, r, access) in [input("a"), input("b")] {
        spec = spec.bind(name, r, access, Index::None);
    }
    spec = spec.bind("c", out, c_access, Index::None);
    spec.bindings[2].vec = c_vector;
    if let Some(norm) = shape.prologue {
        if entry != "matvec" || shape.split {
            return Err(Error::InvalidParam {
                op: op.name(),
                msg: "a norm before the product is the columns matrix-vector kernel's".into(),
            });
        }
        for (name, on) in [("nw", norm.weight), ("nb", norm.bias)] {
            if on {
                spec = spec.bind(name, r, Access::Read, Index::None);
            }
        }
    }
    let (_, alias) = element(r);
    spec = spec.code(alias).code(slots::wgsl());
    if shape.split && shape.epilogue.is_some() {
        return Err(Error::InvalidParam {
            op: op.name(),
            msg: "split-K's parts take no epilogue (their sum does)".into(),
        });
    }
    spec = spec.code(input_code("a", r)).code(input_code("b", r));
    if entry == "matvec" {
        spec = spec.code(prologue_code(caps, shape)?);
    }
    spec = with_epilogue(spec.code(output_code(out, shape.c_vec, shape.epilogue.is_some())), caps, shape)?;
    if family != Family::Matmul {
        // The GEMM body lives in matmul.wgsl; the spec's own file adds the gather.
        spec = spec.code(header(src)).code(section(src, entry));
    }
    if let Some(g) = &shape.gather {
        spec = spec.code(g.code());
    }
    match k {
        Kernel::Tiled(t) => tiled::specialise(spec, t, shape, src),
        Kernel::MatVec(v) => tiled::specialise_matvec(spec, v, shape),
        Kernel::Coop(t) => coop::specialise(spec, caps, t, shape, src),
    }
}
