//! The expression table (`src/expr/`) in WGSL: each primitive as the function of
//! `shaders/common.wgsl`, `elementwise.wgsl`, `f64.wgsl` or `i64.wgsl` that meets its numerics
//! on drivers that flush subnormals and whose builtins need not propagate NaN.

use super::repr::{Caps, Compute, Repr, convert};
use crate::DType;
use crate::expr::{Dialect, Expr, Prim, Ty, float_digits, render_lines};

/// WGSL with operands named `names`, parameters read by `param(k)`, i64 native or emulated as
/// the adapter has it.
pub(crate) struct Wgsl<'a> {
    pub caps: Caps,
    pub names: &'a [&'a str],
}

impl Wgsl<'_> {
    /// The compute type `ty` is in on this adapter (`Bool` has none: it is never stored).
    pub fn compute(&self, ty: Ty) -> Compute {
        match ty {
            Ty::F32 | Ty::Bool => Compute::F32,
            Ty::F64 => Compute::F64,
            Ty::U32 => Compute::U32,
            Ty::I64 if self.caps.i64 => Compute::I64,
            Ty::I64 => Compute::I64e,
        }
    }

    /// `fn op(..) -> T { return <e>; }` over the operands of types `args`.
    pub fn function(&self, e: &Expr, args: &[Ty]) -> String {
        let params: Vec<String> =
            self.names.iter().zip(args).map(|(n, &t)| format!("{n}: {}", self.compute(t).wgsl())).collect();
        let (lines, value) = render_lines(e, self, "e");
        let (ret, value) = match e.ty() {
            Ty::Bool => ("u32".to_string(), format!("select(0u, 1u, {value})")),
            t => (self.compute(t).wgsl().to_string(), value),
        };
        let body: String = lines.iter().map(|l| format!("{l} ")).collect();
        format!("fn op({}) -> {ret} {{ {body}return {value}; }}", params.join(", "))
    }
}

