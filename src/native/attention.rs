//! Attention and the rotary embeddings on the native backend (`hip/attention.hip`): one
//! flash-style pass for attention (a block per batch, kv head, tile of [`BQ`] query rows of the
//! heads sharing it and chunk of [`DC`] output columns; the scores only in shared memory), or,
//! for up to [`DEC_ROWS`] rows a kv head (decoding) whose rows are whole 16-byte vectors, the
//! decode pass (all of them and every column in one block, a short key range each, the ranges
//! combined by the block that finishes last; a kernel per row count 1, 2, 4 or 8, the rows
//! rounded up); for rope a block takes rows at a time, a thread an element of a row
//! ([`rope_grid`]). On NVIDIA sm_80 and later the halves with D and Dv up to 128 take the
//! flash-style pass's place on tensor cores (`sdpa_mma`: [`MMA_BQ`] rows a block, every column).
//! Operands are read in place through their strides.

use super::DevicePtr;
use super::dnn::{AttnBuffers, AttnDesc, Tensor4};
use super::kernel::{Args, grid, launches};
use super::usage::Path;
use super::{NativeBackend, NativeStorage, Runtime};
use crate::backend::{AttentionOps, Operand};
use crate::spec::attention::{AttentionOp, MaskKind, Sdpa, key_splits, rope_grid};
use crate::spec::{Family, kernel_name};
use crate::{DType, Layout, Result};
use bytemuck::{Pod, Zeroable};

/// Queries per block (`ATT_BQ`), output columns per block (`ATT_DC`) and threads per block
/// (`ATT_THREADS`: 16 a query row) in `hip/attention.hip`.
const BQ: u64 = 16;
const DC: u64 = 64;
const THREADS: u32 = 256;

/// Blocks per multiprocessor below which the keys are split (decoding: few query rows).
const BLOCKS_PER_MP: u64 = 8;

/// The decode pass of `hip/attention.hip`: the most query rows a kv head it takes
/// (`DEC_ROWS`), threads per block (`DEC_THREADS`), the longest q and k rows in values
/// (`DEC_DMAX`), v rows in 16-byte vectors (`DEC_VWORDS`), keys a tile (`DEC_BK`) and the most
/// key ranges a kv head (`DEC_SPLITS`).
const DEC_ROWS: u64 = 8;
const DEC_THREADS: u32 = 128;
const DEC_DMAX: usize = 256;
const DEC_VWORDS: usize = 32;
const DEC_BK: u64 = 32;
const DEC_SPLITS: u64 = 32;

/// Threads a rope block.
const ROPE_THREADS: u64 = 256;

/// Blocks per multiprocessor the decode pass's key ranges aim at (H200, q [1,32,1,128] over kv
/// [1,8,4096,128] f16: 2 24.6 us, 4 and 8 34.6).
const DEC_BLOCKS_PER_MP: u64 = 2;

/// Keys past which a decode step takes the tensor-core pass where it has one (its copies overlap
/// its work, where the decode pass waits on memory once a tile). H200, f16, us, decode pass /
/// tensor-core pass: GPT-2's step over 256 keys 8.5 / 12.3; 4 rows a kv head over 4096 keys 24.6
/// / 18.2 (1 and 2 rows: 40.1 / 43.4, 26.1 / 27.9). Between the two, not measured.
const DEC_MMA_KEYS: usize = 1024;

/// The tensor-core pass of `hip/attention.hip` (`sdpa_mma`, NVIDIA sm_80 on, f16 and bf16): query
/// rows per block (`MMA_BQ`), threads per block (`MMA_THREADS`), and the widths it is built for
/// (D and Dv padded to 64 or 128).
const MMA_BQ: u64 = 64;
const MMA_THREADS: u32 = 128;
const MMA_WIDTHS: [usize; 2] = [64, 128];

/// Query rows a head from which the DNN library's attention runs (where it takes the case)
/// instead of our passes: below them ours is faster (ARCHITECTURE.md, the attention family).
const DNN_MIN_ROWS: usize = 1024;

