//! Quantized blocks on wgpu (`shaders/quant.wgsl`): the blocks bound as u32 words (a u8 storage
//! is its bytes packed four to a word), every field read at its byte address. `dequantize`: an
//! invocation per word of quants (q4_0, q8_0, q4_K), else one output word per invocation.
//! `qmatvec`: 32 invocations per weight row (per two for q4_K, and for q6_K from two rows of x
//! on), the blocks decoded in registers once (units of 16 to 32 values from whole words) and used
//! for every row of x, the lanes' sums added in workgroup memory, one write per output; where x
//! is a deferred norm's result, the kernel computes the norm from its input first
//! (`qmatvec_norm`: a decode step's norm is never stored), and where elementwise ops on the
//! product were deferred with it, it stores their program's values (`qmatvec_then`: a residual
//! add never reads the product back).

use super::gemm::{EPILOGUE_INPUTS, Epilogue, EpilogueArgs, Prologue};
use super::kernel::{Index, Spec, family_source, section};
use super::nn::rows::RowNorm;
use super::repr::{Access, Caps, Repr};
use super::{KernelKey, WgpuBackend, WgpuStorage};
use crate::backend::{ElementwiseOps, MatmulOps, Operand, QmvInput, QuantOps, RowNormArgs, qmatvec_then_fused};
use crate::expr::program::Program;
use crate::spec::quant::{GgmlType, QMATVEC_MAX_ROWS, QMATVEC_RUN, QuantOp, qmatvec_row_offsets, qmatvec_rows_class};
use crate::spec::{Family, kernel_name};
use crate::{DType, Layout, Result, Scalar};

/// Invocations per `qmatvec` workgroup; the partial sums of 8 rows of x take 4 KiB of workgroup
/// memory (8 KiB for two weight rows a lane group).
const QMATVEC_WG: u32 = 128;
/// Invocations per lane group of `qmatvec` (`QL`), which takes a weight row (or two: `RW`): 4
/// groups a workgroup. With K = 4096 each takes 128 values of the row.
const QMATVEC_LANES: u32 = 32;

/// The block types `dequantize_units` decodes by their quants' words, and the values each word
/// of quants holds.
const UNIT_TYPES: [(GgmlType, usize); 3] = [(GgmlType::Q4_0, 8), (GgmlType::Q8_0, 4), (GgmlType::Q4_K, 8)];

/// The dequantize kernel writing `dtype`: for a type of [`UNIT_TYPES`] (`Some`) an invocation
/// per word of quants, that type's decoder alone (the kernel constant `QT`); else an output word
/// an invocation, the block type metadata (one branch per kernel, the same for every
/// invocation).
fn dequantize_spec(caps: Caps, dtype: DType, units: Option<GgmlType>) -> Result<Spec> {
    let r = Repr::of(dtype, caps, QuantOp::Dequantize.name())?;
    let kernel = if units.is_some() { "dequantize_units" } else { "dequantize" };
    let spec = Spec::new(Family::Quant, kernel, caps).bind("q", Repr::U32, Access::Read, Index::None).bind(
        "y",
        r,
        Access::Write,
        Index::None,
    );
    Ok(match units {
        Some(ty) => spec.constant("QT", format!("{}u", ty.id())),
        None => spec,
    })
}

