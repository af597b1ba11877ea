//! Indexing on wgpu (`shaders/index.wgsl`).
//!
//! - index_select and gather: one invocation per output word picks each element through the
//!   ids (`pick`); index_select whose rows (the dims after `dim`) are contiguous and start on a
//!   4-byte boundary copies whole rows as u32 words instead, whatever the dtype (`rows`).
//! - scatter, scatter_add, index_add: `dst` is copied into a new contiguous tensor (the copy
//!   family's strided kernel), then every source position updates it (`put`): atomic stores,
//!   atomic adds (u32), compare-exchange adds (f32, and the words of u8/f16/bf16), or for i64 an
//!   atomic add of the low word whose carry goes into an atomic add of the high word. f64 has
//!   no atomics and an i64 stored as two words could tear between two writers, so f64, and
//!   scatter of i64, give one invocation to each column along `dim` and walk it in order
//!   (`put_serial`), race-free and in the cpu's order. index_add is scatter_add with its 1-D
//!   ids spread over the source shape.
//!
//! Every kernel checks its ids and records the first bad one in the flag buffer (reported at
//! the next readback); a bad id is skipped, never followed.

use super::kernel::{Index, Spec};
use super::repr::{Access, Caps, Compute, Repr};
use super::support::bits_of;
use super::{Kernel, KernelKey, WgpuBackend, WgpuStorage};
use crate::backend::{CopyOps, IndexOps};
use crate::spec::Family;
use crate::spec::index::{IndexOp, Rows, ScatterMode, along, rows_of, spread_ids};
use crate::{DType, Layout, Result, Shape};

/// Threads per row of `index_select`'s row copy, at most (each moves up to four units): more
/// rows in flight at once. On an H200, 4096 rows of 4096 f32 from a 50000-row table: 256
/// threads 47.6 us, 128 50.8, 64 45.0, 32 45.1.
const ROW_THREADS: usize = 64;

/// Where a row copy reads: one buffer, or the buffers of a tensor's parts with the first word
/// of each in the whole tensor.
enum RowSource<'a> {
    One(&'a WgpuStorage),
    Parts(&'a [&'a WgpuStorage], Vec<u32>),
}

impl RowSource<'_> {
    /// The parts' first words (none for one buffer).
    fn starts(&self) -> &[u32] {
        match self {
            RowSource::One(_) => &[],
            RowSource::Parts(_, starts) => starts,
        }
    }
}

/// `fn id_bits(j) -> vec2u`: the id at storage index `j` as the low and high words of an i64.
/// (Spelt `vec2u`: the builder takes `vec2<u32>` in code for a sign of emulated i64 values.)
fn id_code(ids: Repr) -> String {
    let body = match ids.compute() {
        Compute::I64 => {
            "let v = ids_load(j);\n    return vec2u(u32(v & 4294967295li), u32((v >> 32u) & 4294967295li));"
        }
        Compute::I64e => "return ids_load(j);",
        _ => "return vec2u(ids_load(j), 0u);",
    };
    format!("fn id_bits(j: u32) -> vec2u {{\n    {body}\n}}")
}

fn reprs(caps: Caps, op: IndexOp, dtype: DType, idt: DType) -> Result<(Repr, Repr)> {
    Ok((Repr::of(dtype, caps, op.name())?, Repr::of(idt, caps, op.name())?))
}

/// index_select or gather, element by element: `x` indexed through the output positions with
/// the coordinate along dim taken as 0, `ids` through the output positions.
pub(crate) fn pick_spec(caps: Caps, op: IndexOp, dtype: DType, idt: DType, x: Index, ids: Index) -> Result<Spec> {
    let (r, ir) = reprs(caps, op, dtype, idt)?;
    Ok(Spec::new(Family::Index, "pick", caps)
        .bind("x", r, Access::Read, x)
        .bind("ids", ir, Access::Read, ids)
        .bind("y", r, Access::Write, Index::None)
        .with_flags()
        .constant("ZERO", r.compute().lit(0.0))
        .code(id_code(ir)))
}

