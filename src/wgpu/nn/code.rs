//! The WGSL of the nn kernels: the lines kernels' state, combine and store code per op and
//! variant, and batch_norm's elementwise kernel.

use crate::spec::Family;
use crate::spec::nn::NnOp;
use crate::wgpu::kernel::{Index, Spec, family_source, section};
use crate::wgpu::repr::{Access, Caps, Compute, Repr, params};
use crate::{DType, Result};
use std::fmt::Write;

/// Tuning, not yet measured on a GPU (chosen on lavapipe, which covers every path; the H100
/// run decides): units of four elements a lane holds per tile in short lines, and in lines of
/// more than `4 * SHORT_UNITS * 64` elements (a line of 16384 f32 is then read once by 256
/// lanes of 64 registers, so that two workgroups share an SM's register file); lanes per line
/// at most; the workgroup size where several lines share one; neighbouring lines per workgroup
/// in the cols mapping, at most.
pub(super) const SHORT_UNITS: u32 = 4;
pub(super) const LONG_UNITS: u32 = 16;
pub(super) const MAX_LANES: u32 = 256;
pub(super) const LINES_WG: u32 = 256;
pub(super) const COLS_LINES: u64 = 32;

/// How a lines kernel stores a unit of four outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Store {
    /// One vector store (contiguous lines whose length is a multiple of 4).
    Vec,
    /// Element by element, whole words at a time (4-byte types; or 16-bit ones in contiguous
    /// lines of even length, so that no word is shared by two lanes).
    Words,
    /// Element by element, each updating its word atomically (16-bit types otherwise).
    Atomic,
}

/// Everything that decides a lines kernel's source besides the dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Variant {
    pub op: NnOp,
    pub subgroup: bool,
    /// `lines_sg` with a whole workgroup per line (`WHOLE`), else a subgroup per line.
    pub whole: bool,
    pub wg: u32,
    /// Units of four elements per lane and tile.
    pub units: u32,
    pub x_vec: bool,
    /// The weight and bias (those present) load whole vectors.
    pub p_vec: bool,
    pub store: Store,
    pub weight: bool,
    pub bias: bool,
}

/// The WGSL types and scalar functions of compute type `c`.
fn types(c: Compute) -> String {
    let f64 = c == Compute::F64;
    let a = c.wgsl();
    // exp and log see no non-finite argument that decides a result in f32: softmax's `finish`
    // states the NaN of a line whose max is not finite (WGSL leaves exp and log of NaN and
    // infinities to the implementation; SwiftShader's exp(NaN) is inf or 0, its log(NaN) finite).
    let (max, exp, log) =
        if f64 { ("max_nan64(a, b)", "f64_exp(v)", "f64_log(v)") } else { ("max_nan(a, b)", "exp(v)", "log(v)") };
    let exp4 = if f64 { "V(f64_exp(v.x), f64_exp(v.y), f64_exp(v.z), f64_exp(v.w))" } else { "exp(v)" };
    format!(
        "alias A = {a};\nalias V = vec4<{a}>;\n\
         var<private> NEG_INF: A;\n\
         fn neg_inf() -> A {{ return NEG_INF; }}\n\
         fn mx(a: A, b: A) -> A {{ return {max}; }}\n\
         fn ex(v: A) -> A {{ return {exp}; }}\n\
         fn ln(v: A) -> A {{ return {log}; }}\n\
         fn ex4(v: V) -> V {{ return {exp4}; }}\n"
    )
}

