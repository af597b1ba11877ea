//! How each dtype lives in a WGSL storage buffer on a given adapter, and the WGSL that loads,
//! stores and converts it. Kernels compute in a few "compute types": f32 (for f16, bf16, f32),
//! f64, u32 (for u8, u32), i64 and, without `SHADER_INT64`, `vec2<u32>` as an emulated i64.

use crate::{BackendKind, DType, Error, Result};
use std::fmt::Write;

/// The adapter capabilities that change how dtypes are represented.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Caps {
    /// `SHADER_F16`: `array<f16>` buffers.
    pub f16: bool,
    /// `SHADER_F64`.
    pub f64: bool,
    /// `SHADER_INT64`.
    pub i64: bool,
    /// Subgroup operations.
    pub subgroup: bool,
}

impl Caps {
    /// Every combination of the features (for shader validation tests).
    pub fn all_combinations() -> Vec<Caps> {
        (0..16).map(|b| Caps { f16: b & 1 != 0, f64: b & 2 != 0, i64: b & 4 != 0, subgroup: b & 8 != 0 }).collect()
    }

    /// The dtypes a kernel may use with these caps.
    pub fn dtypes(self) -> Vec<DType> {
        DType::ALL.iter().copied().filter(|&d| d != DType::F64 || self.f64).collect()
    }
}

/// The type kernels compute in for a dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compute {
    /// f32, for every float but f64.
    F32,
    /// f64 (with `SHADER_F64`).
    F64,
    /// u32, for u8 and u32.
    U32,
    /// i64 (with `SHADER_INT64`).
    I64,
    /// An i64 as `vec2<u32>(lo, hi)`, two's complement, with the functions of `shaders/i64.wgsl`.
    I64e,
}

impl Compute {
    /// The WGSL type.
    pub fn wgsl(self) -> &'static str {
        match self {
            Compute::F32 => "f32",
            Compute::F64 => "f64",
            Compute::U32 => "u32",
            Compute::I64 => "i64",
            Compute::I64e => "vec2<u32>",
        }
    }

    /// A name part for functions of this type (`param_i64e`).
    pub fn short(self) -> &'static str {
        match self {
            Compute::F32 => "f32",
            Compute::F64 => "f64",
            Compute::U32 => "u32",
            Compute::I64 => "i64",
            Compute::I64e => "i64e",
        }
    }

    /// Whether it is a float type.
    pub fn is_float(self) -> bool {
        matches!(self, Compute::F32 | Compute::F64)
    }

    /// A WGSL literal of this type for a small integer or float value.
    pub fn lit(self, v: f64) -> String {
        match self {
            Compute::F32 => format!("{v:?}f"),
            Compute::F64 => format!("{v:?}lf"),
            Compute::U32 => format!("{}u", v as u32),
            Compute::I64 => format!("{}li", v as i64),
            Compute::I64e => {
                let x = v as i64;
                format!("vec2<u32>({}u, {}u)", x as u32, (x >> 32) as u32)
            }
        }
    }
}

/// How a dtype sits in a storage buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Repr {
    /// `array<f32>`.
    F32,
    /// `array<f16>` (with `SHADER_F16`).
    F16,
    /// Two f16 per u32 word.
    F16Packed,
    /// Two bf16 per u32 word.
    BF16,
    /// Four u8 per u32 word.
    U8,
    /// `array<u32>`.
    U32,
    /// `array<i64>` (with `SHADER_INT64`).
    I64,
    /// Two u32 words per i64.
    I64Pair,
    /// `array<f64>` (with `SHADER_F64`).
    F64,
}

impl Repr {
    /// The representation of `dtype` with `caps`; f64 without `SHADER_F64` is unsupported.
    pub fn of(dtype: DType, caps: Caps, op: &'static str) -> Result<Repr> {
        Ok(match dtype {
            DType::F32 => Repr::F32,
            DType::F16 if caps.f16 => Repr::F16,
            DType::F16 => Repr::F16Packed,
            DType::BF16 => Repr::BF16,
            DType::U8 => Repr::U8,
            DType::U32 => Repr::U32,
            DType::I64 if caps.i64 => Repr::I64,
            DType::I64 => Repr::I64Pair,
            DType::F64 if caps.f64 => Repr::F64,
            DType::F64 => {
                return Err(Error::UnsupportedDType {
                    backend: BackendKind::Wgpu,
                    op,
                    dtype,
                    reason: "the adapter lacks SHADER_F64".into(),
                });
            }
        })
    }

    /// The type kernels compute in for this representation.
    pub fn compute(self) -> Compute {
        match self {
            Repr::F32 | Repr::F16 | Repr::F16Packed | Repr::BF16 => Compute::F32,
            Repr::U8 | Repr::U32 => Compute::U32,
            Repr::I64 => Compute::I64,
            Repr::I64Pair => Compute::I64e,
            Repr::F64 => Compute::F64,
        }
    }