/// The matrix-vector kernel of block type `ty` and x's `dtype` for `mq` rows of x (1, 2, 4 or 8:
/// one accumulator each). The block type is a kernel constant (`QT`): as metadata, every kernel
/// held every type's decoder, and lavapipe took 1.7-4.6 s to compile each (a tenth of that per
/// type). `vec`: x's rows are read as aligned vectors of four (`x4`), where its repr has them;
/// else value by value through its stride.
///
/// `shuffle`: a q4_K block's 8 lanes decode a sub-block's scale each and share them through
/// subgroup shuffles (the adapter's subgroups hold whole groups of 8 neighbouring invocations);
/// else each lane decodes all eight.
///
/// `norm`: x is the input of that norm of its rows, which the kernel computes first (the norm's
/// weight and bias bound as `nw` and `nb` after y, their offsets and strides and eps in the
/// metadata after the rows' offsets). `epilogue`: y's elements are its program's values over the
/// product (its inputs bound last, their index maps in the metadata before `EXTRA`).
fn qmatvec_spec(
    caps: Caps,
    ty: GgmlType,
    dtype: DType,
    mq: usize,
    (vec, shuffle): (bool, bool),
    (norm, epilogue): (Option<RowNorm>, Option<&Epilogue>),
) -> Result<Spec> {
    let r = Repr::of(dtype, caps, QuantOp::Qmatvec.name())?;
    let mut spec = Spec::new(Family::Quant, "qmatvec", caps)
        .bind("q", Repr::U32, Access::Read, Index::None)
        .bind("x", r, Access::Read, Index::None)
        .bind("y", r, Access::Update, Index::None);
    for (name, on) in [("nw", norm.is_some_and(|n| n.weight)), ("nb", norm.is_some_and(|n| n.bias))] {
        if on {
            spec = spec.bind(name, r, Access::Read, Index::None);
        }
    }
    let mut spec = spec
        .constant("QT", format!("{}u", ty.id()))
        .constant("MQ", format!("{mq}u"))
        .constant("RUN", format!("{QMATVEC_RUN}u"))
        .constant("QL", format!("{QMATVEC_LANES}u"))
        .constant("RW", format!("{}u", qmatvec_group_rows(ty, mq)));
    spec.workgroup = QMATVEC_WG;
    spec.bindings[1].vec = vec && r.vectorizes();
    let x4 = if spec.bindings[1].vec {
        "return vec4<f32>(x_load4(xrow[i] + k));"
    } else {
        "let b = xrow[i] + k * sk;\n    return vec4<f32>(x_load(b), x_load(b + sk), x_load(b + 2u * sk), x_load(b + 3u * sk));"
    };
    // The row loops of q4_0 and q4_K, unrolled (see the kernel's comment).
    let rows = |f: &str, params: &str, args: &str| {
        let calls: String = (0..mq).map(|i| format!("\n    {f}_row({i}u, {args});")).collect();
        format!("fn {f}_rows({params}) {{{calls}\n}}")
    };
    let src = family_source(Family::Quant);
    let scales = section(src, if shuffle { "k4_shuffle" } else { "k4_bytes" });
    let x = match norm {
        None => format!(
            "// Values k .. k + 4 of x's row i, and value k.\n\
             fn x4(i: u32, k: u32, sk: u32) -> vec4<f32> {{\n    {x4}\n}}\n\
             fn x1(i: u32, k: u32, sk: u32) -> f32 {{\n    return f32(x_load(xrow[i] + k * sk));\n}}\n\
             fn pro_setup(lid: u32) {{}}"
        ),
        Some(norm) => prologue_code(caps, dtype, norm, x4)?,
    };
    let spec = spec
        .code(section(src, "qmv_frame"))
        .code(scales)
        .code(x)
        .code(rows("q4_0", "k: u32, sk: u32, v0: u32, v1: u32, d: f32", "k, sk, v0, v1, d"))
        .code(rows(
            "q4_k",
            "k: u32, sk: u32, v: vec4<u32>, s: K4Scales, v2: vec4<u32>, s2: K4Scales",
            "k, sk, v, s, v2, s2",
        ));
    with_epilogue(spec, caps, epilogue)
}

