//! Softmax and the norms on the cpu. Inputs and parameters (any strides) are read into f64,
//! each output element is computed in f64 and rounded once to the dtype.

use super::{CpuBackend, CpuStorage, dtype_mismatch, map_strided, wrong_dtype};
use crate::backend::{NnOps, Operand, Param};
use crate::spec::nn::NnOp;
use crate::{DType, Layout, Result, WithDType, with_float_storage};

/// The elements of `(data, l)` in row-major order, as f64.
fn read_f64<T: WithDType>(data: &[T], l: &Layout) -> Vec<f64> {
    map_strided(data, l, |x| x.to_f64())
}

/// A 1-D operand (weight, bias, running stats) as f64; it must hold the dtype `T` of `x`.
fn read_param<T: WithDType>(op: NnOp, x: &CpuStorage, (s, l): (&CpuStorage, &Layout)) -> Result<Vec<f64>> {
    let v = s.as_slice::<T>().ok_or_else(|| dtype_mismatch(op.name(), x, s))?;
    Ok(read_f64(v, l))
}

fn read_opt<T: WithDType>(op: NnOp, x: &CpuStorage, p: Param<CpuStorage>) -> Result<Option<Vec<f64>>> {
    p.map(|p| read_param::<T>(op, x, p)).transpose()
}

fn round<T: WithDType>(v: Vec<f64>) -> CpuStorage {
    CpuStorage::from_vec(v.into_iter().map(T::from_f64).collect::<Vec<T>>())
}

/// `y + bias`; no bias leaves `y` untouched (adding 0.0 would turn -0.0 into +0.0).
fn shift(y: f64, bias: Option<f64>) -> f64 {
    bias.map_or(y, |b| y + b)
}

/// Softmax (or its log) along `dim` of the row-major values `x` of shape `dims`.
///
/// A line that is all -inf has max = -inf, so `x - max` is NaN and the whole line is NaN
/// (as in PyTorch); a +inf likewise makes its line NaN.
fn softmax_f64(x: &[f64], dims: &[usize], dim: usize, log: bool) -> Vec<f64> {
    let size = dims[dim];
    let inner: usize = dims[dim + 1..].iter().product();
    let mut out = vec![0.0; x.len()];
    if size == 0 || inner == 0 {
        return out;
    }
    for block in 0..x.len() / (size * inner) {
        for i in 0..inner {
            let idx = |s: usize| block * size * inner + s * inner + i;
            let max =
                (0..size).map(|s| x[idx(s)]).fold(f64::NEG_INFINITY, |m, v| if v > m || v.is_nan() { v } else { m });
            let sum: f64 = (0..size).map(|s| (x[idx(s)] - max).exp()).sum();
            let log_sum = sum.ln();
            for s in 0..size {
                let z = x[idx(s)] - max;
                out[idx(s)] = if log { z - log_sum } else { z.exp() / sum };
            }
        }
    }
    out
}

/// layer_norm (`rms = false`) or rms_norm (`rms = true`) over the last dim of length `len`.
fn norm_f64(x: &[f64], len: usize, w: Option<&[f64]>, b: Option<&[f64]>, eps: f64, rms: bool) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    if len == 0 {
        return out;
    }
    let n = len as f64;
    for row in x.chunks_exact(len) {
        // Differences from the line's first value, as the GPU kernels take them: a line of one
        // value has its mean exactly, so it normalises to 0 (0 / 0, NaN, where eps is 0), where
        // `sum / n` of a full-precision f64 may miss it by an ulp.
        let first = if rms { 0.0 } else { row[0] };
        let mean = if rms { 0.0 } else { row.iter().map(|&v| v - first).sum::<f64>() / n };
        // Biased variance for layer_norm; mean of squares for rms_norm (mean taken as 0).
        let var = row.iter().map(|&v| ((v - first) - mean) * ((v - first) - mean)).sum::<f64>() / n;
        let denom = (var + eps).sqrt();
        out.extend(row.iter().enumerate().map(|(j, &v)| {
            let y = ((v - first) - mean) / denom * w.map_or(1.0, |w| w[j]);
            shift(y, b.map(|b| b[j]))
        }));
    }
    out
}

