//! Reductions on the native backend (`hip/reduce.hip`).
//!
//! The layout is split into kept dims (one output each, row-major) and reduced dims (walked
//! row-major: an element's flat index there is what the arg ops return), each merged and cut
//! by [`kernel::plan`] into launches a kernel can index. Per launch, the kernel that reads
//! memory in order is chosen: `rows` (threads of a group share one output's extent) where the
//! innermost reduced dim is the densest, `cols` (threads map to consecutive outputs) where the
//! innermost kept dim is. When the outputs are too few to fill the device, extents are cut
//! into chunks whose partial states (the accumulator, plus the index for the arg ops) a second
//! pass over `[outputs][chunks]` reduces. f32 sums accumulate in f64, so that they round about
//! once as the cpu reference's do.

use super::kernel::{self, Args, BLOCK, Part};
use super::ptr::DevicePtr;
use super::{NativeBackend, NativeStorage, Runtime};
use crate::backend::ReduceOps;
use crate::spec::reduce::ReduceOp;
use crate::spec::{Family, kernel_name};
use crate::{DType, Layout, Result};

/// Elements each thread of a row group should take at least (sets the group size).
const ELEMS_PER_THREAD: u64 = 8;
/// A chunk gives each of its threads at least this many elements.
const MIN_CHUNK_PER_THREAD: u64 = 32;
/// Threads that keep a multiprocessor busy (what splitting extents aims for).
const THREADS_PER_SM: u64 = 2048;
/// Outputs a `cols` block covers at most (a warp's coalesced row on NVIDIA).
const MAX_COLS: u64 = 32;
/// The most chunks of a `cols` launch (`gridDim.y`).
const MAX_Y: u64 = 65535;

/// The type partial states are kept in: what the kernels accumulate in (`acc<Op, T>::A` in
/// `hip/reduce.hip`): f64 for f32 sums, else the compute type.
fn state_dtype(op: ReduceOp, dtype: DType) -> DType {
    match dtype {
        DType::F32 if op == ReduceOp::Sum => DType::F64,
        DType::F16 | DType::BF16 | DType::F32 => DType::F32,
        DType::F64 => DType::F64,
        DType::U8 | DType::U32 => DType::U32,
        DType::I64 => DType::I64,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `group` threads (a power of two <= BLOCK) per output and chunk.
    Rows { group: u32 },
    /// `bx` consecutive outputs per block (a power of two <= 32), BLOCK / bx threads each.
    Cols { bx: u32 },
}

/// How one launch of the first pass reads: the kernel, and the extent cut into `chunks` of
/// `chunk_len` elements (the last maybe shorter, none empty).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Launch {
    kind: Kind,
    chunks: u64,
    chunk_len: u64,
}

fn pow2_at_least(v: u64, cap: u64) -> u64 {
    v.max(1).next_power_of_two().min(cap)
}

/// `len` cut into about `chunks` chunks (multiples of 64 elements when cut, so vector loads stay
/// aligned): (chunks, chunk_len), every chunk non-empty.
fn cut(len: u64, chunks: u64) -> (u64, u64) {
    if chunks <= 1 {
        return (1, len);
    }
    let chunk_len = len.div_ceil(chunks).next_multiple_of(64);
    (len.div_ceil(chunk_len), chunk_len)
}

/// Rows over `m` outputs of `r` elements each, split so about `sms * THREADS_PER_SM` threads work.
fn rows_launch(m: u64, r: u64, sms: u64) -> Launch {
    let group = pow2_at_least(r.div_ceil(ELEMS_PER_THREAD), u64::from(BLOCK));
    let want = sms * THREADS_PER_SM / group;
    let chunks = if m >= want { 1 } else { want.div_ceil(m).min(r.div_ceil(group * MIN_CHUNK_PER_THREAD)) };
    let (chunks, chunk_len) = cut(r, chunks);
    let group = pow2_at_least(chunk_len.div_ceil(ELEMS_PER_THREAD), u64::from(BLOCK)) as u32;
    Launch { kind: Kind::Rows { group }, chunks, chunk_len }
}

