//! Elementwise ops: unary maps, affine, powf, elu, clamp, broadcasting binary ops, comparisons,
//! where_cond and cast.
//!
//! Integer arithmetic wraps (two's complement); integer division by zero gives 0. Float ops
//! follow IEEE 754 and propagate NaN (every float op maps a NaN input to NaN, except
//! `powf(NaN, 0) = 1`). Half types (f16, bf16) compute in f32 or wider and round once to the
//! dtype. `sin` and `cos` reduce their argument exactly: they hold to a few ulp over the whole
//! float range, not only near 0.
//!
//! powf with an integer exponent `e`, `|e| <=` [`POWF_EXACT_MAX`] (16), multiplies, the same way on
//! every backend: `x^|e|` by repeated squaring in the dtype's compute type (f32 for f16, bf16 and
//! f32), multiplying the squares `x^(2^k)` of the set bits of `|e|` from the lowest; for `e < 0`,
//! `1 / x^|e|` where `x^|e|` is a normal number, else (a result near the ends of the range, 0,
//! an infinity) the general `pow`; `x^0 = 1`. So it is exact wherever `x^e` is representable
//! (`5^2 = 25`, `3^5 = 243`, `2^-3 = 0.125`), and in any case within about `|e|` ulps; squares
//! and cubes are the cpu reference's bits everywhere, subnormals aside (a Vulkan driver may reorder a longer chain
//! of products, and a GPU's division need not be correctly rounded: the last bits of an inexact
//! result may differ). Other exponents take the driver's or libm's `pow` (C99's special cases),
//! within a few ulps; the exponent reaches an f32 kernel as an f32.
//!
//! Subnormals (the rule for every backend; the cpu and native backends keep them everywhere):
//! - exact: neg, abs, sign, relu, clamp, maximum, minimum, the comparisons, ceil, floor, round,
//!   where_cond and casts between f32, f16 and bf16 give the reference's bits for subnormal
//!   inputs, and data movement (copies, views, cat, the index ops) copies bits; log, sqrt and
//!   sin of a subnormal are its true value within the op's usual error.
//! - in range, always: relu >= 0; sign is -1, 0, 1 or NaN; log and sqrt of anything below zero
//!   (a negative subnormal too) are NaN.
//! - everything else (add, sub, mul, div, recip, sqr, exp, tanh, erf, gelu, silu, sigmoid,
//!   affine, powf, elu, casts to or from f64, the other families' arithmetic) may flush on the
//!   WGSL path: WGSL lets a driver flush a subnormal input or result to a zero of the same sign,
//!   and some do (NVIDIA through Vulkan flushes f32 subnormals in all arithmetic).

use super::{OpInfo, Out, check_dtype, check_same_dtype, invalid, spec_enum};
use crate::{DType, Layout, Result, Scalar, Shape};

spec_enum! {$
    /// Maps applied to each element.
    pub enum UnaryOp in Elementwise each each_unary_op {
        /// `-x` (wraps for i64).
        Neg = neg: DType::SIGNED,
        /// `1 / x`.
        Recip = recip: DType::FLOAT,
        Exp = exp: DType::FLOAT,
        /// Natural log; `log(0) = -inf`, negative gives NaN.
        Log = log: DType::FLOAT,
        Sin = sin: DType::FLOAT,
        Cos = cos: DType::FLOAT,
        Tanh = tanh: DType::FLOAT,
        /// `|x|`; identity on unsigned types, wraps on `i64::MIN`.
        Abs = abs: DType::ALL,
        /// `x * x` (wraps for integers).
        Sqr = sqr: DType::ALL,
        Sqrt = sqrt: DType::FLOAT,
        /// The tanh approximation: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
        Gelu = gelu: DType::FLOAT,
        /// The exact form: `0.5 x (1 + erf(x / sqrt 2))`.
        GeluErf = gelu_erf: DType::FLOAT,
        Erf = erf: DType::FLOAT,
        /// `max(x, 0)`; identity on unsigned types.
        Relu = relu: DType::ALL,
        /// `x * sigmoid(x)`.
        Silu = silu: DType::FLOAT,
        /// `1 / (1 + exp(-x))`.
        Sigmoid = sigmoid: DType::FLOAT,
        Ceil = ceil: DType::FLOAT,
        Floor = floor: DType::FLOAT,
        /// Round half to even.
        Round = round: DType::FLOAT,
        /// -1, 0 or 1 (0 and 1 on unsigned types); NaN stays NaN.
        Sign = sign: DType::ALL,
    }
}

spec_enum! {$
    /// Binary ops; operands broadcast to a common shape.
    pub enum BinaryOp in Elementwise each each_binary_op {
        Add = add: DType::ALL,
        Sub = sub: DType::ALL,
        Mul = mul: DType::ALL,
        /// Integer division truncates toward zero; division by zero gives 0.
        Div = div: DType::ALL,
        /// Propagates NaN.
        Maximum = maximum: DType::ALL,
        /// Propagates NaN.
        Minimum = minimum: DType::ALL,
    }
}

spec_enum! {$
    /// Comparisons; give u8 (1 true, 0 false). Any comparison with NaN is false but `ne`.
    pub enum CmpOp in Elementwise each each_cmp_op {
        Eq = eq: DType::ALL,
        Ne = ne: DType::ALL,
        Lt = lt: DType::ALL,
        Le = le: DType::ALL,
        Gt = gt: DType::ALL,
        Ge = ge: DType::ALL,
    }
}

