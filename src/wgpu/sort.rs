//! argsort on wgpu (`shaders/sort.wgsl`): keys mapped to order-preserving unsigned integers,
//! (key, index) pairs sorted by a bitonic network per block, in registers between rounds
//! through workgroup memory, and blocks of long rows merged by merge path in ping-pong buffers.

use super::kernel::{Index, Spec};
use super::repr::{Access, Caps, Repr};
use super::{Kernel, KernelKey, WgpuBackend, WgpuStorage};
use crate::backend::SortOps;
use crate::spec::Family;
use crate::spec::sort::SortOp;
use crate::{DType, Layout, Result};
use std::fmt::Write;

/// Longest block (pairs sorted in workgroup memory, and merge tile) asked for.
const MAX_BLOCK: u32 = 4096;
/// Pairs each invocation holds in registers (`RWO_WGPU_TUNE=sort_pairs=8|16` overrides);
/// the workgroup is the block over this. H100 (Vulkan, driver 580), argsort f32 [4096, 4096]:
/// 8 pairs 162 GB/s, 16 pairs 146 (torch 235), in one run.
const PAIRS: u32 = 8;
/// The other setting the tuning override may ask for.
const OTHER_PAIRS: u32 = 16;
/// Workgroup memory every adapter has (WebGPU's minimum).
const MIN_WORKGROUP_BYTES: u32 = 16384;
/// Invocations a workgroup may have on every adapter (WebGPU's minimum).
const MIN_INVOCATIONS: u32 = 256;
/// Workgroup memory the kernels use besides the block.
const SPARE_BYTES: u32 = 64;

/// Whether the keys of `dtype` take two u32 words (i64, f64) rather than one.
fn wide(dtype: DType) -> bool {
    matches!(dtype, DType::I64 | DType::F64)
}

/// The repr of the key buffers: one u32, or a `vec2<u32>(high, low)` in two words.
fn key_repr(dtype: DType) -> Repr {
    if wide(dtype) { Repr::I64Pair } else { Repr::U32 }
}

/// The block length for `dtype`'s keys with `e` pairs per invocation, within `bytes` of
/// workgroup memory and `invocations` per workgroup: a power of two, at least 4e (blocks are
/// padded by 1 place per 16).
fn block_len(dtype: DType, e: u32, bytes: u32, invocations: u32) -> u32 {
    let pair = if wide(dtype) { 12 } else { 8 };
    let fits = |b: u32| (b + b / 16) * pair <= bytes.saturating_sub(SPARE_BYTES) && b / e <= invocations;
    let mut block = MAX_BLOCK;
    while block > 4 * e && !fits(block) {
        block /= 2;
    }
    block
}

/// A compare-exchange of registers a < b, ascending when the WGSL bool `up` holds.
fn cx(s: &mut String, a: u32, b: u32, up: &str) {
    let _ = writeln!(
        s,
        "    {{\n        let x = r[{a}];\n        let y = r[{b}];\n        let sw = before(y, x) == {up};\n        \
         r[{a}] = select(x, y, sw);\n        r[{b}] = select(y, x, sw);\n    }}"
    );
}

