//! Tensors larger than the largest buffer a kernel can bind (ARCHITECTURE.md, "Tensors past the
//! binding limit"): such a tensor's data is a [`Parts`] storage, consecutive element ranges each
//! in an ordinary storage of its backend, and an op on it runs as pieces ([`Split`]) whose
//! operands each lie inside one part and whose outputs each fit one buffer.

use super::status::{Flags, Status};
use super::{Cell, Tensor};
use crate::backend::{BackendKind, IndexOps, Memory, Readback};
use crate::device::{BackendOf, Storage, dispatch};
use crate::spec::Out;
use crate::spec::conv::{ConvOp, ConvParams};
use crate::spec::index::ScatterMode;
use crate::spec::reduce::ReduceOp;
use crate::{CpuStorage, DType, Device, Error, Layout, Result, Scalar, Shape};
use std::sync::Arc;

/// A tensor's elements in consecutive ranges, each an ordinary storage of one backend within the
/// largest buffer it binds.
#[derive(Debug)]
pub(crate) struct Parts {
    /// The storages, in the order of their elements.
    parts: Vec<Storage>,
    /// `bounds[i]` is the first element of part `i`; the last entry is the element count.
    bounds: Vec<usize>,
    dtype: DType,
}

impl Parts {
    pub(crate) fn dtype(&self) -> DType {
        self.dtype
    }

    pub(crate) fn len(&self) -> usize {
        self.bounds.last().copied().unwrap_or(0)
    }

    pub(crate) fn kind(&self) -> BackendKind {
        self.parts.first().map_or(BackendKind::Wgpu, Storage::kind)
    }

    /// The part holding every element from `lo` to `hi` (inclusive), if one does.
    fn part_of(&self, lo: usize, hi: usize) -> Option<usize> {
        let i = self.bounds.partition_point(|&b| b <= lo).checked_sub(1)?;
        (i < self.parts.len() && hi < self.bounds[i + 1]).then_some(i)
    }

    /// The parts holding elements `lo` to `hi` (inclusive): the first and the last.
    fn spanned(&self, lo: usize, hi: usize) -> (usize, usize) {
        let at = |e: usize| self.bounds.partition_point(|&b| b <= e).saturating_sub(1).min(self.parts.len() - 1);
        (at(lo), at(hi))
    }

    /// The error for code that reached this storage without splitting: `what` cannot take a
    /// tensor stored in parts.
    pub(crate) fn unsplit(&self, what: &str) -> Error {
        let bytes = self.len() as u64 * self.dtype.size_in_bytes() as u64;
        let largest = self.parts.iter().map(|p| p.len() as u64 * self.dtype.size_in_bytes() as u64).max();
        Error::LimitExceeded {
            backend: self.kind(),
            what: format!(
                "{what} on a tensor of {bytes} bytes stored in {} buffers (past the largest buffer a kernel \
                 binds); this op does not split such operands yet",
                self.parts.len()
            ),
            needed: bytes,
            limit: largest.unwrap_or(0),
        }
    }

    /// Elements `start..end` read back, each part's readback started now.
    fn download(&self, dev: &Device, start: usize, end: usize) -> Result<Readback<CpuStorage>> {
        let mut pending = vec![];
        for (i, p) in self.parts.iter().enumerate() {
            let (lo, hi) = (self.bounds[i].max(start), self.bounds[i + 1].min(end));
            if lo < hi {
                let r = dispatch!(dev, |b| b.download(b.get(p)?));
                pending.push((r, lo - self.bounds[i], hi - self.bounds[i]));
            }
        }
        let (dtype, size) = (self.dtype, self.dtype.size_in_bytes());
        Ok(Readback::later(async move {
            let mut bytes = Vec::with_capacity((end - start) * size);
            for (r, lo, hi) in pending {
                bytes.extend_from_slice(&r.wait().await?.as_bytes()[lo * size..hi * size]);
            }
            CpuStorage::from_bytes(dtype, &bytes)
        }))
    }
}

/// The largest buffer a kernel binds on `dev`, in bytes.
fn limit(dev: &Device) -> u64 {
    dispatch!(dev, |b| b.max_bytes())
}

/// `LimitExceeded` past the elements a device's kernels can walk in one tensor (parts or not:
/// wgpu's index with u32), before any part is made.
fn walkable(dev: &Device, what: &str, n: usize, dtype: DType) -> Result<()> {
    let max = dispatch!(dev, |b| b.max_elements());
    if n <= max {
        return Ok(());
    }
    let size = dtype.size_in_bytes() as u64;
    Err(Error::LimitExceeded {
        backend: dev.kind(),
        what: format!("{what}: {n} elements (at most {max} here)"),
        needed: (n as u64).saturating_mul(size),
        limit: max as u64 * size,
    })
}

/// The elements of each part of a new contiguous tensor of `shape` that does not fit `limit`
/// bytes (`None` if it fits): the most that fit, in whole blocks of the largest run of trailing
/// dims that fits (whole rows of an embedding or a weight), so that a split along the leading
/// dims never cuts one.
fn part_len(shape: &Shape, dtype: DType, limit: u64) -> Option<usize> {
    let size = dtype.size_in_bytes() as u64;
    if shape.elem_count() as u64 * size <= limit {
        return None;
    }
    let cap = (limit / size).max(1);
    let mut block = 1u64;
    for &d in shape.dims().iter().rev() {
        match block.checked_mul(d as u64) {
            Some(next) if next <= cap => block = next,
            _ => break,
        }
    }
    Some((cap / block * block) as usize)
}

