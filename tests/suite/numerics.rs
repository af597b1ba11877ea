//! IEEE special values on every backend (the WGSL path is where they went wrong): NaN through
//! every float op, sin and cos over the whole float range, and the subnormal rule written in
//! `spec::elementwise`: what it keeps bit-exact, what it computes right, which ranges hold.

use crate::{cpu, suite, unless_unsupported};
use half::{bf16, f16};
use rocm_wgpu_ops::spec::elementwise::{BinaryOp, CmpOp, UnaryOp};
use rocm_wgpu_ops::{DType, Device, Result, Tensor, WithDType};

suite!(
    nan_through_every_float_op,
    sin_cos_over_the_whole_f32_range,
    sin_cos_of_every_half_value,
    log_sqrt_sin_of_subnormals,
    ops_stay_in_range_at_subnormals,
    subnormals_kept_bit_exact,
);

/// A float dtype as its bits.
trait Float: WithDType + std::fmt::LowerExp {
    const SIGN: u64;
    fn bits(self) -> u64;
    fn of_bits(b: u64) -> Self;
}

macro_rules! float {
    ($t:ty, $sign:expr, $u:ty) => {
        impl Float for $t {
            const SIGN: u64 = $sign;
            fn bits(self) -> u64 {
                self.to_bits() as u64
            }
            fn of_bits(b: u64) -> Self {
                <$t>::from_bits(b as $u)
            }
        }
    };
}
float!(f32, 1 << 31, u32);
float!(f64, 1 << 63, u64);
float!(f16, 1 << 15, u16);
float!(bf16, 1 << 15, u16);

/// Units in the last place between two non-NaN floats of one dtype (zeros of both signs are 0
/// apart).
fn ulps<T: Float>(a: T, b: T) -> u64 {
    let key = |v: T| {
        let b = v.bits();
        if b & T::SIGN != 0 { -((b & !T::SIGN) as i64) } else { b as i64 }
    };
    key(a).abs_diff(key(b))
}

/// The non-zero subnormals of a dtype with `mantissa` bits, sampled: the smallest few, powers
/// of two, the largest; positive then negative.
fn subnormals<T: Float>(mantissa: u32) -> Vec<T> {
    let top = (1u64 << mantissa) - 1;
    let mut m: Vec<u64> = vec![1, 2, 3, 5, top - 1, top, top / 3];
    m.extend((2..mantissa).map(|k| 1 << k));
    let pos: Vec<T> = m.iter().map(|&b| T::of_bits(b)).collect();
    let neg: Vec<T> = m.iter().map(|&b| T::of_bits(b | T::SIGN)).collect();
    [pos, neg].concat()
}

fn vec_of<T: Float>(dev: &Device, v: &[T]) -> Result<Tensor> {
    Tensor::from_vec(v.to_vec(), [v.len()], dev)
}

/// `f` on `dev` gives the cpu reference's bytes exactly.
async fn same_bits(dev: &Device, what: &str, f: impl Fn(&Device) -> Result<Tensor>) -> Result<()> {
    let what = what.to_string();
    crate::later::check(&[&f(dev)?, &f(&cpu())?], async move |t| {
        let (got, want) = (t[0].to_cpu_storage_async().await?, t[1].to_cpu_storage_async().await?);
        assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
        assert!(got.as_bytes() == want.as_bytes(), "{what}: got {got:?}, want {want:?}");
        Ok(())
    })
    .await
}

async fn nan_through<T: Float>(dev: &Device) -> Result<()> {
    let dt = T::DTYPE;
    let xs: Vec<T> = [f64::NAN, 0.5, -f64::NAN, -3.0, f64::NAN].iter().map(|&v| T::from_f64(v)).collect();
    let nan_at = async |t: Tensor, what: &str| -> Result<()> {
        let (xs, what) = (xs.clone(), what.to_string());
        crate::later::check(&[&t], async move |t| {
            let got = t[0].to_vec_async::<T>().await?;
            for (k, (&x, &y)) in xs.iter().zip(&got).enumerate() {
                if x.to_f64().is_nan() {
                    assert!(y.to_f64().is_nan(), "{what} {dt}: NaN at {k} gave {y}; all {got:?}");
                }
            }
            Ok(())
        })
        .await
    };
    let x = vec_of(dev, &xs)?;
    for &op in UnaryOp::ALL.iter().filter(|o| o.dtypes().contains(&dt)) {
        nan_at(x.unary(op)?, op.name()).await?;
    }
    nan_at(x.affine(2.0, 1.0)?, "affine").await?;
    nan_at(x.powf(2.5)?, "powf").await?;
    nan_at(x.elu(1.0)?, "elu").await?;
    nan_at(x.clamp(-1.0f64, 1.0f64)?, "clamp").await?;
    let y = vec_of(dev, &[T::from_f64(1.0); 5])?;
    for &op in BinaryOp::ALL {
        nan_at(x.binary(&y, op)?, op.name()).await?;
        nan_at(y.binary(&x, op)?, op.name()).await?;
    }
    Ok(())
}