/// The register code on `e` pairs (see `shaders/sort.wgsl`), written out so that every
/// register index is a constant.
fn network(e: u32) -> String {
    let log_e = e.trailing_zeros();
    let mut s = String::from("fn to_regs(p: u32) {\n");
    for q in 0..e {
        let _ = writeln!(s, "    r[{q}] = sget(p + {q}u);");
    }
    s.push_str("}\nfn from_regs(p: u32) {\n");
    for q in 0..e {
        let _ = writeln!(s, "    sput(p + {q}u, r[{q}]);");
    }
    // Stages 2 .. min(s, E) on the invocation's E consecutive places from `base`.
    s.push_str("}\nfn sort_local(base: u32, s: u32) {\n");
    let mut k = 2;
    while k <= e {
        let _ = writeln!(s, "    if (s >= {k}u) {{");
        let mut j = k / 2;
        while j > 0 {
            for a in (0..e).filter(|a| a & j == 0) {
                cx(&mut s, a, a + j, &format!("up(base + {a}u, {k}u, s)"));
            }
            j /= 2;
        }
        s.push_str("    }\n");
        k *= 2;
    }
    s.push_str("}\n");
    // A round on bits lo .. lo + c - 1: E / 2^c groups of 2^c places, group g of the workgroup
    // at ((g >> lo) << (lo + c)) | (g & (2^lo - 1)), invocation lid taking g = lid + i WG.
    for c in 1..=log_e {
        let (size, groups) = (1u32 << c, e >> c);
        let _ = writeln!(s, "fn round{c}(lid: u32, lo: u32, k: u32, s: u32) {{");
        s.push_str("    let low = (1u << lo) - 1u;\n    let j = 1u << lo;\n");
        for g in 0..groups {
            let _ = writeln!(
                s,
                "    let g{g} = lid + {g}u * WG;\n    let b{g} = ((g{g} & ~low) << {c}u) | (g{g} & low);\n    \
                 let u{g} = up(b{g}, k, s);"
            );
            for v in 0..size {
                let _ = writeln!(s, "    r[{}] = sget(b{g} + {v}u * j);", g * size + v);
            }
        }
        for t in (0..c).rev() {
            for g in 0..groups {
                for v in (0..size).filter(|v| v & (1 << t) == 0) {
                    cx(&mut s, g * size + v, g * size + (v | 1 << t), &format!("u{g}"));
                }
            }
        }
        for g in 0..groups {
            for v in 0..size {
                let _ = writeln!(s, "    sput(b{g} + {v}u * j, r[{}]);", g * size + v);
            }
        }
        s.push_str("}\n");
    }
    s.push_str("fn bit_round(c: u32, lid: u32, lo: u32, k: u32, s: u32) {\n    switch (c) {\n");
    for c in 1..log_e {
        let _ = writeln!(s, "        case {c}u: {{\n            round{c}(lid, lo, k, s);\n        }}");
    }
    let _ = writeln!(s, "        default: {{\n            round{log_e}(lid, lo, k, s);\n        }}\n    }}\n}}");
    s
}

/// The sequential merge of `merge`, one constant register index per pair.
fn merge_regs(e: u32) -> String {
    let mut s = String::from("fn merge_regs(na: u32, m: u32) {\n");
    for q in 0..e {
        let _ = writeln!(s, "    r[{q}] = take(na, m);");
    }
    s + "}\n"
}

/// How `x` is bound, and WGSL for its value `v` (as loaded) to its key. Keys need only the
/// bits, so nothing here depends on the adapter's f16, f64 or i64 support.
fn input(dtype: DType) -> (Repr, &'static str) {
    match dtype {
        DType::F32 => (Repr::U32, "f32_key(v)"),
        DType::F16 => (Repr::F16Packed, "f32_key(bitcast<u32>(v))"),
        DType::BF16 => (Repr::BF16, "f32_key(bitcast<u32>(v))"),
        DType::U8 => (Repr::U8, "v"),
        DType::U32 => (Repr::U32, "v"),
        DType::I64 => (Repr::I64Pair, "vec2<u32>(v.y ^ 0x80000000u, v.x)"),
        DType::F64 => (Repr::I64Pair, "f64_key(v)"),
    }
}

/// Block length and pairs per invocation of a device's sort kernels (the workgroup is
/// `block / e` invocations).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Geometry {
    block: u32,
    e: u32,
}

