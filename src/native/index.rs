//! Indexing on the native backend (`hip/index.hip`).
//!
//! - index_select and gather: one thread per output element picks it through its id (`pick`).
//!   index_select whose rows (the dims after `dim`) are contiguous copies whole rows instead, in
//!   the widest chunks, up to 16 bytes, that every row start, stride and length allow
//!   (`index_select_rows_{1,2,4,8,16}`), several rows a block or several blocks a row.
//! - scatter, scatter_add, index_add: `dst` is copied into a new contiguous tensor (the copy
//!   family), then one thread per source element stores or atomically adds it into the copy
//!   (`put`). index_add is scatter_add with its 1-D ids spread over the source shape.
//!
//! Ids are read at their width (a kernel argument, so one kernel per op and value dtype serves
//! u8, u32 and i64 ids). A bad id is skipped and recorded in the op's flag
//! ([`crate::backend::Memory::new_flag`]), which travels with the output to its readbacks.

use super::kernel::{Arg, Args, BLOCK};
use super::ptr::DevicePtr;
use super::{NativeBackend, NativeStorage, Runtime, kernel};
use crate::backend::{CopyOps, IndexOps};
use crate::spec::index::{IndexOp, Rows, ScatterMode, along, rows_of, spread_ids};
use crate::spec::{Family, kernel_name};
use crate::{Layout, Result, Shape};

type S<R> = NativeStorage<R>;

/// What every index kernel takes about its ids besides the buffer: their width in bytes, the
/// size of the indexed dim, and where and under which code to record a bad one.
struct IdCheck {
    width: u32,
    size: u64,
    flag: DevicePtr,
    code: u32,
}

/// The chunks index_select's rows may be copied in (bytes), widest first: allocations are
/// aligned far beyond 16 bytes, so the row, its offset and strides decide.
const ROW_CHUNKS: [usize; 5] = [16, 8, 4, 2, 1];

/// Threads per row piece (a power of two moving 4 chunks each, at most a block) and pieces
/// per row, for rows of `row` chunks.
fn row_split(row: usize) -> (u64, u64) {
    let row = row as u64;
    let tpr = row.div_ceil(4).next_power_of_two().min(u64::from(BLOCK));
    (tpr, row.div_ceil(4 * tpr))
}

impl<R: Runtime> NativeBackend<R> {
    fn id_check(&self, op: IndexOp, ids: &S<R>, size: usize, flag: &S<R>) -> IdCheck {
        let code = op.flag_code();
        let width = ids.dtype.size_in_bytes() as u32;
        IdCheck { width, size: size as u64, flag: flag.ptr, code }
    }

    /// Flags the bad ids among `ids` (`il`) in `flag`, for an op whose main pass visits none.
    fn check_ids(&self, op: IndexOp, ids: &S<R>, il: &Layout, size: usize, flag: &S<R>) -> Result<()> {
        let c = self.id_check(op, ids, size, flag);
        // SAFETY: index_check(Dims, View iv, ids, u32 width, u64 size, u64* flag, u32 code) in
        // order; the view lies inside `ids`, the flag inside its storage.
        unsafe {
            self.strided(Family::Index, "index_check", il.dims(), &[il], |_, args| {
                args.ptr(ids.ptr).arg(Arg::U32(c.width)).u64(c.size).ptr(c.flag).arg(Arg::U32(c.code));
            })
        }
    }

    /// `y[p] = x[p with p[dim] = ids[p]]` over the positions `p` of `out` into `y` (contiguous,
    /// `out`'s size), with `il` the ids' layout over `out`.
    #[allow(clippy::too_many_arguments)]
    fn pick(
        &self,
        op: IndexOp,
        x: &S<R>,
        xl: &Layout,
        ids: &S<R>,
        il: &Layout,
        out: &Shape,
        dim: usize,
        y: &S<R>,
        flag: &S<R>,
    ) -> Result<()> {
        let c = self.id_check(op, ids, xl.dims()[dim], flag);
        let xb = along(out, xl.strides(), xl.offset(), dim);
        let stride = xl.strides()[dim] as u64;
        let name = kernel_name(op.name(), x.dtype);
        // SAFETY: pick kernels take (Dims, View xv, View iv, x, ids, y, u32 width, u64 size,
        // u64 stride, u64* flag, u32 code) in order. Every id followed is below the size of
        // `dim`, so x's reads stay in its layout; each part writes its own `n` elements of `y`
        // from `first` on.
        unsafe {
            self.strided(Family::Index, &name, out.dims(), &[&xb, il], |part, args| {
                args.ptr(x.ptr).ptr(ids.ptr).ptr(y.at(part.first as usize));
                args.arg(Arg::U32(c.width)).u64(c.size).u64(stride).ptr(c.flag).arg(Arg::U32(c.code));
            })
        }
    }

