//! The GEMM machinery shared by matmul and the convolutions (`shaders/matmul.wgsl`): a problem
//! in plain numbers ([`Gemm`]), how each operand is loaded ([`Load`]), the kernels
//! ([`Kernel`]: tiled, matrix-vector, cooperative matrix) with their tile configurations as
//! plain structs, the WGSL each one is specialised with, and the dispatch.

use super::coop::CoopTiles;
use super::kernel::{Index, Spec, family_source, header, section};
use super::repr::{Access, Caps, Compute, Repr};
use super::{WgpuBackend, WgpuStorage};
use crate::spec::Family;
use crate::{BackendKind, DType, Error, Result};
use std::fmt::Write;

/// One operand in place: where it starts, its strides along its outer dim (M for A, N for B)
/// and along K, and along each batch dim of the problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Operand {
    pub offset: usize,
    pub outer: usize,
    pub k: usize,
    pub batch: Vec<usize>,
}

/// `C[b] = A[b] B[b]` for every batch index `b` (row-major over `batch`), C contiguous
/// `(batch.., m, n)`. B may instead be gathered by generated code (a convolution's image).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Gemm {
    pub batch: Vec<usize>,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: Operand,
    pub b: Operand,
    /// Words for a gathered B (metadata 13..29).
    pub gather: Vec<u32>,
    /// C is stored transposed, `(batch.., n, m)`: the problem is the transpose of the one
    /// asked (matrix-vector kernels only).
    pub c_transposed: bool,
}

/// Metadata word of the parts of K (split-K), followed by K per part and the batch rank (see
/// `shaders/matmul.wgsl`).
const META_PARTS: usize = 29;
/// Metadata word of A's offset; B's follows three words later.
const A_MD: u32 = 7;
const B_MD: u32 = 10;

impl Gemm {
    pub fn batches(&self) -> usize {
        self.batch.iter().product()
    }

    /// The metadata words after `EXTRA` for `tiles` (rows, columns) per batch, K in `split`
    /// parts of `split.1` (the last part the rest).
    fn meta(&self, tiles: (usize, usize), split: (usize, usize)) -> Vec<u32> {
        let (a, b) = (&self.a, &self.b);
        let head = [self.m, self.n, self.k, tiles.0, tiles.1, tiles.0 * tiles.1, self.batches()];
        let mut m: Vec<u32> =
            head.into_iter().chain([a.offset, a.outer, a.k, b.offset, b.outer, b.k]).map(|w| w as u32).collect();
        if self.gather.is_empty() {
            // C's strides along M and N (the matrix-vector kernels write a transposed problem).
            let c = if self.c_transposed { [1, self.m] } else { [self.n, 1] };
            m.extend(c.map(|w| w as u32));
        }
        m.extend(&self.gather);
        m.resize(META_PARTS, 0);
        m.extend([split.0 as u32, split.1 as u32]);
        m.push(self.batch.len() as u32);
        for list in [&self.batch, &self.a.batch, &self.b.batch] {
            m.extend(list.iter().map(|&w| w as u32));
        }
        m
    }

    /// The problem with its batch dims of size 1 dropped and neighbours merged where both
    /// operands allow, and a batch that only walks down A's rows (B shared) folded into M.
    pub fn simplified(mut self) -> Gemm {
        let mut dims: Vec<(usize, usize, usize)> = vec![];
        for (i, &d) in self.batch.iter().enumerate() {
            let (sa, sb) = (self.a.batch[i], self.b.batch[i]);
            if d == 1 {
                continue;
            }
            match dims.last_mut() {
                Some((pd, pa, pb)) if *pa == sa * d && *pb == sb * d => {
                    *pd *= d;
                    *pa = sa;
                    *pb = sb;
                }
                _ => dims.push((d, sa, sb)),
            }
        }
        if self.m == 1 {
            self.a.outer = 0;
        }
        if self.n == 1 {
            self.b.outer = 0;
        }
        if self.k == 1 {
            (self.a.k, self.b.k) = (1, 1);
        }
        if let [(d, sa, 0)] = dims[..]
            && self.gather.is_empty()
            && (sa == self.a.outer * self.m || self.m == 1)
        {
            if self.m == 1 {
                self.a.outer = sa;
            }
            self.m *= d;
            dims.clear();
        }
        self.batch = dims.iter().map(|d| d.0).collect();
        self.a.batch = dims.iter().map(|d| d.1).collect();
        self.b.batch = dims.iter().map(|d| d.2).collect();
        self
    }
}