/// The launch for kept part `kp` and reduced part `rp` of the input.
fn choose(kp: &Part, rp: &Part, sms: u64) -> Launch {
    let (m, r) = (kp.dims.n, rp.dims.n);
    let inner = |p: &Part| {
        (p.dims.rank > 0).then(|| (p.dims.d[p.dims.rank as usize - 1], p.views[0].s[p.dims.rank as usize - 1]))
    };
    // Neighbouring outputs closer in memory than neighbouring reduced elements: columns.
    let cols = match (inner(kp), inner(rp)) {
        (Some((kd, ks)), Some((_, rs))) => (ks < rs).then_some(kd),
        _ => None,
    };
    let Some(kd) = cols else { return rows_launch(m, r, sms) };
    let bx = pow2_at_least(kd, MAX_COLS);
    let by = u64::from(BLOCK) / bx;
    let blocks = m.div_ceil(bx);
    let want = sms * THREADS_PER_SM / u64::from(BLOCK);
    let chunks =
        if blocks >= want { 1 } else { want.div_ceil(blocks).min(r.div_ceil(by * MIN_CHUNK_PER_THREAD)).min(MAX_Y) };
    let (chunks, chunk_len) = cut(r, chunks);
    Launch { kind: Kind::Cols { bx: bx as u32 }, chunks, chunk_len }
}

/// Where a launch's states go: the output, or partials at `[o][c_base + chunk]` of
/// `[outputs][c_total]`.
#[derive(Clone, Copy)]
enum Sink {
    Out(DevicePtr),
    Partial { values: DevicePtr, ids: DevicePtr, c_total: u64, c_base: u64 },
}

impl Sink {
    fn push(self, args: &mut Args) {
        match self {
            Sink::Out(y) => args.ptr(y).ptr(DevicePtr(0)).ptr(DevicePtr(0)).u64(0).u64(0).pod(&0u32),
            Sink::Partial { values, ids, c_total, c_base } => {
                args.ptr(DevicePtr(0)).ptr(values).ptr(ids).u64(c_total).u64(c_base).pod(&1u32)
            }
        };
    }
}

/// Partial states of `len` outputs' chunks: values in the compute type, indices for arg ops.
struct Partials<R: Runtime> {
    values: NativeStorage<R>,
    ids: Option<NativeStorage<R>>,
}

impl<R: Runtime> Partials<R> {
    fn ids_ptr(&self) -> DevicePtr {
        self.ids.as_ref().map_or(DevicePtr(0), |s| s.ptr)
    }
}

impl<R: Runtime> NativeBackend<R> {
    fn partials(&self, dtype: DType, op: ReduceOp, len: u64) -> Result<Partials<R>> {
        let values = self.storage(state_dtype(op, dtype), len as usize)?;
        let ids = if op.is_arg() { Some(self.storage(DType::U32, len as usize)?) } else { None };
        Ok(Partials { values, ids })
    }

    fn sms(&self) -> u64 {
        u64::from(self.0.rt.info().multiprocessors.max(1))
    }

    /// Blocks for `items` work items of `per_block` each, capped (the kernels loop).
    fn blocks(&self, items: u64, per_block: u64) -> u32 {
        items.div_ceil(per_block).clamp(1, self.sms() * 32) as u32
    }

