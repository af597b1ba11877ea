//! Neural-network ops: softmax and log_softmax over any dim, layer_norm and rms_norm over the
//! last dim, batch_norm in inference form.
//!
//! - softmax: `exp(x - max) / sum(exp(x - max))` along `dim`; log_softmax its log.
//! - layer_norm: `(x - mean) / sqrt(var + eps) * weight + bias`, biased variance.
//! - rms_norm: `x / sqrt(mean(x^2) + eps) * weight`.
//! - batch_norm: `(x - running_mean[c]) / sqrt(running_var[c] + eps) * weight[c] + bias[c]`
//!   over `(N, C, ...)`.
//!
//! Weight and bias are optional (1 and 0). Half types compute in f32 or wider.

use super::{Out, check_dtype, check_same_dtype, invalid, spec_enum};
use crate::{DType, Error, Layout, Result, Shape};

spec_enum! {
    /// Softmax and the normalisations.
    pub enum NnOp in Nn {
        Softmax = softmax: DType::FLOAT,
        LogSoftmax = log_softmax: DType::FLOAT,
        LayerNorm = layer_norm: DType::FLOAT,
        RmsNorm = rms_norm: DType::FLOAT,
        BatchNorm = batch_norm: DType::FLOAT,
    }
}

/// softmax or log_softmax along `dim`: a float dtype; the output has the input's shape.
pub fn softmax(op: NnOp, x: &Layout, dtype: DType, dim: usize) -> Result<Out> {
    check_dtype(op.name(), dtype, op.dtypes())?;
    super::dim(op.name(), dim, x.rank())?;
    Ok(Out::new(x.shape().clone(), dtype))
}

/// A per-channel parameter: 1-D of length `len`, dtype of the input.
fn check_param(op: &'static str, p: Option<(&Layout, DType)>, len: usize, dtype: DType) -> Result<()> {
    let Some((l, d)) = p else { return Ok(()) };
    check_same_dtype(op, dtype, d)?;
    if l.dims() != [len] {
        return Err(Error::ShapeMismatch { op, lhs: l.shape().clone(), rhs: Shape::new([len]) });
    }
    Ok(())
}

fn check_eps(op: &'static str, eps: f64) -> Result<()> {
    if eps.is_finite() && eps >= 0.0 { Ok(()) } else { Err(invalid(op, format!("eps {eps} must be finite and >= 0"))) }
}

/// layer_norm and rms_norm: rank at least 1; weight and bias of the last dim's length.
pub fn norm(
    op: NnOp,
    x: (&Layout, DType),
    weight: Option<(&Layout, DType)>,
    bias: Option<(&Layout, DType)>,
    eps: f64,
) -> Result<Out> {
    let name = op.name();
    check_dtype(name, x.1, op.dtypes())?;
    let Some(&last) = x.0.dims().last() else {
        return Err(Error::Rank { op: name, expected: "at least 1", shape: x.0.shape().clone() });
    };
    check_param(name, weight, last, x.1)?;
    check_param(name, bias, last, x.1)?;
    check_eps(name, eps)?;
    Ok(Out::new(x.0.shape().clone(), x.1))
}

/// batch_norm: `x` is `(N, C, ...)`; mean, var, weight, bias are `(C)`.
pub fn batch_norm(
    x: (&Layout, DType),
    mean: (&Layout, DType),
    var: (&Layout, DType),
    weight: Option<(&Layout, DType)>,
    bias: Option<(&Layout, DType)>,
    eps: f64,
) -> Result<Out> {
    let name = NnOp::BatchNorm.name();
    check_dtype(name, x.1, NnOp::BatchNorm.dtypes())?;
    if x.0.rank() < 2 {
        return Err(Error::Rank { op: name, expected: "at least 2 (N, C, ...)", shape: x.0.shape().clone() });
    }
    let c = x.0.dims()[1];
    check_param(name, Some(mean), c, x.1)?;
    check_param(name, Some(var), c, x.1)?;
    check_param(name, weight, c, x.1)?;
    check_param(name, bias, c, x.1)?;
    check_eps(name, eps)?;
    Ok(Out::new(x.0.shape().clone(), x.1))
}
