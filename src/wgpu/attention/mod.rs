//! Attention and the rotary embeddings on wgpu (`shaders/attention.wgsl`).
//!
//! `sdpa` is one flash-style pass: a workgroup per (batch, kv head, tile of `Tiles::bq` query
//! rows of the heads sharing it, chunk of `dc` output columns), key tiles through workgroup
//! memory, an online softmax, the scores never in a buffer; up to 8 rows a kv head (decoding) go
//! through the decode pass instead where q, k and v rows are whole 16-byte words ([`decode`]: all
//! of them in one workgroup, a key an invocation). q, k, v and the mask are read in place through
//! their strides (the mask's stride 0 where it broadcasts). In f16 on adapters with cooperative
//! matrices the tiled pass's rows go through `sdpa_coop` instead where their rows are whole words
//! ([`coop`]).
//! `rope` is a workgroup taking rows at a time, a lane a word of a row ([`rope_grid`]).

mod coop;
mod decode;

use super::kernel::{Index, Spec};
use super::repr::{Access, Caps, Compute, Repr, params};
use super::{KernelKey, WgpuBackend, WgpuStorage};
use crate::backend::{AttentionOps, Operand};
use crate::spec::attention::{AttentionOp, MaskKind, ROPE_RUN, Sdpa, key_splits, rope_grid};
use crate::spec::{Family, kernel_name};
use crate::{DType, Layout, Result, Scalar};

/// Tile sizes of `sdpa`: queries and keys per tile, output columns per workgroup (`dc`), the
/// chunk of D read at a time (`dk`) and invocations per query row (`tpr`; `bq tpr` a workgroup).
/// Two sets per compute type: `small` within WebGPU's 16 KiB of workgroup memory (f32 11.6 KiB,
/// f64 15.1 KiB), `big` where the adapter has 48 KiB (f32 43.6 KiB: key tiles of 64, a quarter
/// of the tiles a row of 128 keys takes with 16).
#[derive(Clone, Copy)]
struct Tiles {
    bq: u32,
    bk: u32,
    dc: u32,
    dk: u32,
    tpr: u32,
}

impl Tiles {
    fn of(c: Compute, big: bool) -> Tiles {
        match (c, big) {
            (Compute::F64, false) => Tiles { bq: 16, bk: 16, dc: 32, dk: 16, tpr: 16 },
            (Compute::F64, true) => Tiles { bq: 16, bk: 16, dc: 64, dk: 32, tpr: 16 },
            (_, false) => Tiles { bq: 16, bk: 16, dc: 64, dk: 32, tpr: 16 },
            (_, true) => Tiles { bq: 16, bk: 64, dc: 64, dk: 64, tpr: 16 },
        }
    }

    /// Bytes of workgroup memory the kernel declares with these tiles (padded rows included).
    fn bytes(&self, c: Compute) -> u32 {
        let size = if c == Compute::F64 { 8 } else { 4 };
        let (p, wg) = (self.dk + 1, self.bq * self.tpr);
        (self.bq * p + self.bk * p + self.bk * self.dc + self.bq * (self.bk + 1) + 2 * wg + 2 * self.bq) * size
    }
}

/// Query rows a kv head past which the cooperative-matrix pass takes them (f16, where it can).
/// Fewer stay on the decode pass where it takes them (H200, q [1,32,1,128] over kv
/// [1,8,4096,128]: 26-32 us against 41-47 through the cooperative pass), else the tiled pass.
const COOP_ROWS: usize = decode::ROWS as usize;

/// What decides an `sdpa` kernel besides its dtype: the mask's kind, whether the output is
/// stored element by element (`update`: sub-word dtypes whose output rows are not whole words),
/// the stage (the whole pass, one key range of a split pass, or the combine of the ranges) and
/// the pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Variant {
    mask: MaskKind,
    update: bool,
    stage: Stage,
    pass: Pass,
}

