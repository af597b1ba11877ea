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

/// The spec of an elementwise kernel: inputs (named `x`, or `a`/`b`, or `c`/`a`/`b`) with
/// their reprs and index maps, output `y`, and the generated `op` (with `param` if it takes
/// scalars).
fn spec(
    caps: Caps,
    entry: &'static str,
    inputs: &[(&'static str, Repr, Index)],
    out: Repr,
    code: String,
    scalars: bool,
) -> Spec {
    let mut spec = Spec::new(Family::Elementwise, entry, caps);
    for &(name, r, i) in inputs {
        spec = spec.bind(name, r, Access::Read, i);
    }
    spec = spec.bind("y", out, Access::Write, Index::None).code(code);
    if scalars {
        spec = spec.code(params::typed_decoder(inputs[0].1.compute()));
    }
    spec
}

/// The table's expression `e` over operands of compute types `args`, rendered for `caps`.
fn op_code(caps: Caps, e: &Expr, names: &[&str], args: &[Ty]) -> String {
    Wgsl { caps, names }.function(e, args)
}

pub(crate) fn unary_spec(caps: Caps, op: UnaryOp, dtype: DType, x: Index) -> Result<Spec> {
    let r = Repr::of(dtype, caps, op.name())?;
    let t = Ty::of(dtype);
    Ok(spec(caps, "map1", &[("x", r, x)], r, op_code(caps, &table::unary(op, t), &["v"], &[t]), false))
}

/// affine, powf, elu and clamp: maps with scalars `param(0)`, `param(1)`.
pub(crate) fn scalar_map_spec(caps: Caps, op: ScalarOp, dtype: DType, x: Index) -> Result<Spec> {
    let r = Repr::of(dtype, caps, op.name())?;
    let t = Ty::of(dtype);
    Ok(spec(caps, "map1", &[("x", r, x)], r, op_code(caps, &table::scalar(op, t), &["v"], &[t]), true))
}

pub(crate) fn binary_spec(caps: Caps, op: BinaryOp, dtype: DType, a: Index, b: Index) -> Result<Spec> {
    let r = Repr::of(dtype, caps, op.name())?;
    let t = Ty::of(dtype);
    let code = op_code(caps, &table::binary(op, t), &["a", "b"], &[t, t]);
    Ok(spec(caps, "map2", &[("a", r, a), ("b", r, b)], r, code, false))
}

pub(crate) fn cmp_spec(caps: Caps, op: CmpOp, dtype: DType, a: Index, b: Index) -> Result<Spec> {
    let r = Repr::of(dtype, caps, op.name())?;
    let t = Ty::of(dtype);
    let code = op_code(caps, &table::cmp(op, t), &["a", "b"], &[t, t]);
    Ok(spec(caps, "map2", &[("a", r, a), ("b", r, b)], Repr::U8, code, false))
}

pub(crate) fn where_spec(caps: Caps, cond: DType, dtype: DType, idx: [Index; 3]) -> Result<Spec> {
    let op = ElementwiseOp::WhereCond.name();
    let (cr, vr) = (Repr::of(cond, caps, op)?, Repr::of(dtype, caps, op)?);
    let (ct, t) = (Ty::of(cond), Ty::of(dtype));
    let code = op_code(caps, &table::where_cond(ct, t), &["c", "a", "b"], &[ct, t, t]);
    Ok(spec(caps, "map3", &[("c", cr, idx[0]), ("a", vr, idx[1]), ("b", vr, idx[2])], vr, code, false))
}

pub(crate) fn cast_spec(caps: Caps, from: DType, to: DType, x: Index) -> Result<Spec> {
    let op = ElementwiseOp::Cast.name();
    let (fr, tr) = (Repr::of(from, caps, op)?, Repr::of(to, caps, op)?);
    Ok(spec(caps, "map1", &[("x", fr, x)], tr, op_code(caps, &table::cast(from, to), &["v"], &[Ty::of(from)]), false))
}

/// The four-lane form of a map spec where its output allows vector stores: each input loads
/// whole vectors where its layout allows (`vec[k]`), else gathers lane by lane.
fn four_lanes(spec: Spec, vec: &[bool]) -> Option<Spec> {
    let out = spec.bindings.last()?.repr;
    if !out.vectorizes() || spec.bindings.iter().any(|b| b.repr.compute() == Compute::I64e) {
        return None;
    }
    let entry = match spec.entry {
        "map1" => "map1_v4",
        "map2" => "map2_v4",
        "map3" => "map3_v4",
        _ => return None,
    };
    let vec: Vec<bool> = vec.iter().copied().chain([true]).collect();
    Some(spec.lanes(entry, &vec))
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
    let entry = match spec.entry {
        "map1" => "map1_t",
        "map2" => "map2_t",
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
    /// Runs a map whose inputs include column-major matrices through the tiled kernel, if the
    /// spec has a tiled form; `None` when it does not apply.
    pub(crate) fn launch_tiled(
        &self,
        spec: &Spec,
        inputs: &[(&WgpuStorage, &Layout)],
        y: &WgpuStorage,
        extra: &[u32],
    ) -> Option<Result<()>> {
        let shapes: Vec<Option<[u32; 2]>> = inputs.iter().map(|(_, l)| column_major(l)).collect();
        let rc = shapes.iter().flatten().next().copied()?;
        if shapes.iter().flatten().any(|s| *s != rc) || inputs.iter().any(|(_, l)| l.elem_count() >= u32::MAX as usize)
        {
            return None;
        }
        let flags: Vec<bool> = shapes.iter().map(Option::is_some).collect();
        let spec = tiled(spec.clone(), &flags)?;
        let layouts: Vec<&Layout> = inputs.iter().map(|i| i.1).collect();
        let mut extra = extra.to_vec();
        extra.splice(0..0, rc);
        let n = inputs[0].1.elem_count() as u32;
        let meta = spec.meta(n, &layouts, &extra);
        let mut buffers: Vec<&wgpu::Buffer> = inputs.iter().map(|i| i.0.buffer()).collect();
        buffers.push(y.buffer());
        let tiles = (rc[0].div_ceil(32) as u64) * (rc[1].div_ceil(32) as u64);
        Some(self.run(&spec, &buffers, &meta, tiles * 256))
    }

    /// Runs an elementwise spec over inputs of one shape into a new `out` tensor.
    fn launch(
        &self,
        spec: Spec,
        inputs: &[(&WgpuStorage, &Layout)],
        out: DType,
        scalars: &[Scalar],
    ) -> Result<WgpuStorage> {
        let n = inputs[0].1.elem_count();
        let y = self.storage(out, n)?;
        let compute = spec.bindings[0].repr.compute();
        if scalars.is_empty()
            && let Some(done) = self.launch_tiled(&spec, inputs, &y, &[])
        {
            done?;
            return Ok(y);
        }
        let layouts: Vec<&Layout> = inputs.iter().map(|i| i.1).collect();
        let vec: Vec<bool> = layouts.iter().zip(&spec.bindings).map(|(l, b)| vec_ok(b.repr, l)).collect();
        let per_word = spec.bindings.last().map_or(1, |b| b.repr.per_word()) as u64;
        let (spec, threads) = match four_lanes(spec.clone(), &vec) {
            Some(lanes) => (lanes, lane_threads(n)),
            None => (spec, (n as u64).div_ceil(per_word)),
        };
        let meta = spec.meta(n as u32, &layouts, &params::encode(compute, scalars));
        let mut buffers: Vec<&wgpu::Buffer> = inputs.iter().map(|i| i.0.buffer()).collect();
        buffers.push(y.buffer());
        self.run(&spec, &buffers, &meta, threads)?;
        Ok(y)
    }
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
        self.launch(unary_spec(self.caps(), op, x.dtype, Index::of(l))?, &[(x, l)], x.dtype, &[])
    }

    fn scalar_map(&self, x: &WgpuStorage, l: &Layout, op: ScalarOp, params: &[Scalar]) -> Result<WgpuStorage> {
        let spec = scalar_map_spec(self.caps(), op, x.dtype, Index::of(l))?;
        self.launch(spec, &[(x, l)], x.dtype, params)
    }

    fn binary(
        &self,
        lhs: &WgpuStorage,
        ll: &Layout,
        rhs: &WgpuStorage,
        rl: &Layout,
        op: BinaryOp,
    ) -> Result<WgpuStorage> {
        let spec = binary_spec(self.caps(), op, lhs.dtype, Index::of(ll), Index::of(rl))?;
        self.launch(spec, &[(lhs, ll), (rhs, rl)], lhs.dtype, &[])
    }

    fn cmp(&self, lhs: &WgpuStorage, ll: &Layout, rhs: &WgpuStorage, rl: &Layout, op: CmpOp) -> Result<WgpuStorage> {
        let spec = cmp_spec(self.caps(), op, lhs.dtype, Index::of(ll), Index::of(rl))?;
        self.launch(spec, &[(lhs, ll), (rhs, rl)], DType::U8, &[])
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
        let idx = [Index::of(cl), Index::of(tl), Index::of(fl)];
        // A select only moves bytes: f64 needs no SHADER_F64 (see `support.rs`).
        let spec = where_spec(self.caps(), cond.dtype, bits_of(on_true.dtype, self.caps()), idx)?;
        self.launch(spec, &[(cond, cl), (on_true, tl), (on_false, fl)], on_true.dtype, &[])
    }

    fn cast(&self, x: &WgpuStorage, l: &Layout, to: DType) -> Result<WgpuStorage> {
        self.launch(cast_spec(self.caps(), x.dtype, to, Index::of(l))?, &[(x, l)], to, &[])
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