/// The first and last element a layout reaches (an empty one: its offset twice).
fn span(l: &Layout) -> (usize, usize) {
    let empty = l.dims().contains(&0);
    let last = if empty { 0 } else { l.dims().iter().zip(l.strides()).map(|(&d, &s)| (d - 1) * s).sum() };
    (l.offset(), l.offset() + last)
}

impl Tensor {
    /// Whether this tensor's data is stored in parts (cheap: no lock).
    pub(super) fn in_parts(&self) -> bool {
        self.storage.parts
    }

    /// A new tensor of `shape` and `dtype` on `device` in parts of at most the device's binding
    /// limit, each made by `make(start, end)` (its elements' range), or `None` if it fits one
    /// buffer.
    pub(super) fn make_parts(
        shape: &Shape,
        dtype: DType,
        device: &Device,
        mut make: impl FnMut(usize, usize) -> Result<Storage>,
    ) -> Result<Option<Tensor>> {
        let Some(len) = part_len(shape, dtype, limit(device)) else { return Ok(None) };
        let n = shape.elem_count();
        walkable(device, "a tensor in parts", n, dtype)?;
        let (mut parts, mut bounds) = (vec![], vec![]);
        for start in (0..n).step_by(len.max(1)) {
            parts.push(make(start, (start + len).min(n))?);
            bounds.push(start);
        }
        bounds.push(n);
        let storage = Storage::Parts(Box::new(Parts { parts, bounds, dtype }));
        Ok(Some(Tensor::from_storage(storage, shape.clone(), device)))
    }

    /// The readback of this contiguous tensor, if it is stored in parts.
    pub(super) fn download_parts(&self) -> Result<Option<Readback<CpuStorage>>> {
        if !self.in_parts() {
            return Ok(None);
        }
        let g = self.read()?;
        let Storage::Parts(p) = &*g else { return Ok(None) };
        let start = self.layout.offset();
        p.download(&self.device, start, start + self.elem_count()).map(Some)
    }

    /// The bounds of this tensor's parts, if it is stored in parts.
    fn part_bounds(&self) -> Result<Option<Vec<usize>>> {
        if !self.in_parts() {
            return Ok(None);
        }
        Ok(match &*self.read()? {
            Storage::Parts(p) => Some(p.bounds.clone()),
            _ => None,
        })
    }

    /// This view as a tensor of the one part holding all its elements (its offset moved into
    /// that part; the same memory, the same flags); itself if not in parts; `None` if no part
    /// holds them all.
    fn window(&self) -> Result<Option<Tensor>> {
        if !self.in_parts() {
            return Ok(Some(self.clone()));
        }
        let g = self.read()?;
        let Storage::Parts(p) = &*g else { return Ok(Some(self.clone())) };
        let (lo, hi) = span(&self.layout);
        let (lo, hi) = (lo.min(p.len().saturating_sub(1)), hi.min(p.len().saturating_sub(1)).max(lo));
        let Some(i) = p.part_of(lo, hi) else { return Ok(None) };
        let Some(s) = p.parts[i].share() else { return Err(p.unsplit("a view")) };
        let l = &self.layout;
        let layout = Layout::new(l.shape().clone(), l.strides().to_vec(), l.offset() - p.bounds[i]);
        let cell = Cell::new(s, None, Status::of([self.status().flags()], &self.device));
        Ok(Some(Tensor { storage: Arc::new(cell), layout, dtype: self.dtype, device: self.device.clone() }))
    }

    /// This tensor's storage as its own (whole, contiguous from its first element), shared, or a
    /// copy's: a piece of a split op's output becoming a part.
    fn own_storage(&self) -> Result<Storage> {
        let whole = |t: &Tensor| -> Result<Option<Storage>> {
            let g = t.read()?;
            Ok((t.is_contiguous() && t.layout.offset() == 0 && g.len() == t.elem_count()).then(|| g.share()).flatten())
        };
        match whole(self)? {
            Some(s) => Ok(s),
            None => whole(&self.copy()?)?.ok_or_else(|| Error::Backend {
                backend: self.device.kind(),
                msg: "a piece of a split op has no storage of its own (a bug in this crate)".into(),
            }),
        }
    }

    /// A view of this tensor's shape over one element of `dtype` (no buffer of that size): ids
    /// checked against it flag what they would flag against the whole tensor.
    pub(super) fn stand_in(&self, dtype: DType) -> Result<Tensor> {
        Tensor::zeros(vec![1; self.rank()], dtype, &self.device)?.broadcast_as(self.shape().clone())
    }

    /// `index_select(self, ids, 0)` of `self` stored in parts as one kernel reading every part
    /// it spans, where the backend can bind them all and the output fits one buffer (an
    /// embedding lookup: one dispatch, against a dozen for [`Tensor::pick_parts`]); `None`
    /// otherwise.
    pub(super) fn select_across_parts(&self, ids: &Tensor, dim: usize, out: &Out) -> Result<Option<Tensor>> {
        let bytes = (out.shape.elem_count() * out.dtype.size_in_bytes()) as u64;
        if dim != 0 || !self.in_parts() || ids.in_parts() || bytes > limit(&self.device) {
            return Ok(None);
        }
        let flag = self.new_flag()?;
        let (g, ig) = (self.read()?, ids.read()?);
        let Storage::Parts(p) = &*g else { return Ok(None) };
        let (lo, hi) = span(&self.layout);
        let (first, last) = p.spanned(lo, hi);
        let s = dispatch!(self.device, |b| {
            let parts = p.parts[first..=last].iter().map(|s| b.get(s)).collect::<Result<Vec<_>>>()?;
            let (bounds, f) = (&p.bounds[first..=last + 1], b.get(flag.storage())?);
            b.index_select_parts(&parts, bounds, &self.layout, b.get(&ig)?, &ids.layout, f)?.map(|s| b.wrap(s))
        });
        let Some(s) = s else { return Ok(None) };
        let own = Some(flag).filter(|f| f.records()).map(Flags::one);
        let flags = [self.status().flags(), ids.status().flags()].into_iter().chain(own);
        Ok(Some(Tensor::from_parts(s, out.shape.clone(), Status::of(flags, &self.device), &self.device)))
    }

