//! Every elementwise map of the spec as an expression: the one definition both GPU dialects
//! render. Operand 0 is `x` (or `a`; `cond` for where_cond, whose values are operands 1 and 2);
//! a map computes in the compute type of its dtype, which the spec has checked it takes.

use super::{Expr, Ty, abs, ceil, cos, eq, erf, exp, expm1, floor, is_nan, le, log, lt, max, min, not, or, pow};
use super::{round, select, sign, sin, sqrt, tanh};
use crate::DType;
use crate::spec::elementwise::POWF_EXACT_MAX;
use crate::spec::elementwise::{BinaryOp, CmpOp, ScalarOp, UnaryOp};

/// `body`, except that a NaN `x` is returned as it is: drivers' builtins are not bound to
/// propagate NaN (lavapipe's tanh gives -1), so every float map that does not keep NaN by its
/// arithmetic says it here, once, for every dialect.
fn keep_nan(x: &Expr, body: Expr) -> Expr {
    if x.ty().is_float() { select(is_nan(x.clone()), x.clone(), body) } else { body }
}

/// Unary map `op` of operand 0 computing in `ty`.
pub fn unary(op: UnaryOp, ty: Ty) -> Expr {
    use UnaryOp::*;
    let x = Expr::Arg(0, ty);
    let c = |v: f64| Expr::Lit(v, ty);
    let body = match op {
        // Bit operations on floats: exact for NaN and subnormals as they are.
        Neg => return -x,
        Abs if ty == Ty::U32 => return x,
        Abs => return abs(x),
        Recip => c(1.0) / x.clone(),
        Exp => exp(x.clone()),
        Log => log(x.clone()),
        Sin => sin(x.clone()),
        Cos => cos(x.clone()),
        Tanh => tanh(x.clone()),
        Sqr => x.clone() * x.clone(),
        Sqrt => sqrt(x.clone()),
        Gelu => {
            let x3 = c(0.044715) * x.clone() * x.clone() * x.clone();
            c(0.5) * x.clone() * (c(1.0) + tanh(c(0.7978845608028654) * (x.clone() + x3)))
        }
        GeluErf => c(0.5) * x.clone() * (c(1.0) + erf(x.clone() / c(std::f64::consts::SQRT_2))),
        Erf => erf(x.clone()),
        Relu if ty == Ty::U32 => return x,
        Relu => select(lt(x.clone(), c(0.0)), c(0.0), x.clone()),
        Silu => x.clone() / (c(1.0) + exp(-x.clone())),
        Sigmoid => c(1.0) / (c(1.0) + exp(-x.clone())),
        Ceil => ceil(x.clone()),
        Floor => floor(x.clone()),
        Round => round(x.clone()),
        Sign => sign(x.clone()),
    };
    keep_nan(&x, body)
}

/// Binary op `op` of operands 0 and 1 (one shape, broadcast already) computing in `ty`.
pub fn binary(op: BinaryOp, ty: Ty) -> Expr {
    let (a, b) = (Expr::Arg(0, ty), Expr::Arg(1, ty));
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Maximum => max(a, b),
        BinaryOp::Minimum => min(a, b),
    }
}

/// Comparison `op` of operands 0 and 1 computing in `ty`, as a [`Ty::Bool`]. Any comparison
/// with NaN is false but `ne`.
pub fn cmp(op: CmpOp, ty: Ty) -> Expr {
    let (a, b) = (Expr::Arg(0, ty), Expr::Arg(1, ty));
    match op {
        CmpOp::Eq => eq(a, b),
        CmpOp::Ne => not(eq(a, b)),
        CmpOp::Lt => lt(a, b),
        CmpOp::Le => le(a, b),
        CmpOp::Gt => lt(b, a),
        CmpOp::Ge => le(b, a),
    }
}

