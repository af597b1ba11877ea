//! Reductions over any set of dims.
//!
//! A sum keeps its dtype, so a sum of integers wraps (candle's rule; PyTorch accumulates them in
//! int64): the u8 of a comparison summed over 1000 matches is 232. To count, sum in a wider
//! dtype, `Tensor::sum_as(dims, DType::U32)` (a cast, then this sum, on every backend alike).
//! Floats accumulate in at least f32 (the cpu reference uses f64).
//! Min and max propagate NaN; argmin/argmax return the first extreme in row-major order of
//! the reduced dims (a NaN counts as the extreme), as a flat u32 index into those dims.

use super::{OpInfo, Out, check_dtype, dims_list, spec_enum};
use crate::{DType, Error, Layout, Result, Shape};

spec_enum! {
    /// Reductions over a set of dims.
    pub enum ReduceOp in Reduce {
        /// Sum; 0 over an empty extent.
        Sum = sum: DType::ALL,
        Min = min: DType::ALL,
        Max = max: DType::ALL,
        /// Flat index (u32) of the first minimum within the reduced dims.
        ArgMin = argmin: DType::ALL,
        /// Flat index (u32) of the first maximum within the reduced dims.
        ArgMax = argmax: DType::ALL,
    }
}

impl ReduceOp {
    /// argmin or argmax (u32 output).
    pub fn is_arg(self) -> bool {
        matches!(self, ReduceOp::ArgMin | ReduceOp::ArgMax)
    }
}

pub(crate) fn ops() -> Vec<OpInfo> {
    ReduceOp::infos()
}

/// A validated reduction: the sorted dims and the output with reduced dims kept as size 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reduction {
    /// The reduced dims, sorted and distinct.
    pub dims: Vec<usize>,
    /// The output, with the reduced dims kept as size 1.
    pub out: Out,
}

/// `dims` must be non-empty, distinct and in range; min, max and the arg ops need a non-empty
/// reduced extent; arg ops need it to fit in u32.
pub fn reduce(op: ReduceOp, x: &Layout, dtype: DType, dims: &[usize]) -> Result<Reduction> {
    check_dtype(op.name(), dtype, op.dtypes())?;
    if dims.is_empty() {
        return Err(super::invalid(op.name(), "no dims to reduce over"));
    }
    let dims = dims_list(op.name(), dims, x.rank())?;
    let extent: usize = dims.iter().map(|&d| x.dims()[d]).product();
    if op != ReduceOp::Sum && extent == 0 {
        return Err(Error::EmptyReduction { op: op.name(), shape: x.shape().clone(), dims });
    }
    if op.is_arg() && extent > u32::MAX as usize {
        return Err(super::invalid(op.name(), format!("{extent} reduced elements do not fit a u32 index")));
    }
    let mut out = x.dims().to_vec();
    for &d in &dims {
        out[d] = 1;
    }
    let out_dtype = if op.is_arg() { DType::U32 } else { dtype };
    Ok(Reduction { dims, out: Out::new(Shape::new(out), out_dtype) })
}