impl<R: Runtime> NativeBackend<R> {
    /// Runs attention on the DNN library into `y` if it takes the case: f16 or bf16, no mask,
    /// at least [`DNN_MIN_ROWS`] query rows a head, causal only where both corners agree, every
    /// operand's rows whole aligned 16-byte vectors. `false`: our kernels run it.
    fn dnn_sdpa(&self, [q, k, v]: [Operand<NativeStorage<R>>; 3], p: &Sdpa, y: &NativeStorage<R>) -> Result<bool> {
        let dtype = y.dtype;
        // Bottom-right causal is top-left causal where Lq = Lk, and no mask for one row.
        let causal = p.causal && p.lq > 1;
        let ve = 16 / dtype.size_in_bytes();
        let takes = matches!(dtype, DType::F16 | DType::BF16)
            && p.mask == MaskKind::None
            && p.lq >= DNN_MIN_ROWS
            && (!causal || p.lq == p.lk)
            && [q, k, v].into_iter().all(|(s, l)| vector_rows(s, l, ve));
        let dnn = match self.0.rt.dnn() {
            Ok(dnn) if takes => dnn,
            _ => return Ok(false),
        };
        let t = |l: &Layout| {
            let (d, s) = (l.dims(), l.strides());
            Tensor4::strided([d[0], d[1], d[2], d[3]], [s[0], s[1], s[2], s[3]])
        };
        let y_t = Tensor4::packed_checked([p.b, p.hq, p.lq, p.dv]);
        let (Some(qt), Some(kt), Some(vt), Some(yt)) = (t(q.1), t(k.1), t(v.1), y_t) else {
            return Ok(false);
        };
        // Every operand starts on 16 bytes (`vector_rows`), the output is new.
        let a = AttnDesc { dtype, q: qt, k: kt, v: vt, y: yt, causal, scale: (p.scale as f32).to_bits(), align: 16 };
        let Some(bytes) = dnn.attention_workspace(&a)? else { return Ok(false) };
        let ws = if bytes > 0 { Some(self.storage(DType::U8, bytes)?) } else { None };
        let ws = ws.as_ref().map_or((super::ptr::DevicePtr(0), 0), |w| (w.ptr, w.len));
        let io = AttnBuffers { q: q.0.at(q.1.offset()), k: k.0.at(k.1.offset()), v: v.0.at(v.1.offset()), y: y.ptr };
        // SAFETY: the views were checked by the spec against their storages and state what `a`
        // says; `y` is new; the workspace is what the library asked for, released to the
        // allocator's cache after the call is queued (the stream orders its reuse).
        unsafe { dnn.attention(&a, &io, ws)? };
        self.0.library_use.count(Path::AttentionLibrary);
        Ok(true)
    }

    /// What `Device::info` says of the attention kernels.
    pub(super) fn attention_pass(&self) -> String {
        match self.tensor_cores() {
            true => format!(
                "f16/bf16 with D, Dv <= 128 on tensor cores (RWO_NATIVE_MMA=0 turns them off); decode steps over \
                 up to {DEC_MMA_KEYS} keys in the decode pass"
            ),
            false => "SIMT tiles; decode steps in the decode pass".into(),
        }
    }
}

/// `struct View4` of `hip/attention.hip`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct View4 {
    offset: u64,
    strides: [u64; 4],
}

/// Whether the rows of `l` over `s` are whole aligned 16-byte vectors of `ve` values: the last
/// stride 1, the view's start on 16 bytes and every other stride a multiple of `ve`.
fn vector_rows<R: Runtime>(s: &NativeStorage<R>, l: &Layout, ve: usize) -> bool {
    let st = l.strides();
    let start = s.ptr.0 + (l.offset() * s.dtype.size_in_bytes()) as u64;
    st.last() == Some(&1) && start.is_multiple_of(16) && st[..st.len() - 1].iter().all(|x| x.is_multiple_of(ve))
}

/// The decode pass's key ranges for `groups` (batch, kv head) pairs: as many as give every
/// multiprocessor [`DEC_BLOCKS_PER_MP`] blocks, up to [`DEC_SPLITS`], each whole tiles of
/// [`DEC_BK`] keys; one where the groups are more than the counters that combine ranges.
fn decode_splits(groups: u64, lk: u64, mps: u64) -> (u64, u64) {
    let want = (mps * DEC_BLOCKS_PER_MP).div_ceil(groups.max(1)).min(lk.div_ceil(DEC_BK)).min(DEC_SPLITS);
    if want <= 1 || groups > super::COUNTERS as u64 {
        return (1, lk);
    }
    let len = lk.div_ceil(want).div_ceil(DEC_BK) * DEC_BK;
    (lk.div_ceil(len), len)
}

