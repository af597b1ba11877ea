//! Elementwise ops on wgpu: three generic map kernels (`shaders/elementwise.wgsl`) whose `op`
//! is generated here per op and compute type.

use super::kernel::{Index, Spec, lane_threads, simplify, vec_ok};
use super::render::Wgsl;
use super::repr::{Access, Caps, Compute, Repr, params};
use super::support::bits_of;
use super::{WgpuBackend, WgpuStorage};
use crate::backend::{ElementwiseOps, one_at_a_time};
use crate::expr::program::Program;
use crate::expr::{Expr, Ty, table};
use crate::spec::Family;
use crate::spec::elementwise::{BinaryOp, CmpOp, ElementwiseOp, ScalarOp, UnaryOp};
use crate::{DType, Layout, Result, Scalar};
use smallvec::SmallVec;

/// The spec of an elementwise kernel (`mapn` of `shaders/elementwise.wgsl`): inputs (named
/// `x`, or `a`/`b`, or `c`/`a`/`b`) with their reprs and index maps, output `y`, the generated
/// `op` (with `param_*` if it takes scalars) and `op_at`, which loads element `i` of each input
/// into it.
fn spec(caps: Caps, inputs: &[(&'static str, Repr, Index)], out: Repr, code: String, scalars: bool) -> Spec {
    let mut spec = Spec::new(Family::Elementwise, "mapn", caps);
    for &(name, r, i) in inputs {
        spec = spec.bind(name, r, Access::Read, i);
    }
    let names: Vec<&str> = inputs.iter().map(|i| i.0).collect();
    spec = spec.bind("y", out, Access::Write, Index::None).code(code).code(op_at(&names, out.compute()));
    if scalars {
        spec = spec.code(params::typed_decoder(inputs[0].1.compute()));
    }
    spec
}

/// `fn op_at(i)`: `op` of element `i` of each input binding in `names`.
pub(crate) fn op_at(names: &[&str], ret: Compute) -> String {
    let loads: Vec<String> = names.iter().map(|n| format!("{n}_load({n}_at(i))")).collect();
    format!("fn op_at(i: u32) -> {} {{ return op({}); }}\n", ret.wgsl(), loads.join(", "))
}

/// `fn op_at4(i)`: `op` of elements `i..i+4` of each input binding in `names`, as a vector.
pub(crate) fn op_at4(names: &[&str], ret: Compute) -> String {
    let gets: String = names.iter().enumerate().map(|(k, n)| format!("let v{k} = {n}_get4(i); ")).collect();
    let lane = |c: &str| (0..names.len()).map(|k| format!("v{k}.{c}")).collect::<Vec<_>>().join(", ");
    let lanes: Vec<String> = ["x", "y", "z", "w"].iter().map(|c| format!("op({})", lane(c))).collect();
    format!("fn op_at4(i: u32) -> vec4<{}> {{ {gets}return vec4({}); }}\n", ret.wgsl(), lanes.join(", "))
}

/// The table's expression `e` over operands of compute types `args`, rendered for `caps`.
fn op_code(caps: Caps, e: &Expr, names: &[&str], args: &[Ty]) -> String {
    Wgsl { caps, names }.function(e, args)
}

pub(crate) fn unary_spec(caps: Caps, op: UnaryOp, dtype: DType, x: Index) -> Result<Spec> {
    let r = Repr::of(dtype, caps, op.name())?;
    let t = Ty::of(dtype);
    Ok(spec(caps, &[("x", r, x)], r, op_code(caps, &table::unary(op, t), &["v"], &[t]), false))
}

/// affine, powf, elu and clamp: maps with scalars `param(0)`, `param(1)`.
pub(crate) fn scalar_map_spec(caps: Caps, op: ScalarOp, dtype: DType, x: Index) -> Result<Spec> {
    let r = Repr::of(dtype, caps, op.name())?;
    let t = Ty::of(dtype);
    Ok(spec(caps, &[("x", r, x)], r, op_code(caps, &table::scalar(op, t), &["v"], &[t]), true))
}

pub(crate) fn binary_spec(caps: Caps, op: BinaryOp, dtype: DType, a: Index, b: Index) -> Result<Spec> {
    let r = Repr::of(dtype, caps, op.name())?;
    let t = Ty::of(dtype);
    let code = op_code(caps, &table::binary(op, t), &["a", "b"], &[t, t]);
    Ok(spec(caps, &[("a", r, a), ("b", r, b)], r, code, false))
}

pub(crate) fn cmp_spec(caps: Caps, op: CmpOp, dtype: DType, a: Index, b: Index) -> Result<Spec> {
    let r = Repr::of(dtype, caps, op.name())?;
    let t = Ty::of(dtype);
    let code = op_code(caps, &table::cmp(op, t), &["a", "b"], &[t, t]);
    Ok(spec(caps, &[("a", r, a), ("b", r, b)], Repr::U8, code, false))
}

pub(crate) fn where_spec(caps: Caps, cond: DType, dtype: DType, idx: [Index; 3]) -> Result<Spec> {
    let op = ElementwiseOp::WhereCond.name();
    let (cr, vr) = (Repr::of(cond, caps, op)?, Repr::of(dtype, caps, op)?);
    let (ct, t) = (Ty::of(cond), Ty::of(dtype));
    let code = op_code(caps, &table::where_cond(ct, t), &["c", "a", "b"], &[ct, t, t]);
    Ok(spec(caps, &[("c", cr, idx[0]), ("a", vr, idx[1]), ("b", vr, idx[2])], vr, code, false))
}

pub(crate) fn cast_spec(caps: Caps, from: DType, to: DType, x: Index) -> Result<Spec> {
    let op = ElementwiseOp::Cast.name();
    let (fr, tr) = (Repr::of(from, caps, op)?, Repr::of(to, caps, op)?);
    Ok(spec(caps, &[("x", fr, x)], tr, op_code(caps, &table::cast(from, to), &["v"], &[Ty::of(from)]), false))
}

/// The four-lane form of a map spec where its output allows vector stores: each input loads
/// whole vectors where its layout allows (`vec[k]`), else gathers lane by lane.
fn four_lanes(spec: Spec, vec: &[bool]) -> Option<Spec> {
    let out = spec.bindings.last()?.repr;
    if spec.entry != "mapn" || !out.vectorizes() || spec.bindings.iter().any(|b| b.repr.compute() == Compute::I64e) {
        return None;
    }
    let names: Vec<&str> = spec.bindings[..spec.bindings.len() - 1].iter().map(|b| b.name).collect();
    let code = op_at4(&names, out.compute());
    let vec: Vec<bool> = vec.iter().copied().chain([true]).collect();
    Some(spec.code(code).lanes("mapn_v4", &vec))
}

/// `[rows, cols]` when `l` is a column-major matrix (after merging dims): stride 1 down its
/// rows, so reading it in the output's row-major order would touch a new line per element.
fn column_major(l: &Layout) -> Option<[u32; 2]> {
    match simplify(l) {
        (d, s) if d.len() == 2 && s[0] == 1 && s[1] >= d[0] => Some([d[0], d[1]]),
        _ => None,
    }
}

/// The tiled form of a one- or two-input map whose output is written element by element:
/// inputs flagged in `tiled` (all of one `[rows, cols]`) are staged through workgroup tiles.
pub(crate) fn tiled(spec: Spec, tiled: &[bool]) -> Option<Spec> {
    let entry = match (spec.entry, spec.bindings.len()) {
        ("mapn", 2) => "map1_t",
        ("mapn", 3) => "map2_t",
        _ => return None,
    };
    if spec.bindings.last()?.repr.per_word() != 1 || !tiled.iter().any(|&t| t) {
        return None;
    }
    let mut code = String::new();
    for (b, &t) in spec.bindings.iter().zip(tiled) {
        let (n, c) = (b.name, b.repr.compute().wgsl());
        let sig = "(r0: u32, c0: u32, lid: vec3<u32>, rows: u32, cols: u32)";
        if t {
            let m = format!("{}_META", n.to_uppercase());
            code += &format!(
                "var<workgroup> t_{n}: array<{c}, 1056>;\nfn {n}_stage{sig} {{\n    for (var j = lid.y; j < 32u; j += 8u) {{\n        \
                 let c = c0 + j;\n        let r = r0 + lid.x;\n        if (r < rows && c < cols) {{\n            \
                 t_{n}[j * 33u + lid.x] = {n}_load(md[{m}] + r * md[{m} + 3u] + c * md[{m} + 4u]);\n        }}\n    }}\n}}\n\
                 fn {n}_tget(i: u32, lx: u32, j: u32) -> {c} {{ return t_{n}[lx * 33u + j]; }}\n"
            );
        } else {
            code += &format!(
                "fn {n}_stage{sig} {{}}\nfn {n}_tget(i: u32, lx: u32, j: u32) -> {c} {{ return {n}_load({n}_at(i)); }}\n"
            );
        }
    }
    let mut spec = spec.code(code);
    spec.entry = entry;
    Some(spec)
}

impl WgpuBackend {
    /// Copies a column-major matrix `src` of `dtype` (as its bits, one element a word) to the
    /// start of `dst` through workgroup tiles: the tiled form of the cast of `dtype` to itself,
    /// found by its key as the maps are. `None` where `src` is not column-major.
    pub(crate) fn copy_transposed(
        &self,
        src: &WgpuStorage,
        sl: &Layout,
        dst: &WgpuStorage,
        dtype: DType,
    ) -> Option<Result<()>> {
        let tiles = column_majors(&[sl])?;
        let index = [Index::of(sl), Index::None, Index::None];
        Some(self.run_tiled(Map::Cast(dtype, dtype), index, &[sl], &[src.buffer(), dst.buffer()], tiles))
    }

    /// Runs the tiled form of `map` over inputs laid out as `layouts` (`[rows, cols]` and which
    /// are column-major: `column_majors`); `buffers` are the inputs', then the output's.
    fn run_tiled(
        &self,
        map: Map,
        index: [Index; 3],
        layouts: &[&Layout],
        buffers: &[&wgpu::Buffer],
        (rc, flags): ([u32; 2], [bool; 3]),
    ) -> Result<()> {
        let key = MapKey { map, index, form: Form::Tiled(flags) };
        let (spec, pipeline) = self.map_pipeline(key, |base| tiled(base, &flags[..layouts.len()]))?;
        let meta = spec.meta(layouts[0].elem_count() as u32, layouts, &rc);
        let tiles = (rc[0].div_ceil(32) as u64) * (rc[1].div_ceil(32) as u64);
        self.run(&spec, &pipeline, buffers, &meta, tiles * 256)
    }

    /// Runs `map` over inputs of one shape into a new `out` tensor: its kernel found by what it
    /// is (the map, the inputs' index maps, the tiled or vector form), its WGSL generated once.
    fn launch(
        &self,
        map: Map,
        inputs: &[(&WgpuStorage, &Layout)],
        out: DType,
        scalars: &[Scalar],
    ) -> Result<WgpuStorage> {
        let n = inputs[0].1.elem_count();
        let y = self.storage(out, n)?;
        let caps = self.caps();
        let mut index = [Index::None; 3];
        for (slot, (_, l)) in index.iter_mut().zip(inputs) {
            *slot = Index::of(l);
        }
        // (Inline: a map has at most three inputs, so recording it allocates nothing here; pushed
        // one by one, which costs a third of what collecting into them did.)
        let (mut reprs, mut layouts) = (SmallVec::<[Repr; 3]>::new(), SmallVec::<[&Layout; 3]>::new());
        let mut buffers = SmallVec::<[&wgpu::Buffer; 4]>::new();
        for (&d, &(x, l)) in map.input_dtypes().iter().zip(inputs) {
            reprs.push(Repr::of(d, caps, map.name())?);
            layouts.push(l);
            buffers.push(x.buffer());
        }
        buffers.push(y.buffer());
        let out_repr = Repr::of(map.output(out), caps, map.name())?;
        // An input stored transposed to the output: through workgroup tiles.
        // (The tiled kernels take one or two inputs and no scalars.)
        let tiles = scalars.is_empty() && inputs.len() <= 2 && out_repr.per_word() == 1;
        let transposed = if tiles { column_majors(&layouts) } else { None };
        if let Some(tiles) = transposed {
            self.run_tiled(map, index, &layouts, &buffers, tiles)?;
            drop(buffers);
            return Ok(y);
        }
        // (Not on a browser's software fallback adapter: Chromium's SwiftShader lost the device
        // compiling the four-lane forms of the long float maps; there they run one lane a thread.)
        let lanes = !self.browser_fallback()
            && out_repr.vectorizes()
            && reprs.iter().chain([&out_repr]).all(|r| r.compute() != Compute::I64e);
        let (form, threads) = if lanes {
            let mut vec = [false; 3];
            for (v, (r, l)) in vec.iter_mut().zip(reprs.iter().zip(&layouts)) {
                *v = vec_ok(*r, l);
            }
            (Form::Lanes(vec), lane_threads(n))
        } else {
            (Form::Plain, (n as u64).div_ceil(out_repr.per_word() as u64))
        };
        let key = MapKey { map, index, form };
        let (spec, pipeline) = self.map_pipeline(key, |base| match form {
            Form::Lanes(vec) => four_lanes(base, &vec[..inputs.len()]),
            _ => Some(base),
        })?;
        let meta = spec.meta(n as u32, &layouts, &params::encode(reprs[0].compute(), scalars));
        self.run(&spec, &pipeline, &buffers, &meta, threads)?;
        drop(buffers);
        Ok(y)
    }

    /// The kernel of `key`, its spec made from the map's base spec by `form` at first use.
    fn map_pipeline(&self, key: MapKey, form: impl FnOnce(Spec) -> Option<Spec>) -> Result<super::Kernel> {
        let caps = self.caps();
        self.keyed(super::KernelKey::Map(key), || {
            let base = key.map.spec(caps, key.index)?;
            let what = format!("no {:?} form of {}", key.form, key.map.name());
            form(base).ok_or(crate::Error::Backend { backend: crate::BackendKind::Wgpu, msg: what })
        })
    }
}

/// An elementwise map and the dtypes that decide its kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Map {
    Unary(UnaryOp, DType),
    Scalar(ScalarOp, DType),
    Binary(BinaryOp, DType),
    Cmp(CmpOp, DType),
    /// Condition dtype, value dtype (as its bits).
    Where(DType, DType),
    /// From, to.
    Cast(DType, DType),
}

impl Map {
    fn name(self) -> &'static str {
        match self {
            Map::Unary(op, _) => op.name(),
            Map::Scalar(op, _) => op.name(),
            Map::Binary(op, _) => op.name(),
            Map::Cmp(op, _) => op.name(),
            Map::Where(..) => ElementwiseOp::WhereCond.name(),
            Map::Cast(..) => ElementwiseOp::Cast.name(),
        }
    }

    /// The dtypes of its inputs, in order.
    fn input_dtypes(self) -> [DType; 3] {
        match self {
            Map::Unary(_, d) | Map::Scalar(_, d) | Map::Binary(_, d) | Map::Cmp(_, d) | Map::Cast(d, _) => [d; 3],
            Map::Where(c, d) => [c, d, d],
        }
    }

    /// The dtype its kernel writes (a select writes the values' bits).
    fn output(self, out: DType) -> DType {
        match self {
            Map::Where(_, d) => d,
            _ => out,
        }
    }

    /// Its kernel's spec for inputs indexed as `index`.
    fn spec(self, caps: Caps, index: [Index; 3]) -> Result<Spec> {
        match self {
            Map::Unary(op, d) => unary_spec(caps, op, d, index[0]),
            Map::Scalar(op, d) => scalar_map_spec(caps, op, d, index[0]),
            Map::Binary(op, d) => binary_spec(caps, op, d, index[0], index[1]),
            Map::Cmp(op, d) => cmp_spec(caps, op, d, index[0], index[1]),
            Map::Where(c, d) => where_spec(caps, c, d, index),
            Map::Cast(from, to) => cast_spec(caps, from, to, index[0]),
        }
    }
}

