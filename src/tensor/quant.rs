//! Quantized tensors: GGML blocks held as bytes on a device, with the logical shape they encode.

use super::Tensor;
use super::parts::{self, Split};
use crate::backend::QuantOps;
use crate::device::{BackendOf, dispatch};
use crate::spec::quant::{FLOATS, GgmlType, QMATVEC_MAX_ROWS, QuantOp, check_quantize, check_quantized};
#[cfg(doc)]
use crate::spec::quant::{Q8_BLOCK, q8_round, q8_scale};
use crate::spec::{Family, Out};
use crate::{CpuStorage, DType, Device, Error, Result, Shape};

/// Quantized weights: a logical shape `[.., K]` (usually `[N, K]`, a linear layer's weight) stored
/// as GGML blocks of one [`GgmlType`], byte for byte as ggml lays them out, on a device.
///
/// ```
/// use rocm_wgpu_ops::{DType, Device, QTensor, Tensor, spec::quant::GgmlType};
///
/// let dev = Device::cpu();
/// let w = Tensor::from_vec((0..64).map(|i| i as f32 / 8.).collect::<Vec<_>>(), [2, 32], &dev)?;
/// let q = QTensor::quantize(&w, GgmlType::Q8_0)?;
/// assert_eq!((q.dims(), q.bytes().elem_count()), (&[2, 32][..], 2 * 34));
/// let back = q.dequantize(DType::F32)?.to_vec2::<f32>()?;
/// assert!((back[1][31] - 63. / 8.).abs() < 0.01);
/// # Ok::<(), rocm_wgpu_ops::Error>(())
/// ```
#[derive(Clone)]
pub struct QTensor {
    ty: GgmlType,
    shape: Shape,
    bytes: Tensor,
}

impl QTensor {
    /// The blocks in `bytes`, a tensor of `shape` in `ty`, on `device`: the last dim must be a
    /// multiple of the block (`Error::BlockShape`) and `bytes` exactly its blocks
    /// (`Error::QuantBytes` when truncated or too long).
    pub fn from_bytes(ty: GgmlType, shape: impl Into<Shape>, bytes: &[u8], device: &Device) -> Result<QTensor> {
        let shape = shape.into();
        check_quantized(ty, &shape, bytes.len())?;
        // Made as rows of blocks: past one buffer, its parts hold whole rows.
        let rows = rows(&shape);
        let table = Tensor::from_slice(bytes, [rows, bytes.len() / rows], device)?;
        Ok(QTensor { ty, shape, bytes: table.reshape([bytes.len()])? })
    }

    /// The blocks held by `bytes`, a u8 tensor of rank 1 already on its device (a window of a
    /// larger buffer, such as a file's, at any byte offset), as a tensor of `shape` in `ty`. A
    /// strided `bytes` is copied to a contiguous one first.
    pub fn new(ty: GgmlType, shape: impl Into<Shape>, bytes: &Tensor) -> Result<QTensor> {
        let shape = shape.into();
        if bytes.dtype() != DType::U8 || bytes.rank() != 1 {
            let msg = format!("blocks are a rank-1 u8 tensor, got {} of {}", bytes.shape(), bytes.dtype());
            return Err(Error::Operand { op: "quantized", operand: "bytes", msg });
        }
        check_quantized(ty, &shape, bytes.elem_count())?;
        Ok(QTensor { ty, shape, bytes: bytes.contiguous()? })
    }

    /// `x` (f32, f16 or bf16, any layout) quantized with ggml's reference quantizer of `ty`
    /// (`quantize_row_*_ref`, for the k-quants with its search for each run's scale and min:
    /// the bytes of ggml's C built without FMA contraction), on `x`'s device. The cpu computes
    /// the blocks: x's values are read back first, so this waits for the device.
    pub fn quantize(x: &Tensor, ty: GgmlType) -> Result<QTensor> {
        crate::block::block_on_result("quantize", Self::quantize_async(x, ty))
    }

    /// [`QTensor::quantize`] without blocking: the form that works in a browser.
    pub async fn quantize_async(x: &Tensor, ty: GgmlType) -> Result<QTensor> {
        check_quantize(ty, x.shape(), x.dtype())?;
        let values = x.to_dtype(DType::F32)?.to_vec_async::<f32>().await?;
        let blocks = crate::cpu::quant::quantize(ty, &values)?;
        QTensor::from_bytes(ty, x.shape().clone(), &blocks, x.device())
    }

