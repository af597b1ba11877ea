//! Dropout (`spec::random` defines it): one kernel of the random family that draws each
//! element's uniform, compares it with `p` and scales `x`, reading `x` once.

use super::Tensor;
use super::parts::{self, Split};
use crate::Result;
use crate::backend::RandomOps;
use crate::device::{BackendOf, dispatch};
use crate::spec::random::{self, RandomOp};
use crate::spec::{Family, Out};

impl Tensor {
    /// Each element kept with probability `1 - p` and scaled by `1 / (1 - p)`, else zeroed, from
    /// the device's own stream (see [`crate::Device::set_seed`]): training-mode dropout.
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    ///
    /// let dev = Device::cpu();
    /// let x = Tensor::ones([1000], rocm_wgpu_ops::DType::F32, &dev)?;
    /// let y = x.dropout(0.25)?.to_vec::<f32>()?;
    /// assert!(y.iter().all(|&v| v == 0.0 || v == 1.0 / 0.75));
    /// assert!((650..850).contains(&y.iter().filter(|&&v| v != 0.0).count()));
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn dropout(&self, p: f64) -> Result<Tensor> {
        random::dropout(self.dtype(), p)?;
        let (seed, offset) = self.device().next_random(self.elem_count());
        self.dropout_at(p, seed, offset)
    }

    /// Dropout with the mask of stream position `(seed, offset)`: element `i` (row-major) is
    /// kept where `rand_uniform` at `offset + i` is at least `p`. The same seed and offset give
    /// the same result bit for bit on every backend, for any layout of `self`.
    pub fn dropout_at(&self, p: f64, seed: u64, offset: u64) -> Result<Tensor> {
        let (_, keep, scale) = random::dropout(self.dtype(), p)?;
        let out = Out::new(self.shape().clone(), self.dtype());
        if parts::needed(&out, &[self]) {
            // Row-major positions as one dim, each piece's mask where its first element lies.
            let n = self.elem_count();
            let flat = if self.is_contiguous() { self.clone() } else { self.copy()? }.reshape([n])?;
            let at = |x: &[Tensor], a: usize| x[0].dropout_at(p, seed, offset.wrapping_add(a as u64));
            return Split::pointwise("dropout", &Out::new([n], self.dtype()), &[flat])
                .run_at(at)?
                .reshape(self.shape().clone());
        }
        let r = self.run(Family::Random, RandomOp::Dropout.name(), &[], &out)?;
        let s =
            dispatch!(self.device, |b| b.wrap(b.dropout(r.arg(b, self)?, &self.layout, keep, scale, seed, offset)?));
        Ok(r.finish(s))
    }
}