/// WGSL shared by the kernels of one key width: the key and pair types, the pair order, the
/// workgroup arrays, the register code.
fn key_code(dtype: DType, g: Geometry) -> String {
    let (block, e) = (g.block, g.e);
    let common = format!(
        "const BLOCK: u32 = {block}u;\nconst E: u32 = {e}u;\nconst LOG_E: u32 = {}u;\nconst SLOTS: u32 = {}u;\n",
        e.trailing_zeros(),
        block + block / 16
    );
    let keys = if wide(dtype) {
        "alias Key = vec2<u32>;\n\
         alias Pair = vec3<u32>;\n\
         const PAD_PAIR = vec3<u32>(0xffffffffu, 0xffffffffu, 0xffffffffu);\n\
         fn pair(k: Key, i: u32) -> Pair { return vec3<u32>(k, i); }\n\
         fn pair_key(v: Pair) -> Key { return v.xy; }\n\
         fn pair_index(v: Pair) -> u32 { return v.z; }\n\
         fn before(a: Pair, b: Pair) -> bool {\n    \
         return a.x < b.x || (a.x == b.x && (a.y < b.y || (a.y == b.y && a.z < b.z)));\n}\n\
         var<workgroup> sk: array<vec2<u32>, SLOTS>;\n\
         var<workgroup> si: array<u32, SLOTS>;\n\
         fn sget(p: u32) -> Pair {\n    let q = sh(p);\n    return vec3<u32>(sk[q], si[q]);\n}\n\
         fn sput(p: u32, v: Pair) {\n    let q = sh(p);\n    sk[q] = v.xy;\n    si[q] = v.z;\n}\n"
    } else {
        "alias Key = u32;\n\
         alias Pair = vec2<u32>;\n\
         const PAD_PAIR = vec2<u32>(0xffffffffu, 0xffffffffu);\n\
         fn pair(k: Key, i: u32) -> Pair { return vec2<u32>(k, i); }\n\
         fn pair_key(v: Pair) -> Key { return v.x; }\n\
         fn pair_index(v: Pair) -> u32 { return v.y; }\n\
         fn before(a: Pair, b: Pair) -> bool {\n    return a.x < b.x || (a.x == b.x && a.y < b.y);\n}\n\
         var<workgroup> sp: array<vec2<u32>, SLOTS>;\n\
         fn sget(p: u32) -> Pair {\n    return sp[sh(p)];\n}\n\
         fn sput(p: u32, v: Pair) {\n    sp[sh(p)] = v;\n}\n"
    };
    common + keys + &network(e)
}

/// The float keys: by value, both zeros equal, every NaN one key above +inf.
const FLOAT_KEYS: &str = "
fn f32_key(b: u32) -> u32 {
    let a = b & 0x7fffffffu;
    if (a > 0x7f800000u) {
        return 0xffffffffu;
    }
    if (a == 0u) {
        return 0x80000000u;
    }
    return select(b | 0x80000000u, ~b, b >= 0x80000000u);
}

fn f64_key(v: vec2<u32>) -> vec2<u32> {
    let a = v.y & 0x7fffffffu;
    if (a > 0x7ff00000u || (a == 0x7ff00000u && v.x != 0u)) {
        return vec2<u32>(0xffffffffu, 0xffffffffu);
    }
    if (a == 0u && v.x == 0u) {
        return vec2<u32>(0x80000000u, 0u);
    }
    if (v.y >= 0x80000000u) {
        return ~v.yx;
    }
    return vec2<u32>(v.y | 0x80000000u, v.x);
}
";

/// Where a kernel puts its sorted pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Out {
    /// The indices, into the result `y`.
    Indices,
    /// Keys and indices, into `ko` and `io`, for a later merge.
    Pairs,
}

fn with_out(spec: Spec, dtype: DType, out: Out) -> Spec {
    match out {
        Out::Indices => spec
            .bind("y", Repr::U32, Access::Write, Index::None)
            .code("fn emit(pos: u32, v: Pair) { y_set(pos, pair_index(v)); }"),
        Out::Pairs => spec
            .bind("ko", key_repr(dtype), Access::Write, Index::None)
            .bind("io", Repr::U32, Access::Write, Index::None)
            .code("fn emit(pos: u32, v: Pair) { ko_set(pos, pair_key(v)); io_set(pos, pair_index(v)); }"),
    }
}

/// Sorts runs of each row of `x` (indexed by `x`) in workgroup memory; the keys are XORed
/// with md[EXTRA + 4] (all ones for descending).
fn block_spec(caps: Caps, dtype: DType, x: Index, g: Geometry, out: Out) -> Spec {
    let mut spec = Spec::new(Family::Sort, "block", caps);
    spec.workgroup = g.block / g.e;
    let (repr, key) = input(dtype);
    let invert = if wide(dtype) { "vec2<u32>(md[EXTRA + 4u])" } else { "md[EXTRA + 4u]" };
    let spec =
        spec.bind("x", repr, Access::Read, x).code(key_code(dtype, g)).code(FLOAT_KEYS).code(format!(
            "fn key_of(i: u32) -> Key {{\n    let v = x_load(x_at(i));\n    return ({key}) ^ {invert};\n}}"
        ));
    with_out(spec, dtype, out)
}