/// The line state of `op`, its merge and shuffle, the statistics of a tile, and the output of
/// a unit (see `shaders/nn.wgsl`). f64 divides where f32 multiplies by a reciprocal, to round
/// as the reference does.
fn state_code(v: Variant, c: Compute) -> String {
    let f64 = c == Compute::F64;
    let units = |body: &str| -> String { (0..v.units).map(|q| body.replace("{q}", &q.to_string())).collect() };
    let mut s = String::from("var<private> R0: A;\nvar<private> R1: A;\n");
    let fields: &[&str] = match v.op {
        NnOp::Softmax | NnOp::LogSoftmax => {
            s += "struct St { m: A, s: A }\n\
                  fn st_init() -> St { return St(neg_inf(), A(0)); }\n\
                  // A state of max -inf holds nothing (its sum is 0, or NaN from -inf - -inf).\n\
                  fn st_part(a: St, m: A) -> A { return select(a.s * ex(a.m - m), A(0), a.m == neg_inf()); }\n\
                  fn st_merge(a: St, b: St) -> St {\n    let m = mx(a.m, b.m);\n    \
                  return St(m, st_part(a, m) + st_part(b, m));\n}\n\
                  fn pad() -> A { return neg_inf(); }\n\
                  fn tile_stats(u0: u32, tl: u32) -> St {\n    var m = neg_inf();\n";
            s += &units("    m = mx(m, mx(mx(rv[{q}].x, rv[{q}].y), mx(rv[{q}].z, rv[{q}].w)));\n");
            s += "    if (m == neg_inf()) {\n        return St(m, A(0));\n    }\n    var s = A(0);\n";
            s += &units("    let e{q} = ex4(rv[{q}] - V(m));\n    s += (e{q}.x + e{q}.y) + (e{q}.z + e{q}.w);\n");
            s += "    return St(m, s);\n}\n";
            let (r1, out) = match (v.op, f64) {
                (NnOp::Softmax, false) => ("A(1) / st.s", "ex4(v - V(R0)) * R1"),
                (NnOp::Softmax, true) => ("st.s", "ex4(v - V(R0)) / V(R1)"),
                _ => ("ln(st.s)", "(v - V(R0)) - V(R1)"),
            };
            // A line whose max is NaN, +inf (inf - inf) or -inf (every element -inf) is NaN
            // throughout, as in the reference: said once per line, through R1, which every output
            // is multiplied by or has subtracted.
            let spoiled = if f64 {
                ""
            } else {
                "    if ((bitcast<u32>(st.m) & 0x7fffffffu) >= 0x7f800000u) {\n        R1 = f32_of_bits(0x7fc00000u);\n    }\n"
            };
            let _ = writeln!(s, "fn finish(st: St) {{\n    R0 = st.m;\n    R1 = {r1};\n{spoiled}}}");
            let _ = writeln!(s, "fn out4(v: V, k: u32) -> V {{ return {out}; }}");
            &["m", "s"]
        }
        NnOp::LayerNorm => {
            s += "struct St { n: A, mean: A, m2: A }\n\
                  fn st_init() -> St { return St(A(0), A(0), A(0)); }\n\
                  // Chan's merge, the larger (then lower-mean) state first, so that merge(a, b) and\n\
                  // merge(b, a) agree bit for bit.\n\
                  fn st_merge(a0: St, b0: St) -> St {\n    var a = a0;\n    var b = b0;\n    \
                  if (b0.n > a0.n || (b0.n == a0.n && b0.mean < a0.mean)) {\n        a = b0;\n        b = a0;\n    }\n    \
                  if (b.n == A(0)) {\n        return a;\n    }\n    let n = a.n + b.n;\n    let f = b.n / n;\n    \
                  let d = b.mean - a.mean;\n    return St(n, a.mean + d * f, a.m2 + b.m2 + d * d * (a.n * f));\n}\n\
                  fn pad() -> A { return A(0); }\n\
                  // The elements of unit u inside the line.\n\
                  fn valid(u: u32) -> u32 { return min(N - min(4u * u, N), 4u); }\n\
                  // Sums are taken from the tile's first value (when it has one, every unit after\n\
                  // starts with it), so a constant line has its mean exactly and normalises to 0.\n\
                  fn tile_stats(u0: u32, tl: u32) -> St {\n    var cnt = 0u;\n    var sum = A(0);\n    \
                  let k = rv[0].x;\n";
            s += &units(
                "    let c{q} = valid(u0 + {q}u * tl);\n    cnt += c{q};\n    \
                 let s{q} = select(V(0), rv[{q}] - V(k), vec4<bool>(c{q} > 0u, c{q} > 1u, c{q} > 2u, c{q} > 3u));\n    \
                 sum += (s{q}.x + s{q}.y) + (s{q}.z + s{q}.w);\n",
            );
            s += "    if (cnt == 0u) {\n        return st_init();\n    }\n    let mean = k + sum / A(cnt);\n    var m2 = A(0);\n";
            s += &units(
                "    let d{q} = select(V(0), rv[{q}] - V(mean), vec4<bool>(c{q} > 0u, c{q} > 1u, c{q} > 2u, c{q} > 3u));\n    \
                 m2 += (d{q}.x * d{q}.x + d{q}.y * d{q}.y) + (d{q}.z * d{q}.z + d{q}.w * d{q}.w);\n",
            );
            s += "    return St(A(cnt), mean, m2);\n}\n";
            let r1 = if f64 { "sqrt(st.m2 / st.n + param(0u))" } else { "A(1) / sqrt(st.m2 / st.n + param(0u))" };
            let _ = writeln!(s, "fn finish(st: St) {{\n    R0 = st.mean;\n    R1 = {r1};\n}}");
            let scale = if f64 { "(v - V(R0)) / V(R1)" } else { "(v - V(R0)) * R1" };
            let _ = writeln!(s, "fn out4(v: V, k: u32) -> V {{\n    return {};\n}}", affine(scale, v));
            &["n", "mean", "m2"]
        }
        NnOp::RmsNorm => {
            s += "struct St { s: A }\n\
                  fn st_init() -> St { return St(A(0)); }\n\
                  fn st_merge(a: St, b: St) -> St { return St(a.s + b.s); }\n\
                  fn pad() -> A { return A(0); }\n\
                  fn tile_stats(u0: u32, tl: u32) -> St {\n    var s = A(0);\n";
            s += &units(
                "    s += (rv[{q}].x * rv[{q}].x + rv[{q}].y * rv[{q}].y) + (rv[{q}].z * rv[{q}].z + rv[{q}].w * rv[{q}].w);\n",
            );
            s += "    return St(s);\n}\n";
            let r1 = if f64 { "sqrt(st.s / A(N) + param(0u))" } else { "A(1) / sqrt(st.s / A(N) + param(0u))" };
            let _ = writeln!(s, "fn finish(st: St) {{\n    R1 = {r1};\n}}");
            let scale = if f64 { "v / V(R1)" } else { "v * R1" };
            let _ = writeln!(s, "fn out4(v: V, k: u32) -> V {{\n    return {};\n}}", affine(scale, v));
            &["s"]
        }
        // Elementwise: not lines kernels.
        NnOp::BatchNorm | NnOp::LocalResponseNorm | NnOp::LstmCell | NnOp::GruCell => &[],
    };
    if v.subgroup {
        let shuffled: Vec<String> = fields.iter().map(|f| format!("subgroupShuffleXor(s.{f}, off)")).collect();
        let _ = writeln!(s, "fn st_xor(s: St, off: u32) -> St {{ return St({}); }}", shuffled.join(", "));
    }
    s
}