    /// Elements per u32 word for sub-word types, else 1.
    pub fn per_word(self) -> u32 {
        match self {
            Repr::U8 => 4,
            Repr::F16Packed | Repr::BF16 => 2,
            _ => 1,
        }
    }

    fn packed(self) -> bool {
        self.per_word() > 1
    }

    /// Whether bindings of this repr can be viewed as `array<vec4<T>>` (2- and 4-byte types;
    /// buffers are allocated in multiples of 16 bytes, so a last partial vector stays inside).
    pub fn vectorizes(self) -> bool {
        matches!(self, Repr::F32 | Repr::U32 | Repr::F16)
    }

    /// The element type of the WGSL array.
    fn array_elem(self, atomic: bool) -> &'static str {
        match self {
            Repr::F32 if atomic => "atomic<u32>",
            Repr::F32 => "f32",
            Repr::F16 => "f16",
            Repr::I64 => "i64",
            Repr::F64 => "f64",
            _ if atomic => "atomic<u32>",
            _ => "u32",
        }
    }

    /// WGSL bits of element `i` (a u32 holding the bits at the bottom) to the compute type.
    pub(crate) fn unpack(self, bits: &str) -> String {
        match self {
            Repr::U8 => format!("(({bits}) & 0xffu)"),
            Repr::F16Packed => format!("f16_to_f32(({bits}) & 0xffffu)"),
            Repr::BF16 => format!("bitcast<f32>(({bits}) << 16u)"),
            Repr::F32 => format!("bitcast<f32>({bits})"),
            _ => bits.to_string(),
        }
    }

    /// WGSL compute value `v` to its bits in the low bits of a u32.
    pub(crate) fn pack(self, v: &str) -> String {
        match self {
            Repr::U8 => format!("(({v}) & 0xffu)"),
            Repr::F16Packed => format!("f32_to_f16({v})"),
            Repr::BF16 => format!("bf16_bits({v})"),
            Repr::F32 => format!("bitcast<u32>({v})"),
            _ => v.to_string(),
        }
    }
}

/// How a kernel uses a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Read-only: `NAME_load(i)`.
    Read,
    /// A fresh contiguous output written in whole words: `NAME_set(i, v)` for the elements
    /// of word `w` (`NAME_EPW` of them), then `NAME_flush(w)` (an invocation may write several
    /// words, one after the other).
    Write,
    /// Read-write at any element: `NAME_load(i)`, `NAME_store(i, v)`; sub-word types update
    /// their word atomically (compare-exchange), so neighbours may be written concurrently.
    Update,
    /// Read-only raw 16-byte words, `array<vec4<u32>>` (no helpers): wide loads that the
    /// kernel decodes itself.
    Wide,
}

