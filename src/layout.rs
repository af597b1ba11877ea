//! Shapes, strided layouts and the views built on them (no view ever copies data).

use crate::{Error, Result};
use smallvec::SmallVec;
use std::fmt;

/// Dims or strides, inline up to rank 5: a layout made while recording an op allocates nothing.
type Dims = SmallVec<[usize; 5]>;

/// The dims of a tensor.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Shape(Dims);

impl Shape {
    /// A shape of these dims.
    pub fn new(dims: impl Into<Vec<usize>>) -> Self {
        Shape(Dims::from_vec(dims.into()))
    }

    /// The size of each dim.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    /// The number of dims.
    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// The number of elements. Exact for every shape a tensor can have ([`Shape::check`]);
    /// saturates at `usize::MAX` for one that overflows, never panics.
    pub fn elem_count(&self) -> usize {
        self.0.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).unwrap_or(usize::MAX)
    }

    /// Row-major strides of a contiguous tensor of this shape (saturating, as `elem_count`).
    pub fn contiguous_strides(&self) -> Vec<usize> {
        self.strides_inline().to_vec()
    }

    /// [`Shape::contiguous_strides`], held inline (what layouts take).
    fn strides_inline(&self) -> Dims {
        let mut strides = Dims::from_elem(0, self.rank());
        let mut acc = 1usize;
        for (s, &d) in strides.iter_mut().zip(&self.0).rev() {
            *s = acc;
            acc = acc.saturating_mul(d);
        }
        strides
    }

    /// Whether a tensor of `dtype` can have this shape: the product of its non-zero dims (so
    /// every contiguous stride, and the element count) and its size in bytes fit in `isize`,
    /// the most any allocation can hold. Checked wherever a shape enters a tensor.
    pub fn check(&self, op: &'static str, dtype: crate::DType) -> Result<()> {
        let span = self.0.iter().filter(|&&d| d != 0).try_fold(1usize, |n, &d| n.checked_mul(d));
        let bytes = span.and_then(|n| n.checked_mul(dtype.size_in_bytes())).filter(|&b| b <= isize::MAX as usize);
        match bytes {
            Some(_) => Ok(()),
            None => Err(Error::ShapeTooLarge { op, shape: self.clone(), dtype }),
        }
    }

    /// The shape two operands broadcast to (numpy rules: align right, 1 stretches).
    pub fn broadcast(op: &'static str, lhs: &Shape, rhs: &Shape) -> Result<Shape> {
        let rank = lhs.rank().max(rhs.rank());
        let mut dims = Dims::from_elem(0, rank);
        for (i, d) in dims.iter_mut().enumerate() {
            let l = lhs.dim_from_right(rank - i);
            let r = rhs.dim_from_right(rank - i);
            *d = match (l, r) {
                (l, r) if l == r => l,
                (1, r) => r,
                (l, 1) => l,
                _ => return Err(Error::Broadcast { op, lhs: lhs.clone(), rhs: rhs.clone() }),
            };
        }
        Ok(Shape(dims))
    }

    fn dim_from_right(&self, k: usize) -> usize {
        if k <= self.rank() { self.0[self.rank() - k] } else { 1 }
    }
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl From<Vec<usize>> for Shape {
    fn from(v: Vec<usize>) -> Self {
        Shape(Dims::from_vec(v))
    }
}

impl From<&[usize]> for Shape {
    fn from(v: &[usize]) -> Self {
        Shape(Dims::from_slice(v))
    }
}

impl<const N: usize> From<[usize; N]> for Shape {
    fn from(v: [usize; N]) -> Self {
        Shape(Dims::from_slice(&v))
    }
}

impl From<()> for Shape {
    fn from(_: ()) -> Self {
        Shape(Dims::new())
    }
}

impl From<usize> for Shape {
    fn from(d: usize) -> Self {
        Shape(smallvec::smallvec![d])
    }
}

