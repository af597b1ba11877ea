//! Kernel specialisation: a [`Spec`] decides a kernel's whole WGSL source (family file, entry,
//! bindings with their dtype representations, index maps, constants, op code); sources are
//! assembled on first use and their pipelines cached by spec.

use super::repr::{Access, Caps, Compute, Repr, binding};
use crate::Layout;
use crate::spec::Family;
use smallvec::SmallVec;
use std::fmt::Write;

const COMMON: &str = include_str!("../../shaders/common.wgsl");
const I64: &str = include_str!("../../shaders/i64.wgsl");
const F64: &str = include_str!("../../shaders/f64.wgsl");

/// The WGSL file of a family.
pub fn family_source(f: Family) -> &'static str {
    match f {
        Family::Elementwise => include_str!("../../shaders/elementwise.wgsl"),
        Family::Copy => include_str!("../../shaders/copy.wgsl"),
        Family::Reduce => include_str!("../../shaders/reduce.wgsl"),
        Family::Index => include_str!("../../shaders/index.wgsl"),
        Family::Random => include_str!("../../shaders/random.wgsl"),
        Family::Sort => include_str!("../../shaders/sort.wgsl"),
        Family::Upsample => include_str!("../../shaders/upsample.wgsl"),
        Family::Nn => include_str!("../../shaders/nn.wgsl"),
        Family::Pool => include_str!("../../shaders/pool.wgsl"),
        Family::Matmul => include_str!("../../shaders/matmul.wgsl"),
        Family::Conv => include_str!("../../shaders/conv.wgsl"),
        Family::Attention => include_str!("../../shaders/attention.wgsl"),
        Family::Quant => include_str!("../../shaders/quant.wgsl"),
    }
}

/// How a binding's logical element index maps to its storage index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Index {
    /// No `NAME_at` function (the kernel indexes the buffer itself).
    None,
    /// `NAME_at(i) = offset + i`.
    Contiguous,
    /// Row-major `i` through dims and strides of this rank.
    Strided(u8),
}

impl Index {
    /// The simplest map for `l` (dims of size 1 dropped, mergeable dims merged).
    pub fn of(l: &Layout) -> Index {
        let (dims, _) = simplify(l);
        if dims.is_empty() { Index::Contiguous } else { Index::Strided(dims.len() as u8) }
    }

    fn words(self) -> usize {
        match self {
            Index::None => 0,
            Index::Contiguous => 1,
            Index::Strided(r) => 1 + 2 * r as usize,
        }
    }
}

/// `l` as (dims, strides) with size-1 dims dropped and adjacent dims merged where the strides
/// allow; a contiguous layout becomes empty lists.
pub fn simplify(l: &Layout) -> (Words, Words) {
    if l.is_contiguous() {
        return (Words::new(), Words::new());
    }
    let (dims, strides) = crate::layout::coalesce_one(l.dims(), l.strides());
    if dims.len() == 1 && strides[0] == 1 {
        return (Words::new(), Words::new());
    }
    (dims.iter().map(|&d| d as u32).collect(), strides.iter().map(|&s| s as u32).collect())
}

/// Dims or strides of a simplified layout, held inline up to rank 8.
pub type Words = SmallVec<[u32; 8]>;

/// A dispatch's metadata words, held inline up to 64 (most kernels' metadata).
pub type Meta = SmallVec<[u32; 64]>;

/// One buffer of a kernel.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Bind {
    /// The WGSL name of the buffer.
    pub name: &'static str,
    /// How its dtype is stored.
    pub repr: Repr,
    /// Read-only or read-write.
    pub access: Access,
    /// How the kernel indexes it.
    pub index: Index,
    /// Viewed as `array<vec4<T>>`: loads and stores of four aligned, consecutive elements.
    pub vec: bool,
}

impl Bind {
    /// A binding loaded element by element.
    pub fn new(name: &'static str, repr: Repr, access: Access, index: Index) -> Self {
        Bind { name, repr, access, index, vec: false }
    }
}

/// Vectors of four per invocation in the four-lane kernels (grid-strided, so each load stays
/// coalesced). On an H200, 64M-element f32 add: 1 -> 3414 GB/s, 2 -> 4104, 4 -> 4136
/// (torch: 4329); f16 add 2802 / 3822 / 3914.
pub const UNROLL: u32 = 4;

/// `md[1]` of every kernel: the bits of f32 -inf, written by the host, so that a kernel's
/// `max(x, bitcast<f32>(md[1]))` is x to the hardware but opaque to every compiler (which then
/// can neither fuse nor reassociate across it). Bits the kernel built itself would not do: a
/// compiler may prove `0xff800000u | z` is -inf or NaN, and `max` with either is x.
const OPAQUE_NEG_INF: u32 = 0xff80_0000;

/// Invocations a four-lane kernel needs for `n` elements.
pub fn lane_threads(n: usize) -> u64 {
    (n as u64).div_ceil(4 * UNROLL as u64)
}