/// index_select of contiguous rows as u32 words: `x` indexed through the leading positions.
pub(crate) fn rows_spec(caps: Caps, idt: DType, x: Index, ids: Index) -> Result<Spec> {
    let ir = Repr::of(idt, caps, IndexOp::IndexSelect.name())?;
    Ok(Spec::new(Family::Index, "rows", caps)
        .bind("x", Repr::U32, Access::Read, x)
        .bind("ids", ir, Access::Read, ids)
        .bind("y", Repr::U32, Access::Write, Index::None)
        .with_flags()
        .code(id_code(ir)))
}

/// [`rows_spec`] moving 16-byte vectors (rows, row starts and the stride in whole vectors).
pub(crate) fn rows_v4_spec(caps: Caps, idt: DType, x: Index, ids: Index) -> Result<Spec> {
    let mut spec = rows_spec(caps, idt, x, ids)?;
    spec.entry = "rows_v4";
    spec.bindings[0].vec = true;
    spec.bindings[2].vec = true;
    Ok(spec)
}

/// Names of the bindings of the parts a lookup across parts reads.
const PART_NAMES: [&str; 16] =
    ["x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14", "x15"];

/// [`rows_spec`] (or [`rows_v4_spec`]: `vec`) reading rows along dim 0 of a tensor stored in
/// `parts` buffers (bound `x0`, `x1`, ..), one kernel for the whole lookup. The kernel's
/// `x_load(i)` (`x_load4`) takes a word of the whole tensor (as if in one buffer) to the part
/// holding it: md[EXTRA + 8 + k] is the first word of part k. x_at is the view's first word
/// (md[EXTRA + 7]). Rows never cross parts (parts are cut at whole rows).
pub(crate) fn rows_parts_spec(caps: Caps, idt: DType, ids: Index, parts: usize, vec: bool) -> Result<Spec> {
    let ir = Repr::of(idt, caps, IndexOp::IndexSelect.name())?;
    let names = PART_NAMES.get(..parts).filter(|n| !n.is_empty()).ok_or_else(|| crate::Error::Backend {
        backend: crate::BackendKind::Wgpu,
        msg: format!("a lookup across {parts} parts"),
    })?;
    let mut spec = Spec::new(Family::Index, if vec { "rows_v4" } else { "rows" }, caps);
    for name in names {
        spec = spec.bind(name, Repr::U32, Access::Read, Index::None);
    }
    spec = spec.bind("ids", ir, Access::Read, ids).bind("y", Repr::U32, Access::Write, Index::None);
    if vec {
        spec.bindings.iter_mut().filter(|b| b.name != "ids").for_each(|b| b.vec = true);
    }
    let (load, ty) = if vec { ("load4", "vec4<u32>") } else { ("load", "u32") };
    let mut cases = String::new();
    for (k, name) in names.iter().enumerate() {
        let label = if k + 1 == names.len() { "default".to_string() } else { format!("case {k}u") };
        cases.push_str(&format!("        {label}: {{ return {name}_{load}(j); }}\n"));
    }
    let code = format!(
        "const PARTS: u32 = {parts}u;\n\
         fn x_at(p: u32) -> u32 {{ return md[EXTRA + 7u]; }}\n\
         fn x_{load}(i: u32) -> {ty} {{\n    var p = 0u;\n    \
         for (var k = 1u; k < PARTS; k++) {{\n        if (i >= md[EXTRA + 8u + k]) {{ p = k; }}\n    }}\n    \
         let j = i - md[EXTRA + 8u + p];\n    switch p {{\n{cases}    }}\n}}"
    );
    Ok(spec.with_flags().code(id_code(ir)).code(code))
}

/// A pass that only checks ids.
pub(crate) fn check_spec(caps: Caps, op: IndexOp, idt: DType, ids: Index) -> Result<Spec> {
    let ir = Repr::of(idt, caps, op.name())?;
    Ok(Spec::new(Family::Index, "check", caps).bind("ids", ir, Access::Read, ids).with_flags().code(id_code(ir)))
}