/// `qmatvec`'s x as the norm `norm` of x's rows (`raw4`: the body reading four values of x as
/// they are): the rows' statistics by the workgroup's groups of `RN_T` lanes (`pro_setup`), then
/// each value normed as it is read, by the code of the norm's own kernel (`nn::rows`).
fn prologue_code(caps: Caps, dtype: DType, norm: RowNorm, raw4: &str) -> Result<String> {
    // The norm's words follow the MQ rows' offsets (at EXTRA + 8).
    let base = "EXTRA + 8u + MQ";
    let io = format!(
        "fn rn_n() -> u32 {{ return md[EXTRA + 2u]; }}
fn rn_x(row: u32, e: u32) -> f32 {{ return f32(x_load(xrow[row] + e * md[EXTRA + 7u])); }}
fn rn_eps() -> f32 {{ return bitcast<f32>(md[{base} + 4u]); }}
var<workgroup> rn_sh: array<f32, WG>;
fn rn_get(i: u32) -> f32 {{ return rn_sh[i]; }}
fn rn_set(i: u32, v: f32) {{ rn_sh[i] = v; }}
var<workgroup> pro_sh: array<vec2<f32>, MQ>;
var<private> pro_r: array<vec2<f32>, MQ>;

// Every row's statistics, WG / RN_T rows at a time; every invocation calls (barriers).
fn pro_setup(lid: u32) {{
    let g = lid / RN_T;
    let l = lid % RN_T;
    for (var r0 = 0u; r0 < MQ; r0 += WG / RN_T) {{
        let row = r0 + g;
        let r = rn_stats(row, row < MQ, g, l);
        if (l == 0u && row < MQ) {{
            pro_sh[row] = r;
        }}
    }}
    workgroupBarrier();
    for (var i = 0u; i < MQ; i++) {{
        pro_r[i] = pro_sh[i];
    }}
}}

fn x4_raw(i: u32, k: u32, sk: u32) -> vec4<f32> {{
    {raw4}
}}

// Values k .. k + 4 of x's row i normed, and value k.
fn x4(i: u32, k: u32, sk: u32) -> vec4<f32> {{
    let v = x4_raw(i, k, sk);
    let r = pro_r[i];
    return vec4<f32>(rn_out(v.x, k, r), rn_out(v.y, k + 1u, r), rn_out(v.z, k + 2u, r), rn_out(v.w, k + 3u, r));
}}

fn x1(i: u32, k: u32, sk: u32) -> f32 {{
    return rn_out(f32(x_load(xrow[i] + k * sk)), k, pro_r[i]);
}}
"
    );
    Ok(format!("{io}{}{}", norm.params_code(base), norm.code(caps, dtype)?))
}

/// The block types `qmatvec_q8` multiplies by integer dot products; the others take x's rounded
/// values as f32 through `qmatvec`.
const Q8_DOT_TYPES: [GgmlType; 3] = [GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K];

/// The kernel rounding `dtype` x's rows to q8 blocks: packed for `qmatvec_q8` (i8 words, scales,
/// sums), else as f32 values.
fn round_q8_spec(caps: Caps, dtype: DType, pack: bool) -> Result<Spec> {
    let r = Repr::of(dtype, caps, QuantOp::QmatvecQ8.name())?;
    Ok(Spec::new(Family::Quant, "round_q8", caps)
        .bind("q", Repr::U32, Access::Write, Index::None)
        .bind("x", r, Access::Read, Index::None)
        .constant("PACK", pack.to_string()))
}

/// The q8 activation mode's products of block type `ty` (one of [`Q8_DOT_TYPES`]) for `mq` rows
/// of x, writing `dtype`: `qmatvec`'s lanes and groups, x read as `round_q8`'s packed words (`xq`
/// as 16-byte words for the quants, `xs`, the same buffer, as words for the scales and sums).
///
/// `qv`: the blocks start on 16 bytes, and q4_K's 16-byte fields are read through `qv` (the
/// blocks' buffer bound a second time as 16-byte words) in one load each.
fn qmatvec_q8_spec(caps: Caps, ty: GgmlType, dtype: DType, mq: usize, qv: bool) -> Result<Spec> {
    let r = Repr::of(dtype, caps, QuantOp::QmatvecQ8.name())?;
    let mut spec = Spec::new(Family::Quant, "qmatvec_q8", caps)
        .bind("q", Repr::U32, Access::Read, Index::None)
        .bind("xq", Repr::U32, Access::Wide, Index::None)
        .bind("y", r, Access::Update, Index::None)
        .bind("xs", Repr::U32, Access::Read, Index::None)
        .bind("qv", Repr::U32, Access::Wide, Index::None)
        .constant("QV", qv.to_string())
        .constant("QT", format!("{}u", ty.id()))
        .constant("MQ", format!("{mq}u"))
        .constant("QL", format!("{QMATVEC_LANES}u"))
        .constant("RW", format!("{}u", q8_group_rows(ty)));
    spec.workgroup = QMATVEC_WG;
    Ok(spec.code(section(family_source(Family::Quant), "qmv_frame")).code(Y_OUT))
}

