//! Element types, host conversion, and the cast rules every backend follows.

use half::{bf16, f16};
use std::fmt;

/// The element types of a tensor.
///
/// ```
/// use rocm_wgpu_ops::{DType, Device, Tensor};
///
/// assert_eq!((DType::BF16.name(), DType::BF16.size_in_bytes()), ("bf16", 2));
/// assert!(DType::F16.is_float() && DType::I64.is_int());
///
/// // Casts follow Rust's `as`: floats to integers truncate and saturate.
/// let x = Tensor::from_vec(vec![-1.5f32, 2.7, 300.0], [3], &Device::cpu())?;
/// assert_eq!(x.to_dtype(DType::U8)?.to_vec::<u8>()?, [0, 2, 255]);
/// assert_eq!(x.to_dtype(DType::I64)?.dtype(), DType::I64);
/// # Ok::<(), rocm_wgpu_ops::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// Unsigned 8-bit integer (also the result of comparisons).
    U8,
    /// Unsigned 32-bit integer (also the result of the arg ops and argsort).
    U32,
    /// Signed 64-bit integer.
    I64,
    /// IEEE half precision.
    F16,
    /// bfloat16: f32's exponent, 8 bits of mantissa.
    BF16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
}

impl DType {
    /// Every dtype, in a fixed order.
    pub const ALL: &'static [DType] =
        &[DType::U8, DType::U32, DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64];
    /// The floating-point dtypes.
    pub const FLOAT: &'static [DType] = &[DType::F16, DType::BF16, DType::F32, DType::F64];
    /// The floats and the signed integer.
    pub const SIGNED: &'static [DType] = &[DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64];
    /// The integer dtypes: those index ids and conditions may have.
    pub const INT: &'static [DType] = &[DType::U8, DType::U32, DType::I64];

