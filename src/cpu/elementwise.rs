//! Elementwise ops on the cpu. Floats compute in f64 and round once to their dtype (for
//! add/sub/mul/div that is exactly the native operation); integers wrap. powf with a small integer
//! exponent multiplies in the dtype's compute type, as the spec defines it for every backend.

use super::{CpuBackend, CpuStorage, dtype_mismatch, map_strided, wrong_dtype, zip_strided};
use crate::backend::ElementwiseOps;
use crate::spec::elementwise::{BinaryOp, CmpOp, POWF_EXACT_MAX, ScalarOp, UnaryOp};
use crate::{DType, Layout, Result, Scalar, WithDType, with_float_storage, with_storage, with_storage_pair};
use half::{bf16, f16};

/// Per-dtype arithmetic: what differs between integers and floats.
pub(crate) trait Arith: WithDType {
    fn add(a: Self, b: Self) -> Self;
    fn sub(a: Self, b: Self) -> Self;
    fn mul(a: Self, b: Self) -> Self;
    fn div(a: Self, b: Self) -> Self;
    /// `None` for an op the dtype does not take (the spec keeps those away).
    fn unary(op: UnaryOp, x: Self) -> Option<Self>;

    fn is_nan(self) -> bool {
        #[allow(clippy::eq_op)]
        let nan = self != self;
        nan
    }
}

macro_rules! int_arith {
    ($t:ty, $signed:expr) => {
        impl Arith for $t {
            fn add(a: Self, b: Self) -> Self {
                a.wrapping_add(b)
            }
            fn sub(a: Self, b: Self) -> Self {
                a.wrapping_sub(b)
            }
            fn mul(a: Self, b: Self) -> Self {
                a.wrapping_mul(b)
            }
            fn div(a: Self, b: Self) -> Self {
                if b == 0 { 0 } else { a.wrapping_div(b) }
            }
            fn unary(op: UnaryOp, x: Self) -> Option<Self> {
                let zero = <$t>::default();
                Some(match op {
                    UnaryOp::Neg if $signed => zero.wrapping_sub(x),
                    UnaryOp::Abs => {
                        if x < zero {
                            zero.wrapping_sub(x)
                        } else {
                            x
                        }
                    }
                    UnaryOp::Sqr => x.wrapping_mul(x),
                    UnaryOp::Relu => {
                        if x < zero {
                            zero
                        } else {
                            x
                        }
                    }
                    UnaryOp::Sign => <$t>::from_i64(x.to_i64().signum()),
                    _ => return None,
                })
            }
        }
    };
}
int_arith!(u8, false);
int_arith!(u32, false);
int_arith!(i64, true);

/// `op` on an f64: the definition every float dtype rounds from.
pub(crate) fn float_unary(op: UnaryOp, x: f64) -> f64 {
    use std::f64::consts::{FRAC_2_SQRT_PI, SQRT_2};
    match op {
        UnaryOp::Neg => -x,
        UnaryOp::Recip => 1.0 / x,
        UnaryOp::Exp => x.exp(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Abs => x.abs(),
        UnaryOp::Sqr => x * x,
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Gelu => {
            let c = FRAC_2_SQRT_PI / SQRT_2; // sqrt(2 / pi)
            0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
        }
        UnaryOp::GeluErf => 0.5 * x * (1.0 + libm::erf(x / SQRT_2)),
        UnaryOp::Erf => libm::erf(x),
        UnaryOp::Relu => {
            if x < 0.0 {
                0.0
            } else {
                x
            }
        }
        UnaryOp::Silu => x / (1.0 + (-x).exp()),
        UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        UnaryOp::Ceil => x.ceil(),
        UnaryOp::Floor => x.floor(),
        UnaryOp::Round => x.round_ties_even(),
        UnaryOp::Sign => {
            if x.is_nan() || x == 0.0 {
                x
            } else {
                x.signum()
            }
        }
    }
}

macro_rules! float_arith {
    ($t:ty) => {
        impl Arith for $t {
            fn add(a: Self, b: Self) -> Self {
                Self::from_f64(a.to_f64() + b.to_f64())
            }
            fn sub(a: Self, b: Self) -> Self {
                Self::from_f64(a.to_f64() - b.to_f64())
            }
            fn mul(a: Self, b: Self) -> Self {
                Self::from_f64(a.to_f64() * b.to_f64())
            }
            fn div(a: Self, b: Self) -> Self {
                Self::from_f64(a.to_f64() / b.to_f64())
            }
            fn unary(op: UnaryOp, x: Self) -> Option<Self> {
                Some(Self::from_f64(float_unary(op, x.to_f64())))
            }
        }
    };
}
float_arith!(f16);
float_arith!(bf16);
float_arith!(f32);
float_arith!(f64);

fn maximum<T: Arith>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        if a.is_nan() { a } else { b }
    } else if a >= b {
        a
    } else {
        b
    }
}

