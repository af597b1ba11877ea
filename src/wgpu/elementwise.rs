//! Elementwise ops on wgpu: three generic map kernels (`shaders/elementwise.wgsl`) whose `op`
//! is generated here per op and compute type.

use super::kernel::{Index, Spec, lane_threads, simplify, vec_ok};
use super::repr::{Access, Caps, Compute, Repr, convert, params};
use super::support::bits_of;
use super::{WgpuBackend, WgpuStorage};
use crate::backend::ElementwiseOps;
use crate::spec::Family;
use crate::spec::elementwise::{BinaryOp, CmpOp, ElementwiseOp, UnaryOp};
use crate::{DType, Layout, Result, Scalar};

/// WGSL for `op(v)` in compute type `c`; `None` if the spec does not give `op` that type.
fn unary_expr(op: UnaryOp, c: Compute) -> Option<String> {
    use UnaryOp::*;
    let e = match c {
        Compute::F32 => match op {
            Neg => "-v",
            Recip => "1.0 / v",
            Exp => "exp(v)",
            Log => "log(v)",
            Sin => "sin(v)",
            Cos => "cos(v)",
            Tanh => "tanh32(v)",
            Abs => "abs(v)",
            Sqr => "v * v",
            Sqrt => "sqrt(v)",
            Gelu => "0.5 * v * (1.0 + tanh32(0.7978845608028654 * (v + 0.044715 * v * v * v)))",
            GeluErf => "0.5 * v * (1.0 + erf32(v * 0.7071067811865476))",
            Erf => "erf32(v)",
            // NaN guards on the bits: NVIDIA's compiler folds compare-and-select into min/max.
            Relu => "select(select(v, 0.0, v < 0.0), v, is_nan(v))",
            Silu => "v / (1.0 + exp(-v))",
            Sigmoid => "1.0 / (1.0 + exp(-v))",
            Ceil => "ceil(v)",
            Floor => "floor(v)",
            Round => "round(v)",
            Sign => "select(sign(v), v, is_nan(v) || v == 0.0)",
        },
        Compute::F64 => match op {
            Neg => "-v",
            Recip => "1.0lf / v",
            Exp => "f64_exp(v)",
            Log => "f64_log(v)",
            Sin => "f64_sin(v)",
            Cos => "f64_cos(v)",
            Tanh => "f64_tanh(v)",
            Abs => "abs(v)",
            Sqr => "v * v",
            Sqrt => "sqrt(v)",
            Gelu => "0.5lf * v * (1.0lf + f64_tanh(0.7978845608028654lf * (v + 0.044715lf * v * v * v)))",
            GeluErf => "0.5lf * v * (1.0lf + f64_erf(v * 0.7071067811865476lf))",
            Erf => "f64_erf(v)",
            Relu => "select(select(v, 0.0lf, v < 0.0lf), v, is_nan64(v))",
            Silu => "v / (1.0lf + f64_exp(-v))",
            Sigmoid => "1.0lf / (1.0lf + f64_exp(-v))",
            Ceil => "ceil(v)",
            Floor => "floor(v)",
            Round => "round(v)",
            Sign => "select(sign(v), v, is_nan64(v) || v == 0.0lf)",
        },
        Compute::U32 => match op {
            Abs | Relu => "v",
            Sqr => "v * v",
            Sign => "min(v, 1u)",
            _ => return None,
        },
        Compute::I64 => match op {
            Neg => "-v",
            Abs => "select(v, -v, v < 0li)",
            Sqr => "v * v",
            Relu => "select(v, 0li, v < 0li)",
            Sign => "select(select(0li, 1li, v > 0li), -1li, v < 0li)",
            _ => return None,
        },
        Compute::I64e => match op {
            Neg => "i64e_neg(v)",
            Abs => "i64e_abs(v)",
            Sqr => "i64e_mul(v, v)",
            Relu => "select(v, vec2<u32>(0u, 0u), i64e_is_neg(v))",
            Sign => "i64e_sign(v)",
            _ => return None,
        },
    };
    Some(e.to_string())
}