/// Whether elements `4k..4k+4` of `l` (in logical order) are four consecutive, 4-aligned
/// storage elements, so a binding of `r` can load them as one vector.
pub fn vec_ok(r: Repr, l: &Layout) -> bool {
    if !r.vectorizes() || !l.offset().is_multiple_of(4) {
        return false;
    }
    let (dims, strides) = simplify(l);
    match (dims.last(), strides.last()) {
        (None, _) => true,
        (Some(&d), Some(&1)) => d % 4 == 0 && strides.iter().all(|s| s % 4 == 0 || *s == 1),
        _ => false,
    }
}

/// Everything that decides a kernel's source.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Spec {
    /// The op family (for the cache and the tuning tables).
    pub family: Family,
    /// The WGSL entry point.
    pub entry: &'static str,
    /// The buffers, in binding order.
    pub bindings: Vec<Bind>,
    /// Binds the error-flag buffer (`flags`) after the others: kernels that check index ids.
    pub flags: bool,
    /// `const NAME = VALUE;` lines (VALUE is WGSL text).
    pub consts: Vec<(&'static str, String)>,
    /// Extra WGSL: the op bodies.
    pub code: String,
    /// The adapter features the source is written for.
    pub caps: Caps,
    /// Invocations per workgroup.
    pub workgroup: u32,
    /// Four elements per invocation: every read binding gets `NAME_get4(i)`, the output `NAME_set4`.
    pub lanes: bool,
    /// WGSL extensions the source enables besides f16 (`wgpu_cooperative_matrix`).
    pub enables: Vec<&'static str>,
}

impl Spec {
    /// A spec with no bindings, 256 invocations per workgroup.
    pub fn new(family: Family, entry: &'static str, caps: Caps) -> Spec {
        Spec {
            family,
            entry,
            bindings: vec![],
            flags: false,
            consts: vec![],
            code: String::new(),
            caps,
            workgroup: 256,
            lanes: false,
            enables: vec![],
        }
    }

    /// This spec with one more buffer.
    pub fn bind(mut self, name: &'static str, repr: Repr, access: Access, index: Index) -> Spec {
        self.bindings.push(Bind::new(name, repr, access, index));
        self
    }

    /// This spec with four elements per invocation, on entry `entry`; `vec[k]` says whether
    /// binding `k` loads or stores whole vectors (the others gather lane by lane).
    pub fn lanes(mut self, entry: &'static str, vec: &[bool]) -> Spec {
        self.entry = entry;
        self.lanes = true;
        self.consts.push(("UNROLL", format!("{UNROLL}u")));
        for (b, &v) in self.bindings.iter_mut().zip(vec) {
            b.vec = v && b.repr.vectorizes();
        }
        self
    }

    /// This spec with `const NAME = VALUE;` (VALUE is WGSL text).
    pub fn constant(mut self, name: &'static str, value: impl Into<String>) -> Spec {
        self.consts.push((name, value.into()));
        self
    }

    /// This spec with more WGSL code.
    pub fn code(mut self, code: impl AsRef<str>) -> Spec {
        self.code.push_str(code.as_ref());
        self.code.push('\n');
        self
    }

    /// This spec with the error-flag buffer bound.
    pub fn with_flags(mut self) -> Spec {
        self.flags = true;
        self
    }

    /// The metadata words: `n`, `OPAQUE_NEG_INF`, each indexed binding's layout, then `extra` (at
    /// `EXTRA`).
    pub fn meta(&self, n: u32, layouts: &[&Layout], extra: &[u32]) -> Meta {
        let mut m: Meta = smallvec::smallvec![n, OPAQUE_NEG_INF];
        let mut layouts = layouts.iter();
        for b in &self.bindings {
            if b.index == Index::None {
                continue;
            }
            let l = layouts.next().unwrap_or_else(|| unreachable!("one layout per indexed binding"));
            m.push(l.offset() as u32);
            if let Index::Strided(_) = b.index {
                let (dims, strides) = simplify(l);
                m.extend(dims);
                m.extend(strides);
            }
        }
        m.extend_from_slice(extra);
        m
    }

