//! Random draws on wgpu (`shaders/random.wgsl`): Philox 4x32-10 words bit-identical to
//! [`crate::spec::random::word`], one invocation per four output elements. Uniform values are
//! the reference's own; normal ones go through accurate f32 ln/sin/cos written in the shader
//! (f64 through `shaders/f64.wgsl`), within a few ulps of it.

use super::kernel::{Index, Spec, family_source, section};
use super::repr::{Access, Caps, Compute, Repr, params};
use super::{WgpuBackend, WgpuStorage};
use crate::backend::RandomOps;
use crate::spec::random::{Distribution, RandomOp};
use crate::spec::{Family, kernel_name};
use crate::{DType, Error, Result, Scalar};

/// The kernel drawing `op` into a `dtype` tensor with `caps`.
pub(crate) fn random_spec(caps: Caps, op: RandomOp, dtype: DType) -> Result<Spec> {
    if !op.dtypes().contains(&dtype) {
        let expected = op.dtypes().iter().map(|d| d.name()).collect::<Vec<_>>().join(", ");
        return Err(Error::WrongDType { op: op.name(), dtype, expected });
    }
    let r = Repr::of(dtype, caps, op.name())?;
    let c = r.compute();
    let src = family_source(Family::Random);
    let real = if c == Compute::F64 { "real_f64" } else { "real_f32" };
    let mul = if caps.i64 { "mulhilo_native" } else { "mulhilo_emulated" };
    Ok(Spec::new(Family::Random, op.name(), caps)
        .bind("y", r, Access::Write, Index::None)
        .code(params::decoder(c))
        .code(section(src, real))
        .code(section(src, mul)))
}

impl RandomOps for WgpuBackend {
    fn random(&self, dtype: DType, len: usize, dist: Distribution, seed: u64, offset: u64) -> Result<WgpuStorage> {
        let spec = random_spec(self.caps(), dist.op(), dtype)?;
        let y = self.storage(dtype, len)?;
        let (a, b) = match dist {
            Distribution::Uniform { low, high } => (low, high),
            Distribution::Normal { mean, std } => (mean, std),
        };
        let mut extra = params::encode(spec.bindings[0].repr.compute(), &[Scalar::F64(a), Scalar::F64(b)]);
        extra.extend([offset as u32, (offset >> 32) as u32, seed as u32, (seed >> 32) as u32]);
        let meta = spec.meta(len as u32, &[], &extra);
        self.run(&spec, &[y.buffer()], &meta, (len as u64).div_ceil(4))?;
        Ok(y)
    }
}

/// Every random kernel for `caps`, as (kernel name, spec), for shader validation and the op
/// coverage test.
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    let mut v = vec![];
    for &op in RandomOp::ALL {
        for &dt in op.dtypes().iter().filter(|d| caps.dtypes().contains(d)) {
            v.push((kernel_name(op.name(), dt), random_spec(caps, op, dt)));
        }
    }
    v
}