    /// Short lowercase name, used in kernel entry names (`exp_f32`).
    pub fn name(self) -> &'static str {
        match self {
            DType::U8 => "u8",
            DType::U32 => "u32",
            DType::I64 => "i64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    /// Bytes per element.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::U8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::U32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    /// f16, bf16, f32 or f64.
    pub fn is_float(self) -> bool {
        DType::FLOAT.contains(&self)
    }

    /// u8, u32 or i64.
    pub fn is_int(self) -> bool {
        DType::INT.contains(&self)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A host element type that maps to a [`DType`].
///
/// Casts follow Rust's `as`: float to integer truncates toward zero and saturates (NaN gives 0),
/// integer to integer wraps, and every conversion into a float rounds to nearest even.
pub trait WithDType:
    crate::host::StorageElem + Copy + Send + Sync + PartialOrd + PartialEq + fmt::Debug + fmt::Display + Default + 'static
{
    /// The dtype of this element type.
    const DTYPE: DType;
    /// The value as an f64 (exact but for i64 past 2^53, rounded to nearest).
    fn to_f64(self) -> f64;
    /// The value as an integer (floats truncate and saturate, as `as` does).
    fn to_i64(self) -> i64;
    /// From a float, with `as` semantics (saturating; NaN to 0 for integers).
    fn from_f64(v: f64) -> Self;
    /// From an integer, with `as` semantics (wrapping; one rounding for floats).
    fn from_i64(v: i64) -> Self;

    /// Casts to another element type with the rules above.
    fn cast<U: WithDType>(self) -> U {
        if Self::DTYPE.is_int() { U::from_i64(self.to_i64()) } else { U::from_f64(self.to_f64()) }
    }
}

macro_rules! with_dtype_int {
    ($t:ty, $d:ident) => {
        impl WithDType for $t {
            const DTYPE: DType = DType::$d;
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn to_i64(self) -> i64 {
                self as i64
            }
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn from_i64(v: i64) -> Self {
                v as $t
            }
        }
    };
}
with_dtype_int!(u8, U8);
with_dtype_int!(u32, U32);
with_dtype_int!(i64, I64);

impl WithDType for f32 {
    const DTYPE: DType = DType::F32;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn from_i64(v: i64) -> Self {
        v as f32
    }
}

impl WithDType for f64 {
    const DTYPE: DType = DType::F64;
    fn to_f64(self) -> f64 {
        self
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
    fn from_f64(v: f64) -> Self {
        v
    }
    fn from_i64(v: i64) -> Self {
        v as f64
    }
}

/// `v` rounded to an f32 "to odd": toward zero, with the last bit set when inexact. Rounding
/// that to nearest even once more, into a type of at most 22 bits of precision (f16, bf16), is
/// rounding `v` to it directly. (half's `from_f64` drops the low 32 bits first for bf16, and
/// rounds through a nearest f32 for f16: both miss the bits that decide a near tie.)
fn f32_rounded_to_odd(v: f64) -> f32 {
    let f = v as f32;
    if f.is_nan() || f64::from(f) == v {
        return f;
    }
    let mut bits = f.to_bits();
    if f64::from(f).abs() > v.abs() {
        // Nearest was away from zero; one step back toward it (infinity steps to MAX).
        bits -= 1;
    }
    f32::from_bits(bits | 1)
}

macro_rules! with_dtype_half {
    ($t:ty, $d:ident) => {
        impl WithDType for $t {
            const DTYPE: DType = DType::$d;
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            fn to_i64(self) -> i64 {
                <$t>::to_f64(self) as i64
            }
            fn from_f64(v: f64) -> Self {
                <$t>::from_f32(f32_rounded_to_odd(v))
            }
            fn from_i64(v: i64) -> Self {
                Self::from_f64(v as f64)
            }
        }
    };
}
with_dtype_half!(f16, F16);
with_dtype_half!(bf16, BF16);

/// One value of any dtype: fill values, clamp bounds, arange start and step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A u8 value.
    U8(u8),
    /// A u32 value.
    U32(u32),
    /// An i64 value.
    I64(i64),
    /// An f16 value.
    F16(f16),
    /// A bf16 value.
    BF16(bf16),
    /// An f32 value.
    F32(f32),
    /// An f64 value.
    F64(f64),
}

/// Runs `$body` with `$v` bound to the value inside a [`Scalar`], whatever its type.
macro_rules! with_scalar {
    ($s:expr, $v:ident => $body:expr) => {
        match $s {
            Scalar::U8($v) => $body,
            Scalar::U32($v) => $body,
            Scalar::I64($v) => $body,
            Scalar::F16($v) => $body,
            Scalar::BF16($v) => $body,
            Scalar::F32($v) => $body,
            Scalar::F64($v) => $body,
        }
    };
}

impl Scalar {
    /// The dtype of the value.
    pub fn dtype(self) -> DType {
        with_scalar!(self, v => crate::dtype::dtype_of(v))
    }

    /// The value as an f64.
    pub fn to_f64(self) -> f64 {
        with_scalar!(self, v => v.to_f64())
    }

    /// This value cast to `dtype` with the [`WithDType`] cast rules.
    pub fn to_dtype(self, dtype: DType) -> Scalar {
        with_scalar!(self, v => Scalar::cast_from(v, dtype))
    }

    /// The value as a `T`, with the cast rules.
    pub fn to<T: WithDType>(self) -> T {
        with_scalar!(self, v => v.cast::<T>())
    }

    fn cast_from<T: WithDType>(v: T, dtype: DType) -> Scalar {
        match dtype {
            DType::U8 => Scalar::U8(v.cast()),
            DType::U32 => Scalar::U32(v.cast()),
            DType::I64 => Scalar::I64(v.cast()),
            DType::F16 => Scalar::F16(v.cast()),
            DType::BF16 => Scalar::BF16(v.cast()),
            DType::F32 => Scalar::F32(v.cast()),
            DType::F64 => Scalar::F64(v.cast()),
        }
    }

    /// Orders two scalars of one dtype by value (`None` when either is NaN).
    pub fn partial_cmp_value(self, other: Scalar) -> Option<std::cmp::Ordering> {
        let other = other.to_dtype(self.dtype());
        with_scalar!(self, v => v.partial_cmp(&other.to()))
    }
}

fn dtype_of<T: WithDType>(_: T) -> DType {
    T::DTYPE
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        with_scalar!(*self, v => write!(f, "{v}{}", self.dtype()))
    }
}

macro_rules! scalar_from {
    ($t:ty, $v:ident) => {
        impl From<$t> for Scalar {
            fn from(v: $t) -> Self {
                Scalar::$v(v)
            }
        }
    };
}
scalar_from!(u8, U8);
scalar_from!(u32, U32);
scalar_from!(i64, I64);
scalar_from!(f16, F16);
scalar_from!(bf16, BF16);
scalar_from!(f32, F32);
scalar_from!(f64, F64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_follow_as_semantics() {
        assert_eq!((-1.7f32).cast::<i64>(), -1);
        assert_eq!(300.0f64.cast::<u8>(), 255);
        assert_eq!(f32::NAN.cast::<u32>(), 0);
        assert_eq!(300i64.cast::<u8>(), 44);
        assert_eq!((-1i64).cast::<u32>(), u32::MAX);
        assert_eq!(16_777_217i64.cast::<f32>(), 16_777_216.0);
        assert_eq!((1.0f32 + 1.0 / 1024.0).cast::<f16>(), f16::from_f32(1.0 + 1.0 / 1024.0));
        assert_eq!(Scalar::F64(2.5).to_dtype(DType::I64), Scalar::I64(2));
    }

    #[test]
    fn halves_round_once_from_f64() {
        // Just above the tie between bf16 9.125 and 9.1875, by bits past f64's high word.
        let above = f64::from(f32::from_bits(0x4112_8005));
        assert_eq!(<bf16 as WithDType>::from_f64(above), bf16::from_f32(9.1875));
        assert_eq!(<bf16 as WithDType>::from_f64(9.15625), bf16::from_f32(9.125), "a tie goes to even");
        // f16: nearest f32 of 1 + 2^-11 + 2^-40 is the tie 1 + 2^-11, which goes to even (1).
        let f = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(<f16 as WithDType>::from_f64(f), f16::from_f64(1.0 + 2f64.powi(-10)));
        assert_eq!(<f16 as WithDType>::from_f64(-f), -f16::from_f64(1.0 + 2f64.powi(-10)));
        for (v, want) in [(1e300, f16::INFINITY), (-1e-300, -f16::ZERO), (65520.0, f16::INFINITY), (65519.0, f16::MAX)]
        {
            assert_eq!(<f16 as WithDType>::from_f64(v).to_bits(), want.to_bits(), "{v}");
        }
        assert_eq!(<bf16 as WithDType>::from_f64(1e-45).to_bits(), 0, "below half the least subnormal");
        assert!(<bf16 as WithDType>::from_f64(f64::NAN).is_nan());
    }
}
