//! Nearest-neighbour upsampling (and downsampling) to a given size.
//!
//! Output cell `o` of a dim of input size `i` and output size `n` reads input cell
//! `floor(o * i / n)`, computed exactly in integers.

use super::{Out, check_dtype, check_rank, invalid, spec_enum};
use crate::{DType, Layout, Result};

spec_enum! {
    /// Nearest-neighbour upsampling.
    pub enum UpsampleOp in Upsample {
        /// `(N, C, L) -> (N, C, L_out)`.
        UpsampleNearest1d = upsample_nearest1d [MovesBytes]: DType::ALL,
        /// `(N, C, H, W) -> (N, C, H_out, W_out)`.
        UpsampleNearest2d = upsample_nearest2d [MovesBytes]: DType::ALL,
    }
}

/// `size` holds one target size per spatial dim (1 for 1-D, 2 for 2-D).
pub fn upsample(op: UpsampleOp, x: &Layout, dtype: DType, size: &[usize]) -> Result<Out> {
    let name = op.name();
    check_dtype(name, dtype, op.dtypes())?;
    let spatial = match op {
        UpsampleOp::UpsampleNearest1d => 1,
        UpsampleOp::UpsampleNearest2d => 2,
    };
    check_rank(name, x.shape(), spatial + 2, if spatial == 1 { "3 (N, C, L)" } else { "4 (N, C, H, W)" })?;
    if size.len() != spatial {
        return Err(invalid(name, format!("{} target sizes for {spatial} spatial dims", size.len())));
    }
    let mut out = x.dims()[..2].to_vec();
    for (i, &n) in size.iter().enumerate() {
        if n > 0 && x.dims()[2 + i] == 0 {
            return Err(invalid(name, format!("cannot fill size {n} from an empty input dim")));
        }
        out.push(n);
    }
    Ok(Out::new(out, dtype))
}
