//! Softmax, the norms and batch_norm on the native backend. batch_norm goes to the runtime's
//! DNN library where it takes the case (`dnn.rs`; on an H100, 32x64x112x112 f32, cuDNN ran at
//! 2220 GB/s and our kernel at 1689); the rest, and softmax and the norms always, run in
//! `hip/nn.hip`: lines along a dim, one group of threads per line holding the line in registers
//! where it fits (see [`ROWS`]), or blocks of 32 lines for lines across memory.

use super::dnn::{BnParams, Dnn, Tensor4};
use super::kernel::{Args, BLOCK, grid, launches};
use super::ptr::DevicePtr;
use super::usage::Path;
use super::{NativeBackend, NativeStorage, Runtime};
use crate::backend::{CopyOps, ElementwiseOps, NnOps, Operand, Param};
use crate::layout::one_dim;
use crate::spec::nn::{NnOp, gates};
use crate::spec::{Family, kernel_name};
use crate::{DType, Layout, Result, Scalar};
use bytemuck::{Pod, Zeroable};

/// The rows kernels, by line length: lines of at most `max_len` elements take
/// `{op}_{T}_v{per_thread}`, which keeps `per_thread` elements per thread in registers (threads
/// per line: the power of two at or above `len / per_thread`); `vec_only`: only for lines that
/// move in 16-byte chunks (`_vec`). Longer lines (or unchunked lines past 1024) take `{op}_{T}`,
/// which reads a line once per pass with [`NN_MAX_BLOCK`] threads. At most 32 values per
/// thread and 512 threads per line keep two blocks on an H100 multiprocessor (58 to 64
/// registers a thread for f32 and the halves, NVRTC's ptxas report), so that one block's loads
/// overlap another's arithmetic. H100, 4096 x 16384 f32: softmax 2885 GB/s, layer_norm 2690,
/// rms_norm 2820 (torch 2.11: 2359, 1751, 1825; 64 values a thread, one block per
/// multiprocessor, gave layer_norm 753). Lines of 2049 to 4096 take 32 values a thread (half
/// the threads per line and their reductions): H200, layer_norm bf16 [4096, 4096] 52.2 -> 43.1
/// us at 16 -> 32 (torch 2.11: 32.0), rms_norm bf16 35.6 at both (torch 24.9).
const ROWS: &[(u64, &str, u64, bool)] = &[(1024, "_v4", 4, false), (2048, "_v16", 16, true), (16384, "_v32", 32, true)];

/// The most threads of an nn block (`NN_MAX_BLOCK` in `hip/nn.hip`).
pub(crate) const NN_MAX_BLOCK: u32 = 512;

/// Lines of softmax across memory per `_cols` block (its lanes), with `NN_MAX_BLOCK / COLS`
/// rows of threads splitting each line (`NN_MIN_WARP` in `hip/nn.hip`).
const COLS: u64 = 32;

/// `struct Lines` of `hip/nn.hip`: the lines along one dim of a layout (see there).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub(crate) struct Lines {
    pub count: u64,
    pub size: u64,
    pub inner: u64,
    pub offset: u64,
    pub so: u64,
    pub ss: u64,
    pub si: u64,
}

impl Lines {
    /// The lines along `dim` of `l`, or `None` when the dims before `dim` (or after it) do not
    /// merge into one stride.
    pub(crate) fn of(l: &Layout, dim: usize) -> Option<Lines> {
        let (d, s) = (l.dims(), l.strides());
        let (outer, so) = one_dim(&d[..dim], &s[..dim])?;
        let (inner, si) = one_dim(&d[dim + 1..], &s[dim + 1..])?;
        let u = |v: usize| v as u64;
        Some(Lines {
            count: u(outer * inner),
            size: u(d[dim]),
            inner: u(inner),
            offset: u(l.offset()),
            so: u(so),
            ss: u(s[dim]),
            si: u(si),
        })
    }
}

/// `struct Param` of `hip/nn.hip`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct KParam {
    ptr: u64,
    offset: u64,
    stride: u64,
}