/// How a map's kernel walks its elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Form {
    /// One element (or output word) per invocation step.
    Plain,
    /// Four per invocation; the inputs that load whole vectors.
    Lanes([bool; 3]),
    /// Through 32x32 workgroup tiles; the inputs staged there.
    Tiled([bool; 3]),
}

/// What decides a map's kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct MapKey {
    map: Map,
    index: [Index; 3],
    form: Form,
}

/// `[rows, cols]` and which inputs are column-major matrices of that one shape, when any is
/// (and none is larger than a u32 walk); `None` otherwise.
fn column_majors(layouts: &[&Layout]) -> Option<([u32; 2], [bool; 3])> {
    let mut shapes = [None; 3];
    for (s, l) in shapes.iter_mut().zip(layouts) {
        *s = column_major(l);
    }
    let rc = shapes.iter().flatten().next().copied()?;
    if shapes.iter().flatten().any(|s| *s != rc) || layouts.iter().any(|l| l.elem_count() >= u32::MAX as usize) {
        return None;
    }
    Some((rc, shapes.map(|s| s.is_some())))
}

impl ElementwiseOps for WgpuBackend {
    /// One kernel per program; a program of one step is its op's own kernel (with the tiled and
    /// vector forms that op has).
    fn fused(&self, p: &Program, inputs: &[(&WgpuStorage, &Layout)], params: &[Scalar]) -> Result<WgpuStorage> {
        if p.steps.len() == 1 {
            return one_at_a_time(self, p, inputs, params);
        }
        self.run_fused(p, inputs, params)
    }

