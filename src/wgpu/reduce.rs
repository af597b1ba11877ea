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

use super::kernel::{Index, Spec};
use super::repr::{Access, Caps, Compute, Repr};
use super::{WgpuBackend, WgpuStorage};
use crate::backend::ReduceOps;
use crate::spec::Family;
use crate::spec::reduce::ReduceOp;
use crate::{BackendKind, DType, Error, Layout, Result};

/// Invocations a reduction should keep busy before its extent is not cut into chunks. On an
/// H200, [4096,16384] f32 over dim 0: 2^17 -> 96 us (sum) / 96 us (max), 2^18 -> 78 / 80,
/// 2^19 -> 84 / 84.
const TARGET_INVOCATIONS: u64 = 1 << 18;
/// Elements per invocation below which an extent is not cut further.
const MIN_PER_INVOCATION: u64 = 16;
/// The workgroup size of every kernel (a tree spans at most one workgroup).
const WG: u64 = 256;
/// Columns per workgroup of the cols kernels, at most: a warp's loads span a row segment of
/// 128 bytes (1 KiB wide) while the other lanes of the workgroup split the rows.
const COLS_X: u64 = 64;

/// Which kernel walks a reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    Rows,
    /// Rows reading 16-byte words: contiguous rows of whole words.
    RowsWide,
    Cols,
    /// Cols with a word of neighbouring outputs per invocation.
    ColsWide,
}

impl Kernel {
    const ALL: [Kernel; 4] = [Kernel::Rows, Kernel::RowsWide, Kernel::Cols, Kernel::ColsWide];

    fn entry(self) -> &'static str {
        match self {
            Kernel::Rows => "rows",
            Kernel::RowsWide => "rows_wide",
            Kernel::Cols => "cols",
            Kernel::ColsWide => "cols_wide",
        }
    }

    /// The suffix of its kernel names after `{op}_{dtype}`.
    fn suffix(self) -> &'static str {
        match self {
            Kernel::Rows => "",
            Kernel::RowsWide => "_wide",
            Kernel::Cols => "_cols",
            Kernel::ColsWide => "_cols_wide",
        }
    }

    fn wide(self) -> bool {
        matches!(self, Kernel::RowsWide | Kernel::ColsWide)
    }

    /// Loads issued before they are combined, per invocation (measured on an H200: more
    /// gains nothing).
    fn unroll(self) -> u32 {
        if self.wide() { 2 } else { 4 }
    }
}

/// Which pass of a reduction a kernel runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// The input to the output, in one pass.
    Whole,
    /// The input to one partial per chunk.
    First,
    /// The partials to the output.
    Second,
}

/// Elements of `r` per 16-byte word, for the dtypes the wide kernels decode.
fn per_word16(r: Repr) -> Option<u64> {
    match r {
        Repr::F32 | Repr::U32 => Some(4),
        Repr::F16 | Repr::F16Packed | Repr::BF16 => Some(8),
        Repr::U8 => Some(16),
        Repr::I64 | Repr::I64Pair => Some(2),
        // WGSL has no bit cast from u32 words to f64.
        Repr::F64 => None,
    }
}

/// WGSL for element `j` of the 16-byte word `w` of `r`, in the compute type.
fn word_elem(r: Repr, j: u64) -> String {
    let c = |i: u64| ["w.x", "w.y", "w.z", "w.w"][i as usize];
    match r {
        Repr::F32 => format!("bitcast<f32>({})", c(j)),
        Repr::U32 => c(j).to_string(),
        Repr::F16 | Repr::F16Packed => format!("f16x2({}).{}", c(j / 2), ["x", "y"][j as usize % 2]),
        Repr::BF16 if j.is_multiple_of(2) => format!("bitcast<f32>({} << 16u)", c(j / 2)),
        Repr::BF16 => format!("bitcast<f32>({} & 0xffff0000u)", c(j / 2)),
        Repr::U8 => format!("(({} >> {}u) & 0xffu)", c(j / 4), 8 * (j % 4)),
        // The mask: naga may convert u32 to i64 sign-extending.
        Repr::I64 => format!("((i64({}) << 32u) | (i64({}) & 4294967295li))", c(2 * j + 1), c(2 * j)),
        Repr::I64Pair => format!("vec2<u32>({}, {})", c(2 * j), c(2 * j + 1)),
        // `reduce_spec` builds no wide kernel for f64.
        Repr::F64 => String::new(),
    }
}