fn softmax_typed<T: WithDType>(v: &[T], l: &Layout, dim: usize, log: bool) -> CpuStorage {
    round::<T>(softmax_f64(&read_f64(v, l), l.dims(), dim, log))
}

fn norm_typed<T: WithDType>(
    op: NnOp,
    v: &[T],
    x: &CpuStorage,
    l: &Layout,
    w: Param<CpuStorage>,
    b: Param<CpuStorage>,
    eps: f64,
) -> Result<CpuStorage> {
    let (w, b) = (read_opt::<T>(op, x, w)?, read_opt::<T>(op, x, b)?);
    let len = l.dims().last().copied().unwrap_or(1);
    let y = norm_f64(&read_f64(v, l), len, w.as_deref(), b.as_deref(), eps, op == NnOp::RmsNorm);
    Ok(round::<T>(y))
}

#[allow(clippy::too_many_arguments)]
fn batch_norm_typed<T: WithDType>(
    v: &[T],
    x: &CpuStorage,
    l: &Layout,
    mean: (&CpuStorage, &Layout),
    var: (&CpuStorage, &Layout),
    w: Param<CpuStorage>,
    b: Param<CpuStorage>,
    eps: f64,
) -> Result<CpuStorage> {
    let op = NnOp::BatchNorm;
    let (mean, var) = (read_param::<T>(op, x, mean)?, read_param::<T>(op, x, var)?);
    let (w, b) = (read_opt::<T>(op, x, w)?, read_opt::<T>(op, x, b)?);
    let xs = read_f64(v, l);
    let c = l.dims().get(1).copied().unwrap_or(1);
    let inner: usize = l.dims().iter().skip(2).product();
    if xs.is_empty() {
        return Ok(round::<T>(xs));
    }
    let denom: Vec<f64> = var.iter().map(|&v| (v + eps).sqrt()).collect();
    let y = xs
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let ch = (i / inner) % c;
            shift((v - mean[ch]) / denom[ch] * w.as_ref().map_or(1.0, |w| w[ch]), b.as_ref().map(|b| b[ch]))
        })
        .collect();
    Ok(round::<T>(y))
}

/// local_response_norm of the row-major values `x` of shape `(N, C, inner...)`.
fn lrn_f64(x: &[f64], dims: &[usize], size: usize, alpha: f64, beta: f64, k: f64) -> Vec<f64> {
    let c = dims[1];
    let inner: usize = dims[2..].iter().product();
    let (before, after) = (size / 2, (size - 1) / 2);
    let mut out = Vec::with_capacity(x.len());
    for (i, &v) in x.iter().enumerate() {
        let (ch, base) = ((i / inner) % c, i - (i / inner) % c * inner);
        let window = ch.saturating_sub(before)..(ch + after + 1).min(c);
        let s: f64 = window.map(|j| x[base + j * inner] * x[base + j * inner]).sum();
        out.push(v / (s / size as f64 * alpha + k).powf(beta));
    }
    out
}

fn lrn_typed<T: WithDType>(v: &[T], l: &Layout, size: usize, alpha: f64, beta: f64, k: f64) -> CpuStorage {
    round::<T>(lrn_f64(&read_f64(v, l), l.dims(), size, alpha, beta, k))
}

