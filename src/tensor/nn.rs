//! The nn family's line ops as tensor methods: softmax and log_softmax, layer_norm, rms_norm and
//! batch_norm (local_response_norm and the recurrent cells: `recurrent.rs`).

use super::Tensor;
use super::parts::{self, Split};
use crate::backend::NnOps;
use crate::device::{BackendOf, dispatch};
use crate::spec::Family;
use crate::spec::nn::{self, NnOp};
use crate::spec::reduce::ReduceOp;
use crate::{DType, Dim, Error, Result};

impl Tensor {
    /// Softmax along `dim`: `exp(x - max) / sum(exp(x - max))`.
    pub fn softmax(&self, dim: impl Dim) -> Result<Tensor> {
        self.softmax_op(NnOp::Softmax, dim)
    }

    /// The log of [`Tensor::softmax`], computed directly (no log of a rounded softmax).
    pub fn log_softmax(&self, dim: impl Dim) -> Result<Tensor> {
        self.softmax_op(NnOp::LogSoftmax, dim)
    }

    fn softmax_op(&self, op: NnOp, dim: impl Dim) -> Result<Tensor> {
        let dim = dim.to_index(self.rank(), op.name())?;
        let out = nn::softmax(op, &self.layout, self.dtype, dim)?;
        if parts::needed(&out, &[self]) {
            let split = Split::pointwise(op.name(), &out, std::slice::from_ref(self)).fixed(&[dim]);
            return match split.run(|x| x[0].softmax_op(op, dim)) {
                Err(Error::LimitExceeded { .. }) if self.in_parts() => self.softmax_parts(op, dim),
                r => r,
            };
        }
        let r = self.run(Family::Nn, op.name(), &[], &out)?;
        let s = dispatch!(self.device, |b| b.wrap(b.softmax(r.arg(b, self)?, &self.layout, op, dim)?));
        Ok(r.finish(s))
    }

    /// Softmax along a dim whose lines cross parts, from ops that split there: the max, the
    /// shifted exponentials and their sum (halves in f32, as the kernels compute).
    fn softmax_parts(&self, op: NnOp, dim: usize) -> Result<Tensor> {
        let half = matches!(self.dtype, DType::F16 | DType::BF16);
        let x = if half { self.to_dtype(DType::F32)? } else { self.clone() };
        let shifted = x.sub(&x.max_keepdim(dim)?)?;
        let e = shifted.exp()?;
        let sum = e.reduce(ReduceOp::Sum, dim, true)?;
        let y = if op == NnOp::Softmax { e.div(&sum)? } else { shifted.sub(&sum.log()?)? };
        y.to_dtype(self.dtype)
    }