/// The two f16 of a u32 as f32, exactly and without branches (the wide kernels' hot loop):
/// normal numbers rebias the exponent, subnormals scale their integer mantissa, infinities
/// and NaN keep theirs; then the sign.
const F16X2: &str = "fn f16x2(w: u32) -> vec2<f32> {
    let b = vec2<u32>(w & 0xffffu, w >> 16u);
    let h = b & vec2<u32>(0x7fffu);
    let normal = bitcast<vec2<f32>>((h << vec2<u32>(13u)) + vec2<u32>(0x38000000u));
    let sub = vec2<f32>(h) * 5.9604644775390625e-8;
    let special = bitcast<vec2<f32>>((h << vec2<u32>(13u)) | vec2<u32>(0x7f800000u));
    let v = select(select(normal, sub, h < vec2<u32>(0x400u)), special, h >= vec2<u32>(0x7c00u));
    return bitcast<vec2<f32>>(bitcast<vec2<u32>>(v) | ((b & vec2<u32>(0x8000u)) << vec2<u32>(16u)));
}
";

/// The unrolled load-then-combine blocks of `kernel` (see `shaders/reduce.wgsl`).
fn block_code(kernel: Kernel, r: Repr) -> String {
    let u = kernel.unroll();
    let mut s = format!("const UNROLL: u32 = {u}u;\n");
    if kernel.wide() && matches!(r, Repr::F16 | Repr::F16Packed) {
        s += F16X2;
    }
    if !kernel.wide() {
        s += "fn push_block(s0: S, k: u32, dk: u32, r: u32, step: u32) -> S {\n";
        for j in 0..u {
            s += &format!("    let v{j} = x_load(k + {j}u * dk);\n");
        }
        s += "    var s = s0;\n";
        for j in 0..u {
            s += &format!("    s = s_push(s, v{j}, idx(k + {j}u * dk, r + {j}u * step));\n");
        }
        return s + "    return s;\n}\n";
    }
    // Wide kernels still compile the scalar walk of the header.
    s += "fn push_block(s: S, k: u32, dk: u32, r: u32, step: u32) -> S { return s; }\n";
    let e = per_word16(r).unwrap_or(1);
    s += &format!("const EPV: u32 = {e}u;\n");
    if kernel == Kernel::RowsWide {
        s += "fn push_wide(s0: S, w: vec4<u32>, r: u32) -> S {\n    var s = s0;\n";
        for j in 0..e {
            s += &format!("    s = s_push(s, {}, r + {j}u);\n", word_elem(r, j));
        }
        s += "    return s;\n}\n";
        s += "fn wide_block(s0: S, b: u32, w: u32, t: u32) -> S {\n";
        for j in 0..u {
            s += &format!("    let w{j} = xw[b + w + {j}u * t];\n");
        }
        s += "    var s = s0;\n";
        for j in 0..u {
            s += &format!("    s = push_wide(s, w{j}, (w + {j}u * t) * EPV);\n");
        }
        return s + "    return s;\n}\n";
    }
    s += "fn cols_init() {\n";
    for j in 0..e {
        s += &format!("    cs[{j}] = s_init();\n");
    }
    s += "}\nfn cols_push(w: vec4<u32>, r: u32) {\n";
    for j in 0..e {
        s += &format!("    cs[{j}] = s_push(cs[{j}], {}, r);\n", word_elem(r, j));
    }
    s += "}\nfn cols_block(k: u32, dk: u32, r: u32, step: u32) {\n";
    for j in 0..u {
        s += &format!("    let w{j} = xw[k + {j}u * dk];\n");
    }
    for j in 0..u {
        s += &format!("    cols_push(w{j}, r + {j}u * step);\n");
    }
    s += "}\nfn cols_finish(tid: u32, y: u32, t: u32, stride: u32, store: bool, o: u32) {\n";
    for j in 0..e {
        s += &format!(
            "    let s{j} = tree(tid, y, t, stride, cs[{j}]);\n    if (store) {{\n        s_store(o + {j}u, s{j});\n    }}\n"
        );
    }
    s + "}\n"
}