fn kparam<R: Runtime>(p: Param<NativeStorage<R>>) -> KParam {
    p.map_or(KParam::default(), |(s, l)| KParam {
        ptr: s.ptr.0,
        offset: l.offset() as u64,
        stride: l.strides()[0] as u64,
    })
}

/// Elements per 16-byte chunk of a `_vec` kernel keeping `per_thread` (0: none) elements of
/// `dtype` per thread (`chunk_of` in `hip/nn.hip`).
fn chunk(dtype: crate::DType, per_thread: u64) -> u64 {
    let full = 16 / dtype.size_in_bytes() as u64;
    if per_thread > 0 && per_thread < full { per_thread } else { full }
}

/// Whether the lines of `l` (inner 1) at `base` move in whole, aligned chunks of `w` elements.
fn chunked(l: &Lines, base: DevicePtr, w: u64, size: u64) -> bool {
    let outer_aligned = l.count <= 1 || l.so.is_multiple_of(w);
    l.ss == 1
        && l.size.is_multiple_of(w)
        && l.offset.is_multiple_of(w)
        && outer_aligned
        && base.0.is_multiple_of(w * size)
}

/// The rows kernel suffix, threads per line and threads per block for `lines` at `base`.
fn rows_variant(lines: &Lines, base: DevicePtr, dtype: crate::DType) -> (String, u32, u32) {
    let size = dtype.size_in_bytes() as u64;
    let vec = |per| chunked(lines, base, chunk(dtype, per), size);
    let fit = ROWS.iter().find(|(max, _, per, vec_only)| lines.size <= *max && (!vec_only || vec(*per)));
    match fit {
        Some(&(_, stem, per, _)) => {
            let group = lines.size.div_ceil(per).max(1).next_power_of_two().min(u64::from(NN_MAX_BLOCK)) as u32;
            let suffix = if vec(per) { format!("{stem}_vec") } else { stem.to_string() };
            (suffix, group, group.max(BLOCK))
        }
        None => (if vec(0) { "_vec" } else { "" }.to_string(), NN_MAX_BLOCK, NN_MAX_BLOCK),
    }
}

impl<R: Runtime> NativeBackend<R> {
    /// The lines along `dim` of `(x, l)`, read in place, or from a contiguous copy (returned, to
    /// be kept alive while the kernel is queued) when the layout's dims do not merge.
    pub(crate) fn lines(
        &self,
        x: &NativeStorage<R>,
        l: &Layout,
        dim: usize,
    ) -> Result<(Option<NativeStorage<R>>, Lines)> {
        if let Some(lines) = Lines::of(l, dim) {
            return Ok((None, lines));
        }
        let c = self.contiguous(x, l)?;
        let lines = Lines::of(&Layout::contiguous(l.shape().clone()), dim);
        let lines = lines.ok_or_else(|| self.error("a contiguous layout has lines along every dim"))?;
        Ok((Some(c), lines))
    }