/// `scaled` times the weight, plus the bias, for those present.
fn affine(scaled: &str, v: Variant) -> String {
    let mut e = scaled.to_string();
    if v.weight {
        e = format!("({e}) * w4(k)");
    }
    if v.bias {
        e = format!("{e} + b4(k)");
    }
    e
}

/// Loads and stores of units, and the lane's tile moves, unrolled over the units.
fn io_code(v: Variant, y: Repr) -> String {
    // `{name}(base, k)`: unit k of a line of binding `p` starting at `base`; `fallback` past N.
    let reader = |name: &str, p: &str, stride: &str, fallback: &str, vec: bool| -> String {
        if vec {
            return format!(
                "fn {name}(base: u32, k: u32) -> V {{\n    if (k < N) {{\n        return {p}_load4(base + k);\n    }}\n    \
                 return V({fallback});\n}}\n"
            );
        }
        format!(
            "fn {p}1(base: u32, j: u32) -> A {{\n    if (j < N) {{\n        return {p}_load(base + j * {stride});\n    }}\n    \
             return {fallback};\n}}\n\
             fn {name}(base: u32, k: u32) -> V {{ return V({p}1(base, k), {p}1(base, k + 1u), {p}1(base, k + 2u), \
             {p}1(base, k + 3u)); }}\n"
        )
    };
    let mut s = reader("x4", "x", "SR", "pad()", v.x_vec);
    if v.weight {
        s += &reader("w4_at", "w", "md[EXTRA + M_WST]", "A(0)", v.p_vec);
        s += "fn w4(k: u32) -> V { return w4_at(md[EXTRA + M_WOFF], k); }\n";
    }
    if v.bias {
        s += &reader("b4_at", "b", "md[EXTRA + M_BST]", "A(0)", v.p_vec);
        s += "fn b4(k: u32) -> V { return b4_at(md[EXTRA + M_BOFF], k); }\n";
    }
    let put = match v.store {
        Store::Vec => "    y_set4(ob + k, v);\n".to_string(),
        Store::Words if y.per_word() == 2 => "    y_set(ob + k, v.x);\n    y_set(ob + k + 1u, v.y);\n    \
             y_flush((ob + k) / 2u);\n    if (k + 2u < N) {\n        y_set(ob + k + 2u, v.z);\n        \
             y_set(ob + k + 3u, v.w);\n        y_flush((ob + k) / 2u + 1u);\n    }\n"
            .to_string(),
        Store::Words => (0..4)
            .map(|j| {
                let c = ["x", "y", "z", "w"][j];
                format!("    if (k + {j}u < N) {{\n        y_set(ob + (k + {j}u) * INNER, v.{c});\n    }}\n")
            })
            .collect(),
        // A loop, not four stores: each store is a compare-exchange loop, and a loop holding one
        // is not unrolled, so the kernel has one of them per unit, not four (lavapipe took 40%
        // longer to compile a layer_norm with all of them written out).
        Store::Atomic => "    for (var j = 0u; j < 4u; j++) {\n        if (k + j < N) {\n            \
                          y_store(ob + (k + j) * INNER, v[j]);\n        }\n    }\n"
            .to_string(),
    };
    let _ = write!(
        s,
        "// Unit k (k < N) of the line whose output starts at ob.\nfn put4(ob: u32, k: u32, v: V) {{\n{put}}}\n"
    );
    s += "fn load_tile(base: u32, u0: u32, tl: u32) {\n";
    for q in 0..v.units {
        let _ = writeln!(s, "    rv[{q}] = x4(base, 4u * (u0 + {q}u * tl));");
    }
    s += "}\nfn store_tile(ob: u32, u0: u32, tl: u32) {\n";
    for q in 0..v.units {
        let _ = writeln!(
            s,
            "    let k{q} = 4u * (u0 + {q}u * tl);\n    if (k{q} < N) {{\n        put4(ob, k{q}, out4(rv[{q}], k{q}));\n    }}"
        );
    }
    s + "}\n"
}