    /// The first pass of kept part `kp` over reduced part `rp` of `x`.
    fn first_pass(&self, name: &str, x: DevicePtr, kp: &Part, rp: &Part, la: &Launch, sink: Sink) -> Result<()> {
        let mut args = Args::default();
        args.pod(&kp.dims).pod(&kp.views[0]).pod(&rp.dims).pod(&rp.views[0]).ptr(x);
        // The arg ops' indices: rp.first is below 2^32 for them (the spec caps their extent).
        let ibase = rp.first as u32;
        let (name, grid) = match la.kind {
            Kind::Rows { group } => {
                args.pod(&group).u64(la.chunks).u64(la.chunk_len).pod(&ibase);
                let per_block = u64::from(BLOCK / group);
                (name.to_string(), [self.blocks(kp.dims.n * la.chunks, per_block), 1, 1])
            }
            Kind::Cols { bx } => {
                args.pod(&bx).u64(la.chunk_len).pod(&ibase);
                (format!("{name}_cols"), [self.blocks(kp.dims.n, u64::from(bx)), la.chunks as u32, 1])
            }
        };
        sink.push(&mut args);
        // SAFETY: {op}_{T}(Dims, View, Dims, View, x, group, chunks, chunk_len, ibase, sink..)
        // and {op}_{T}_cols(Dims, View, Dims, View, x, bx, chunk_len, ibase, sink..) get their
        // parameters in order. The parts come from the input layout, which the spec keeps
        // inside `x`; the sink has room for every output (and chunk) of the part.
        unsafe { self.launch_grid(Family::Reduce, &name, grid, BLOCK, &mut args) }
    }

    /// Reduces rows of `width` partial states of each of `m` outputs.
    fn partial_pass(&self, name: &str, from: &Partials<R>, m: u64, width: u64, la: &Launch, sink: Sink) -> Result<()> {
        let Kind::Rows { group } = la.kind else { return Err(self.error("reduce: partials are read by rows")) };
        let (width_us, m_us) = (width as usize, m as usize);
        let kp = &kernel::plan(&[m_us], &[(&[width_us], 0)])[0];
        let rp = &kernel::plan(&[width_us], &[(&[1], 0)])[0];
        let mut args = Args::default();
        args.pod(&kp.dims).pod(&kp.views[0]).pod(&rp.dims).pod(&rp.views[0]);
        args.ptr(from.values.ptr).ptr(from.ids_ptr()).pod(&group).u64(la.chunks).u64(la.chunk_len);
        sink.push(&mut args);
        let grid = [self.blocks(m * la.chunks, u64::from(BLOCK / group)), 1, 1];
        // SAFETY: {op}_{T}_partials(Dims, View, Dims, View, values, ids, group, chunks,
        // chunk_len, sink..) in order; `from` holds m * width states, the sink has room for
        // m outputs (or m * chunks partials).
        unsafe { self.launch_grid(Family::Reduce, &format!("{name}_partials"), grid, BLOCK, &mut args) }
    }

    /// Reduces kept part `kp` over every reduced part into `y` (from the part's first output).
    fn reduce_part(
        &self,
        name: &str,
        x: &NativeStorage<R>,
        op: ReduceOp,
        kp: &Part,
        rparts: &[Part],
        y: DevicePtr,
    ) -> Result<()> {
        let sms = self.sms();
        let m = kp.dims.n;
        let launches: Vec<Launch> = rparts.iter().map(|rp| choose(kp, rp, sms)).collect();
        let c_total: u64 = launches.iter().map(|l| l.chunks).sum();
        if c_total == 1 {
            return self.first_pass(name, x.ptr, kp, &rparts[0], &launches[0], Sink::Out(y));
        }
        let mut from = self.partials(x.dtype, op, m * c_total)?;
        let mut c_base = 0;
        for (rp, la) in rparts.iter().zip(&launches) {
            let sink = Sink::Partial { values: from.values.ptr, ids: from.ids_ptr(), c_total, c_base };
            self.first_pass(name, x.ptr, kp, rp, la, sink)?;
            c_base += la.chunks;
        }
        let mut width = c_total;
        loop {
            let la = rows_launch(m, width, sms);
            if la.chunks == 1 {
                return self.partial_pass(name, &from, m, width, &la, Sink::Out(y));
            }
            let to = self.partials(x.dtype, op, m * la.chunks)?;
            let sink = Sink::Partial { values: to.values.ptr, ids: to.ids_ptr(), c_total: la.chunks, c_base: 0 };
            self.partial_pass(name, &from, m, width, &la, sink)?;
            // The stream orders the release of `from` after the pass that reads it.
            (from, width) = (to, la.chunks);
        }
    }
}