/// WGSL for `op(a, b)` in compute type `c`.
fn binary_expr(op: BinaryOp, c: Compute) -> &'static str {
    use BinaryOp::*;
    match (c, op) {
        (Compute::I64e, Add) => "i64e_add(a, b)",
        (Compute::I64e, Sub) => "i64e_sub(a, b)",
        (Compute::I64e, Mul) => "i64e_mul(a, b)",
        (Compute::I64e, Div) => "i64e_div(a, b)",
        (Compute::I64e, Maximum) => "i64e_max(a, b)",
        (Compute::I64e, Minimum) => "i64e_min(a, b)",
        (_, Add) => "a + b",
        (_, Sub) => "a - b",
        (_, Mul) => "a * b",
        (Compute::U32, Div) => "select(a / b, 0u, b == 0u)",
        (Compute::I64, Div) => "i64_div(a, b)",
        (_, Div) => "a / b",
        (Compute::F32, Maximum) => "max_nan(a, b)",
        (Compute::F32, Minimum) => "min_nan(a, b)",
        (Compute::F64, Maximum) => "max_nan64(a, b)",
        (Compute::F64, Minimum) => "min_nan64(a, b)",
        (_, Maximum) => "max(a, b)",
        (_, Minimum) => "min(a, b)",
    }
}

/// WGSL for the comparison `a op b` as a bool.
fn cmp_expr(op: CmpOp, c: Compute) -> &'static str {
    use CmpOp::*;
    match (c, op) {
        (Compute::I64e, Eq) => "i64e_eq(a, b)",
        (Compute::I64e, Ne) => "!i64e_eq(a, b)",
        (Compute::I64e, Lt) => "i64e_lt(a, b)",
        (Compute::I64e, Le) => "i64e_le(a, b)",
        (Compute::I64e, Gt) => "i64e_lt(b, a)",
        (Compute::I64e, Ge) => "i64e_le(b, a)",
        (_, Eq) => "a == b",
        // `!(a == b)`: drivers may lower `!=` as an ordered compare, false for NaN.
        (_, Ne) => "!(a == b)",
        (_, Lt) => "a < b",
        (_, Le) => "a <= b",
        (_, Gt) => "a > b",
        (_, Ge) => "a >= b",
    }
}

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
        spec = spec.code(params::decoder(inputs[0].1.compute()));
    }
    spec
}