/// Scalar map `op` of operand 0 with parameters 0 and 1, computing in `ty`.
pub fn scalar(op: ScalarOp, ty: Ty) -> Expr {
    let x = Expr::Arg(0, ty);
    let p = |i: u8| Expr::Param(i, ty);
    match op {
        // NaN stays NaN through the arithmetic; powf has C's rules (NaN^0 = 1).
        ScalarOp::Affine => x * p(0) + p(1),
        ScalarOp::Powf => powf(x, p(0)),
        ScalarOp::Elu => {
            let body = select(le(x.lit(0.0), x.clone()), x.clone(), p(0) * expm1(x.clone()));
            keep_nan(&x, body)
        }
        ScalarOp::Clamp => {
            let clamped = select(lt(p(1), x.clone()), p(1), select(lt(x.clone(), p(0)), p(0), x.clone()));
            if ty.is_float() { select(is_nan(x.clone()), x, clamped) } else { clamped }
        }
    }
}

/// `a && b` of comparisons.
fn and(a: Expr, b: Expr) -> Expr {
    not(or(not(a), not(b)))
}

/// powf as the spec defines it: for an integer `e` with `|e| <= POWF_EXACT_MAX`, the squares
/// `x^(2^k)` of the set bits of `|e|` multiplied from the lowest (`1 / x^|e|` for `e < 0` where
/// `x^|e|` is normal), else `pow`.
fn powf(x: Expr, e: Expr) -> Expr {
    let c = |v: f64| x.lit(v);
    let n = abs(e.clone());
    // Bit k of n: floor(n / 2^k) is odd (all exact for n <= 2^5).
    let bit = |k: i32| not(eq(floor(n.clone() * c(0.5f64.powi(k))), floor(n.clone() * c(0.5f64.powi(k + 1))) * c(2.0)));
    let (mut r, mut square) = (c(1.0), x.clone());
    for k in 0..=POWF_EXACT_MAX.ilog2() as i32 {
        r = r * select(bit(k), square.clone(), c(1.0));
        square = square.clone() * square;
    }
    let normal = and(le(c(x.ty().min_positive()), abs(r.clone())), le(abs(r.clone()), c(x.ty().max_finite())));
    let negative = select(normal, c(1.0) / r.clone(), pow(x.clone(), e.clone()));
    let small = and(eq(floor(e.clone()), e.clone()), le(n, c(POWF_EXACT_MAX.into())));
    select(small, select(lt(e.clone(), c(0.0)), negative, r), pow(x, e))
}

/// where_cond: operand 1 where operand 0 (the condition, computing in `cond`) is not zero, else
/// operand 2 (computing in `ty`).
pub fn where_cond(cond: Ty, ty: Ty) -> Expr {
    let c = Expr::Arg(0, cond);
    select(not(eq(c.clone(), c.lit(0.0))), Expr::Arg(1, ty), Expr::Arg(2, ty))
}

/// Operand 0 of dtype `from` cast to `to`.
pub fn cast(from: DType, to: DType) -> Expr {
    Expr::Cast(Box::new(Expr::Arg(0, Ty::of(from))), from, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_take_their_dtype_compute_type_and_floats_keep_nan() {
        for &op in UnaryOp::ALL {
            for &dt in op.dtypes() {
                let e = unary(op, Ty::of(dt));
                assert_eq!(e.ty(), Ty::of(dt), "{op} {dt}");
                let guarded =
                    matches!(&e, Expr::Call(super::super::Prim::Select, a) if a[0] == is_nan(Expr::Arg(0, Ty::of(dt))));
                let bitwise = matches!(op, UnaryOp::Neg | UnaryOp::Abs);
                assert_eq!(guarded, dt.is_float() && !bitwise, "{op} {dt}: {e:?}");
            }
        }
        for &op in CmpOp::ALL {
            assert_eq!(cmp(op, Ty::F32).ty(), Ty::Bool);
        }
        assert_eq!(where_cond(Ty::U32, Ty::F64).ty(), Ty::F64);
        assert_eq!(cast(DType::F16, DType::I64).ty(), Ty::I64);
    }
}