/// How a kernel loads an operand's tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Load {
    /// Vectors of `w` elements along K: K stride 1, every row starting on a multiple of `w`.
    KVec,
    /// Vectors along the outer dim: outer stride 1, every K row starting on a multiple of `w`.
    OVec,
    /// Element by element (any strides, or a convolution's gather).
    Gather,
}

impl Load {
    /// The load of `op` for vectors of `w` elements of `r` (`None`: element by element).
    pub fn of(op: &Operand, r: Repr, w: usize) -> Load {
        if matches!(r, Repr::F64) {
            return Load::Gather;
        }
        let aligned = |s: usize| s.is_multiple_of(w);
        let rest = aligned(op.offset) && op.batch.iter().all(|&s| aligned(s));
        if op.k == 1 && rest && aligned(op.outer) {
            Load::KVec
        } else if op.outer == 1 && rest && aligned(op.k) {
            Load::OVec
        } else {
            Load::Gather
        }
    }

    fn section(self, body: &str) -> String {
        let name = match self {
            Load::KVec => "kvec",
            Load::OVec => "ovec",
            Load::Gather => "gather",
        };
        format!("{body}_{name}")
    }
}

/// One configuration of the tiled GEMM: a `bm x bn` tile of C per workgroup, `tm x tn` of it
/// per invocation, K in steps of `bk`; workgroup rows padded by `pad` elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tiles {
    /// Rows of C per workgroup.
    pub bm: u32,
    /// Columns of C per workgroup.
    pub bn: u32,
    /// K per step.
    pub bk: u32,
    /// Rows of C per invocation.
    pub tm: u32,
    /// Columns of C per invocation.
    pub tn: u32,
    /// Elements added to each workgroup row.
    pub pad: u32,
}

impl Tiles {
    /// Invocations per workgroup.
    pub fn workgroup(&self) -> u32 {
        (self.bm / self.tm) * (self.bn / self.tn)
    }

    /// Elements of one workgroup buffer of an operand of `ot` outer rows and its row stride, in
    /// vectors of four: held along K (`k_major`: `ot` rows of `bk / 4` vectors) or along the
    /// outer dim (`bk` rows of `ot / 4`), rows padded by `pad` elements.
    fn layout(&self, ot: u32, k_major: bool) -> (u32, u32) {
        let row = if k_major { self.bk / 4 } else { ot / 4 } + self.pad / 4;
        (if k_major { ot * row } else { self.bk * row }, row)
    }

    /// Bytes of workgroup memory at most for elements of `size` bytes (two buffers of each
    /// operand, whichever way each is held).
    pub fn workgroup_bytes(&self, size: u32) -> u32 {
        let most = |ot| self.layout(ot, true).0.max(self.layout(ot, false).0);
        2 * 4 * size * (most(self.bm) + most(self.bn))
    }

    /// Whether every loader divides its tile evenly among the invocations.
    pub fn is_valid(&self) -> bool {
        let wg = self.workgroup();
        let even = |ot: u32| ot.is_multiple_of(4) && wg.is_multiple_of(ot / 4) && (ot * self.bk).is_multiple_of(4 * wg);
        [self.tm, self.tn, self.bk, self.pad].iter().all(|v| v.is_multiple_of(4))
            && self.tm > 0
            && self.tn > 0
            && wg <= 1024
            && even(self.bm)
            && even(self.bn)
    }
}

impl std::fmt::Display for Tiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Tiles { bm, bn, bk, tm, tn, pad } = self;
        write!(f, "{bm}x{bn}x{bk}/{tm}x{tn}/p{pad}")
    }
}