/// `qmv_finish`'s store of y's element i (the product v) without an epilogue.
const Y_OUT: &str = "fn y_out(i: u32, v: f32) { y_store(i, v); }";

/// `spec` storing y through `epilogue`'s program, if any (its inputs bound after the others).
fn with_epilogue(spec: Spec, caps: Caps, epilogue: Option<&Epilogue>) -> Result<Spec> {
    match epilogue {
        None => Ok(spec.code(Y_OUT)),
        // y's compute type, in which the epilogue takes the product and gives its value.
        Some(e) => e.add_to(spec.code("alias T = f32;\nfn y_out(i: u32, v: f32) { y_store(i, c_ep(i, v)); }"), caps),
    }
}

/// Weight rows a `qmatvec_q8` lane group takes: q4_K's two share each word of x.
fn q8_group_rows(ty: GgmlType) -> u32 {
    if ty == GgmlType::Q4_K { 2 } else { 1 }
}

/// Weight rows a `qmatvec` lane group takes (`RW`) for `mq` rows of x: q4_K's two read each
/// value of x once for both (H200, f16 x of 2, 4 and 8 rows times [14336,4096]^T: 57-58 ->
/// 50-51, 81-88 -> 67-69, 122-124 -> 99-100 us; one row unchanged); q6_K's and q8_0's from two
/// rows of x on (4 rows: q6_K 89.6-90.6 -> 62.9-64.4 us, q8_0 83.8-84.7 -> 58.3-60.0; at one row
/// q6_K 49-51 -> 59-61 in session 51, q8_0 no faster in session 48).
fn qmatvec_group_rows(ty: GgmlType, mq: usize) -> u32 {
    match ty {
        GgmlType::Q4_K => 2,
        GgmlType::Q6_K | GgmlType::Q8_0 if mq >= 2 => 2,
        _ => 1,
    }
}

/// The kernel name of a `qmatvec` variant: `qmatvec_f32_q4_0`, `qmatvec_f32_q4_0_m2`, ...,
/// `qmatvec_f32_q4_0_v`.
fn qmatvec_name(ty: GgmlType, dtype: DType, mq: usize, vec: bool) -> String {
    let base = kernel_name(QuantOp::Qmatvec.name(), dtype);
    let m = if mq == 1 { String::new() } else { format!("_m{mq}") };
    format!("{base}_{}{m}{}", ty.name(), if vec { "_v" } else { "" })
}

impl WgpuBackend {
    /// Whether `qmatvec`'s q4_K lanes share their blocks' scales through subgroup shuffles:
    /// subgroups of at least 8 (a block's lanes), unless `RWO_WGPU_TUNE=qmatvec_shuffle=off`.
    fn qmatvec_shuffles(&self) -> bool {
        self.caps().subgroup && self.0.gpu.info.subgroup_min_size >= 8 && self.tune().qmatvec_shuffle != Some(false)
    }