/// Whether scatter of `dtype` in `mode` walks columns in order: f64 has no atomics, and an
/// i64 set from two words could tear between two writers.
fn serial(dtype: DType, mode: ScatterMode) -> bool {
    dtype == DType::F64 || (dtype == DType::I64 && mode == ScatterMode::Set)
}

/// The repr y is bound with and `fn update(i, v)`, which stores or adds `v` (of `r`'s compute
/// type) at element `i` of y; safe against concurrent updates of one element unless `serial`.
fn update_code(r: Repr, mode: ScatterMode, serial: bool) -> (Repr, String) {
    let c = r.compute();
    let (yr, body) = match (mode, r) {
        (ScatterMode::Set, _) => (r, "y_store(i, v);".to_string()),
        (ScatterMode::Add, _) if serial && c == Compute::I64e => (r, "y_store(i, i64e_add(y_load(i), v));".into()),
        (ScatterMode::Add, Repr::F64) => (r, "y_store(i, y_load(i) + v);".into()),
        (ScatterMode::Add, _) if serial => (r, "y_store(i, y_load(i) + v);".into()),
        (ScatterMode::Add, Repr::U32) => (r, "atomicAdd(&y[i], v);".into()),
        (ScatterMode::Add, Repr::F32) => (
            r,
            "var old = atomicLoad(&y[i]);\n    loop {\n        \
             let r = atomicCompareExchangeWeak(&y[i], old, bitcast<u32>(bitcast<f32>(old) + v));\n        \
             if (r.exchanged) {\n            break;\n        }\n        old = r.old_value;\n    }"
                .into(),
        ),
        (ScatterMode::Add, Repr::I64 | Repr::I64Pair) => {
            // The carries out of the low words add up to the carry out of their sum, so the
            // final value is exact whatever the order of the adds.
            let split =
                if c == Compute::I64 { "vec2u(u32(v & 4294967295li), u32((v >> 32u) & 4294967295li))" } else { "v" };
            let body = format!(
                "let b = {split};\n    let lo = atomicAdd(&y[2u * i], b.x);\n    \
                 atomicAdd(&y[2u * i + 1u], b.y + select(0u, 1u, lo + b.x < lo));"
            );
            (Repr::U32, body)
        }
        (ScatterMode::Add, Repr::U8 | Repr::F16 | Repr::F16Packed | Repr::BF16) => {
            let (epw, unpack, pack) = match r {
                Repr::U8 => (4, "bits", "s"),
                Repr::BF16 => (2, "bitcast<f32>(bits << 16u)", "bf16_bits(s)"),
                _ => (2, "f16_to_f32(bits)", "f32_to_f16(s)"),
            };
            let (bits, mask) = (32 / epw, (1u64 << (32 / epw)) - 1);
            let body = format!(
                "let w = i / {epw}u;\n    let sh = (i % {epw}u) * {bits}u;\n    var old = atomicLoad(&y[w]);\n    \
                 loop {{\n        let bits = (old >> sh) & {mask}u;\n        let s = {unpack} + v;\n        \
                 let nv = (old & ~({mask}u << sh)) | (({pack} & {mask}u) << sh);\n        \
                 let r = atomicCompareExchangeWeak(&y[w], old, nv);\n        if (r.exchanged) {{\n            \
                 break;\n        }}\n        old = r.old_value;\n    }}"
            );
            (r, body)
        }
    };
    (yr, format!("fn update(i: u32, v: {}) {{\n    {body}\n}}", c.wgsl()))
}

/// What decides an index kernel that the ops find by key (their specs are not built per op).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum IndexKey {
    /// index_select's rows of one tensor: the ids' dtype, x's and the ids' index maps, whole
    /// 16-byte vectors.
    Rows(DType, Index, Index, bool),
    /// The same from a tensor in parts: the ids' dtype and index map, the parts, vectors.
    RowsParts(DType, Index, usize, bool),
    /// [`put_spec`]'s arguments.
    Put(IndexOp, DType, DType, ScatterMode, [Index; 3]),
    /// [`pick_spec`]'s arguments.
    Pick(IndexOp, DType, DType, Index, Index),
    /// [`check_spec`]'s arguments.
    Check(IndexOp, DType, Index),
}