    fn unary(&self, x: &WgpuStorage, l: &Layout, op: UnaryOp) -> Result<WgpuStorage> {
        self.launch(Map::Unary(op, x.dtype), &[(x, l)], x.dtype, &[])
    }

    fn scalar_map(&self, x: &WgpuStorage, l: &Layout, op: ScalarOp, params: &[Scalar]) -> Result<WgpuStorage> {
        self.launch(Map::Scalar(op, x.dtype), &[(x, l)], x.dtype, params)
    }

    fn binary(
        &self,
        lhs: &WgpuStorage,
        ll: &Layout,
        rhs: &WgpuStorage,
        rl: &Layout,
        op: BinaryOp,
    ) -> Result<WgpuStorage> {
        self.launch(Map::Binary(op, lhs.dtype), &[(lhs, ll), (rhs, rl)], lhs.dtype, &[])
    }

    fn cmp(&self, lhs: &WgpuStorage, ll: &Layout, rhs: &WgpuStorage, rl: &Layout, op: CmpOp) -> Result<WgpuStorage> {
        self.launch(Map::Cmp(op, lhs.dtype), &[(lhs, ll), (rhs, rl)], DType::U8, &[])
    }

    fn where_cond(
        &self,
        cond: &WgpuStorage,
        cl: &Layout,
        on_true: &WgpuStorage,
        tl: &Layout,
        on_false: &WgpuStorage,
        fl: &Layout,
    ) -> Result<WgpuStorage> {
        // A select only moves bytes: f64 needs no SHADER_F64 (see `support.rs`).
        let map = Map::Where(cond.dtype, bits_of(on_true.dtype, self.caps()));
        self.launch(map, &[(cond, cl), (on_true, tl), (on_false, fl)], on_true.dtype, &[])
    }

