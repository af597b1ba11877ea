//! The elementwise maps as expressions, declared once ([`table`]) and rendered by each GPU
//! backend in its own dialect (WGSL in `src/wgpu/render.rs`, HIP C in `src/native/render.rs`),
//! as tinygrad's `code_for_op` does with a renderer per language. The cpu reference stays
//! written apart: it is the oracle the rendered kernels are checked against.
//!
//! An [`Expr`] is a tree of primitives ([`Prim`]) over a kernel's operands, its scalar
//! parameters and literals. Each primitive states its numerics (NaN, wrapping, division by zero,
//! exactness at subnormals) once here; a renderer maps it to what meets them in its dialect
//! (WGSL's `lt32` on the bits of an f32, HIP's `a < b`). Values have compute types ([`Ty`]):
//! f16 and bf16 compute in f32, u8 in u32.

pub mod program;
pub mod table;

use crate::DType;
use std::collections::HashMap;

/// The type a kernel computes an element in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// f32, and f16 and bf16 (rounded to their dtype when stored).
    F32,
    /// f64.
    F64,
    /// u32, and u8 (wrapped when stored).
    U32,
    /// i64, wrapping.
    I64,
    /// A comparison's answer.
    Bool,
}

impl Ty {
    /// The compute type of `dtype`.
    pub fn of(dtype: DType) -> Ty {
        match dtype {
            DType::F16 | DType::BF16 | DType::F32 => Ty::F32,
            DType::F64 => Ty::F64,
            DType::U8 | DType::U32 => Ty::U32,
            DType::I64 => Ty::I64,
        }
    }

    /// f32 or f64.
    pub fn is_float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }

    /// The smallest positive normal value of a float type (of f64 for the others).
    pub fn min_positive(self) -> f64 {
        if self == Ty::F32 { f32::MIN_POSITIVE.into() } else { f64::MIN_POSITIVE }
    }

    /// The largest finite value of a float type (of f64 for the others).
    pub fn max_finite(self) -> f64 {
        if self == Ty::F32 { f32::MAX.into() } else { f64::MAX }
    }
}

/// A primitive operation and its numerics, which every renderer meets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prim {
    /// `-a`: exact on floats (a sign flip, also of NaN and subnormals), wrapping on i64.
    Neg,
    /// `|a|`: exact on floats (clears the sign bit), wrapping on `i64::MIN`, identity on u32.
    Abs,
    /// `a + b`, `a - b`, `a * b`: IEEE, rounded once; integers wrap.
    Add,
    /// See [`Prim::Add`].
    Sub,
    /// See [`Prim::Add`].
    Mul,
    /// `a / b`: IEEE on floats; integers truncate toward zero, `x / 0 = 0`, `i64::MIN / -1`
    /// wraps.
    Div,
    /// The larger; NaN in either gives NaN (the first one's when both are).
    Max,
    /// The smaller; NaN as for [`Prim::Max`].
    Min,
    /// `a < b`: IEEE (false with NaN), exact at subnormals.
    Lt,
    /// `a <= b`, as [`Prim::Lt`].
    Le,
    /// `a == b`: IEEE (false with NaN, `-0 == 0`), exact at subnormals.
    Eq,
    /// `!a` of a comparison.
    Not,
    /// `a || b` of comparisons.
    Or,
    /// `a ? b : c` (the condition first); both arms are of one type.
    Select,
    /// Whether a float is NaN (by its bits); false for integers.
    IsNan,
    /// -1, 0 or 1 of the sign; NaN and zeros stay as they are; 0 or 1 on u32.
    Sign,
    /// `e^a` and `e^a - 1`, within the op's stated ulp (see `spec::elementwise`).
    Exp,
    /// See [`Prim::Exp`].
    Expm1,
    /// Natural log: exact at subnormals' true value, NaN below zero.
    Log,
    /// Sine and cosine with exact argument reduction over the whole float range.
    Sin,
    /// See [`Prim::Sin`].
    Cos,
    /// tanh, erf and sqrt (sqrt exact at subnormals, NaN below zero).
    Tanh,
    /// See [`Prim::Tanh`].
    Erf,
    /// See [`Prim::Tanh`].
    Sqrt,
    /// Ceil, floor and round-half-to-even: exact, also at subnormals.
    Ceil,
    /// See [`Prim::Ceil`].
    Floor,
    /// See [`Prim::Ceil`].
    Round,
    /// `a ^ b` with C's `pow` special cases (`pow(NaN, 0) = 1`).
    Pow,
}

