//! argsort on wgpu (`shaders/sort.wgsl`): keys mapped to order-preserving unsigned integers,
//! (key, index) pairs sorted by a bitonic network per block in workgroup memory, and blocks
//! of long rows merged by merge path in ping-pong buffers.

use super::kernel::{Index, Spec};
use super::repr::{Access, Caps, Repr};
use super::{WgpuBackend, WgpuStorage};
use crate::backend::SortOps;
use crate::spec::Family;
use crate::spec::sort::SortOp;
use crate::{DType, Layout, Result};
use std::fmt::Write;

/// Longest block (pairs sorted in workgroup memory, and merge tile) asked for.
const MAX_BLOCK: u32 = 4096;
/// Pairs each invocation holds in registers; the workgroup size is the block over this.
const E: u32 = 16;
/// Workgroup memory every adapter has (WebGPU's minimum).
const MIN_WORKGROUP_BYTES: u32 = 16384;
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

/// The block length for `dtype`'s keys within `bytes` of workgroup memory: a power of two
/// (blocks are padded by 1 place per 32).
fn block_len(dtype: DType, bytes: u32) -> u32 {
    let pair = if wide(dtype) { 12 } else { 8 };
    let mut block = MAX_BLOCK;
    while block > 4 * E && (block + block / 32) * pair > bytes.saturating_sub(SPARE_BYTES) {
        block /= 2;
    }
    block
}

/// The register networks on E pairs and the moves between registers and workgroup memory
/// (see `shaders/sort.wgsl`), written out so that every register index is a constant.
fn network() -> String {
    let mut s = String::from("fn to_regs(p: u32) {\n");
    for q in 0..E {
        let _ = writeln!(s, "    rk[{q}] = sk[sh(p + {q}u)];\n    ri[{q}] = si[sh(p + {q}u)];");
    }
    s.push_str("}\nfn from_regs(p: u32) {\n");
    for q in 0..E {
        let _ = writeln!(s, "    sk[sh(p + {q}u)] = rk[{q}];\n    si[sh(p + {q}u)] = ri[{q}];");
    }
    // One step: pairs (a, a + j), or (a, mirror of a in its k-run) when j = k / 2.
    let step = |s: &mut String, k: u32, j: u32| {
        for t in 0..E / 2 {
            let a = ((t & !(j - 1)) << 1) | (t & (j - 1));
            let b = if j == k / 2 { a ^ (k - 1) } else { a + j };
            let _ = writeln!(s, "        rcx({a}u, {b}u);");
        }
    };
    s.push_str("}\nfn sort_local(s: u32) {\n");
    let mut k = 2;
    while k <= E {
        let _ = writeln!(s, "    if (s >= {k}u) {{");
        let mut j = k / 2;
        while j > 0 {
            step(&mut s, k, j);
            j /= 2;
        }
        s.push_str("    }\n");
        k *= 2;
    }
    s.push_str("}\nfn clean_local() {\n");
    let mut j = E / 2;
    while j > 0 {
        step(&mut s, 2 * E, j);
        j /= 2;
    }
    s.push_str("}\n");
    s
}

