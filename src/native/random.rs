//! Random draws on the native backend (`hip/random.hip`): one thread per Philox block of four
//! stream positions, each writing the up to four elements that fall in its block, exactly the
//! stream of [`crate::spec::random`] (words and uniforms bit for bit; normals through the
//! vendors' accurate `logf`/`sincosf`, within a few ulps).

use super::kernel::{Arg, Args};
use super::{NativeBackend, NativeStorage, Runtime};
use crate::backend::RandomOps;
use crate::spec::random::Distribution;
use crate::spec::{Family, kernel_name};
use crate::{DType, Error, Result, Scalar};

/// Elements per launch: under 2^32 (kernels index with u32) and a multiple of 4, so that every
/// launch after the first starts at the same lane of a block as the first.
const CHUNK: usize = 1 << 31;

impl<R: Runtime> RandomOps for NativeBackend<R> {
    fn random(&self, dtype: DType, len: usize, dist: Distribution, seed: u64, offset: u64) -> Result<NativeStorage<R>> {
        let op = dist.op();
        if !op.dtypes().contains(&dtype) {
            let expected = op.dtypes().iter().map(|d| d.name()).collect::<Vec<_>>().join(", ");
            return Err(Error::WrongDType { op: op.name(), dtype, expected });
        }
        let y = self.storage(dtype, len)?;
        let (a, b) = match dist {
            Distribution::Uniform { low, high } => (low, high),
            Distribution::Normal { mean, std } => (mean, std),
        };
        // The parameters rounded to the compute type, as the spec says.
        let (a, b) = (Arg::compute(dtype, Scalar::F64(a)), Arg::compute(dtype, Scalar::F64(b)));
        let name = kernel_name(op.name(), dtype);
        let mut base = 0;
        while base < len {
            let n = CHUNK.min(len - base);
            let at = offset.wrapping_add(base as u64);
            let mut args = Args::default();
            args.ptr(y.at(base)).u64(n as u64).u64(seed).u64(at).arg(a).arg(b);
            // One thread per block the positions at .. at + n touch.
            let threads = (n as u64 + (at & 3)).div_ceil(4);
            // SAFETY: rand_*_T(T* y, u64 n, u64 seed, u64 offset, C a, C b) in order, C being
            // the compute type `Arg::compute` gives; it writes `y[base ..][.. n]`, inside `y`.
            unsafe { self.launch(Family::Random, &name, threads, &mut args)? };
            base += n;
        }
        Ok(y)
    }
}