/// Every float op maps NaN to NaN (a driver's tanh gave -1 for it).
async fn nan_through_every_float_op(dev: &Device) -> Result<()> {
    nan_through::<f32>(dev).await?;
    nan_through::<f16>(dev).await?;
    nan_through::<bf16>(dev).await?;
    unless_unsupported(dev, DType::F64, || nan_through::<f64>(dev)).await
}

/// `op` of every `x` within `tol` ulps of `f(x)` (in f64, rounded once to `T`); NaN for NaN.
async fn within_ulps<T: Float>(
    dev: &Device,
    what: &str,
    xs: &[T],
    op: impl Fn(&Tensor) -> Result<Tensor>,
    f: impl Fn(f64) -> f64,
    tol: u64,
) -> Result<()> {
    let want: Vec<T> = xs.iter().map(|&x| T::from_f64(f(x.to_f64()))).collect();
    let (xs, what) = (xs.to_vec(), what.to_string());
    crate::later::check(&[&op(&vec_of(dev, &xs)?)?], async move |t| {
        let got = t[0].to_vec_async::<T>().await?;
        for ((&x, &g), &want) in xs.iter().zip(&got).zip(&want) {
            if want.to_f64().is_nan() || g.to_f64().is_nan() {
                assert!(want.to_f64().is_nan() && g.to_f64().is_nan(), "{what}({x:e}) = {g:e}, want {want:e}");
                continue;
            }
            let d = ulps(g, want);
            assert!(d <= tol, "{what}({x:e}) = {g:e}, want {want:e}: {d} ulps (tolerance {tol})");
        }
        Ok(())
    })
    .await
}