/// Which `sdpa` kernel: the tiled pass (`big`: the tiles of [`Tiles`] that need 48 KiB of
/// workgroup memory), the decode pass ([`decode`]) for up to this many query rows a kv head (a
/// power of two), or the cooperative-matrix pass of width 64 or 128 ([`coop`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Pass {
    Tiled { big: bool },
    Decode(u32),
    Coop(u32),
}

/// See [`Variant`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Stage {
    Whole,
    Split,
    Combine,
}

/// The combine's variant names no pass of its own.
const COMBINE: Pass = Pass::Tiled { big: false };

/// Workgroups below which the keys are split (decoding: few query rows), as the native path
/// does per multiprocessor (`spec::attention::key_splits`).
const SPLIT_TARGET: u64 = 1024;

/// WGSL shared by both kernels: the compute type, its -inf, NaN and exp.
fn helpers(c: Compute) -> String {
    let (ct, neg, nan, exp) = match c {
        Compute::F64 => ("f64", "-f64_inf()", "f64_nan()", "f64_exp(v)"),
        _ => ("f32", "f32_of_bits(0xff800000u)", "f32_of_bits(0x7fc00000u)", "exp(v)"),
    };
    format!(
        "alias CT = {ct};\nfn neg_inf() -> CT {{ return {neg}; }}\nfn nan_c() -> CT {{ return {nan}; }}\n\
         fn c_exp(v: CT) -> CT {{ return {exp}; }}\n{}",
        params::decoder(c)
    )
}

/// The compute type as a dtype: what the split pass keeps its partial results in.
fn part_dtype(c: Compute) -> DType {
    if c == Compute::F64 { DType::F64 } else { DType::F32 }
}

fn combine_spec(caps: Caps, dtype: DType) -> Result<Spec> {
    let op = AttentionOp::ScaledDotProductAttention.name();
    let r = Repr::of(dtype, caps, op)?;
    let part = Repr::of(part_dtype(r.compute()), caps, op)?;
    Ok(Spec::new(Family::Attention, "sdpa_combine", caps)
        .bind("part", part, Access::Read, Index::None)
        .bind("y", r, Access::Write, Index::None)
        .code(helpers(r.compute())))
}

fn sdpa_spec(caps: Caps, dtype: DType, v: Variant) -> Result<Spec> {
    let op = AttentionOp::ScaledDotProductAttention.name();
    if v.stage == Stage::Combine {
        return combine_spec(caps, dtype);
    }
    let r = Repr::of(dtype, caps, op)?;
    let c = r.compute();
    let (entry, input) = match v.pass {
        Pass::Tiled { .. } => ("sdpa", Access::Read),
        Pass::Decode(_) if decode::per_word(r).is_some() => ("sdpa_decode", Access::Wide),
        Pass::Coop(_) if r == Repr::F16 => ("sdpa_coop", Access::Wide),
        Pass::Decode(_) | Pass::Coop(_) => {
            let pass = if matches!(v.pass, Pass::Decode(_)) { "decode pass" } else { "cooperative-matrix pass" };
            let msg = format!("the attention's {pass} does not take {dtype} here");
            return Err(crate::Error::Backend { backend: crate::BackendKind::Wgpu, msg });
        }
    };
    let mut spec = Spec::new(Family::Attention, entry, caps)
        .bind("q", r, input, Index::None)
        .bind("k", r, input, Index::None)
        .bind("v", r, input, Index::None);
    let score = match v.mask {
        MaskKind::None => "s".to_string(),
        MaskKind::Keep => {
            spec = spec.bind("mask", Repr::of(DType::U8, caps, op)?, Access::Read, Index::None);
            "select(neg, s, mask_load(m) != 0u)".to_string()
        }
        MaskKind::Additive => {
            spec = spec.bind("mask", r, Access::Read, Index::None);
            "s + mask_load(m)".to_string()
        }
    };
    let out = if v.stage == Stage::Split {
        spec = spec.bind("part", Repr::of(part_dtype(c), caps, op)?, Access::Write, Index::None);
        "const SPLIT = true;\nconst OUT_EPW: u32 = 1u;\nfn out_set(i: u32, v: CT) {}\nfn out_flush(w: u32) {}\n\
         fn part_put(i: u32, v: CT) { part_set(i, v); part_flush(i); }\n"
    } else if v.update {
        spec = spec.bind("y", r, Access::Update, Index::None);
        "const SPLIT = false;\nconst OUT_EPW: u32 = 1u;\nfn out_set(i: u32, v: CT) { y_store(i, v); }\n\
         fn out_flush(w: u32) {}\nfn part_put(i: u32, v: CT) {}\n"
    } else {
        spec = spec.bind("y", r, Access::Write, Index::None);
        "const SPLIT = false;\nconst OUT_EPW: u32 = Y_EPW;\nfn out_set(i: u32, v: CT) { y_set(i, v); }\n\
         fn out_flush(w: u32) { y_flush(w); }\nfn part_put(i: u32, v: CT) {}\n"
    };
    let spec = spec
        .code(helpers(c))
        .code(out)
        .code(format!("fn mask_score(s: CT, m: u32, neg: CT) -> CT {{ return {score}; }}"));
    Ok(match v.pass {
        Pass::Decode(rows) => {
            let mut spec = spec.code(decode::entry(r, rows));
            spec.workgroup = decode::WG;
            decode::constants(r).into_iter().fold(spec, |s, (name, value)| s.constant(name, value))
        }
        Pass::Tiled { big } => tile_constants(spec, Tiles::of(c, big)),
        Pass::Coop(dp) => {
            let mut spec = spec.code(coop::entry(dp));
            spec.workgroup = coop::WG;
            spec.enables.push("wgpu_cooperative_matrix");
            coop::constants(dp).into_iter().fold(spec, |s, (name, value)| s.constant(name, value))
        }
    })
}

