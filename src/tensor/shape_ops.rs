//! Shapes as candle and PyTorch users reach for them: `stack`, the `flatten` family, and
//! readbacks by rank (`to_vec0` .. `to_vec3`).

use super::Tensor;
use super::dims::insert_index;
use crate::{D, Dim, Error, Result, WithDType};

impl Tensor {
    /// Joins tensors of one shape along a new dim `dim` (`0..=rank`, `D::Minus1`: a new last
    /// dim), as candle's and PyTorch's `stack`.
    ///
    /// ```
    /// use rocm_wgpu_ops::{D, Device, Tensor};
    ///
    /// let dev = Device::cpu();
    /// let a = Tensor::from_vec(vec![1f32, 2.], 2, &dev)?;
    /// let b = Tensor::from_vec(vec![3f32, 4.], 2, &dev)?;
    /// assert_eq!(Tensor::stack(&[&a, &b], 0)?.to_vec2::<f32>()?, [[1., 2.], [3., 4.]]);
    /// assert_eq!(Tensor::stack(&[&a, &b], D::Minus1)?.to_vec2::<f32>()?, [[1., 3.], [2., 4.]]);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn stack<T: AsRef<Tensor>>(ts: &[T], dim: impl Dim) -> Result<Tensor> {
        let Some(first) = ts.first().map(AsRef::as_ref) else {
            return Err(Error::InvalidParam { op: "stack", msg: "no tensors to stack".into() });
        };
        let dim = insert_index(dim, first.rank(), "stack")?;
        let mut lifted = Vec::with_capacity(ts.len());
        for t in ts.iter().map(AsRef::as_ref) {
            if t.shape() != first.shape() {
                return Err(Error::ShapeMismatch { op: "stack", lhs: first.shape().clone(), rhs: t.shape().clone() });
            }
            lifted.push(t.unsqueeze(dim)?);
        }
        Tensor::cat(&lifted, dim)
    }

    /// Dims `start..=end` merged into one (a view where `reshape` gives one, else a copy); a rank-0
    /// tensor becomes rank 1.
    ///
    /// ```
    /// use rocm_wgpu_ops::{D, Device, Tensor};
    ///
    /// let x = Tensor::zeros((2, 3, 4, 5), rocm_wgpu_ops::DType::F32, &Device::cpu())?;
    /// assert_eq!(x.flatten(1, 2)?.dims(), [2, 12, 5]);
    /// assert_eq!(x.flatten(0, D::Minus2)?.dims(), [24, 5]);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn flatten(&self, start: impl Dim, end: impl Dim) -> Result<Tensor> {
        if self.rank() == 0 {
            return self.reshape([1]);
        }
        let (s, e) = (start.to_index(self.rank(), "flatten")?, end.to_index(self.rank(), "flatten")?);
        if s > e {
            return Err(Error::InvalidView { op: "flatten", msg: format!("start dim {s} comes after end dim {e}") });
        }
        let d = self.dims();
        let merged: usize = d[s..=e].iter().product();
        self.reshape([&d[..s], &[merged], &d[e + 1..]].concat())
    }

    /// Dims `start..` merged into one (`flatten(start, D::Minus1)`).
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    ///
    /// let images = Tensor::zeros((8, 3, 4, 4), rocm_wgpu_ops::DType::F32, &Device::cpu())?;
    /// assert_eq!(images.flatten_from(1)?.dims(), [8, 48]);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn flatten_from(&self, start: impl Dim) -> Result<Tensor> {
        self.flatten(start, D::Minus1)
    }

    /// Dims `..=end` merged into one (`flatten(0, end)`).
    ///
    /// ```
    /// use rocm_wgpu_ops::{D, Device, Tensor};
    ///
    /// let x = Tensor::zeros((2, 3, 4), rocm_wgpu_ops::DType::F32, &Device::cpu())?;
    /// assert_eq!(x.flatten_to(D::Minus2)?.dims(), [6, 4]);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn flatten_to(&self, end: impl Dim) -> Result<Tensor> {
        self.flatten(0, end)
    }

    /// The element of a rank-0 tensor (candle's name; [`Tensor::to_scalar`] takes any shape of
    /// one element). Blocks until the GPU is done.
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    ///
    /// let t = Tensor::from_vec(vec![1f32, 2., 3.], 3, &Device::cpu())?;
    /// assert_eq!(t.sum_all()?.to_vec0::<f32>()?, 6.);
    /// assert!(t.to_vec0::<f32>().is_err());
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn to_vec0<T: WithDType>(&self) -> Result<T> {
        if self.rank() != 0 {
            return Err(Error::Rank { op: "to_vec0", expected: "0", shape: self.shape().clone() });
        }
        self.to_scalar()
    }

    /// The elements of a rank-1 tensor (candle's name; [`Tensor::to_vec`] takes any rank).
    /// Blocks until the GPU is done.
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    ///
    /// let t = Tensor::arange(0u8, 3, &Device::cpu())?;
    /// assert_eq!(t.to_vec1::<u8>()?, [0, 1, 2]);
    /// assert!(t.reshape((1, 3))?.to_vec1::<u8>().is_err());
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn to_vec1<T: WithDType>(&self) -> Result<Vec<T>> {
        if self.rank() != 1 {
            return Err(Error::Rank { op: "to_vec1", expected: "1", shape: self.shape().clone() });
        }
        self.to_vec()
    }

    /// The elements of a rank-3 tensor, nested. Blocks until the GPU is done; in a browser use
    /// [`Tensor::to_vec3_async`].
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    ///
    /// let t = Tensor::arange(0u32, 8, &Device::cpu())?.reshape((2, 2, 2))?;
    /// assert_eq!(t.to_vec3::<u32>()?, [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn to_vec3<T: WithDType>(&self) -> Result<Vec<Vec<Vec<T>>>> {
        crate::block::block_on_result("to_vec3", self.to_vec3_async())
    }

    /// [`Tensor::to_vec3`] without blocking: the form that works in a browser.
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    /// # pollster::block_on(async {
    /// let t = Tensor::ones((1, 2, 1), rocm_wgpu_ops::DType::U8, &Device::auto_async().await?)?;
    /// assert_eq!(t.to_vec3_async::<u8>().await?, [[[1], [1]]]);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn to_vec3_async<T: WithDType>(&self) -> Result<Vec<Vec<Vec<T>>>> {
        let [a, b, c] = *self.dims() else {
            return Err(Error::Rank { op: "to_vec3", expected: "3", shape: self.shape().clone() });
        };
        let v = self.to_vec_async::<T>().await?;
        let row = |r: usize| v[r * c..(r + 1) * c].to_vec();
        Ok((0..a).map(|i| (0..b).map(|j| row(i * b + j)).collect()).collect())
    }
}