fn view4(l: &Layout) -> View4 {
    let s = l.strides();
    View4 { offset: l.offset() as u64, strides: [0, 1, 2, 3].map(|i| s[i] as u64) }
}

/// `struct SdpaArgs` of `hip/attention.hip`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct SdpaArgs {
    geometry: [u64; 12],
    scale: f64,
    views: [View4; 4],
}

/// `struct RopeArgs` of `hip/attention.hip`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct RopeArgs {
    shape: [u64; 5],
    x: [u64; 5],
    cos: [u64; 4],
    sin: [u64; 4],
    /// Threads a row, rows a step.
    lanes: [u64; 2],
}

fn words<const N: usize>(l: &Layout) -> [u64; N] {
    let mut w = [0u64; N];
    w[0] = l.offset() as u64;
    for (o, &s) in w[1..].iter_mut().zip(l.strides()) {
        *o = s as u64;
    }
    w
}

impl<R: Runtime> AttentionOps for NativeBackend<R> {
    fn sdpa(
        &self,
        q: Operand<NativeStorage<R>>,
        k: Operand<NativeStorage<R>>,
        v: Operand<NativeStorage<R>>,
        mask: Option<Operand<NativeStorage<R>>>,
        p: &Sdpa,
    ) -> Result<NativeStorage<R>> {
        let dtype = q.0.dtype;
        let y = self.storage(dtype, p.b * p.hq * p.lq * p.dv)?;
        if y.len == 0 || self.dnn_sdpa([q, k, v], p, &y)? {
            return Ok(y);
        }
        let u = |v: usize| v as u64;
        // The query rows of the heads sharing a kv head go through one block's tiles together; the
        // decode pass takes up to DEC_ROWS of them in one block where their rows are whole
        // 16-byte vectors (over up to DEC_MMA_KEYS keys where the tensor-core pass exists).
        let group_rows = u(p.hq / p.hkv * p.lq);
        let ve = 16 / dtype.size_in_bytes();
        let width = p.d.max(p.dv);
        let mma_width = MMA_WIDTHS
            .into_iter()
            .find(|&w| width <= w)
            .filter(|_| matches!(dtype, DType::F16 | DType::BF16) && self.tensor_cores());
        let decode = group_rows <= DEC_ROWS
            && (mma_width.is_none() || p.lk <= DEC_MMA_KEYS)
            && p.d.is_multiple_of(ve)
            && p.dv.is_multiple_of(ve)
            && p.d <= DEC_DMAX
            && p.dv <= DEC_VWORDS * ve
            && [q, k, v].into_iter().all(|(s, l)| vector_rows(s, l, ve));
        let mma = mma_width.filter(|_| !decode);
        let (tiles, chunks, threads) = match (decode, mma) {
            (true, _) => (1, 1, DEC_THREADS),
            (false, Some(_)) => (group_rows.div_ceil(MMA_BQ), 1, MMA_THREADS),
            (false, None) => (group_rows.div_ceil(BQ), u(p.dv).div_ceil(DC), THREADS),
        };
        let row_blocks = u(p.b * p.hkv) * tiles * chunks;
        let mps = u64::from(self.0.rt.info().multiprocessors);
        let (splits, split_len) = match decode {
            true => decode_splits(row_blocks, u(p.lk), mps),
            false => key_splits(row_blocks, u(p.lk), mps * BLOCKS_PER_MP),
        };
        let rows = u(p.b * p.hq * p.lq);
        let (splits, split_len) = if rows * u(p.dv) > u64::from(u32::MAX) { (1, u(p.lk)) } else { (splits, split_len) };
        let blocks = row_blocks * splits;
        let (hq, group, lq, lk, d, dv, causal) =
            (u(p.hq), u(p.hq / p.hkv), u(p.lq), u(p.lk), u(p.d), u(p.dv), p.causal as u64);
        let geometry = [hq, group, lq, lk, d, dv, causal, tiles, chunks, splits, split_len, blocks];
        // The splits' partial results, in the compute type (f32 for the halves).
        let part_dtype = if dtype == DType::F64 { DType::F64 } else { DType::F32 };
        let part = self.storage(part_dtype, if splits > 1 { (rows * splits * (dv + 2)) as usize } else { 0 })?;
        let views = [view4(q.1), view4(k.1), view4(v.1), mask.map_or(View4::default(), |m| view4(m.1))];
        let args = SdpaArgs { geometry, scale: p.scale, views };
        let suffix = match p.mask {
            MaskKind::None => "",
            MaskKind::Keep => "_keep",
            MaskKind::Additive => "_additive",
        };
        let op = AttentionOp::ScaledDotProductAttention.name();
        let name = match (decode, mma) {
            (true, _) => {
                let r = group_rows.next_power_of_two();
                format!("{}{suffix}", kernel_name(&format!("{op}_decode{r}"), dtype))
            }
            (false, Some(w)) => format!("{}{suffix}", kernel_name(&format!("{op}_mma{w}"), dtype)),
            (false, None) => format!("{}{suffix}", kernel_name(op, dtype)),
        };
        let m = mask.map_or(q.0.ptr, |m| m.0.ptr);
        // The decode pass combines its ranges itself, through a counter a (batch, kv head).
        let counts = if decode && splits > 1 { self.counters()? } else { DevicePtr(0) };
        for (first, _, n) in launches(blocks, 1, threads) {
            let mut a = Args::default();
            a.u64(first).pod(&args).ptr(q.0.ptr).ptr(k.0.ptr).ptr(v.0.ptr).ptr(m).ptr(y.ptr).ptr(part.ptr);
            if decode {
                a.ptr(counts);
            }
            // SAFETY: {op}[_decode{r}|_mma{w}]_{T}{suffix}(first, SdpaArgs, q, k, v, mask, y, part
            // [, counts]) in order (the tensor-core pass exists on CUDA sm_80 on, which
            // `tensor_cores` checked); the spec checked every view against its storage (the
            // mask's laid out as [B, Hq, Lq, Lk]); `y` holds the whole output and `part` (with
            // splits) rows x splits x (Dv + 2) values of the compute type; the decode pass's
            // counters (with splits) one a (batch, kv head), fewer than COUNTERS
            // (`decode_splits`), and zero; blocks past `blocks` return at once.
            unsafe { self.launch_grid(Family::Attention, &name, [n, 1, 1], threads, &mut a)? };
        }
        if splits > 1 && !decode {
            let name = kernel_name(&format!("{op}_combine"), dtype);
            let (g, b) = grid(rows * dv, self.0.rt.info().multiprocessors);
            let mut a = Args::default();
            a.u64(rows).u64(dv).u64(splits).ptr(part.ptr).ptr(y.ptr);
            // SAFETY: {op}_combine_{T}(rows, dv, splits, part, y): `part` was written above (the same
            // stream orders it first) and `y` holds rows x dv < 2^32 elements (checked above).
            unsafe { self.launch_grid(Family::Attention, &name, g, b[0], &mut a)? };
        }
        Ok(y)
    }