    /// index_select of whole rows (`rows` from [`rows_of`]) into `y`, with `n` 1-D ids (`il`).
    #[allow(clippy::too_many_arguments)]
    fn select_rows(
        &self,
        x: &S<R>,
        ids: &S<R>,
        il: &Layout,
        size: usize,
        rows: &Rows,
        y: &S<R>,
        flag: &S<R>,
    ) -> Result<()> {
        let c = self.id_check(IndexOp::IndexSelect, ids, size, flag);
        let n = il.dims()[0] as u64;
        let (tpr, pieces) = row_split(rows.row);
        let (row, stride) = (rows.row as u64, rows.stride as u64);
        let name = format!("index_select_rows_{}", rows.chunk);
        let (lead_strides, lead_offset) = (rows.lead.strides(), rows.lead.offset());
        for part in kernel::plan(rows.lead.dims(), &[(lead_strides, lead_offset)]) {
            let mut args = Args::default();
            args.pod(&part.dims).pod(&part.views[0]);
            // The part's output rows start after `first * n` whole rows.
            let y_part = y.ptr.offset((part.first * n * row) as usize * rows.chunk);
            args.ptr(x.ptr).ptr(ids.ptr).ptr(y_part).arg(Arg::U32(c.width));
            args.u64(il.offset() as u64).u64(il.strides()[0] as u64).u64(n).u64(c.size);
            args.u64(stride).u64(row).u64(pieces).arg(Arg::U32(tpr.trailing_zeros()));
            args.ptr(c.flag).arg(Arg::U32(c.code));
            let threads = part.dims.n * n * pieces * tpr;
            // SAFETY: index_select_rows_N(Dims ld, View lv, x, ids, y, u32 width, u64
            // ids_offset, u64 ids_stride, u64 n, u64 size, u64 stride, u64 row, u64 pieces, u32
            // tpr_log2, u64* flag, u32 code) in order, all in chunks of N bytes that divide every
            // row start (`rows_of`). Rows of ids below `size` lie inside x's layout; the part
            // writes its `part.n * n` rows of `y`.
            unsafe { self.launch(Family::Index, &name, threads, &mut args)? };
        }
        Ok(())
    }

    /// A contiguous copy of `dst` updated by [`Self::put_into`].
    #[allow(clippy::too_many_arguments)]
    fn put(
        &self,
        op: IndexOp,
        dst: &S<R>,
        dl: &Layout,
        ids: &S<R>,
        il: &Layout,
        src: &S<R>,
        sl: &Layout,
        dim: usize,
        flag: &S<R>,
    ) -> Result<S<R>> {
        let mut y = self.storage(dst.dtype, dl.elem_count())?;
        self.copy_strided(dst, dl, &mut y, 0)?;
        self.put_into(op, &y, &Layout::contiguous(dl.shape().clone()), ids, il, src, sl, dim, flag)?;
        Ok(y)
    }

    /// `y` (laid out as `yl`, no two positions sharing memory) updated in place at `ids` along
    /// `dim` with `src` (as `op`), `il` being the ids' layout over the shape of `src`.
    #[allow(clippy::too_many_arguments)]
    fn put_into(
        &self,
        op: IndexOp,
        y: &S<R>,
        yl: &Layout,
        ids: &S<R>,
        il: &Layout,
        src: &S<R>,
        sl: &Layout,
        dim: usize,
        flag: &S<R>,
    ) -> Result<()> {
        if sl.elem_count() == 0 {
            return Ok(());
        }
        let c = self.id_check(op, ids, yl.dims()[dim], flag);
        let yb = along(sl.shape(), yl.strides(), yl.offset(), dim);
        let stride = yl.strides()[dim] as u64;
        let name = kernel_name(op.name(), y.dtype);
        let yp = y.ptr;
        // SAFETY: put kernels take (Dims, View iv, View sv, View yv, ids, src, y, u32 width, u64
        // size, u64 stride, u64* flag, u32 code) in order. `yb` with an id below the size of
        // `dim` stays inside `y`'s layout (src fits in it but along `dim`); the views of ids and
        // src lie inside their storages.
        unsafe {
            self.strided(Family::Index, &name, sl.dims(), &[il, sl, &yb], |_, args| {
                args.ptr(ids.ptr).ptr(src.ptr).ptr(yp);
                args.arg(Arg::U32(c.width)).u64(c.size).u64(stride).ptr(c.flag).arg(Arg::U32(c.code));
            })?
        };
        Ok(())
    }
}