/// WGSL declaring binding `slot` named `name` of repr `r` used as `access`, with its helpers;
/// `vec` views it as vectors of four (reads: `NAME_load4(i)`, writes: `NAME_set4(i, v)`, `i` a
/// multiple of 4).
pub fn binding(name: &str, slot: u32, r: Repr, access: Access, vec: bool) -> String {
    if access == Access::Wide {
        return format!("@group(0) @binding({slot}) var<storage, read> {name}: array<vec4<u32>>;\n");
    }
    if vec && r.vectorizes() && access != Access::Update {
        return vec_binding(name, slot, r, access);
    }
    let c = r.compute().wgsl();
    let upper = name.to_uppercase();
    // Update views f16 as packed words so that neighbours can be stored atomically.
    let r = if access == Access::Update && r == Repr::F16 { Repr::F16Packed } else { r };
    let atomic =
        access == Access::Update && matches!(r, Repr::F32 | Repr::U32 | Repr::U8 | Repr::F16Packed | Repr::BF16);
    let mode = if access == Access::Read { "read" } else { "read_write" };
    let mut s = format!("@group(0) @binding({slot}) var<storage, {mode}> {name}: array<{}>;\n", r.array_elem(atomic));
    let epw = r.per_word();
    let word =
        |i: &str| -> String { if atomic { format!("atomicLoad(&{name}[{i}])") } else { format!("{name}[{i}]") } };
    // Loads.
    let load = match r {
        Repr::F16 => format!("f32({name}[i])"),
        Repr::I64Pair => format!("vec2<u32>({}, {})", word("2u * i"), word("2u * i + 1u")),
        _ if r.packed() => r.unpack(&format!("({} >> ((i % {epw}u) * {}u))", word(&format!("i / {epw}u")), 32 / epw)),
        Repr::F32 if atomic => r.unpack(&word("i")),
        Repr::U32 if atomic => word("i"),
        _ => format!("{name}[i]"),
    };
    let _ = writeln!(s, "fn {name}_load(i: u32) -> {c} {{ return {load}; }}");
    match access {
        Access::Read | Access::Wide => {}
        Access::Write => {
            let _ = writeln!(s, "const {upper}_EPW: u32 = {epw}u;");
            if r.packed() {
                let bits = 32 / epw;
                let _ = writeln!(s, "var<private> {name}_acc: u32;");
                let _ = writeln!(
                    s,
                    "fn {name}_set(i: u32, v: {c}) {{ {name}_acc |= {} << ((i % {epw}u) * {bits}u); }}",
                    r.pack("v")
                );
                // Clearing the accumulator lets one invocation write several words.
                let _ = writeln!(s, "fn {name}_flush(w: u32) {{ {name}[w] = {name}_acc; {name}_acc = 0u; }}");
            } else {
                let store = direct_store(name, r);
                let _ = writeln!(s, "fn {name}_set(i: u32, v: {c}) {{ {store} }}");
                let _ = writeln!(s, "fn {name}_flush(w: u32) {{}}");
            }
        }
        Access::Update => {
            if r.packed() {
                let bits = 32 / epw;
                let mask = (1u64 << bits) - 1;
                let _ = writeln!(
                    s,
                    "fn {name}_store(i: u32, v: {c}) {{\n    let w = i / {epw}u;\n    let sh = (i % {epw}u) * {bits}u;\n    \
                     let m = {mask}u << sh;\n    let nv = {} << sh;\n    var old = atomicLoad(&{name}[w]);\n    \
                     loop {{\n        let r = atomicCompareExchangeWeak(&{name}[w], old, (old & ~m) | nv);\n        \
                     if (r.exchanged) {{ break; }}\n        old = r.old_value;\n    }}\n}}",
                    r.pack("v")
                );
            } else if atomic {
                let _ = writeln!(s, "fn {name}_store(i: u32, v: {c}) {{ atomicStore(&{name}[i], {}); }}", r.pack("v"));
            } else {
                let store = direct_store(name, r);
                let _ = writeln!(s, "fn {name}_store(i: u32, v: {c}) {{ {store} }}");
            }
        }
    }
    s
}

fn vec_binding(name: &str, slot: u32, r: Repr, access: Access) -> String {
    let c = r.compute().wgsl();
    let elem = r.array_elem(false);
    let mode = if access == Access::Read { "read" } else { "read_write" };
    let mut s = format!("@group(0) @binding({slot}) var<storage, {mode}> {name}: array<vec4<{elem}>>;\n");
    if access == Access::Read {
        let _ = writeln!(s, "fn {name}_load4(i: u32) -> vec4<{c}> {{ return vec4<{c}>({name}[i >> 2u]); }}");
        // One element too, so that a kernel's element-wise code compiles beside its vector code.
        let _ = writeln!(s, "fn {name}_load(i: u32) -> {c} {{ return {c}({name}[i >> 2u][i & 3u]); }}");
    } else {
        let _ = writeln!(s, "fn {name}_set4(i: u32, v: vec4<{c}>) {{ {name}[i >> 2u] = vec4<{elem}>(v); }}");
    }
    s
}

fn direct_store(name: &str, r: Repr) -> String {
    match r {
        Repr::F16 => format!("{name}[i] = f16(v);"),
        Repr::I64Pair => format!("{name}[2u * i] = v.x; {name}[2u * i + 1u] = v.y;"),
        _ => format!("{name}[i] = v;"),
    }
}