fn tile_constants(mut spec: Spec, t: Tiles) -> Spec {
    let wg = t.tpr * t.bq;
    spec.workgroup = wg;
    spec.constant("BQ", format!("{}u", t.bq))
        .constant("BK", format!("{}u", t.bk))
        .constant("DC", format!("{}u", t.dc))
        .constant("DK", format!("{}u", t.dk))
        .constant("TPR", format!("{}u", t.tpr))
        .constant("QP", format!("{}u", t.dk + 1))
        .constant("KP", format!("{}u", t.dk + 1))
        .constant("SP", format!("{}u", t.bk + 1))
        .constant("NJ", format!("{}u", t.dc / t.tpr))
        .constant("SU", format!("{}u", t.bk / t.tpr))
        .constant("KN", format!("{}u", t.bk * t.dk / wg))
        .constant("KR", format!("{}u", wg / t.dk))
        .constant("VN", format!("{}u", t.bk * t.dc / wg))
        .constant("VR", format!("{}u", wg / t.dc))
}

fn rope_spec(caps: Caps, dtype: DType, op: AttentionOp) -> Result<Spec> {
    let r = Repr::of(dtype, caps, op.name())?;
    Ok(Spec::new(Family::Attention, "rope", caps)
        .bind("x", r, Access::Read, Index::None)
        .bind("cos", r, Access::Read, Index::None)
        .bind("sin", r, Access::Read, Index::None)
        .bind("y", r, Access::Write, Index::None)
        .constant("ROPE_I", (op == AttentionOp::RopeI).to_string())
        .constant("RUN", format!("{ROPE_RUN}u"))
        .code(helpers(r.compute())))
}

/// Whether `l`'s rows can be read as whole aligned 16-byte words of `per` values: the last stride
/// 1, the offset and every other stride multiples of `per`.
fn whole_words(l: &Layout, per: usize) -> bool {
    let s = l.strides();
    s.last() == Some(&1) && l.offset().is_multiple_of(per) && s[..s.len() - 1].iter().all(|x| x.is_multiple_of(per))
}

/// Offset and strides of `l` as metadata words.
fn view(l: &Layout) -> impl Iterator<Item = u32> + '_ {
    std::iter::once(l.offset() as u32).chain(l.strides().iter().map(|&s| s as u32))
}

