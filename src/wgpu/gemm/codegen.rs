//! The pieces of WGSL every GEMM kernel is assembled from: what a kernel needs to know of a
//! problem besides its sizes ([`Variant`]), the element type, the operands' and C's access
//! functions, the A and B instances of an operand section, and the K loop.

use super::tiles::{Kernel, Load};
use crate::expr::Dialect;
use crate::expr::program::Program;
use crate::spec::Family;
use crate::wgpu::fused::op_function;
use crate::wgpu::kernel::{Index, Spec, family_source, header, section};
use crate::wgpu::nn::rows::RowNorm;
use crate::wgpu::render::Wgsl;
use crate::wgpu::repr::{Access, Caps, Compute, Repr};
use crate::{DType, Result};
use std::fmt::Write;

/// What a kernel needs to know of a problem besides its sizes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Variant {
    pub dtype: DType,
    pub a: Load,
    pub b: Load,
    /// Whether C's runs of four are whole and aligned (N a multiple of 4).
    pub c_vec: bool,
    /// A convolution's B, gathered from its image (`shaders/conv.wgsl`).
    pub gather: Option<ConvGather>,
    /// Split-K: the kernel writes each part's f32 products to its own slice, not C.
    pub split: bool,
    /// The program computed where C is stored (never in split-K's parts: in their sum).
    pub epilogue: Option<Epilogue>,
    /// A norm of A's rows computed first (the columns matrix-vector kernel only).
    pub prologue: Option<RowNorm>,
}

impl Variant {
    /// Split-K's sum into C of `dtype` (its source depends on C alone).
    pub fn sum(dtype: DType, c_vec: bool, epilogue: Option<Epilogue>) -> Variant {
        let (a, b) = (Load::Gather, Load::Gather);
        Variant { dtype, a, b, c_vec, gather: None, split: false, epilogue, prologue: None }
    }
}

/// The image gather of a convolution (`transposed`: its transpose) with `kernel` taps, `stride`
/// and `dilation`: a kernel's key holds these, and its WGSL ([`ConvGather::code`]) is generated
/// only when the kernel is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ConvGather {
    pub transposed: bool,
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
}

impl ConvGather {
    /// The gather's WGSL: its window, stride and dilation as constants, so that the tap and
    /// stride divisions of every gathered element compile to multiplies (or vanish at stride 1).
    pub fn code(&self) -> String {
        let ConvGather { transposed, kernel, stride, dilation } = *self;
        let consts = [
            ("CONV_KW", kernel[1]),
            ("CONV_TAPS", kernel[0] * kernel[1]),
            ("CONV_SH", stride[0]),
            ("CONV_SW", stride[1]),
            ("CONV_DH", dilation[0]),
            ("CONV_DW", dilation[1]),
        ];
        let mut s = format!("const CONV_T: bool = {transposed};\n");
        for (name, v) in consts {
            let _ = writeln!(s, "const {name}: i32 = {v};");
        }
        s + section(family_source(Family::Conv), "gather")
    }
}

/// An elementwise program a kernel computes where it stores C: the product, rounded to its
/// dtype as a store would round it, is the program's input 0; bindings `e0`, `e1`, ... (each
/// through its own index map of C's element index) its inputs 1 on. Its result is C's dtype.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Epilogue {
    pub program: Program,
    pub index: Vec<Index>,
}

/// The bindings of an epilogue's inputs (a kernel binds the metadata, A, B and C before them).
pub(crate) const EPILOGUE_INPUTS: [&str; 4] = ["e0", "e1", "e2", "e3"];

impl Epilogue {
    /// `spec` with the epilogue's inputs bound and `fn c_ep(i, v) -> T`: the program's value at
    /// C's element `i` where the product is `v`.
    pub(crate) fn add_to(&self, mut spec: Spec, caps: Caps) -> Result<Spec> {
        let p = &self.program;
        let w = Wgsl { caps, names: &[] };
        let mut loads = vec![w.stored("v".into(), p.inputs[0])];
        for ((&dt, &ix), name) in p.inputs[1..].iter().zip(&self.index).zip(EPILOGUE_INPUTS) {
            spec = spec.bind(name, Repr::of(dt, caps, "fused")?, Access::Read, ix);
            loads.push(format!("{name}_load({name}_at(i))"));
        }
        let ret = Repr::of(p.dtype(), caps, "fused")?.compute();
        // The elementwise maps' helpers (`lt32`, `erf32`, ...), then the program.
        let code = format!("{}{}", header(family_source(Family::Elementwise)), op_function(p, &w, ret));
        Ok(spec.code(code).code(format!("fn c_ep(i: u32, v: T) -> T {{ return T(op({})); }}\n", loads.join(", "))))
    }
}