/// WGSL converting a value of `from` (in its compute type) to `to` (in its compute type) with
/// the crate's cast rules: float to int truncates and saturates (NaN to 0); int to int wraps;
/// into a float rounds to nearest.
pub fn convert(from: DType, to: DType, fr: Repr, tr: Repr, v: &str) -> String {
    let (fc, tc) = (fr.compute(), tr.compute());
    if from == to || (fc == tc && !(to == DType::U8 && from != DType::U8)) {
        return v.to_string();
    }
    match (fc, tc) {
        // Into u8: floats saturate to [0, 255]; integers wrap to the low byte.
        (Compute::F32, Compute::U32) if to == DType::U8 => format!("min(f32_to_u32({v}), 255u)"),
        (Compute::F64, Compute::U32) if to == DType::U8 => format!("min(f64_to_u32({v}), 255u)"),
        (Compute::U32, Compute::U32) => format!("(({v}) & 0xffu)"),
        (Compute::I64, Compute::U32) if to == DType::U8 => format!("(u32({v} & 255li))"),
        (Compute::I64e, Compute::U32) if to == DType::U8 => format!("(({v}).x & 0xffu)"),
        (Compute::F32, Compute::U32) => format!("f32_to_u32({v})"),
        (Compute::F64, Compute::U32) => format!("f64_to_u32({v})"),
        (Compute::I64, Compute::U32) => format!("u32({v} & 4294967295li)"),
        (Compute::I64e, Compute::U32) => format!("({v}).x"),
        (Compute::U32, Compute::F32) => format!("f32({v})"),
        (Compute::U32, Compute::F64) => format!("f64({v})"),
        // Masked: naga may sign-extend a u32 widened to i64.
        (Compute::U32, Compute::I64) => format!("(i64({v}) & 4294967295li)"),
        (Compute::U32, Compute::I64e) => format!("vec2<u32>({v}, 0u)"),
        (Compute::F32, Compute::F64) => format!("f64({v})"),
        (Compute::F64, Compute::F32) => format!("f32({v})"),
        (Compute::F32, Compute::I64) => format!("f32_to_i64({v})"),
        (Compute::F64, Compute::I64) => format!("f64_to_i64({v})"),
        (Compute::I64, Compute::F32) => format!("f32({v})"),
        (Compute::I64, Compute::F64) => format!("f64({v})"),
        (Compute::F32, Compute::I64e) => format!("i64e_from_f32({v})"),
        (Compute::F64, Compute::I64e) => format!("i64e_from_f64({v})"),
        (Compute::I64e, Compute::F32) => format!("i64e_to_f32({v})"),
        (Compute::I64e, Compute::F64) => format!("i64e_to_f64({v})"),
        // Same compute type (handled above), or both i64 representations, which one adapter
        // never has at once.
        (Compute::F32, Compute::F32)
        | (Compute::F64, Compute::F64)
        | (Compute::I64, Compute::I64)
        | (Compute::I64e, Compute::I64e)
        | (Compute::I64, Compute::I64e)
        | (Compute::I64e, Compute::I64) => v.to_string(),
    }
}

/// Scalars passed to a kernel through its metadata, three words each, and the WGSL that reads
/// them back: `param(k)` of the compute type.
pub mod params {
    use super::Compute;
    use crate::Scalar;

    /// Words for `values` as the compute type `c` sees them (f64 as its bits, low word first:
    /// every f64, infinities and subnormals included, comes back exactly).
    pub fn encode(c: Compute, values: &[Scalar]) -> Vec<u32> {
        let mut out = Vec::with_capacity(values.len() * 3);
        for v in values {
            let words = match c {
                Compute::F32 => [v.to::<f32>().to_bits(), 0, 0],
                Compute::F64 => {
                    let bits = v.to_f64().to_bits();
                    [bits as u32, (bits >> 32) as u32, 0]
                }
                Compute::U32 => [v.to::<u32>(), 0, 0],
                Compute::I64 | Compute::I64e => {
                    let x = v.to::<i64>();
                    [x as u32, (x >> 32) as u32, 0]
                }
            };
            out.extend_from_slice(&words);
        }
        out
    }

    /// `fn param(k: u32) -> C`.
    pub fn decoder(c: Compute) -> String {
        decoder_named(c, "param")
    }

    /// `fn param_{c}(k: u32) -> C` (`param_f32`...): the decoder the expression renderer calls,
    /// one per compute type a fused program's parameters take.
    pub fn typed_decoder(c: Compute) -> String {
        decoder_named(c, &format!("param_{}", c.short()))
    }

    /// `fn {name}(k: u32) -> C`.
    fn decoder_named(c: Compute, name: &str) -> String {
        let w = |j: u32| format!("md[EXTRA + 3u * k + {j}u]");
        let body = match c {
            Compute::F32 => format!("bitcast<f32>({})", w(0)),
            // The bits rebuilt arithmetically (reading them as an f64 needs SHADER_INT64).
            Compute::F64 => {
                return format!(
                    "fn {name}(k: u32) -> f64 {{\n    let lo = {};\n    let hi = {};\n    \
                     let e = (hi >> 20u) & 0x7ffu;\n    let m = f64(hi & 0xfffffu) * 4294967296.0lf + f64(lo);\n    \
                     var v = f64();\n    if (e == 0x7ffu) {{\n        v = select(f64_inf(), f64_nan(), m != 0.0lf);\n    }} \
                     else if (e == 0u) {{\n        v = m * 2.220446049250313e-16lf * 2.2250738585072014e-308lf;\n    }} \
                     else {{\n        v = ldexp(m + 4503599627370496.0lf, i32(e) - 1075);\n    }}\n    \
                     return select(v, -v, (hi >> 31u) != 0u);\n}}\n",
                    w(0),
                    w(1)
                );
            }
            Compute::U32 => w(0),
            Compute::I64 => format!("(i64({}) << 32u) | (i64({}) & 4294967295li)", w(1), w(0)),
            Compute::I64e => format!("vec2<u32>({}, {})", w(0), w(1)),
        };
        format!("fn {name}(k: u32) -> {} {{ return {body}; }}\n", c.wgsl())
    }
}