    /// `pick(self, ids)` (an index_select or a gather along `dim`) of `self` stored in parts,
    /// part by part: for each range of rows lying in one part, the ids moved into it (clamped to
    /// the range, less its start: one kernel for every range, the ranges' bounds uploaded as
    /// tensors `[ranges, 1..]`) pick from its window, and one `where` chain keeps for each id
    /// what its own range picked (`spread` makes the masks the output's shape; the chain fuses
    /// into one kernel). Ids out of range are flagged against the whole dim by a pick from a
    /// broadcast view of `self`'s shape.
    pub(super) fn pick_parts(
        &self,
        op: &'static str,
        ids: &Tensor,
        dim: usize,
        pick: impl Fn(&Tensor, &Tensor) -> Result<Tensor>,
        spread: impl Fn(Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let dev = &self.device;
        let checked = pick(&self.stand_in(DType::U8)?, ids)?;
        // The largest id the ids' dtype holds: ranges past it hold none of them.
        let top = match ids.dtype {
            DType::U8 => u8::MAX as usize,
            DType::U32 => u32::MAX as usize,
            _ => i64::MAX as usize,
        };
        let ranges: Vec<(usize, usize)> = (self.ranges(dim, self.dims()[dim])?)
            .ok_or_else(|| self.cannot_split(op))?
            .into_iter()
            .filter(|&(a, _)| a <= top)
            .collect();
        let windows = ranges
            .iter()
            .map(|&(a, b)| self.narrow(dim, a, b - a)?.window()?.ok_or_else(|| self.cannot_split(op)))
            .collect::<Result<Vec<_>>>()?;
        let bound = |f: &dyn Fn(usize, usize) -> usize| -> Result<Tensor> {
            let v = ranges.iter().map(|&(a, b)| f(a, b).min(top));
            let mut shape = vec![1; ids.rank() + 1];
            shape[0] = ranges.len();
            match ids.dtype {
                DType::U8 => Tensor::from_vec(v.map(|x| x as u8).collect(), shape, dev),
                DType::U32 => Tensor::from_vec(v.map(|x| x as u32).collect(), shape, dev),
                _ => Tensor::from_vec(v.map(|x| x as i64).collect(), shape, dev)?.to_dtype(ids.dtype),
            }
        };
        let (lo, hi) = (bound(&|a, _| a)?, bound(&|_, b| b - 1)?);
        let clamped = ids.unsqueeze(0)?.maximum(&lo)?.minimum(&hi)?;
        let local = clamped.sub(&lo)?.contiguous()?;
        let row = |t: &Tensor, i: usize| t.narrow(0, i, 1)?.squeeze(0);
        // Every pick before the chain, and the masks spread before their comparison, so that
        // the chain fuses (a pick, or a reshape of a pending result, runs what is pending).
        let picked = windows.iter().enumerate().map(|(i, w)| pick(w, &row(&local, i)?)).collect::<Result<Vec<_>>>()?;
        let mut merged = picked.first().ok_or_else(|| self.cannot_split(op))?.clone();
        for (i, p) in picked.iter().enumerate().skip(1) {
            let own = spread(row(&local, i)?)?.add(&row(&lo, i)?)?.eq(&spread(ids.clone())?)?;
            merged = own.where_cond(p, &merged)?;
        }
        merged.status().absorb([checked.status().flags()], &self.device);
        Ok(merged)
    }

    /// `src` written (or added: `mode`) at `ids` along `dim` into this tensor stored in parts,
    /// in place. Along another dim whose rows each lie in one part, each range's window takes
    /// the ids and source rows of that range. Along `dim` itself, each range of rows becomes a
    /// copy one row longer, the ids outside the range sent to that extra row, and the copy less
    /// its extra row is written back (two copies of the tensor: the price of a write that may
    /// land in any part); ids out of range are flagged against the whole dim.
    pub(super) fn scatter_parts(&self, ids: &Tensor, src: &Tensor, dim: usize, mode: ScatterMode) -> Result<()> {
        let op = mode.op().name();
        // The windows' own flags are not this tensor's: the ids checked against the whole dim,
        // and what the ids and the source depend on, flagged here.
        let checked = self.stand_in(DType::U8)?.gather(ids, dim)?;
        self.status().absorb([checked.status().flags(), ids.status().flags(), src.status().flags()], &self.device);
        for d in (0..self.rank()).filter(|&d| d != dim) {
            let Some(ranges) = self.ranges(d, self.dims()[d])? else { continue };
            for (a, b) in ranges.into_iter().filter(|&(a, _)| a < ids.dims()[d]) {
                let e = b.min(ids.dims()[d]);
                let w = self.narrow(d, a, b - a)?.window()?.ok_or_else(|| self.cannot_split(op))?;
                w.scatter_in_place(&ids.narrow(d, a, e - a)?, &src.narrow(d, a, e - a)?, dim, mode)?;
            }
            return Ok(());
        }
        let ranges = self.ranges(dim, self.dims()[dim])?.ok_or_else(|| self.cannot_split(op))?;
        // Rows of a range with the extra one within one buffer.
        let row = (self.elem_count() / self.dims()[dim].max(1)) as u64 * self.dtype.size_in_bytes() as u64;
        let most = (limit(&self.device) / row.max(1)).saturating_sub(1) as usize;
        if most == 0 {
            return Err(self.cannot_split(op));
        }
        let ids = if ids.dtype == DType::U8 { ids.to_dtype(DType::U32)? } else { ids.clone() };
        for (a, b) in ranges.into_iter().flat_map(|(a, b)| (a..b).step_by(most).map(move |x| (x, (x + most).min(b)))) {
            let w = self.narrow(dim, a, b - a)?.window()?.ok_or_else(|| self.cannot_split(op))?;
            let mut dims = w.dims().to_vec();
            dims[dim] += 1;
            let longer = Tensor::zeros(dims, self.dtype, &self.device)?;
            longer.slice_set(&w, dim, 0)?;
            let clamped = ids.clamp(Scalar::I64(a as i64), Scalar::I64(b as i64))?;
            let extra = Tensor::full(Scalar::I64((b - a) as i64), ids.shape().clone(), ids.dtype, &self.device)?;
            let local = clamped.eq(&ids)?.where_cond(&clamped.sub(Scalar::I64(a as i64))?, &extra)?;
            longer.scatter_in_place(&local, src, dim, mode)?;
            w.slice_set(&longer.narrow(dim, 0, b - a)?, dim, 0)?;
        }
        Ok(())
    }

    /// `write(window, piece)` for the windows of this view ([`Tensor::each_window`]) and `src`
    /// (of this view's shape) narrowed alike. An in-place write into a tensor in parts
    /// (`slice_set`, `cat` past one buffer).
    pub(super) fn write_parts(&self, src: &Tensor, write: impl Fn(&Tensor, &Tensor) -> Result<()>) -> Result<()> {
        self.each_window("a write", &|at, w| write(w, &src.block(at, w.dims())?))
    }

    /// `f(at, window)` for windows covering this view, each lying in one part, `at` where each
    /// starts: ranges of the first dim whose rows each lie in one part, or where every line
    /// crosses parts (a row past one buffer), one index of a dim at a time, each split again
    /// (`op` names what needs them, if none does).
    pub(super) fn each_window(&self, op: &'static str, f: &dyn Fn(&[usize], &Tensor) -> Result<()>) -> Result<()> {
        self.each_window_at(op, &vec![0; self.rank()], f)
    }

    fn each_window_at(
        &self,
        op: &'static str,
        at: &[usize],
        f: &dyn Fn(&[usize], &Tensor) -> Result<()>,
    ) -> Result<()> {
        let moved = |d: usize, a: usize| {
            let mut at = at.to_vec();
            at[d] += a;
            at
        };
        for d in 0..self.rank() {
            let Some(ranges) = self.ranges(d, self.dims()[d])? else { continue };
            for (a, b) in ranges {
                f(&moved(d, a), &self.narrow(d, a, b - a)?.window()?.ok_or_else(|| self.cannot_split(op))?)?;
            }
            return Ok(());
        }
        let d = (0..self.rank()).find(|&d| self.dims()[d] > 1).ok_or_else(|| self.cannot_split(op))?;
        (0..self.dims()[d]).try_for_each(|i| self.narrow(d, i, 1)?.each_window_at(op, &moved(d, i), f))
    }

    /// The block of this view starting at `at` with `dims`.
    pub(super) fn block(&self, at: &[usize], dims: &[usize]) -> Result<Tensor> {
        let mut t = self.clone();
        for (d, (&a, &n)) in at.iter().zip(dims).enumerate() {
            if (a, n) != (0, t.dims()[d]) {
                t = t.narrow(d, a, n)?;
            }
        }
        Ok(t)
    }

    /// `f` on the windows of this view, range by range as [`Tensor::write_parts`] (`fill_`).
    pub(super) fn in_windows(&self, f: impl Fn(&Tensor) -> Result<()>) -> Result<()> {
        self.each_window("a write", &|_, w| f(w))
    }

    /// A norm of this tensor with its parameters `params`, split: along every dim but the
    /// normalised last one (layer and rms norms: `channel` empty), or along any, the `(C)`
    /// parameters moving with output dim 1 (batch norm: `channel` is `[1]`).
    pub(super) fn split_norm(
        &self,
        op: &'static str,
        out: &Out,
        params: &[&Tensor],
        channel: &[usize],
        f: impl Fn(&Tensor, &[Tensor]) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let n = out.shape.rank();
        let mut xs = vec![(self.clone(), (0..n).map(Some).collect())];
        for &p in params {
            xs.push((p.clone(), (0..n).map(|i| channel.contains(&i).then_some(0)).collect()));
        }
        let fixed = if channel.is_empty() { vec![n.saturating_sub(1)] } else { vec![] };
        Split::mapped(op, out, xs).fixed(&fixed).run(|x| f(&x[0], &x[1..]))
    }

    /// `op` over `dims` of this tensor in parts, where no split of the kept dims fits: one
    /// partial result per range of a reduced dim whose rows each lie in one part (a 16-bit sum's
    /// partials in f32, as the kernels accumulate it), joined and reduced again. An arg op cuts
    /// its first reduced dim: each range's index moved by the range's start, the partial values
    /// (min or max) choosing the range, the first one on a tie as the kernels' first index. The
    /// reduced dims kept, as size 1. The joined partials must be at most half this tensor or
    /// fit one buffer, else (each index of the cut dim a part of its own) the same split would
    /// come back forever: then lines of a kept dim go a chunk at a time, as many as their
    /// partials fit one buffer.
    pub(super) fn reduce_parts(&self, op: ReduceOp, dims: &[usize]) -> Result<Tensor> {
        let cut = if op.is_arg() { &dims[..1] } else { dims };
        let reduced = dims.iter().map(|&d| self.dims()[d]).product::<usize>().max(1);
        let kept = self.elem_count() / reduced;
        // Bytes of a partial: an f32 sum of a 16-bit type, a u32 index, else the dtype's.
        let size = self.dtype.size_in_bytes().max(4) as u64;
        let max = limit(&self.device);
        for &r in cut {
            let Some(ranges) = self.ranges(r, self.dims()[r])? else { continue };
            let joined = (kept * ranges.len()) as u64;
            if 2 * joined > self.elem_count() as u64 && joined * size > max {
                continue;
            }
            let wide = op == ReduceOp::Sum && matches!(self.dtype, DType::F16 | DType::BF16);
            // Elements of the reduced dims after `r`: an arg op's flat index moves by this a row.
            let inner: usize = dims[1..].iter().map(|&d| self.dims()[d]).product();
            let value = if op == ReduceOp::ArgMax { ReduceOp::Max } else { ReduceOp::Min };
            let (mut partials, mut at) = (vec![], vec![]);
            for (a, b) in ranges {
                let piece = self.narrow(r, a, b - a)?.window()?.ok_or_else(|| self.cannot_split(op.name()))?;
                let piece = if wide { piece.to_dtype(DType::F32)? } else { piece };
                if op.is_arg() {
                    partials.push(piece.reduce(value, dims.to_vec(), true)?);
                    at.push(piece.reduce(op, dims.to_vec(), true)?.add(Scalar::U32((a * inner) as u32))?);
                } else {
                    partials.push(piece.reduce(op, dims.to_vec(), true)?);
                }
            }
            if op.is_arg() {
                let range = Tensor::cat(&partials, r)?.reduce(op, vec![r], true)?;
                return Tensor::cat(&at, r)?.gather(&range, r);
            }
            let all = Tensor::cat(&partials, r)?.reduce(op, dims.to_vec(), true)?;
            return all.to_dtype(self.dtype);
        }
        // Rows along the cut dims that cross parts (a row past one buffer), or partials that
        // would not shrink: a chunk of a kept dim at a time, whose partials fit one buffer and
        // at most half the dim, so that each chunk is smaller.
        let Some(k) = (0..self.rank()).find(|d| !dims.contains(d) && self.dims()[*d] > 1) else {
            return Err(self.cannot_split(op.name()));
        };
        let per = (kept / self.dims()[k]) as u64 * reduced as u64 * size;
        let chunk = (max / per.max(1)).clamp(1, self.dims()[k].div_ceil(2) as u64) as usize;
        self.in_chunks(k, chunk, |x| x.reduce(op, dims.to_vec(), true))
    }

    /// `f` on each index of dim `k` (narrowed to 1), joined along it: an op whose every line
    /// crosses parts, such a line at a time.
    fn line_by_line(&self, k: usize, f: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
        self.in_chunks(k, 1, f)
    }

    /// `f` on `chunk` indices of dim `k` at a time (narrowed to them), joined along it.
    fn in_chunks(&self, k: usize, chunk: usize, f: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
        let n = self.dims()[k];
        let pieces = (0..n).step_by(chunk).map(|a| f(&self.narrow(k, a, chunk.min(n - a))?));
        Tensor::cat(&pieces.collect::<Result<Vec<_>>>()?, k)
    }

    /// argsort of this tensor in parts, or whose indices do not fit one buffer: split along the
    /// other dims where each line (along the last dim) lies in one part; a line at a time where a
    /// line is as long as a part; a line crossing parts, or whose indices are past one buffer,
    /// merged from ranges ([`Tensor::merge_argsort`]).
    pub(super) fn argsort_parts(&self, out: &Out, descending: bool) -> Result<Tensor> {
        let last = self.rank().saturating_sub(1);
        let n = self.dims().get(last).copied().unwrap_or(1);
        let fits_out = n as u64 * 4 <= limit(&self.device);
        match (0..last).find(|&d| self.dims()[d] > 1) {
            None => match self.window()? {
                Some(w) if fits_out => w.argsort(descending),
                _ => self.merge_argsort(descending),
            },
            Some(k) => {
                let largest =
                    self.part_bounds()?.map_or(usize::MAX, |b| b.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0));
                let reach = n.saturating_sub(1) * self.layout.strides()[last] + 1;
                if reach >= largest || !fits_out {
                    return self.line_by_line(k, |x| x.argsort(descending));
                }
                let split = Split::pointwise("argsort", out, std::slice::from_ref(self)).fixed(&[last]);
                split.run(|x| x[0].argsort(descending))
            }
        }
    }