    fn cast(&self, x: &WgpuStorage, l: &Layout, to: DType) -> Result<WgpuStorage> {
        self.launch(Map::Cast(x.dtype, to), &[(x, l)], to, &[])
    }
}

/// Every elementwise kernel for `caps`, as (kernel name, spec), for shader validation and the
/// op coverage test.
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    use crate::spec::elementwise::cast_kernel_name;
    use crate::spec::kernel_name;
    let s = Index::Strided(2);
    let mut v = vec![];
    for dt in caps.dtypes() {
        for &op in UnaryOp::ALL.iter().filter(|o| o.dtypes().contains(&dt)) {
            v.push((kernel_name(op.name(), dt), unary_spec(caps, op, dt, s)));
        }
        for &op in ScalarOp::ALL {
            if op.dtypes().contains(&dt) {
                v.push((kernel_name(op.name(), dt), scalar_map_spec(caps, op, dt, Index::Contiguous)));
            }
        }
        for &op in BinaryOp::ALL {
            let t = binary_spec(caps, op, dt, Index::Contiguous, Index::Strided(2));
            v.push((
                format!("{}_t", kernel_name(op.name(), dt)),
                t.map(|sp| tiled(sp.clone(), &[false, true]).unwrap_or(sp)),
            ));
            v.push((kernel_name(op.name(), dt), binary_spec(caps, op, dt, s, Index::Contiguous)));
            let lanes = binary_spec(caps, op, dt, Index::Contiguous, s)
                .map(|sp| four_lanes(sp.clone(), &[true, false]).unwrap_or(sp));
            v.push((format!("{}_v4", kernel_name(op.name(), dt)), lanes));
        }
        for &op in CmpOp::ALL {
            v.push((kernel_name(op.name(), dt), cmp_spec(caps, op, dt, Index::Contiguous, s)));
        }
        for cond in DType::INT {
            let name = format!("{}_{cond}", kernel_name(ElementwiseOp::WhereCond.name(), dt));
            v.push((name, where_spec(caps, *cond, dt, [s, Index::Contiguous, s])));
        }
        for to in caps.dtypes() {
            v.push((cast_kernel_name(dt, to), cast_spec(caps, dt, to, s)));
            let lanes =
                cast_spec(caps, dt, to, Index::Contiguous).map(|sp| four_lanes(sp.clone(), &[true]).unwrap_or(sp));
            v.push((format!("{}_v4", cast_kernel_name(dt, to)), lanes));
        }
        for &op in UnaryOp::ALL.iter().filter(|o| o.dtypes().contains(&dt)) {
            let lanes = unary_spec(caps, op, dt, s).map(|sp| four_lanes(sp.clone(), &[false]).unwrap_or(sp));
            v.push((format!("{}_v4", kernel_name(op.name(), dt)), lanes));
        }
        for cond in DType::INT {
            let name = format!("{}_{cond}_v4", kernel_name(ElementwiseOp::WhereCond.name(), dt));
            let sp = where_spec(caps, *cond, dt, [s, Index::Contiguous, Index::Contiguous]);
            v.push((name, sp.map(|sp| four_lanes(sp.clone(), &[false, true, true]).unwrap_or(sp))));
        }
    }
    v
}