    /// Runs `{op}_{T}` (rows or cols form) over `lines` of `x` into the contiguous `y`.
    ///
    /// # Safety
    /// `lines` lie inside the storage at `x`; `y` holds `lines.count * lines.size` elements;
    /// `w` and `b` (norms only) lie inside their storages, of `lines.size` elements.
    #[allow(clippy::too_many_arguments)]
    unsafe fn nn_lines(
        &self,
        op: NnOp,
        dtype: crate::DType,
        lines: &Lines,
        x: DevicePtr,
        y: DevicePtr,
        (w, b): (KParam, KParam),
        eps: f64,
    ) -> Result<()> {
        if lines.size > u64::from(u32::MAX) {
            return Err(self.error(format!("{op}: lines of {} elements are past the kernels' 2^32", lines.size)));
        }
        let name = kernel_name(op.name(), dtype);
        // Each block takes its own lines (no grid-stride loop): `kernel::launches` splits them
        // into grids every vendor accepts.
        if lines.inner > 1 && matches!(op, NnOp::Softmax | NnOp::LogSoftmax) {
            for (l0, _, blocks) in launches(lines.count, COLS, NN_MAX_BLOCK) {
                let mut args = Args::default();
                args.u64(l0).pod(lines).ptr(x).ptr(y);
                // SAFETY: op_T_cols(l0, Lines, x, y) in order; each block takes COLS lines from
                // `l0` (the kernel skips those past `count`); the caller's contract.
                unsafe {
                    self.launch_grid(Family::Nn, &format!("{name}_cols"), [blocks, 1, 1], NN_MAX_BLOCK, &mut args)?
                };
            }
            return Ok(());
        }
        let (suffix, group, block) = rows_variant(lines, x, dtype);
        for (l0, _, blocks) in launches(lines.count, u64::from(block / group), block) {
            let mut args = Args::default();
            args.u64(l0).pod(&group).pod(lines).ptr(x).ptr(y).pod(&w).pod(&b).pod(&eps);
            // SAFETY: op_T{suffix}(l0, group, Lines, x, y, w, b, eps) in order; each block takes
            // `block / group` lines from `l0` (the kernel skips those past `count`); `_vec`
            // variants only where `chunked` holds; the caller's contract for the ranges.
            unsafe { self.launch_grid(Family::Nn, &format!("{name}{suffix}"), [blocks, 1, 1], block, &mut args)? };
        }
        Ok(())
    }

    fn norm(
        &self,
        op: NnOp,
        x: &NativeStorage<R>,
        l: &Layout,
        w: Param<NativeStorage<R>>,
        b: Param<NativeStorage<R>>,
        eps: f64,
    ) -> Result<NativeStorage<R>> {
        let y = self.storage(x.dtype, l.elem_count())?;
        if y.len == 0 {
            return Ok(y);
        }
        let (copy, lines) = self.lines(x, l, l.rank() - 1)?;
        let src = copy.as_ref().unwrap_or(x).ptr;
        // SAFETY: the lines lie in `x` (validated by the spec) or in its contiguous copy; `y`
        // is new with one element per input element; the spec checked w and b are 1-D of the
        // last dim's length.
        unsafe { self.nn_lines(op, x.dtype, &lines, src, y.ptr, (kparam(w), kparam(b)), eps)? };
        Ok(y)
    }
}

impl<R: Runtime> NnOps for NativeBackend<R> {
    fn softmax(&self, x: &NativeStorage<R>, l: &Layout, op: NnOp, dim: usize) -> Result<NativeStorage<R>> {
        let y = self.storage(x.dtype, l.elem_count())?;
        if y.len == 0 {
            return Ok(y);
        }
        let (copy, lines) = self.lines(x, l, dim)?;
        let src = copy.as_ref().unwrap_or(x).ptr;
        // SAFETY: the lines lie in `x` (validated by the spec) or in its contiguous copy; `y` is
        // new with one element per input element.
        unsafe { self.nn_lines(op, x.dtype, &lines, src, y.ptr, Default::default(), 0.0)? };
        Ok(y)
    }

    fn layer_norm(
        &self,
        x: &NativeStorage<R>,
        l: &Layout,
        w: Param<NativeStorage<R>>,
        b: Param<NativeStorage<R>>,
        eps: f64,
    ) -> Result<NativeStorage<R>> {
        self.norm(NnOp::LayerNorm, x, l, w, b, eps)
    }

    fn rms_norm(
        &self,
        x: &NativeStorage<R>,
        l: &Layout,
        w: Param<NativeStorage<R>>,
        eps: f64,
    ) -> Result<NativeStorage<R>> {
        self.norm(NnOp::RmsNorm, x, l, w, None, eps)
    }