fn minimum<T: Arith>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        if a.is_nan() { a } else { b }
    } else if a <= b {
        a
    } else {
        b
    }
}

fn binary_fn<T: Arith>(op: BinaryOp) -> fn(T, T) -> T {
    match op {
        BinaryOp::Add => T::add,
        BinaryOp::Sub => T::sub,
        BinaryOp::Mul => T::mul,
        BinaryOp::Div => T::div,
        BinaryOp::Maximum => maximum,
        BinaryOp::Minimum => minimum,
    }
}

fn cmp_fn<T: PartialOrd>(op: CmpOp) -> fn(&T, &T) -> bool {
    match op {
        CmpOp::Eq => T::eq,
        CmpOp::Ne => T::ne,
        CmpOp::Lt => T::lt,
        CmpOp::Le => T::le,
        CmpOp::Gt => T::gt,
        CmpOp::Ge => T::ge,
    }
}

fn unary_vec<T: Arith>(op: UnaryOp, v: &[T], l: &Layout) -> Option<Vec<T>> {
    // Probe the dtype once so an unsupported op fails before the loop.
    T::unary(op, T::default())?;
    Some(map_strided(v, l, |x| T::unary(op, x).unwrap_or(x)))
}

fn float_map<T: WithDType>(v: &[T], l: &Layout, f: impl Fn(f64) -> f64) -> CpuStorage {
    CpuStorage::from_vec(map_strided(v, l, |x| T::from_f64(f(x.to_f64()))))
}

/// powf of every element: f64 in f64, the others in f32 with the exponent as an f32 kernel gets
/// it (see [`crate::spec::elementwise`]).
fn powf_map<T: WithDType>(v: &[T], l: &Layout, e: f64) -> CpuStorage {
    if T::DTYPE == DType::F64 {
        return float_map(v, l, |x| powf64(x, e));
    }
    let e32 = e as f32;
    float_map(v, l, |x| match powi32(x as f32, e32) {
        Some(y) => y.into(),
        None => x.powf(e),
    })
}

macro_rules! powi {
    ($name:ident, $t:ty) => {
        /// `x ^ e` by multiplication where the spec says so (`None`: by `pow`).
        fn $name(x: $t, e: $t) -> Option<$t> {
            let n = e.abs();
            if e.fract() != 0.0 || n > POWF_EXACT_MAX as $t {
                return None;
            }
            let (mut r, mut square, mut bits) = (1.0 as $t, x, n as u32);
            while bits != 0 {
                if bits & 1 == 1 {
                    r *= square;
                }
                square *= square;
                bits >>= 1;
            }
            if e >= 0.0 {
                Some(r)
            } else if (<$t>::MIN_POSITIVE..=<$t>::MAX).contains(&r.abs()) {
                Some(1.0 / r)
            } else {
                None
            }
        }
    };
}
powi!(powi32, f32);
powi!(powi64, f64);

fn powf64(x: f64, e: f64) -> f64 {
    powi64(x, e).unwrap_or_else(|| x.powf(e))
}

