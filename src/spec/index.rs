//! Indexing by integer ids: index_select, gather, scatter, scatter_add, index_add.
//!
//! Ids are u8, u32 or i64. An id outside `0..size` (negative ones included) is an
//! [`crate::Error::IndexOutOfRange`] on every backend, never clamped or wrapped; ids can only
//! be checked where the data is, so this is the one check backends make themselves.
//! Scatter with repeated ids along `dim` leaves one of the written values (which one is
//! unspecified); scatter_add and index_add add them all.

use super::{OpInfo, Out, check_rank, check_same_dtype, dim, spec_enum};
use crate::{DType, Error, Layout, Result, Shape};

spec_enum! {
    /// Ops that read or write at ids found in a tensor.
    pub enum IndexOp in Index {
        /// `out[.., i, ..] = x[.., ids[i], ..]` along `dim`; ids are 1-D.
        IndexSelect = index_select [MovesBytes]: DType::ALL,
        /// `out[i][j][k] = x[i][ids[i][j][k]][k]` for dim 1; out has the shape of ids.
        Gather = gather [MovesBytes]: DType::ALL,
        /// `out = dst; out[i][ids[i][j][k]][k] = src[i][j][k]` for dim 1.
        Scatter = scatter [MovesBytes]: DType::ALL,
        /// As scatter, adding into `dst`.
        ScatterAdd = scatter_add: DType::ALL,
        /// `out = dst; out[.., ids[i], ..] += src[.., i, ..]` along `dim`; ids are 1-D.
        IndexAdd = index_add: DType::ALL,
    }
}

impl IndexOp {
    /// The op's code in a GPU backend's bad-id flag: 1 + its position in `ALL` (0: none).
    pub fn flag_code(self) -> u32 {
        IndexOp::ALL.iter().position(|&o| o == self).map_or(0, |p| p as u32 + 1)
    }

    /// The op a flag code names.
    pub fn from_flag_code(code: u32) -> Option<IndexOp> {
        IndexOp::ALL.get((code as usize).checked_sub(1)?).copied()
    }
}

/// How scatter combines a source value with the destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScatterMode {
    /// Write the source value (the last write wins where ids repeat).
    Set,
    /// Add the source value to the destination's.
    Add,
}

impl ScatterMode {
    /// The op of the spec this mode runs as.
    pub fn op(self) -> IndexOp {
        match self {
            ScatterMode::Set => IndexOp::Scatter,
            ScatterMode::Add => IndexOp::ScatterAdd,
        }
    }
}

pub(crate) fn ops() -> Vec<OpInfo> {
    IndexOp::infos()
}

fn check_ids(op: &'static str, ids: DType) -> Result<()> {
    super::check_int_operand(op, "ids", ids)
}

/// `ids` is 1-D; the output is `x` with `dim` resized to `ids.len()`.
pub fn index_select(x: (&Layout, DType), ids: (&Layout, DType), d: usize) -> Result<Out> {
    let op = IndexOp::IndexSelect.name();
    check_ids(op, ids.1)?;
    check_rank(op, ids.0.shape(), 1, "1 for ids")?;
    let d = dim(op, d, x.0.rank())?;
    let mut out = x.0.dims().to_vec();
    out[d] = ids.0.dims()[0];
    Ok(Out::new(out, x.1))
}

/// `ids` has the rank of `x` and no dim (but `dim`) larger than `x`'s.
pub fn gather(x: (&Layout, DType), ids: (&Layout, DType), d: usize) -> Result<Out> {
    let op = IndexOp::Gather.name();
    check_ids(op, ids.1)?;
    let d = dim(op, d, x.0.rank())?;
    check_fits(op, ids.0.shape(), x.0.shape(), d)?;
    Ok(Out::new(ids.0.shape().clone(), x.1))
}

/// `ids` and `src` have one shape, of the rank of `dst`, no dim (but `dim`) larger than `dst`'s.
pub fn scatter(
    mode: ScatterMode,
    dst: (&Layout, DType),
    ids: (&Layout, DType),
    src: (&Layout, DType),
    d: usize,
) -> Result<Out> {
    let op = mode.op().name();
    check_ids(op, ids.1)?;
    check_same_dtype(op, dst.1, src.1)?;
    let d = dim(op, d, dst.0.rank())?;
    if ids.0.shape() != src.0.shape() {
        return Err(Error::ShapeMismatch { op, lhs: ids.0.shape().clone(), rhs: src.0.shape().clone() });
    }
    check_fits(op, ids.0.shape(), dst.0.shape(), d)?;
    Ok(Out::new(dst.0.shape().clone(), dst.1))
}