    fn batch_norm(
        &self,
        x: &NativeStorage<R>,
        l: &Layout,
        mean: (&NativeStorage<R>, &Layout),
        var: (&NativeStorage<R>, &Layout),
        w: Param<NativeStorage<R>>,
        b: Param<NativeStorage<R>>,
        eps: f64,
    ) -> Result<NativeStorage<R>> {
        let y = self.storage(x.dtype, l.elem_count())?;
        if y.len == 0 {
            return Ok(y);
        }
        if let Ok(dnn) = self.0.rt.dnn() {
            // SAFETY: the spec validated every layout against its storage and the shapes.
            if unsafe { self.dnn_batch_norm(dnn, (x, l), mean, var, (w, b), eps, &y)? } {
                return Ok(y);
            }
        }
        self.0.library_use.count(Path::BatchNormKernels);
        let d = l.dims();
        let (channels, inner) = (d[1] as u64, d[2..].iter().product::<usize>() as u64);
        let (m, v) = (kparam(Some(mean)), kparam(Some(var)));
        let (kw, kb) = (kparam(w), kparam(b));
        let name = kernel_name(NnOp::BatchNorm.name(), x.dtype);
        // SAFETY: batch_norm_T(Dims, View, x, y, first, inner, channels, mean, var, w, b, eps) in
        // order; each part writes its `n` elements of `y` from `first`, reads `x` through its
        // view and the parameters at channels below `channels` (all validated by the spec).
        unsafe {
            self.strided(Family::Nn, &name, d, &[l], |part, args| {
                args.ptr(x.ptr).ptr(y.at(part.first as usize)).u64(part.first).u64(inner).u64(channels);
                args.pod(&m).pod(&v).pod(&kw).pod(&kb).pod(&eps);
            })?
        };
        Ok(y)
    }

    fn local_response_norm(
        &self,
        x: &NativeStorage<R>,
        l: &Layout,
        size: usize,
        alpha: f64,
        beta: f64,
        k: f64,
    ) -> Result<NativeStorage<R>> {
        let y = self.storage(x.dtype, l.elem_count())?;
        if y.len == 0 {
            return Ok(y);
        }
        let (d, st) = (l.dims(), l.strides());
        let u = |v: usize| v as u64;
        // Windows of at most LRN_MAXW channels over one position stride: the blocked kernel, each
        // thread loading the squares of its channels' windows once.
        if let Some((inner, sp)) = one_dim(&d[2..], &st[2..]).filter(|_| size <= LRN_MAXW && y.len <= u32::MAX as usize)
        {
            let a = LrnBlockArgs {
                shape: [u(d[0]), u(d[1]), u(inner), u(size)],
                x: [u(l.offset()), u(st[0]), u(st[1]), u(sp)],
                alpha,
                beta,
                k,
            };
            let threads = u(d[0] * d[1].div_ceil(LRN_CB) * inner);
            let (g, blk) = grid(threads, self.0.rt.info().multiprocessors);
            let mut args = Args::default();
            args.pod(&a).ptr(x.ptr).ptr(y.ptr);
            let name = format!("{}_blocked", kernel_name(NnOp::LocalResponseNorm.name(), x.dtype));
            // SAFETY: local_response_norm_T_blocked(LrnBlockArgs, x, y) in order; it reads x at
            // offset + o so + c sc + p sp for o, c, p within the validated layout and writes the
            // n < 2^32 elements of y; the grid-stride loop covers every thread's block.
            unsafe { self.launch_grid(Family::Nn, &name, g, blk[0], &mut args)? };
            return Ok(y);
        }
        let a = LrnArgs {
            channels: u(d[1]),
            inner: u(d[2..].iter().product()),
            sc: u(l.strides()[1]),
            size: u(size),
            alpha,
            beta,
            k,
        };
        let name = kernel_name(NnOp::LocalResponseNorm.name(), x.dtype);
        // SAFETY: local_response_norm_T(Dims, View, x, y, first, LrnArgs) in order; each part
        // writes its `n` elements of `y` from `first` and reads `x` through its view, moved by
        // whole channel strides to channels below `channels` (the spec validated the layout).
        unsafe {
            self.strided(Family::Nn, &name, d, &[l], |part, args| {
                args.ptr(x.ptr).ptr(y.at(part.first as usize)).u64(part.first).pod(&a);
            })?
        };
        Ok(y)
    }