    /// `qmatvec` of the blocks of `ty` at `offset` (`n` rows of them) and x; with a prologue, x
    /// the input of its norm.
    fn qmatvec_with(
        &self,
        q: &WgpuStorage,
        (offset, ty, n): (usize, GgmlType, usize),
        (x, xl): Operand<WgpuStorage>,
        (prologue, epilogue): (Option<&Prologue>, Option<&EpilogueArgs>),
    ) -> Result<WgpuStorage> {
        let starts = qmatvec_row_offsets(xl)?;
        let (rows, k) = (starts.len(), xl.dims()[xl.rank() - 1]);
        let y = self.storage(x.dtype, rows * n)?;
        let mq = qmatvec_rows_class(rows);
        // x's rows as vectors of four: along K contiguous, each starting on four elements.
        let sk = xl.strides()[xl.rank() - 1];
        let vec = sk == 1 && starts.iter().all(|s| s.is_multiple_of(4));
        let shuffle = ty == GgmlType::Q4_K && self.qmatvec_shuffles();
        let norm = prologue.map(|p| p.norm);
        let ep = epilogue.map(EpilogueArgs::key);
        let key = KernelKey::Qmatvec(ty, x.dtype, mq, (vec, shuffle), norm, ep.clone());
        let (spec, pipeline) =
            self.keyed(key, || qmatvec_spec(self.caps(), ty, x.dtype, mq, (vec, shuffle), (norm, ep.as_ref())))?;
        // Every index fits u32: the storages (x's, the blocks') were checked against it.
        let (bs, bb) = (ty.block_size(), ty.block_bytes());
        let mut extra = vec![ty.id(), offset as u32, k as u32, n as u32, bs as u32, bb as u32, rows as u32];
        extra.push(sk as u32);
        extra.extend((0..mq).map(|i| starts[i.min(rows - 1)] as u32));
        extra.extend(prologue.iter().flat_map(|p| p.words));
        let (layouts, inputs): (Vec<&Layout>, Vec<&wgpu::Buffer>) =
            epilogue.map_or(&[][..], |e| e.inputs).iter().map(|(s, l)| (*l, s.buffer())).unzip();
        let meta = spec.meta((rows * n) as u32, &layouts, &extra);
        let groups = n.div_ceil((QMATVEC_WG / QMATVEC_LANES * qmatvec_group_rows(ty, mq)) as usize) as u64;
        let mut buffers = vec![q.buffer(), x.buffer(), y.buffer()];
        buffers.extend(prologue.iter().flat_map(|p| p.w.iter().chain(&p.b)).map(|s| s.buffer()));
        buffers.extend(inputs);
        self.run(&spec, &pipeline, &buffers, &meta, groups * QMATVEC_WG as u64)?;
        Ok(y)
    }
}

impl QuantOps for WgpuBackend {
    fn dequantize(&self, q: &WgpuStorage, offset: usize, ty: GgmlType, n: usize, dtype: DType) -> Result<WgpuStorage> {
        let y = self.storage(dtype, n)?;
        if n == 0 {
            return Ok(y);
        }
        let units = UNIT_TYPES.iter().find(|(t, _)| *t == ty).map(|&(_, per_word)| per_word);
        let unit_ty = units.map(|_| ty);
        let key = KernelKey::Dequantize(dtype, unit_ty);
        let (spec, pipeline) = self.keyed(key, || dequantize_spec(self.caps(), dtype, unit_ty))?;
        // The storage checks n against u32; the blocks' bytes fit the same binding.
        let meta = spec.meta(n as u32, &[], &[ty.id(), offset as u32]);
        let per = match units {
            Some(per_word) => per_word,
            None => Repr::of(dtype, self.caps(), QuantOp::Dequantize.name())?.per_word() as usize,
        };
        self.run(&spec, &pipeline, &[q.buffer(), y.buffer()], &meta, n.div_ceil(per) as u64)?;
        Ok(y)
    }

    fn qmatvec(
        &self,
        q: &WgpuStorage,
        offset: usize,
        ty: GgmlType,
        n: usize,
        x: Operand<WgpuStorage>,
    ) -> Result<WgpuStorage> {
        self.qmatvec_with(q, (offset, ty, n), x, (None, None))
    }

    /// Where norms are deferred (`MatmulOps::norm_prologues`: a few rows), the kernel computes
    /// the norm first.
    fn qmatvec_norm(
        &self,
        q: &WgpuStorage,
        offset: usize,
        ty: GgmlType,
        n: usize,
        norm: RowNormArgs<'_, WgpuStorage>,
    ) -> Result<WgpuStorage> {
        self.qmatvec_with(q, (offset, ty, n), norm.x, (Some(&Prologue::of(&norm)), None))
    }