    /// The values as a tensor of `dtype` (f32, f16 or bf16) on the same device: ggml's
    /// dequantized values bit for bit (f32), rounded to nearest even for f16 and bf16.
    pub fn dequantize(&self, dtype: DType) -> Result<Tensor> {
        crate::spec::check_dtype(QuantOp::Dequantize.name(), dtype, FLOATS)?;
        let out = Out::new(self.shape.clone(), dtype);
        if parts::needed(&out, &[&self.bytes]) {
            let k = self.shape.dims().last().copied().unwrap_or(1);
            let flat = Out::new([rows(&self.shape), k], dtype);
            let split = Split::mapped("dequantize", &flat, vec![(self.table()?, vec![Some(0), None])]);
            return split.run(|x| self.rows_of(&x[0])?.dequantize(dtype))?.reshape(self.shape.clone());
        }
        let r = self.bytes.run(Family::Quant, QuantOp::Dequantize.name(), &[], &out)?;
        let (offset, n) = (self.bytes.layout().offset(), self.shape.elem_count());
        let s =
            dispatch!(self.device(), |b| b.wrap(b.dequantize(r.arg(b, &self.bytes)?, offset, self.ty, n, dtype)?));
        Ok(r.finish(s))
    }

    /// `x [.., M, K]` (f32, f16 or bf16, any strides) times this weight `[N, K]` transposed:
    /// `[.., M, N]` in x's dtype, accumulated in f32 (halves are widened to f32 and the result
    /// rounded once).
    ///
    /// Up to [`QMATVEC_MAX_ROWS`] rows of x in all (decoding: M times the batch), one kernel
    /// streams the blocks once, decoding each weight in registers and using it for every row:
    /// the products of x with the exactly dequantized weights. With more rows (a prompt), the
    /// weight is dequantized to x's dtype and x's matmul takes the product, on the tensor cores
    /// or cooperative matrices for halves, as llama.cpp's dequantize-then-GEMM path does: for f16
    /// and bf16 x each weight is first rounded to x's dtype (a relative error of at most 2^-11
    /// and 2^-8; below f16's least normal, half its subnormal step; a weight past f16's range is
    /// infinite), for f32 exact. The paths sum in different orders, so they agree to f32
    /// rounding plus that of the weights, not bit for bit.
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, QTensor, Tensor, spec::quant::GgmlType};
    ///
    /// let dev = Device::cpu();
    /// let w = Tensor::from_vec((0..96).map(|i| (i % 7) as f32).collect::<Vec<_>>(), [3, 32], &dev)?;
    /// let q = QTensor::quantize(&w, GgmlType::Q8_0)?;
    /// let x = Tensor::from_vec(vec![1f32; 32], [1, 32], &dev)?;
    /// let y = q.qmatmul(&x)?.to_vec2::<f32>()?;
    /// assert_eq!(y.len(), 1);
    /// assert!((y[0][0] - 90.0).abs() < 0.5); // row 0 sums to (0 + 1 + .. + 6) 4 + 0 + 1 + 2 + 3
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn qmatmul(&self, x: &Tensor) -> Result<Tensor> {
        self.product(x, false)
    }

    /// [`QTensor::qmatmul`] in the q8 activation mode, as llama.cpp's matrix-vector kernels
    /// multiply: for up to [`QMATVEC_MAX_ROWS`] rows of x, each run of [`Q8_BLOCK`] values of a
    /// row is first rounded to 8 bits under one scale (`d` = the run's largest magnitude / 127,
    /// to 11 significant bits: [`q8_scale`]; each value to `d` times [`q8_round`] of it, ties to
    /// even), then multiplied as `qmatmul` multiplies: every backend rounds x to the same values,
    /// and the products are those values' with ggml's, summed in f32. The rounding moves each
    /// value of x by at most half its run's step, `d / 2` (about 2^-8 of the run's largest
    /// magnitude); a run below 2^-100 becomes zeros, a run holding an infinity or a NaN NaNs.
    /// For q4_0, q8_0 and q4_K the GPU kernels read x as i8 words and multiply four values an
    /// instruction (4-byte integer dot products: WGSL's `dot4I8Packed`, outside browsers;
    /// `__dp4a` on NVIDIA); the other types, and browsers, multiply the rounded values as
    /// `qmatmul` does (the rounding is then a cost, not a gain). With more rows (a prompt) it is
    /// `qmatmul`: x is not rounded.
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, QTensor, Tensor, spec::quant::GgmlType};
    ///
    /// let dev = Device::cpu();
    /// let w = Tensor::from_vec(vec![1f32; 64], [2, 32], &dev)?;
    /// let q = QTensor::quantize(&w, GgmlType::Q8_0)?;
    /// let x = Tensor::from_vec((0..32).map(|i| i as f32 / 100.).collect::<Vec<_>>(), [1, 32], &dev)?;
    /// let (exact, q8) = (q.qmatmul(&x)?.to_vec2::<f32>()?, q.qmatmul_q8(&x)?.to_vec2::<f32>()?);
    /// assert!((exact[0][0] - 4.96).abs() < 0.01); // weights 1 to f16 d = 1 / 127: within 2^-11
    /// assert!((q8[0][0] - exact[0][0]).abs() <= 32. * 0.31 / 127. / 2.); // each value within d / 2
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn qmatmul_q8(&self, x: &Tensor) -> Result<Tensor> {
        self.product(x, true)
    }

    /// `qmatmul` (`q8`: x's rows rounded to q8 blocks first, up to [`QMATVEC_MAX_ROWS`] rows).
    fn product(&self, x: &Tensor, q8: bool) -> Result<Tensor> {
        let out = crate::spec::quant::qmatmul(x.shape(), x.dtype(), &self.shape)?;
        let (n, k) = (self.shape.dims()[0], self.shape.dims()[1]);
        let rows: usize = x.dims()[..x.rank() - 1].iter().product();
        if !(1..=QMATVEC_MAX_ROWS).contains(&rows) || k == 0 || n == 0 {
            return x.matmul(&self.dequantize(x.dtype())?.t()?);
        }
        x.same_device("qmatmul", &[&self.bytes])?;
        if parts::needed(&out, &[&self.bytes, x]) {
            // Along N the weight's rows, along the others x's.
            let last = out.shape.rank() - 1;
            let xs = (0..=last).map(|i| (i < last).then_some(i)).collect();
            let ws = (0..=last).map(|i| (i == last).then_some(0)).collect();
            let split = Split::mapped("qmatmul", &out, vec![(self.table()?, ws), (x.clone(), xs)]);
            return split.run(|x| self.rows_of(&x[0])?.product(&x[1], q8));
        }
        let offset = self.bytes.layout().offset();
        // Deferred where the device fuses: the kernel computes x's norm if x is one not run yet
        // (a decode step's), and the elementwise ops on the product where it stores it.
        if !q8 && let Some(y) = x.defer_qproduct(&self.bytes, (offset, self.ty, n), &out)? {
            return Ok(y);
        }
        let op = if q8 { QuantOp::QmatvecQ8 } else { QuantOp::Qmatvec };
        let r = self.bytes.run(Family::Quant, op.name(), &[x], &out)?;
        let s = dispatch!(self.device(), |b| {
            let (q, xs) = (r.arg(b, &self.bytes)?, (r.arg(b, x)?, x.layout()));
            b.wrap(if q8 { b.qmatvec_q8(q, offset, self.ty, n, xs)? } else { b.qmatvec(q, offset, self.ty, n, xs)? })
        });
        Ok(r.finish(s))
    }

    /// The block type.
    pub fn ty(&self) -> GgmlType {
        self.ty
    }

    /// The logical shape (of the values, not the bytes).
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The logical dims.
    pub fn dims(&self) -> &[usize] {
        self.shape.dims()
    }

    /// The device the blocks are on.
    pub fn device(&self) -> &Device {
        self.bytes.device()
    }

    /// The blocks: a u8 tensor of rank 1 on the device.
    pub fn bytes(&self) -> &Tensor {
        &self.bytes
    }

    /// The blocks on the host. Blocks until the GPU is done; in a browser use
    /// [`QTensor::to_bytes_async`].
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        crate::block::block_on_result("to_bytes", self.to_bytes_async())
    }

    /// [`QTensor::to_bytes`] without blocking: the form that works in a browser.
    pub async fn to_bytes_async(&self) -> Result<Vec<u8>> {
        match self.bytes.to_cpu_storage_async().await? {
            CpuStorage::U8(v) => Ok(v),
            other => Err(Error::HostDType { expected: DType::U8, got: other.dtype() }),
        }
    }

    /// A copy of the blocks on `device`. Blocks until the GPU is done; in a browser use
    /// [`QTensor::to_device_async`].
    pub fn to_device(&self, device: &Device) -> Result<QTensor> {
        crate::block::block_on_result("to_device", self.to_device_async(device))
    }

    /// [`QTensor::to_device`] without blocking: the form that works in a browser.
    pub async fn to_device_async(&self, device: &Device) -> Result<QTensor> {
        let bytes = self.table()?.to_device_async(device).await?;
        Ok(QTensor { ty: self.ty, shape: self.shape.clone(), bytes: bytes.reshape([self.bytes.elem_count()])? })
    }

    /// The blocks as rows of the logical shape: `[rows, bytes a row]`.
    fn table(&self) -> Result<Tensor> {
        let rows = rows(&self.shape);
        self.bytes.reshape([rows, self.bytes.elem_count() / rows])
    }

    /// The quantized rows held by `table`, a range of [`QTensor::table`]'s rows.
    fn rows_of(&self, table: &Tensor) -> Result<QTensor> {
        let k = self.shape.dims().last().copied().unwrap_or(1);
        Ok(QTensor {
            ty: self.ty,
            shape: Shape::new([table.dims()[0], k]),
            bytes: table.reshape([table.elem_count()])?,
        })
    }
}

/// The rows of a logical shape (all but its last dim; at least 1, so that bytes divide).
fn rows(shape: &Shape) -> usize {
    (shape.elem_count() / shape.dims().last().copied().unwrap_or(1).max(1)).max(1)
}
