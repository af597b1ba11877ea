//! `.i(..)`: candle's `IndexOp`, indexing by element, range, `..` or ids, dim by dim from the
//! front, made of views (`narrow`, `squeeze`) and, for ids, `index_select`.

use super::Tensor;
use crate::{Error, Result};
use std::ops::{Bound, Range, RangeBounds, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// What `.i(..)` takes for one dim: an index (the dim is removed), a range or `..` (the dim
/// is narrowed), or 1-D integer ids (`index_select` along the dim).
#[derive(Clone, Debug)]
pub enum TensorIndexer {
    /// One entry; the dim goes.
    Select(usize),
    /// A range of entries; the dim stays.
    Narrow(Bound<usize>, Bound<usize>),
    /// The entries at these ids, in their order (repeats allowed).
    IndexSelect(Tensor),
}

impl From<usize> for TensorIndexer {
    fn from(i: usize) -> Self {
        TensorIndexer::Select(i)
    }
}

impl From<&Tensor> for TensorIndexer {
    fn from(ids: &Tensor) -> Self {
        TensorIndexer::IndexSelect(ids.clone())
    }
}

macro_rules! range_indexers {
    ($($r:ty),*) => {
        $(
            impl From<$r> for TensorIndexer {
                fn from(r: $r) -> Self {
                    TensorIndexer::Narrow(r.start_bound().cloned(), r.end_bound().cloned())
                }
            }
        )*
    };
}
range_indexers!(
    Range<usize>,
    RangeFrom<usize>,
    RangeFull,
    RangeInclusive<usize>,
    RangeTo<usize>,
    RangeToInclusive<usize>
);

/// Indexing with `.i(..)`, as in candle: one indexer per dim from the front (an index, a range,
/// `..`, ids), as a value or a tuple; dims not named are kept whole. Views share storage (no
/// copy) but for ids.
///
/// ```
/// use rocm_wgpu_ops::{Device, IndexOp, Tensor};
///
/// let dev = Device::cpu();
/// let x = Tensor::arange(0u32, 12, &dev)?.reshape((3, 4))?;
/// assert_eq!(x.i((2, 3))?.to_scalar::<u32>()?, 11);
/// assert_eq!(x.i(1)?.to_vec::<u32>()?, [4, 5, 6, 7]);
/// assert_eq!(x.i((.., 1..3))?.to_vec2::<u32>()?, [[1, 2], [5, 6], [9, 10]]);
/// assert_eq!(x.i((1.., ..=0))?.to_vec2::<u32>()?, [[4], [8]]);
/// let ids = Tensor::from_vec(vec![2u32, 0], 2, &dev)?;
/// assert_eq!(x.i((&ids, 0))?.to_vec::<u32>()?, [8, 0]);
/// assert!(x.i((3, 0)).is_err()); // past the end of dim 0
/// # Ok::<(), rocm_wgpu_ops::Error>(())
/// ```
pub trait IndexOp<T> {
    /// The part of the tensor that `index` names.
    fn i(&self, index: T) -> Result<Tensor>;
}

impl<T: Into<TensorIndexer>> IndexOp<T> for Tensor {
    fn i(&self, index: T) -> Result<Tensor> {
        self.index(&[index.into()])
    }
}

macro_rules! tuple_index {
    ($(($($t:ident $v:ident),+)),* $(,)?) => {
        $(
            impl<$($t: Into<TensorIndexer>),+> IndexOp<($($t,)+)> for Tensor {
                fn i(&self, ($($v,)+): ($($t,)+)) -> Result<Tensor> {
                    self.index(&[$($v.into()),+])
                }
            }
        )*
    };
}
tuple_index!((A a), (A a, B b), (A a, B b, C c), (A a, B b, C c, E e), (A a, B b, C c, E e, F f), (A a, B b, C c, E e, F f, G g));

impl Tensor {
    fn index(&self, indexers: &[TensorIndexer]) -> Result<Tensor> {
        let op = "i";
        if indexers.len() > self.rank() {
            let msg = format!("{} indexers for a tensor of rank {} ({})", indexers.len(), self.rank(), self.shape());
            return Err(Error::InvalidView { op, msg });
        }
        let mut t = self.clone();
        let mut selected = vec![];
        for (d, ix) in indexers.iter().enumerate() {
            let size = t.dims()[d];
            t = match ix {
                TensorIndexer::Select(i) => {
                    if *i >= size {
                        let msg = format!("index {i} past the end of dim {d} (size {size}) of {}", self.shape());
                        return Err(Error::InvalidView { op, msg });
                    }
                    selected.push(d);
                    t.narrow(d, *i, 1)?
                }
                TensorIndexer::Narrow(lo, hi) => {
                    let start = match *lo {
                        Bound::Included(s) => Some(s),
                        Bound::Excluded(s) => s.checked_add(1),
                        Bound::Unbounded => Some(0),
                    };
                    let stop = match *hi {
                        Bound::Included(e) => e.checked_add(1),
                        Bound::Excluded(e) => Some(e),
                        Bound::Unbounded => Some(size),
                    };
                    match (start, stop) {
                        (Some(s), Some(e)) if s <= e && e <= size => t.narrow(d, s, e - s)?,
                        _ => {
                            let show = |b: Option<usize>| b.map_or("(past usize)".into(), |v| v.to_string());
                            let range = format!("{}..{}", show(start), show(stop));
                            let msg = format!("range {range} outside dim {d} (size {size}) of {}", self.shape());
                            return Err(Error::InvalidView { op, msg });
                        }
                    }
                }
                TensorIndexer::IndexSelect(ids) => t.index_select(ids, d)?,
            };
        }
        for &d in selected.iter().rev() {
            t = t.squeeze(d)?;
        }
        Ok(t)
    }
}
