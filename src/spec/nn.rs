//! Neural-network ops: softmax and log_softmax over any dim, layer_norm and rms_norm over the
//! last dim, batch_norm in inference form, local_response_norm across channels, and the
//! pointwise steps of the recurrent cells (the whole LSTM and GRU: [`super::rnn`]).
//!
//! - softmax: `exp(x - max) / sum(exp(x - max))` along `dim`; log_softmax its log.
//! - layer_norm: `(x - mean) / sqrt(var + eps) * weight + bias`, biased variance.
//! - rms_norm: `x / sqrt(mean(x^2) + eps) * weight`.
//! - batch_norm: `(x - running_mean[c]) / sqrt(running_var[c] + eps) * weight[c] + bias[c]`
//!   over `(N, C, ...)`.
//! - local_response_norm (PyTorch's formula): `x / (k + alpha / size * s)^beta` over `(N, C,
//!   ...)`, where `s` sums `x^2` over channels `c - size / 2 ..= c + (size - 1) / 2` (those that
//!   exist: zero padding at the channel ends). Any `size >= 1`; an even one is asymmetric as
//!   PyTorch's is. `alpha` and `k` are at least 0 (so the base of the power is too; PyTorch takes
//!   negative ones and gives NaN or a sign flip from them), `beta` any finite value.
//! - lstm_cell: gates `g = gx + gh + bias` (`[B, 4H]`, PyTorch's order i, f, g, o), then `c' =
//!   sigmoid(f) c + sigmoid(i) tanh(g)`, `h' = sigmoid(o) tanh(c')`; the output `[2, B, H]` holds
//!   `h'` then `c'` (`c'` unrounded in `h'`).
//! - gru_cell: with `a = gx` and `b = gh + bias` (`[B, 3H]`, PyTorch's order r, z, n): `r =
//!   sigmoid(a_r + b_r)`, `z = sigmoid(a_z + b_z)`, `n = tanh(a_n + r b_n)`, `h' = (1 - z) n + z h`;
//!   output `[B, H]`.
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
        LocalResponseNorm = local_response_norm: DType::FLOAT,
        LstmCell = lstm_cell: DType::FLOAT,
        GruCell = gru_cell: DType::FLOAT,
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

/// local_response_norm: `x` is `(N, C, ...)`; `size >= 1`; `alpha` and `k` finite and >= 0,
/// `beta` finite.
pub fn local_response_norm(x: &Layout, dtype: DType, size: usize, alpha: f64, beta: f64, k: f64) -> Result<Out> {
    let name = NnOp::LocalResponseNorm.name();
    check_dtype(name, dtype, NnOp::LocalResponseNorm.dtypes())?;
    if x.rank() < 2 {
        return Err(Error::Rank { op: name, expected: "at least 2 (N, C, ...)", shape: x.shape().clone() });
    }
    if size == 0 {
        return Err(invalid(name, "size 0: the window must hold at least one channel"));
    }
    if ![alpha, beta, k].iter().all(|v| v.is_finite()) || alpha < 0.0 || k < 0.0 {
        return Err(invalid(name, format!("alpha {alpha}, beta {beta}, k {k}: all finite, alpha and k >= 0")));
    }
    Ok(Out::new(x.shape().clone(), dtype))
}

/// The gates of a recurrent cell: 4 for lstm_cell, 3 for gru_cell.
pub fn gates(op: NnOp) -> usize {
    if op == NnOp::LstmCell { 4 } else { 3 }
}

/// lstm_cell or gru_cell: `gx` and `gh` `[B, G H]`, `bias` `[G H]`, `state` (`c` or `h`) `[B, H]`,
/// all of one dtype; the output `[2, B, H]` (lstm_cell: `h'` then `c'`) or `[B, H]`.
pub fn rnn_cell(
    op: NnOp,
    gx: (&Layout, DType),
    gh: (&Layout, DType),
    bias: Option<(&Layout, DType)>,
    state: (&Layout, DType),
) -> Result<Out> {
    let name = op.name();
    check_dtype(name, gx.1, op.dtypes())?;
    check_same_dtype(name, gx.1, gh.1)?;
    check_same_dtype(name, gx.1, state.1)?;
    if state.0.rank() != 2 {
        return Err(Error::Rank { op: name, expected: "2 ([B, H]) for the state", shape: state.0.shape().clone() });
    }
    let (b, h) = (state.0.dims()[0], state.0.dims()[1]);
    let want = Shape::new([b, gates(op) * h]);
    for g in [gx.0, gh.0] {
        if g.shape() != &want {
            return Err(Error::ShapeMismatch { op: name, lhs: g.shape().clone(), rhs: want });
        }
    }
    check_param(name, bias, gates(op) * h, gx.1)?;
    let out = if op == NnOp::LstmCell { Shape::new([2, b, h]) } else { Shape::new([b, h]) };
    Ok(Out::new(out, gx.1))
}