    /// Where products take epilogues (`MatmulOps::epilogues`).
    fn qmatvec_epilogues(&self) -> bool {
        self.epilogues()
    }

    /// The program computed where `qmatvec` stores y, where its bindings hold the norm's and the
    /// program's tensors (`EpilogueArgs::fits`); else the product, then the program.
    fn qmatvec_then(
        &self,
        q: &WgpuStorage,
        w: (usize, GgmlType, usize),
        x: QmvInput<'_, WgpuStorage>,
        p: &Program,
        inputs: &[(&WgpuStorage, &Layout)],
        params: &[Scalar],
    ) -> Result<WgpuStorage> {
        let epilogue = EpilogueArgs { program: p, inputs };
        let prologue = match &x {
            QmvInput::Norm(n) => Some(Prologue::of(n)),
            QmvInput::Rows(_) => None,
        };
        let bindings = prologue.as_ref().map_or(0, Prologue::tensors) + inputs.len();
        let dtype = match &x {
            QmvInput::Rows(x) => x.0.dtype,
            QmvInput::Norm(n) => n.x.0.dtype,
        };
        if p.steps.is_empty() || !epilogue.fits(dtype) || bindings > EPILOGUE_INPUTS.len() {
            return qmatvec_then_fused(self, q, w, x, p, inputs, params);
        }
        let x = match x {
            QmvInput::Rows(x) => x,
            QmvInput::Norm(n) => n.x,
        };
        self.qmatvec_with(q, w, x, (prologue.as_ref(), Some(&epilogue)))
    }

    /// x's rows rounded to q8 blocks by `round_q8` (an invocation a word of 4 values); for the
    /// types of `Q8_DOT_TYPES`, where WGSL has `dot4I8Packed`, packed and multiplied by
    /// `qmatvec_q8`; else as f32 values through [`QuantOps::qmatvec`], then cast to x's dtype.
    fn qmatvec_q8(
        &self,
        q: &WgpuStorage,
        offset: usize,
        ty: GgmlType,
        n: usize,
        (x, xl): Operand<WgpuStorage>,
    ) -> Result<WgpuStorage> {
        let starts = qmatvec_row_offsets(xl)?;
        let (rows, k) = (starts.len(), xl.dims()[xl.rank() - 1]);
        let pack = Q8_DOT_TYPES.contains(&ty) && self.0.gpu.dot4;
        let (spec, pipeline) =
            self.keyed(KernelKey::RoundQ8(x.dtype, pack), || round_q8_spec(self.caps(), x.dtype, pack))?;
        // Packed: K / 4 words of i8 a row, then a scale and a sum a block of 32.
        let xr = match pack {
            true => self.storage(DType::U32, rows * (k / 4 + k / 16))?,
            false => self.storage(DType::F32, rows * k)?,
        };
        let sk = xl.strides()[xl.rank() - 1];
        let mut extra = vec![k as u32, rows as u32, sk as u32];
        extra.extend(starts.iter().map(|&s| s as u32));
        let meta = spec.meta((rows * k) as u32, &[], &extra);
        self.run(&spec, &pipeline, &[xr.buffer(), x.buffer()], &meta, (rows * k / 4) as u64)?;
        if !pack {
            let y = self.qmatvec(q, offset, ty, n, (&xr, &Layout::contiguous([rows, k])))?;
            return if x.dtype == DType::F32 { Ok(y) } else { self.cast(&y, &Layout::contiguous([rows, n]), x.dtype) };
        }
        let mq = qmatvec_rows_class(rows);
        let qv = offset.is_multiple_of(16);
        let key = KernelKey::QmatvecQ8(ty, x.dtype, mq, qv);
        let (spec, pipeline) = self.keyed(key, || qmatvec_q8_spec(self.caps(), ty, x.dtype, mq, qv))?;
        let y = self.storage(x.dtype, rows * n)?;
        let (bs, bb) = (ty.block_size() as u32, ty.block_bytes() as u32);
        let mut extra = vec![ty.id(), offset as u32, k as u32, n as u32, bs, bb, rows as u32, 0];
        extra.extend((0..mq).map(|i| i.min(rows - 1) as u32));
        let meta = spec.meta((rows * n) as u32, &[], &extra);
        let groups = n.div_ceil((QMATVEC_WG / QMATVEC_LANES * q8_group_rows(ty)) as usize) as u64;
        let buffers = [q.buffer(), xr.buffer(), y.buffer(), xr.buffer(), q.buffer()];
        self.run(&spec, &pipeline, &buffers, &meta, groups * QMATVEC_WG as u64)?;
        Ok(y)
    }
}

