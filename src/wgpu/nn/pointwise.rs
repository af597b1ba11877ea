//! local_response_norm and the recurrent cells on wgpu (`shaders/nn.wgsl`): one invocation per
//! output word, reading their operands through offsets and strides in the metadata.

use super::super::kernel::{Index, Spec};
use super::super::repr::{Access, Caps, Compute, Repr, params};
use super::super::{Kernel, KernelKey, WgpuBackend, WgpuStorage};
use crate::backend::{Operand, Param};
use crate::spec::Family;
use crate::spec::nn::{NnOp, gates};
use crate::{DType, Layout, Result, Scalar};

/// The nn kernels of one output word an invocation: batch_norm's (the dtype, x's index, whether
/// it has a weight and a bias), local_response_norm's, a recurrent cell's (with a bias).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum PointKey {
    BatchNorm(DType, Index, bool, bool),
    Lrn(DType, Index),
    Cell(DType, NnOp, bool),
}

impl PointKey {
    fn spec(self, caps: Caps) -> Result<Spec> {
        match self {
            PointKey::BatchNorm(dt, xi, w, b) => super::code::batch_norm_spec(caps, dt, xi, w, b),
            PointKey::Lrn(dt, xi) => lrn_spec(caps, dt, xi),
            PointKey::Cell(dt, op, bias) => cell_spec(caps, dt, op, bias),
        }
    }
}

impl WgpuBackend {
    /// The nn kernel of `key`, found by key.
    pub(super) fn point_kernel(&self, key: PointKey) -> Result<Kernel> {
        self.keyed(KernelKey::Point(key), || key.spec(self.caps()))
    }
}

/// The compute type's scalar functions: exp, tanh and pow, each keeping a NaN argument (WGSL
/// leaves builtins of NaN to the implementation; SwiftShader's exp(NaN) is inf or 0), and the
/// parameter decoder.
fn helpers(c: Compute) -> String {
    let (ct, nan, exp, tanh, pow) = match c {
        Compute::F64 => ("f64", "is_nan64", "f64_exp(v)", "f64_tanh(v)", "f64_pow(b, e)"),
        // tanh(15) is 1 in f32: clamped, no implementation sees an argument large enough to
        // overflow inside it.
        _ => ("f32", "is_nan", "exp(v)", "tanh(clamp(v, -15.0, 15.0))", "select(pow(b, e), 1.0, e == 0.0)"),
    };
    format!(
        "alias CT = {ct};\n\
         fn c_exp(v: CT) -> CT {{ return select({exp}, v, {nan}(v)); }}\n\
         fn c_tanh(v: CT) -> CT {{ return select({tanh}, v, {nan}(v)); }}\n\
         fn c_pow(b: CT, e: CT) -> CT {{ return select({pow}, b, {nan}(b)); }}\n{}",
        params::decoder(c)
    )
}

/// One output an invocation (H200: a blocked kernel taking 8 channels an invocation, as the
/// native one does, ran at half this one's speed on Vulkan: 474 GB/s against 917).
pub(super) fn lrn_spec(caps: Caps, dtype: DType, xi: Index) -> Result<Spec> {
    let r = Repr::of(dtype, caps, NnOp::LocalResponseNorm.name())?;
    Ok(Spec::new(Family::Nn, "local_response_norm", caps)
        .bind("x", r, Access::Read, xi)
        .bind("y", r, Access::Write, Index::None)
        .code(helpers(r.compute())))
}

pub(super) fn cell_spec(caps: Caps, dtype: DType, op: NnOp, bias: bool) -> Result<Spec> {
    let r = Repr::of(dtype, caps, op.name())?;
    let mut spec = Spec::new(Family::Nn, "rnn_cell", caps)
        .bind("gx", r, Access::Read, Index::None)
        .bind("gh", r, Access::Read, Index::None)
        .bind("state", r, Access::Read, Index::None);
    let bias_of = if bias {
        spec = spec.bind("bias", r, Access::Read, Index::None);
        "bias_load(md[EXTRA + 11u] + col * md[EXTRA + 12u])"
    } else {
        "CT(0)"
    };
    Ok(spec
        .bind("y", r, Access::Write, Index::None)
        .constant("GATES", format!("{}u", gates(op)))
        .code(helpers(r.compute()))
        .code(format!("fn bias_of(col: u32) -> CT {{ return {bias_of}; }}")))
}