impl<R: Runtime> IndexOps for NativeBackend<R> {
    fn index_select(&self, x: &S<R>, xl: &Layout, ids: &S<R>, il: &Layout, dim: usize, flag: &S<R>) -> Result<S<R>> {
        let op = IndexOp::IndexSelect;
        let size = xl.dims()[dim];
        let mut dims = xl.dims().to_vec();
        dims[dim] = il.dims()[0];
        let out = Shape::new(dims);
        let y = self.storage(x.dtype, out.elem_count())?;
        if out.elem_count() == 0 {
            self.check_ids(op, ids, il, size, flag)?;
        } else if let Some(rows) = rows_of(xl, dim, x.dtype.size_in_bytes(), &ROW_CHUNKS) {
            self.select_rows(x, ids, il, size, &rows, &y, flag)?;
        } else {
            self.pick(op, x, xl, ids, &spread_ids(il, &out, dim), &out, dim, &y, flag)?;
        }
        Ok(y)
    }

    fn gather(&self, x: &S<R>, xl: &Layout, ids: &S<R>, il: &Layout, dim: usize, flag: &S<R>) -> Result<S<R>> {
        let y = self.storage(x.dtype, il.elem_count())?;
        self.pick(IndexOp::Gather, x, xl, ids, il, il.shape(), dim, &y, flag)?;
        Ok(y)
    }

    fn scatter(
        &self,
        dst: &S<R>,
        dl: &Layout,
        ids: &S<R>,
        il: &Layout,
        src: &S<R>,
        sl: &Layout,
        dim: usize,
        mode: ScatterMode,
        flag: &S<R>,
    ) -> Result<S<R>> {
        self.put(mode.op(), dst, dl, ids, il, src, sl, dim, flag)
    }

    fn scatter_set(
        &self,
        dst: &mut S<R>,
        dl: &Layout,
        ids: &S<R>,
        il: &Layout,
        src: &S<R>,
        sl: &Layout,
        dim: usize,
        mode: ScatterMode,
        flag: &S<R>,
    ) -> Result<()> {
        self.put_into(mode.op(), dst, dl, ids, il, src, sl, dim, flag)
    }

    fn index_add(
        &self,
        dst: &S<R>,
        dl: &Layout,
        ids: &S<R>,
        il: &Layout,
        src: &S<R>,
        sl: &Layout,
        dim: usize,
        flag: &S<R>,
    ) -> Result<S<R>> {
        let op = IndexOp::IndexAdd;
        if sl.elem_count() == 0 {
            self.check_ids(op, ids, il, dl.dims()[dim], flag)?;
        }
        self.put(op, dst, dl, ids, &spread_ids(il, sl.shape(), dim), src, sl, dim, flag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_take_the_widest_chunk_every_start_allows() {
        // f32 [50000, 4096] along dim 0: 16-byte chunks, 1024 a row.
        let t = rows_of(&Layout::contiguous([50000, 4096]), 0, 4, &ROW_CHUNKS).unwrap();
        assert_eq!((t.chunk, t.row, t.stride, t.lead.rank()), (16, 1024, 1024, 0));
        assert_eq!(row_split(t.row), (256, 1));
        // Along dim 1 of [3, 5, 6] u8: rows of 6 bytes, leading stride 30 bytes: 2-byte chunks.
        let t = rows_of(&Layout::contiguous([3, 5, 6]), 1, 1, &ROW_CHUNKS).unwrap();
        assert_eq!((t.chunk, t.row, t.stride, t.lead.strides()), (2, 3, 3, &[15][..]));
        // An offset of three f16 elements: 2-byte chunks; size-1 dims never count.
        let l = Layout::contiguous([1, 9, 3]).narrow(1, 1, 8).unwrap();
        let t = rows_of(&l, 1, 2, &ROW_CHUNKS).unwrap();
        assert_eq!((t.chunk, t.row, t.lead.offset()), (2, 3, 3));
        // Rows that are not contiguous take the element path.
        assert!(rows_of(&Layout::contiguous([4, 3]).transpose(0, 1).unwrap(), 0, 4, &ROW_CHUNKS).is_none());
        assert_eq!(row_split(3), (1, 1));
        assert_eq!(row_split(1 << 20), (256, 1024));
    }
}