impl<R: Runtime> ReduceOps for NativeBackend<R> {
    fn reduce(&self, x: &NativeStorage<R>, l: &Layout, op: ReduceOp, dims: &[usize]) -> Result<NativeStorage<R>> {
        let (shape, strides) = (l.dims(), l.strides());
        let (mut kept, mut kept_strides, mut red, mut red_strides) = (vec![], vec![], vec![], vec![]);
        for (d, (&n, &s)) in shape.iter().zip(strides).enumerate() {
            if dims.contains(&d) {
                red.push(n);
                red_strides.push(s);
            } else {
                kept.push(n);
                kept_strides.push(s);
            }
        }
        let (outputs, extent) = (kept.iter().product::<usize>(), red.iter().product::<usize>());
        let y = self.storage(if op.is_arg() { DType::U32 } else { x.dtype }, outputs)?;
        if outputs == 0 {
            return Ok(y);
        }
        if extent == 0 {
            // Only a sum gets here (the spec refuses the others): zeros, whatever the dtype.
            // SAFETY: `y` holds exactly these bytes.
            unsafe { self.0.rt.memset(y.ptr, 0, outputs * y.dtype.size_in_bytes())? };
            return Ok(y);
        }
        let name = kernel_name(op.name(), x.dtype);
        let rparts = kernel::plan(&red, &[(&red_strides, 0)]);
        for kp in kernel::plan(&kept, &[(&kept_strides, l.offset())]) {
            self.reduce_part(&name, x, op, &kp, &rparts, y.at(kp.first as usize))?;
        }
        Ok(y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(shape: &[usize], strides: &[usize], dims: &[usize]) -> (Part, Part) {
        let pick = |keep: bool| -> (Vec<usize>, Vec<usize>) {
            (0..shape.len()).filter(|d| dims.contains(d) != keep).map(|d| (shape[d], strides[d])).unzip()
        };
        let ((k, ks), (r, rs)) = (pick(true), pick(false));
        (kernel::plan(&k, &[(&ks, 0)]).remove(0), kernel::plan(&r, &[(&rs, 0)]).remove(0))
    }

    #[test]
    fn the_last_dim_reads_by_rows_and_the_first_by_columns() {
        let (kp, rp) = parts(&[4096, 16384], &[16384, 1], &[1]);
        let la = choose(&kp, &rp, 132);
        assert_eq!(la, Launch { kind: Kind::Rows { group: 256 }, chunks: 1, chunk_len: 16384 });
        let (kp, rp) = parts(&[4096, 16384], &[16384, 1], &[0]);
        let la = choose(&kp, &rp, 132);
        assert_eq!(la.kind, Kind::Cols { bx: 32 });
        assert!(la.chunks > 1 && la.chunks * la.chunk_len >= 4096 && (la.chunks - 1) * la.chunk_len < 4096);
        // A transposed view: the kept dim is the dense one.
        let (kp, rp) = parts(&[16384, 4096], &[1, 16384], &[1]);
        assert_eq!(choose(&kp, &rp, 132).kind, Kind::Cols { bx: 32 });
        // Few narrow columns: as many as there are.
        let (kp, rp) = parts(&[1000, 3], &[3, 1], &[0]);
        assert_eq!(choose(&kp, &rp, 132).kind, Kind::Cols { bx: 4 });
    }

    #[test]
    fn a_whole_reduction_is_cut_into_chunks_then_finished_in_one_pass() {
        let (kp, rp) = parts(&[1 << 26], &[1], &[0]);
        let la = choose(&kp, &rp, 132);
        assert!(la.chunks >= 132 && la.chunk_len.is_multiple_of(64), "{la:?}");
        assert!(la.chunks * la.chunk_len >= 1 << 26 && (la.chunks - 1) * la.chunk_len < 1 << 26);
        assert_eq!(rows_launch(1, la.chunks, 132).chunks, 1);
        // Short rows: one thread each.
        assert_eq!(rows_launch(1 << 20, 5, 132), Launch { kind: Kind::Rows { group: 1 }, chunks: 1, chunk_len: 5 });
        assert_eq!(cut(10, 1), (1, 10));
        assert_eq!(cut(1000, 3), (3, 384));
        assert_eq!(cut(100, 50), (2, 64));
    }
}