    /// A layer norm (`center`) or an rms norm over a last dim whose lines cross parts, from ops
    /// that split there: the mean, the mean square and the parameters (halves in f32, as the
    /// kernels compute).
    fn norm_parts(&self, center: bool, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<Tensor> {
        let f32 = |t: &Tensor| {
            if matches!(t.dtype, DType::F16 | DType::BF16) { t.to_dtype(DType::F32) } else { Ok(t.clone()) }
        };
        let last = self.rank() - 1;
        let n = self.dims()[last] as f64;
        let mean = |t: &Tensor, add: f64| t.reduce(ReduceOp::Sum, last, true)?.affine(1.0 / n, add);
        let x = f32(self)?;
        let x = if center { x.sub(&mean(&x, 0.0)?)? } else { x };
        let mut y = x.div(&mean(&x.sqr()?, eps)?.sqrt()?)?;
        if let Some(w) = weight {
            y = y.mul(&f32(w)?)?;
        }
        if let Some(b) = bias {
            y = y.add(&f32(b)?)?;
        }
        y.to_dtype(self.dtype)
    }

    /// Normalises over the last dim, then scales by `weight` and shifts by `bias`.
    pub fn layer_norm(&self, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<Tensor> {
        let params = [weight, bias].into_iter().flatten().collect::<Vec<_>>();
        self.same_device("layer_norm", &params)?;
        let out = nn::norm(NnOp::LayerNorm, self.lay(), weight.map(Tensor::lay), bias.map(Tensor::lay), eps)?;
        if parts::needed(&out, &[self]) || params.iter().any(|t| t.in_parts()) {
            let (hw, hb) = (weight.is_some(), bias.is_some());
            let split = self.split_norm("layer_norm", &out, &params, &[], |x, p| {
                let mut p = p.iter();
                x.layer_norm(hw.then(|| p.next()).flatten(), hb.then(|| p.next()).flatten(), eps)
            });
            return match split {
                Err(Error::LimitExceeded { .. }) if self.in_parts() => self.norm_parts(true, weight, bias, eps),
                r => r,
            };
        }
        if let Some(t) = self.defer_norm(NnOp::LayerNorm, (weight, bias), eps, &out)? {
            return Ok(t);
        }
        let r = self.run(Family::Nn, "layer_norm", &params, &out)?;
        let s = dispatch!(self.device, |b| {
            let w = weight.map(|t| Ok::<_, crate::Error>((r.arg(b, t)?, &t.layout))).transpose()?;
            let bi = bias.map(|t| Ok::<_, crate::Error>((r.arg(b, t)?, &t.layout))).transpose()?;
            b.wrap(b.layer_norm(r.arg(b, self)?, &self.layout, w, bi, eps)?)
        });
        Ok(r.finish(s))
    }

    /// Divides by the root mean square over the last dim, then scales by `weight`.
    pub fn rms_norm(&self, weight: Option<&Tensor>, eps: f64) -> Result<Tensor> {
        let params = weight.into_iter().collect::<Vec<_>>();
        self.same_device("rms_norm", &params)?;
        let out = nn::norm(NnOp::RmsNorm, (&self.layout, self.dtype), weight.map(|t| (&t.layout, t.dtype)), None, eps)?;
        if parts::needed(&out, &[self]) || params.iter().any(|t| t.in_parts()) {
            return match self.split_norm("rms_norm", &out, &params, &[], |x, p| x.rms_norm(p.first(), eps)) {
                Err(Error::LimitExceeded { .. }) if self.in_parts() => self.norm_parts(false, weight, None, eps),
                r => r,
            };
        }
        if let Some(t) = self.defer_norm(NnOp::RmsNorm, (weight, None), eps, &out)? {
            return Ok(t);
        }
        let r = self.run(Family::Nn, "rms_norm", &params, &out)?;
        let s = dispatch!(self.device, |b| {
            let w = weight.map(|t| Ok::<_, crate::Error>((r.arg(b, t)?, &t.layout))).transpose()?;
            b.wrap(b.rms_norm(r.arg(b, self)?, &self.layout, w, eps)?)
        });
        Ok(r.finish(s))
    }

    /// Inference batch norm over `(N, C, ...)` with running statistics of shape `(C)`.
    pub fn batch_norm(
        &self,
        mean: &Tensor,
        var: &Tensor,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        let params = [Some(mean), Some(var), weight, bias].into_iter().flatten().collect::<Vec<_>>();
        self.same_device("batch_norm", &params)?;
        let out =
            nn::batch_norm(self.lay(), mean.lay(), var.lay(), weight.map(Tensor::lay), bias.map(Tensor::lay), eps)?;
        if parts::needed(&out, &[self]) || params.iter().any(|t| t.in_parts()) {
            let (hw, hb) = (weight.is_some(), bias.is_some());
            return self.split_norm("batch_norm", &out, &params, &[1], |x, p| {
                let mut rest = p[2..].iter();
                x.batch_norm(&p[0], &p[1], hw.then(|| rest.next()).flatten(), hb.then(|| rest.next()).flatten(), eps)
            });
        }
        let r = self.run(Family::Nn, "batch_norm", &params, &out)?;
        let s = dispatch!(self.device, |b| {
            let w = weight.map(|t| Ok::<_, crate::Error>((r.arg(b, t)?, &t.layout))).transpose()?;
            let bi = bias.map(|t| Ok::<_, crate::Error>((r.arg(b, t)?, &t.layout))).transpose()?;
            let m = (r.arg(b, mean)?, &mean.layout);
            let v = (r.arg(b, var)?, &var.layout);
            b.wrap(b.batch_norm(r.arg(b, self)?, &self.layout, m, v, w, bi, eps)?)
        });
        Ok(r.finish(s))
    }
}
