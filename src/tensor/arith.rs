//! Arithmetic as users type it: the `std::ops` operators on tensors and scalars (each returning
//! a `Result`, as candle's do), scalars as the right operand of the binary ops and comparisons
//! (`x.ge(5.0)`), and candle's `broadcast_*` names.
//!
//! A scalar becomes a tensor of the other operand's dtype, on its device, broadcast. An integer
//! tensor takes only scalars it holds exactly (`u8` with `0.5`, `300` or `-1` is an error, not a
//! rounded or wrapped value); a float tensor takes any number, rounded to its dtype (as PyTorch
//! does with a Python scalar).

use super::Tensor;
use crate::{Error, Result, Scalar};
use half::{bf16, f16};

/// The right operand of a binary op or comparison: a tensor (`&x`, `x`, the `Result` of another
/// op) or a scalar (`2.0`, `1`, `f16::ONE`, a [`Scalar`]), which becomes a tensor of the left
/// operand's dtype: exactly for an integer dtype (else an error), rounded for a float one.
///
/// ```
/// use rocm_wgpu_ops::{Device, Tensor};
///
/// let x = Tensor::from_vec(vec![1u32, 5, 9], 3, &Device::cpu())?;
/// assert_eq!(x.ge(5)?.to_vec::<u8>()?, [0, 1, 1]);
/// assert_eq!(x.mul(2)?.to_vec::<u32>()?, [2, 10, 18]);
/// assert!(x.add(0.5).is_err()); // a u32 tensor takes only scalars it holds exactly
/// # Ok::<(), rocm_wgpu_ops::Error>(())
/// ```
pub trait TensorOrScalar {
    /// The operand as a tensor for `op` with `lhs` on the left.
    fn to_operand(self, lhs: &Tensor, op: &'static str) -> Result<Tensor>;
}

impl TensorOrScalar for &Tensor {
    fn to_operand(self, _: &Tensor, _: &'static str) -> Result<Tensor> {
        Ok(self.clone())
    }
}

impl TensorOrScalar for Tensor {
    fn to_operand(self, _: &Tensor, _: &'static str) -> Result<Tensor> {
        Ok(self)
    }
}

impl TensorOrScalar for Result<Tensor> {
    fn to_operand(self, _: &Tensor, _: &'static str) -> Result<Tensor> {
        self
    }
}

impl TensorOrScalar for Scalar {
    fn to_operand(self, lhs: &Tensor, op: &'static str) -> Result<Tensor> {
        lhs.scalar_like(op, self)
    }
}

macro_rules! scalar_operands {
    ($($t:ty),*) => {
        $(
            impl TensorOrScalar for $t {
                fn to_operand(self, lhs: &Tensor, op: &'static str) -> Result<Tensor> {
                    lhs.scalar_like(op, Scalar::from(self))
                }
            }
        )*
    };
}
scalar_operands!(u8, u32, i32, i64, f16, bf16, f32, f64);

impl Tensor {
    /// `value` as a rank-0 tensor of this tensor's dtype on its device, for `op`: exact for
    /// integer dtypes (else an error), rounded to float dtypes.
    pub(crate) fn scalar_like(&self, op: &'static str, value: Scalar) -> Result<Tensor> {
        let v = value.to_dtype(self.dtype());
        if self.dtype().is_int() && v.to_dtype(value.dtype()) != value {
            let msg = format!(
                "the scalar {value} is not a {} value: integer tensors take scalars they hold exactly",
                self.dtype()
            );
            return Err(Error::InvalidParam { op, msg });
        }
        Tensor::full(v, (), self.dtype(), self.device())
    }
}

macro_rules! operators {
    ($($trait:ident $method:ident),*) => {
        $(
            impl<R: TensorOrScalar> std::ops::$trait<R> for &Tensor {
                type Output = Result<Tensor>;
                fn $method(self, rhs: R) -> Result<Tensor> {
                    Tensor::$method(self, rhs)
                }
            }

            impl<R: TensorOrScalar> std::ops::$trait<R> for Tensor {
                type Output = Result<Tensor>;
                fn $method(self, rhs: R) -> Result<Tensor> {
                    Tensor::$method(&self, rhs)
                }
            }

            impl std::ops::$trait<&Tensor> for Result<Tensor> {
                type Output = Result<Tensor>;
                fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                    Tensor::$method(&self?, rhs)
                }
            }

            impl std::ops::$trait<Tensor> for Result<Tensor> {
                type Output = Result<Tensor>;
                fn $method(self, rhs: Tensor) -> Result<Tensor> {
                    Tensor::$method(&self?, &rhs)
                }
            }

            // Only the literals' own types on the left: with two float (or integer) types there,
            // `1.0 - &x` would have no type to infer.
            scalar_lhs!($trait $method: i32, f64);
        )*
    };
}

