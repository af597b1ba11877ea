//! Reductions on wgpu (`shaders/reduce.wgsl`). The input is viewed with the kept dims outer and
//! the reduced dims inner (in their order for arg ops, so that they see row-major flat indices;
//! by falling stride otherwise), each group merged to its fewest dims. Two kernels walk that
//! view, each also in a wide form that loads 16-byte words when the layout is aligned to them:
//! - `rows`: T invocations per output striding over its reduced elements, then a
//!   shared-memory tree, when those elements are the closely spaced ones (a sum over the last
//!   dim);
//! - `cols`: neighbouring invocations take neighbouring outputs (a word of them when wide),
//!   so that loads coalesce, and T invocations per output split the reduced elements, when
//!   neighbouring outputs are the closely spaced ones (a sum over the first dim).
//!
//! When that leaves too few invocations for the device, each output's extent is cut into
//! chunks reduced to partials (in the accumulator type, with indices for arg ops) and a second
//! pass reduces the partials. Float sums accumulate in f32 (f64 for f64), f32 sums with a
//! compensation term so that they round about once; integer sums wrap.

mod code;

use super::repr::Repr;
use super::{Kernel as Compiled, KernelKey, WgpuBackend, WgpuStorage};
use crate::backend::ReduceOps;
use crate::spec::reduce::ReduceOp;
use crate::{BackendKind, DType, Error, Layout, Result};
pub use code::shader_variants;
pub(crate) use code::{Kernel, Stage};
use code::{WG, partial_dtype, per_word16, reduce_spec};

/// Invocations a reduction should keep busy before its extent is not cut into chunks. On an
/// H200, [4096,16384] f32 over dim 0: 2^17 -> 96 us (sum) / 96 us (max), 2^18 -> 78 / 80,
/// 2^19 -> 84 / 84.
const TARGET_INVOCATIONS: u64 = 1 << 18;
/// Elements per invocation below which an extent is not cut further.
const MIN_PER_INVOCATION: u64 = 16;
/// Columns per workgroup of the cols kernels, at most: a warp's loads span a row segment of
/// 128 bytes (1 KiB wide) while the other lanes of the workgroup split the rows.
const COLS_X: u64 = 64;

/// The input seen as kept dims (outer, row-major over the outputs) then reduced dims, each
/// group with size-1 dims dropped and mergeable neighbours merged; (size, stride) pairs.
#[derive(Clone, Debug, PartialEq, Eq)]
struct View {
    offset: u64,
    kept: Vec<(u64, u64)>,
    red: Vec<(u64, u64)>,
}

fn merged(dims: impl Iterator<Item = (usize, usize)>) -> Vec<(u64, u64)> {
    let (sizes, strides): (Vec<usize>, Vec<usize>) = dims.unzip();
    let (sizes, strides) = crate::layout::coalesce(&sizes, &[&strides]);
    sizes.into_iter().zip(&strides[0]).map(|(n, &s)| (n as u64, s as u64)).collect()
}

impl View {
    /// `arg`: the reduced dims keep their order (flat indices); otherwise they are ordered by
    /// falling stride, so that the innermost is the closest spaced.
    fn new(l: &Layout, dims: &[usize], arg: bool) -> View {
        let all = l.dims().iter().copied().zip(l.strides().iter().copied());
        let kept = merged(all.clone().enumerate().filter(|(d, _)| !dims.contains(d)).map(|(_, x)| x));
        let mut red: Vec<(usize, usize)> = all.enumerate().filter(|(d, _)| dims.contains(d)).map(|(_, x)| x).collect();
        if !arg {
            red.sort_by_key(|&(_, s)| std::cmp::Reverse(s));
        }
        View { offset: l.offset() as u64, kept, red: merged(red.into_iter()) }
    }

    fn outputs(&self) -> u64 {
        self.kept.iter().map(|d| d.0).product()
    }

    fn extent(&self) -> u64 {
        self.red.iter().map(|d| d.0).product()
    }