/// The matrix-vector kernels: `m` rows of C (at most `MATVEC_MAX_M`), B read down its
/// columns (`rows`: B's K stride is 1) or across its rows, with the tuning `tiles`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MatVec {
    /// Rows of C.
    pub m: u32,
    /// Whether B's K stride is 1 (read along its rows).
    pub rows: bool,
    /// How the work is split.
    pub tiles: MvTiles,
}

/// The split of a matrix-vector kernel: `ks` invocations share K for each group of four
/// columns (columns kernel) or each column (rows kernel), `lanes` such groups or columns per
/// workgroup, each invocation `unroll` loads of B in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MvTiles {
    /// Invocations splitting K (a power of two).
    pub ks: u32,
    /// Column groups (or columns) per workgroup.
    pub lanes: u32,
    /// Loads of B issued before their sums.
    pub unroll: u32,
}

impl MatVec {
    /// Workgroup bytes of the partial sums: MV_M rows of a vector of four (columns kernel) or
    /// one value (rows kernel) of the compute type per invocation.
    pub fn workgroup_bytes(&self, dtype: DType) -> u32 {
        let per = if self.rows { 1 } else { 4 };
        self.tiles.ks * self.tiles.lanes * self.m * per * tile_elem_size(dtype)
    }

    /// The same with its lanes halved until its partial sums fit `bytes` (f64 holds twice
    /// f32's) and its workgroup `invocations` (WebGPU's least is 256: SwiftShader's).
    pub fn fitted(mut self, dtype: DType, bytes: u32, invocations: u32) -> MatVec {
        while self.tiles.lanes > 1
            && (self.workgroup_bytes(dtype) > bytes || self.tiles.ks * self.tiles.lanes > invocations)
        {
            self.tiles.lanes /= 2;
        }
        self
    }
}

impl MvTiles {
    fn is_valid(&self) -> bool {
        self.ks.is_power_of_two() && self.lanes > 0 && self.ks * self.lanes <= 1024 && (1..=16).contains(&self.unroll)
    }
}

impl std::fmt::Display for MvTiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let MvTiles { ks, lanes, unroll } = self;
        write!(f, "{ks}x{lanes}x{unroll}")
    }
}

/// The most rows of C the matrix-vector kernels take.
pub const MATVEC_MAX_M: usize = 4;

/// A kernel for a GEMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// The tiled GEMM with workgroup-memory tiles.
    Tiled(Tiles),
    /// The matrix-vector kernel, for m or n at most `MATVEC_MAX_M`.
    MatVec(MatVec),
    /// The cooperative-matrix kernel (f16 inputs, f32 accumulation).
    Coop(CoopTiles),
}

impl Kernel {
    /// Invocations per workgroup.
    pub fn invocations(&self) -> u32 {
        match self {
            Kernel::Tiled(t) => t.workgroup(),
            Kernel::MatVec(v) => v.tiles.ks * v.tiles.lanes,
            Kernel::Coop(t) => t.workgroup(),
        }
    }

    /// Its name as `Device::info()` and the kernel record say it.
    pub fn family_name(&self) -> &'static str {
        match self {
            Kernel::Tiled(_) => "tiled",
            Kernel::MatVec(_) => "matrix-vector",
            Kernel::Coop(_) => "cooperative matrix",
        }
    }
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kernel::Tiled(t) => write!(f, "tiled:{t}"),
            Kernel::MatVec(v) => write!(f, "matvec:{}{}/{}", v.m, if v.rows { "r" } else { "c" }, v.tiles),
            Kernel::Coop(t) => write!(f, "coop:{t}"),
        }
    }
}