/// The dtype holding partials of compute type `c`.
fn partial_dtype(c: Compute) -> DType {
    match c {
        Compute::F32 => DType::F32,
        Compute::F64 => DType::F64,
        Compute::U32 => DType::U32,
        Compute::I64 | Compute::I64e => DType::I64,
    }
}

/// WGSL for "`v` is strictly more extreme than `b`" (a NaN beats every number) for min or max.
fn beats(min: bool, c: Compute) -> &'static str {
    match (c, min) {
        (Compute::F32, true) => "(is_nan(v) && !is_nan(b)) || v < b",
        (Compute::F32, false) => "(is_nan(v) && !is_nan(b)) || v > b",
        (Compute::F64, true) => "(nan64(v) && !nan64(b)) || v < b",
        (Compute::F64, false) => "(nan64(v) && !nan64(b)) || v > b",
        (Compute::I64e, true) => "i64e_lt(v, b)",
        (Compute::I64e, false) => "i64e_lt(b, v)",
        (_, true) => "v < b",
        (_, false) => "v > b",
    }
}

/// WGSL for the value no element is more extreme than (min: the largest; max: the smallest).
fn identity(min: bool, c: Compute) -> &'static str {
    match (c, min) {
        (Compute::F32, true) => "f32_of_bits(0x7f800000u)",
        (Compute::F32, false) => "f32_of_bits(0xff800000u)",
        (Compute::F64, true) => "f64(f32_of_bits(0x7f800000u))",
        (Compute::F64, false) => "f64(f32_of_bits(0xff800000u))",
        (Compute::U32, true) => "0xffffffffu",
        (Compute::U32, false) => "0u",
        (Compute::I64, true) => "I64_MAX",
        // naga cannot fold -MAX - 1 for i64; -2^63 converts exactly from f32.
        (Compute::I64, false) => "i64(I64_MIN_F)",
        (Compute::I64e, true) => "I64E_MAX",
        (Compute::I64e, false) => "I64E_MIN",
    }
}

