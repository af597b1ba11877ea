//! The WGSL of the reduction kernels: their bindings, the per-op state and combine code, and
//! the unrolled load blocks, specialised per op, dtype, kernel and pass.

use crate::spec::Family;
use crate::spec::reduce::ReduceOp;
use crate::wgpu::kernel::{Index, Spec};
use crate::wgpu::repr::{Access, Caps, Compute, Repr};
use crate::{BackendKind, DType, Error, Result};

/// The workgroup size of every kernel (a tree spans at most one workgroup).
pub(super) const WG: u64 = 256;

/// Which kernel walks a reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kernel {
    Rows,
    /// Rows reading 16-byte words: contiguous rows of whole words.
    RowsWide,
    Cols,
    /// Cols with a word of neighbouring outputs per invocation.
    ColsWide,
}

impl Kernel {
    pub(super) const ALL: [Kernel; 4] = [Kernel::Rows, Kernel::RowsWide, Kernel::Cols, Kernel::ColsWide];

    pub(super) fn entry(self) -> &'static str {
        match self {
            Kernel::Rows => "rows",
            Kernel::RowsWide => "rows_wide",
            Kernel::Cols => "cols",
            Kernel::ColsWide => "cols_wide",
        }
    }

    /// The suffix of its kernel names after `{op}_{dtype}`.
    pub(super) fn suffix(self) -> &'static str {
        match self {
            Kernel::Rows => "",
            Kernel::RowsWide => "_wide",
            Kernel::Cols => "_cols",
            Kernel::ColsWide => "_cols_wide",
        }
    }

    pub(super) fn wide(self) -> bool {
        matches!(self, Kernel::RowsWide | Kernel::ColsWide)
    }

    /// Loads issued before they are combined, per invocation (measured on an H200: more
    /// gains nothing).
    pub(super) fn unroll(self) -> u32 {
        if self.wide() { 2 } else { 4 }
    }
}

/// Which pass of a reduction a kernel runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Stage {
    /// The input to the output, in one pass.
    Whole,
    /// The input to one partial per chunk.
    First,
    /// The partials to the output.
    Second,
}

/// Elements of `r` per 16-byte word, for the dtypes the wide kernels decode.
pub(super) fn per_word16(r: Repr) -> Option<u64> {
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
pub(super) fn partial_dtype(c: Compute) -> DType {
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
pub(super) fn reduce_spec(caps: Caps, op: ReduceOp, dtype: DType, kernel: Kernel, stage: Stage) -> Result<Spec> {
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
