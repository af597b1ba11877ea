//! The nn family's line ops as tensor methods: softmax and log_softmax, layer_norm, rms_norm and
//! batch_norm (local_response_norm and the recurrent cells: `recurrent.rs`).

use super::Tensor;
use super::parts::{self, Split};
use crate::backend::NnOps;
use crate::device::{BackendOf, dispatch};
use crate::spec::Family;
use crate::spec::nn::{self, NnOp};
use crate::{Dim, Result};

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
            return Split::pointwise(op.name(), &out, std::slice::from_ref(self))
                .fixed(&[dim])
                .run(|x| x[0].softmax_op(op, dim));
        }
        let r = self.run(Family::Nn, op.name(), &[], &out)?;
        let s = dispatch!(self.device, |b| b.wrap(b.softmax(r.arg(b, self)?, &self.layout, op, dim)?));
        Ok(r.finish(s))
    }

    /// Normalises over the last dim, then scales by `weight` and shifts by `bias`.
    pub fn layer_norm(&self, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<Tensor> {
        let params = [weight, bias].into_iter().flatten().collect::<Vec<_>>();
        self.same_device("layer_norm", &params)?;
        let out = nn::norm(NnOp::LayerNorm, self.lay(), weight.map(Tensor::lay), bias.map(Tensor::lay), eps)?;
        if parts::needed(&out, &[self]) || params.iter().any(|t| t.in_parts()) {
            let (hw, hb) = (weight.is_some(), bias.is_some());
            return self.split_norm("layer_norm", &out, &params, &[], |x, p| {
                let mut p = p.iter();
                x.layer_norm(hw.then(|| p.next()).flatten(), hb.then(|| p.next()).flatten(), eps)
            });
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
            return self.split_norm("rms_norm", &out, &params, &[], |x, p| x.rms_norm(p.first(), eps));
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
