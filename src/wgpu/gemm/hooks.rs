//! Test and tuning hooks, hidden from the docs (`wgpu::gemm_hooks`): the suite forces every
//! tile configuration and split of K through them at edge sizes, and the main job's bench sweep
//! (`RWO_GEMM_KERNELS`) times each kernel it lists; both read back which kernel a GEMM took.
//! They act on what the calling thread records inside the closure, on any device, and are the
//! only way besides the tables (and `Tune::gemm_split`, per device) to change which GEMM kernel
//! runs.

use super::table::TABLE;
pub use super::tiles::{CoopTiles, Kernel, MatVec, MvTiles, Tiles};
use std::cell::Cell;

thread_local! {
    /// The kernel of the last GEMM this thread recorded.
    static LAST: Cell<Option<Kernel>> = const { Cell::new(None) };
    /// A kernel forced by [`with_kernel`].
    static FORCED: Cell<Option<Kernel>> = const { Cell::new(None) };
    /// The parts of K of the last GEMM this thread recorded.
    static LAST_PARTS: Cell<usize> = const { Cell::new(1) };
    /// Parts of K forced by [`with_parts`].
    static FORCED_PARTS: Cell<Option<usize>> = const { Cell::new(None) };
    /// The GEMMs this thread recorded.
    static RECORDED: Cell<usize> = const { Cell::new(0) };
}

/// The matmuls and convolutions this thread recorded on wgpu devices so far (a count that only
/// grows: a test takes the difference across the ops it checks).
pub fn recorded() -> usize {
    RECORDED.with(Cell::get)
}

/// The kernel of the last matmul or convolution this thread recorded on a wgpu device.
pub fn last_kernel() -> Option<Kernel> {
    LAST.with(Cell::get)
}

/// The parts of K (split-K) of the last matmul or convolution this thread recorded on a wgpu
/// device (1: not split).
pub fn last_parts() -> usize {
    LAST_PARTS.with(Cell::get)
}

/// Runs `f` with every tiled or cooperative GEMM on this thread forced to `k` (for timing tile
/// configurations against each other); a matrix-vector `k` forces its split on matrix-vector
/// shapes instead.
pub fn with_kernel<R>(k: Kernel, f: impl FnOnce() -> R) -> R {
    let before = FORCED.with(|c| c.replace(Some(k)));
    let out = f();
    FORCED.with(|c| c.set(before));
    out
}

/// Runs `f` with every tiled or cooperative matmul on this thread taking K in `parts` parts
/// (fewer where K is short: each part but the last takes a multiple of 64; never f64's).
pub fn with_parts<R>(parts: usize, f: impl FnOnce() -> R) -> R {
    let before = FORCED_PARTS.with(|c| c.replace(Some(parts)));
    let out = f();
    FORCED_PARTS.with(|c| c.set(before));
    out
}

/// The tiled configurations of matmul's table (for tests that force each in turn).
pub fn table_tiles() -> [Tiles; 5] {
    TABLE.tiled()
}

/// The cooperative-matrix configurations of matmul's table (likewise, where the adapter has
/// them).
pub fn table_coop_tiles() -> [CoopTiles; 2] {
    TABLE.cooperative()
}

/// The kernel and parts of K this thread forces (`None`: the table's).
pub(crate) fn forced() -> (Option<Kernel>, Option<usize>) {
    (FORCED.with(Cell::get), FORCED_PARTS.with(Cell::get))
}

/// Notes the kernel and parts of K of a GEMM being recorded.
pub(crate) fn record(k: Kernel, parts: usize) {
    LAST.with(|c| c.set(Some(k)));
    LAST_PARTS.with(|c| c.set(parts));
    RECORDED.with(|c| c.set(c.get() + 1));
}
