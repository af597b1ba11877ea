//! What users type first that the spec's ops already make: means, sums into a wider dtype
//! (counting), tensors shaped like another, convolutions with a bias.

use super::{Dims, Tensor};
use crate::spec::conv::{ConvOp, ConvParams};
use crate::spec::reduce::ReduceOp;
use crate::{DType, Error, Result, Scalar};

impl Tensor {
    /// The mean over `dims` (one or several: [`Dims`]), which are removed. Floats only: the sum
    /// over `dims` (f16 and bf16 summed in f32) divided by their element count, rounded once to
    /// the dtype; NaN over an empty extent.
    ///
    /// ```
    /// use rocm_wgpu_ops::{D, Device, Tensor};
    ///
    /// let x = Tensor::from_vec(vec![1f32, 2., 3., 4., 5., 6.], (2, 3), &Device::cpu())?;
    /// assert_eq!(x.mean(D::Minus1)?.to_vec::<f32>()?, [2., 5.]);
    /// assert_eq!(x.mean((0, 1))?.to_scalar::<f32>()?, 3.5);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn mean(&self, dims: impl Dims) -> Result<Tensor> {
        self.mean_op(dims, false)
    }

    /// [`Tensor::mean`] with the reduced dims kept as size 1.
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    ///
    /// let x = Tensor::from_vec(vec![1f32, 2., 3., 4., 5., 6.], (2, 3), &Device::cpu())?;
    /// let centred = x.sub(&x.mean_keepdim(1)?)?; // (2, 3) - (2, 1)
    /// assert_eq!(centred.to_vec2::<f32>()?, [[-1., 0., 1.], [-1., 0., 1.]]);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn mean_keepdim(&self, dims: impl Dims) -> Result<Tensor> {
        self.mean_op(dims, true)
    }

    /// The mean of every element, as a rank-0 tensor ([`Tensor::mean`]'s rules).
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    ///
    /// let x = Tensor::from_vec(vec![1f64, 2., 6.], 3, &Device::cpu())?;
    /// assert_eq!(x.mean_all()?.to_scalar::<f64>()?, 3.);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn mean_all(&self) -> Result<Tensor> {
        if self.rank() == 0 {
            return self.reshape([1])?.mean(0);
        }
        self.mean((0..self.rank()).collect::<Vec<_>>())
    }

    fn mean_op(&self, dims: impl Dims, keepdim: bool) -> Result<Tensor> {
        let op = "mean";
        crate::spec::check_dtype(op, self.dtype(), DType::FLOAT)?;
        let dims = crate::spec::dims_list(op, &dims.to_indexes(self.rank(), op)?, self.rank())?;
        if dims.is_empty() {
            return Err(Error::InvalidParam { op, msg: "no dims to reduce over".into() });
        }
        let count: usize = dims.iter().map(|&d| self.dims()[d]).product();
        let wide = match self.dtype() {
            DType::F16 | DType::BF16 => self.to_dtype(DType::F32)?,
            _ => self.clone(),
        };
        let sum = wide.reduce(ReduceOp::Sum, dims, keepdim)?;
        sum.div(Scalar::F64(count as f64))?.to_dtype(self.dtype())
    }

    /// The sum over `dims` computed in `dtype`: each element converted to it first (the cast
    /// rules of [`crate::WithDType`]). `sum` keeps the input's dtype, which wraps for integers
    /// (candle's rule): to count the 1s of a comparison, sum it as u32 or i64.
    ///
    /// ```
    /// use rocm_wgpu_ops::{DType, Device, Tensor};
    ///
    /// let dev = Device::cpu();
    /// let pred = Tensor::ones(1000, DType::U32, &dev)?;
    /// let hits = pred.eq(1)?; // u8: 1 where equal
    /// assert_eq!(hits.sum(0)?.to_scalar::<u8>()?, 232); // 1000 wraps in u8
    /// assert_eq!(hits.sum_as(0, DType::U32)?.to_scalar::<u32>()?, 1000);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn sum_as(&self, dims: impl Dims, dtype: DType) -> Result<Tensor> {
        self.to_dtype(dtype)?.sum(dims)
    }

    /// The sum of every element computed in `dtype`, as a rank-0 tensor ([`Tensor::sum_as`]).
    ///
    /// ```
    /// use rocm_wgpu_ops::{DType, Device, Tensor};
    ///
    /// let dev = Device::cpu();
    /// let labels = Tensor::from_vec(vec![3u32, 1, 4, 1, 5], 5, &dev)?;
    /// let pred = Tensor::from_vec(vec![3u32, 1, 4, 2, 5], 5, &dev)?;
    /// let correct = pred.eq(&labels)?.sum_all_as(DType::I64)?.to_scalar::<i64>()?;
    /// assert_eq!(correct, 4);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn sum_all_as(&self, dtype: DType) -> Result<Tensor> {
        self.to_dtype(dtype)?.sum_all()
    }

    /// Ones of this tensor's shape and dtype, on its device.
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    ///
    /// let x = Tensor::from_vec(vec![7u8, 8], 2, &Device::cpu())?;
    /// assert_eq!(x.ones_like()?.to_vec::<u8>()?, [1, 1]);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn ones_like(&self) -> Result<Tensor> {
        Tensor::ones(self.shape().clone(), self.dtype(), self.device())
    }

    /// `value` (cast to this tensor's dtype) in this tensor's shape, on its device.
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    ///
    /// let x = Tensor::zeros((2, 2), rocm_wgpu_ops::DType::F32, &Device::cpu())?;
    /// assert_eq!(x.full_like(0.5)?.to_vec2::<f32>()?, [[0.5, 0.5], [0.5, 0.5]]);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn full_like(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        Tensor::full(value, self.shape().clone(), self.dtype(), self.device())
    }

    /// [`Tensor::conv1d`] plus `bias` (`(C_out)`, one value per output channel), if given.
    ///
    /// ```
    /// use rocm_wgpu_ops::{DType, Device, Tensor};
    /// use rocm_wgpu_ops::spec::conv::ConvParams;
    ///
    /// let dev = Device::cpu();
    /// let x = Tensor::ones((1, 1, 4), DType::F32, &dev)?;
    /// let k = Tensor::ones((2, 1, 3), DType::F32, &dev)?;
    /// let b = Tensor::from_vec(vec![0.5f32, -3.], 2, &dev)?;
    /// let y = x.conv1d_with_bias(&k, Some(&b), &ConvParams::default())?;
    /// assert_eq!(y.to_vec3::<f32>()?, [[[3.5, 3.5], [0., 0.]]]);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn conv1d_with_bias(&self, kernel: &Tensor, bias: Option<&Tensor>, p: &ConvParams<1>) -> Result<Tensor> {
        self.conv_with_bias(kernel, ConvOp::Conv1d, bias, p)
    }

    /// [`Tensor::conv2d`] plus `bias` (`(C_out)`, one value per output channel), if given: a
    /// layer whose bias is an `Option<Tensor>` passes `bias.as_ref()`.
    ///
    /// ```
    /// use rocm_wgpu_ops::{DType, Device, Tensor};
    /// use rocm_wgpu_ops::spec::conv::ConvParams;
    ///
    /// let dev = Device::cpu();
    /// let x = Tensor::ones((1, 2, 3, 3), DType::F32, &dev)?;
    /// let k = Tensor::ones((1, 2, 3, 3), DType::F32, &dev)?;
    /// let b = Tensor::from_vec(vec![-18f32], 1, &dev)?;
    /// let y = x.conv2d_with_bias(&k, Some(&b), &ConvParams::default().padding(1))?;
    /// assert_eq!(y.flatten_all()?.to_vec::<f32>()?, [-10., -6., -10., -6., 0., -6., -10., -6., -10.]);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn conv2d_with_bias(&self, kernel: &Tensor, bias: Option<&Tensor>, p: &ConvParams<2>) -> Result<Tensor> {
        self.conv_with_bias(kernel, ConvOp::Conv2d, bias, p)
    }

    /// [`Tensor::conv_transpose1d`] plus `bias` (`(C_out)`), if given.
    ///
    /// ```
    /// use rocm_wgpu_ops::{DType, Device, Tensor};
    /// use rocm_wgpu_ops::spec::conv::ConvParams;
    ///
    /// let dev = Device::cpu();
    /// let x = Tensor::ones((1, 1, 2), DType::F32, &dev)?;
    /// let k = Tensor::ones((1, 1, 2), DType::F32, &dev)?;
    /// let b = Tensor::from_vec(vec![10f32], 1, &dev)?;
    /// let y = x.conv_transpose1d_with_bias(&k, Some(&b), &ConvParams::default())?;
    /// assert_eq!(y.to_vec3::<f32>()?, [[[11., 12., 11.]]]);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn conv_transpose1d_with_bias(
        &self,
        kernel: &Tensor,
        bias: Option<&Tensor>,
        p: &ConvParams<1>,
    ) -> Result<Tensor> {
        self.conv_with_bias(kernel, ConvOp::ConvTranspose1d, bias, p)
    }

    /// [`Tensor::conv_transpose2d`] plus `bias` (`(C_out)`), if given.
    ///
    /// ```
    /// use rocm_wgpu_ops::{DType, Device, Tensor};
    /// use rocm_wgpu_ops::spec::conv::ConvParams;
    ///
    /// let dev = Device::cpu();
    /// let x = Tensor::ones((1, 1, 1, 1), DType::F32, &dev)?;
    /// let k = Tensor::ones((1, 2, 1, 1), DType::F32, &dev)?;
    /// let b = Tensor::from_vec(vec![1f32, 2.], 2, &dev)?;
    /// let y = x.conv_transpose2d_with_bias(&k, Some(&b), &ConvParams::default())?;
    /// assert_eq!(y.flatten_all()?.to_vec::<f32>()?, [2., 3.]);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn conv_transpose2d_with_bias(
        &self,
        kernel: &Tensor,
        bias: Option<&Tensor>,
        p: &ConvParams<2>,
    ) -> Result<Tensor> {
        self.conv_with_bias(kernel, ConvOp::ConvTranspose2d, bias, p)
    }

    /// The convolution `op`, then `bias` added per output channel: checked before anything runs.
    fn conv_with_bias<const N: usize>(
        &self,
        kernel: &Tensor,
        op: ConvOp,
        bias: Option<&Tensor>,
        p: &ConvParams<N>,
    ) -> Result<Tensor> {
        let Some(bias) = bias else { return self.conv(kernel, op, p) };
        let g = crate::spec::conv::conv(op, (self.layout(), self.dtype()), (kernel.layout(), kernel.dtype()), p)?;
        crate::spec::conv::bias(op, &g.out, (bias.layout(), bias.dtype()))?;
        self.check_same_device(op.name(), bias)?;
        let per_channel = bias.reshape([&[g.c_out][..], &[1; N]].concat())?;
        self.conv(kernel, op, p)?.add(&per_channel)
    }
}