/// An expression over a kernel's operands, parameters and literals.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// Operand `i`, loaded in its compute type.
    Arg(u8, Ty),
    /// Scalar parameter `i`, passed in the compute type.
    Param(u8, Ty),
    /// A constant of the type (integers exact).
    Lit(f64, Ty),
    /// A primitive of its arguments.
    Call(Prim, Vec<Expr>),
    /// A value of dtype `.1` converted to dtype `.2` with the crate's cast rules (Rust `as`).
    Cast(Box<Expr>, DType, DType),
}

impl Expr {
    /// The expression's type.
    pub fn ty(&self) -> Ty {
        match self {
            Expr::Arg(_, t) | Expr::Param(_, t) | Expr::Lit(_, t) => *t,
            Expr::Cast(_, _, to) => Ty::of(*to),
            Expr::Call(p, args) => match p {
                Prim::Lt | Prim::Le | Prim::Eq | Prim::Not | Prim::Or | Prim::IsNan => Ty::Bool,
                Prim::Select => args[1].ty(),
                _ => args[0].ty(),
            },
        }
    }

    /// A constant of this expression's type.
    pub fn lit(&self, v: f64) -> Expr {
        Expr::Lit(v, self.ty())
    }

    fn call(p: Prim, args: Vec<Expr>) -> Expr {
        Expr::Call(p, args)
    }
}

macro_rules! unary_fns {
    ($($name:ident => $prim:ident),* $(,)?) => {
        $(
            #[doc = concat!("[`Prim::", stringify!($prim), "`] of `a`.")]
            pub fn $name(a: Expr) -> Expr {
                Expr::call(Prim::$prim, vec![a])
            }
        )*
    };
}
unary_fns!(
    abs => Abs, not => Not, is_nan => IsNan, sign => Sign, exp => Exp, expm1 => Expm1, log => Log,
    sin => Sin, cos => Cos, tanh => Tanh, erf => Erf, sqrt => Sqrt, ceil => Ceil, floor => Floor,
    round => Round,
);

macro_rules! binary_fns {
    ($($name:ident => $prim:ident),* $(,)?) => {
        $(
            #[doc = concat!("[`Prim::", stringify!($prim), "`] of `a` and `b`.")]
            pub fn $name(a: Expr, b: Expr) -> Expr {
                Expr::call(Prim::$prim, vec![a, b])
            }
        )*
    };
}
binary_fns!(max => Max, min => Min, lt => Lt, le => Le, eq => Eq, or => Or, pow => Pow);

/// `c ? a : b`.
pub fn select(c: Expr, a: Expr, b: Expr) -> Expr {
    Expr::call(Prim::Select, vec![c, a, b])
}

macro_rules! ops {
    ($($trait:ident $method:ident => $prim:ident),*) => {
        $(
            impl std::ops::$trait for Expr {
                type Output = Expr;
                fn $method(self, rhs: Expr) -> Expr {
                    Expr::call(Prim::$prim, vec![self, rhs])
                }
            }
        )*
    };
}
ops!(Add add => Add, Sub sub => Sub, Mul mul => Mul, Div div => Div);

impl std::ops::Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::call(Prim::Neg, vec![self])
    }
}

/// How a renderer writes the pieces of an expression in its dialect; [`render`] walks the tree.
pub trait Dialect {
    /// A literal of type `ty`.
    fn lit(&self, v: f64, ty: Ty) -> String;
    /// Operand `i` (of type `ty`).
    fn arg(&self, i: u8, ty: Ty) -> String;
    /// Scalar parameter `i` (of type `ty`).
    fn param(&self, i: u8, ty: Ty) -> String;
    /// Primitive `p` of the rendered arguments, of types `tys`.
    fn prim(&self, p: Prim, args: &[String], tys: &[Ty]) -> String;
    /// The rendered `x` of dtype `from` as dtype `to`.
    fn cast(&self, x: &str, from: DType, to: DType) -> String;
    /// The value `x` (in the compute type of `dtype`) as an op of `dtype` stores it and the next
    /// op loads it back: rounded to the dtype (f16, bf16, u8), and opaque to a compiler that would
    /// otherwise contract across two ops of a fused program.
    fn stored(&self, x: String, dtype: DType) -> String;
    /// A statement binding `value` of type `ty` to `name`.
    fn bind(&self, name: &str, value: &str, ty: Ty) -> String;
}