impl WgpuBackend {
    /// The width of the cooperative-matrix pass that takes these operands (held as `r`), if any:
    /// f16 where the adapter runs the GEMM's cooperative matrices (unless
    /// `RWO_WGPU_TUNE=sdpa_coop=off`), D and Dv whole words up to 128 within `room` bytes of
    /// workgroup memory, and q, k and v rows whole aligned words.
    fn coop_width(&self, r: Repr, room: u32, p: &Sdpa, views: [&Layout; 3]) -> Option<u32> {
        let on = r == Repr::F16 && self.tune().sdpa_coop != Some(false) && self.attention_coop();
        coop::width(p).filter(|&dp| on && coop::bytes(dp) <= room && views.into_iter().all(|l| whole_words(l, 8)))
    }

    /// Whether f16 attention can run on cooperative matrices here (where the f16 GEMM does).
    fn attention_coop(&self) -> bool {
        self.0.gpu.coop_missing().is_none()
    }

    /// `Device::info`'s line for attention.
    pub(crate) fn attention_info(&self) -> String {
        match (self.attention_coop(), self.tune().sdpa_coop) {
            (true, Some(false)) => "tiles and the decode pass (cooperative matrices off: RWO_WGPU_TUNE)".into(),
            (true, _) => "cooperative matrices in f16 past 8 query rows a kv head (D, Dv <= 128, rows of whole \
                          16-byte words); tiles and the decode pass otherwise"
                .into(),
            (false, _) => "tiles and the decode pass".into(),
        }
    }
}

impl AttentionOps for WgpuBackend {
    fn sdpa(
        &self,
        q: Operand<WgpuStorage>,
        k: Operand<WgpuStorage>,
        v: Operand<WgpuStorage>,
        mask: Option<Operand<WgpuStorage>>,
        p: &Sdpa,
    ) -> Result<WgpuStorage> {
        let dtype = q.0.dtype;
        let y = self.storage(dtype, p.b * p.hq * p.lq * p.dv)?;
        if y.len == 0 {
            return Ok(y);
        }
        let caps = self.caps();
        let r = Repr::of(dtype, caps, AttentionOp::ScaledDotProductAttention.name())?;
        let room = self.0.gpu.limits.max_compute_workgroup_storage_size;
        // The query rows of the heads sharing a kv head go through one workgroup's tiles together:
        // the decode pass's up to decode::ROWS of them where it takes their rows; more, the
        // cooperative-matrix pass's where it takes them (see COOP_ROWS), else the tiled pass's.
        let group_rows = p.hq / p.hkv * p.lq;
        let views = [q.1, k.1, v.1];
        // Not on a browser's software adapter: SwiftShader's compiler runs out of memory on the
        // unrolled entry (and takes minutes on one unrolled 4x less); the tiled pass decodes there.
        let decode = !self.browser_fallback()
            && self.tune().sdpa_decode != Some(false)
            && decode::fits(r, p)
            && decode::bytes(r) <= room
            && decode::per_word(r).is_some_and(|ve| views.into_iter().all(|l| whole_words(l, ve)));
        let coop = if group_rows > COOP_ROWS { self.coop_width(r, room, p, views) } else { None };
        let (pass, bq, dc) = match (coop, decode) {
            (Some(dp), _) => (Pass::Coop(dp), coop::BQ as usize, dp),
            (None, true) => (Pass::Decode(group_rows.next_power_of_two() as u32), group_rows, p.dv as u32),
            (None, false) => {
                let c = r.compute();
                let big = Tiles::of(c, true).bytes(c) <= room;
                let t = Tiles::of(c, big);
                (Pass::Tiled { big }, t.bq as usize, t.dc)
            }
        };
        let tiles_q = group_rows.div_ceil(bq);
        let chunks = p.dv.div_ceil(dc as usize);
        let row_groups = p.b * p.hkv * tiles_q * chunks;
        let (splits, split_len) = key_splits(row_groups as u64, p.lk as u64, SPLIT_TARGET);
        let stage = if splits > 1 { Stage::Split } else { Stage::Whole };
        let update = !p.dv.is_multiple_of(r.per_word() as usize);
        let var = Variant { mask: p.mask, update, stage, pass };
        let (spec, pipeline) = self.keyed(KernelKey::Attention(dtype, var), || sdpa_spec(caps, dtype, var))?;
        let groups = row_groups * splits as usize;
        let mut extra = params::encode(r.compute(), &[Scalar::from(p.scale)]);
        let words = [p.hq, p.hq / p.hkv, p.lq, p.lk, p.d, p.dv, p.causal as usize, tiles_q, chunks, groups];
        extra.extend(words.map(|w| w as u32));
        extra.extend(view(q.1).chain(view(k.1)).chain(view(v.1)));
        match mask {
            Some((_, ml)) => extra.extend(view(ml)),
            None => extra.extend([0; 5]),
        }
        extra.extend([splits as u32, split_len as u32]);
        let rows = p.b * p.hq * p.lq;
        let part = if splits > 1 {
            Some(self.storage(part_dtype(r.compute()), rows * splits as usize * (p.dv + 2))?)
        } else {
            None
        };
        let out = part.as_ref().unwrap_or(&y);
        let meta = spec.meta(out.len as u32, &[], &extra);
        let bufs: Vec<&wgpu::Buffer> = [Some(q.0), Some(k.0), Some(v.0), mask.map(|m| m.0), Some(out)]
            .into_iter()
            .flatten()
            .map(|s| s.buffer())
            .collect();
        self.run(&spec, &pipeline, &bufs, &meta, groups as u64 * spec.workgroup as u64)?;
        if let Some(part) = part {
            let var = Variant { mask: MaskKind::None, update: false, stage: Stage::Combine, pass: COMBINE };
            let (spec, pipeline) = self.keyed(KernelKey::Attention(dtype, var), || sdpa_spec(caps, dtype, var))?;
            let meta = spec.meta(y.len as u32, &[], &[0, 0, 0, p.dv as u32, splits as u32]);
            let per = r.per_word() as u64;
            self.run(&spec, &pipeline, &[part.buffer(), y.buffer()], &meta, (y.len as u64).div_ceil(per))?;
        }
        Ok(y)
    }

