//! 2-D average and max pooling on the cpu, over a contiguous f64 copy of the input.

use super::{CpuBackend, CpuStorage, map_strided, wrong_dtype};
use crate::backend::PoolOps;
use crate::spec::pool::{Pool2dParams, PoolOp};
use crate::{DType, Layout, Result, WithDType, with_float_storage};
use std::ops::Range;

/// The input positions of window `o` along one dim, padded cells left out.
fn window(o: usize, k: usize, s: usize, p: usize, size: usize) -> Range<usize> {
    let (lo, hi) = ((o * s).saturating_sub(p), (o * s + k).saturating_sub(p).min(size));
    lo..hi.max(lo)
}

/// Pools every `(H, W)` plane of the contiguous `x` of shape `dims` into `(H_out, W_out)`.
fn pool_f64(x: &[f64], dims: &[usize], op: PoolOp, p: &Pool2dParams) -> Vec<f64> {
    let (planes, h, w) = (dims[0] * dims[1], dims[2], dims[3]);
    let [kh, kw] = p.kernel;
    let oh = (h + 2 * p.padding[0] - kh) / p.stride[0] + 1;
    let ow = (w + 2 * p.padding[1] - kw) / p.stride[1] + 1;
    let area = (kh * kw) as f64;
    let mut out = Vec::with_capacity(planes * oh * ow);
    for c in 0..planes {
        let plane = &x[c * h * w..(c + 1) * h * w];
        for i in 0..oh {
            let rows = window(i, kh, p.stride[0], p.padding[0], h);
            for j in 0..ow {
                let cols = window(j, kw, p.stride[1], p.padding[1], w);
                let cells = rows.clone().flat_map(|r| &plane[r * w + cols.start..r * w + cols.end]);
                out.push(match op {
                    // Padded cells are zeros: they add nothing but count in the area. Folding from +0
                    // (`sum` starts at -0) keeps a window of padding only at +0.
                    PoolOp::AvgPool2d => cells.fold(0.0, |s, &v| s + v) / area,
                    // Once a NaN is taken nothing compares above it; a window of padding only
                    // (an input with an empty dim) has the max of nothing, -inf.
                    PoolOp::MaxPool2d => cells.fold(f64::NEG_INFINITY, |m, &v| if v > m || v.is_nan() { v } else { m }),
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