impl IndexKey {
    fn spec(self, caps: Caps) -> Result<Spec> {
        match self {
            IndexKey::Rows(idt, x, ids, true) => rows_v4_spec(caps, idt, x, ids),
            IndexKey::Rows(idt, x, ids, false) => rows_spec(caps, idt, x, ids),
            IndexKey::RowsParts(idt, ids, parts, vec) => rows_parts_spec(caps, idt, ids, parts, vec),
            IndexKey::Put(op, dtype, idt, mode, idx) => put_spec(caps, op, dtype, idt, mode, idx),
            IndexKey::Pick(op, dtype, idt, x, ids) => pick_spec(caps, op, dtype, idt, x, ids),
            IndexKey::Check(op, idt, ids) => check_spec(caps, op, idt, ids),
        }
    }
}

/// scatter, scatter_add or index_add (as `op`) of src into y, bound with `idx` for ids, src, y.
pub(crate) fn put_spec(
    caps: Caps,
    op: IndexOp,
    dtype: DType,
    idt: DType,
    mode: ScatterMode,
    idx: [Index; 3],
) -> Result<Spec> {
    let (r, ir) = reprs(caps, op, dtype, idt)?;
    let serial = serial(dtype, mode);
    let (yr, update) = update_code(r, mode, serial);
    Ok(Spec::new(Family::Index, if serial { "put_serial" } else { "put" }, caps)
        .bind("ids", ir, Access::Read, idx[0])
        .bind("src", r, Access::Read, idx[1])
        .bind("y", yr, Access::Update, idx[2])
        .with_flags()
        .code(id_code(ir))
        .code(update))
}

impl WgpuBackend {
    /// Flags the bad ids among `ids` (`il`) in `flag`, for an op whose main pass visits none.
    fn check_ids(&self, op: IndexOp, ids: &WgpuStorage, il: &Layout, size: usize, flag: &WgpuStorage) -> Result<()> {
        let (spec, pipeline) = self.index_kernel(IndexKey::Check(op, ids.dtype, Index::of(il)))?;
        let n = il.elem_count();
        let meta = spec.meta(n as u32, &[il], &[op.flag_code(), size as u32, (size as u64 >> 32) as u32]);
        self.run(&spec, &pipeline, &[ids.buffer(), flag.buffer()], &meta, n as u64)
    }

    /// `out[p] = x[p with p[dim] = ids[p]]` over the positions of `out`, with `il` the ids'
    /// layout over `out`.
    #[allow(clippy::too_many_arguments)]
    fn pick(
        &self,
        op: IndexOp,
        x: &WgpuStorage,
        xl: &Layout,
        ids: &WgpuStorage,
        il: &Layout,
        out: &Shape,
        dim: usize,
        flag: &WgpuStorage,
    ) -> Result<WgpuStorage> {
        let n = out.elem_count();
        let y = self.storage(x.dtype, n)?;
        let xb = along(out, xl.strides(), xl.offset(), dim);
        // A pick only moves bytes: f64 needs no SHADER_F64 (see `support.rs`).
        let dt = bits_of(x.dtype, self.caps());
        let (spec, pipeline) = self.index_kernel(IndexKey::Pick(op, dt, ids.dtype, Index::of(&xb), Index::of(il)))?;
        let extra = [op.flag_code(), xl.dims()[dim] as u32, xl.strides()[dim] as u32];
        let meta = spec.meta(n as u32, &[&xb, il], &extra);
        let epw = spec.bindings[2].repr.per_word() as usize;
        let buffers = [x.buffer(), ids.buffer(), y.buffer(), flag.buffer()];
        self.run(&spec, &pipeline, &buffers, &meta, n.div_ceil(epw) as u64)?;
        Ok(y)
    }

