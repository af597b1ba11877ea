//! Copies, fills and arange on the native backend (`hip/copy.hip`). Contiguous copies become
//! device memcpys and byte-uniform contiguous fills memsets; the rest are kernels, taking their
//! `_vec` (16-byte chunks) or `_tiled` (transposed source) variants where the layout allows.

use super::elementwise::Output;
use super::kernel::{self, Arg, Args, BLOCK, MAX_ELEMS, Path};
use super::{NativeBackend, NativeStorage, Runtime};
use crate::backend::CopyOps;
use crate::spec::copy::{Copy2d, CopyOp};
use crate::spec::{Family, kernel_name};
use crate::{DType, Layout, Result, Scalar};

/// The value's bytes as stored, when they are all one byte (then a memset writes it).
fn uniform_byte(dtype: DType, v: Scalar) -> Option<u8> {
    let bytes = match Arg::element(dtype, v) {
        Arg::U8(x) => vec![x],
        Arg::U16(x) => x.to_le_bytes().to_vec(),
        Arg::U32(x) => x.to_le_bytes().to_vec(),
        Arg::I64(x) => x.to_le_bytes().to_vec(),
        Arg::F32(x) => x.to_le_bytes().to_vec(),
        Arg::F64(x) => x.to_le_bytes().to_vec(),
    };
    bytes.iter().all(|&b| b == bytes[0]).then_some(bytes[0])
}

impl<R: Runtime> NativeBackend<R> {
    /// A new contiguous storage holding the elements of `(s, l)` in row-major order (for a
    /// library call that cannot read `l` as it is).
    pub(crate) fn contiguous(&self, s: &NativeStorage<R>, l: &Layout) -> Result<NativeStorage<R>> {
        let mut y = self.storage(s.dtype, l.elem_count())?;
        self.copy_strided(s, l, &mut y, 0)?;
        Ok(y)
    }
}

impl<R: Runtime> CopyOps for NativeBackend<R> {
    fn copy_strided(
        &self,
        src: &NativeStorage<R>,
        sl: &Layout,
        dst: &mut NativeStorage<R>,
        dst_offset: usize,
    ) -> Result<()> {
        let n = sl.elem_count();
        if n == 0 {
            return Ok(());
        }
        if let Some((start, _)) = sl.contiguous_range() {
            // SAFETY: the spec keeps `sl` inside `src` and `dst_offset + n` inside `dst`; the
            // storages are distinct (one is borrowed mutably).
            return unsafe { self.0.rt.dtod(src.at(start), dst.at(dst_offset), n * src.dtype.size_in_bytes()) };
        }
        let name = kernel_name(CopyOp::CopyStrided.name(), src.dtype);
        let (x, y) = (src.ptr, dst.ptr);
        let out = Output::Dense(dst.at(dst_offset), dst.dtype);
        // SAFETY: copy_strided_T(Dims, View, const T* x, T* y, u64 dst_offset) and its variants
        // get their parameters in order; each part writes `dst[dst_offset + first ..][.. n]`,
        // inside `dst`.
        unsafe {
            self.walk(Family::Copy, &name, &[(sl, x, src.dtype)], out, true, |part, args| {
                args.ptr(x).ptr(y).u64((dst_offset as u64) + part.first);
            })
        }
    }

