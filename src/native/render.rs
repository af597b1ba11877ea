//! The expression table (`src/expr/`) in HIP C, the dialect hiprtc and NVRTC share: each
//! primitive as an `rwo_*` overload of `hip/common.h`, and the elementwise family's functors
//! and instantiation lines (`hip/elementwise_ops.h`, included by `hip/elementwise.hip`).

use crate::DType;
use crate::expr::{Dialect, Expr, Prim, Ty, float_digits, render_lines, table};
use crate::spec::elementwise::{BinaryOp, CmpOp, ScalarOp, UnaryOp};
use std::fmt::Write;

/// HIP C with operands named `a0, a1, ..` and parameters `p0, p1, ..`.
pub(crate) struct Hip;

/// The C type of a compute type.
pub(crate) fn c_type(ty: Ty) -> &'static str {
    match ty {
        Ty::F32 => "float",
        Ty::F64 => "double",
        Ty::U32 => "u32",
        Ty::I64 => "i64",
        Ty::Bool => "bool",
    }
}

impl Dialect for Hip {
    fn lit(&self, v: f64, ty: Ty) -> String {
        match ty {
            Ty::F32 => format!("{}f", float_digits(v)),
            Ty::F64 => float_digits(v),
            Ty::U32 => format!("{}u", v as u32),
            Ty::I64 => format!("(i64){}ll", v as i64),
            Ty::Bool => (v != 0.0).to_string(),
        }
    }

    fn arg(&self, i: u8, _: Ty) -> String {
        format!("a{i}")
    }

    fn param(&self, i: u8, _: Ty) -> String {
        format!("p{i}")
    }

    fn prim(&self, p: Prim, a: &[String], _: &[Ty]) -> String {
        let f = match p {
            Prim::Select => return format!("({} ? {} : {})", a[0], a[1], a[2]),
            Prim::Not => return format!("!({})", a[0]),
            Prim::Or => return format!("({} || {})", a[0], a[1]),
            Prim::IsNan => "is_nan",
            Prim::Neg => "rwo_neg",
            Prim::Abs => "rwo_abs",
            Prim::Add => "rwo_add",
            Prim::Sub => "rwo_sub",
            Prim::Mul => "rwo_mul",
            Prim::Div => "rwo_div",
            Prim::Max => "rwo_max",
            Prim::Min => "rwo_min",
            Prim::Lt => "rwo_lt",
            Prim::Le => "rwo_le",
            Prim::Eq => "rwo_eq",
            Prim::Sign => "rwo_sign",
            Prim::Exp => "rwo_exp",
            Prim::Expm1 => "rwo_expm1",
            Prim::Log => "rwo_log",
            Prim::Sin => "rwo_sin",
            Prim::Cos => "rwo_cos",
            Prim::Tanh => "rwo_tanh",
            Prim::Erf => "rwo_erf",
            Prim::Sqrt => "rwo_sqrt",
            Prim::Ceil => "rwo_ceil",
            Prim::Floor => "rwo_floor",
            Prim::Round => "rwo_round",
            Prim::Pow => "rwo_pow",
        };
        format!("{f}({})", a.join(", "))
    }

    fn cast(&self, x: &str, _: DType, to: DType) -> String {
        format!("num<{to}>::load(conv<{to}>::from(wide({x})))")
    }

    /// Rounded as a store and a load round it; the kernels are compiled without contraction
    /// (`-ffp-contract=off`, `--fmad=false`), so no step fuses with the next.
    fn stored(&self, x: String, dtype: DType) -> String {
        match dtype {
            DType::F16 | DType::BF16 | DType::U8 => format!("num<{dtype}>::load(num<{dtype}>::store({x}))"),
            _ => x,
        }
    }

    fn bind(&self, name: &str, value: &str, ty: Ty) -> String {
        format!("{} {name} = {value};", c_type(ty))
    }
}

/// A functor `struct {name}` with one `operator()` per compute type in `tys`, each returning the
/// expression `expr(ty)` of operands `a0..a{arity}`.
fn functor(s: &mut String, name: &str, arity: usize, tys: &[Ty], expr: impl Fn(Ty) -> Expr) {
    let _ = writeln!(s, "struct {name} {{");
    for &t in tys {
        let e = expr(t);
        let args: Vec<String> = (0..arity).map(|i| format!("{} a{i}", c_type(t))).collect();
        let ret = c_type(e.ty());
        let _ = writeln!(s, "  __device__ {ret} operator()({}) const {{ {} }}", args.join(", "), body(&e));
    }
    s.push_str("};\n");
}