/// A dimension given by index from the front (`usize`) or from the back ([`D`]).
pub trait Dim: Copy {
    /// The index from the front of this dim in a tensor of `rank` dims, or `DimOutOfRange` (naming
    /// `op`).
    fn to_index(self, rank: usize, op: &'static str) -> Result<usize>;
}

impl Dim for usize {
    fn to_index(self, rank: usize, op: &'static str) -> Result<usize> {
        if self < rank { Ok(self) } else { Err(Error::DimOutOfRange { op, dim: self as isize, rank }) }
    }
}

/// Dims counted from the back: `D::Minus1` is the last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum D {
    /// The last dim.
    Minus1,
    /// The dim before the last.
    Minus2,
    /// The `k`-th dim from the back (`Minus(1)` is the last).
    Minus(usize),
}

impl Dim for D {
    fn to_index(self, rank: usize, op: &'static str) -> Result<usize> {
        let k = match self {
            D::Minus1 => 1,
            D::Minus2 => 2,
            D::Minus(k) => k,
        };
        if k >= 1 && k <= rank { Ok(rank - k) } else { Err(Error::DimOutOfRange { op, dim: -(k as isize), rank }) }
    }
}

/// Where a tensor's elements sit in its storage: shape, strides and start offset, in elements.
/// A stride of 0 repeats an element (broadcast).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: Shape,
    strides: Dims,
    offset: usize,
}

impl Layout {
    /// A contiguous row-major layout starting at `offset`.
    pub fn contiguous_with_offset(shape: impl Into<Shape>, offset: usize) -> Self {
        let shape = shape.into();
        let strides = shape.strides_inline();
        Layout { shape, strides, offset }
    }

    /// The row-major contiguous layout of `shape`, at offset 0.
    pub fn contiguous(shape: impl Into<Shape>) -> Self {
        Self::contiguous_with_offset(shape, 0)
    }

    /// Any layout; the caller guarantees it stays inside its storage.
    pub fn new(shape: impl Into<Shape>, strides: Vec<usize>, offset: usize) -> Self {
        Layout { shape: shape.into(), strides: Dims::from_vec(strides), offset }
    }

    /// The shape viewed.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The size of each dim.
    pub fn dims(&self) -> &[usize] {
        self.shape.dims()
    }

    /// The number of dims.
    pub fn rank(&self) -> usize {
        self.shape.rank()
    }

    /// The distance in elements between neighbours along each dim (0: broadcast).
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    /// Where the first element lies in the storage, in elements.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The number of elements viewed.
    pub fn elem_count(&self) -> usize {
        self.shape.elem_count()
    }

    /// Row-major contiguous (dims of size 1 may carry any stride).
    pub fn is_contiguous(&self) -> bool {
        let mut acc = 1;
        for (&d, &s) in self.dims().iter().zip(&self.strides).rev() {
            if d != 1 && s != acc {
                return false;
            }
            acc *= d;
        }
        true
    }

    /// `Some((start, end))` when the elements are one contiguous run of the storage.
    pub fn contiguous_range(&self) -> Option<(usize, usize)> {
        self.is_contiguous().then(|| (self.offset, self.offset + self.elem_count()))
    }

    /// One past the largest storage index this layout touches (0 for an empty layout).
    pub fn required_len(&self) -> usize {
        if self.elem_count() == 0 {
            return 0;
        }
        self.offset + self.dims().iter().zip(&self.strides).map(|(&d, &s)| (d - 1) * s).sum::<usize>() + 1
    }

    /// Swaps two dims.
    pub fn transpose(&self, a: usize, b: usize) -> Result<Layout> {
        let rank = self.rank();
        let a = a.to_index(rank, "transpose")?;
        let b = b.to_index(rank, "transpose")?;
        let mut l = self.clone();
        l.shape.0.swap(a, b);
        l.strides.swap(a, b);
        Ok(l)
    }

