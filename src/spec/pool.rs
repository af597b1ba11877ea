//! 2-D pooling over `(N, C, H, W)`.
//!
//! `H_out = (H + 2p - k) / s + 1` per spatial dim. Padding is at most half the kernel.
//! avg_pool2d divides by the full kernel area, padded cells counting as zeros (PyTorch's
//! `count_include_pad=True`); max_pool2d ignores padded cells and propagates NaN.

use super::{Out, check_dtype, check_rank, invalid, spec_enum};
use crate::{DType, Layout, Result};

spec_enum! {
    pub enum PoolOp in Pool {
        AvgPool2d = "avg_pool2d": DType::FLOAT,
        MaxPool2d = "max_pool2d": DType::FLOAT,
    }
}

/// Kernel, stride and padding as `[h, w]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pool2dParams {
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub padding: [usize; 2],
}

impl Pool2dParams {
    /// A square window with stride equal to its size and no padding (the common case).
    pub fn new(k: usize) -> Self {
        Pool2dParams { kernel: [k, k], stride: [k, k], padding: [0, 0] }
    }
    pub fn stride(mut self, s: usize) -> Self {
        self.stride = [s, s];
        self
    }
    pub fn padding(mut self, p: usize) -> Self {
        self.padding = [p, p];
        self
    }
}

/// Checks the window and computes `(N, C, H_out, W_out)`.
pub fn pool2d(op: PoolOp, x: &Layout, dtype: DType, p: &Pool2dParams) -> Result<Out> {
    let name = op.name();
    check_dtype(name, dtype, op.dtypes())?;
    check_rank(name, x.shape(), 4, "4 (N, C, H, W)")?;
    let d = x.dims();
    let mut out = vec![d[0], d[1], 0, 0];
    for i in 0..2 {
        let (k, s, pad, size) = (p.kernel[i], p.stride[i], p.padding[i], d[2 + i]);
        if k == 0 {
            return Err(invalid(name, format!("zero kernel size {:?}", p.kernel)));
        }
        if s == 0 {
            return Err(invalid(name, format!("zero stride {:?}", p.stride)));
        }
        if 2 * pad > k {
            return Err(invalid(name, format!("padding {pad} more than half the kernel {k}")));
        }
        if k > size + 2 * pad {
            return Err(invalid(name, format!("kernel {k} larger than padded input {}", size + 2 * pad)));
        }
        out[2 + i] = (size + 2 * pad - k) / s + 1;
    }
    Ok(Out::new(out, dtype))
}