/// The columns matrix-vector kernel's `pro_setup(lid)` (before its loop) and `a_val(j, i, k)` (A's
/// element `j`, of row `i` at depth `k`, as the product takes it): with a prologue, A's rows are
/// a norm's input, normed by the code the norm's own kernel runs (`nn::rows`): the statistics of
/// its rows by the workgroup's groups of `RN_T` lanes, then each element as it is read.
pub(super) fn prologue_code(caps: Caps, shape: &Variant) -> Result<String> {
    let Some(norm) = shape.prologue else {
        return Ok("fn pro_setup(lid: u32) {}\nfn a_val(j: u32, i: u32, k: u32) -> T { return a_ld(j); }\n".into());
    };
    let io = "fn rn_n() -> u32 { return gmeta(MD_K); }\n\
              fn rn_x(row: u32, e: u32) -> f32 {\n    \
              return f32(a_ld(gmeta(MD_A_OFFSET) + row * gmeta(MD_A_OUTER) + e * gmeta(MD_A_K)));\n}\n\
              fn rn_eps() -> f32 { return bitcast<f32>(gmeta(MD_PRO_EPS)); }\n";
    let setup = "var<private> pro_r: array<vec2<f32>, MV_M>;

// The partial sums' workgroup memory, before the products use it: the sums in x, each row's
// statistics in y and z of its entry.
fn rn_get(i: u32) -> f32 {
    return f32(part[i].x);
}

fn rn_set(i: u32, v: f32) {
    part[i].x = T(v);
}

// Every row's statistics, WG / RN_T rows at a time; every invocation calls (barriers).
fn pro_setup(lid: u32) {
    let g = lid / RN_T;
    let l = lid % RN_T;
    for (var r0 = 0u; r0 < MV_M; r0 += WG / RN_T) {
        let row = r0 + g;
        let r = rn_stats(row, row < MV_M, g, l);
        if (l == 0u && row < MV_M) {
            part[row].y = T(r.x);
            part[row].z = T(r.y);
        }
    }
    workgroupBarrier();
    for (var i = 0u; i < MV_M; i++) {
        pro_r[i] = vec2<f32>(f32(part[i].y), f32(part[i].z));
    }
    workgroupBarrier();
}

fn a_val(j: u32, i: u32, k: u32) -> T {
    return T(rn_out(f32(a_ld(j)), k, pro_r[i]));
}
";
    Ok(format!("{io}{}{}{setup}", norm.params_code("EXTRA + MD_PRO_PARAMS"), norm.code(caps, shape.dtype)?))
}

/// A kernel of the GEMM family: a GEMM, or split-K's sum of the parts into C.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Stage {
    Gemm(Kernel),
    Sum,
}