    /// Reorders dims: dim `i` of the result is dim `perm[i]` of `self`.
    pub fn permute(&self, perm: &[usize]) -> Result<Layout> {
        let rank = self.rank();
        let mut seen = vec![false; rank];
        if perm.len() != rank {
            return Err(Error::InvalidView {
                op: "permute",
                msg: format!("permutation {perm:?} has {} dims, tensor has {rank}", perm.len()),
            });
        }
        for &p in perm {
            let p = p.to_index(rank, "permute")?;
            if std::mem::replace(&mut seen[p], true) {
                return Err(Error::DuplicateDim { op: "permute", dim: p });
            }
        }
        let dims = perm.iter().map(|&p| self.dims()[p]).collect();
        let strides = perm.iter().map(|&p| self.strides[p]).collect();
        Ok(Layout { shape: Shape(dims), strides, offset: self.offset })
    }

    /// Keeps `len` entries of `dim` starting at `start`.
    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Result<Layout> {
        let dim = dim.to_index(self.rank(), "narrow")?;
        let size = self.dims()[dim];
        if start.checked_add(len).is_none_or(|end| end > size) {
            return Err(Error::InvalidView {
                op: "narrow",
                msg: format!("range {start}..{start}+{len} past size {size} of dim {dim} in {}", self.shape),
            });
        }
        let mut l = self.clone();
        l.shape.0[dim] = len;
        if len > 0 {
            l.offset += start * self.strides[dim];
        }
        Ok(l)
    }

    /// Stretches size-1 dims (and adds leading dims) to `shape`, with stride 0.
    pub fn broadcast_as(&self, shape: &Shape) -> Result<Layout> {
        let err = || Error::Broadcast { op: "broadcast_as", lhs: self.shape.clone(), rhs: shape.clone() };
        if shape.rank() < self.rank() {
            return Err(err());
        }
        let extra = shape.rank() - self.rank();
        let mut strides = Dims::from_elem(0, shape.rank());
        for (i, (&d, &s)) in self.dims().iter().zip(&self.strides).enumerate() {
            let target = shape.dims()[extra + i];
            strides[extra + i] = if d == target {
                s
            } else if d == 1 {
                0
            } else {
                return Err(err());
            };
        }
        Ok(Layout { shape: shape.clone(), strides, offset: self.offset })
    }

    /// A new shape over the same elements; `None` when the strides cannot express it
    /// without a copy. Beyond contiguous layouts, as PyTorch's `view`: dims may be split and
    /// merged within each run of dims whose strides chain (`stride[i] = stride[i + 1] *
    /// size[i + 1]`), so the head views of a column block (`[T, 3C]` narrowed to `[T, C]`, then
    /// `[T, H, D]`) stay views.
    pub fn reshape(&self, shape: &Shape) -> Result<Option<Layout>> {
        if shape.elem_count() != self.elem_count() {
            return Err(Error::ElementCount {
                op: "reshape",
                shape: shape.clone(),
                expected: shape.elem_count(),
                got: self.elem_count(),
            });
        }
        if self.is_contiguous() || self.elem_count() == 0 {
            return Ok(self.is_contiguous().then(|| Layout::contiguous_with_offset(shape.clone(), self.offset)));
        }
        let strides = view_strides(self.dims(), &self.strides, shape.dims());
        Ok(strides.map(|strides| Layout { shape: shape.clone(), strides, offset: self.offset }))
    }

    /// Inserts a dim of size 1 at `dim` (which may equal the rank).
    pub fn unsqueeze(&self, dim: usize) -> Result<Layout> {
        if dim > self.rank() {
            return Err(Error::DimOutOfRange { op: "unsqueeze", dim: dim as isize, rank: self.rank() });
        }
        let mut l = self.clone();
        let stride = if dim < self.rank() { self.strides[dim] * self.dims()[dim] } else { 1 };
        l.shape.0.insert(dim, 1);
        l.strides.insert(dim, stride);
        Ok(l)
    }