    fn rope(
        &self,
        op: AttentionOp,
        x: Operand<NativeStorage<R>>,
        cos: Operand<NativeStorage<R>>,
        sin: Operand<NativeStorage<R>>,
    ) -> Result<NativeStorage<R>> {
        let n = x.1.elem_count();
        let y = self.storage(x.0.dtype, n)?;
        if n == 0 {
            return Ok(y);
        }
        if n as u64 > u64::from(u32::MAX) {
            return Err(self.error(format!("{op}: {n} elements are past the kernel's 2^32")));
        }
        let d = x.1.dims();
        let shape = [n as u64, d[1] as u64, d[2] as u64, d[3] as u64, (op == AttentionOp::RopeI) as u64];
        let (lanes, step, blocks) = rope_grid((n / d[3]) as u64, d[3] as u64, ROPE_THREADS);
        let args = RopeArgs { shape, x: words(x.1), cos: words(cos.1), sin: words(sin.1), lanes: [lanes, step] };
        let mut a = Args::default();
        a.pod(&args).ptr(x.0.ptr).ptr(cos.0.ptr).ptr(sin.0.ptr).ptr(y.ptr);
        let name = kernel_name(op.name(), x.0.dtype);
        // SAFETY: {op}_{T}(RopeArgs, x, cos, sin, y) in order; the spec checked x's view and the
        // tables' [B, T, D/2] views against their storages; `y` holds n < 2^32 elements, its
        // rows covered by the blocks, ROPE_RUN steps of `step` rows each.
        unsafe { self.launch_grid(Family::Attention, &name, [blocks as u32, 1, 1], ROPE_THREADS as u32, &mut a)? };
        Ok(y)
    }
}