/// `fn NAME_ld(i) -> T` (element `i`) and `fn NAME_ld4(i) -> vec4<T>` (elements `i..i+4`,
/// `i` a multiple of 4) for an operand bound as raw 16-byte words (f64: as `array<f64>`).
/// `NAME_ld` is `fn NAME_dec(NAME_word(i), i)`: the raw `RAW` holding element `i` (a u32 word,
/// f64 itself), then the element of it, so that a gather can hold words and decode them later.
/// The words bound so also get `fn NAME_raw(i) -> vec4<u32>` (the word holding elements `i..i+4`) and
/// `fn NAME_dec4(w, i) -> vec4<T>` (those elements of it), which `NAME_ld4` is, so that a loader
/// can hold a word and decode it later; and `fn NAME_w8(i)`, eight 2-byte elements as one word.
pub(super) fn input_code(name: &str, r: Repr) -> String {
    let word = |j: &str| format!("{name}[({j}) >> 2u][({j}) & 3u]");
    // Half of a word of eight 2-byte elements: the four at i.
    let half = "let p = select(w.xy, w.zw, (i & 4u) != 0u);\n    ";
    let (one, dec) = match r {
        Repr::F32 => ("bitcast<f32>(w)".to_string(), Some((2, "return bitcast<vec4<f32>>(w)".to_string()))),
        // (naga 30 types `bitcast<vec2<f16>>(u32)` as a scalar: words are unpacked as floats.)
        Repr::F16 => (
            "unpack2x16float(w)[i & 1u]".to_string(),
            Some((3, format!("{half}return vec4<f32>(unpack2x16float(p.x), unpack2x16float(p.y))"))),
        ),
        Repr::F16Packed => (
            "f16_to_f32((w >> ((i & 1u) * 16u)) & 0xffffu)".to_string(),
            Some((
                3,
                format!(
                    "{half}return vec4<f32>(f16_to_f32(p.x & 0xffffu), f16_to_f32(p.x >> 16u), \
                     f16_to_f32(p.y & 0xffffu), f16_to_f32(p.y >> 16u))"
                ),
            )),
        ),
        Repr::BF16 => (
            "bitcast<f32>(select(w << 16u, w & 0xffff0000u, (i & 1u) != 0u))".to_string(),
            Some((
                3,
                format!(
                    "{half}return bitcast<vec4<f32>>(vec4<u32>(p.x << 16u, p.x & 0xffff0000u, p.y << 16u, \
                     p.y & 0xffff0000u))"
                ),
            )),
        ),
        _ => ("w".to_string(), None),
    };
    let raw = match r {
        Repr::F32 => word("i"),
        Repr::F16 | Repr::F16Packed | Repr::BF16 => word("i >> 1u"),
        _ => format!("{name}_load(i)"),
    };
    let mut s = format!(
        "fn {name}_word(i: u32) -> RAW {{ return {raw}; }}\nfn {name}_dec(w: RAW, i: u32) -> T {{ return {one}; }}\n\
         fn {name}_ld(i: u32) -> T {{ return {name}_dec({name}_word(i), i); }}\n"
    );
    match dec {
        Some((shift, dec)) => {
            let _ = writeln!(s, "fn {name}_raw(i: u32) -> vec4<u32> {{ return {name}[i >> {shift}u]; }}");
            let _ = writeln!(s, "fn {name}_dec4(w: vec4<u32>, i: u32) -> vec4<T> {{\n    {dec};\n}}");
            let _ = writeln!(s, "fn {name}_ld4(i: u32) -> vec4<T> {{ return {name}_dec4({name}_raw(i), i); }}");
            let _ = writeln!(s, "fn {name}_w8(i: u32) -> vec4<u32> {{ return {name}[i >> 3u]; }}");
        }
        None => {
            let _ = writeln!(
                s,
                "fn {name}_ld4(i: u32) -> vec4<T> {{\n    return vec4<T>({name}_load(i), {name}_load(i + 1u), \
                 {name}_load(i + 2u), {name}_load(i + 3u));\n}}"
            );
        }
    }
    s
}

/// `fn NAME_run4(base, j, lim, stride) -> vec4<T>`: elements `j..j+4` (those below `lim`,
/// zeros past it) of a run with `stride`; `vec`: stride 1 and `base + j` a multiple of 4.
pub(super) fn run4_code(name: &str, vec: bool) -> String {
    let body = if vec {
        format!(
            "let v = {name}_ld4(base + j);\n    \
             return select(v, vec4<T>(T(0)), vec4<u32>(j) + vec4<u32>(0u, 1u, 2u, 3u) >= vec4<u32>(lim));"
        )
    } else {
        let lane = |c: u32| format!("select(T(0), {name}_ld(base + (j + {c}u) * stride), j + {c}u < lim)");
        format!("return vec4<T>({}, {}, {}, {});", lane(0), lane(1), lane(2), lane(3))
    };
    format!("fn {name}_run4(base: u32, j: u32, lim: u32, stride: u32) -> vec4<T> {{\n    {body}\n}}\n")
}

/// How C is written: `vec`, every run of four is whole, aligned and contiguous.
pub(super) fn output_binding(r: Repr, vec: bool) -> (Access, bool) {
    if r.per_word() > 1 && !vec { (Access::Update, false) } else { (Access::Write, vec && r.vectorizes()) }
}