    /// index_select of whole rows of words (`rows`) along a dim of `size` from `x` into a new
    /// tensor of `out` elements of `dtype`.
    #[allow(clippy::too_many_arguments)]
    fn select_rows(
        &self,
        x: RowSource,
        dtype: DType,
        ids: &WgpuStorage,
        il: &Layout,
        rows: Rows,
        size: usize,
        out: usize,
        flag: &WgpuStorage,
    ) -> Result<WgpuStorage> {
        let op = IndexOp::IndexSelect;
        let y = self.storage(dtype, out)?;
        // Whole 16-byte vectors when every row and row start allows them.
        let vec = rows.row.is_multiple_of(4)
            && rows.stride.is_multiple_of(4)
            && rows.lead.offset().is_multiple_of(4)
            && rows.lead.strides().iter().all(|s| s % 4 == 0)
            && x.starts().iter().all(|w| w % 4 == 0);
        let ii = Index::of(il);
        let (spec, pipeline) = self.index_kernel(match &x {
            RowSource::One(_) => IndexKey::Rows(ids.dtype, Index::of(&rows.lead), ii, vec),
            RowSource::Parts(p, _) => IndexKey::RowsParts(ids.dtype, ii, p.len(), vec),
        })?;
        let units = if vec { rows.row / 4 } else { rows.row };
        let wg = spec.workgroup as usize;
        let n = il.dims()[0];
        let count = rows.lead.elem_count() * n;
        // Threads per row: a power of two moving 4 units each, at most ROW_THREADS.
        let tw = units.div_ceil(4).next_power_of_two().min(ROW_THREADS).min(wg);
        let chunks = units.div_ceil(4 * tw);
        let mut extra = vec![
            op.flag_code(),
            size as u32,
            units as u32,
            tw.trailing_zeros(),
            chunks as u32,
            n as u32,
            rows.stride as u32,
        ];
        let groups = count.div_ceil(wg / tw) * chunks;
        let (meta, mut buffers) = match &x {
            RowSource::One(x) => (spec.meta(count as u32, &[&rows.lead, il], &extra), vec![x.buffer()]),
            RowSource::Parts(parts, starts) => {
                extra.push(rows.lead.offset() as u32);
                extra.extend(starts);
                (spec.meta(count as u32, &[il], &extra), parts.iter().map(|p| p.buffer()).collect())
            }
        };
        buffers.extend([ids.buffer(), y.buffer(), flag.buffer()]);
        self.run(&spec, &pipeline, &buffers, &meta, (groups * wg) as u64)?;
        Ok(y)
    }

    /// The kernel of `key`: its spec built at first use, then found by the key.
    fn index_kernel(&self, key: IndexKey) -> Result<Kernel> {
        self.keyed(KernelKey::Index(key), || key.spec(self.caps()))
    }

    /// A contiguous copy of `dst` updated by [`Self::put_into`].
    #[allow(clippy::too_many_arguments)]
    fn put(
        &self,
        op: IndexOp,
        mode: ScatterMode,
        dst: &WgpuStorage,
        dl: &Layout,
        ids: &WgpuStorage,
        il: &Layout,
        src: &WgpuStorage,
        sl: &Layout,
        dim: usize,
        flag: &WgpuStorage,
    ) -> Result<WgpuStorage> {
        let mut y = self.storage(dst.dtype, dl.elem_count())?;
        self.copy_strided(dst, dl, &mut y, 0)?;
        let yl = Layout::contiguous(dl.shape().clone());
        self.put_into(op, mode, &y, &yl, ids, il, src, sl, dim, flag)?;
        Ok(y)
    }