/// The quant kernels: `dequantize_{dtype}` and `dequantize_{dtype}_{type}` (by words of
/// quants), and `qmatvec_{dtype}_{type}` for every block type in its forms for 1 and 8 rows (those
/// for 2 and 4 differ from them only in MQ), each also with x's rows as vectors where the dtype's
/// repr has them, and with a norm's prologue (`_norm0`: a layer norm with weight and bias, four
/// rows; `_norm1`: an rms norm without, one row); `round_q8_{dtype}` (and `_pack`) and
/// `qmatvec_q8_{dtype}_{type}` for 1 and 8 rows.
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    let mut v: Vec<(String, Result<Spec>)> = vec![];
    for &dt in QuantOp::Dequantize.dtypes() {
        let name = kernel_name(QuantOp::Dequantize.name(), dt);
        v.push((name.clone(), dequantize_spec(caps, dt, None)));
        for (ty, _) in UNIT_TYPES {
            v.push((format!("{name}_{}", ty.name()), dequantize_spec(caps, dt, Some(ty))));
        }
    }
    for &dt in QuantOp::Qmatvec.dtypes() {
        let vecs = Repr::of(dt, caps, "").is_ok_and(|r| r.vectorizes());
        for (&ty, mq) in GgmlType::ALL.iter().flat_map(|ty| [(ty, 1), (ty, QMATVEC_MAX_ROWS)]) {
            for vec in [false, true].into_iter().filter(|&v| !v || vecs) {
                v.push((qmatvec_name(ty, dt, mq, vec), qmatvec_spec(caps, ty, dt, mq, (vec, false), (None, None))));
                if caps.subgroup && ty == GgmlType::Q4_K {
                    v.push((
                        qmatvec_name(ty, dt, mq, vec) + "_shuffle",
                        qmatvec_spec(caps, ty, dt, mq, (vec, true), (None, None)),
                    ));
                }
            }
        }
        // With a norm's prologue: a layer norm with both parameters, an rms norm with none (and
        // a transformer's epilogue: a bias, a GELU and a residual add).
        let layer = (RowNorm { center: true, weight: true, bias: true }, 4, vecs);
        let rms = (RowNorm { center: false, weight: false, bias: false }, 1, false);
        let ep = super::gemm::variants::epilogue(dt);
        for &ty in GgmlType::ALL {
            for (i, (norm, mq, vec)) in [layer, rms].into_iter().enumerate() {
                let name = format!("{}_norm{i}", qmatvec_name(ty, dt, mq, vec));
                v.push((name, qmatvec_spec(caps, ty, dt, mq, (vec, false), (Some(norm), None))));
            }
            let name = format!("{}_norm1_epilogue", qmatvec_name(ty, dt, 1, false));
            v.push((name, qmatvec_spec(caps, ty, dt, 1, (false, false), (Some(rms.0), Some(&ep)))));
        }
        for pack in [false, true] {
            v.push((format!("round_q8_{dt}{}", if pack { "_pack" } else { "" }), round_q8_spec(caps, dt, pack)));
        }
        for (ty, mq, qv) in Q8_DOT_TYPES.iter().flat_map(|&t| [(t, 1, false), (t, QMATVEC_MAX_ROWS, true)]) {
            let name = format!(
                "{}_{}_m{mq}{}",
                kernel_name(QuantOp::QmatvecQ8.name(), dt),
                ty.name(),
                if qv { "_qv" } else { "" }
            );
            v.push((name, qmatvec_q8_spec(caps, ty, dt, mq, qv)));
        }
    }
    v
}
