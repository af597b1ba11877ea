//! 2-D pooling over `(N, C, H, W)`, with PyTorch's rules for `avg_pool2d` and `max_pool2d`.
//!
//! Per spatial dim of input size `n`, kernel `k`, stride `s`, padding `p` and dilation `d`
//! (max_pool2d only; avg_pool2d has `d = 1`):
//! - Output size, as PyTorch's `pooling_output_shape` (`aten/src/ATen/native/Pool.h`):
//!   `out = floor((n + 2p - d (k - 1) - 1 + (ceil_mode ? s - 1 : 0)) / s) + 1`, and under
//!   `ceil_mode` one less when the last window would start at or past `n + p` (every window
//!   starts inside the input or its left padding). An output size below 1 is an error.
//! - Window `o` starts at `o s - p`. max_pool2d takes the cells `start + j d` (`j < k`) inside
//!   `[0, n)`, ignores padded ones and propagates NaN; a window without an input cell is -inf.
//! - avg_pool2d sums the input cells of `[start, min(start + k, n + p))` (padded cells are
//!   zeros) and divides, as PyTorch's kernels do, by the area of that range (the window clipped
//!   to the padded input, which `ceil_mode` can overhang) when `count_include_pad` (the
//!   default), else by the number of input cells it holds; a window without an input cell is 0.
//! - Padding is at most half the kernel (`2p <= k`), as PyTorch requires.
//!
//! Parameters a pool does not have are errors rather than ignored: dilation for avg_pool2d,
//! `count_include_pad = false` for max_pool2d.

use super::{Out, check_dtype, check_rank, invalid, spec_enum};
use crate::{DType, Layout, Result};

spec_enum! {
    /// 2-D pooling over windows.
    pub enum PoolOp in Pool {
        AvgPool2d = avg_pool2d: DType::FLOAT,
        MaxPool2d = max_pool2d: DType::FLOAT,
    }
}

/// Kernel, stride, padding and dilation as `[h, w]`, and the two PyTorch flags.
///
/// ```
/// use rocm_wgpu_ops::spec::pool::Pool2dParams;
/// use rocm_wgpu_ops::{Device, Tensor};
///
/// let p = Pool2dParams::new(3).stride(2).padding(1).ceil_mode(true).count_include_pad(false);
/// assert_eq!(p.out_size(0, 6), Some(4));
///
/// let x = Tensor::arange(0f32, 16., &Device::cpu())?.reshape([1, 1, 4, 4])?;
/// assert_eq!(x.max_pool2d(&Pool2dParams::new(2))?.to_vec::<f32>()?, [5., 7., 13., 15.]);
/// assert_eq!(x.avg_pool2d(&Pool2dParams::new(2))?.to_vec::<f32>()?, [2.5, 4.5, 10.5, 12.5]);
/// # Ok::<(), rocm_wgpu_ops::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pool2dParams {
    /// Window size (H, W).
    pub kernel: [usize; 2],
    /// Step between windows (H, W).
    pub stride: [usize; 2],
    /// Implicit padding on both sides (H, W); at most half the kernel.
    pub padding: [usize; 2],
    /// Spacing of a window's cells (max_pool2d; `[1, 1]` for avg_pool2d).
    pub dilation: [usize; 2],
    /// Output sizes rounded up instead of down.
    pub ceil_mode: bool,
    /// avg_pool2d divides by the window's area, padded cells included (`true`), or by its
    /// input cells only (`false`; avg_pool2d only).
    pub count_include_pad: bool,
}

impl Pool2dParams {
    /// A square window with stride equal to its size, no padding, no dilation, sizes rounded
    /// down and padded cells counted (PyTorch's defaults).
    pub fn new(k: usize) -> Self {
        Pool2dParams {
            kernel: [k, k],
            stride: [k, k],
            padding: [0, 0],
            dilation: [1, 1],
            ceil_mode: false,
            count_include_pad: true,
        }
    }
    /// The same stride on both dims.
    pub fn stride(mut self, s: usize) -> Self {
        self.stride = [s, s];
        self
    }
    /// The same padding on both dims.
    pub fn padding(mut self, p: usize) -> Self {
        self.padding = [p, p];
        self
    }
    /// The same dilation on both dims (max_pool2d only).
    pub fn dilation(mut self, d: usize) -> Self {
        self.dilation = [d, d];
        self
    }
    /// Output sizes rounded up (`true`) or down.
    pub fn ceil_mode(mut self, on: bool) -> Self {
        self.ceil_mode = on;
        self
    }
    /// Whether avg_pool2d counts padded cells in its divisor.
    pub fn count_include_pad(mut self, on: bool) -> Self {
        self.count_include_pad = on;
        self
    }