/// `e` in dialect `d`.
pub fn render(e: &Expr, d: &impl Dialect) -> String {
    match e {
        Expr::Arg(i, t) => d.arg(*i, *t),
        Expr::Param(i, t) => d.param(*i, *t),
        Expr::Lit(v, t) => d.lit(*v, *t),
        Expr::Cast(x, from, to) => d.cast(&render(x, d), *from, *to),
        Expr::Call(p, args) => {
            let rendered: Vec<String> = args.iter().map(|a| render(a, d)).collect();
            let tys: Vec<Ty> = args.iter().map(Expr::ty).collect();
            d.prim(*p, &rendered, &tys)
        }
    }
}

/// `e` in dialect `d` with each subexpression that occurs more than once computed once: the
/// statements binding those (`{prefix}0`, `{prefix}1`, ..., each after the ones it reads) and
/// the value. The table's expressions repeat subtrees (powf's squares, a bound tested on the
/// same product twice): rendered whole, powf was 3.3 KB of WGSL, which Tint passes on unmerged
/// and SwiftShader (Chromium's WebGPU) took minutes to compile, losing the device. The values
/// are pure and the native kernels compile without contraction, so binding them changes no bit.
pub fn render_lines(e: &Expr, d: &impl Dialect, prefix: &str) -> (Vec<String>, String) {
    let mut counts = HashMap::new();
    plain(e, d, &mut counts);
    let mut h = Hoist { d, counts, names: HashMap::new(), lines: vec![], prefix };
    let value = h.hoisted(e).1;
    (h.lines, value)
}

/// `e` rendered whole, each call's and cast's rendering counted in `counts`.
fn plain(e: &Expr, d: &impl Dialect, counts: &mut HashMap<String, usize>) -> String {
    let s = match e {
        Expr::Cast(x, from, to) => d.cast(&plain(x, d, counts), *from, *to),
        Expr::Call(p, args) => {
            let rendered: Vec<String> = args.iter().map(|a| plain(a, d, counts)).collect();
            d.prim(*p, &rendered, &args.iter().map(Expr::ty).collect::<Vec<_>>())
        }
        _ => return render(e, d),
    };
    *counts.entry(s.clone()).or_default() += 1;
    s
}

struct Hoist<'a, D> {
    d: &'a D,
    /// How often each call's or cast's whole rendering occurs.
    counts: HashMap<String, usize>,
    /// The binding of each repeated rendering bound so far.
    names: HashMap<String, String>,
    lines: Vec<String>,
    prefix: &'a str,
}

impl<D: Dialect> Hoist<'_, D> {
    /// `e` rendered whole (the key of its count) and as it reads with the bindings.
    fn hoisted(&mut self, e: &Expr) -> (String, String) {
        let d = self.d;
        let (whole, short) = match e {
            Expr::Cast(x, from, to) => {
                let (w, s) = self.hoisted(x);
                (d.cast(&w, *from, *to), d.cast(&s, *from, *to))
            }
            Expr::Call(p, args) => {
                let (w, s): (Vec<String>, Vec<String>) = args.iter().map(|a| self.hoisted(a)).unzip();
                let tys: Vec<Ty> = args.iter().map(Expr::ty).collect();
                (d.prim(*p, &w, &tys), d.prim(*p, &s, &tys))
            }
            _ => {
                let s = render(e, d);
                return (s.clone(), s);
            }
        };
        if self.counts.get(&whole).copied().unwrap_or(0) < 2 {
            return (whole, short);
        }
        if let Some(name) = self.names.get(&whole) {
            return (whole, name.clone());
        }
        let name = format!("{}{}", self.prefix, self.names.len());
        self.lines.push(d.bind(&name, &short, e.ty()));
        self.names.insert(whole.clone(), name.clone());
        (whole, name)
    }
}

/// A float literal's digits that read back as exactly `v` (Rust's shortest round trip), with a
/// point or an exponent so that no dialect takes it for an integer.
pub fn float_digits(v: f64) -> String {
    let s = format!("{v:?}");
    if s.contains(['.', 'e', 'E']) || !v.is_finite() { s } else { format!("{s}.0") }
}