    /// argsort of this line (every dim but the last of size 1) that crosses parts or whose
    /// indices do not fit one buffer: ranges of it inside one part, two of which sort in one
    /// buffer. An element's place is its place in its own range's argsort plus, for each other
    /// range, how many of that range's elements come before it: its place in the argsort of the
    /// two ranges one after the other (the earlier range first, so that ties keep the order of a
    /// stable sort) less its place in its own. The indices are written at their places.
    fn merge_argsort(&self, descending: bool) -> Result<Tensor> {
        let last = self.rank() - 1;
        let cap = (limit(&self.device) / 16).max(1) as usize;
        let ranges: Vec<(usize, usize)> = (self.ranges(last, self.dims()[last])?)
            .ok_or_else(|| self.cannot_split("argsort"))?
            .into_iter()
            .flat_map(|(a, b)| (a..b).step_by(cap).map(move |x| (x, (x + cap).min(b))))
            .collect();
        let mut pieces = vec![];
        for &(a, b) in &ranges {
            pieces.push(self.narrow(last, a, b - a)?.window()?.ok_or_else(|| self.cannot_split("argsort"))?);
        }
        // `ids`' inverse permutation along the last dim: each element's place.
        let places = |ids: &Tensor| -> Result<Tensor> {
            let along = Tensor::arange(0u32, ids.dims()[last] as u32, &self.device)?.reshape(ids.shape().clone())?;
            let inverse = ids.zeros_like()?;
            inverse.scatter_set(ids, &along, last)?;
            Ok(inverse)
        };
        let own = pieces.iter().map(|p| places(&p.argsort(descending)?)).collect::<Result<Vec<_>>>()?;
        let mut at = own.clone();
        for i in 0..pieces.len() {
            for j in i + 1..pieces.len() {
                let both = places(&Tensor::cat(&[pieces[i].clone(), pieces[j].clone()], last)?.argsort(descending)?)?;
                let (ni, nj) = (pieces[i].dims()[last], pieces[j].dims()[last]);
                at[i] = at[i].add(&both.narrow(last, 0, ni)?.sub(&own[i])?)?;
                at[j] = at[j].add(&both.narrow(last, ni, nj)?.sub(&own[j])?)?;
            }
        }
        let out = Tensor::zeros(self.shape().clone(), DType::U32, &self.device)?;
        for (&(a, b), at) in ranges.iter().zip(&at) {
            out.scatter_set(at, &Tensor::arange(a as u32, b as u32, &self.device)?.reshape(at.shape().clone())?, last)?;
        }
        Ok(out)
    }