    fn rope(
        &self,
        op: AttentionOp,
        x: Operand<WgpuStorage>,
        cos: Operand<WgpuStorage>,
        sin: Operand<WgpuStorage>,
    ) -> Result<WgpuStorage> {
        let n = x.1.elem_count();
        let y = self.storage(x.0.dtype, n)?;
        if n == 0 {
            return Ok(y);
        }
        let key = KernelKey::Rope(x.0.dtype, op);
        let (spec, pipeline) = self.keyed(key, || rope_spec(self.caps(), x.0.dtype, op))?;
        let d = x.1.dims();
        // L lanes a row (a word each, at most a workgroup's), S rows a step.
        let words = d[3] as u64 / u64::from(spec.bindings[3].repr.per_word());
        let wg = u64::from(spec.workgroup);
        let (lanes, step, groups) = rope_grid((n / d[3]) as u64, words, wg);
        let mut extra = vec![0, 0, 0, d[1] as u32, d[2] as u32, d[3] as u32];
        extra.extend(view(x.1).chain(view(cos.1)).chain(view(sin.1)));
        extra.extend([lanes as u32, step as u32]);
        let meta = spec.meta(n as u32, &[], &extra);
        let bufs = [x.0.buffer(), cos.0.buffer(), sin.0.buffer(), y.buffer()];
        self.run(&spec, &pipeline, &bufs, &meta, groups * wg)?;
        Ok(y)
    }
}