/// The lines kernel of `v` for `dtype`.
pub(super) fn lines_spec(caps: Caps, dtype: DType, v: Variant) -> Result<Spec> {
    let r = Repr::of(dtype, caps, v.op.name())?;
    let c = r.compute();
    let mut spec = Spec::new(Family::Nn, if v.subgroup { "lines_sg" } else { "lines" }, caps);
    spec.workgroup = v.wg;
    let bind = |spec: Spec, name: &'static str, access: Access, vec: bool| {
        let mut spec = spec.bind(name, r, access, Index::None);
        if let Some(b) = spec.bindings.last_mut() {
            b.vec = vec;
        }
        spec
    };
    spec = bind(spec, "x", Access::Read, v.x_vec);
    if v.weight {
        spec = bind(spec, "w", Access::Read, v.p_vec);
    }
    if v.bias {
        spec = bind(spec, "b", Access::Read, v.p_vec);
    }
    let access = if v.store == Store::Atomic { Access::Update } else { Access::Write };
    spec = bind(spec, "y", access, v.store == Store::Vec);
    Ok(spec
        .constant("K", format!("{}u", v.units))
        .constant("WHOLE", v.whole.to_string())
        .code(params::decoder(c))
        .code(types(c))
        .code(state_code(v, c))
        .code(io_code(v, r))
        .code(section(family_source(Family::Nn), "line")))
}