    /// How to run one pass: rows when the reduced elements of an output are the closely
    /// spaced ones, cols when neighbouring outputs are; wide when the input is read in whole
    /// 16-byte words of `e` elements; cut into chunks if `split` and outputs are few.
    fn pass(&self, e: Option<u64>, split: bool) -> Pass {
        let (outputs, extent) = (self.outputs(), self.extent());
        let sr = self.red.last().map_or(0, |d| d.1);
        let rows = match self.kept.last() {
            None => true,
            Some(&(_, sk)) => sr == 1 || (sk != 1 && sr <= sk),
        };
        let e = e.filter(|&e| self.offset.is_multiple_of(e));
        let kernel = match (rows, e) {
            (true, Some(e))
                if self.red.len() == 1 && sr == 1 && extent % e == 0 && self.kept.iter().all(|d| d.1 % e == 0) =>
            {
                Kernel::RowsWide
            }
            (false, Some(e))
                if self.kept.last().is_some_and(|&(n, s)| s == 1 && n % e == 0)
                    && self.kept[..self.kept.len() - 1].iter().chain(&self.red).all(|d| d.1 % e == 0) =>
            {
                Kernel::ColsWide
            }
            (true, _) => Kernel::Rows,
            (false, _) => Kernel::Cols,
        };
        let e = e.unwrap_or(1);
        if matches!(kernel, Kernel::Rows | Kernel::RowsWide) {
            // T lanes per chunk over units of words (wide) or elements.
            let unit = if kernel == Kernel::RowsWide { e } else { 1 };
            let width = rows_width(extent / unit);
            let mut chunks = if split { chunks_for(outputs * width, extent / unit, width, unit) } else { 1 };
            let chunk = extent.div_ceil(chunks).next_multiple_of(unit);
            if chunk > 0 {
                chunks = extent.div_ceil(chunk);
            }
            let width = rows_width(chunk / unit);
            return Pass { kernel, chunks, chunk, width, invocations: outputs * chunks * width };
        }
        // X neighbouring columns by T lanes each per workgroup: X as wide as the columns allow
        // up to COLS_X, T the rest (fewer where the extent is short).
        let columns = if kernel == Kernel::ColsWide { outputs / e } else { outputs };
        let x0 = columns.next_power_of_two().min(COLS_X);
        let width = (WG / x0).min(rows_width(extent));
        let mut chunks = if split { chunks_for(columns * width, extent, width, 1) } else { 1 };
        let chunk = extent.div_ceil(chunks);
        if chunk > 0 {
            chunks = extent.div_ceil(chunk);
        }
        let x = WG / width;
        let invocations = (columns * chunks).div_ceil(x) * WG;
        Pass { kernel, chunks, chunk, width, invocations }
    }

    /// The metadata words after `EXTRA` (see `shaders/reduce.wgsl`).
    fn extra(&self, chunks: u64, chunk: u64, t: u64) -> Vec<u32> {
        let red = if self.red.is_empty() { vec![(1, 0)] } else { self.red.clone() };
        let mut m = vec![self.outputs(), self.extent(), chunks, chunk, t, t.trailing_zeros() as u64, self.offset, 0];
        m.push(self.kept.len() as u64);
        m.push(red.len() as u64);
        m.extend(self.kept.iter().map(|d| d.0));
        m.extend(self.kept.iter().map(|d| d.1));
        m.extend(red.iter().map(|d| d.0));
        m.extend(red.iter().map(|d| d.1));
        m.into_iter().map(|w| w as u32).collect()
    }
}

/// One pass: its kernel, each output's extent cut into `chunks` of `chunk` elements, `width`
/// invocations per chunk (rows kernels), `invocations` in all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pass {
    kernel: Kernel,
    chunks: u64,
    chunk: u64,
    width: u64,
    invocations: u64,
}

/// Invocations per chunk of a rows kernel over `units`: about four each, at most a workgroup.
fn rows_width(units: u64) -> u64 {
    units.div_ceil(4).next_power_of_two().min(WG)
}