    /// `self [.., M, K]` times `rhs [.., K, N]` (batch dims broadcast alike) where a row of an
    /// operand in parts crosses two parts, so that no split of the output fits: partial products
    /// over ranges of K inside one part of each, summed (16-bit floats in f32).
    pub(super) fn matmul_parts(&self, rhs: &Tensor) -> Result<Tensor> {
        let n = self.rank();
        let k = self.dims()[n - 1];
        if self.dims()[n - 2] > 1 && self.ranges(n - 1, k)?.is_none() {
            return self.line_by_line(n - 2, |row| row.matmul(rhs));
        }
        self.summed_over("matmul", n - 1, rhs, n - 2, |x, y| x.matmul(y))
    }

    /// A convolution (`groups` 1) of images that cross parts, where no split by images fits:
    /// partial convolutions over ranges of input channels lying in one part of the images and of
    /// the kernel, summed (16-bit floats in f32; a convolution is a sum over its input channels);
    /// an image at a time where several images cross.
    pub(super) fn conv_parts<const N: usize>(&self, k: &Tensor, op: ConvOp, p: &ConvParams<N>) -> Result<Tensor> {
        let c = self.dims()[1];
        if self.dims()[0] > 1 && self.ranges(1, c)?.is_none() {
            return self.line_by_line(0, |image| image.conv(k, op, p));
        }
        // The kernel's input channels: dim 1 of a convolution's, dim 0 of a transposed one's.
        let kd = if op.is_transposed() { 0 } else { 1 };
        self.summed_over(op.name(), 1, k, kd, |x, w| x.conv(w, op, p))
    }