/// Merges pairs of sorted runs of keys `ka` and indices `ia`.
fn merge_spec(caps: Caps, dtype: DType, g: Geometry, out: Out) -> Spec {
    let mut spec = Spec::new(Family::Sort, "merge", caps);
    spec.workgroup = g.block / g.e;
    let spec = spec
        .bind("ka", key_repr(dtype), Access::Read, Index::None)
        .bind("ia", Repr::U32, Access::Read, Index::None)
        .code(key_code(dtype, g))
        .code(merge_regs(g.e));
    with_out(spec, dtype, out)
}

/// An argsort kernel: a block sort (the dtype, x's index) or a merge (the dtype), with the
/// device's geometry and where it puts its pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum SortKey {
    Block(DType, Index, Geometry, Out),
    Merge(DType, Geometry, Out),
}

/// Scratch keys and indices for `len` pairs.
struct Pairs {
    keys: WgpuStorage,
    ids: WgpuStorage,
}

impl WgpuBackend {
    fn pairs(&self, dtype: DType, len: usize) -> Result<Pairs> {
        let words = if wide(dtype) { 2 } else { 1 };
        Ok(Pairs { keys: self.storage(DType::U32, len * words)?, ids: self.storage(DType::U32, len)? })
    }

    /// The argsort kernel of `key`, found by key.
    fn sort_kernel(&self, key: SortKey) -> Result<Kernel> {
        self.keyed(KernelKey::Sort(key), || {
            Ok(match key {
                SortKey::Block(dt, x, g, out) => block_spec(self.caps(), dt, x, g, out),
                SortKey::Merge(dt, g, out) => merge_spec(self.caps(), dt, g, out),
            })
        })
    }

    /// The block and pairs per invocation for `dtype`'s keys on this device.
    fn sort_geometry(&self, dtype: DType) -> Geometry {
        let l = &self.0.gpu.limits;
        let bytes = l.max_compute_workgroup_storage_size.max(MIN_WORKGROUP_BYTES);
        let invocations = l.max_compute_invocations_per_workgroup.min(l.max_compute_workgroup_size_x);
        let e = self.tune().sort_pairs.unwrap_or(PAIRS);
        Geometry { block: block_len(dtype, e, bytes, invocations.max(MIN_INVOCATIONS)), e }
    }

    /// The tuning of the argsort kernels, in words (for `info()`).
    pub(super) fn sort_tuning(&self) -> String {
        let (narrow, wide) = (self.sort_geometry(DType::F32), self.sort_geometry(DType::F64));
        format!(
            "argsort: {} pairs an invocation, blocks of {} (32-bit keys) / {} (64-bit keys)",
            narrow.e, narrow.block, wide.block
        )
    }
}

