//! Copies, fills and arange on wgpu (`shaders/copy.wgsl`). Copies use kernels, not
//! `copy_buffer_to_buffer`: a kernel reaches several times the copy engine's bandwidth.

use super::kernel::{Index, Spec, lane_threads, vec_ok};
use super::repr::{Access, Caps, Compute, Repr, params};
use super::support::bits_of;
use super::{Kernel, KernelKey, WgpuBackend, WgpuStorage};
use crate::backend::CopyOps;
use crate::spec::Family;
use crate::spec::copy::{Copy2d, CopyOp};
use crate::{DType, Layout, Result, Scalar};

/// Element `i` of a strided `x` to element `offset + i` of `y`; whole words when `aligned`.
pub(crate) fn strided_spec(caps: Caps, dtype: DType, x: Index, aligned: bool) -> Result<Spec> {
    let r = Repr::of(dtype, caps, CopyOp::CopyStrided.name())?;
    let (entry, access) = if aligned { ("strided", Access::Write) } else { ("strided_any", Access::Update) };
    Ok(Spec::new(Family::Copy, entry, caps).bind("x", r, Access::Read, x).bind("y", r, access, Index::None))
}

/// The vector form of [`strided_spec`] (dst offset a multiple of 4, whole vectors in bounds).
pub(crate) fn strided_v4_spec(caps: Caps, dtype: DType, x: Index, x_vec: bool) -> Result<Spec> {
    Ok(strided_spec(caps, dtype, x, true)?.lanes("strided_v4", &[x_vec, true]))
}

/// Contiguous fill of elements `off..off + n` with vector stores.
pub(crate) fn fill_v4_spec(caps: Caps, dtype: DType) -> Result<Spec> {
    let r = Repr::of(dtype, caps, CopyOp::Fill.name())?;
    let spec = Spec::new(Family::Copy, "fill_v4", caps).bind("y", r, Access::Write, Index::None);
    Ok(spec.code(params::decoder(r.compute())).lanes("fill_v4", &[true]))
}

/// Whether a write of `n` elements from `offset` of a `len`-element buffer can use whole
/// vectors: aligned, and the last partial vector only covers the tensor's own tail padding.
fn vec_write_ok(r: Repr, offset: usize, n: usize, len: usize) -> bool {
    r.vectorizes() && offset.is_multiple_of(4) && (n.is_multiple_of(4) || offset + n == len)
}

/// `p` in 32-bit words, for elements of `size` bytes narrower than a word, where each of its
/// rows starts and ends on a word.
fn in_words(p: &Copy2d, size: usize) -> Option<Copy2d> {
    let per = 4usize.checked_div(size).filter(|&per| per > 1)?;
    let strides = if p.rows > 1 { [p.src_stride, p.dst_stride] } else { [0, 0] };
    [p.cols, p.src_offset, p.dst_offset].iter().chain(&strides).all(|v| v % per == 0).then(|| Copy2d {
        rows: p.rows,
        cols: p.cols / per,
        src_stride: p.src_stride / per,
        dst_stride: p.dst_stride / per,
        src_offset: p.src_offset / per,
        dst_offset: p.dst_offset / per,
    })
}

/// A contiguous copy of `sl` to `dst_offset` of a `dst_len`-element buffer, for elements of `size`
/// bytes other than 4, as a copy of 32-bit words (so of whole vectors of them: u8, f16 and bf16
/// otherwise move a word an invocation, at a third of a copy's bandwidth on the H200): the
/// words' layout and the first word written. Both ends must start on a word, and the copy end
/// on one or at the buffer's end (a storage's padding), as `vec_write_ok` takes the words.
fn in_words_contiguous(size: usize, sl: &Layout, dst_offset: usize, dst_len: usize) -> Option<(Layout, usize)> {
    if size == 4 || !sl.is_contiguous() {
        return None;
    }
    let n = sl.elem_count();
    let words = |elems: usize| (elems * size).div_ceil(4);
    let starts = (sl.offset() * size).is_multiple_of(4) && (dst_offset * size).is_multiple_of(4);
    let ends = (n * size).is_multiple_of(4) || dst_offset + n == dst_len;
    let w_offset = dst_offset * size / 4;
    let fits = starts && ends && n > 0 && vec_write_ok(Repr::U32, w_offset, words(n), words(dst_len));
    fits.then(|| (Layout::contiguous_with_offset([words(n)], sl.offset() * size / 4), w_offset))
}