/// Offset, row stride and column stride of a 2-D operand as metadata words.
fn matrix(l: &Layout) -> [u32; 3] {
    [l.offset() as u32, l.strides()[0] as u32, l.strides()[1] as u32]
}

impl WgpuBackend {
    pub(super) fn lrn(
        &self,
        x: &WgpuStorage,
        l: &Layout,
        size: usize,
        alpha: f64,
        beta: f64,
        k: f64,
    ) -> Result<WgpuStorage> {
        let n = l.elem_count();
        let y = self.storage(x.dtype, n)?;
        if n == 0 {
            return Ok(y);
        }
        let (d, st) = (l.dims(), l.strides());
        let (spec, pipeline) = self.point_kernel(PointKey::Lrn(x.dtype, Index::of(l)))?;
        let r = spec.bindings[0].repr;
        let mut extra = params::encode(r.compute(), &[alpha, beta, k].map(Scalar::from));
        let inner: usize = d[2..].iter().product();
        extra.extend([d[1], inner, st[1], size].map(|v| v as u32));
        let meta = spec.meta(n as u32, &[l], &extra);
        let bufs = [x.buffer(), y.buffer()];
        self.run(&spec, &pipeline, &bufs, &meta, n.div_ceil(r.per_word() as usize) as u64)?;
        Ok(y)
    }

    pub(super) fn cell(
        &self,
        op: NnOp,
        gx: Operand<WgpuStorage>,
        gh: Operand<WgpuStorage>,
        bias: Param<WgpuStorage>,
        state: Operand<WgpuStorage>,
    ) -> Result<WgpuStorage> {
        let bh = state.1.elem_count();
        let n = if op == NnOp::LstmCell { 2 * bh } else { bh };
        let y = self.storage(gx.0.dtype, n)?;
        if n == 0 {
            return Ok(y);
        }
        let (spec, pipeline) = self.point_kernel(PointKey::Cell(gx.0.dtype, op, bias.is_some()))?;
        let mut extra = vec![state.1.dims()[1] as u32, bh as u32];
        extra.extend(matrix(gx.1).into_iter().chain(matrix(gh.1)).chain(matrix(state.1)));
        extra.extend(bias.map_or([0, 0], |(_, l)| [l.offset() as u32, l.strides()[0] as u32]));
        let meta = spec.meta(n as u32, &[], &extra);
        let bufs: Vec<&wgpu::Buffer> = [Some(gx.0), Some(gh.0), Some(state.0), bias.map(|p| p.0), Some(&y)]
            .into_iter()
            .flatten()
            .map(|s| s.buffer())
            .collect();
        let per = spec.bindings[0].repr.per_word() as usize;
        self.run(&spec, &pipeline, &bufs, &meta, n.div_ceil(per) as u64)?;
        Ok(y)
    }
}

/// The kernels of local_response_norm and the cells for `caps`, as the shaders test lists them.
pub(super) fn variants(caps: Caps, dt: DType) -> Vec<(String, Result<Spec>)> {
    use crate::spec::kernel_name;
    let mut out = vec![(kernel_name(NnOp::LocalResponseNorm.name(), dt), lrn_spec(caps, dt, Index::Strided(3)))];
    for op in [NnOp::LstmCell, NnOp::GruCell] {
        out.push((kernel_name(op.name(), dt), cell_spec(caps, dt, op, true)));
        out.push((format!("{}_plain", kernel_name(op.name(), dt)), cell_spec(caps, dt, op, false)));
    }
    out
}