    /// `y` (laid out as `yl`, no two positions sharing memory) updated in place at `ids` along
    /// `dim` with `src` (as `op` in `mode`); `il` is the ids' layout over the shape of `src`.
    #[allow(clippy::too_many_arguments)]
    fn put_into(
        &self,
        op: IndexOp,
        mode: ScatterMode,
        y: &WgpuStorage,
        yl: &Layout,
        ids: &WgpuStorage,
        il: &Layout,
        src: &WgpuStorage,
        sl: &Layout,
        dim: usize,
        flag: &WgpuStorage,
    ) -> Result<()> {
        let caps = self.caps();
        // A set only moves bytes: f64 needs no SHADER_F64 (see `support.rs`); adds do.
        let dt = if mode == ScatterMode::Set { bits_of(y.dtype, caps) } else { y.dtype };
        let head = [op.flag_code(), yl.dims()[dim] as u32, yl.strides()[dim] as u32];
        let buffers = [ids.buffer(), src.buffer(), y.buffer(), flag.buffer()];
        if serial(dt, mode) {
            let m = sl.dims()[dim];
            let mut cols = sl.dims().to_vec();
            cols[dim] = 1;
            let cols = Shape::new(cols);
            let l = [
                Layout::new(cols.clone(), il.strides().to_vec(), il.offset()),
                Layout::new(cols.clone(), sl.strides().to_vec(), sl.offset()),
                Layout::new(cols.clone(), yl.strides().to_vec(), yl.offset()),
            ];
            let key = IndexKey::Put(op, dt, ids.dtype, mode, [&l[0], &l[1], &l[2]].map(Index::of));
            let (spec, pipeline) = self.index_kernel(key)?;
            let extra = [&head[..], &[m as u32, il.strides()[dim] as u32, sl.strides()[dim] as u32]].concat();
            let meta = spec.meta(cols.elem_count() as u32, &[&l[0], &l[1], &l[2]], &extra);
            let threads = if m == 0 { 0 } else { cols.elem_count() };
            self.run(&spec, &pipeline, &buffers, &meta, threads as u64)
        } else {
            let yb = along(sl.shape(), yl.strides(), yl.offset(), dim);
            let n = sl.elem_count();
            let key = IndexKey::Put(op, dt, ids.dtype, mode, [Index::of(il), Index::of(sl), Index::of(&yb)]);
            let (spec, pipeline) = self.index_kernel(key)?;
            let meta = spec.meta(n as u32, &[il, sl, &yb], &head);
            self.run(&spec, &pipeline, &buffers, &meta, n as u64)
        }
    }
}

impl IndexOps for WgpuBackend {
    fn index_select(
        &self,
        x: &WgpuStorage,
        xl: &Layout,
        ids: &WgpuStorage,
        il: &Layout,
        dim: usize,
        flag: &WgpuStorage,
    ) -> Result<WgpuStorage> {
        let op = IndexOp::IndexSelect;
        let mut dims = xl.dims().to_vec();
        dims[dim] = il.dims()[0];
        let out = Shape::new(dims);
        if out.elem_count() == 0 {
            self.check_ids(op, ids, il, xl.dims()[dim], flag)?;
            return self.storage(x.dtype, 0);
        }
        // Rows of whole u32 words (the bindings' unit).
        match rows_of(xl, dim, x.dtype.size_in_bytes(), &[4]) {
            Some(rows) => {
                self.select_rows(RowSource::One(x), x.dtype, ids, il, rows, xl.dims()[dim], out.elem_count(), flag)
            }
            None => self.pick(op, x, xl, ids, &spread_ids(il, &out, dim), &out, dim, flag),
        }
    }

    fn index_select_parts(
        &self,
        parts: &[&WgpuStorage],
        bounds: &[usize],
        xl: &Layout,
        ids: &WgpuStorage,
        il: &Layout,
        flag: &WgpuStorage,
    ) -> Result<Option<WgpuStorage>> {
        let Some(dtype) = parts.first().map(|p| p.dtype) else { return Ok(None) };
        let esz = dtype.size_in_bytes();
        let (n, size) = (il.dims()[0], xl.dims()[0]);
        let total_words = bounds.last().map_or(0, |&b| b * esz / 4);
        let Some(rows) = rows_of(xl, 0, esz, &[4]).filter(|_| n > 0 && xl.elem_count() > 0) else { return Ok(None) };
        // Each part bound as a buffer of its own, beside metadata, ids, output and flags.
        let bindable = (self.0.gpu.limits.max_storage_buffers_per_shader_stage as usize).saturating_sub(4);
        let starts = &bounds[..parts.len()];
        let whole_words = starts.iter().all(|&s| (s * esz).is_multiple_of(4));
        if parts.len() > bindable.min(PART_NAMES.len()) || !whole_words || total_words > u32::MAX as usize {
            return Ok(None);
        }
        let out = n * xl.elem_count() / size;
        let x = RowSource::Parts(parts, starts.iter().map(|&s| (s * esz / 4) as u32).collect());
        self.select_rows(x, dtype, ids, il, rows, size, out, flag).map(Some)
    }