    /// Removes a dim of size 1.
    pub fn squeeze(&self, dim: usize) -> Result<Layout> {
        let dim = dim.to_index(self.rank(), "squeeze")?;
        if self.dims()[dim] != 1 {
            return Err(Error::InvalidView {
                op: "squeeze",
                msg: format!("dim {dim} of {} has size {}, not 1", self.shape, self.dims()[dim]),
            });
        }
        let mut l = self.clone();
        l.shape.0.remove(dim);
        l.strides.remove(dim);
        Ok(l)
    }

    /// Storage indices of every element, in row-major order of the shape.
    pub fn strided_index(&self) -> StridedIndex<'_> {
        StridedIndex::new(self)
    }

    /// The elements as runs of contiguous storage: the fast path of strided loops.
    pub fn strided_blocks(&self) -> StridedBlocks<'_> {
        let mut block_len = 1;
        let mut inner_dims = 0;
        for (&d, &s) in self.dims().iter().zip(&self.strides).rev() {
            if s != block_len {
                break;
            }
            block_len *= d;
            inner_dims += 1;
        }
        if inner_dims == self.rank() {
            StridedBlocks::Single { start: self.offset, len: block_len }
        } else {
            let outer = Layout {
                shape: Shape::from(&self.dims()[..self.rank() - inner_dims]),
                strides: Dims::from_slice(&self.strides[..self.rank() - inner_dims]),
                offset: self.offset,
            };
            StridedBlocks::Multi { starts: StridedIndex::owned(outer), len: block_len }
        }
    }
}

/// The row-major walk of `shape` through each operand's `strides` in the fewest dims: size-1
/// dims dropped, and each dim merged into the one before it where every operand allows (its
/// stride there is this dim's stride times this dim's size). Returns the dims and each operand's
/// strides over them; the one walk every kernel planner shares.
pub(crate) fn coalesce(shape: &[usize], strides: &[&[usize]]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let mut dims: Vec<usize> = vec![];
    let mut out: Vec<Vec<usize>> = vec![vec![]; strides.len()];
    for (k, &d) in shape.iter().enumerate().filter(|&(_, &d)| d != 1) {
        let merges =
            !dims.is_empty() && strides.iter().zip(&out).all(|(s, o)| o.last().copied() == s[k].checked_mul(d));
        if merges {
            if let Some(last) = dims.last_mut() {
                *last *= d;
            }
            for (s, o) in strides.iter().zip(&mut out) {
                if let Some(last) = o.last_mut() {
                    *last = s[k];
                }
            }
        } else {
            dims.push(d);
            for (s, o) in strides.iter().zip(&mut out) {
                o.push(s[k]);
            }
        }
    }
    (dims, out)
}

/// [`coalesce`] of one operand, held inline up to 8 dims: no heap allocation on the recording
/// path, where it runs for every operand of every op.
pub(crate) fn coalesce_one(shape: &[usize], strides: &[usize]) -> (Walk, Walk) {
    let (mut dims, mut out) = (Walk::new(), Walk::new());
    for (&d, &s) in shape.iter().zip(strides).filter(|&(&d, _)| d != 1) {
        match (dims.last_mut(), out.last_mut()) {
            (Some(ld), Some(ls)) if s.checked_mul(d) == Some(*ls) => {
                *ld *= d;
                *ls = s;
            }
            _ => {
                dims.push(d);
                out.push(s);
            }
        }
    }
    (dims, out)
}

/// Dims or strides of one operand's walk ([`coalesce_one`]).
pub(crate) type Walk = smallvec::SmallVec<[usize; 8]>;

/// `dims` with `strides` as one dim `(count, stride)` when they merge into one ([`coalesce`]);
/// no dims left is `(1, 0)`.
pub(crate) fn one_dim(dims: &[usize], strides: &[usize]) -> Option<(usize, usize)> {
    match coalesce_one(dims, strides) {
        (d, _) if d.is_empty() => Some((1, 0)),
        (d, s) if d.len() == 1 => Some((d[0], s[0])),
        _ => None,
    }
}