/// A copy or fill kernel by the arguments of its spec's builder (the device's caps aside).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum CopyKey {
    /// [`strided_spec`]: the dtype, x's index, whole words.
    Strided(DType, Index, bool),
    /// [`strided_v4_spec`]: the dtype, x's index, x read as vectors.
    StridedV4(DType, Index, bool),
    /// [`copy2d_spec`].
    Copy2d(DType),
    /// [`fill_spec`]: the dtype, y's index.
    Fill(DType, Index),
    /// [`fill_v4_spec`].
    FillV4(DType),
    /// [`arange_spec`].
    Arange(DType),
}

impl CopyKey {
    fn spec(self, caps: Caps) -> Result<Spec> {
        match self {
            CopyKey::Strided(dt, x, aligned) => strided_spec(caps, dt, x, aligned),
            CopyKey::StridedV4(dt, x, x_vec) => strided_v4_spec(caps, dt, x, x_vec),
            CopyKey::Copy2d(dt) => copy2d_spec(caps, dt),
            CopyKey::Fill(dt, y) => fill_spec(caps, dt, y),
            CopyKey::FillV4(dt) => fill_v4_spec(caps, dt),
            CopyKey::Arange(dt) => arange_spec(caps, dt),
        }
    }
}

impl WgpuBackend {
    /// The kernel of `key`: its spec built at first use, then found by the key.
    fn copy_kernel(&self, key: CopyKey) -> Result<Kernel> {
        self.keyed(KernelKey::Copy(key), || key.spec(self.caps()))
    }
}

pub(crate) fn copy2d_spec(caps: Caps, dtype: DType) -> Result<Spec> {
    let r = Repr::of(dtype, caps, CopyOp::Copy2d.name())?;
    Ok(Spec::new(Family::Copy, "copy2d", caps).bind("x", r, Access::Read, Index::None).bind(
        "y",
        r,
        Access::Update,
        Index::None,
    ))
}

pub(crate) fn fill_spec(caps: Caps, dtype: DType, y: Index) -> Result<Spec> {
    let r = Repr::of(dtype, caps, CopyOp::Fill.name())?;
    Ok(Spec::new(Family::Copy, "fill", caps).bind("y", r, Access::Update, y).code(params::decoder(r.compute())))
}

pub(crate) fn arange_spec(caps: Caps, dtype: DType) -> Result<Spec> {
    let r = Repr::of(dtype, caps, CopyOp::Arange.name())?;
    let c = r.compute();
    let at = match c {
        Compute::F32 => "param(0u) + f32(i) * param(1u)",
        Compute::F64 => "param(0u) + f64(i) * param(1u)",
        Compute::U32 => "param(0u) + i * param(1u)",
        Compute::I64 => "param(0u) + (i64(i) & 4294967295li) * param(1u)",
        Compute::I64e => "i64e_add(param(0u), i64e_mul(vec2<u32>(i, 0u), param(1u)))",
    };
    let code = format!("{}fn arange_at(i: u32) -> {} {{ return {at}; }}", params::decoder(c), c.wgsl());
    Ok(Spec::new(Family::Copy, "arange", caps).bind("y", r, Access::Write, Index::None).code(code))
}

impl CopyOps for WgpuBackend {
    fn copy_strided(&self, src: &WgpuStorage, sl: &Layout, dst: &mut WgpuStorage, dst_offset: usize) -> Result<()> {
        let n = sl.elem_count();
        // Copies only move bytes: f64 needs no SHADER_F64 (see `support.rs`).
        let dt = bits_of(src.dtype, self.caps());
        if let Some((wl, w_offset)) = in_words_contiguous(dt.size_in_bytes(), sl, dst_offset, dst.len) {
            let key = CopyKey::StridedV4(DType::U32, Index::of(&wl), vec_ok(Repr::U32, &wl));
            let (spec, pipeline) = self.copy_kernel(key)?;
            let meta = spec.meta(wl.elem_count() as u32, &[&wl], &[w_offset as u32]);
            let threads = lane_threads(wl.elem_count());
            return self.run(&spec, &pipeline, &[src.buffer(), dst.buffer()], &meta, threads);
        }
        let r = Repr::of(dt, self.caps(), CopyOp::CopyStrided.name())?;
        if dst_offset == 0 && r.per_word() == 1 {
            // A transposed source: the identity map through workgroup tiles.
            if let Some(done) = self.copy_transposed(src, sl, dst, dt) {
                return done;
            }
        }
        if vec_write_ok(r, dst_offset, n, dst.len) {
            let (spec, pipeline) = self.copy_kernel(CopyKey::StridedV4(dt, Index::of(sl), vec_ok(r, sl)))?;
            let meta = spec.meta(n as u32, &[sl], &[dst_offset as u32]);
            return self.run(&spec, &pipeline, &[src.buffer(), dst.buffer()], &meta, lane_threads(n));
        }
        let epw = r.per_word() as usize;
        let aligned = dst_offset.is_multiple_of(epw) && (n.is_multiple_of(epw) || dst_offset + n == dst.len);
        let (spec, pipeline) = self.copy_kernel(CopyKey::Strided(dt, Index::of(sl), aligned))?;
        let extra = if aligned { dst_offset / epw } else { dst_offset };
        let meta = spec.meta(n as u32, &[sl], &[extra as u32]);
        let threads = if aligned { n.div_ceil(epw) } else { n };
        self.run(&spec, &pipeline, &[src.buffer(), dst.buffer()], &meta, threads as u64)
    }