/// How many chunks to cut each output's extent of `units` (elements, or words of `unit`
/// elements) into, when one chunk each makes `lanes` invocations, `width` per chunk: about
/// `TARGET_INVOCATIONS` in all, with at least `MIN_PER_INVOCATION` elements each.
fn chunks_for(lanes: u64, units: u64, width: u64, unit: u64) -> u64 {
    if lanes >= TARGET_INVOCATIONS {
        return 1;
    }
    let least = (MIN_PER_INVOCATION / unit).max(1);
    TARGET_INVOCATIONS.div_ceil(lanes).min(units / (width * least)).max(1)
}

fn too_large(what: String, n: u64, dtype: DType) -> Error {
    Error::LimitExceeded {
        backend: BackendKind::Wgpu,
        what: format!("{what} (kernels index with u32)"),
        needed: n.saturating_mul(dtype.size_in_bytes() as u64),
        limit: u32::MAX as u64,
    }
}

impl WgpuBackend {
    /// The kernel of `op` over `dtype` for `kernel` and `stage`: its spec built at first use,
    /// then found by what decides it.
    fn reduce_kernel(&self, op: ReduceOp, dtype: DType, kernel: Kernel, stage: Stage) -> Result<Compiled> {
        self.keyed(KernelKey::Reduce(op, dtype, kernel, stage), || reduce_spec(self.caps(), op, dtype, kernel, stage))
    }

    /// Records `pass` over `view` with `kernel`; `bufs` follow the bindings of its spec.
    fn reduce_pass(&self, (spec, pipeline): Compiled, view: &View, pass: &Pass, bufs: &[&wgpu::Buffer]) -> Result<()> {
        let meta = spec.meta(pass.invocations as u32, &[], &view.extra(pass.chunks, pass.chunk, pass.width));
        self.run(&spec, &pipeline, bufs, &meta, pass.invocations)
    }
}