impl std::str::FromStr for Kernel {
    type Err = Error;
    /// `tiled:BMxBNxBK/TMxTN/pPAD` or `coop:BMxBNxBK/WMxWN/pPAD/fPIPE` (what `Display` writes;
    /// without `/fPIPE`, 2), or `matvec:KSxLANESxUNROLL` (a split for whichever matrix-vector
    /// kernel a problem takes).
    fn from_str(s: &str) -> Result<Kernel> {
        let bad = || Error::InvalidParam { op: "matmul", msg: format!("kernel {s:?}") };
        let nums: Vec<u32> = s
            .split(|c: char| !c.is_ascii_digit())
            .filter(|t| !t.is_empty())
            .map(|t| t.parse().map_err(|_| bad()))
            .collect::<Result<_>>()?;
        if let (Some("matvec"), &[.., ks, lanes, unroll]) = (s.split(':').next(), nums.as_slice()) {
            // The split alone (after `Mc/` or `Mr/` as `Display` writes it): rows and direction
            // come from the problem.
            let tiles = MvTiles { ks, lanes, unroll };
            return if tiles.is_valid() { Ok(Kernel::MatVec(MatVec { m: 1, rows: false, tiles })) } else { Err(bad()) };
        }
        let (&[bm, bn, bk, x, y, pad], rest) = nums.split_at_checked(6).ok_or_else(bad)? else { return Err(bad()) };
        match (s.split(':').next(), rest) {
            (Some("tiled"), []) => {
                let t = Tiles { bm, bn, bk, tm: x, tn: y, pad };
                if t.is_valid() { Ok(Kernel::Tiled(t)) } else { Err(bad()) }
            }
            (Some("coop"), [] | [_]) => {
                let t = CoopTiles { bm, bn, bk, wm: x, wn: y, pad, pipe: rest.first().copied().unwrap_or(2) };
                if t.is_valid() { Ok(Kernel::Coop(t)) } else { Err(bad()) }
            }
            _ => Err(bad()),
        }
    }
}