/// The statements of a functor's body returning `e` (its repeated subexpressions bound once).
fn body(e: &Expr) -> String {
    let (lines, value) = render_lines(e, &Hip, "e");
    let lines: String = lines.iter().map(|l| format!("{l} ")).collect();
    format!("{lines}return {value};")
}

/// The distinct compute types of `dtypes`, in a fixed order.
fn compute_types(dtypes: &[DType]) -> Vec<Ty> {
    let mut tys: Vec<Ty> = vec![];
    for &d in dtypes {
        if !tys.contains(&Ty::of(d)) {
            tys.push(Ty::of(d));
        }
    }
    tys
}

/// `MACRO(name, dtype, ..)`: the kernels of `name` for each dtype.
fn line(s: &mut String, mac: &str, name: &str, dtypes: &[DType]) {
    let names: Vec<&str> = dtypes.iter().map(|d| d.name()).collect();
    let _ = writeln!(s, "{mac}({name}, {})", names.join(", "));
}

/// The generated part of the elementwise family: a functor per op rendered from the expression
/// table, and the instantiation lines that make its `{op}_{dtype}` kernels, for every op and
/// dtype of the spec.
pub fn elementwise_ops() -> String {
    let head = "// Generated from src/expr/table.rs by src/native/render.rs: do not edit. The suite checks it\n\
                // is current; `RWO_BLESS=1 cargo test --test suite -- native` rewrites it.\n\n";
    elementwise_units().into_iter().fold(head.to_string(), |s, (_, text)| s + &text)
}

/// The elementwise family's generated part in units a runtime compiler can build alone, each
/// with its name: an op's functor and instantiation line (named as the op), or one `CAST` or
/// `WHERE` line (named `cast_{from}`, `where_cond_{dtype}`). Every kernel is in the unit
/// [`elementwise_unit_of`] names.
pub fn elementwise_units() -> Vec<(String, String)> {
    let mut units = vec![];
    let mut unit = |name: &str, text: String| units.push((name.to_string(), text));
    for &op in UnaryOp::ALL {
        let mut s = String::new();
        functor(&mut s, &format!("{op}_op"), 1, &compute_types(op.dtypes()), |t| table::unary(op, t));
        line(&mut s, "UNARY", op.name(), op.dtypes());
        unit(op.name(), s);
    }
    for &op in ScalarOp::ALL {
        // A specialisation per compute type, holding the parameters in it.
        let mut s = format!("template <class C>\nstruct {op}_f;\n");
        for t in compute_types(op.dtypes()) {
            let c = c_type(t);
            let params: String = (0..op.arity()).map(|i| format!(" {c} p{i};")).collect();
            let e = body(&table::scalar(op, t));
            let _ = writeln!(
                s,
                "template <>\nstruct {op}_f<{c}> {{\n {params}\n  __device__ {c} operator()({c} a0) const {{ {e} }}\n}};"
            );
        }
        line(&mut s, &format!("SCALAR{}", op.arity()), op.name(), op.dtypes());
        unit(op.name(), s);
    }
    for &op in BinaryOp::ALL {
        let mut s = String::new();
        functor(&mut s, &format!("{op}_op"), 2, &compute_types(op.dtypes()), |t| table::binary(op, t));
        line(&mut s, "BINARY", op.name(), op.dtypes());
        unit(op.name(), s);
    }
    for &op in CmpOp::ALL {
        let mut s = String::new();
        functor(&mut s, &format!("{op}_op"), 2, &compute_types(op.dtypes()), |t| table::cmp(op, t));
        line(&mut s, "CMP", op.name(), op.dtypes());
        unit(op.name(), s);
    }
    for &dt in DType::ALL {
        let mut s = String::new();
        line(&mut s, "WHERE", dt.name(), DType::INT);
        unit(&format!("where_cond_{dt}"), s);
    }
    for &dt in DType::ALL {
        let mut s = String::new();
        line(&mut s, "CAST", dt.name(), DType::ALL);
        unit(&format!("cast_{dt}"), s);
    }
    units
}

/// The name of the unit (of `elementwise_units`, as [`super::unit_sources`] holds them) whose
/// kernels include `kernel` (`{unit}_{dtype}` with a variant's suffix, if any), if
/// one does.
pub(super) fn elementwise_unit_of<'a>(kernel: &str, units: &'a [(String, String)]) -> Option<&'a str> {
    units.iter().map(|(name, _)| name.as_str()).find(|unit| {
        let rest = kernel.strip_prefix(unit).and_then(|r| r.strip_prefix('_')).unwrap_or_default();
        DType::ALL.iter().any(|d| rest.strip_prefix(d.name()).is_some_and(|r| r.is_empty() || r.starts_with('_')))
    })
}
