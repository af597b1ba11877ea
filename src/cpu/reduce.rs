//! Reductions on the cpu: for each output position, walk the sub-layout of the reduced dims
//! (row-major, so "first occurrence" is the first element visited).

use super::elementwise::Arith;
use super::{CpuBackend, CpuStorage};
use crate::backend::ReduceOps;
use crate::layout::StridedBlocks;
use crate::spec::reduce::ReduceOp;
use crate::{Error, Layout, Result, with_storage};

/// Where the elements of each reduction live: one base offset per output position, plus the
/// reduced sub-layout as contiguous runs relative to that base.
struct Plan {
    /// The input layout with every reduced dim cut to size 1: its indices are the bases.
    kept: Layout,
    /// Relative starts of the contiguous runs of the reduced sub-layout, in row-major order.
    runs: Vec<usize>,
    run_len: usize,
    /// Elements per reduction.
    extent: usize,
}

impl Plan {
    fn new(l: &Layout, dims: &[usize]) -> Plan {
        let mut kept_dims = l.dims().to_vec();
        for &d in dims {
            kept_dims[d] = 1;
        }
        let kept = Layout::new(kept_dims, l.strides().to_vec(), l.offset());
        let red_dims: Vec<usize> = dims.iter().map(|&d| l.dims()[d]).collect();
        let red_strides = dims.iter().map(|&d| l.strides()[d]).collect();
        let red = Layout::new(red_dims, red_strides, 0);
        let extent = red.elem_count();
        let (runs, run_len) = match red.strided_blocks() {
            StridedBlocks::Single { start, len } => (vec![start], len),
            StridedBlocks::Multi { starts, len } => (starts.collect(), len),
        };
        Plan { kept, runs, run_len, extent }
    }

    /// The output length: one per kept position.
    fn out_len(&self) -> usize {
        self.kept.elem_count()
    }

    /// For each output position in row-major order, its reduced elements in row-major order.
    fn rows<'a, T: Copy>(&'a self, v: &'a [T]) -> impl Iterator<Item = impl Iterator<Item = T> + 'a> + 'a {
        self.kept
            .strided_index()
            .map(move |base| self.runs.iter().flat_map(move |&s| v[base + s..base + s + self.run_len].iter().copied()))
    }
}

fn sum<T: Arith>(row: impl Iterator<Item = T>) -> T {
    if T::DTYPE.is_int() {
        T::from_i64(row.fold(0i64, |acc, x| acc.wrapping_add(x.to_i64())))
    } else {
        T::from_f64(row.fold(0.0, |acc, x| acc + x.to_f64()))
    }
}

/// The first extreme element and its position: `beats(x, best)` says x is strictly more
/// extreme; a NaN beats every number and nothing beats the first NaN.
fn extreme<T: Arith>(row: impl Iterator<Item = T>, beats: fn(&T, &T) -> bool) -> (T, u32) {
    let mut best: Option<(T, u32)> = None;
    for (i, x) in row.enumerate() {
        match best {
            Some((b, _)) if b.is_nan() => break,
            Some((b, _)) if !(x.is_nan() || beats(&x, &b)) => {}
            // The spec caps the reduced extent at u32::MAX elements.
            _ => best = Some((x, i as u32)),
        }
    }
    best.unwrap_or_default()
}

fn reduce_vec<T: Arith>(v: &[T], p: &Plan, op: ReduceOp) -> CpuStorage {
    let rows = p.rows(v);
    match op {
        ReduceOp::Sum => CpuStorage::from_vec(rows.map(sum).collect()),
        ReduceOp::Min => CpuStorage::from_vec(rows.map(|r| extreme(r, T::lt).0).collect()),
        ReduceOp::Max => CpuStorage::from_vec(rows.map(|r| extreme(r, T::gt).0).collect()),
        ReduceOp::ArgMin => CpuStorage::U32(rows.map(|r| extreme(r, T::lt).1).collect()),
        ReduceOp::ArgMax => CpuStorage::U32(rows.map(|r| extreme(r, T::gt).1).collect()),
    }
}

impl ReduceOps for CpuBackend {
    fn reduce(&self, x: &CpuStorage, l: &Layout, op: ReduceOp, dims: &[usize]) -> Result<CpuStorage> {
        let plan = Plan::new(l, dims);
        if plan.extent == 0 {
            // Nothing is read: an empty input may sit past the end of its storage.
            return match op {
                ReduceOp::Sum => CpuStorage::zeros(x.dtype(), plan.out_len()),
                _ => Err(Error::EmptyReduction { op: op.name(), shape: l.shape().clone(), dims: dims.to_vec() }),
            };
        }
        Ok(with_storage!(x, v => reduce_vec(v, &plan, op)))
    }
}