/// `fn NAME_ld(i) -> T` (element `i`) and `fn NAME_ld4(i) -> vec4<T>` (elements `i..i+4`,
/// `i` a multiple of 4) for an operand bound as raw 16-byte words (f64: as `array<f64>`).
/// `NAME_ld` is `fn NAME_dec(NAME_word(i), i)`: the raw `RAW` holding element `i` (a u32 word,
/// f64 itself), then the element of it, so that a gather can hold words and decode them later.
/// The words bound so also get `fn NAME_raw(i) -> vec4<u32>` (the word holding elements `i..i+4`) and
/// `fn NAME_dec4(w, i) -> vec4<T>` (those elements of it), which `NAME_ld4` is, so that a loader
/// can hold a word and decode it later; and `fn NAME_w8(i)`, eight 2-byte elements as one word.
fn input_code(name: &str, r: Repr) -> String {
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
fn run4_code(name: &str, vec: bool) -> String {
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
pub(crate) fn output_binding(r: Repr, vec: bool) -> (Access, bool) {
    if r.per_word() > 1 && !vec { (Access::Update, false) } else { (Access::Write, vec && r.vectorizes()) }
}

/// `fn c_put(i, v: T)`, and `fn c_row4(base, j, lim, stride, v: vec4<T>)` storing the
/// elements `j + c < lim` of a row at `base + (j + c) * stride`.
fn output_code(r: Repr, vec: bool) -> String {
    let (access, vector) = output_binding(r, vec);
    let put = if access == Access::Update {
        "c_store(i, v);"
    } else if vector {
        // The binding is an array of vectors.
        if r == Repr::F16 { "c[i >> 2u][i & 3u] = f16(v);" } else { "c[i >> 2u][i & 3u] = v;" }
    } else {
        "c_set(i, v);\n    c_flush(i / C_EPW);"
    };
    let mut s = format!("fn c_put(i: u32, v: T) {{\n    {put}\n}}\n");
    // With `vec`, a run starting inside the row lies wholly inside it.
    let row = if vector {
        "if (j < lim) {\n        c_set4(base + j, v);\n    }".to_string()
    } else if vec && r.per_word() > 1 {
        // Two whole words of two elements each.
        "if (j < lim) {\n        let i = base + j;\n        c_set(i, v.x);\n        c_set(i + 1u, v.y);\n        \
         c_flush(i / 2u);\n        c_set(i + 2u, v.z);\n        c_set(i + 3u, v.w);\n        c_flush(i / 2u + 1u);\n    }"
            .to_string()
    } else {
        "for (var c = 0u; c < 4u; c++) {\n        if (j + c < lim) {\n            \
         c_put(base + (j + c) * stride, v[c]);\n        }\n    }"
            .to_string()
    };
    let _ = writeln!(s, "fn c_row4(base: u32, j: u32, lim: u32, stride: u32, v: vec4<T>) {{\n    {row}\n}}");
    s
}

/// The instance of an operand section for A or B.
fn operand(src: &str, section_name: &str, a: bool) -> String {
    let text = section(src, section_name);
    if a {
        text.replace("opnd_", "a_").replace("OPND_", "A_")
    } else {
        text.replace("opnd_", "b_").replace("OPND_", "B_")
    }
}

/// Bytes of one element of the tiled kernel's workgroup tiles for `dtype`: they hold the compute
/// type, f32 for f16, bf16 and f32 alike.
pub(crate) fn tile_elem_size(dtype: DType) -> u32 {
    if dtype == DType::F64 { 8 } else { 4 }
}

/// The compute type of the kernels for `r` and the WGSL alias for it.
fn element(r: Repr) -> (Compute, String) {
    let c = r.compute();
    let raw = if r == Repr::F64 { "f64" } else { "u32" };
    (c, format!("alias T = {};\nalias RAW = {raw};\n", c.wgsl()))
}

/// The inner products of the tiled kernel over one buffer (`ab`, `bb`: its first vector in
/// each operand), four K at a time, unrolled so that every register index is a constant, and
/// the epilogue. Invocation (tx, ty) holds rows `(g TY + ty) 4 + q` and columns
/// `(h TX + tx) 4 + c` of the tile; `a_k`/`b_k`: the operand is held along K.
fn micro(t: &Tiles, a_k: bool, b_k: bool) -> String {
    let (gm, gn) = (t.tm / 4, t.tn / 4);
    let lane = |c: u32| ["x", "y", "z", "w"][c as usize];
    let row = |r: u32| format!("({}u * TY + ty) * 4u + {}u", r / 4, r % 4);
    let col = |j: u32| format!("({}u * TX + tx) * 4u + {}u", j / 4, j % 4);
    let mut s = String::from(
        "fn micro(ab: u32, bb: u32, tx: u32, ty: u32) {
    for (var kq = 0u; kq < BK / 4u; kq++) {
",
    );
    if a_k {
        for r in 0..t.tm {
            let _ = writeln!(s, "        let a{r} = a_s4[ab + ({}) * A_S4 + kq];", row(r));
        }
    } else {
        for c in 0..4 {
            for g in 0..gm {
                let _ = writeln!(s, "        let a{g}_{c} = a_s4[ab + (kq * 4u + {c}u) * A_S4 + {g}u * TY + ty];");
            }
        }
    }
    if b_k {
        for j in 0..t.tn {
            let _ = writeln!(s, "        let b{j} = b_s4[bb + ({}) * B_S4 + kq];", col(j));
        }
    } else {
        for c in 0..4 {
            for h in 0..gn {
                let _ = writeln!(s, "        let b{h}_{c} = b_s4[bb + (kq * 4u + {c}u) * B_S4 + {h}u * TX + tx];");
            }
        }
    }
    for c in 0..4 {
        for h in 0..gn {
            let bv = if b_k {
                let l = lane(c);
                format!("vec4<T>(b{}.{l}, b{}.{l}, b{}.{l}, b{}.{l})", 4 * h, 4 * h + 1, 4 * h + 2, 4 * h + 3)
            } else {
                format!("b{h}_{c}")
            };
            let _ = writeln!(s, "        let bv{h}_{c} = {bv};");
        }
        for r in 0..t.tm {
            let a = if a_k { format!("a{r}.{}", lane(c)) } else { format!("a{}_{c}.{}", r / 4, lane(r % 4)) };
            for h in 0..gn {
                let i = r * gn + h;
                let _ = writeln!(s, "        acc[{i}] = fma(vec4<T>({a}), bv{h}_{c}, acc[{i}]);");
            }
        }
    }
    s += "    }\n}\n";
    s += "fn epilogue(b: u32, m0: u32, n0: u32, tx: u32, ty: u32) {\n";
    s += "    let mn = gmeta(0u);\n    let nn = gmeta(1u);\n    let base = b * mn * nn;\n";
    for r in 0..t.tm {
        let _ = writeln!(s, "    let row{r} = m0 + {};", row(r));
        let _ = writeln!(s, "    if (row{r} < mn) {{");
        for h in 0..gn {
            let _ = writeln!(
                s,
                "        c_row4(base + row{r} * nn, n0 + ({h}u * TX + tx) * 4u, nn, 1u, acc[{}]);",
                r * gn + h
            );
        }
        s += "    }\n";
    }
    s + "}\n"
}

/// What a kernel needs to know of a problem besides its sizes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Variant {
    pub dtype: DType,
    pub a: Load,
    pub b: Load,
    /// Whether C's runs of four are whole and aligned (N a multiple of 4).
    pub c_vec: bool,
    /// WGSL of a gathered B (`b_setup_gather`, `b_ktile`, `b_get`) and the family it is from.
    pub gather: Option<(Family, String)>,
    /// Split-K: the kernel writes each part's f32 products to its own slice, not C.
    pub split: bool,
}

/// A kernel of the GEMM family: a GEMM, or split-K's sum of the parts into C.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Stage {
    Gemm(Kernel),
    Sum,
}

/// K in `parts` parts for `k`, each a multiple of 64 (of every kernel's K step) but the last:
/// the parts that take some of K, and K per part. One part takes all of K.
pub(crate) fn split_k(k: usize, parts: usize) -> (usize, usize) {
    if parts <= 1 || k == 0 {
        return (1, k);
    }
    let per = k.div_ceil(parts).next_multiple_of(64);
    (k.div_ceil(per), per)
}

/// Split-K's sum of the parts of C's `shape.dtype` (see `split_sum` in `shaders/matmul.wgsl`).
pub(crate) fn sum_spec(caps: Caps, shape: &Variant) -> Result<Spec> {
    let r = Repr::of(shape.dtype, caps, "matmul")?;
    let (c_access, c_vector) = output_binding(r, shape.c_vec);
    let mut spec = Spec::new(Family::Matmul, "split_sum", caps).bind("p", Repr::F32, Access::Wide, Index::None).bind(
        "c",
        r,
        c_access,
        Index::None,
    );
    spec.bindings[1].vec = c_vector;
    let (_, alias) = element(r);
    Ok(spec
        .code(alias)
        .code(input_code("p", Repr::F32))
        .code(run4_code("p", shape.c_vec))
        .code(output_code(r, shape.c_vec)))
}

/// The kernel `k` for problems of `shape`.
pub(crate) fn gemm_spec(caps: Caps, k: &Kernel, shape: &Variant) -> Result<Spec> {
    let op = crate::spec::matmul::MatmulOp::Matmul;
    let r = Repr::of(shape.dtype, caps, "matmul")?;
    let family = shape.gather.as_ref().map_or(Family::Matmul, |g| g.0);
    let src = family_source(Family::Matmul);
    let input = |name| if r == Repr::F64 { (name, r, Access::Read) } else { (name, r, Access::Wide) };
    // Split-K's parts hold f32 products (f64 is never split).
    if shape.split && r == Repr::F64 {
        return Err(Error::InvalidParam { op: op.name(), msg: "split-K parts hold f32: f64 is not split".into() });
    }
    let out = if shape.split { Repr::F32 } else { r };
    let (c_access, c_vector) = output_binding(out, shape.c_vec);
    let entry = match k {
        Kernel::Tiled(_) => "tiled",
        Kernel::MatVec(v) if v.rows => "matvec_rows",
        Kernel::MatVec(_) => "matvec",
        Kernel::Coop(_) => "coop",
    };
    let mut spec = Spec::new(family, entry, caps);
    for (name, r, access) in [input("a"), input("b")] {
        spec = spec.bind(name, r, access, Index::None);
    }
    spec = spec.bind("c", out, c_access, Index::None);
    spec.bindings[2].vec = c_vector;
    let (_, alias) = element(r);
    spec = spec.code(alias).code(input_code("a", r)).code(input_code("b", r)).code(output_code(out, shape.c_vec));
    if family != Family::Matmul {
        // The GEMM body lives in matmul.wgsl; the spec's own file adds the gather.
        spec = spec.code(header(src)).code(section(src, entry));
    }
    if let Some((_, code)) = &shape.gather {
        spec = spec.code(code);
    }
    let strided = |a: bool| operand(src, "strided_gather", a);
    match k {
        Kernel::Tiled(t) => {
            if !t.is_valid() {
                return Err(Error::InvalidParam { op: op.name(), msg: format!("tile configuration {t}") });
            }
            spec.workgroup = t.workgroup();
            let consts = [("BM", t.bm), ("BN", t.bn), ("BK", t.bk), ("TM", t.tm), ("TN", t.tn)];
            for (name, v) in consts.into_iter().chain([("TX", t.bn / t.tn), ("TY", t.bm / t.tm)]) {
                spec = spec.constant(name, format!("{v}u"));
            }
            for (p, ot, md, load) in [("A", t.bm, A_MD, shape.a), ("B", t.bn, B_MD, shape.b)] {
                let (sz4, s4) = t.layout(ot, load == Load::KVec);
                let nv = ot * t.bk / (4 * t.workgroup());
                for (name, v) in [("OT", ot), ("S4", s4), ("SZ4", sz4), ("MD", md), ("NV", nv)] {
                    spec = spec.code(format!("const {p}_{name}: u32 = {v}u;"));
                }
                let a = p == "A";
                if load == Load::Gather && !(p == "B" && shape.gather.is_some()) {
                    spec = spec.code(strided(a));
                }
                let common = if load == Load::Gather { "gather_fetch" } else { "vec_setup" };
                spec = spec.code(operand(src, common, a));
                spec = spec.code(operand(src, &load.section("tiled"), a));
            }
            spec = spec.code(micro(t, shape.a == Load::KVec, shape.b == Load::KVec));
        }
        Kernel::MatVec(v) => {
            let MvTiles { ks, lanes, unroll } = v.tiles;
            if !v.tiles.is_valid() {
                return Err(Error::InvalidParam { op: op.name(), msg: format!("matrix-vector split {}", v.tiles) });
            }
            spec.workgroup = lanes * ks;
            spec = spec.constant("MV_M", format!("{}u", v.m)).constant("KS", format!("{ks}u"));
            spec = spec.constant(if v.rows { "RW" } else { "CW" }, format!("{lanes}u"));
            spec = spec.constant("MV_U", format!("{unroll}u"));
            let vec_a = shape.a == Load::KVec;
            let vec_b = if v.rows { shape.b == Load::KVec } else { shape.b == Load::OVec };
            spec = spec.code(run4_code("a", vec_a)).code(run4_code("b", vec_b));
        }
        Kernel::Coop(t) => spec = super::coop::specialise(spec, caps, t, shape, src)?,
    }
    Ok(spec)
}

impl WgpuBackend {
    /// Runs `g` with kernel `k` into a new contiguous `(batch.., m, n)` storage, K in `parts`
    /// parts (split-K: a tiled or cooperative `k`; see [`split_k`]).
    pub(crate) fn gemm(
        &self,
        k: &Kernel,
        parts: usize,
        g: &Gemm,
        gather: Option<(Family, String)>,
        a: &WgpuStorage,
        b: &WgpuStorage,
    ) -> Result<WgpuStorage> {
        let dtype = a.dtype;
        // The table picks within the adapter's workgroup memory and invocations; a kernel forced
        // past them (a sweep, the suite's forced tiles on a small adapter) is refused here, not
        // by wgpu.
        let needed = match k {
            Kernel::Tiled(t) => t.workgroup_bytes(tile_elem_size(dtype)),
            Kernel::Coop(t) => t.workgroup_bytes(),
            Kernel::MatVec(v) => v.workgroup_bytes(dtype),
        };
        let (bytes, invocations) = (self.gemm_workgroup_bytes(), self.gemm_invocations());
        if needed > bytes || k.invocations() > invocations {
            let (what, needed, limit) = if needed > bytes {
                ("workgroup memory", needed, bytes)
            } else {
                ("invocations per workgroup", k.invocations(), invocations)
            };
            return Err(Error::LimitExceeded {
                backend: BackendKind::Wgpu,
                what: format!("{what} of the GEMM kernel {k} for {dtype}"),
                needed: needed as u64,
                limit: limit as u64,
            });
        }
        let total = g.batches() * g.m * g.n;
        let c = self.storage(dtype, total)?;
        if total == 0 {
            return Ok(c);
        }
        // The parts hold f32: f64 is never split.
        let split = if matches!(k, Kernel::MatVec(_)) || dtype == DType::F64 { (1, g.k) } else { split_k(g.k, parts) };
        let r = Repr::of(dtype, self.caps(), "matmul")?;
        let vec = match (k, &gather) {
            (Kernel::Coop(_), _) => CoopTiles::VEC,
            _ => 4,
        };
        let shape = Variant {
            dtype,
            a: Load::of(&g.a, r, vec),
            b: if gather.is_some() { Load::Gather } else { Load::of(&g.b, r, vec) },
            // Whole runs of four outputs per store, which the rows kernel (one output per
            // invocation) does not write: there, packed outputs take the atomic word update.
            c_vec: !matches!(k, Kernel::MatVec(v) if v.rows) && g.n.is_multiple_of(4) && (!g.c_transposed || g.m == 1),
            gather,
            split: split.0 > 1,
        };
        let c_vec = shape.c_vec;
        let (spec, pipeline) = self.gemm_pipeline(Stage::Gemm(*k), shape)?;
        let tiles = match k {
            Kernel::Tiled(t) => (g.m.div_ceil(t.bm as usize), g.n.div_ceil(t.bn as usize)),
            Kernel::Coop(t) => (g.m.div_ceil(t.bm as usize), g.n.div_ceil(t.bn as usize)),
            Kernel::MatVec(v) => (1, g.n.div_ceil(if v.rows { v.tiles.lanes } else { 4 * v.tiles.lanes } as usize)),
        };
        let groups = (tiles.0 * tiles.1 * g.batches() * split.0) as u64;
        let meta = spec.meta(0, &[], &g.meta(tiles, split));
        let threads = groups * spec.workgroup as u64;
        if split.0 == 1 {
            self.run_pipeline(&spec, &pipeline, &[a.buffer(), b.buffer(), c.buffer()], &meta, threads)?;
            return Ok(c);
        }
        let p = self.storage(DType::F32, split.0 * total)?;
        self.run_pipeline(&spec, &pipeline, &[a.buffer(), b.buffer(), p.buffer()], &meta, threads)?;
        // The sum's source depends on C alone.
        let sum = Variant { dtype, a: Load::Gather, b: Load::Gather, c_vec, gather: None, split: false };
        let (spec, pipeline) = self.gemm_pipeline(Stage::Sum, sum)?;
        let meta = spec.meta(0, &[], &[total as u32, split.0 as u32]);
        self.run_pipeline(&spec, &pipeline, &[p.buffer(), c.buffer()], &meta, total.div_ceil(4) as u64)?;
        Ok(c)
    }
}

/// A problem too large for the kernels' u32 indices.
pub(crate) fn too_large(what: String, n: u64, dtype: DType) -> Error {
    Error::LimitExceeded {
        backend: BackendKind::Wgpu,
        what: format!("{what} (kernels index with u32)"),
        needed: n.saturating_mul(dtype.size_in_bytes() as u64),
        limit: u32::MAX as u64,
    }
}