spec_enum! {
    /// Maps with scalar parameters ([`scalar_map`] says which and in what type).
    pub enum ScalarOp in Elementwise {
        /// `x * mul + add`, computed in the dtype's compute precision; parameters `[mul, add]`.
        Affine = affine: DType::FLOAT,
        /// `x ^ e`; parameters `[e]`; exact for small integer `e` (see the module docs).
        Powf = powf: DType::FLOAT,
        /// `x` if `x >= 0`, else `alpha (exp(x) - 1)`; parameters `[alpha]`.
        Elu = elu: DType::FLOAT,
        /// `min(max(x, min), max)`; parameters `[min, max]`, cast to the dtype first; NaN stays
        /// NaN.
        Clamp = clamp: DType::ALL,
    }
}

/// The largest `|e|` for which `powf` multiplies (see the module docs): five bits of squares.
pub const POWF_EXACT_MAX: u32 = 16;

impl ScalarOp {
    /// How many scalar parameters the map takes.
    pub fn arity(self) -> usize {
        match self {
            ScalarOp::Affine | ScalarOp::Clamp => 2,
            ScalarOp::Powf | ScalarOp::Elu => 1,
        }
    }
}

spec_enum! {
    /// The elementwise ops that are not a family of variants.
    pub enum ElementwiseOp in Elementwise {
        /// `cond != 0 ? on_true : on_false`, all three broadcast.
        WhereCond = where_cond [MovesBytes]: DType::ALL,
        /// Conversion with the casts of [`crate::WithDType`].
        Cast = cast: DType::ALL,
    }
}

pub(crate) fn ops() -> Vec<OpInfo> {
    [UnaryOp::infos(), BinaryOp::infos(), CmpOp::infos(), ScalarOp::infos(), ElementwiseOp::infos()].concat()
}

/// The kernel entry name of a cast: `cast_f32_f16`.
pub fn cast_kernel_name(from: DType, to: DType) -> String {
    format!("cast_{from}_{to}")
}

/// Checks the dtype of a unary map; the output has the input's shape and dtype.
pub fn unary(op: UnaryOp, x: &Layout, dtype: DType) -> Result<Out> {
    check_dtype(op.name(), dtype, op.dtypes())?;
    Ok(Out::new(x.shape().clone(), dtype))
}

/// Checks a scalar map and puts its parameters in the form backends take: the float maps'
/// as f64 (never NaN), clamp's bounds cast to `dtype` (not NaN, `min <= max`).
pub fn scalar_map(op: ScalarOp, x: &Layout, dtype: DType, params: &mut [Scalar]) -> Result<Out> {
    let name = op.name();
    check_dtype(name, dtype, op.dtypes())?;
    if params.len() != op.arity() {
        return Err(invalid(name, format!("{} parameters, expected {}", params.len(), op.arity())));
    }
    if op == ScalarOp::Clamp {
        let (min, max) = (params[0].to_dtype(dtype), params[1].to_dtype(dtype));
        match min.partial_cmp_value(max) {
            Some(std::cmp::Ordering::Greater) => return Err(invalid(name, format!("min {min} > max {max}"))),
            None => return Err(invalid(name, format!("NaN bound: min {min}, max {max}"))),
            _ => (params[0], params[1]) = (min, max),
        }
    } else {
        for p in params.iter_mut() {
            *p = Scalar::F64(p.to_f64());
        }
        if params.iter().any(|p| p.to_f64().is_nan()) {
            return Err(invalid(name, format!("NaN parameter in {params:?}")));
        }
    }
    Ok(Out::new(x.shape().clone(), dtype))
}

/// Same dtype, shapes broadcastable; the output has the broadcast shape.
pub fn binary(op: &'static str, allowed: &[DType], lhs: (&Layout, DType), rhs: (&Layout, DType)) -> Result<Shape> {
    check_same_dtype(op, lhs.1, rhs.1)?;
    check_dtype(op, lhs.1, allowed)?;
    Shape::broadcast(op, lhs.0.shape(), rhs.0.shape())
}

/// A binary op: same dtype, broadcast shapes; the output has the broadcast shape and the dtype.
pub fn binary_op(op: BinaryOp, lhs: (&Layout, DType), rhs: (&Layout, DType)) -> Result<Out> {
    Ok(Out::new(binary(op.name(), op.dtypes(), lhs, rhs)?, lhs.1))
}

/// A comparison: as a binary op, but the output is u8.
pub fn cmp(op: CmpOp, lhs: (&Layout, DType), rhs: (&Layout, DType)) -> Result<Out> {
    Ok(Out::new(binary(op.name(), op.dtypes(), lhs, rhs)?, DType::U8))
}

/// `cond` is an integer tensor; `on_true` and `on_false` share a dtype; all three broadcast.
pub fn where_cond(cond: (&Layout, DType), on_true: (&Layout, DType), on_false: (&Layout, DType)) -> Result<Out> {
    let op = ElementwiseOp::WhereCond.name();
    super::check_int_operand(op, "condition", cond.1)?;
    let values = binary(op, DType::ALL, on_true, on_false)?;
    Ok(Out::new(Shape::broadcast(op, cond.0.shape(), &values)?, on_true.1))
}

/// A cast: every dtype to every dtype, same shape.
pub fn cast(x: &Layout, to: DType) -> Result<Out> {
    Ok(Out::new(x.shape().clone(), to))
}
