//! Indexing by integer ids on the cpu. Every id is range-checked before any output is built,
//! so an out-of-range id is an error and never a partial result.
//!
//! One trick serves all five ops: for positions `p` over some shape, `Layout::new(shape,
//! strides with strides[dim] = 0, offset)` yields the storage index of `p` with `p[dim] = 0`;
//! adding `id * strides[dim]` moves it to the row the id names.

use super::{CpuBackend, CpuStorage, dtype_mismatch, map_strided, strided, wrong_dtype};
use crate::backend::IndexOps;
use crate::cpu::elementwise::Arith;
use crate::spec::index::{IndexOp, ScatterMode};
use crate::{DType, Error, Layout, Result, Shape, with_storage, with_storage_pair};

/// The ids of `(ids, il)` in row-major order, each checked against `0..size`.
fn checked_ids(op: &'static str, ids: &CpuStorage, il: &Layout, size: usize) -> Result<Vec<usize>> {
    let raw: Vec<i64> = match ids {
        CpuStorage::U8(v) => map_strided(v, il, i64::from),
        CpuStorage::U32(v) => map_strided(v, il, i64::from),
        CpuStorage::I64(v) => strided(v, il),
        _ => return Err(wrong_dtype(op, ids, DType::INT)),
    };
    raw.into_iter()
        .map(|index| match usize::try_from(index) {
            Ok(i) if i < size => Ok(i),
            _ => Err(Error::IndexOutOfRange { op, index, size }),
        })
        .collect()
}

/// Storage indices of the positions of `shape` in a tensor of `strides` and `offset`, with the
/// coordinate along `dim` taken as 0.
fn base_layout(shape: &Shape, strides: &[usize], offset: usize, dim: usize) -> Layout {
    let mut strides = strides.to_vec();
    strides[dim] = 0;
    Layout::new(shape.clone(), strides, offset)
}

/// 1-D ids stretched over `shape` along `dim`, so that entry `p` holds `ids[p[dim]]`.
fn spread_ids(ids: &[usize], shape: &Shape, dim: usize) -> Vec<usize> {
    let mut strides = vec![0; shape.rank()];
    strides[dim] = 1;
    strided(ids, &Layout::new(shape.clone(), strides, 0))
}

/// `out[p] = x[p with p[dim] = ids[p]]` for the positions `p` of `shape` (row-major `ids`).
fn pick<T: Copy>(x: &[T], xl: &Layout, shape: &Shape, ids: &[usize], dim: usize) -> Vec<T> {
    let stride = xl.strides()[dim];
    let base = base_layout(shape, xl.strides(), xl.offset(), dim);
    base.strided_index().zip(ids).map(|(b, &i)| x[b + i * stride]).collect()
}

/// `dst[p with p[dim] = ids[p]] = f(dst[..], src[p])` for the positions `p` of `sl`, applied in
/// row-major order, in place: `dst` laid out as `dl`.
fn put_into<T: Arith>(
    dst: &mut [T],
    dl: &Layout,
    src: &[T],
    sl: &Layout,
    ids: &[usize],
    dim: usize,
    f: impl Fn(T, T) -> T,
) {
    let stride = dl.strides()[dim];
    let base = base_layout(sl.shape(), dl.strides(), dl.offset(), dim);
    for ((b, &i), s) in base.strided_index().zip(ids).zip(strided(src, sl)) {
        let at = b + i * stride;
        dst[at] = f(dst[at], s);
    }
}

/// A contiguous copy of `dst` updated by [`put_into`].
fn put<T: Arith>(
    dst: &[T],
    dl: &Layout,
    src: &[T],
    sl: &Layout,
    ids: &[usize],
    dim: usize,
    f: impl Fn(T, T) -> T,
) -> Vec<T> {
    let mut out = strided(dst, dl);
    put_into(&mut out, &Layout::contiguous(dl.shape().clone()), src, sl, ids, dim, f);
    out
}

fn scatter_add<T: Arith>(old: T, new: T) -> T {
    T::add(old, new)
}

impl IndexOps for CpuBackend {
    fn index_select(
        &self,
        x: &CpuStorage,
        xl: &Layout,
        ids: &CpuStorage,
        il: &Layout,
        dim: usize,
        _flag: &CpuStorage,
    ) -> Result<CpuStorage> {
        let ids = checked_ids(IndexOp::IndexSelect.name(), ids, il, xl.dims()[dim])?;
        let mut dims = xl.dims().to_vec();
        dims[dim] = ids.len();
        let shape = Shape::new(dims);
        let ids = spread_ids(&ids, &shape, dim);
        Ok(with_storage!(x, v => CpuStorage::from_vec(pick(v, xl, &shape, &ids, dim))))
    }

    fn gather(
        &self,
        x: &CpuStorage,
        xl: &Layout,
        ids: &CpuStorage,
        il: &Layout,
        dim: usize,
        _flag: &CpuStorage,
    ) -> Result<CpuStorage> {
        let ids = checked_ids(IndexOp::Gather.name(), ids, il, xl.dims()[dim])?;
        Ok(with_storage!(x, v => CpuStorage::from_vec(pick(v, xl, il.shape(), &ids, dim))))
    }

    fn scatter(
        &self,
        dst: &CpuStorage,
        dl: &Layout,
        ids: &CpuStorage,
        il: &Layout,
        src: &CpuStorage,
        sl: &Layout,
        dim: usize,
        mode: ScatterMode,
        _flag: &CpuStorage,
    ) -> Result<CpuStorage> {
        let op = mode.op().name();
        let ids = checked_ids(op, ids, il, dl.dims()[dim])?;
        with_storage_pair!(dst, src, (d, s) => Ok(CpuStorage::from_vec(match mode {
            // Repeated ids leave the last write, which the spec allows.
            ScatterMode::Set => put(d, dl, s, sl, &ids, dim, |_, new| new),
            ScatterMode::Add => put(d, dl, s, sl, &ids, dim, scatter_add),
        })), Err(dtype_mismatch(op, dst, src)))
    }

    fn scatter_set(
        &self,
        dst: &mut CpuStorage,
        dl: &Layout,
        ids: &CpuStorage,
        il: &Layout,
        src: &CpuStorage,
        sl: &Layout,
        dim: usize,
        mode: ScatterMode,
        _flag: &CpuStorage,
    ) -> Result<()> {
        let op = mode.op().name();
        let ids = checked_ids(op, ids, il, dl.dims()[dim])?;
        let mismatch = dtype_mismatch(op, dst, src);
        with_storage_pair!(dst, src, (d, s) => {
            match mode {
                ScatterMode::Set => put_into(d, dl, s, sl, &ids, dim, |_, new| new),
                ScatterMode::Add => put_into(d, dl, s, sl, &ids, dim, scatter_add),
            }
            Ok(())
        }, Err(mismatch))
    }

    fn index_add(
        &self,
        dst: &CpuStorage,
        dl: &Layout,
        ids: &CpuStorage,
        il: &Layout,
        src: &CpuStorage,
        sl: &Layout,
        dim: usize,
        _flag: &CpuStorage,
    ) -> Result<CpuStorage> {
        let op = IndexOp::IndexAdd.name();
        let ids = checked_ids(op, ids, il, dl.dims()[dim])?;
        let ids = spread_ids(&ids, sl.shape(), dim);
        with_storage_pair!(dst, src, (d, s) => Ok(CpuStorage::from_vec(put(d, dl, s, sl, &ids, dim, scatter_add))),
            Err(dtype_mismatch(op, dst, src)))
    }
}
