//! 2-D average and max pooling on the cpu, over a contiguous f64 copy of the input, with the
//! windows of `spec::pool`.

use super::{CpuBackend, CpuStorage, map_strided, wrong_dtype};
use crate::backend::PoolOps;
use crate::spec::pool::{Pool2dParams, PoolOp};
use crate::{DType, Layout, Result, WithDType, with_float_storage};

/// The windows of one spatial dim: for each output, the input cells it reads and the length
/// avg_pool2d counts with padding.
struct Windows {
    cells: Vec<Vec<usize>>,
    padded_len: Vec<usize>,
}

/// Windows along spatial dim `i` of input size `n`, `out` of them.
fn windows(op: PoolOp, p: &Pool2dParams, i: usize, n: usize, out: usize) -> Windows {
    let (k, s, pad, d) = (p.kernel[i] as i64, p.stride[i] as i64, p.padding[i] as i64, p.dilation[i] as i64);
    let n = n as i64;
    let mut w = Windows { cells: vec![], padded_len: vec![] };
    for o in 0..out as i64 {
        let start = o * s - pad;
        let cells = match op {
            PoolOp::MaxPool2d => (0..k).map(|j| start + j * d).filter(|c| (0..n).contains(c)).collect(),
            // The range clipped to the padded input, then to the input.
            PoolOp::AvgPool2d => (start.max(0)..(start + k).min(n)).collect::<Vec<_>>(),
        };
        w.cells.push(cells.into_iter().map(|c| c as usize).collect());
        w.padded_len.push(((start + k).min(n + pad) - start) as usize);
    }
    w
}

/// Pools every `(H, W)` plane of the contiguous `x` of shape `dims` into `(H_out, W_out)`.
fn pool_f64(x: &[f64], dims: &[usize], op: PoolOp, p: &Pool2dParams) -> Vec<f64> {
    let (planes, h, w) = (dims[0] * dims[1], dims[2], dims[3]);
    let (oh, ow) = (p.out_size(0, h).unwrap_or(0), p.out_size(1, w).unwrap_or(0));
    let (rows, cols) = (windows(op, p, 0, h, oh), windows(op, p, 1, w, ow));
    let mut out = Vec::with_capacity(planes * oh * ow);
    for c in 0..planes {
        let plane = &x[c * h * w..(c + 1) * h * w];
        for i in 0..oh {
            for j in 0..ow {
                let (rs, cs) = (&rows.cells[i], &cols.cells[j]);
                let cells = rs.iter().flat_map(|r| cs.iter().map(move |c| plane[r * w + c]));
                out.push(match op {
                    PoolOp::AvgPool2d => {
                        let real = rs.len() * cs.len();
                        let area = if p.count_include_pad { rows.padded_len[i] * cols.padded_len[j] } else { real };
                        // Folding from +0 (`sum` starts at -0) keeps a window without input cells
                        // at +0, which is also what it is when nothing divides it.
                        let sum = cells.fold(0.0, |s, v| s + v);
                        if real == 0 { 0.0 } else { sum / area as f64 }
                    }
                    // Once a NaN is taken nothing compares above it; a window without input cells
                    // has the max of nothing, -inf.
                    PoolOp::MaxPool2d => cells.fold(f64::NEG_INFINITY, |m, v| if v > m || v.is_nan() { v } else { m }),
                });
            }
        }
    }
    out
}

fn typed<T: WithDType>(x: &[T], l: &Layout, op: PoolOp, p: &Pool2dParams) -> CpuStorage {
    let xs = map_strided(x, l, |v| v.to_f64());
    let out = pool_f64(&xs, l.dims(), op, p);
    CpuStorage::from_vec(out.into_iter().map(T::from_f64).collect::<Vec<T>>())
}

impl PoolOps for CpuBackend {
    fn pool2d(&self, x: &CpuStorage, l: &Layout, op: PoolOp, p: &Pool2dParams) -> Result<CpuStorage> {
        with_float_storage!(x, v => Ok(typed(v, l, op, p)), Err(wrong_dtype(op.name(), x, DType::FLOAT)))
    }
}