fn cast_to<T: WithDType>(v: &[T], l: &Layout, to: DType) -> CpuStorage {
    fn go<T: WithDType, U: WithDType>(v: &[T], l: &Layout) -> CpuStorage {
        CpuStorage::from_vec(map_strided(v, l, |x| x.cast::<U>()))
    }
    match to {
        DType::U8 => go::<T, u8>(v, l),
        DType::U32 => go::<T, u32>(v, l),
        DType::I64 => go::<T, i64>(v, l),
        DType::F16 => go::<T, f16>(v, l),
        DType::BF16 => go::<T, bf16>(v, l),
        DType::F32 => go::<T, f32>(v, l),
        DType::F64 => go::<T, f64>(v, l),
    }
}

impl ElementwiseOps for CpuBackend {
    fn unary(&self, x: &CpuStorage, l: &Layout, op: UnaryOp) -> Result<CpuStorage> {
        with_storage!(x, v => unary_vec(op, v, l).map(CpuStorage::from_vec))
            .ok_or_else(|| wrong_dtype(op.name(), x, op.dtypes()))
    }

    fn scalar_map(&self, x: &CpuStorage, l: &Layout, op: ScalarOp, params: &[Scalar]) -> Result<CpuStorage> {
        let p = |i: usize| params[i].to_f64();
        let wrong = || wrong_dtype(op.name(), x, op.dtypes());
        match op {
            ScalarOp::Affine => with_float_storage!(x, v => Ok(float_map(v, l, |x| x * p(0) + p(1))), Err(wrong())),
            ScalarOp::Powf => with_float_storage!(x, v => Ok(powf_map(v, l, p(0))), Err(wrong())),
            ScalarOp::Elu => {
                let f = |x: f64| if x >= 0.0 { x } else { p(0) * x.exp_m1() };
                with_float_storage!(x, v => Ok(float_map(v, l, f)), Err(wrong()))
            }
            ScalarOp::Clamp => Ok(with_storage!(x, v => {
                let (lo, hi) = (params[0].to(), params[1].to());
                CpuStorage::from_vec(map_strided(v, l, |x| if x < lo { lo } else if x > hi { hi } else { x }))
            })),
        }
    }

    fn binary(&self, lhs: &CpuStorage, ll: &Layout, rhs: &CpuStorage, rl: &Layout, op: BinaryOp) -> Result<CpuStorage> {
        with_storage_pair!(lhs, rhs, (a, b) => Ok(CpuStorage::from_vec(zip_strided(a, ll, b, rl, binary_fn(op)))),
            Err(dtype_mismatch(op.name(), lhs, rhs)))
    }

    fn cmp(&self, lhs: &CpuStorage, ll: &Layout, rhs: &CpuStorage, rl: &Layout, op: CmpOp) -> Result<CpuStorage> {
        with_storage_pair!(lhs, rhs, (a, b) => {
            let f = cmp_fn(op);
            Ok(CpuStorage::U8(zip_strided(a, ll, b, rl, |x, y| f(&x, &y) as u8)))
        }, Err(dtype_mismatch(op.name(), lhs, rhs)))
    }

    fn where_cond(
        &self,
        cond: &CpuStorage,
        cl: &Layout,
        on_true: &CpuStorage,
        tl: &Layout,
        on_false: &CpuStorage,
        fl: &Layout,
    ) -> Result<CpuStorage> {
        let mask: Vec<bool> = match cond {
            CpuStorage::U8(c) => map_strided(c, cl, |x| x != 0),
            CpuStorage::U32(c) => map_strided(c, cl, |x| x != 0),
            CpuStorage::I64(c) => map_strided(c, cl, |x| x != 0),
            _ => return Err(wrong_dtype("where_cond", cond, DType::INT)),
        };
        with_storage_pair!(on_true, on_false, (t, f) => {
            let picked = zip_strided(t, tl, f, fl, |a, b| (a, b));
            Ok(CpuStorage::from_vec(mask.iter().zip(picked).map(|(&m, (a, b))| if m { a } else { b }).collect()))
        }, Err(dtype_mismatch("where_cond", on_true, on_false)))
    }

    fn cast(&self, x: &CpuStorage, l: &Layout, to: DType) -> Result<CpuStorage> {
        Ok(with_storage!(x, v => cast_to(v, l, to)))
    }
}