/// The reduction state `S` for `dtype` input, its functions and the output store (see
/// `shaders/reduce.wgsl`).
fn state_code(op: ReduceOp, dtype: DType, c: Compute, stage: Stage) -> String {
    let v = c.wgsl();
    let mut s = format!("alias V = {v};\n");
    if c == Compute::F64 {
        // `!=` may be lowered as an ordered compare (false for NaN).
        s.push_str("fn nan64(v: f64) -> bool { return !(v == v); }\n");
    }
    let min = matches!(op, ReduceOp::Min | ReduceOp::ArgMin);
    match op {
        // f32 sums carry a compensation term so that they round about once, as the reference's
        // f64 sum does; f16 and bf16 have 13 and 16 bits to spare in a plain f32 sum.
        ReduceOp::Sum if dtype == DType::F32 => {
            // (sum, compensation): Knuth's two-sum keeps each addition's rounding error. The
            // compiler must not see through t and z, or it simplifies (a + b) - a to b.
            s.push_str(
                "struct S { v: vec2<f32>, i: u32 }\n\
                 fn s_init() -> S { return S(vec2<f32>(0.0, 0.0), NONE); }\n\
                 fn two_sum(a: vec2<f32>, b: f32, e: f32) -> vec2<f32> {\n    \
                 let t = opaque(a.x + b);\n    let z = opaque(t - a.x);\n    \
                 return vec2<f32>(t, a.y + e + ((a.x - (t - z)) + (b - z)));\n}\n\
                 fn s_push(s: S, v: f32, i: u32) -> S { return S(two_sum(s.v, v, 0.0), NONE); }\n\
                 fn s_merge(a: S, b: S) -> S { return S(two_sum(a.v, b.v.x, b.v.y), NONE); }\n\
                 // An infinite or NaN sum stands as it is (its compensation is NaN).\n\
                 fn s_fin(s: S) -> f32 {\n    \
                 return select(s.v.x + s.v.y, s.v.x, (bitcast<u32>(s.v.x) & 0x7f800000u) == 0x7f800000u);\n}\n",
            );
        }
        ReduceOp::Sum => {
            let add = if c == Compute::I64e { "i64e_add(a, b)" } else { "a + b" };
            let zero = c.lit(0.0);
            s += &format!(
                "struct S {{ v: V, i: u32 }}\n\
                 fn add(a: V, b: V) -> V {{ return {add}; }}\n\
                 fn s_init() -> S {{ return S({zero}, NONE); }}\n\
                 fn s_push(s: S, v: V, i: u32) -> S {{ return S(add(s.v, v), NONE); }}\n\
                 fn s_merge(a: S, b: S) -> S {{ return S(add(a.v, b.v), NONE); }}\n\
                 fn s_fin(s: S) -> V {{ return s.v; }}\n"
            );
        }
        ReduceOp::Min | ReduceOp::Max => {
            s += &format!(
                "struct S {{ v: V, i: u32 }}\n\
                 fn beats(v: V, b: V) -> bool {{ return {}; }}\n\
                 fn s_init() -> S {{ return S({}, NONE); }}\n\
                 fn s_push(s: S, v: V, i: u32) -> S {{ return S(select(s.v, v, beats(v, s.v)), NONE); }}\n\
                 fn s_merge(a: S, b: S) -> S {{ return S(select(a.v, b.v, beats(b.v, a.v)), NONE); }}\n\
                 fn s_fin(s: S) -> V {{ return s.v; }}\n",
                beats(min, c),
                identity(min, c)
            );
        }
        ReduceOp::ArgMin | ReduceOp::ArgMax => {
            // (v, i) replaces the state when v is more extreme, or as extreme (equal, or both
            // NaN) at a smaller index: the first extreme wins in any order of combination.
            s += &format!(
                "struct S {{ v: V, i: u32 }}\n\
                 fn beats(v: V, b: V) -> bool {{ return {}; }}\n\
                 fn takes(s: S, v: V, i: u32) -> bool {{ return beats(v, s.v) || (!beats(s.v, v) && i < s.i); }}\n\
                 fn s_init() -> S {{ return S({}, NONE); }}\n\
                 fn s_push(s: S, v: V, i: u32) -> S {{\n    if (takes(s, v, i)) {{\n        return S(v, i);\n    }}\n    return s;\n}}\n\
                 fn s_merge(a: S, b: S) -> S {{\n    if (takes(a, b.v, b.i)) {{\n        return b;\n    }}\n    return a;\n}}\n\
                 fn s_fin(s: S) -> V {{ return s.v; }}\n",
                beats(min, c),
                identity(min, c)
            );
        }
    }
    let idx = if stage == Stage::Second && op.is_arg() { "xi_load(k)" } else { "r" };
    s += &format!("fn idx(k: u32, r: u32) -> u32 {{ return {idx}; }}\n");
    let store = match (stage, op.is_arg()) {
        (Stage::First, true) => "y_store(o, s.v);\n    yi_store(o, s.i);",
        (_, true) => "y_store(o, s.i);",
        (_, false) => "y_store(o, s_fin(s));",
    };
    s += &format!("fn s_store(o: u32, s: S) {{\n    {store}\n}}\n");
    s
}

/// The kernel of one pass of `op` over `dtype` input; the wide kernels only read the input.
fn reduce_spec(caps: Caps, op: ReduceOp, dtype: DType, kernel: Kernel, stage: Stage) -> Result<Spec> {
    let r = Repr::of(dtype, caps, op.name())?;
    let c = r.compute();
    let part = Repr::of(partial_dtype(c), caps, op.name())?;
    let x = if stage == Stage::Second { part } else { r };
    if kernel.wide() && (stage == Stage::Second || per_word16(x).is_none()) {
        let msg = format!("no wide {} kernel for {dtype} in stage {stage:?}", op.name());
        return Err(Error::Backend { backend: BackendKind::Wgpu, msg });
    }
    let mut spec = Spec::new(Family::Reduce, kernel.entry(), caps).bind("x", x, Access::Read, Index::None);
    if kernel.wide() {
        spec = spec.bind("xw", x, Access::Wide, Index::None);
    }
    if stage == Stage::Second && op.is_arg() {
        spec = spec.bind("xi", Repr::U32, Access::Read, Index::None);
    }
    let y = match (stage, op.is_arg()) {
        (Stage::First, _) => part,
        (_, true) => Repr::U32,
        (_, false) => r,
    };
    // Update: an output word of a sub-word dtype is shared by outputs of several workgroups.
    spec = spec.bind("y", y, Access::Update, Index::None);
    if stage == Stage::First && op.is_arg() {
        spec = spec.bind("yi", Repr::U32, Access::Update, Index::None);
    }
    spec.workgroup = WG as u32;
    Ok(spec.code(state_code(op, dtype, c, stage)).code(block_code(kernel, x)))
}