impl ReduceOps for WgpuBackend {
    fn reduce(&self, x: &WgpuStorage, l: &Layout, op: ReduceOp, dims: &[usize]) -> Result<WgpuStorage> {
        let caps = self.caps();
        let out_dtype = if op.is_arg() { DType::U32 } else { x.dtype };
        let view = View::new(l, dims, op.is_arg());
        let (outputs, extent) = (view.outputs(), view.extent());
        let y = self.storage(out_dtype, outputs as usize)?;
        if outputs == 0 {
            return Ok(y);
        }
        if extent > u32::MAX as u64 {
            return Err(too_large(format!("a reduction over {extent} elements"), extent, x.dtype));
        }
        let repr = Repr::of(x.dtype, caps, op.name())?;
        // Chromium's SwiftShader (156) loses the device compiling the wide min, max and arg
        // kernels of f16 and bf16 (sum's compile): there they read element by element.
        let half = matches!(repr, Repr::F16 | Repr::F16Packed | Repr::BF16);
        let narrow = half && op != ReduceOp::Sum && self.browser_fallback();
        let pass = view.pass(per_word16(repr).filter(|_| !narrow), true);
        let xb = x.buffer();
        let input: &[&wgpu::Buffer] = if pass.kernel.wide() { &[xb, xb] } else { &[xb] };
        if pass.chunks == 1 {
            let kernel = self.reduce_kernel(op, x.dtype, pass.kernel, Stage::Whole)?;
            return self.reduce_pass(kernel, &view, &pass, &[input, &[y.buffer()]].concat()).map(|()| y);
        }
        // Partials laid out so that the second pass reads them as the first read its input:
        // rows write [outputs, chunks] (a row per output), cols write [chunks, outputs].
        let kernel = self.reduce_kernel(op, x.dtype, pass.kernel, Stage::First)?;
        let n = (outputs * pass.chunks) as usize;
        let parts = self.storage(partial_dtype(repr.compute()), n)?;
        let ids = if op.is_arg() { Some(self.storage(DType::U32, n)?) } else { None };
        let ids = ids.as_ref().map(|s| s.buffer());
        let bufs: Vec<&wgpu::Buffer> = input.iter().copied().chain([parts.buffer()]).chain(ids).collect();
        self.reduce_pass(kernel, &view, &pass, &bufs)?;
        let (kept, red) = match pass.kernel {
            Kernel::Rows | Kernel::RowsWide => ((outputs, pass.chunks), (pass.chunks, 1)),
            Kernel::Cols | Kernel::ColsWide => ((outputs, 1), (pass.chunks, outputs)),
        };
        let one = |(n, s): (u64, u64)| merged(std::iter::once((n as usize, s as usize)));
        let second = View { offset: 0, kept: one(kept), red: one(red) };
        // The rows kernel even for [chunks, outputs]: a few loads and a tree per output keep
        // this short pass off the latency of a long loop per output.
        let width = rows_width(pass.chunks);
        let pass2 = Pass { kernel: Kernel::Rows, chunks: 1, chunk: pass.chunks, width, invocations: outputs * width };
        let kernel = self.reduce_kernel(op, x.dtype, Kernel::Rows, Stage::Second)?;
        let bufs: Vec<&wgpu::Buffer> = [parts.buffer()].into_iter().chain(ids).chain([y.buffer()]).collect();
        self.reduce_pass(kernel, &second, &pass2, &bufs)?;
        Ok(y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(shape: &[usize], dims: &[usize], arg: bool, e: Option<u64>) -> Pass {
        View::new(&Layout::contiguous(shape.to_vec()), dims, arg).pass(e, true)
    }

    #[test]
    fn the_suite_long_cases_take_the_paths_they_are_meant_for() {
        let p = plan(&[4096, 16384], &[1], false, Some(4));
        assert_eq!((p.kernel, p.chunks, p.width), (Kernel::RowsWide, 1, 256));
        let p = plan(&[4096, 16384], &[0], false, Some(4));
        assert!(p.kernel == Kernel::ColsWide && p.chunks > 1, "{p:?}");
        for e in [Some(2), Some(4), Some(16), None] {
            let p = plan(&[3, 20000], &[1], true, e);
            assert!(p.chunks > 1 && p.chunk.is_multiple_of(e.unwrap_or(1)), "{e:?}: {p:?}");
            assert_eq!(p.kernel, if e.is_some() { Kernel::RowsWide } else { Kernel::Rows });
        }
        let p = plan(&[5000, 3], &[0], true, Some(4));
        assert!(p.kernel == Kernel::Cols && p.chunks > 1, "{p:?}");
        let p = plan(&[200, 300], &[0], false, Some(4));
        assert!(p.kernel == Kernel::ColsWide && p.chunks > 1, "{p:?}");
        let p = plan(&[5000, 32], &[0], true, Some(16));
        assert!(p.kernel == Kernel::ColsWide && p.chunks > 1, "{p:?}");
        let p = plan(&[200, 300], &[0, 1], false, Some(4));
        assert!(p.kernel == Kernel::RowsWide && p.chunks > 1, "{p:?}");
        // Reduced dims 0 and 2 stay apart (rank 2); the rows walk crosses inner rows of 7.
        let v = View::new(&Layout::contiguous([64, 300, 7]), &[0, 2], true);
        assert_eq!((v.kept.clone(), v.red.clone()), (vec![(300, 7)], vec![(64, 2100), (7, 1)]));
        assert_eq!(v.pass(Some(4), true).kernel, Kernel::Rows);
    }

    #[test]
    fn sums_reorder_reduced_dims_to_read_the_closest_spaced_innermost() {
        let t = Layout::contiguous([7, 300, 64]).permute(&[2, 1, 0]).unwrap_or_else(|e| panic!("{e}"));
        let v = View::new(&t, &[0, 2], false);
        assert_eq!(v.red, vec![(7, 19200), (64, 1)]);
        assert_eq!(View::new(&t, &[0, 2], true).red, vec![(64, 1), (7, 19200)]);
    }
}