    fn rnn_cell(
        &self,
        op: NnOp,
        gx: Operand<NativeStorage<R>>,
        gh: Operand<NativeStorage<R>>,
        bias: Param<NativeStorage<R>>,
        state: Operand<NativeStorage<R>>,
    ) -> Result<NativeStorage<R>> {
        let bh = state.1.elem_count();
        let n = if op == NnOp::LstmCell { 2 * bh } else { bh };
        let y = self.storage(gx.0.dtype, n)?;
        if n == 0 {
            return Ok(y);
        }
        if n as u64 > u64::from(u32::MAX) {
            return Err(self.error(format!("{op}: {n} elements are past the kernel's 2^32")));
        }
        let u = |v: usize| v as u64;
        let shape = [u(n), u(bh), u(state.1.dims()[1]), u(gates(op)), bias.is_some() as u64];
        let b = bias.map_or([0, 0], |(_, l)| [u(l.offset()), u(l.strides()[0])]);
        let a = CellArgs { shape, gx: matrix(gx.1), gh: matrix(gh.1), state: matrix(state.1), bias: b };
        let (g, blk) = grid(n as u64, self.0.rt.info().multiprocessors);
        let mut args = Args::default();
        let bias_ptr = bias.map_or(state.0.ptr, |(s, _)| s.ptr);
        args.pod(&a).ptr(gx.0.ptr).ptr(gh.0.ptr).ptr(bias_ptr).ptr(state.0.ptr).ptr(y.ptr);
        // SAFETY: rnn_cell_T(CellArgs, gx, gh, bias, state, y) in order; the spec checked each
        // operand's layout against its storage and the shapes; the bias pointer is read only
        // where `shape[4]` says one is given; `y` holds n elements; the grid-stride loop covers
        // n < 2^32.
        unsafe { self.launch_grid(Family::Nn, &kernel_name(op.name(), gx.0.dtype), g, blk[0], &mut args)? };
        Ok(y)
    }
}

/// `struct LrnArgs` of `hip/nn.hip`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct LrnArgs {
    channels: u64,
    inner: u64,
    sc: u64,
    size: u64,
    alpha: f64,
    beta: f64,
    k: f64,
}

/// Channels a thread of the blocked local_response_norm takes, and the widest window it takes
/// (`LRN_CB`, `LRN_MAXW` in `hip/nn.hip`).
const LRN_CB: usize = 8;
const LRN_MAXW: usize = 9;

/// `struct LrnBlockArgs` of `hip/nn.hip`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct LrnBlockArgs {
    shape: [u64; 4],
    x: [u64; 4],
    alpha: f64,
    beta: f64,
    k: f64,
}

/// `struct CellArgs` of `hip/nn.hip`: output elements, `B H`, `H`, gates, whether a bias is
/// given, then offset, row and column stride of `gx`, `gh` and the state, offset and stride of
/// the bias.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct CellArgs {
    shape: [u64; 5],
    gx: [u64; 3],
    gh: [u64; 3],
    state: [u64; 3],
    bias: [u64; 2],
}

fn matrix(l: &Layout) -> [u64; 3] {
    [l.offset() as u64, l.strides()[0] as u64, l.strides()[1] as u64]
}

impl<R: Runtime> NativeBackend<R> {
    /// A batch-norm parameter as the library reads it: packed, of `dtype` (the layout's own
    /// storage when it already is, else a converted copy kept in `keep`).
    fn bn_param(
        &self,
        (s, l): (&NativeStorage<R>, &Layout),
        dtype: DType,
        keep: &mut Vec<NativeStorage<R>>,
    ) -> Result<DevicePtr> {
        if s.dtype == dtype && l.is_contiguous() {
            return Ok(s.at(l.offset()));
        }
        let c = if s.dtype == dtype { self.contiguous(s, l)? } else { self.cast(s, l, dtype)? };
        keep.push(c);
        Ok(keep[keep.len() - 1].ptr)
    }