fn wrong(op: &'static str, dtype: DType, allowed: &[DType]) -> crate::Error {
    crate::Error::WrongDType { op, dtype, expected: allowed.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ") }
}

pub(crate) fn unary_spec(caps: Caps, op: UnaryOp, dtype: DType, x: Index) -> Result<Spec> {
    let r = Repr::of(dtype, caps, op.name())?;
    let expr = unary_expr(op, r.compute()).ok_or_else(|| wrong(op.name(), dtype, op.dtypes()))?;
    let c = r.compute().wgsl();
    Ok(spec(caps, "map1", &[("x", r, x)], r, format!("fn op(v: {c}) -> {c} {{ return {expr}; }}"), false))
}

/// affine, powf, elu and clamp: maps with scalars `param(0)`, `param(1)`.
pub(crate) fn scalar_map_spec(caps: Caps, op: ElementwiseOp, dtype: DType, x: Index) -> Result<Spec> {
    let r = Repr::of(dtype, caps, op.name())?;
    let c = r.compute();
    let f64 = c == Compute::F64;
    let expr = match op {
        ElementwiseOp::Affine => "v * param(0u) + param(1u)",
        ElementwiseOp::Powf if f64 => "f64_pow(v, param(0u))",
        ElementwiseOp::Powf => "pow32(v, param(0u))",
        ElementwiseOp::Elu if f64 => "select(param(0u) * f64_expm1(v), v, v >= 0.0lf)",
        ElementwiseOp::Elu => "select(param(0u) * (exp(v) - 1.0), v, v >= 0.0)",
        ElementwiseOp::Clamp if c == Compute::I64e => {
            "select(select(v, param(0u), i64e_lt(v, param(0u))), param(1u), i64e_lt(param(1u), v))"
        }
        ElementwiseOp::Clamp if c == Compute::F32 => {
            "select(select(select(v, param(0u), v < param(0u)), param(1u), v > param(1u)), v, is_nan(v))"
        }
        ElementwiseOp::Clamp if f64 => {
            "select(select(select(v, param(0u), v < param(0u)), param(1u), v > param(1u)), v, is_nan64(v))"
        }
        ElementwiseOp::Clamp => "select(select(v, param(0u), v < param(0u)), param(1u), v > param(1u))",
        ElementwiseOp::WhereCond | ElementwiseOp::Cast => return Err(wrong(op.name(), dtype, &[])),
    };
    if !op.dtypes().contains(&dtype) {
        return Err(wrong(op.name(), dtype, op.dtypes()));
    }
    let c = c.wgsl();
    Ok(spec(caps, "map1", &[("x", r, x)], r, format!("fn op(v: {c}) -> {c} {{ return {expr}; }}"), true))
}

pub(crate) fn binary_spec(caps: Caps, op: BinaryOp, dtype: DType, a: Index, b: Index) -> Result<Spec> {
    let r = Repr::of(dtype, caps, op.name())?;
    let c = r.compute().wgsl();
    let code = format!("fn op(a: {c}, b: {c}) -> {c} {{ return {}; }}", binary_expr(op, r.compute()));
    Ok(spec(caps, "map2", &[("a", r, a), ("b", r, b)], r, code, false))
}

pub(crate) fn cmp_spec(caps: Caps, op: CmpOp, dtype: DType, a: Index, b: Index) -> Result<Spec> {
    let r = Repr::of(dtype, caps, op.name())?;
    let c = r.compute().wgsl();
    let code = format!("fn op(a: {c}, b: {c}) -> u32 {{ return select(0u, 1u, {}); }}", cmp_expr(op, r.compute()));
    Ok(spec(caps, "map2", &[("a", r, a), ("b", r, b)], Repr::U8, code, false))
}

pub(crate) fn where_spec(caps: Caps, cond: DType, dtype: DType, idx: [Index; 3]) -> Result<Spec> {
    let op = ElementwiseOp::WhereCond.name();
    let (cr, vr) = (Repr::of(cond, caps, op)?, Repr::of(dtype, caps, op)?);
    let test = match cr.compute() {
        Compute::I64e => "c.x != 0u || c.y != 0u",
        Compute::I64 => "c != 0li",
        _ => "c != 0u",
    };
    let v = vr.compute().wgsl();
    let code = format!("fn op(c: {}, a: {v}, b: {v}) -> {v} {{ return select(b, a, {test}); }}", cr.compute().wgsl());
    Ok(spec(caps, "map3", &[("c", cr, idx[0]), ("a", vr, idx[1]), ("b", vr, idx[2])], vr, code, false))
}

pub(crate) fn cast_spec(caps: Caps, from: DType, to: DType, x: Index) -> Result<Spec> {
    let op = ElementwiseOp::Cast.name();
    let (fr, tr) = (Repr::of(from, caps, op)?, Repr::of(to, caps, op)?);
    let expr = convert(from, to, fr, tr, "v");
    let code = format!("fn op(v: {}) -> {} {{ return {expr}; }}", fr.compute().wgsl(), tr.compute().wgsl());
    Ok(spec(caps, "map1", &[("x", fr, x)], tr, code, false))
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

    fn scalar_map(&self, op: ElementwiseOp, x: &WgpuStorage, l: &Layout, scalars: &[Scalar]) -> Result<WgpuStorage> {
        let spec = scalar_map_spec(self.caps(), op, x.dtype, Index::of(l))?;
        self.launch(spec, &[(x, l)], x.dtype, scalars)
    }
}

impl ElementwiseOps for WgpuBackend {
    fn unary(&self, x: &WgpuStorage, l: &Layout, op: UnaryOp) -> Result<WgpuStorage> {
        self.launch(unary_spec(self.caps(), op, x.dtype, Index::of(l))?, &[(x, l)], x.dtype, &[])
    }

    fn affine(&self, x: &WgpuStorage, l: &Layout, mul: f64, add: f64) -> Result<WgpuStorage> {
        self.scalar_map(ElementwiseOp::Affine, x, l, &[Scalar::F64(mul), Scalar::F64(add)])
    }

    fn powf(&self, x: &WgpuStorage, l: &Layout, e: f64) -> Result<WgpuStorage> {
        self.scalar_map(ElementwiseOp::Powf, x, l, &[Scalar::F64(e)])
    }

    fn elu(&self, x: &WgpuStorage, l: &Layout, alpha: f64) -> Result<WgpuStorage> {
        self.scalar_map(ElementwiseOp::Elu, x, l, &[Scalar::F64(alpha)])
    }

    fn clamp(&self, x: &WgpuStorage, l: &Layout, min: Scalar, max: Scalar) -> Result<WgpuStorage> {
        self.scalar_map(ElementwiseOp::Clamp, x, l, &[min, max])
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
        for op in [ElementwiseOp::Affine, ElementwiseOp::Powf, ElementwiseOp::Elu, ElementwiseOp::Clamp] {
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