    fn copy2d(&self, src: &NativeStorage<R>, dst: &mut NativeStorage<R>, p: &Copy2d) -> Result<()> {
        if p.rows == 0 || p.cols == 0 {
            return Ok(());
        }
        let size = src.dtype.size_in_bytes();
        if p.rows == 1 || (p.src_stride == p.cols && p.dst_stride == p.cols) {
            // SAFETY: one run of `rows * cols` elements in each buffer, inside both (checked by
            // the spec); the buffers are distinct.
            return unsafe { self.0.rt.dtod(src.at(p.src_offset), dst.at(p.dst_offset), p.rows * p.cols * size) };
        }
        let name = kernel_name(CopyOp::Copy2d.name(), src.dtype);
        // Launches of whole rows, under 2^32 elements each.
        let rows_per = (MAX_ELEMS / p.cols as u64).max(1) as usize;
        let mut row = 0;
        let addrs = [(src.ptr.0, size), (dst.ptr.0, size)];
        while row < p.rows {
            let rows = rows_per.min(p.rows - row);
            let (from, to) = ((p.src_offset + row * p.src_stride) as u64, (p.dst_offset + row * p.dst_stride) as u64);
            let strides = [vec![p.src_stride as u64, 1], vec![p.dst_stride as u64, 1]];
            let part = kernel::part(&[rows as u64, p.cols as u64], &strides, &[from, to], 0);
            let mut args = Args::default();
            if let Some(Path::Vec { blocks }) = kernel::vec_path(&part, &addrs, None) {
                args.pod(&part.dims).pod(&part.views[0]).pod(&part.views[1]).ptr(src.ptr).ptr(dst.ptr);
                // SAFETY: copy2d_T_vec(Dims, View x, View y, const T* x, T* y) in order, over
                // the `blocks` of BLOCK threads `vec_path` sized; the spec keeps both blocks
                // inside their buffers.
                unsafe { self.launch_grid(Family::Copy, &format!("{name}_vec"), [blocks, 1, 1], BLOCK, &mut args)? };
            } else {
                args.u64(rows as u64).u64(p.cols as u64).u64(p.src_stride as u64).u64(p.dst_stride as u64);
                args.u64(from).u64(to).ptr(src.ptr).ptr(dst.ptr);
                // SAFETY: copy2d_T(rows, cols, src_stride, dst_stride, src_offset, dst_offset,
                // x, y) in order; the spec keeps both blocks inside their buffers.
                unsafe { self.launch(Family::Copy, &name, (rows * p.cols) as u64, &mut args)? };
            }
            row += rows;
        }
        Ok(())
    }

    fn fill(&self, dst: &mut NativeStorage<R>, l: &Layout, value: Scalar) -> Result<()> {
        let n = l.elem_count();
        if n == 0 {
            return Ok(());
        }
        let dtype = dst.dtype;
        if let (Some((start, _)), Some(byte)) = (l.contiguous_range(), uniform_byte(dtype, value)) {
            // SAFETY: the spec keeps the layout, here one run, inside `dst`.
            return unsafe { self.0.rt.memset(dst.at(start), byte, n * dtype.size_in_bytes()) };
        }
        let name = kernel_name(CopyOp::Fill.name(), dtype);
        let (y, v) = (dst.ptr, Arg::element(dtype, value));
        // SAFETY: fill_T(Dims, View, T* y, T value) and fill_T_vec in order, the value stored as
        // a T; the view lies inside `dst`.
        unsafe {
            self.walk(Family::Copy, &name, &[(l, y, dtype)], Output::Operand, false, |_, args| {
                args.ptr(y).arg(v);
            })
        }
    }

    fn arange(&self, dtype: DType, start: Scalar, step: Scalar, len: usize) -> Result<NativeStorage<R>> {
        let y = self.storage(dtype, len)?;
        let name = kernel_name(CopyOp::Arange.name(), dtype);
        let (a, b) = if dtype.is_int() {
            (Arg::I64(start.to()), Arg::I64(step.to()))
        } else {
            (Arg::F64(start.to_f64()), Arg::F64(step.to_f64()))
        };
        let mut base = 0;
        while base < len {
            let n = (MAX_ELEMS as usize).min(len - base);
            let mut args = Args::default();
            args.ptr(y.at(base)).u64(n as u64).u64(base as u64).arg(a).arg(b);
            // SAFETY: arange_T(T* y, u64 n, u64 base, A start, A step) in order, A being i64
            // for integers and f64 for floats; it writes `y[base ..][.. n]`.
            unsafe { self.launch(Family::Copy, &name, n as u64, &mut args)? };
            base += n;
        }
        Ok(y)
    }
}
