//! Tensors larger than the largest buffer a kernel can bind (ARCHITECTURE.md, "Tensors past the
//! binding limit"): such a tensor's data is a [`Parts`] storage, consecutive element ranges each
//! in an ordinary storage of its backend, and an op on it runs as pieces ([`Split`]) whose
//! operands each lie inside one part and whose outputs each fit one buffer.

use super::status::Status;
use super::{Cell, Tensor};
use crate::backend::{BackendKind, Memory, Readback};
use crate::device::{BackendOf, Storage, dispatch};
use crate::spec::Out;
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
        let cell = Cell::new(s, None, Status::of(self.status().flags(), &self.device));
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

    /// Rows of `self` (stored in parts) along `dim` at `ids`, part by part: for each range of
    /// rows lying in one part, the ids clamped into it select from its window (so ids outside
    /// it read an edge row), and a `where` keeps the rows of the ids the clamp left alone (the
    /// clamp, the comparison and the shift fuse into one kernel). Ids out of range are flagged
    /// against the whole dim by a select from a broadcast view of its length.
    pub(super) fn index_select_parts(&self, ids: &Tensor, dim: usize, out: &Out) -> Result<Tensor> {
        let n = self.dims()[dim];
        let whole = Tensor::zeros([1], DType::U8, &self.device)?.broadcast_as([n])?;
        let checked = whole.index_select(ids, 0)?;
        let mut at = vec![1; out.shape.rank()];
        at[dim] = ids.elem_count();
        // The largest id the ids' dtype holds: ranges past it hold none of them.
        let top = match ids.dtype {
            DType::U8 => u8::MAX as usize,
            DType::U32 => u32::MAX as usize,
            _ => i64::MAX as usize,
        };
        let mut merged: Option<Tensor> = None;
        for (a, b) in self.ranges(dim, n)?.ok_or_else(|| self.cannot_split("index_select"))? {
            if a > top {
                break;
            }
            let rows = self.narrow(dim, a, b - a)?.window()?.ok_or_else(|| self.cannot_split("index_select"))?;
            let clamped = ids.clamp(Scalar::I64(a as i64), Scalar::I64((b - 1).min(top) as i64))?;
            let local = if a == 0 { clamped.clone() } else { clamped.sub(Scalar::I64(a as i64))? };
            let picked = rows.index_select(&local, dim)?;
            merged = Some(match merged {
                None => picked,
                Some(m) => {
                    let inside = clamped.eq(ids)?.reshape(at.clone())?.broadcast_as(out.shape.clone())?;
                    inside.where_cond(&picked, &m)?
                }
            });
        }
        let merged = merged.ok_or_else(|| self.cannot_split("index_select"))?;
        merged.status().absorb(checked.status().flags());
        Ok(merged)
    }

    /// `write(window, piece)` for each range of one dim along which this view's rows lie in
    /// one part: the window over it, and `src` (of this view's shape) narrowed alike. An
    /// in-place write into a tensor in parts (`slice_set`, `cat` past one buffer).
    pub(super) fn write_parts(&self, src: &Tensor, write: impl Fn(&Tensor, &Tensor) -> Result<()>) -> Result<()> {
        for d in 0..self.rank() {
            let Some(ranges) = self.ranges(d, self.dims()[d])? else { continue };
            for (a, b) in ranges {
                let w = self.narrow(d, a, b - a)?.window()?.ok_or_else(|| self.cannot_split("a write"))?;
                write(&w, &src.narrow(d, a, b - a)?)?;
            }
            return Ok(());
        }
        Err(self.cannot_split("a write"))
    }

    /// `f` on the windows of this view, range by range as [`Tensor::write_parts`] (`fill_`).
    pub(super) fn in_windows(&self, f: impl Fn(&Tensor) -> Result<()>) -> Result<()> {
        self.write_parts(self, |w, _| f(w))
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

    /// `op` (sum, min or max) over `dims` of this tensor in parts, where no split of the kept
    /// dims fits: one partial result per range of a reduced dim whose rows each lie in one part
    /// (a 16-bit sum's partials in f32, as the kernels accumulate it), joined and reduced again.
    /// The reduced dims kept, as size 1.
    pub(super) fn reduce_parts(&self, op: ReduceOp, dims: &[usize]) -> Result<Tensor> {
        for &r in dims {
            let Some(ranges) = self.ranges(r, self.dims()[r])? else { continue };
            let wide = op == ReduceOp::Sum && matches!(self.dtype, DType::F16 | DType::BF16);
            let mut partials = vec![];
            for (a, b) in ranges {
                let piece = self.narrow(r, a, b - a)?.window()?.ok_or_else(|| self.cannot_split(op.name()))?;
                let piece = if wide { piece.to_dtype(DType::F32)? } else { piece };
                partials.push(piece.reduce(op, dims.to_vec(), true)?);
            }
            let all = Tensor::cat(&partials, r)?.reduce(op, dims.to_vec(), true)?;
            return all.to_dtype(self.dtype);
        }
        Err(self.cannot_split(op.name()))
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
        let dev = self.operands[0].0.device.clone();
        let limit = limit(&dev);
        let bytes = (self.out.shape.elem_count() as u64).saturating_mul(self.out.dtype.size_in_bytes() as u64);
        self.out.shape.check(self.op, self.out.dtype)?;
        walkable(&dev, self.op, self.out.shape.elem_count(), self.out.dtype)?;
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
        let splittable = |d: &usize| dims[*d] > 1 && !self.fixed.contains(d);
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
        // An output past one buffer whose operands no such split fits: output pieces along the
        // leading dim, each op on operands still in parts splitting again (into one buffer).
        let lead = (0..dims.len()).find(|&d| dims[d] > 1).filter(splittable);
        if let Some(d) = lead.filter(|&d| bytes > limit && bytes / dims[d] as u64 <= limit) {
            let step = (limit / (bytes / dims[d] as u64).max(1)) as usize;
            let ranges: Vec<_> = (0..dims[d]).step_by(step).map(|a| (a, (a + step).min(dims[d]))).collect();
            return self.pieces(&dev, &f, d, &ranges, false);
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
    /// once) and joins the outputs: copied into one buffer if the whole fits (`fits_one`), else
    /// as the parts of the output (`d` then leads).
    fn pieces(
        &self,
        dev: &Device,
        f: &impl Fn(&[Tensor]) -> Result<Tensor>,
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
            outs.push(f(&xs)?);
        }
        if outs.len() == 1 {
            return Ok(outs.remove(0));
        }
        if fits_one {
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
            flags.extend(o.status().flags());
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