    fn copy2d(&self, src: &WgpuStorage, dst: &mut WgpuStorage, p: &Copy2d) -> Result<()> {
        let dt = bits_of(src.dtype, self.caps());
        // Rows that start and end on 32-bit words (f16, bf16, u8): a word an invocation, and no
        // atomic update of a word that neighbours share.
        let (dt, p) = match in_words(p, dt.size_in_bytes()) {
            Some(w) => (DType::U32, w),
            None => (dt, *p),
        };
        let (spec, pipeline) = self.copy_kernel(CopyKey::Copy2d(dt))?;
        let n = p.rows * p.cols;
        let extra = [p.cols, p.src_stride, p.dst_stride, p.src_offset, p.dst_offset].map(|v| v as u32);
        let meta = spec.meta(n as u32, &[], &extra);
        self.run(&spec, &pipeline, &[src.buffer(), dst.buffer()], &meta, n as u64)
    }

    fn fill(&self, dst: &mut WgpuStorage, l: &Layout, value: Scalar) -> Result<()> {
        // An f64 fill without SHADER_F64 stores the value's bits as an i64 (see `support.rs`).
        let dt = bits_of(dst.dtype, self.caps());
        let value = if dt == dst.dtype { value } else { Scalar::I64(value.to_f64().to_bits() as i64) };
        let r = Repr::of(dt, self.caps(), CopyOp::Fill.name())?;
        let n = l.elem_count();
        if l.is_contiguous() && vec_write_ok(r, l.offset(), n, dst.len) {
            let (spec, pipeline) = self.copy_kernel(CopyKey::FillV4(dt))?;
            let mut extra = params::encode(r.compute(), &[value]);
            extra.push(l.offset() as u32);
            let meta = spec.meta(n as u32, &[], &extra);
            return self.run(&spec, &pipeline, &[dst.buffer()], &meta, lane_threads(n));
        }
        let (spec, pipeline) = self.copy_kernel(CopyKey::Fill(dt, Index::of(l)))?;
        let compute = spec.bindings[0].repr.compute();
        let meta = spec.meta(n as u32, &[l], &params::encode(compute, &[value]));
        self.run(&spec, &pipeline, &[dst.buffer()], &meta, n as u64)
    }

    fn arange(&self, dtype: DType, start: Scalar, step: Scalar, len: usize) -> Result<WgpuStorage> {
        let (spec, pipeline) = self.copy_kernel(CopyKey::Arange(dtype))?;
        let r = spec.bindings[0].repr;
        let y = self.storage(dtype, len)?;
        let meta = spec.meta(len as u32, &[], &params::encode(r.compute(), &[start, step]));
        self.run(&spec, &pipeline, &[y.buffer()], &meta, (len as u64).div_ceil(r.per_word() as u64))?;
        Ok(y)
    }
}

/// Every copy kernel for `caps`, named by op and dtype.
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    use crate::spec::kernel_name;
    let s = Index::Strided(3);
    let mut v = vec![];
    for dt in caps.dtypes() {
        let name = |op: CopyOp| kernel_name(op.name(), dt);
        v.push((name(CopyOp::CopyStrided), strided_spec(caps, dt, s, true)));
        v.push((format!("{}_any", name(CopyOp::CopyStrided)), strided_spec(caps, dt, s, false)));
        v.push((name(CopyOp::Copy2d), copy2d_spec(caps, dt)));
        v.push((name(CopyOp::Fill), fill_spec(caps, dt, s)));
        if Repr::of(dt, caps, "copy").is_ok_and(|r| r.vectorizes()) {
            v.push((format!("{}_v4", name(CopyOp::Fill)), fill_v4_spec(caps, dt)));
            v.push((format!("{}_v4", name(CopyOp::CopyStrided)), strided_v4_spec(caps, dt, s, false)));
        }
        v.push((name(CopyOp::Arange), arange_spec(caps, dt)));
    }
    v
}
