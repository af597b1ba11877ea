//! Random draws on the native backend (`hip/random.hip`): one thread per Philox block of four
//! stream positions, each writing the up to four elements that fall in its block, exactly the
//! stream of [`crate::spec::random`] (words and uniforms bit for bit; normals through the
//! vendors' accurate `logf`/`sincosf`, within a few ulps).

use super::kernel::{Arg, Args};
use super::{NativeBackend, NativeStorage, Runtime};
use crate::backend::RandomOps;
use crate::spec::random::{Distribution, RandomOp};
use crate::spec::{Family, kernel_name};
use crate::{DType, Error, Layout, Result, Scalar};

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

    fn dropout(
        &self,
        x: &NativeStorage<R>,
        l: &Layout,
        p: f64,
        scale: f64,
        seed: u64,
        offset: u64,
    ) -> Result<NativeStorage<R>> {
        // A strided input is made contiguous first (the kernel reads x[e] for element e).
        let packed;
        let (src, at) = if l.is_contiguous() {
            (x, l.offset())
        } else {
            packed = self.contiguous(x, l)?;
            (&packed, 0)
        };
        let len = l.elem_count();
        let y = self.storage(x.dtype, len)?;
        let (p, scale) = (Arg::compute(x.dtype, Scalar::F64(p)), Arg::compute(x.dtype, Scalar::F64(scale)));
        let name = kernel_name(RandomOp::Dropout.name(), x.dtype);
        let mut base = 0;
        while base < len {
            let n = CHUNK.min(len - base);
            let pos = offset.wrapping_add(base as u64);
            let mut args = Args::default();
            args.ptr(src.at(at + base)).ptr(y.at(base)).u64(n as u64).u64(seed).u64(pos).arg(p).arg(scale);
            let threads = (n as u64 + (pos & 3)).div_ceil(4);
            // SAFETY: dropout_T(const T* x, T* y, u64 n, u64 seed, u64 offset, C p, C scale) in
            // order; it reads `x[at + base ..][.. n]` (contiguous, inside the storage: the spec
            // validated the layout) and writes `y[base ..][.. n]`.
            unsafe { self.launch(Family::Random, &name, threads, &mut args)? };
            base += n;
        }
        Ok(y)
    }
}
