//! Random draws on wgpu (`shaders/random.wgsl`): Philox 4x32-10 words bit-identical to
//! [`crate::spec::random::word`], four blocks of four output elements per invocation. Uniform
//! values are the reference's own; normal ones go through accurate f32 ln/sin/cos written in
//! the shader (f64 through `shaders/f64.wgsl`), within a few ulps of it.

use super::kernel::{Index, Spec, family_source, section};
use super::repr::{Access, Caps, Compute, Repr, params};
use super::{Kernel, KernelKey, WgpuBackend, WgpuStorage};
use crate::backend::RandomOps;
use crate::spec::random::{Distribution, RandomOp};
use crate::spec::{Family, kernel_name};
use crate::{DType, Error, Layout, Result, Scalar};

/// How the kernels form Philox's 32 x 32 -> 64-bit products.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mul {
    /// Through u64 (SHADER_INT64): one widening multiply where the hardware has one.
    Wide,
    /// From 16-bit halves in u32 arithmetic (five multiplies): every adapter.
    Pieces,
}

/// The product where SHADER_INT64 allows both (`RWO_WGPU_TUNE=random_mul=...` overrides).
/// H100 (Vulkan, driver 580), rand_uniform f32 [64M]: u64 products 2680 GB/s, 16-bit pieces
/// 1370 (torch 2467), in one run.
const MUL_WITH_I64: Mul = Mul::Wide;

/// Output groups of four elements each invocation makes (the four lanes of `Blocks` in the
/// shader).
const GROUPS_PER_INVOCATION: u64 = 4;

/// The kernel drawing `op` into a `dtype` tensor with `caps`, products formed as `mul` says
/// (`Wide` only with SHADER_INT64); dropout reads its input indexed as `xi`.
pub(crate) fn random_spec(caps: Caps, op: RandomOp, dtype: DType, mul: Mul, xi: Index) -> Result<Spec> {
    if !op.dtypes().contains(&dtype) {
        let expected = op.dtypes().iter().map(|d| d.name()).collect::<Vec<_>>().join(", ");
        return Err(Error::WrongDType { op: op.name(), dtype, expected });
    }
    let r = Repr::of(dtype, caps, op.name())?;
    let c = r.compute();
    let src = family_source(Family::Random);
    let real = if c == Compute::F64 { "real_f64" } else { "real_f32" };
    let mul = if mul == Mul::Wide && caps.i64 { "mul_wide" } else { "mul_pieces" };
    let put = match r {
        _ if r.vectorizes() => "put_vec",
        _ if r.per_word() > 1 => "put_packed",
        _ => "put_each",
    };
    let mut spec = Spec::new(Family::Random, op.name(), caps);
    if op == RandomOp::Dropout {
        spec = spec.bind("x", r, Access::Read, xi);
    }
    spec = spec.bind("y", r, Access::Write, Index::None);
    let last = spec.bindings.len() - 1;
    spec.bindings[last].vec = put == "put_vec";
    Ok(spec.code(params::decoder(c)).code(section(src, real)).code(section(src, mul)).code(section(src, put)))
}

impl WgpuBackend {
    /// The product form this device's random kernels use.
    fn random_mul(&self) -> Mul {
        match (self.caps().i64, self.tune().random_mul) {
            (false, _) => Mul::Pieces,
            (true, Some(m)) => m,
            (true, None) => MUL_WITH_I64,
        }
    }

    /// The random kernel of `op` in `dtype` (x read through `xi`: dropout's), found by key.
    fn random_kernel(&self, op: RandomOp, dtype: DType, xi: Index) -> Result<Kernel> {
        let mul = self.random_mul();
        self.keyed(KernelKey::Random(op, dtype, mul, xi), || random_spec(self.caps(), op, dtype, mul, xi))
    }

    /// The tuning of the random kernels, in words (for `info()`).
    pub(super) fn random_tuning(&self) -> String {
        let mul = match self.random_mul() {
            Mul::Wide => "u64",
            Mul::Pieces => "16-bit-piece",
        };
        format!("random: {mul} products")
    }
}

impl RandomOps for WgpuBackend {
    fn random(&self, dtype: DType, len: usize, dist: Distribution, seed: u64, offset: u64) -> Result<WgpuStorage> {
        let (spec, pipeline) = self.random_kernel(dist.op(), dtype, Index::None)?;
        let y = self.storage(dtype, len)?;
        let (a, b) = match dist {
            Distribution::Uniform { low, high } => (low, high),
            Distribution::Normal { mean, std } => (mean, std),
        };
        let mut extra = params::encode(spec.bindings[0].repr.compute(), &[Scalar::F64(a), Scalar::F64(b)]);
        extra.extend([offset as u32, (offset >> 32) as u32, seed as u32, (seed >> 32) as u32]);
        let meta = spec.meta(len as u32, &[], &extra);
        let groups = (len as u64).div_ceil(4);
        self.run(&spec, &pipeline, &[y.buffer()], &meta, groups.div_ceil(GROUPS_PER_INVOCATION))?;
        Ok(y)
    }

    fn dropout(&self, x: &WgpuStorage, l: &Layout, p: f64, scale: f64, seed: u64, offset: u64) -> Result<WgpuStorage> {
        let (spec, pipeline) = self.random_kernel(RandomOp::Dropout, x.dtype, Index::of(l))?;
        let len = l.elem_count();
        let y = self.storage(x.dtype, len)?;
        let mut extra = params::encode(spec.bindings[0].repr.compute(), &[Scalar::F64(p), Scalar::F64(scale)]);
        extra.extend([offset as u32, (offset >> 32) as u32, seed as u32, (seed >> 32) as u32]);
        let meta = spec.meta(len as u32, &[l], &extra);
        let groups = (len as u64).div_ceil(4);
        let bufs = [x.buffer(), y.buffer()];
        self.run(&spec, &pipeline, &bufs, &meta, groups.div_ceil(GROUPS_PER_INVOCATION))?;
        Ok(y)
    }
}

/// Every random kernel for `caps`, as (kernel name, spec), for shader validation and the op
/// coverage test: with u64 products where `caps` has SHADER_INT64 (else pieces), and with
/// 16-bit pieces (suffix `_pieces`) where that is another kernel.
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    let mut v = vec![];
    for &op in RandomOp::ALL {
        for &dt in op.dtypes().iter().filter(|d| caps.dtypes().contains(d)) {
            let name = kernel_name(op.name(), dt);
            let xi = if op == RandomOp::Dropout { Index::Strided(3) } else { Index::None };
            v.push((name.clone(), random_spec(caps, op, dt, Mul::Wide, xi)));
            if caps.i64 {
                v.push((format!("{name}_pieces"), random_spec(caps, op, dt, Mul::Pieces, xi)));
            }
        }
    }
    v
}