/// [`scatter`] into `dst` in place: also a destination whose positions are distinct in memory.
pub fn scatter_set(
    mode: ScatterMode,
    dst: (&Layout, DType),
    ids: (&Layout, DType),
    src: (&Layout, DType),
    d: usize,
) -> Result<()> {
    scatter(mode, dst, ids, src, d)?;
    super::copy::writable(mode.op().name(), dst.0)
}

/// `ids` is 1-D; `src` is `dst` with `dim` resized to `ids.len()`.
pub fn index_add(dst: (&Layout, DType), ids: (&Layout, DType), src: (&Layout, DType), d: usize) -> Result<Out> {
    let op = IndexOp::IndexAdd.name();
    check_ids(op, ids.1)?;
    check_rank(op, ids.0.shape(), 1, "1 for ids")?;
    check_same_dtype(op, dst.1, src.1)?;
    let d = dim(op, d, dst.0.rank())?;
    let mut expected = dst.0.dims().to_vec();
    expected[d] = ids.0.dims()[0];
    if src.0.dims() != expected {
        return Err(Error::ShapeMismatch { op, lhs: src.0.shape().clone(), rhs: Shape::new(expected) });
    }
    Ok(Out::new(dst.0.shape().clone(), dst.1))
}

/// Same rank, and `small[i] <= big[i]` for every `i != d`.
fn check_fits(op: &'static str, small: &Shape, big: &Shape, d: usize) -> Result<()> {
    let fits = small.rank() == big.rank()
        && small.dims().iter().zip(big.dims()).enumerate().all(|(i, (s, b))| i == d || s <= b);
    if fits { Ok(()) } else { Err(Error::ShapeMismatch { op, lhs: small.clone(), rhs: big.clone() }) }
}

/// 1-D ids (`il`) spread over `shape` along `dim`: position `p` holds `ids[p[dim]]` (how
/// index_select and index_add see their ids over the output or source shape).
pub fn spread_ids(il: &Layout, shape: &Shape, dim: usize) -> Layout {
    let mut strides = vec![0; shape.rank()];
    strides[dim] = il.strides()[0];
    Layout::new(shape.clone(), strides, il.offset())
}

/// The positions of `shape` in a tensor of `strides` and `offset`, with the coordinate along
/// `dim` taken as 0.
pub fn along(shape: &Shape, strides: &[usize], offset: usize, dim: usize) -> Layout {
    let mut strides = strides.to_vec();
    strides[dim] = 0;
    Layout::new(shape.clone(), strides, offset)
}

/// index_select's rows (the dims after `dim`, contiguous), counted in chunks of `chunk` bytes:
/// what the GPU backends copy whole.
#[derive(Debug, PartialEq)]
pub struct Rows {
    /// Bytes per chunk.
    pub chunk: usize,
    /// Chunks per row.
    pub row: usize,
    /// The leading positions (the dims before `dim`) in chunks, with the coordinate along `dim` 0.
    pub lead: Layout,
    /// The stride along `dim` in chunks.
    pub stride: usize,
}

/// The rows of `x` (`xl`, elements of `esz` bytes) selected along `dim`, when the dims after
/// `dim` are contiguous; the chunk is the first of `chunks` (in bytes) that divides the row,
/// the offset and every stride followed.
pub fn rows_of(xl: &Layout, dim: usize, esz: usize, chunks: &[usize]) -> Option<Rows> {
    let (dims, strides) = (xl.dims(), xl.strides());
    let mut post = 1;
    for k in (dim + 1..dims.len()).rev() {
        if dims[k] != 1 && strides[k] != post {
            return None;
        }
        post *= dims[k];
    }
    // A stride of a dim of size 1 is never followed.
    let stride_of = |k: usize| if dims[k] == 1 { 0 } else { strides[k] * esz };
    let mut bytes = vec![post * esz, xl.offset() * esz, stride_of(dim)];
    bytes.extend((0..dim).map(stride_of));
    let chunk = chunks.iter().copied().find(|c| bytes.iter().all(|b| b % c == 0))?;
    let lead = Layout::new(
        Shape::new(dims[..dim].to_vec()),
        (0..dim).map(|k| stride_of(k) / chunk).collect(),
        xl.offset() * esz / chunk,
    );
    Some(Rows { chunk, row: post * esz / chunk, lead, stride: stride_of(dim) / chunk })
}