impl SortOps for WgpuBackend {
    fn argsort(&self, x: &WgpuStorage, l: &Layout, descending: bool) -> Result<WgpuStorage> {
        let total = l.elem_count();
        let y = self.storage(DType::U32, total)?;
        let n = l.dims().last().copied().unwrap_or(1);
        if total == 0 {
            return Ok(y);
        }
        let dtype = x.dtype;
        let rows = (total / n) as u32;
        let g = self.sort_geometry(dtype);
        let (n, block, wg) = (n as u32, g.block, (g.block / g.e) as u64);
        // Runs of s sorted in workgroup memory, `runs` of them per row.
        let s = n.next_power_of_two().min(block);
        let runs = n.div_ceil(s);
        let groups = (rows as u64 * runs as u64).div_ceil((block / s) as u64);
        let extra = [n, rows, s, runs, if descending { u32::MAX } else { 0 }];
        if runs == 1 {
            let (spec, pipeline) = self.sort_kernel(SortKey::Block(dtype, Index::of(l), g, Out::Indices))?;
            let meta = spec.meta(total as u32, &[l], &extra);
            return self.run(&spec, &pipeline, &[x.buffer(), y.buffer()], &meta, groups * wg).map(|()| y);
        }
        // A second buffer only when there are merges before the last.
        let spare = if block as u64 * 2 < n as u64 { total } else { 0 };
        let (mut from, mut to) = (self.pairs(dtype, total)?, self.pairs(dtype, spare)?);
        let (spec, pipeline) = self.sort_kernel(SortKey::Block(dtype, Index::of(l), g, Out::Pairs))?;
        let meta = spec.meta(total as u32, &[l], &extra);
        let bufs = [x.buffer(), from.keys.buffer(), from.ids.buffer()];
        self.run(&spec, &pipeline, &bufs, &meta, groups * wg)?;
        let tiles = n.div_ceil(block);
        let groups = rows as u64 * tiles as u64 * wg;
        let mut run = block;
        while run < n {
            let last = run as u64 * 2 >= n as u64;
            let out = if last { Out::Indices } else { Out::Pairs };
            let (spec, pipeline) = self.sort_kernel(SortKey::Merge(dtype, g, out))?;
            let meta = spec.meta(total as u32, &[], &[n, rows, run, tiles]);
            let src = [from.keys.buffer(), from.ids.buffer()];
            if last {
                self.run(&spec, &pipeline, &[src[0], src[1], y.buffer()], &meta, groups)?;
            } else {
                let bufs = [src[0], src[1], to.keys.buffer(), to.ids.buffer()];
                self.run(&spec, &pipeline, &bufs, &meta, groups)?;
                std::mem::swap(&mut from, &mut to);
            }
            run = run.saturating_mul(2);
        }
        Ok(y)
    }
}

/// Every argsort kernel, named `argsort_{dtype}` (rows of one block) plus `_contiguous`,
/// `_runs` (blocks of long rows), `_merge` and `_merge_last`, with the blocks of the smallest
/// workgroup memory, again with the longest block (suffix `_b{block}`), and with the other
/// pairs per invocation `RWO_WGPU_TUNE` may ask for (suffix `_e{OTHER_PAIRS}`, f32 and i64 keys),
/// for `caps` (f64 included: keys are built from bits).
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    let mut v = vec![];
    for &dt in DType::ALL {
        let name = crate::spec::kernel_name(SortOp::ArgSort.name(), dt);
        let mut geometries = vec![
            (block_len(dt, PAIRS, MIN_WORKGROUP_BYTES, MIN_INVOCATIONS), PAIRS, String::new()),
            (MAX_BLOCK, PAIRS, format!("_b{MAX_BLOCK}")),
        ];
        if matches!(dt, DType::F32 | DType::I64) {
            geometries.push((MAX_BLOCK, OTHER_PAIRS, format!("_b{MAX_BLOCK}_e{OTHER_PAIRS}")));
        }
        for (block, e, suffix) in geometries {
            let (g, name) = (Geometry { block, e }, format!("{name}{suffix}"));
            v.push((name.clone(), Ok(block_spec(caps, dt, Index::Strided(3), g, Out::Indices))));
            v.push((format!("{name}_contiguous"), Ok(block_spec(caps, dt, Index::Contiguous, g, Out::Indices))));
            v.push((format!("{name}_runs"), Ok(block_spec(caps, dt, Index::Strided(2), g, Out::Pairs))));
            v.push((format!("{name}_merge"), Ok(merge_spec(caps, dt, g, Out::Pairs))));
            v.push((format!("{name}_merge_last"), Ok(merge_spec(caps, dt, g, Out::Indices))));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_fit_workgroup_memory_and_invocations() {
        assert_eq!(block_len(DType::F32, 16, 16384, 256), 1024);
        assert_eq!(block_len(DType::F32, 16, 32768, 256), 2048);
        assert_eq!(block_len(DType::F32, 16, 49152, 256), 4096);
        assert_eq!(block_len(DType::I64, 16, 32768, 256), 2048);
        assert_eq!(block_len(DType::I64, 16, 49152, 256), 2048);
        assert_eq!(block_len(DType::I64, 16, 65536, 256), 4096);
        // Eight pairs an invocation: 512 invocations for 4096, where the adapter allows them.
        assert_eq!(block_len(DType::F32, 8, 49152, 256), 2048);
        assert_eq!(block_len(DType::F32, 8, 49152, 1024), 4096);
        // Never below four invocations.
        assert_eq!(block_len(DType::F32, 16, 1024, 256), 64);
    }
}