/// Runs of contiguous storage that make up a layout, in row-major order.
pub enum StridedBlocks<'a> {
    /// One run: the whole layout.
    Single {
        /// Where it starts in the storage.
        start: usize,
        /// Its length.
        len: usize,
    },
    /// Runs of one length at the storage indices `starts` yields.
    Multi {
        /// Where each run starts.
        starts: StridedIndex<'a>,
        /// The length of every run.
        len: usize,
    },
}

/// Iterates the storage index of every element of a layout, in row-major order.
pub struct StridedIndex<'a> {
    dims: std::borrow::Cow<'a, [usize]>,
    strides: std::borrow::Cow<'a, [usize]>,
    multi: Vec<usize>,
    next: Option<usize>,
}

impl<'a> StridedIndex<'a> {
    fn new(l: &'a Layout) -> Self {
        let next = (l.elem_count() > 0).then_some(l.offset);
        StridedIndex { dims: l.dims().into(), strides: l.strides().into(), multi: vec![0; l.rank()], next }
    }

    fn owned(l: Layout) -> StridedIndex<'static> {
        let next = (l.elem_count() > 0).then_some(l.offset);
        StridedIndex {
            multi: vec![0; l.rank()],
            dims: l.shape.0.to_vec().into(),
            strides: l.strides.to_vec().into(),
            next,
        }
    }
}

impl Iterator for StridedIndex<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let current = self.next?;
        let mut index = current;
        let mut advanced = false;
        for ((m, &d), &s) in self.multi.iter_mut().zip(self.dims.iter()).zip(self.strides.iter()).rev() {
            if *m + 1 < d {
                *m += 1;
                index += s;
                advanced = true;
                break;
            }
            index -= *m * s;
            *m = 0;
        }
        self.next = advanced.then_some(index);
        Some(current)
    }
}