/// The batch_norm kernel for `dtype` over `x` indexed as `xi`, with the optional parameters.
pub(super) fn batch_norm_spec(caps: Caps, dtype: DType, xi: Index, weight: bool, bias: bool) -> Result<Spec> {
    let r = Repr::of(dtype, caps, NnOp::BatchNorm.name())?;
    let c = r.compute();
    let mut spec = Spec::new(Family::Nn, "batch_norm", caps)
        .bind("x", r, Access::Read, xi)
        .bind("mean", r, Access::Read, Index::None)
        .bind("variance", r, Access::Read, Index::None);
    let mut e = "(v - mean_load(p(0u, c))) / sqrt(variance_load(p(1u, c)) + param(0u))".to_string();
    if weight {
        spec = spec.bind("w", r, Access::Read, Index::None);
        e = format!("{e} * w_load(p(2u, c))");
    }
    if bias {
        spec = spec.bind("b", r, Access::Read, Index::None);
        e = format!("{e} + b_load(p(3u, c))");
    }
    let a = c.wgsl();
    let code = format!(
        "// Element c of parameter j (mean, var, weight, bias) from its offset and stride.\n\
         fn p(j: u32, c: u32) -> u32 {{ return md[EXTRA + 5u + 2u * j] + c * md[EXTRA + 6u + 2u * j]; }}\n\
         fn bn(v: {a}, c: u32) -> {a} {{ return {e}; }}"
    );
    Ok(spec.bind("y", r, Access::Write, Index::None).code(params::decoder(c)).code(code))
}

/// Every nn kernel for `caps`: `{op}_{dtype}` (lines combined in workgroup memory, scalar loads
/// and stores, 4 units per lane, with the weight and bias the op takes), `_vec` (vector loads and
/// stores, 16 units), `_sg` and `_sg_vec` with subgroups (f32 compute), `_words` (16-bit words
/// stored whole), `batch_norm_{dtype}` with and without (`_plain`) weight and bias, then
/// local_response_norm and the cells (`pointwise::variants`).
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    use crate::spec::kernel_name;
    let mut out = vec![];
    for dt in caps.dtypes().into_iter().filter(|d| DType::FLOAT.contains(d)) {
        let Ok(r) = Repr::of(dt, caps, "nn") else { continue };
        let f32 = r.compute() == Compute::F32;
        for &op in &[NnOp::Softmax, NnOp::LogSoftmax, NnOp::LayerNorm, NnOp::RmsNorm] {
            let name = kernel_name(op.name(), dt);
            let (weight, bias) = (op != NnOp::Softmax && op != NnOp::LogSoftmax, op == NnOp::LayerNorm);
            let store = if r.per_word() == 1 { Store::Words } else { Store::Atomic };
            let plain = Variant {
                op,
                subgroup: false,
                whole: false,
                wg: LINES_WG,
                units: SHORT_UNITS,
                x_vec: false,
                p_vec: false,
                store,
                weight,
                bias,
            };
            let vec = Variant { units: LONG_UNITS, x_vec: true, p_vec: true, store: Store::Vec, ..plain };
            let mut variants = vec![(name.clone(), plain)];
            if r.vectorizes() {
                variants.push((format!("{name}_vec"), vec));
            }
            if caps.subgroup && f32 {
                variants.push((format!("{name}_sg"), Variant { subgroup: true, ..plain }));
                if r.vectorizes() {
                    variants.push((format!("{name}_sg_vec"), Variant { subgroup: true, ..vec }));
                    variants.push((format!("{name}_sg_whole"), Variant { subgroup: true, whole: true, ..vec }));
                }
            }
            if r.per_word() == 2 {
                variants.push((format!("{name}_words"), Variant { store: Store::Words, ..plain }));
            }
            out.extend(variants.into_iter().map(|(n, v)| (n, lines_spec(caps, dt, v))));
        }
        if f32 {
            for (op, weight, bias) in
                [(NnOp::LayerNorm, true, true), (NnOp::LayerNorm, false, false), (NnOp::RmsNorm, true, false)]
            {
                let v = super::rows::RowNorm::of(op, weight, bias);
                let name = format!("{}_rows{}", kernel_name(op.name(), dt), if weight { "" } else { "_plain" });
                out.push((name, super::rows::norm_rows_spec(caps, dt, v)));
            }
        }
        let name = kernel_name(NnOp::BatchNorm.name(), dt);
        out.push((name.clone(), batch_norm_spec(caps, dt, Index::Strided(3), true, true)));
        out.push((format!("{name}_plain"), batch_norm_spec(caps, dt, Index::Contiguous, false, false)));
        out.extend(super::pointwise::variants(caps, dt));
    }
    out
}