/// The sequential merge of `merge`, one constant register index per call.
fn merge_regs() -> String {
    let mut s = String::from("fn merge_regs(na: u32, m: u32) {\n");
    for q in 0..E {
        let _ = writeln!(s, "    take({q}u, na, m);");
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

/// WGSL shared by the kernels of one key width: the key type, its maximum, the pair order.
fn key_code(dtype: DType, block: u32) -> String {
    let common = format!("const BLOCK: u32 = {block}u;\nconst E: u32 = {E}u;\n");
    let keys = if wide(dtype) {
        "alias Key = vec2<u32>;\n\
         const KEY_MAX = vec2<u32>(0xffffffffu, 0xffffffffu);\n\
         fn before(ka: Key, ia: u32, kb: Key, ib: u32) -> bool {\n    \
         return ka.x < kb.x || (ka.x == kb.x && (ka.y < kb.y || (ka.y == kb.y && ia < ib)));\n}\n"
    } else {
        "alias Key = u32;\n\
         const KEY_MAX = 0xffffffffu;\n\
         fn before(ka: Key, ia: u32, kb: Key, ib: u32) -> bool {\n    \
         return ka < kb || (ka == kb && ia < ib);\n}\n"
    };
    common + keys + &network()
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Out {
    /// The indices, into the result `y`.
    Indices,
    /// Keys and indices, into `ko` and `io`, for a later merge.
    Pairs,
}

fn with_out(spec: Spec, dtype: DType, out: Out) -> Spec {
    match out {
        Out::Indices => spec
            .bind("y", Repr::U32, Access::Write, Index::None)
            .code("fn emit(pos: u32, k: Key, i: u32) { y_set(pos, i); }"),
        Out::Pairs => spec
            .bind("ko", key_repr(dtype), Access::Write, Index::None)
            .bind("io", Repr::U32, Access::Write, Index::None)
            .code("fn emit(pos: u32, k: Key, i: u32) { ko_set(pos, k); io_set(pos, i); }"),
    }
}

/// Sorts runs of each row of `x` (indexed by `x`) in workgroup memory; the keys are XORed
/// with md[EXTRA + 4] (all ones for descending).
fn block_spec(caps: Caps, dtype: DType, x: Index, block: u32, out: Out) -> Spec {
    let mut spec = Spec::new(Family::Sort, "block", caps);
    spec.workgroup = block / E;
    let (repr, key) = input(dtype);
    let invert = if wide(dtype) { "vec2<u32>(md[EXTRA + 4u])" } else { "md[EXTRA + 4u]" };
    let spec =
        spec.bind("x", repr, Access::Read, x).code(key_code(dtype, block)).code(FLOAT_KEYS).code(format!(
            "fn key_of(i: u32) -> Key {{\n    let v = x_load(x_at(i));\n    return ({key}) ^ {invert};\n}}"
        ));
    with_out(spec, dtype, out)
}

/// Merges pairs of sorted runs of keys `ka` and indices `ia`.
fn merge_spec(caps: Caps, dtype: DType, block: u32, out: Out) -> Spec {
    let mut spec = Spec::new(Family::Sort, "merge", caps);
    spec.workgroup = block / E;
    let spec = spec
        .bind("ka", key_repr(dtype), Access::Read, Index::None)
        .bind("ia", Repr::U32, Access::Read, Index::None)
        .code(key_code(dtype, block))
        .code(merge_regs());
    with_out(spec, dtype, out)
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

    fn workgroup_bytes(&self) -> u32 {
        self.0.gpu.limits.max_compute_workgroup_storage_size.max(MIN_WORKGROUP_BYTES)
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
        let (caps, dtype) = (self.caps(), x.dtype);
        let rows = (total / n) as u32;
        let block = block_len(dtype, self.workgroup_bytes());
        let (n, wg) = (n as u32, (block / E) as u64);
        // Runs of s sorted in workgroup memory, `runs` of them per row.
        let s = n.next_power_of_two().min(block);
        let runs = n.div_ceil(s);
        let groups = (rows as u64 * runs as u64).div_ceil((block / s) as u64);
        let extra = [n, rows, s, runs, if descending { u32::MAX } else { 0 }];
        if runs == 1 {
            let spec = block_spec(caps, dtype, Index::of(l), block, Out::Indices);
            let meta = spec.meta(total as u32, &[l], &extra);
            return self.run(&spec, &[x.buffer(), y.buffer()], &meta, groups * wg).map(|()| y);
        }
        // A second buffer only when there are merges before the last.
        let spare = if block as u64 * 2 < n as u64 { total } else { 0 };
        let (mut from, mut to) = (self.pairs(dtype, total)?, self.pairs(dtype, spare)?);
        let spec = block_spec(caps, dtype, Index::of(l), block, Out::Pairs);
        let meta = spec.meta(total as u32, &[l], &extra);
        self.run(&spec, &[x.buffer(), from.keys.buffer(), from.ids.buffer()], &meta, groups * wg)?;
        let tiles = n.div_ceil(block);
        let groups = rows as u64 * tiles as u64 * wg;
        let mut run = block;
        while run < n {
            let last = run as u64 * 2 >= n as u64;
            let spec = merge_spec(caps, dtype, block, if last { Out::Indices } else { Out::Pairs });
            let meta = spec.meta(total as u32, &[], &[n, rows, run, tiles]);
            let src = [from.keys.buffer(), from.ids.buffer()];
            if last {
                self.run(&spec, &[src[0], src[1], y.buffer()], &meta, groups)?;
            } else {
                self.run(&spec, &[src[0], src[1], to.keys.buffer(), to.ids.buffer()], &meta, groups)?;
                std::mem::swap(&mut from, &mut to);
            }
            run = run.saturating_mul(2);
        }
        Ok(y)
    }
}

/// Every argsort kernel, named `argsort_{dtype}` (rows of one block) plus `_contiguous`,
/// `_runs` (blocks of long rows), `_merge` and `_merge_last`, with the blocks of the smallest workgroup memory, and again with the
/// longest block (suffix `_b{block}`), for `caps` (f64 included: keys are built from bits).
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    let mut v = vec![];
    for &dt in DType::ALL {
        let name = crate::spec::kernel_name(SortOp::ArgSort.name(), dt);
        for (block, suffix) in
            [(block_len(dt, MIN_WORKGROUP_BYTES), String::new()), (MAX_BLOCK, format!("_b{MAX_BLOCK}"))]
        {
            let name = format!("{name}{suffix}");
            v.push((name.clone(), Ok(block_spec(caps, dt, Index::Strided(3), block, Out::Indices))));
            v.push((format!("{name}_contiguous"), Ok(block_spec(caps, dt, Index::Contiguous, block, Out::Indices))));
            v.push((format!("{name}_runs"), Ok(block_spec(caps, dt, Index::Strided(2), block, Out::Pairs))));
            v.push((format!("{name}_merge"), Ok(merge_spec(caps, dt, block, Out::Pairs))));
            v.push((format!("{name}_merge_last"), Ok(merge_spec(caps, dt, block, Out::Indices))));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_fit_workgroup_memory() {
        assert_eq!(block_len(DType::F32, 16384), 1024);
        assert_eq!(block_len(DType::F32, 32768), 2048);
        assert_eq!(block_len(DType::F32, 49152), 4096);
        assert_eq!(block_len(DType::I64, 32768), 2048);
        assert_eq!(block_len(DType::I64, 49152), 2048);
        assert_eq!(block_len(DType::I64, 65536), 4096);
    }
}