impl Dialect for Wgsl<'_> {
    fn lit(&self, v: f64, ty: Ty) -> String {
        match self.compute(ty) {
            _ if ty == Ty::Bool => (v != 0.0).to_string(),
            Compute::F32 => float_digits(v),
            Compute::F64 => format!("{}lf", float_digits(v)),
            Compute::U32 => format!("{}u", v as u32),
            Compute::I64 => format!("{}li", v as i64),
            Compute::I64e => {
                let bits = v as i64 as u64;
                format!("vec2<u32>({}u, {}u)", bits as u32, (bits >> 32) as u32)
            }
        }
    }

    fn arg(&self, i: u8, _: Ty) -> String {
        self.names[i as usize].to_string()
    }

    fn param(&self, i: u8, ty: Ty) -> String {
        format!("param_{}({i}u)", self.compute(ty).short())
    }

    fn prim(&self, p: Prim, a: &[String], tys: &[Ty]) -> String {
        use Compute::*;
        let c = self.compute(tys[0]);
        let call = |f: &str| format!("{f}({})", a.join(", "));
        let infix = |op: &str| format!("({} {op} {})", a[0], a[1]);
        match (p, c) {
            (Prim::Not, _) => format!("!({})", a[0]),
            (Prim::Or, _) => infix("||"),
            // WGSL's select takes (false, true, condition).
            (Prim::Select, _) => format!("select({}, {}, {})", a[2], a[1], a[0]),
            (Prim::IsNan, F32) => call("is_nan"),
            (Prim::IsNan, F64) => call("is_nan64"),
            (Prim::IsNan, _) => "false".into(),
            (_, I64e) => {
                let f = match p {
                    Prim::Neg => "i64e_neg",
                    Prim::Abs => "i64e_abs",
                    Prim::Add => "i64e_add",
                    Prim::Sub => "i64e_sub",
                    Prim::Mul => "i64e_mul",
                    Prim::Div => "i64e_div",
                    Prim::Max => "i64e_max",
                    Prim::Min => "i64e_min",
                    Prim::Lt => "i64e_lt",
                    Prim::Le => "i64e_le",
                    Prim::Eq => "i64e_eq",
                    Prim::Sign => "i64e_sign",
                    _ => return format!("/* no {p:?} for i64 */"),
                };
                call(f)
            }
            (Prim::Add, _) => infix("+"),
            (Prim::Sub, _) => infix("-"),
            (Prim::Mul, _) => infix("*"),
            (Prim::Div, U32) => format!("select({0} / {1}, 0u, {1} == 0u)", a[0], a[1]),
            (Prim::Div, I64) => call("i64_div"),
            (Prim::Div, _) => infix("/"),
            // On the bits: exact where drivers flush subnormals.
            (Prim::Lt, F32) => call("lt32"),
            (Prim::Le, F32) => call("le32"),
            (Prim::Eq, F32) => call("eq32"),
            (Prim::Lt, _) => infix("<"),
            (Prim::Le, _) => infix("<="),
            (Prim::Eq, _) => infix("=="),
            (Prim::Max, F32) => call("max32"),
            (Prim::Min, F32) => call("min32"),
            (Prim::Max, F64) => call("max_nan64"),
            (Prim::Min, F64) => call("min_nan64"),
            (Prim::Max, _) => call("max"),
            (Prim::Min, _) => call("min"),
            (Prim::Neg, F32) => call("neg32"),
            (Prim::Neg, _) => format!("(-{})", a[0]),
            (Prim::Abs, F32) => call("abs32"),
            (Prim::Abs, I64) => format!("select({0}, -{0}, {0} < 0li)", a[0]),
            (Prim::Abs, _) => call("abs"),
            (Prim::Sign, F32) => call("sign32"),
            (Prim::Sign, F64) => format!("select(sign({0}), {0}, is_nan64({0}) || {0} == 0.0lf)", a[0]),
            (Prim::Sign, U32) => format!("min({}, 1u)", a[0]),
            (Prim::Sign, _) => format!("select(select(0li, 1li, {0} > 0li), -1li, {0} < 0li)", a[0]),
            (Prim::Expm1, F32) => format!("(exp({}) - 1.0)", a[0]),
            (_, F32 | F64) => match float_fn(p, c == F64) {
                Some(f) => call(f),
                None => format!("/* no {p:?} for {c:?} */"),
            },
            _ => format!("/* no {p:?} for {c:?} */"),
        }
    }

    fn cast(&self, x: &str, from: DType, to: DType) -> String {
        match (Repr::of(from, self.caps, "cast"), Repr::of(to, self.caps, "cast")) {
            (Ok(fr), Ok(tr)) => convert(from, to, fr, tr, x),
            // The spec's support statement keeps unsupported dtypes away from kernels.
            _ => format!("/* no {from} to {to} on this adapter */"),
        }
    }

    fn stored(&self, x: String, dtype: DType) -> String {
        match Repr::of(dtype, self.caps, "fused") {
            // Rounded to f16 in integer code: a driver may fold `f32(f16(x))` into x (NVIDIA's
            // does), where a store and a load round. The same bits as the hardware's round to
            // nearest even, overflow to infinity.
            Ok(Repr::F16) => format!("f16_to_f32(f32_to_f16({x}))"),
            // The very conversions a store and a load of the dtype make.
            Ok(r @ (Repr::F16Packed | Repr::BF16 | Repr::U8)) => r.unpack(&r.pack(&x)),
            // Opaque selects: drivers may contract a product and a sum of two steps into one
            // fused multiply-add (naga marks nothing NoContraction), which two kernels cannot.
            Ok(Repr::F32) => format!("fence32({x})"),
            Ok(Repr::F64) => format!("fence64({x})"),
            _ => x,
        }
    }

    fn bind(&self, name: &str, value: &str, _: Ty) -> String {
        format!("let {name} = {value};")
    }
}

/// The WGSL function of a float primitive in f32 (`f64`: in f64).
fn float_fn(p: Prim, f64: bool) -> Option<&'static str> {
    let (f32_name, f64_name) = match p {
        Prim::Exp => ("exp", "f64_exp"),
        Prim::Expm1 => ("", "f64_expm1"),
        Prim::Log => ("log32", "f64_log"),
        Prim::Sin => ("sin32", "f64_sin"),
        Prim::Cos => ("cos32", "f64_cos"),
        Prim::Tanh => ("tanh32", "f64_tanh"),
        Prim::Erf => ("erf32", "f64_erf"),
        Prim::Sqrt => ("sqrt32", "sqrt"),
        Prim::Ceil => ("ceil32", "ceil"),
        Prim::Floor => ("floor32", "floor"),
        Prim::Round => ("round32", "round"),
        Prim::Pow => ("pow32", "f64_pow"),
        _ => return None,
    };
    Some(if f64 { f64_name } else { f32_name }).filter(|f| !f.is_empty())
}