    fn computes(&self) -> impl Iterator<Item = Compute> + '_ {
        self.bindings.iter().map(|b| b.repr.compute())
    }

    /// The complete WGSL source.
    pub fn source(&self) -> String {
        let mut s = String::new();
        if self.caps.f16 {
            s.push_str("enable f16;\n");
        }
        for e in &self.enables {
            let _ = writeln!(s, "enable {e};");
        }
        let _ = writeln!(s, "const WG: u32 = {}u;", self.workgroup);
        s.push_str(COMMON);
        let uses = |c: Compute| self.computes().any(|x| x == c) || self.code.contains(c.wgsl());
        let f64 = self.caps.f64 && uses(Compute::F64);
        if f64 {
            s.push_str(F64);
        }
        if self.caps.i64 {
            s.push_str(section(I64, "native"));
            if f64 {
                s.push_str(section(I64, "native_f64"));
            }
        } else if uses(Compute::I64e) || self.code.contains("i64e_") {
            // (A conversion into or out of the emulated form may be all a kernel has of it.)
            s.push_str(section(I64, "emulated"));
            if f64 {
                s.push_str(section(I64, "emulated_f64"));
            }
        }
        s.push_str("@group(0) @binding(0) var<storage, read> md: array<u32>;\n");
        let mut pos = 2;
        for (slot, b) in self.bindings.iter().enumerate() {
            s.push_str(&binding(b.name, slot as u32 + 1, b.repr, b.access, b.vec));
            let upper = b.name.to_uppercase();
            match b.index {
                Index::None => {}
                Index::Contiguous => {
                    let _ = writeln!(s, "fn {}_at(i: u32) -> u32 {{ return md[{pos}u] + i; }}", b.name);
                }
                Index::Strided(r) => {
                    let _ = writeln!(s, "const {upper}_META: u32 = {pos}u;");
                    let _ = writeln!(
                        s,
                        "fn {}_at(i: u32) -> u32 {{\n    var rem = i;\n    var off = md[{pos}u];\n    \
                         for (var d = {r}u; d > 0u; d--) {{\n        let size = md[{pos}u + d];\n        \
                         off += (rem % size) * md[{pos}u + {r}u + d];\n        rem /= size;\n    }}\n    return off;\n}}",
                        b.name
                    );
                }
            }
            pos += b.index.words();
            if self.lanes && b.access == Access::Read && b.index != Index::None {
                s.push_str(&get4(b));
            }
        }
        if self.flags {
            let slot = self.bindings.len() + 1;
            let _ = writeln!(s, "@group(0) @binding({slot}) var<storage, read_write> flags: array<atomic<u32>, 5>;");
        }
        let _ = writeln!(s, "const EXTRA: u32 = {pos}u;");
        for (name, value) in &self.consts {
            let _ = writeln!(s, "const {name} = {value};");
        }
        s.push_str(&self.code);
        let src = family_source(self.family);
        s.push_str(header(src));
        s.push_str(section(src, self.entry));
        s
    }

    /// The number of storage buffers bound (metadata and flags included).
    pub fn binding_count(&self) -> usize {
        1 + self.bindings.len() + self.flags as usize
    }

    /// Which bindings (after metadata) are read-only.
    pub fn read_only(&self) -> Vec<bool> {
        let mut v: Vec<bool> = self.bindings.iter().map(|b| matches!(b.access, Access::Read | Access::Wide)).collect();
        if self.flags {
            v.push(false);
        }
        v
    }
}

/// `NAME_get4(i)`: logical elements `i..i+4` of a read binding, as one vector load or four.
fn get4(b: &Bind) -> String {
    let (n, c) = (b.name, b.repr.compute().wgsl());
    let body = if b.vec {
        format!("{n}_load4({n}_at(i))")
    } else {
        let lane = |k: u32| format!("{n}_load({n}_at(i + {k}u))");
        format!("vec4<{c}>({}, {}, {}, {})", lane(0), lane(1), lane(2), lane(3))
    };
    format!("fn {n}_get4(i: u32) -> vec4<{c}> {{ return {body}; }}\n")
}

/// The text of a file before its first `// @kernel` or `// @section` marker.
pub(crate) fn header(src: &str) -> &str {
    let end = [src.find("// @kernel "), src.find("// @section ")].into_iter().flatten().min();
    &src[..end.unwrap_or(src.len())]
}

/// The text after `// @kernel NAME` (or `// @section NAME`) up to the next marker.
pub fn section<'a>(src: &'a str, name: &str) -> &'a str {
    for marker in ["// @kernel ", "// @section "] {
        let tag = format!("{marker}{name}\n");
        if let Some(start) = src.find(&tag) {
            let rest = &src[start + tag.len()..];
            let end = [rest.find("// @kernel "), rest.find("// @section ")].into_iter().flatten().min();
            return &rest[..end.unwrap_or(rest.len())];
        }
    }
    ""
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_simplify_to_their_fewest_dims() {
        let simple = |l: &Layout| {
            let (d, s) = simplify(l);
            (d.to_vec(), s.to_vec())
        };
        assert_eq!(simple(&Layout::contiguous([4, 5, 6])), (vec![], vec![]));
        let t = Layout::contiguous([4, 5]).transpose(0, 1).unwrap();
        assert_eq!(simple(&t), (vec![5, 4], vec![1, 5]));
        let b = Layout::contiguous([5]).broadcast_as(&[3, 5].into()).unwrap();
        assert_eq!(simple(&b), (vec![3, 5], vec![0, 1]));
        let n = Layout::contiguous([4, 6, 2]).narrow(1, 1, 3).unwrap();
        assert_eq!(simple(&n), (vec![4, 6], vec![12, 1]));
    }
}