    /// `f` on the windows of `self` along `d` and of `other` along `od` (the same size) over
    /// ranges lying in one part of each, summed (16-bit floats in f32), in this dtype: an op
    /// that sums over that dim (matmul's K, a convolution's input channels).
    fn summed_over(
        &self,
        op: &'static str,
        d: usize,
        other: &Tensor,
        od: usize,
        f: impl Fn(&Tensor, &Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let (n, mut ends) = (self.dims()[d], vec![]);
        for (t, td) in [(self, d), (other, od)] {
            let r = t.ranges(td, n)?.ok_or_else(|| t.cannot_split(op))?;
            ends.extend(r.into_iter().map(|(_, b)| b));
        }
        ends.sort_unstable();
        ends.dedup();
        let mut sum: Option<Tensor> = None;
        let mut a = 0;
        for b in ends {
            let window = |t: &Tensor, d: usize| -> Result<Tensor> {
                t.narrow(d, a, b - a)?.window()?.ok_or_else(|| t.cannot_split(op))
            };
            let part = f(&window(self, d)?, &window(other, od)?)?.to_dtype(sum_dtype(self.dtype))?;
            sum = Some(match sum {
                None => part,
                Some(s) => s.add(&part)?,
            });
            a = b;
        }
        sum.ok_or_else(|| self.cannot_split(op))?.to_dtype(self.dtype)
    }

    /// Ranges of `dim` (of size `n`) whose rows each lie in one part, largest first from 0;
    /// `None` if a single row does not.
    fn ranges(&self, dim: usize, n: usize) -> Result<Option<Vec<(usize, usize)>>> {
        let Some(bounds) = self.part_bounds()? else { return Ok(Some(vec![(0, n)])) };
        let mut out = vec![];
        let mut a = 0;
        while a < n {
            let fits = |e: usize| fits(&bounds, &self.layout.narrow(dim, a, e - a).ok()?);
            let Some(b) = largest(a, n, fits) else { return Ok(None) };
            out.push((a, b));
            a = b;
        }
        Ok(Some(out))
    }

    fn cannot_split(&self, op: &'static str) -> Error {
        let bytes = self.elem_count() as u64 * self.dtype.size_in_bytes() as u64;
        Error::LimitExceeded {
            backend: self.device.kind(),
            what: format!("{op}: an operand stored in parts whose rows along the op's dim cross two parts"),
            needed: bytes,
            limit: limit(&self.device),
        }
    }
}

/// The dtype partial results of `dtype` are summed in: f32 for the 16-bit floats (as the
/// kernels accumulate), else their own.
fn sum_dtype(dtype: DType) -> DType {
    if matches!(dtype, DType::F16 | DType::BF16) { DType::F32 } else { dtype }
}

/// Whether the elements `l` reaches lie in one part of those `bounds` delimit.
fn fits(bounds: &[usize], l: &Layout) -> Option<()> {
    let (lo, hi) = span(l);
    let i = bounds.partition_point(|&b| b <= lo).checked_sub(1)?;
    (i + 1 < bounds.len() && hi < bounds[i + 1]).then_some(())
}

/// The largest `e` in `a + 1..=b` with `ok(e)`, where `ok` holds up to some point and not
/// after; `None` if `ok(a + 1)` does not hold.
fn largest(a: usize, b: usize, ok: impl Fn(usize) -> Option<()>) -> Option<usize> {
    ok(a + 1)?;
    let (mut lo, mut hi) = (a + 1, b);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if ok(mid).is_some() { lo = mid } else { hi = mid - 1 }
    }
    Some(lo)
}