fn sigmoid(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

/// lstm_cell (`[2, B, H]`: h' then c') or gru_cell (`[B, H]`) of row-major gate inputs `gx`,
/// `gh` (`[B, G H]`), the bias of `gh` and the state (`[B, H]`).
fn cell_f64(op: NnOp, h: usize, gx: &[f64], gh: &[f64], bias: Option<&[f64]>, state: &[f64]) -> Vec<f64> {
    let g = crate::spec::nn::gates(op) * h;
    let mut out = vec![0.0; if op == NnOp::LstmCell { 2 * state.len() } else { state.len() }];
    for (i, &s) in state.iter().enumerate() {
        let (b, j) = (i / h, i % h);
        let a = |q: usize| gx[b * g + q * h + j];
        let r = |q: usize| gh[b * g + q * h + j] + bias.map_or(0.0, |v| v[q * h + j]);
        if op == NnOp::LstmCell {
            let gate = |q: usize| a(q) + r(q);
            let c = sigmoid(gate(1)) * s + sigmoid(gate(0)) * gate(2).tanh();
            out[i] = sigmoid(gate(3)) * c.tanh();
            out[state.len() + i] = c;
        } else {
            let (rr, z) = (sigmoid(a(0) + r(0)), sigmoid(a(1) + r(1)));
            let n = (a(2) + rr * r(2)).tanh();
            out[i] = (1.0 - z) * n + z * s;
        }
    }
    out
}

fn cell_typed<T: WithDType>(
    _: &[T],
    op: NnOp,
    gx: Operand<CpuStorage>,
    gh: Operand<CpuStorage>,
    bias: Param<CpuStorage>,
    state: Operand<CpuStorage>,
) -> Result<CpuStorage> {
    let read = |(s, l): Operand<CpuStorage>| read_param::<T>(op, gx.0, (s, l));
    let h = state.1.dims()[1];
    let y = cell_f64(op, h, &read(gx)?, &read(gh)?, read_opt::<T>(op, gx.0, bias)?.as_deref(), &read(state)?);
    Ok(round::<T>(y))
}

impl NnOps for CpuBackend {
    fn softmax(&self, x: &CpuStorage, l: &Layout, op: NnOp, dim: usize) -> Result<CpuStorage> {
        let log = op == NnOp::LogSoftmax;
        with_float_storage!(x, v => Ok(softmax_typed(v, l, dim, log)), Err(wrong_dtype(op.name(), x, DType::FLOAT)))
    }

    fn layer_norm(
        &self,
        x: &CpuStorage,
        l: &Layout,
        w: Param<CpuStorage>,
        b: Param<CpuStorage>,
        eps: f64,
    ) -> Result<CpuStorage> {
        let op = NnOp::LayerNorm;
        with_float_storage!(x, v => norm_typed(op, v, x, l, w, b, eps), Err(wrong_dtype(op.name(), x, DType::FLOAT)))
    }

    fn rms_norm(&self, x: &CpuStorage, l: &Layout, w: Param<CpuStorage>, eps: f64) -> Result<CpuStorage> {
        let op = NnOp::RmsNorm;
        with_float_storage!(x, v => norm_typed(op, v, x, l, w, None, eps), Err(wrong_dtype(op.name(), x, DType::FLOAT)))
    }

    fn batch_norm(
        &self,
        x: &CpuStorage,
        l: &Layout,
        mean: (&CpuStorage, &Layout),
        var: (&CpuStorage, &Layout),
        w: Param<CpuStorage>,
        b: Param<CpuStorage>,
        eps: f64,
    ) -> Result<CpuStorage> {
        let op = NnOp::BatchNorm;
        with_float_storage!(x, v => batch_norm_typed(v, x, l, mean, var, w, b, eps),
            Err(wrong_dtype(op.name(), x, DType::FLOAT)))
    }

    fn local_response_norm(
        &self,
        x: &CpuStorage,
        l: &Layout,
        size: usize,
        alpha: f64,
        beta: f64,
        k: f64,
    ) -> Result<CpuStorage> {
        let op = NnOp::LocalResponseNorm;
        with_float_storage!(x, v => Ok(lrn_typed(v, l, size, alpha, beta, k)),
            Err(wrong_dtype(op.name(), x, DType::FLOAT)))
    }

    fn rnn_cell(
        &self,
        op: NnOp,
        gx: Operand<CpuStorage>,
        gh: Operand<CpuStorage>,
        bias: Param<CpuStorage>,
        state: Operand<CpuStorage>,
    ) -> Result<CpuStorage> {
        let x = gx.0;
        with_float_storage!(x, v => cell_typed(v, op, gx, gh, bias, state),
            Err(wrong_dtype(op.name(), x, DType::FLOAT)))
    }
}