/// `scalar op tensor`: the scalar becomes a tensor of the tensor's dtype first.
macro_rules! scalar_lhs {
    ($trait:ident $method:ident: $($t:ty),*) => {
        $(
            impl std::ops::$trait<&Tensor> for $t {
                type Output = Result<Tensor>;
                fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                    Tensor::$method(&rhs.scalar_like(stringify!($method), Scalar::from(self))?, rhs)
                }
            }

            impl std::ops::$trait<Tensor> for $t {
                type Output = Result<Tensor>;
                fn $method(self, rhs: Tensor) -> Result<Tensor> {
                    Tensor::$method(&rhs.scalar_like(stringify!($method), Scalar::from(self))?, &rhs)
                }
            }
        )*
    };
}
operators!(Add add, Sub sub, Mul mul, Div div);

impl std::ops::Neg for &Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        Tensor::neg(self)
    }
}

impl std::ops::Neg for Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        Tensor::neg(&self)
    }
}

macro_rules! broadcast_names {
    ($($name:ident => $op:ident),*) => {
        impl Tensor {
            $(
                #[doc = concat!("candle's name for [`Tensor::", stringify!($op), "`], which broadcasts already (every binary op here does).")]
                ///
                /// ```
                /// use rocm_wgpu_ops::{Device, Tensor};
                ///
                /// let dev = Device::cpu();
                /// let rows = Tensor::from_vec(vec![1f32, 2., 3., 4.], (2, 2), &dev)?;
                /// let col = Tensor::from_vec(vec![1f32, 2.], (2, 1), &dev)?;
                #[doc = concat!("assert_eq!(rows.", stringify!($name), "(&col)?.dims(), [2, 2]);")]
                /// # Ok::<(), rocm_wgpu_ops::Error>(())
                /// ```
                pub fn $name(&self, rhs: &Tensor) -> Result<Tensor> {
                    self.$op(rhs)
                }
            )*
        }
    };
}
broadcast_names!(
    broadcast_add => add, broadcast_sub => sub, broadcast_mul => mul, broadcast_div => div,
    broadcast_maximum => maximum, broadcast_minimum => minimum, broadcast_eq => eq, broadcast_ne => ne,
    broadcast_lt => lt, broadcast_le => le, broadcast_gt => gt, broadcast_ge => ge
);

#[cfg(test)]
mod tests {
    use crate::{DType, Device, Error, Tensor};

    #[test]
    fn operators_take_tensors_scalars_and_results() -> crate::Result<()> {
        let dev = Device::cpu();
        let a = Tensor::from_vec(vec![1f32, 2., 3.], 3, &dev)?;
        let b = Tensor::from_vec(vec![4f32, 5., 6.], 3, &dev)?;
        assert_eq!((&a + &b)?.to_vec::<f32>()?, [5., 7., 9.]);
        assert_eq!(((&a * 2.0)? - &b)?.to_vec::<f32>()?, [-2., -1., 0.]);
        assert_eq!((1.0 - &a)?.to_vec::<f32>()?, [0., -1., -2.]);
        assert_eq!((12 / &a)?.to_vec::<f32>()?, [12., 6., 4.]);
        assert_eq!(((&a + &b) * &a)?.to_vec::<f32>()?, [5., 14., 27.]);
        assert_eq!((-&a)?.to_vec::<f32>()?, [-1., -2., -3.]);
        let u = Tensor::from_vec(vec![1u8, 200, 3], 3, &dev)?;
        assert_eq!((&u + 55u8)?.to_vec::<u8>()?, [56, 255, 58]);
        for bad in [u.add(0.5), u.add(256), u.sub(-1), u.ge(f64::NAN)] {
            assert!(matches!(bad, Err(Error::InvalidParam { .. })), "{bad:?}");
        }
        let e = u.mul(0.5).unwrap_err().to_string();
        assert_eq!(
            e,
            "mul: invalid parameter: the scalar 0.5f64 is not a u8 value: integer tensors take scalars they hold exactly"
        );
        let h = a.to_dtype(DType::F16)?;
        assert_eq!(h.lt(2.5)?.to_vec::<u8>()?, [1, 1, 0]);
        Ok(())
    }
}