/// Whether an op on `operands` making `out` must split: an operand is stored in parts, or the
/// output would not fit one buffer (cheap: no lock, no allocation).
pub(super) fn needed(out: &Out, operands: &[&Tensor]) -> bool {
    let bytes = (out.shape.elem_count() as u64).saturating_mul(out.dtype.size_in_bytes() as u64);
    operands.iter().any(|t| t.in_parts()) || operands.first().is_some_and(|t| bytes > limit(&t.device))
}

/// An op run as pieces along one output dim when an operand is stored in parts or its output
/// would not fit one buffer: each piece's operands are the op's, narrowed along the dims that
/// move with the output's, each inside one part, and the pieces' outputs are joined (along the
/// leading dim as the parts of the output, elsewhere copied into one buffer).
pub(super) struct Split<'a> {
    op: &'static str,
    out: &'a Out,
    /// Each operand as the op takes it, and for each output dim the operand's dim that moves
    /// with it (`None`: the operand is whole in every piece along that dim).
    operands: Vec<(Tensor, Vec<Option<usize>>)>,
    /// Output dims the op cannot split (a softmax's dim, a reduction's).
    fixed: Vec<usize>,
}

impl<'a> Split<'a> {
    /// An op whose operands have the output's shape (broadcast views): dim `i` with dim `i`.
    pub(super) fn pointwise(op: &'static str, out: &'a Out, operands: &[Tensor]) -> Split<'a> {
        let same: Vec<Option<usize>> = (0..out.shape.rank()).map(Some).collect();
        Split { op, out, operands: operands.iter().map(|t| (t.clone(), same.clone())).collect(), fixed: vec![] }
    }

    /// An op with its own dim maps.
    pub(super) fn mapped(op: &'static str, out: &'a Out, operands: Vec<(Tensor, Vec<Option<usize>>)>) -> Split<'a> {
        Split { op, out, operands, fixed: vec![] }
    }

    /// With output dims the op cannot split.
    pub(super) fn fixed(mut self, dims: &[usize]) -> Split<'a> {
        self.fixed = dims.to_vec();
        self
    }

    /// The op's output through `f` run on each piece's operands (where [`needed`] says so).
    pub(super) fn run(self, f: impl Fn(&[Tensor]) -> Result<Tensor>) -> Result<Tensor> {
        self.run_at(|x, _| f(x))
    }

    /// As [`Split::run`], `f` also given where its piece starts along the dim split (0 for the
    /// whole op): a dropout's mask at its stream position.
    pub(super) fn run_at(self, f: impl Fn(&[Tensor], usize) -> Result<Tensor>) -> Result<Tensor> {
        let dev = self.operands[0].0.device.clone();
        let limit = limit(&dev);
        let bytes = (self.out.shape.elem_count() as u64).saturating_mul(self.out.dtype.size_in_bytes() as u64);
        self.out.shape.check(self.op, self.out.dtype)?;
        walkable(&dev, self.op, self.out.shape.elem_count(), self.out.dtype)?;
        if bytes > limit && !dispatch!(dev, |b| b.holds_parts()) {
            let n = self.out.shape.elem_count();
            let what = format!("{}: an output of {n} elements, past the device's memory", self.op);
            return Err(Error::LimitExceeded { backend: dev.kind(), what, needed: bytes, limit });
        }
        let mut bounds = vec![];
        for (t, _) in &self.operands {
            bounds.push(t.part_bounds()?);
        }
        let dims = self.out.shape.dims();
        if bytes <= limit
            && self
                .operands
                .iter()
                .zip(&bounds)
                .all(|((t, _), b)| b.as_ref().is_none_or(|b| fits(b, &t.layout).is_some()))
        {
            return self.pieces(&dev, &f, usize::MAX, &[(0, 1)], true);
        }
        // A dim no operand moves with would give each piece the whole op again.
        let splittable =
            |d: &usize| dims[*d] > 1 && !self.fixed.contains(d) && self.operands.iter().any(|(_, m)| m[*d].is_some());
        for d in (0..dims.len()).filter(splittable) {
            let leading = dims[..d].iter().all(|&n| n == 1);
            let slice = bytes / dims[d] as u64;
            if (!leading && bytes > limit) || slice > limit {
                continue;
            }
            let step = (limit / slice.max(1)).min(dims[d] as u64) as usize;
            let mut ranges = vec![];
            let mut a = 0;
            while a < dims[d] {
                let fit = |e: usize| {
                    self.operands.iter().zip(&bounds).try_for_each(|((t, map), b)| match (b, map[d]) {
                        (None, _) => Some(()),
                        (Some(b), Some(k)) => fits(b, &t.layout.narrow(k, a, e - a).ok()?),
                        (Some(b), None) => fits(b, &t.layout),
                    })
                };
                let Some(b) = largest(a, (a + step).min(dims[d]), fit) else { break };
                ranges.push((a, b));
                a = b;
            }
            if a == dims[d] {
                return self.pieces(&dev, &f, d, &ranges, bytes <= limit);
            }
        }
        // Operands that no such split fits (a row crossing parts), or an output past one buffer:
        // output pieces along the first dim that splits and brings each operand crossing parts
        // within one part's size once it and the later dims are cut to single rows (else the op's
        // own fallback, such as an embedding's clamped ids, does better), as many rows as fit a
        // buffer (at least one), each piece splitting again along later dims.
        let helps = |d: usize| {
            self.operands.iter().zip(&bounds).all(|((t, map), b)| match b {
                Some(b) if fits(b, &t.layout).is_none() => {
                    let most = b.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
                    let mut l = t.layout.clone();
                    for k in (d..dims.len()).filter(splittable).filter_map(|e| map[e]) {
                        l = l.narrow(k, 0, 1).unwrap_or(l);
                    }
                    let (lo, hi) = span(&l);
                    map[d].is_some() && hi - lo < most
                }
                _ => true,
            })
        };
        if let Some(d) = (0..dims.len()).filter(splittable).find(|&d| helps(d)) {
            // At most half the dim, so that each piece is smaller than the op.
            let step = (limit / (bytes / dims[d] as u64).max(1)) as usize;
            let step = step.clamp(1, dims[d].div_ceil(2));
            let ranges: Vec<_> = (0..dims[d]).step_by(step).map(|a| (a, (a + step).min(dims[d]))).collect();
            return self.pieces(&dev, &f, d, &ranges, bytes <= limit);
        }
        let needed = self.operands.iter().map(|(t, _)| t.elem_count() as u64 * t.dtype.size_in_bytes() as u64);
        Err(Error::LimitExceeded {
            backend: dev.kind(),
            what: format!(
                "{}: operands stored in parts, or an output past one buffer, that no split along one output dim \
                 fits in one buffer each",
                self.op
            ),
            needed: needed.chain([bytes]).max().unwrap_or(bytes),
            limit,
        })
    }

    /// Runs `f` on the operands of each range of output dim `d` (`usize::MAX`: the whole op at
    /// once) and joins the outputs: copied into one buffer if the whole fits (`fits_one`), as the
    /// parts of the output where `d` leads, else copied into an output in parts.
    fn pieces(
        &self,
        dev: &Device,
        f: &impl Fn(&[Tensor], usize) -> Result<Tensor>,
        d: usize,
        ranges: &[(usize, usize)],
        fits_one: bool,
    ) -> Result<Tensor> {
        let mut outs = vec![];
        for &(a, b) in ranges {
            let mut xs = vec![];
            for (t, map) in &self.operands {
                let v = match map.get(d).copied().flatten() {
                    Some(k) => t.narrow(k, a, b - a)?,
                    None => t.clone(),
                };
                // An operand crossing two parts (only past one output buffer) splits again.
                xs.push(v.window()?.unwrap_or(v));
            }
            outs.push(f(&xs, a)?);
        }
        if outs.len() == 1 {
            return Ok(outs.remove(0));
        }
        // Pieces along a dim after one of more than one row, or pieces themselves in parts: one
        // output, in parts if it must be, written piece by piece.
        let leading = self.out.shape.dims()[..d].iter().all(|&n| n == 1);
        if fits_one || !leading || outs.iter().any(Tensor::in_parts) {
            return Tensor::cat(&outs, d);
        }
        // Neighbouring pieces joined into one buffer while they fit one (a cast to a narrower
        // dtype makes pieces smaller than the limit): fewer parts, fewer pieces in later ops.
        let size = self.out.dtype.size_in_bytes() as u64;
        let limit = limit(dev);
        let mut groups: Vec<Vec<Tensor>> = vec![];
        for o in outs {
            let bytes = |g: &Vec<Tensor>| g.iter().map(|t| t.elem_count() as u64 * size).sum::<u64>();
            match groups.last_mut() {
                Some(g) if bytes(g) + o.elem_count() as u64 * size <= limit => g.push(o),
                _ => groups.push(vec![o]),
            }
        }
        let (mut parts, mut bounds, mut flags) = (vec![], vec![0], vec![]);
        for g in groups {
            let o = if g.len() == 1 { g[0].clone() } else { Tensor::cat(&g, d)? };
            parts.push(o.own_storage()?);
            bounds.push(bounds[bounds.len() - 1] + o.elem_count());
            flags.push(o.status().flags());
        }
        let storage = Storage::Parts(Box::new(Parts { parts, bounds, dtype: self.out.dtype }));
        Ok(Tensor::from_parts(storage, self.out.shape.clone(), Status::of(flags, dev), dev))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_hold_whole_trailing_blocks() {
        // 10 rows of 3 f32 under 40 bytes: 10 elements fit, 9 in whole rows.
        assert_eq!(part_len(&Shape::new([10, 3]), DType::F32, 40), Some(9));
        assert_eq!(part_len(&Shape::new([10, 3]), DType::F32, 120), None);
        // A row past the limit: whole elements.
        assert_eq!(part_len(&Shape::new([2, 30]), DType::F32, 40), Some(10));
        assert_eq!(part_len(&Shape::new([4, 2, 5]), DType::F32, 48), Some(10));
    }

    #[test]
    fn the_largest_end_is_found() {
        assert_eq!(largest(3, 20, |e| (e <= 11).then_some(())), Some(11));
        assert_eq!(largest(3, 20, |e| (e <= 3).then_some(())), None);
        assert_eq!(largest(3, 4, |_| Some(())), Some(4));
        let bounds = [0, 9, 18, 20];
        assert!(fits(&bounds, &Layout::contiguous_with_offset([3, 3], 9)).is_some());
        assert!(fits(&bounds, &Layout::contiguous_with_offset([3, 3], 10)).is_none());
    }
}