    /// `channels` ones (`one`) or zeros of `dtype`, kept in `keep`.
    fn bn_constant(
        &self,
        dtype: DType,
        channels: usize,
        one: bool,
        keep: &mut Vec<NativeStorage<R>>,
    ) -> Result<DevicePtr> {
        let mut s = self.storage(dtype, channels)?;
        let v = match (dtype, one) {
            (_, false) => Scalar::U8(0).to_dtype(dtype),
            (DType::F64, true) => Scalar::F64(1.0),
            (_, true) => Scalar::F32(1.0).to_dtype(dtype),
        };
        self.fill(&mut s, &Layout::contiguous([channels]), v)?;
        let p = s.ptr;
        keep.push(s);
        Ok(p)
    }

    /// Batch norm inference of `(x, l)` into `y` on the DNN library, if it takes it: `x` as
    /// `(N, C, inner, 1)` (its dims after the channel merged into one stride), parameters packed
    /// in the library's parameter dtype (f32 for halves), absent ones as ones and zeros.
    ///
    /// # Safety
    /// Every layout lies inside its storage (validated by the spec); `y` is new, contiguous.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn dnn_batch_norm(
        &self,
        dnn: &dyn Dnn,
        (x, l): (&NativeStorage<R>, &Layout),
        mean: (&NativeStorage<R>, &Layout),
        var: (&NativeStorage<R>, &Layout),
        (w, b): (Param<NativeStorage<R>>, Param<NativeStorage<R>>),
        eps: f64,
        y: &NativeStorage<R>,
    ) -> Result<bool> {
        let (d, s) = (l.dims(), l.strides());
        let Some((inner, si)) = one_dim(&d[2..], &s[2..]) else { return Ok(false) };
        let dims = [d[0], d[1], inner, 1];
        let (Some(xt), Some(yt)) = (Tensor4::strided(dims, [s[0], s[1], si, 1]), Tensor4::packed_checked(dims)) else {
            return Ok(false);
        };
        let pdtype = if matches!(x.dtype, DType::F16 | DType::BF16) { DType::F32 } else { x.dtype };
        let mut keep = vec![];
        let p = BnParams {
            dtype: pdtype,
            mean: self.bn_param(mean, pdtype, &mut keep)?,
            var: self.bn_param(var, pdtype, &mut keep)?,
            scale: match w {
                Some(w) => self.bn_param(w, pdtype, &mut keep)?,
                None => self.bn_constant(pdtype, d[1], true, &mut keep)?,
            },
            bias: match b {
                Some(b) => self.bn_param(b, pdtype, &mut keep)?,
                None => self.bn_constant(pdtype, d[1], false, &mut keep)?,
            },
            eps,
        };
        // SAFETY: the descriptors state `x` through its layout and the new `y`; the parameters
        // hold `C` packed elements each, alive (in `keep`) until the call is queued.
        let taken = unsafe { dnn.batch_norm(x.dtype, (&xt, x.at(l.offset())), (&yt, y.ptr), &p)? };
        if taken {
            self.0.library_use.count(Path::BatchNormLibrary);
        }
        Ok(taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_merge_the_dims_around_the_line() {
        let l = Layout::contiguous([2, 3, 4, 5]);
        let lines = Lines::of(&l, 2).unwrap();
        assert_eq!(lines, Lines { count: 30, size: 4, inner: 5, offset: 0, so: 20, ss: 5, si: 1 });
        let last = Lines::of(&l, 3).unwrap();
        assert_eq!((last.count, last.size, last.inner, last.so, last.si), (24, 5, 1, 5, 0));
        let first = Lines::of(&l, 0).unwrap();
        assert_eq!((first.count, first.size, first.inner, first.so, first.ss), (60, 2, 60, 0, 60));
        // A transposed view: the line along dim 0 of (5, 4) stored as (4, 5).
        let t = Layout::contiguous([4, 5]).transpose(0, 1).unwrap();
        assert_eq!(Lines::of(&t, 1).unwrap(), Lines { count: 5, size: 4, inner: 1, offset: 0, so: 1, ss: 5, si: 0 });
        // Outer dims that do not merge (a permuted batch) need a copy.
        let p = Layout::contiguous([2, 3, 4]).permute(&[1, 0, 2]).unwrap();
        assert_eq!(Lines::of(&p, 2), None);
        let along = Lines::of(&p, 1).unwrap();
        assert_eq!((along.count, along.size, along.so, along.ss, along.si), (12, 2, 4, 12, 1));
        // Broadcast (stride 0) and size-1 dims merge.
        let b = Layout::new([3, 1, 4], vec![0, 9, 1], 7);
        assert_eq!(Lines::of(&b, 2).unwrap(), Lines { count: 3, size: 4, inner: 1, offset: 7, so: 0, ss: 1, si: 0 });
    }

    #[test]
    fn rows_kernels_keep_lines_in_registers_where_they_fit() {
        let at = |size: usize, offset| {
            let l = Layout::contiguous_with_offset([3, size], offset);
            Lines::of(&l, 1).unwrap()
        };
        let f32 = crate::DType::F32;
        let base = DevicePtr(0x1000);
        assert_eq!(rows_variant(&at(1, 0), base, f32), ("_v4".into(), 1, BLOCK));
        assert_eq!(rows_variant(&at(8, 0), base, f32), ("_v4_vec".into(), 2, BLOCK));
        assert_eq!(rows_variant(&at(1000, 0), base, f32), ("_v4_vec".into(), 256, BLOCK));
        assert_eq!(rows_variant(&at(1028, 0), base, f32), ("_v16_vec".into(), 128, BLOCK));
        assert_eq!(rows_variant(&at(16384, 0), base, f32), ("_v32_vec".into(), 512, 512));
        assert_eq!(rows_variant(&at(16388, 0), base, f32), ("_vec".into(), NN_MAX_BLOCK, NN_MAX_BLOCK));
        // Lines that do not move in aligned chunks: an odd length, an odd offset, a column.
        assert_eq!(rows_variant(&at(1001, 0), base, f32).0, "_v4");
        assert_eq!(rows_variant(&at(3000, 0), base, f32).0, "_v32_vec");
        assert_eq!(rows_variant(&at(3001, 0), base, f32).0, "");
        assert_eq!(rows_variant(&at(3000, 2), base, f32).0, "");
        assert_eq!(rows_variant(&at(3000, 0), DevicePtr(0x1004), f32).0, "");
        let t = Lines::of(&Layout::contiguous([8, 3]).transpose(0, 1).unwrap(), 1).unwrap();
        assert_eq!(rows_variant(&t, base, f32).0, "_v4");
        // Halves move 8 per chunk, or 4 at 4 per thread; f64 2.
        assert_eq!(chunk(crate::DType::F16, 0), 8);
        assert_eq!(chunk(crate::DType::BF16, 4), 4);
        assert_eq!(chunk(crate::DType::F64, 32), 2);
        for len in [1, 5, 1024, 3000, 10_000, 16384] {
            let (suffix, group, block) = rows_variant(&at(len, 0), base, f32);
            let per = ROWS.iter().find(|r| suffix.starts_with(r.1)).map(|r| r.2).unwrap();
            assert!(u64::from(group) * per >= len as u64 && group <= block && block <= NN_MAX_BLOCK, "{len}");
        }
    }

    #[test]
    fn the_hip_source_agrees_on_block_sizes() {
        let src = super::super::hip_source(crate::spec::Family::Nn).unwrap();
        assert!(src.contains(&format!("#define NN_MAX_BLOCK {NN_MAX_BLOCK}\n")));
        assert!(src.contains(&format!("#define NN_MIN_WARP {COLS}\n")));
        assert_eq!(NN_MAX_BLOCK % BLOCK, 0);
    }
}