/// Every attention kernel: `sdpa` per dtype, pass, mask kind and store (the cooperative-matrix
/// passes in f16 where the caps have subgroups), `rope` and `rope_i` per dtype.
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    let mut v = vec![];
    let sdpa = AttentionOp::ScaledDotProductAttention;
    for dt in caps.dtypes().into_iter().filter(|d| sdpa.dtypes().contains(d)) {
        let mut passes = vec![Pass::Tiled { big: false }, Pass::Tiled { big: true }];
        if decode::per_word(Repr::of(dt, caps, sdpa.name()).unwrap_or(Repr::F64)).is_some() {
            passes.extend(decode::ROW_COUNTS.map(Pass::Decode));
        }
        if dt == DType::F16 && caps.f16 && caps.subgroup {
            passes.extend([Pass::Coop(64), Pass::Coop(128)]);
        }
        for pass in passes {
            let tiles = match pass {
                Pass::Tiled { big } => if big { "_big" } else { "" }.to_string(),
                Pass::Decode(rows) => format!("_decode{rows}"),
                Pass::Coop(dp) => format!("_coop{dp}"),
            };
            for mask in [MaskKind::None, MaskKind::Keep, MaskKind::Additive] {
                for update in [false, true] {
                    if update && matches!(pass, Pass::Coop(_) | Pass::Decode(_)) {
                        continue;
                    }
                    let suffix = match (mask, update) {
                        (MaskKind::None, false) => String::new(),
                        _ => format!("_{mask:?}{}", if update { "_update" } else { "" }).to_lowercase(),
                    };
                    let var = Variant { mask, update, stage: Stage::Whole, pass };
                    v.push((format!("{}{suffix}{tiles}", kernel_name(sdpa.name(), dt)), sdpa_spec(caps, dt, var)));
                }
                let var = Variant { mask, update: false, stage: Stage::Split, pass };
                v.push((
                    format!("{}_{mask:?}_split{tiles}", kernel_name(sdpa.name(), dt)).to_lowercase(),
                    sdpa_spec(caps, dt, var),
                ));
            }
        }
        let var = Variant { mask: MaskKind::None, update: false, stage: Stage::Combine, pass: COMBINE };
        v.push((format!("{}_combine", kernel_name(sdpa.name(), dt)), sdpa_spec(caps, dt, var)));
        for op in [AttentionOp::Rope, AttentionOp::RopeI] {
            v.push((kernel_name(op.name(), dt), rope_spec(caps, dt, op)));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tile_set_reads_its_tiles_in_whole_passes() {
        for c in [Compute::F32, Compute::F64] {
            for big in [false, true] {
                let t = Tiles::of(c, big);
                let wg = t.tpr * t.bq;
                // KN, KR, VN and VR of the kernel: a pass of WG elements covers whole rows.
                assert_eq!((t.bk * t.dk % wg, wg % t.dk, t.bk * t.dc % wg, wg % t.dc), (0, 0, 0, 0), "{c:?} big {big}");
            }
        }
    }

    #[test]
    fn every_tile_set_fits_the_workgroup_memory_it_is_chosen_for() {
        for c in [Compute::F32, Compute::F64] {
            let (small, big) = (Tiles::of(c, false).bytes(c), Tiles::of(c, true).bytes(c));
            // WebGPU's default 16 KiB, and the 48 KiB the big sets are chosen where the adapter has.
            assert!(small <= 16384, "{c:?}: {small}");
            assert!(big <= 49152, "{c:?}: {big}");
        }
    }

    #[test]
    fn only_rows_of_whole_aligned_words_are_read_as_words() -> crate::Result<()> {
        let l = Layout::contiguous([2, 4, 24, 16]);
        assert!(whole_words(&l, 8));
        // A cache narrowed along keys, heads split by a transpose: still whole words.
        assert!(whole_words(&l.narrow(2, 3, 9)?, 8));
        assert!(whole_words(&Layout::contiguous([2, 24, 4, 16]).transpose(1, 2)?, 8));
        // An offset or a row stride off the grid, or the head dim strided: not.
        assert!(!whole_words(&Layout::contiguous_with_offset([2, 4, 24, 16], 4), 8));
        assert!(whole_words(&Layout::contiguous_with_offset([2, 4, 24, 16], 4), 4));
        assert!(!whole_words(&Layout::contiguous([2, 4, 24, 12]), 8));
        assert!(!whole_words(&Layout::contiguous([2, 4, 16, 24]).transpose(2, 3)?, 8));
        Ok(())
    }
}