    /// The span of a window along spatial dim `i` (0: H, 1: W): `d (k - 1) + 1`.
    pub fn extent(&self, i: usize) -> usize {
        self.dilation[i] * (self.kernel[i] - 1) + 1
    }

    /// The output size along spatial dim `i` for input size `n` (PyTorch's rule, see the
    /// module docs), or `None` when not even one window fits. Assumes non-zero kernel,
    /// stride and dilation.
    pub fn out_size(&self, i: usize, n: usize) -> Option<usize> {
        let (s, p) = (self.stride[i] as i128, self.padding[i] as i128);
        let round_up = if self.ceil_mode { s - 1 } else { 0 };
        let mut out = (n as i128 + 2 * p - self.extent(i) as i128 + round_up).div_euclid(s) + 1;
        if self.ceil_mode && (out - 1) * s >= n as i128 + p {
            out -= 1;
        }
        (out >= 1).then_some(out as usize)
    }
}

/// Checks the window and computes `(N, C, H_out, W_out)`.
pub fn pool2d(op: PoolOp, x: &Layout, dtype: DType, p: &Pool2dParams) -> Result<Out> {
    let name = op.name();
    check_dtype(name, dtype, op.dtypes())?;
    check_rank(name, x.shape(), 4, "4 (N, C, H, W)")?;
    if op == PoolOp::AvgPool2d && p.dilation != [1, 1] {
        return Err(invalid(name, format!("no dilation (got {:?}): avg_pool2d windows are dense", p.dilation)));
    }
    if op == PoolOp::MaxPool2d && !p.count_include_pad {
        return Err(invalid(name, "count_include_pad = false is an avg_pool2d setting"));
    }
    let d = x.dims();
    let mut out = vec![d[0], d[1], 0, 0];
    for i in 0..2 {
        let (k, pad, size) = (p.kernel[i], p.padding[i], d[2 + i]);
        if k == 0 {
            return Err(invalid(name, format!("zero kernel size {:?}", p.kernel)));
        }
        if p.stride[i] == 0 {
            return Err(invalid(name, format!("zero stride {:?}", p.stride)));
        }
        if p.dilation[i] == 0 {
            return Err(invalid(name, format!("zero dilation {:?}", p.dilation)));
        }
        if 2 * pad > k {
            return Err(invalid(name, format!("padding {pad} more than half the kernel {k}")));
        }
        out[2 + i] = p.out_size(i, size).ok_or_else(|| {
            invalid(name, format!("kernel {} larger than padded input {}", p.extent(i), size + 2 * pad))
        })?;
    }
    Ok(Out::new(out, dtype))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_sizes_follow_pytorch() {
        let p = |k: usize, s: usize, pad: usize, d: usize, ceil: bool| {
            Pool2dParams::new(k).stride(s).padding(pad).dilation(d).ceil_mode(ceil)
        };
        // floor((5 - 2) / 2) + 1 = 2; ceil: 3 (the last window starts at 4 < 5).
        assert_eq!(p(2, 2, 0, 1, false).out_size(0, 5), Some(2));
        assert_eq!(p(2, 2, 0, 1, true).out_size(0, 5), Some(3));
        // ceil_mode would start a window at 6 >= n + p = 6: dropped.
        assert_eq!(p(2, 3, 1, 1, true).out_size(0, 5), Some(2));
        assert_eq!(p(2, 3, 1, 1, false).out_size(0, 5), Some(2));
        // Dilation 2 spans 3 cells: (4 - 3) / 1 + 1 = 2.
        assert_eq!(p(2, 1, 0, 2, false).out_size(0, 4), Some(2));
        assert_eq!(p(3, 1, 0, 2, false).out_size(0, 4), None);
        // A window overhanging the padded input by less than a stride fits under ceil_mode.
        assert_eq!(p(5, 2, 0, 1, false).out_size(0, 4), None);
        assert_eq!(p(5, 2, 0, 1, true).out_size(0, 4), Some(1));
        // An empty dim with padding still holds one window.
        assert_eq!(p(2, 1, 1, 1, false).out_size(0, 0), Some(1));
    }
}
