//! Sorting along the last dim.
//!
//! argsort returns u32 indices that order each row, stable: equal keys keep their order.
//! NaN sorts above every number (last ascending, first descending); -0.0 equals 0.0.

use super::{Out, check_dtype, invalid, spec_enum};
use crate::{DType, Layout, Result};

spec_enum! {
    /// Sorting.
    pub enum SortOp in Sort {
        ArgSort = argsort [MovesBytes]: DType::ALL,
    }
}

/// Rank at least 1; rows no longer than u32 can index.
pub fn argsort(x: &Layout, dtype: DType) -> Result<Out> {
    let op = SortOp::ArgSort.name();
    check_dtype(op, dtype, SortOp::ArgSort.dtypes())?;
    let Some(&n) = x.dims().last() else {
        return Err(crate::Error::Rank { op, expected: "at least 1", shape: x.shape().clone() });
    };
    if n > u32::MAX as usize {
        return Err(invalid(op, format!("rows of {n} do not fit a u32 index")));
    }
    Ok(Out::new(x.shape().clone(), DType::U32))
}
