//! argsort on the native backend (`hip/sort.hip`): keys mapped to order-preserving unsigned
//! integers, (key, index) pairs sorted by a bitonic network per block in shared memory, and
//! blocks of long rows merged by merge path in ping-pong buffers.

use super::kernel::{self, Args, Part};
use super::ptr::DevicePtr;
use super::{NativeBackend, NativeStorage, Runtime};
use crate::backend::SortOps;
use crate::spec::sort::SortOp;
use crate::spec::{Family, kernel_name};
use crate::{DType, Layout, Result};

/// Pairs each thread holds in registers (`SORT_E` in `hip/sort.hip`).
const E: u32 = 16;

/// Whether the keys of `dtype` take 64 bits (then a pair is a u64 key and a u32 index, else
/// one u64).
fn wide(dtype: DType) -> bool {
    matches!(dtype, DType::I64 | DType::F64)
}

/// Pairs a block sorts in shared memory (`BLOCK` of `Narrow` / `Wide` in `hip/sort.hip`).
fn block_len(dtype: DType) -> u32 {
    if wide(dtype) { 2048 } else { 4096 }
}

/// Sorted pairs of every row of a launch: keys (with their index, for narrow keys) and, for
/// wide keys, the indices.
struct Pairs<R: Runtime> {
    keys: NativeStorage<R>,
    ids: Option<NativeStorage<R>>,
}

impl<R: Runtime> Pairs<R> {
    fn ptrs(&self) -> (DevicePtr, DevicePtr) {
        (self.keys.ptr, self.ids.as_ref().map_or(DevicePtr(0), |s| s.ptr))
    }
}

impl<R: Runtime> NativeBackend<R> {
    fn pairs(&self, dtype: DType, len: usize) -> Result<Pairs<R>> {
        // u64 words; I64 is just their size.
        let keys = self.storage(DType::I64, len)?;
        let ids = if wide(dtype) { Some(self.storage(DType::U32, len)?) } else { None };
        Ok(Pairs { keys, ids })
    }

    /// Sorts the rows of `part` (outer dims of the input) into `y` (the part's first index),
    /// `n` elements of stride `step` each.
    fn argsort_part(
        &self,
        x: &NativeStorage<R>,
        part: &Part,
        n: u32,
        step: usize,
        descending: bool,
        y: DevicePtr,
    ) -> Result<()> {
        let dtype = x.dtype;
        let block = block_len(dtype);
        let threads = block / E;
        let cap = u64::from(self.0.rt.info().multiprocessors.max(1)) * 32;
        let rows = part.dims.n;
        let s = n.next_power_of_two().min(block);
        let runs = n.div_ceil(s);
        let mask = match (descending, wide(dtype)) {
            (false, _) => 0,
            (true, false) => u64::from(u32::MAX),
            (true, true) => u64::MAX,
        };
        let tiles = (rows * u64::from(runs)).div_ceil(u64::from(block / s));
        let grid = [tiles.min(cap) as u32, 1, 1];
        let len = rows as usize * n as usize;
        let from = if runs > 1 { Some(self.pairs(dtype, len)?) } else { None };
        let (pk, pi) = from.as_ref().map_or((DevicePtr(0), DevicePtr(0)), |p| p.ptrs());
        let mut args = Args::default();
        args.pod(&part.dims).pod(&part.views[0]).u64(step as u64).ptr(x.ptr).pod(&n).pod(&s).pod(&runs);
        args.u64(rows).u64(mask).ptr(y).ptr(pk).ptr(pi).pod(&u32::from(runs > 1));
        let name = kernel_name(SortOp::ArgSort.name(), dtype);
        // SAFETY: argsort_T(Dims, View, step, x, n, s, runs, rows, mask, y, pk, pi, pairs) in
        // order; the part's rows (n elements of stride `step`) lie inside `x` (the spec keeps
        // the layout there); y (or the pairs, when runs > 1) holds rows * n entries.
        unsafe { self.launch_grid(Family::Sort, &name, grid, threads, &mut args)? };
        let Some(mut from) = from else { return Ok(()) };
        // A second buffer only when there are merges before the last.
        let mut to = if u64::from(block) * 2 < u64::from(n) { Some(self.pairs(dtype, len)?) } else { None };
        let merge = if wide(dtype) { "argsort_merge_wide" } else { "argsort_merge_narrow" };
        let tiles = n.div_ceil(block);
        let grid = [(rows * u64::from(tiles)).min(cap) as u32, 1, 1];
        let mut run = u64::from(block);
        while run < u64::from(n) {
            let last = run * 2 >= u64::from(n);
            let (ak, ai) = from.ptrs();
            let (pk, pi) = match (&to, last) {
                (Some(t), false) => t.ptrs(),
                _ => (DevicePtr(0), DevicePtr(0)),
            };
            let mut args = Args::default();
            args.pod(&n).u64(rows).u64(run).pod(&tiles).ptr(ak).ptr(ai).ptr(y).ptr(pk).ptr(pi);
            args.pod(&u32::from(!last));
            // SAFETY: argsort_merge_*(n, rows, run, tiles, ak, ai, y, pk, pi, pairs) in order;
            // `from` holds rows * n sorted runs of `run` pairs, and the destination (the
            // other buffer, or y on the last pass) rows * n entries.
            unsafe { self.launch_grid(Family::Sort, merge, grid, threads, &mut args)? };
            if !last && let Some(t) = to.take() {
                to = Some(std::mem::replace(&mut from, t));
            }
            run *= 2;
        }
        Ok(())
    }
}

impl<R: Runtime> SortOps for NativeBackend<R> {
    fn argsort(&self, x: &NativeStorage<R>, l: &Layout, descending: bool) -> Result<NativeStorage<R>> {
        let total = l.elem_count();
        let y = self.storage(DType::U32, total)?;
        let Some((&n, outer)) = l.dims().split_last() else {
            return Err(crate::Error::Rank { op: "argsort", expected: "at least 1", shape: l.shape().clone() });
        };
        if total == 0 {
            return Ok(y);
        }
        if n == 1 {
            // Every row is [0].
            // SAFETY: `y` holds exactly these bytes.
            unsafe { self.0.rt.memset(y.ptr, 0, total * 4)? };
            return Ok(y);
        }
        let rank = l.rank();
        let (outer_strides, step) = (&l.strides()[..rank - 1], l.strides()[rank - 1]);
        // The spec keeps n within u32.
        let n32 = n as u32;
        for part in kernel::plan(outer, &[(outer_strides, l.offset())]) {
            self.argsort_part(x, &part, n32, step, descending, y.at(part.first as usize * n))?;
        }
        Ok(y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hip_source_agrees_on_the_pairs_per_thread() {
        let src = super::super::hip_source(Family::Sort).unwrap_or_default();
        assert!(src.contains(&format!("#define SORT_E {E}\n")));
        // Blocks are whole threads, and the merge's split search needs 64 of them.
        for dtype in DType::ALL.iter().copied() {
            assert!(block_len(dtype).is_multiple_of(E) && block_len(dtype) / E >= 64);
        }
    }
}