/// The input seen as kept dims (outer, row-major over the outputs) then reduced dims, each
/// group with size-1 dims dropped and mergeable neighbours merged; (size, stride) pairs.
#[derive(Clone, Debug, PartialEq, Eq)]
struct View {
    offset: u64,
    kept: Vec<(u64, u64)>,
    red: Vec<(u64, u64)>,
}

fn merged(dims: impl Iterator<Item = (usize, usize)>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = vec![];
    for (n, s) in dims.map(|(n, s)| (n as u64, s as u64)) {
        if n == 1 {
            continue;
        }
        match out.last_mut() {
            Some((pn, ps)) if *ps == s * n => {
                *pn *= n;
                *ps = s;
            }
            _ => out.push((n, s)),
        }
    }
    out
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
    /// Records `pass` over `view`; `bufs` follow the bindings of `spec`.
    fn reduce_pass(&self, spec: &Spec, view: &View, pass: &Pass, bufs: &[&wgpu::Buffer]) -> Result<()> {
        let meta = spec.meta(pass.invocations as u32, &[], &view.extra(pass.chunks, pass.chunk, pass.width));
        self.run(spec, bufs, &meta, pass.invocations)
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
            let spec = reduce_spec(caps, op, x.dtype, pass.kernel, Stage::Whole)?;
            return self.reduce_pass(&spec, &view, &pass, &[input, &[y.buffer()]].concat()).map(|()| y);
        }
        // Partials laid out so that the second pass reads them as the first read its input:
        // rows write [outputs, chunks] (a row per output), cols write [chunks, outputs].
        let spec = reduce_spec(caps, op, x.dtype, pass.kernel, Stage::First)?;
        let n = (outputs * pass.chunks) as usize;
        let parts = self.storage(partial_dtype(repr.compute()), n)?;
        let ids = if op.is_arg() { Some(self.storage(DType::U32, n)?) } else { None };
        let ids = ids.as_ref().map(|s| s.buffer());
        let bufs: Vec<&wgpu::Buffer> = input.iter().copied().chain([parts.buffer()]).chain(ids).collect();
        self.reduce_pass(&spec, &view, &pass, &bufs)?;
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
        let spec = reduce_spec(caps, op, x.dtype, Kernel::Rows, Stage::Second)?;
        let bufs: Vec<&wgpu::Buffer> = [parts.buffer()].into_iter().chain(ids).chain([y.buffer()]).collect();
        self.reduce_pass(&spec, &second, &pass2, &bufs)?;
        Ok(y)
    }
}

/// Every reduce kernel for `caps`: `{op}_{dtype}` is the one-pass rows kernel; suffixes name
/// the other kernels and the passes of a chunked reduction.
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    use crate::spec::kernel_name;
    let mut v = vec![];
    for dt in caps.dtypes() {
        let wide = Repr::of(dt, caps, "").ok().and_then(per_word16).is_some();
        for &op in ReduceOp::ALL {
            let name = kernel_name(op.name(), dt);
            for kernel in Kernel::ALL.into_iter().filter(|k| wide || !k.wide()) {
                for (stage, s) in [(Stage::Whole, ""), (Stage::First, "_first"), (Stage::Second, "_second")] {
                    if !(kernel.wide() && stage == Stage::Second) {
                        v.push((format!("{name}{}{s}", kernel.suffix()), reduce_spec(caps, op, dt, kernel, stage)));
                    }
                }
            }
        }
    }
    v
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
