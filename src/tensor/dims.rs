//! The argument types of dims and shapes: one [`Dims`] for every method that takes dims (one
//! dim, from the front or the back, or several), shapes as tuples (`(2, 3)`), and shapes with one
//! dim left for `reshape` to infer (`((), 3)`), as candle spells them.

use crate::{Dim, Error, Result, Shape};

/// One dim or several, as every method that takes dims accepts them: a `usize` from the front,
/// a [`D`](crate::D) from the back, or several as a tuple (`(0, D::Minus1)`), an array, a slice
/// or a `Vec` (`&[0, 1]`, `vec![2]`).
///
/// ```
/// use rocm_wgpu_ops::{D, Device, Tensor};
///
/// let x = Tensor::arange(0f32, 24.0, &Device::cpu())?.reshape((2, 3, 4))?;
/// assert_eq!(x.sum(D::Minus1)?.dims(), [2, 3]);
/// assert_eq!(x.sum((0, D::Minus1))?.to_vec::<f32>()?, [60., 92., 124.]);
/// assert_eq!(x.max(&[1, 2])?.to_vec::<f32>()?, [11., 23.]);
/// assert_eq!(x.unsqueeze(D::Minus1)?.dims(), [2, 3, 4, 1]);
/// # Ok::<(), rocm_wgpu_ops::Error>(())
/// ```
pub trait Dims {
    /// The dims as indices from the front in a tensor of `rank` dims, in the order given;
    /// `DimOutOfRange` (naming `op`) for one past the rank. The op refuses duplicates itself.
    fn to_indexes(self, rank: usize, op: &'static str) -> Result<Vec<usize>>;
}

impl<T: Dim> Dims for T {
    fn to_indexes(self, rank: usize, op: &'static str) -> Result<Vec<usize>> {
        Ok(vec![self.to_index(rank, op)?])
    }
}

impl Dims for () {
    fn to_indexes(self, _: usize, _: &'static str) -> Result<Vec<usize>> {
        Ok(vec![])
    }
}

impl<T: Dim> Dims for &[T] {
    fn to_indexes(self, rank: usize, op: &'static str) -> Result<Vec<usize>> {
        self.iter().map(|d| d.to_index(rank, op)).collect()
    }
}

impl<T: Dim, const N: usize> Dims for [T; N] {
    fn to_indexes(self, rank: usize, op: &'static str) -> Result<Vec<usize>> {
        self.as_slice().to_indexes(rank, op)
    }
}

impl<T: Dim, const N: usize> Dims for &[T; N] {
    fn to_indexes(self, rank: usize, op: &'static str) -> Result<Vec<usize>> {
        self.as_slice().to_indexes(rank, op)
    }
}

impl<T: Dim> Dims for Vec<T> {
    fn to_indexes(self, rank: usize, op: &'static str) -> Result<Vec<usize>> {
        self.as_slice().to_indexes(rank, op)
    }
}

impl<T: Dim> Dims for &Vec<T> {
    fn to_indexes(self, rank: usize, op: &'static str) -> Result<Vec<usize>> {
        self.as_slice().to_indexes(rank, op)
    }
}

macro_rules! tuple_dims {
    ($(($($t:ident $v:ident),+)),* $(,)?) => {
        $(
            impl<$($t: Dim),+> Dims for ($($t,)+) {
                fn to_indexes(self, rank: usize, op: &'static str) -> Result<Vec<usize>> {
                    let ($($v,)+) = self;
                    Ok(vec![$($v.to_index(rank, op)?),+])
                }
            }
        )*
    };
}
tuple_dims!((A a), (A a, B b), (A a, B b, C c), (A a, B b, C c, E e), (A a, B b, C c, E e, F f), (A a, B b, C c, E e, F f, G g));

/// Where a new dim goes in a tensor of `rank` dims (`unsqueeze`, `stack`): `0..=rank` from the
/// front, `D::Minus1` after the last.
pub(crate) fn insert_index(dim: impl Dim, rank: usize, op: &'static str) -> Result<usize> {
    dim.to_index(rank + 1, op).map_err(|e| match e {
        Error::DimOutOfRange { op, dim, .. } => Error::DimOutOfRange { op, dim, rank },
        e => e,
    })
}

macro_rules! tuple_shapes {
    ($(($($v:ident),+)),* $(,)?) => {
        $(
            impl From<($(tuple_shapes!(@usize $v),)+)> for Shape {
                fn from(($($v,)+): ($(tuple_shapes!(@usize $v),)+)) -> Shape {
                    Shape::new([$($v),+])
                }
            }
        )*
    };
    (@usize $v:ident) => { usize };
}
tuple_shapes!((a), (a, b), (a, b, c), (a, b, c, d), (a, b, c, d, e), (a, b, c, d, e, f));

/// A shape for [`Tensor::reshape`](crate::Tensor::reshape): any shape, or a tuple with one `()`
/// for the dim to infer from the element count (candle's `ShapeWithOneHole`).
///
/// ```
/// use rocm_wgpu_ops::{Device, Tensor};
///
/// let x = Tensor::arange(0u32, 12, &Device::cpu())?;
/// assert_eq!(x.reshape(((), 3))?.dims(), [4, 3]);
/// assert_eq!(x.reshape((2, (), 2))?.dims(), [2, 3, 2]);
/// assert!(x.reshape(((), 5)).is_err()); // 12 elements are not rows of 5
/// # Ok::<(), rocm_wgpu_ops::Error>(())
/// ```
pub trait ShapeWithOneHole {
    /// The shape, its hole (if any) filled so that it holds `elem_count` elements.
    fn into_shape(self, elem_count: usize) -> Result<Shape>;
}

impl<S: Into<Shape>> ShapeWithOneHole for S {
    fn into_shape(self, _: usize) -> Result<Shape> {
        Ok(self.into())
    }
}

/// The size of the `()` dim of `dims` (the hole written as 0 there) for `elem_count` elements.
fn fill_hole(elem_count: usize, mut dims: Vec<usize>, hole: usize) -> Result<Shape> {
    let known: usize = dims.iter().enumerate().filter(|&(i, _)| i != hole).map(|(_, &d)| d).product();
    let shown = dims.iter().enumerate().map(|(i, d)| if i == hole { "()".into() } else { d.to_string() });
    let shown = shown.collect::<Vec<_>>().join(", ");
    if known == 0 || !elem_count.is_multiple_of(known) {
        return Err(Error::InvalidView {
            op: "reshape",
            msg: format!("{elem_count} elements do not fill ({shown}): the other dims multiply to {known}"),
        });
    }
    dims[hole] = elem_count / known;
    Ok(Shape::new(dims))
}

macro_rules! one_hole {
    ($(($($before:ident),*; $($after:ident),*)),* $(,)?) => {
        $(
            impl ShapeWithOneHole for ($(one_hole!(@usize $before),)* (), $(one_hole!(@usize $after),)*) {
                fn into_shape(self, elem_count: usize) -> Result<Shape> {
                    let ($($before,)* (), $($after,)*) = self;
                    let before = [$($before),*];
                    let dims = [&before[..], &[0], &[$($after),*]].concat();
                    fill_hole(elem_count, dims, before.len())
                }
            }
        )*
    };
    (@usize $v:ident) => { usize };
}
one_hole!(
    (;),
    (; a), (a;),
    (; a, b), (a; b), (a, b;),
    (; a, b, c), (a; b, c), (a, b; c), (a, b, c;),
    (; a, b, c, d), (a; b, c, d), (a, b; c, d), (a, b, c; d), (a, b, c, d;),
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::D;

    #[test]
    fn dims_resolve_from_both_ends() {
        assert_eq!(D::Minus1.to_indexes(3, "t").unwrap(), [2]);
        assert_eq!((0, D::Minus1).to_indexes(3, "t").unwrap(), [0, 2]);
        assert_eq!([D::Minus2, D::Minus1].to_indexes(2, "t").unwrap(), [0, 1]);
        assert_eq!((&[1usize, 0][..]).to_indexes(2, "t").unwrap(), [1, 0]);
        assert_eq!(().to_indexes(2, "t").unwrap(), Vec::<usize>::new());
        let e = (0, 3).to_indexes(3, "sum").unwrap_err();
        assert_eq!(e, Error::DimOutOfRange { op: "sum", dim: 3, rank: 3 });
        assert_eq!(insert_index(D::Minus1, 2, "unsqueeze").unwrap(), 2);
        assert_eq!(insert_index(2usize, 2, "unsqueeze").unwrap(), 2);
        let e = insert_index(3usize, 2, "unsqueeze").unwrap_err();
        assert_eq!(e, Error::DimOutOfRange { op: "unsqueeze", dim: 3, rank: 2 });
    }

    #[test]
    fn holes_take_what_the_other_dims_leave() {
        assert_eq!(((), 3).into_shape(12).unwrap().dims(), [4, 3]);
        assert_eq!((2, (), 2).into_shape(12).unwrap().dims(), [2, 3, 2]);
        assert_eq!(((),).into_shape(7).unwrap().dims(), [7]);
        assert_eq!((1, 2, 3, ()).into_shape(0).unwrap().dims(), [1, 2, 3, 0]);
        let e = ((), 5).into_shape(12).unwrap_err().to_string();
        assert_eq!(e, "reshape: 12 elements do not fill ((), 5): the other dims multiply to 5");
        assert!(((), 0).into_shape(0).is_err(), "no size fills a zero dim's hole");
        assert_eq!(Shape::from((2, 3, 4)).dims(), [2, 3, 4]);
    }
}