/// The strides of `new` over elements laid out by `old` (sizes and strides, no element count
/// of 0), or `None` when a dim of `new` would cross two runs of chaining strides (PyTorch's
/// `computeStride`): walking the old dims from the last, each run of dims whose strides chain
/// must be covered exactly by a run of new dims.
fn view_strides(old: &[usize], old_strides: &[usize], new: &[usize]) -> Option<Dims> {
    let mut strides = Dims::from_elem(0, new.len());
    let mut view_d = new.len();
    let Some(mut base) = old_strides.last().copied() else {
        // A scalar: every new dim has size 1.
        return Some(strides);
    };
    let (mut old_numel, mut view_numel) = (1usize, 1usize);
    for d in (0..old.len()).rev() {
        old_numel *= old[d];
        let run_ends = d == 0 || (old[d - 1] != 1 && old_strides[d - 1] != old_numel * base);
        if run_ends {
            while view_d > 0 && (view_numel < old_numel || new[view_d - 1] == 1) {
                strides[view_d - 1] = view_numel * base;
                view_numel *= new[view_d - 1];
                view_d -= 1;
            }
            if view_numel != old_numel {
                return None;
            }
            if d > 0 {
                base = old_strides[d - 1];
                old_numel = 1;
                view_numel = 1;
            }
        }
    }
    (view_d == 0).then_some(strides)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalesce_merges_only_where_every_operand_allows() {
        // Contiguous: one dim. Size-1 dims vanish whatever their stride.
        assert_eq!(coalesce(&[2, 1, 3, 4], &[&[12, 99, 4, 1]]), (vec![24], vec![vec![1]]));
        // A transposed operand keeps the dims apart; a broadcast one merges with a broadcast.
        let (d, s) = coalesce(&[2, 3, 4], &[&[12, 4, 1], &[1, 2, 6]]);
        assert_eq!((d, s), (vec![2, 3, 4], vec![vec![12, 4, 1], vec![1, 2, 6]]));
        let (d, s) = coalesce(&[2, 3, 4], &[&[12, 4, 1], &[0, 0, 1]]);
        assert_eq!((d, s), (vec![6, 4], vec![vec![4, 1], vec![0, 1]]));
        // No dims left: a scalar walk; no operands: one dim of every element.
        assert_eq!(coalesce(&[1, 1], &[&[5, 7]]), (vec![], vec![vec![]]));
        assert_eq!(coalesce(&[2, 1, 3], &[]), (vec![6], vec![]));
    }

    #[test]
    fn reshape_views_keep_the_row_major_order_or_refuse() {
        // Each view a reshape gives walks the elements in the old layout's row-major order.
        let views = [
            Layout::contiguous([5, 12]).narrow(1, 4, 4).unwrap(),
            Layout::contiguous([3, 4]).transpose(0, 1).unwrap(),
            Layout::contiguous_with_offset([3], 2).broadcast_as(&Shape::new([4, 3])).unwrap(),
            Layout::contiguous([2, 3, 4]).permute(&[1, 0, 2]).unwrap(),
            Layout::contiguous([6, 1, 8]).narrow(2, 0, 4).unwrap(),
        ];
        let shapes: [&[usize]; 10] =
            [&[20], &[5, 2, 2], &[10, 2], &[12], &[2, 2, 3], &[4, 1, 3], &[2, 6, 2], &[24], &[3, 2, 4], &[6, 4]];
        let mut seen = 0;
        for l in &views {
            for &dims in &shapes {
                let shape = Shape::new(dims.to_vec());
                if shape.elem_count() != l.elem_count() {
                    continue;
                }
                if let Some(v) = l.reshape(&shape).unwrap() {
                    let (want, got): (Vec<usize>, Vec<usize>) =
                        (l.strided_index().collect(), v.strided_index().collect());
                    assert_eq!(got, want, "{l:?} as {dims:?}");
                    seen += 1;
                }
            }
        }
        assert!(seen >= 6, "only {seen} reshapes were views");
        // The head views of a column block stay views; what would cross a stride gap is refused.
        let cols = Layout::contiguous([128, 2304]).narrow(1, 768, 768).unwrap();
        let heads = cols.reshape(&Shape::new([128, 12, 64])).unwrap().unwrap();
        assert_eq!((heads.strides(), heads.offset()), (&[2304, 64, 1][..], 768));
        assert_eq!(cols.reshape(&Shape::new([128 * 768])).unwrap(), None);
        let t = Layout::contiguous([3, 4]).transpose(0, 1).unwrap();
        assert_eq!(t.reshape(&Shape::new([12])).unwrap(), None);
        assert_eq!(t.reshape(&Shape::new([2, 2, 3])).unwrap().unwrap().strides(), &[2, 1, 4]);
    }

    #[test]
    fn strided_index_walks_a_transpose() {
        let l = Layout::contiguous([2, 3]).transpose(0, 1).unwrap();
        assert_eq!(l.strided_index().collect::<Vec<_>>(), vec![0, 3, 1, 4, 2, 5]);
        let b = Layout::contiguous_with_offset([3], 2).broadcast_as(&Shape::new([2, 3])).unwrap();
        assert_eq!(b.strided_index().collect::<Vec<_>>(), vec![2, 3, 4, 2, 3, 4]);
        assert_eq!(Layout::contiguous([2, 0]).strided_index().count(), 0);
        assert_eq!(Layout::contiguous(()).strided_index().collect::<Vec<_>>(), vec![0]);
    }

    #[test]
    fn blocks_cover_inner_contiguous_runs() {
        let l = Layout::contiguous([4, 6]).narrow(1, 1, 3).unwrap();
        match l.strided_blocks() {
            StridedBlocks::Multi { starts, len } => {
                assert_eq!(len, 3);
                assert_eq!(starts.collect::<Vec<_>>(), vec![1, 7, 13, 19]);
            }
            StridedBlocks::Single { .. } => panic!("a narrowed row is not one block"),
        }
    }

    #[test]
    fn broadcast_shapes() {
        let s = Shape::broadcast("t", &Shape::new([3, 1]), &Shape::new([4])).unwrap();
        assert_eq!(s.dims(), &[3, 4]);
        assert!(Shape::broadcast("t", &Shape::new([3]), &Shape::new([4])).is_err());
    }
}