/// sin and cos of f32 to a few ulp everywhere: WGSL's builtins hold on [-pi, pi] only.
async fn sin_cos_over_the_whole_f32_range(dev: &Device) -> Result<()> {
    let mut xs: Vec<f32> = vec![
        1e30,
        -1e30,
        1e10,
        1e5,
        355.0,
        f32::MAX,
        f32::MIN,
        // The f32 closest to a multiple of pi/2, and the ends of the direct range.
        16_367_173.0 * 2f32.powi(72),
        std::f32::consts::FRAC_PI_4,
        f32::from_bits(std::f32::consts::FRAC_PI_4.to_bits() + 1),
        1e-3,
        0.0,
        -0.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    // Every binade from 2^-20 to 2^127, eight mantissas each, both signs.
    for e in -20..128 {
        for m in 0..8 {
            let x = (1.0 + m as f32 / 8.0 + 1.0 / 1024.0) * 2f32.powi(e);
            xs.extend([x, -x]);
        }
    }
    // Next to multiples of pi/2, where the reduction cancels most bits.
    for k in 1..500 {
        let x = (k as f64 * std::f64::consts::FRAC_PI_2) as f32;
        xs.extend([x, f32::from_bits(x.to_bits() - 1), f32::from_bits(x.to_bits() + 1)]);
    }
    within_ulps(dev, "sin", &xs, |t| t.sin(), f64::sin, 4).await?;
    within_ulps(dev, "cos", &xs, |t| t.cos(), f64::cos, 4).await?;
    // Signed zeros are kept.
    let z = vec_of(dev, &[0f32, -0.0])?.sin()?.to_vec_async::<f32>().await?;
    assert_eq!((z[0].to_bits(), z[1].to_bits()), (0, 1 << 31), "sin(+-0) keeps the sign: {z:?}");
    Ok(())
}

/// Every f16 and every bf16 value through sin and cos, within an ulp of the true value rounded.
async fn sin_cos_of_every_half_value(dev: &Device) -> Result<()> {
    let h: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
    within_ulps(dev, "sin f16", &h, |t| t.sin(), f64::sin, 1).await?;
    within_ulps(dev, "cos f16", &h, |t| t.cos(), f64::cos, 1).await?;
    let b: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
    within_ulps(dev, "sin bf16", &b, |t| t.sin(), f64::sin, 1).await?;
    within_ulps(dev, "cos bf16", &b, |t| t.cos(), f64::cos, 1).await
}

async fn log_sqrt_sin_of<T: Float>(dev: &Device, mantissa: u32, tol: u64) -> Result<()> {
    let dt = T::DTYPE;
    let pos: Vec<T> = subnormals::<T>(mantissa).into_iter().filter(|v| v.to_f64() > 0.0).collect();
    // The smallest normal, and the subnormals: lavapipe's log took every one of them as it.
    let mut xs = pos.clone();
    xs.push(T::of_bits(1 << mantissa));
    within_ulps(dev, &format!("log {dt}"), &xs, |t| t.log(), f64::ln, tol).await?;
    within_ulps(dev, &format!("sqrt {dt}"), &xs, |t| t.sqrt(), f64::sqrt, tol.min(2)).await?;
    within_ulps(dev, &format!("sin {dt}"), &xs, |t| t.sin(), f64::sin, 0).await
}

/// log, sqrt and sin of subnormals are their true values, whether or not the driver flushes.
async fn log_sqrt_sin_of_subnormals(dev: &Device) -> Result<()> {
    log_sqrt_sin_of::<f32>(dev, 23, 4).await?;
    log_sqrt_sin_of::<bf16>(dev, 7, 1).await?;
    log_sqrt_sin_of::<f16>(dev, 10, 1).await?;
    unless_unsupported(dev, DType::F64, || log_sqrt_sin_of::<f64>(dev, 52, 2)).await
}

async fn in_range<T: Float>(dev: &Device, mantissa: u32) -> Result<()> {
    let dt = T::DTYPE;
    let mut xs = subnormals::<T>(mantissa);
    xs.extend([T::of_bits(0), T::of_bits(T::SIGN)]);
    let x = vec_of(dev, &xs)?;
    let (relu, sign) = (x.relu()?.to_vec_async::<T>().await?, x.sign()?.to_vec_async::<T>().await?);
    let (log, sqrt) = (x.log()?.to_vec_async::<T>().await?, x.sqrt()?.to_vec_async::<T>().await?);
    for (k, &v) in xs.iter().enumerate() {
        let (v64, negative) = (v.to_f64(), v.bits() & T::SIGN != 0);
        let what = format!("{dt} {v:e} (bits {:#x})", v.bits());
        assert!(relu[k].to_f64() >= 0.0, "relu({what}) = {:e}", relu[k]);
        assert!(v64 < 0.0 || relu[k].bits() == v.bits(), "relu({what}) = {:e} is not x", relu[k]);
        let want_sign = if v64 == 0.0 {
            v64
        } else if negative {
            -1.0
        } else {
            1.0
        };
        assert!(sign[k].bits() == T::from_f64(want_sign).bits(), "sign({what}) = {:e}", sign[k]);
        if v64 < 0.0 {
            assert!(log[k].to_f64().is_nan(), "log({what}) = {:e}, not NaN", log[k]);
            assert!(sqrt[k].to_f64().is_nan(), "sqrt({what}) = {:e}, not NaN", sqrt[k]);
        } else if v64 == 0.0 {
            assert!(log[k].to_f64() == f64::NEG_INFINITY, "log({what}) = {:e}", log[k]);
            assert!(sqrt[k].bits() == v.bits(), "sqrt({what}) = {:e}", sqrt[k]);
        }
    }
    let clamped = x.clamp(0.0f64, 1.0f64)?.to_vec_async::<T>().await?;
    assert!(clamped.iter().all(|c| (0.0..=1.0).contains(&c.to_f64())), "clamp {dt} to [0, 1]: {clamped:?}");
    Ok(())
}

/// relu >= 0, sign in {-1, 0, 1}, log and sqrt of a negative are NaN, clamp stays within its
/// bounds: at subnormals, which a flushing driver compares as zeros.
async fn ops_stay_in_range_at_subnormals(dev: &Device) -> Result<()> {
    in_range::<f32>(dev, 23).await?;
    in_range::<bf16>(dev, 7).await?;
    in_range::<f16>(dev, 10).await?;
    unless_unsupported(dev, DType::F64, || in_range::<f64>(dev, 52)).await
}

async fn bit_exact<T: Float>(dev: &Device, mantissa: u32) -> Result<()> {
    let dt = T::DTYPE;
    let mut xs = subnormals::<T>(mantissa);
    xs.extend([T::of_bits(0), T::of_bits(T::SIGN), T::from_f64(1.0)]);
    let n = xs.len();
    let x = |d: &Device| vec_of(d, &xs);
    // Pairs of neighbouring subnormals, of either sign, and a subnormal against zero.
    let y = |d: &Device| {
        let mut ys = xs.clone();
        ys.rotate_left(1);
        ys[0] = T::of_bits(0);
        vec_of(d, &ys)
    };
    let w = |what: &str| format!("{what} {dt} of subnormals");
    for op in [UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Sign, UnaryOp::Relu, UnaryOp::Ceil, UnaryOp::Floor, UnaryOp::Round]
    {
        same_bits(dev, &w(op.name()), |d| x(d)?.unary(op)).await?;
    }
    same_bits(dev, &w("clamp"), |d| x(d)?.clamp(T::of_bits(2).to_f64(), 1.0f64)).await?;
    same_bits(dev, &w("maximum"), |d| x(d)?.maximum(&y(d)?)).await?;
    same_bits(dev, &w("minimum"), |d| x(d)?.minimum(&y(d)?)).await?;
    for &op in CmpOp::ALL {
        same_bits(dev, &w(op.name()), |d| x(d)?.cmp(&y(d)?, op)).await?;
    }
    // Data movement: copies of views, concatenation, the index ops, where_cond.
    same_bits(dev, &w("contiguous of a transpose"), |d| x(d)?.reshape([1, n])?.broadcast_as([3, n])?.t()?.contiguous())
        .await?;
    same_bits(dev, &w("narrow"), |d| x(d)?.narrow(0, 1, n - 2)?.contiguous()).await?;
    same_bits(dev, &w("cat"), |d| Tensor::cat(&[&x(d)?, &y(d)?], 0)).await?;
    let ids: Vec<u32> = (0..n as u32).rev().collect();
    same_bits(dev, &w("index_select"), |d| x(d)?.index_select(&Tensor::from_vec(ids.clone(), [n], d)?, 0)).await?;
    same_bits(dev, &w("gather"), |d| x(d)?.gather(&Tensor::from_vec(ids.clone(), [n], d)?, 0)).await?;
    let cond: Vec<u8> = (0..n).map(|k| (k % 2) as u8).collect();
    same_bits(dev, &w("where_cond"), |d| Tensor::from_vec(cond.clone(), [n], d)?.where_cond(&x(d)?, &y(d)?)).await?;
    // Casts between the f32-computed dtypes (a subnormal of one is normal or zero in another).
    for to in [DType::F32, DType::F16, DType::BF16] {
        same_bits(dev, &w(&format!("cast to {to}")), |d| x(d)?.to_dtype(to)).await?;
    }
    Ok(())
}

/// Subnormals come out bit-exact where the spec says so (a flushing driver gave 0 for neg,
/// abs, maximum, minimum, clamp and casts).
async fn subnormals_kept_bit_exact(dev: &Device) -> Result<()> {
    bit_exact::<f32>(dev, 23).await?;
    bit_exact::<bf16>(dev, 7).await?;
    bit_exact::<f16>(dev, 10).await?;
    unless_unsupported(dev, DType::F64, async || {
        let xs = subnormals::<f64>(52);
        for op in [UnaryOp::Neg, UnaryOp::Abs] {
            same_bits(dev, &format!("{} f64 of subnormals", op.name()), |d| vec_of(d, &xs)?.unary(op)).await?;
        }
        same_bits(dev, "contiguous f64 of subnormals", |d| {
            vec_of(d, &xs)?.reshape([2, xs.len() / 2])?.t()?.contiguous()
        })
        .await
    })
    .await
}
