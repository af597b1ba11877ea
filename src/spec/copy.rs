//! Copies and fills: copy_strided (any layout to contiguous), copy2d (a block of rows between
//! two buffers, what `cat` and `slice_set` are made of), fill (a value into any layout, in
//! place) and arange.

use super::{Out, check_same_dtype, invalid, spec_enum};
use crate::{DType, Error, Layout, Result, Scalar, Shape};

spec_enum! {
    /// Copies and fills.
    pub enum CopyOp in Copy {
        CopyStrided = copy_strided [MovesBytes]: DType::ALL,
        Copy2d = copy2d [MovesBytes]: DType::ALL,
        Fill = fill [MovesBytes]: DType::ALL,
        /// `start + i * step`: wrapping for integers; floats compute in f64 where they can.
        Arange = arange: DType::ALL,
    }
}

/// `rows` rows of `cols` elements: row `r` of `src` starts at `src_offset + r * src_stride`,
/// of `dst` at `dst_offset + r * dst_stride` (all in elements).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Copy2d {
    /// Rows to copy.
    pub rows: usize,
    /// Elements per row.
    pub cols: usize,
    /// Distance between rows of `src`, in elements.
    pub src_stride: usize,
    /// Distance between rows of `dst`, in elements.
    pub dst_stride: usize,
    /// Where the first row of `src` starts, in elements.
    pub src_offset: usize,
    /// Where the first row of `dst` starts, in elements.
    pub dst_offset: usize,
}

impl Copy2d {
    fn end(rows: usize, cols: usize, stride: usize, offset: usize) -> Option<usize> {
        if rows == 0 || cols == 0 {
            return Some(0);
        }
        (rows - 1).checked_mul(stride)?.checked_add(cols)?.checked_add(offset)
    }
}

/// Both blocks must lie inside their buffers (lengths in elements) and share a dtype.
pub fn copy2d(p: &Copy2d, src: (usize, DType), dst: (usize, DType)) -> Result<()> {
    let op = CopyOp::Copy2d.name();
    check_same_dtype(op, src.1, dst.1)?;
    let src_end = Copy2d::end(p.rows, p.cols, p.src_stride, p.src_offset);
    let dst_end = Copy2d::end(p.rows, p.cols, p.dst_stride, p.dst_offset);
    if src_end.is_none_or(|e| e > src.0) || dst_end.is_none_or(|e| e > dst.0) {
        return Err(invalid(op, format!("{p:?} runs past a buffer (src {} elements, dst {})", src.0, dst.0)));
    }
    if p.rows > 1 && p.dst_stride < p.cols {
        return Err(invalid(op, format!("dst rows overlap: stride {} < {} columns", p.dst_stride, p.cols)));
    }
    Ok(())
}

/// The number of elements of `start, start + step, ...` below `end` (above, for a negative
/// step). `step` must be non-zero and all three finite.
pub fn arange(start: Scalar, end: Scalar, step: Scalar) -> Result<usize> {
    let op = CopyOp::Arange.name();
    let dtype = start.dtype();
    check_same_dtype(op, dtype, end.dtype())?;
    check_same_dtype(op, dtype, step.dtype())?;
    let len = if dtype.is_int() {
        let (s, e, st) = (start.to::<i64>() as i128, end.to::<i64>() as i128, step.to::<i64>() as i128);
        if st == 0 {
            return Err(invalid(op, "zero step"));
        }
        ((e - s + st - st.signum()) / st).max(0)
    } else {
        let (s, e, st) = (start.to_f64(), end.to_f64(), step.to_f64());
        if st == 0.0 || !(s.is_finite() && e.is_finite() && st.is_finite()) {
            return Err(invalid(
                op,
                format!("start {start}, end {end}, step {step}: need finite values and non-zero step"),
            ));
        }
        ((e - s) / st).ceil().max(0.0) as i128
    };
    usize::try_from(len).map_err(|_| invalid(op, format!("{len} elements")))
}

/// `cat`: at least one tensor; one dtype and rank; dims equal but along `dim`.
pub fn cat(ts: &[(&Layout, DType)], dim: usize) -> Result<Out> {
    let op = "cat";
    let Some(&(first, dtype)) = ts.first() else {
        return Err(invalid(op, "no tensors to join"));
    };
    let dim = super::dim(op, dim, first.rank())?;
    let mut out = first.dims().to_vec();
    out[dim] = 0;
    for &(l, d) in ts {
        check_same_dtype(op, dtype, d)?;
        check_block(op, first.shape(), l.shape(), dim)?;
        out[dim] += l.dims()[dim];
    }
    Ok(Out::new(out, dtype))
}

/// `slice_set`: `dst` any layout but a broadcast one (where elements share memory); one dtype
/// and rank; dims equal but along `dim`, where `src` fits from `start` on.
pub fn slice_set(dst: (&Layout, DType), src: (&Layout, DType), dim: usize, start: usize) -> Result<()> {
    let op = "slice_set";
    check_same_dtype(op, dst.1, src.1)?;
    let dim = super::dim(op, dim, dst.0.rank())?;
    check_block(op, dst.0.shape(), src.0.shape(), dim)?;
    writable(op, dst.0)?;
    let (len, size) = (src.0.dims()[dim], dst.0.dims()[dim]);
    if start.checked_add(len).is_none_or(|end| end > size) {
        return Err(invalid(op, format!("block {start}..{start}+{len} past size {size} of dim {dim}")));
    }
    Ok(())
}