/// `fn c_put(i, v: T)`, and `fn c_row4(base, j, lim, stride, v: vec4<T>)` storing the
/// elements `j + c < lim` of a row at `base + (j + c) * stride`; with `epilogue`, each the value
/// `c_ep` makes of it.
pub(super) fn output_code(r: Repr, vec: bool, epilogue: bool) -> String {
    let (access, vector) = output_binding(r, vec);
    let put = if access == Access::Update {
        "c_store(i, v);"
    } else if vector {
        // The binding is an array of vectors.
        if r == Repr::F16 { "c[i >> 2u][i & 3u] = f16(v);" } else { "c[i >> 2u][i & 3u] = v;" }
    } else {
        "c_set(i, v);\n    c_flush(i / C_EPW);"
    };
    let (mut s, run) = if epilogue {
        let four = "fn c_ep4(i: u32, v: vec4<T>) -> vec4<T> {\n    \
                    return vec4<T>(c_ep(i, v.x), c_ep(i + 1u, v.y), c_ep(i + 2u, v.z), c_ep(i + 3u, v.w));\n}\n";
        (
            format!("{four}fn c_put(i: u32, product: T) {{\n    let v = c_ep(i, product);\n    {put}\n}}\n"),
            "c_ep4(base + j, v)",
        )
    } else {
        (format!("fn c_put(i: u32, v: T) {{\n    {put}\n}}\n"), "v")
    };
    // With `vec`, a run starting inside the row lies wholly inside it (and is contiguous).
    let row = if vector {
        format!("if (j < lim) {{\n        c_set4(base + j, {run});\n    }}")
    } else if vec && r.per_word() > 1 {
        // Two whole words of two elements each.
        format!(
            "if (j < lim) {{\n        let i = base + j;\n        let w = {run};\n        c_set(i, w.x);\n        \
             c_set(i + 1u, w.y);\n        c_flush(i / 2u);\n        c_set(i + 2u, w.z);\n        c_set(i + 3u, w.w);\n        \
             c_flush(i / 2u + 1u);\n    }}"
        )
    } else {
        // (`c_put` applies the epilogue.)
        "for (var c = 0u; c < 4u; c++) {\n        if (j + c < lim) {\n            \
         c_put(base + (j + c) * stride, v[c]);\n        }\n    }"
            .to_string()
    };
    let _ = writeln!(s, "fn c_row4(base: u32, j: u32, lim: u32, stride: u32, v: vec4<T>) {{\n    {row}\n}}");
    s
}

/// The instance of an operand section for A or B.
pub(super) fn operand(src: &str, section_name: &str, a: bool) -> String {
    let text = section(src, section_name);
    if a {
        text.replace("opnd_", "a_").replace("OPND_", "A_")
    } else {
        text.replace("opnd_", "b_").replace("OPND_", "B_")
    }
}

/// The compute type of the kernels for `r` and the WGSL alias for it.
pub(super) fn element(r: Repr) -> (Compute, String) {
    let c = r.compute();
    let raw = if r == Repr::F64 { "f64" } else { "u32" };
    (c, format!("alias T = {};\nalias RAW = {raw};\n", c.wgsl()))
}

/// The K loop of an entry: K from `k0` (the workgroup's part) in steps of BK, each step's tiles
/// of A and B fetched and staged by the loaders (`a_fetch`, `a_stage`...), then `step` (WGSL at
/// the loop body's indent) on the step's workgroup buffers, which start at entries `ab` and `bb`.
/// `pipe` as `CoopTiles::pipe`: 0, each step fetched then used; 1, the next step fetched into
/// registers while this one is used, one buffer; 2, the same into two buffers of `sizes` (A's
/// and B's) entries each, one barrier a step (the tiled kernel's).
pub(super) fn k_loop(pipe: u32, sizes: [&str; 2], step: &str) -> String {
    let [a, b] = sizes;
    let head = match pipe {
        0 => "    for (var s = 0u; s < steps; s++) {
        a_fetch(k0 + s * BK, lid);
        b_fetch(k0 + s * BK, lid);
        workgroupBarrier();
        a_stage(0u, lid);
        b_stage(0u, lid);
        workgroupBarrier();
        let ab = 0u;
        let bb = 0u;
"
        .to_string(),
        1 => "    if (steps > 0u) {
        a_fetch(k0, lid);
        b_fetch(k0, lid);
    }
    for (var s = 0u; s < steps; s++) {
        workgroupBarrier();
        a_stage(0u, lid);
        b_stage(0u, lid);
        workgroupBarrier();
        if (s + 1u < steps) {
            a_fetch(k0 + (s + 1u) * BK, lid);
            b_fetch(k0 + (s + 1u) * BK, lid);
        }
        let ab = 0u;
        let bb = 0u;
"
        .to_string(),
        _ => format!(
            "    if (steps > 0u) {{
        a_fetch(k0, lid);
        b_fetch(k0, lid);
        a_stage(0u, lid);
        b_stage(0u, lid);
    }}
    workgroupBarrier();
    for (var s = 0u; s < steps; s++) {{
        let cur = s & 1u;
        let more = s + 1u < steps;
        if (more) {{
            a_fetch(k0 + (s + 1u) * BK, lid);
            b_fetch(k0 + (s + 1u) * BK, lid);
        }}
        let ab = cur * {a};
        let bb = cur * {b};
"
        ),
    };
    let tail = if pipe == 2 {
        "        if (more) {
            a_stage(cur ^ 1u, lid);
            b_stage(cur ^ 1u, lid);
        }
        workgroupBarrier();
    }
"
    } else {
        "    }\n"
    };
    format!("    let steps = (k_end(k0) - k0 + BK - 1u) / BK;\n{head}{step}{tail}")
}
