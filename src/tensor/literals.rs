//! Rust's default integer literal, `i32`, where the crate takes values: there is no i32 dtype,
//! so an `i32` becomes an i64 (the dtype PyTorch gives integer literals). `Tensor::arange(0, 12,
//! &dev)` is i64, as are `Tensor::from_vec(vec![1, 2, 3], 3, &dev)` and the scalar of `&x + 1`
//! (then converted to `x`'s dtype).

use crate::{CpuStorage, Result, Scalar, WithDType};

impl From<i32> for Scalar {
    fn from(v: i32) -> Self {
        Scalar::I64(v.into())
    }
}

/// An element type [`Tensor::from_vec`](crate::Tensor::from_vec) takes: every [`WithDType`], and
/// `i32` (Rust's default integer literal), stored as i64.
///
/// ```
/// use rocm_wgpu_ops::{DType, Device, Tensor};
///
/// let t = Tensor::from_vec(vec![1, 2, 3], 3, &Device::cpu())?;
/// assert_eq!((t.dtype(), t.to_vec::<i64>()?), (DType::I64, vec![1, 2, 3]));
/// # Ok::<(), rocm_wgpu_ops::Error>(())
/// ```
pub trait HostElement: Copy {
    /// The host data of `v`.
    fn into_cpu_storage(v: Vec<Self>) -> Result<CpuStorage>;
}

impl<T: WithDType> HostElement for T {
    fn into_cpu_storage(v: Vec<T>) -> Result<CpuStorage> {
        Ok(CpuStorage::from_vec(v))
    }
}

impl HostElement for i32 {
    fn into_cpu_storage(v: Vec<i32>) -> Result<CpuStorage> {
        let mut wide = crate::host::try_vec(v.len(), 0i64)?;
        for (w, x) in wide.iter_mut().zip(v) {
            *w = x.into();
        }
        Ok(CpuStorage::I64(wide))
    }
}
