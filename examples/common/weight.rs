//! The transformer's matmul weights: dense, ggml blocks, or blocks of several types side by side
//! (a Q4_K_M-style mix), and the way each is split into its parts and joined again.

use crate::common::{Ctx, Res, budget};
use crate::parallel;
use rocm_wgpu_ops::io::ModelTensor;
use rocm_wgpu_ops::spec::quant::GgmlType;
use rocm_wgpu_ops::{DType, Device, Error, QTensor, Result, Tensor};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether quantized weights multiply x rounded to q8 blocks (`QTensor::qmatmul_q8`, the
/// transformer's `--activations q8`): set once, before any product.
static Q8_ACTIVATIONS: AtomicBool = AtomicBool::new(false);

/// Sets [`Q8_ACTIVATIONS`] for the rest of the run.
pub fn set_q8_activations(on: bool) {
    Q8_ACTIVATIONS.store(on, Ordering::Relaxed);
}

/// A matmul weight `[in, out]`: dense, the ggml blocks of its transpose `[out, in]` (multiplied
/// by `QTensor::qmatmul`), or weights of different block types side by side along `out`.
pub enum Weight {
    Dense(Tensor),
    Quant(QTensor),
    /// Parts along `out` whose products are concatenated (a file's q, k and v of two types).
    Cat(Vec<Weight>),
}

impl Weight {
    /// `w` (drawn on the cpu) dense, or quantized there to `quant`.
    pub fn new(w: Tensor, quant: Option<GgmlType>) -> Result<Weight> {
        Ok(match quant {
            None => Weight::Dense(w),
            Some(ty) => Weight::Quant(QTensor::quantize(&w.t()?, ty)?),
        })
    }

    /// `w` `[in, out]` as consecutive parts of its columns, `parts` (width, type) in order: one
    /// weight where every part has the same type, else each dense or quantized to its own type
    /// and joined by [`Weight::join`].
    pub fn mixed(w: &Tensor, parts: &[(usize, Option<GgmlType>)]) -> Result<Weight> {
        if parts.iter().all(|&(_, ty)| ty == parts[0].1) {
            return Weight::new(w.clone(), parts[0].1);
        }
        let mut start = 0;
        let mut each = Vec::with_capacity(parts.len());
        for &(len, ty) in parts {
            each.push(Weight::new(w.narrow(1, start, len)?, ty)?);
            start += len;
        }
        Weight::join(each)
    }

    /// Parts side by side along `out` as one weight: dense parts concatenated, blocks of one type
    /// by their bytes (each row of `out` is its own blocks); otherwise a [`Weight::Cat`] of the
    /// runs of neighbouring parts joined so (a file's q and k in q4_K beside its v in q6_K: two
    /// products, not three).
    pub fn join(parts: Vec<Weight>) -> Result<Weight> {
        let dense: Option<Vec<Tensor>> =
            parts.iter().map(|p| if let Weight::Dense(w) = p { Some(w.clone()) } else { None }).collect();
        if let Some(ws) = dense {
            return Ok(Weight::Dense(Tensor::cat(&ws, 1)?.contiguous()?));
        }
        let mut runs: Vec<Vec<QTensor>> = vec![];
        for p in &parts {
            match (p, runs.last_mut()) {
                (Weight::Quant(q), Some(run)) if run[0].ty() == q.ty() => run.push(q.clone()),
                (Weight::Quant(q), _) => runs.push(vec![q.clone()]),
                _ => return Ok(Weight::Cat(parts)),
            }
        }
        let run = |qs: Vec<QTensor>| {
            let (ty, k) = (qs[0].ty(), qs[0].dims()[1]);
            let rows = qs.iter().map(|q| q.dims()[0]).sum::<usize>();
            let bytes: Vec<Tensor> = qs.iter().map(|q| q.bytes().clone()).collect();
            Ok(Weight::Quant(QTensor::new(ty, [rows, k], &Tensor::cat(&bytes, 0)?)?))
        };
        let mut joined: Vec<Weight> = runs.into_iter().map(run).collect::<Result<_>>()?;
        Ok(if joined.len() == 1 { joined.remove(0) } else { Weight::Cat(joined) })
    }

    /// Columns `[start, start + len)` of `out` as a weight of its own: a view of dense columns,
    /// the bytes of those rows of blocks, the part of a [`Weight::Cat`] holding them.
    pub fn cols(&self, start: usize, len: usize) -> Result<Weight> {
        match self {
            Weight::Dense(w) => Ok(Weight::Dense(w.narrow(1, start, len)?)),
            Weight::Quant(q) => {
                let row = q.bytes().elem_count() / q.dims()[0];
                let bytes = q.bytes().narrow(0, start * row, len * row)?;
                QTensor::new(q.ty(), [len, q.dims()[1]], &bytes).map(Weight::Quant)
            }
            Weight::Cat(parts) => {
                let mut first = 0;
                for p in parts {
                    let n = p.outputs();
                    if start >= first && start + len <= first + n {
                        return p.cols(start - first, len);
                    }
                    first += n;
                }
                let msg = format!("columns {start}..{} cross the parts of a mixed weight", start + len);
                Err(Error::InvalidParam { op: "cols", msg })
            }
        }
    }

    /// The output width `out`.
    pub fn outputs(&self) -> usize {
        match self {
            Weight::Dense(w) => w.dims()[1],
            Weight::Quant(q) => q.dims()[0],
            Weight::Cat(parts) => parts.iter().map(Weight::outputs).sum(),
        }
    }

    /// The parts `at` (start, length) of dim `dim`, side by side; dense weights only.
    pub fn split(&self, dim: usize, at: &[(usize, usize)]) -> Result<Weight> {
        match self {
            Weight::Dense(w) => Ok(Weight::Dense(parallel::split(w, dim, at)?)),
            _ => {
                let msg = "ggml blocks are not split into shards here".into();
                Err(Error::InvalidParam { op: "--devices", msg })
            }
        }
    }

    /// On `dev`: dense through `t` (to the device and dtype), blocks copied as they are.
    pub fn map(&self, dev: &Device, t: &impl Fn(&Tensor) -> Result<Tensor>) -> Result<Weight> {
        Ok(match self {
            Weight::Dense(w) => Weight::Dense(t(w)?),
            Weight::Quant(q) => Weight::Quant(q.to_device(dev)?),
            Weight::Cat(parts) => Weight::Cat(parts.iter().map(|p| p.map(dev, t)).collect::<Result<_>>()?),
        })
    }

    /// `[out, in]` as a file stores it: dense in f32, row-major; blocks as they are.
    pub fn transposed(&self) -> Result<ModelTensor> {
        match self {
            Weight::Dense(w) => Ok(ModelTensor::Plain(w.t()?.to_dtype(DType::F32)?.contiguous()?)),
            Weight::Quant(q) => Ok(ModelTensor::Quantized(q.clone())),
            Weight::Cat(_) => Err(Error::InvalidParam { op: "write", msg: "a mixed weight has no one type".into() }),
        }
    }

    /// The weight of a file's `[out, in]` tensor.
    pub fn from_file(t: ModelTensor) -> Result<Weight> {
        Ok(match t {
            ModelTensor::Plain(t) => Weight::Dense(t.t()?),
            ModelTensor::Quantized(q) => Weight::Quant(q),
        })
    }
}

/// `x @ w` for `x` of `(tokens, k)`.
pub fn matmul(c: &Ctx, x: &Tensor, w: &Weight) -> Res<Tensor> {
    c.op("matmul", budget::sum_of_products(x.dims()[1]), || product(x, w))
}

fn product(x: &Tensor, w: &Weight) -> Result<Tensor> {
    match w {
        Weight::Dense(w) => x.matmul(w),
        Weight::Quant(q) if Q8_ACTIVATIONS.load(Ordering::Relaxed) => q.qmatmul_q8(x),
        Weight::Quant(q) => q.qmatmul(x),
        Weight::Cat(parts) => Tensor::cat(&parts.iter().map(|p| product(x, p)).collect::<Result<Vec<_>>>()?, 1),
    }
}