/// A destination written in place: no two of its positions share memory (a broadcast view's do;
/// an empty one has none, whatever its strides).
pub fn writable(op: &'static str, dst: &Layout) -> Result<()> {
    if dst.elem_count() == 0 {
        return Ok(());
    }
    match dst.dims().iter().zip(dst.strides()).position(|(&n, &s)| n > 1 && s == 0) {
        Some(d) => {
            let msg =
                format!("destination {} is broadcast along dim {d} (stride 0): its elements share memory", dst.shape());
            Err(Error::InvalidView { op, msg })
        }
        None => Ok(()),
    }
}

/// Same rank and dims as `a`, except along `dim`.
fn check_block(op: &'static str, a: &Shape, b: &Shape, dim: usize) -> Result<()> {
    let same = a.rank() == b.rank() && a.dims().iter().zip(b.dims()).enumerate().all(|(i, (x, y))| i == dim || x == y);
    if same { Ok(()) } else { Err(Error::ShapeMismatch { op, lhs: a.clone(), rhs: b.clone() }) }
}

/// The copy2d calls that write contiguous `src` into the block of `dst` that starts at `start`
/// along `dim` (validated by [`cat`] or [`slice_set`]): one where the block's rows are evenly
/// spaced (a contiguous `dst`), else one per row of the dims outside the two it walks.
pub fn block_copies(dst: &Layout, src: &Layout, dim: usize, start: usize) -> Result<Vec<Copy2d>> {
    let block = dst.narrow(dim, start, src.dims()[dim])?;
    let (dims, strides) = crate::layout::coalesce(src.dims(), &[block.strides(), src.strides()]);
    let (bs, ss) = (&strides[0], &strides[1]);
    let n = dims.len();
    // A run contiguous in both is the columns; else single elements, and the largest dim left
    // is the rows (the fewest calls).
    let (cols, rest) = if n > 0 && bs[n - 1] == 1 && ss[n - 1] == 1 { (dims[n - 1], n - 1) } else { (1, n) };
    let row = if cols > 1 { rest.checked_sub(1) } else { (0..rest).max_by_key(|&k| dims[k]) };
    let (rows, dst_stride, src_stride) = row.map_or((1, cols, cols), |k| (dims[k], bs[k], ss[k]));
    let outer: Vec<usize> = (0..rest).filter(|&k| Some(k) != row).collect();
    let count: usize = outer.iter().map(|&k| dims[k]).product();
    let mut calls = Vec::with_capacity(count);
    let mut at = vec![0; outer.len()];
    for _ in 0..count {
        let (mut dst_offset, mut src_offset) = (block.offset(), src.offset());
        for (&i, &k) in at.iter().zip(&outer) {
            dst_offset += i * bs[k];
            src_offset += i * ss[k];
        }
        calls.push(Copy2d { rows, cols, src_stride, dst_stride, src_offset, dst_offset });
        for (i, &k) in at.iter_mut().zip(&outer).rev() {
            *i += 1;
            if *i < dims[k] {
                break;
            }
            *i = 0;
        }
    }
    Ok(calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(rows: usize, cols: usize, ss: usize, ds: usize, so: usize, dof: usize) -> Copy2d {
        Copy2d { rows, cols, src_stride: ss, dst_stride: ds, src_offset: so, dst_offset: dof }
    }

    #[test]
    fn a_contiguous_destination_takes_one_copy() {
        let dst = Layout::contiguous([4, 6]);
        let src = Layout::contiguous_with_offset([4, 3], 5);
        assert_eq!(block_copies(&dst, &src, 1, 2).unwrap(), [c(4, 3, 3, 6, 5, 2)]);
        let src = Layout::contiguous([2, 6]);
        assert_eq!(block_copies(&dst, &src, 0, 1).unwrap(), [c(1, 12, 12, 12, 0, 6)]);
    }

    #[test]
    fn a_strided_destination_takes_a_copy_per_outer_row() {
        // A transposed [3, 2] view of a [2, 3] buffer: single elements, a call per column.
        let dst = Layout::contiguous([2, 3]).transpose(0, 1).unwrap();
        let src = Layout::contiguous([3, 2]);
        let calls = block_copies(&dst, &src, 0, 0).unwrap();
        assert_eq!(calls, [c(3, 1, 2, 1, 0, 0), c(3, 1, 2, 1, 1, 3)]);
        // A narrowed column window of a [3, 5] buffer, written at rows 1..3 of dim 0.
        let dst = Layout::contiguous([3, 5]).narrow(1, 1, 3).unwrap();
        let src = Layout::contiguous([2, 3]);
        assert_eq!(block_copies(&dst, &src, 0, 1).unwrap(), [c(2, 3, 3, 5, 0, 6)]);
        // Rank 3 with gaps in the two inner dims: one call per index of the outer one.
        let dst = Layout::contiguous([2, 4, 3]).narrow(1, 0, 2).unwrap().narrow(2, 0, 2).unwrap();
        let src = Layout::contiguous([2, 2, 2]);
        assert_eq!(block_copies(&dst, &src, 2, 0).unwrap(), [c(2, 2, 2, 3, 0, 0), c(2, 2, 2, 3, 4, 12)]);
    }
}