    fn gather(
        &self,
        x: &WgpuStorage,
        xl: &Layout,
        ids: &WgpuStorage,
        il: &Layout,
        dim: usize,
        flag: &WgpuStorage,
    ) -> Result<WgpuStorage> {
        self.pick(IndexOp::Gather, x, xl, ids, il, il.shape(), dim, flag)
    }

    fn scatter(
        &self,
        dst: &WgpuStorage,
        dl: &Layout,
        ids: &WgpuStorage,
        il: &Layout,
        src: &WgpuStorage,
        sl: &Layout,
        dim: usize,
        mode: ScatterMode,
        flag: &WgpuStorage,
    ) -> Result<WgpuStorage> {
        self.put(mode.op(), mode, dst, dl, ids, il, src, sl, dim, flag)
    }

    fn scatter_set(
        &self,
        dst: &mut WgpuStorage,
        dl: &Layout,
        ids: &WgpuStorage,
        il: &Layout,
        src: &WgpuStorage,
        sl: &Layout,
        dim: usize,
        mode: ScatterMode,
        flag: &WgpuStorage,
    ) -> Result<()> {
        self.put_into(mode.op(), mode, dst, dl, ids, il, src, sl, dim, flag)
    }

    fn index_add(
        &self,
        dst: &WgpuStorage,
        dl: &Layout,
        ids: &WgpuStorage,
        il: &Layout,
        src: &WgpuStorage,
        sl: &Layout,
        dim: usize,
        flag: &WgpuStorage,
    ) -> Result<WgpuStorage> {
        let op = IndexOp::IndexAdd;
        if sl.elem_count() == 0 {
            self.check_ids(op, ids, il, dl.dims()[dim], flag)?;
        }
        self.put(op, ScatterMode::Add, dst, dl, ids, &spread_ids(il, sl.shape(), dim), src, sl, dim, flag)
    }
}

/// Every index kernel for `caps`: `{op}_{dtype}` with u32 ids, `{op}_{dtype}_ids_{u8,i64}`
/// with the others, and the dtype-free row copy and id check as `index_select_rows_ids_{ids}`
/// and `index_check_ids_{ids}`.
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    use crate::spec::kernel_name;
    let s = Index::Strided(2);
    let mut v = vec![];
    for &idt in DType::INT {
        let suffix = if idt == DType::U32 { String::new() } else { format!("_ids_{idt}") };
        v.push((format!("index_select_rows_ids_{idt}"), rows_spec(caps, idt, s, Index::Contiguous)));
        v.push((format!("index_select_rows_v4_ids_{idt}"), rows_v4_spec(caps, idt, s, Index::Contiguous)));
        v.push((format!("index_check_ids_{idt}"), check_spec(caps, IndexOp::Gather, idt, s)));
        for parts in [1, 3, PART_NAMES.len()] {
            v.push((format!("index_select_rows_parts{parts}_ids_{idt}"), rows_parts_spec(caps, idt, s, parts, false)));
            v.push((
                format!("index_select_rows_v4_parts{parts}_ids_{idt}"),
                rows_parts_spec(caps, idt, s, parts, true),
            ));
        }
        for dt in caps.dtypes() {
            for &op in IndexOp::ALL {
                let name = format!("{}{suffix}", kernel_name(op.name(), dt));
                let spec = match op {
                    IndexOp::IndexSelect | IndexOp::Gather => pick_spec(caps, op, dt, idt, s, s),
                    IndexOp::Scatter => put_spec(caps, op, dt, idt, ScatterMode::Set, [s, s, s]),
                    IndexOp::ScatterAdd | IndexOp::IndexAdd => {
                        put_spec(caps, op, dt, idt, ScatterMode::Add, [s, Index::Contiguous, s])
                    }
                };
                v.push((name, spec));
            }
        }
    }
    v
}
