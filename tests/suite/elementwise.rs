use crate::{Tol, View, assert_values, rand_tensor, same_as_cpu, suite, view_tensor};
use rocm_wgpu_ops::spec::elementwise::{BinaryOp, CmpOp, ScalarOp, UnaryOp};
use rocm_wgpu_ops::{DType, Device, Result, Tensor};

suite!(
    unary_matches_reference,
    unary_hand_computed,
    float_maps_match_reference,
    float_maps_hand_computed,
    f64_math_edge_cases,
    powf_special_values,
    clamp_matches_reference,
    binary_matches_reference,
    binary_hand_computed,
    cmp_matches_reference,
    cmp_hand_computed,
    where_cond_matches_reference,
    cast_matches_reference,
    cast_hand_computed,
);

/// The domain each unary op is tested on.
fn unary_range(op: UnaryOp, dtype: DType) -> (f64, f64) {
    match op {
        _ if dtype.is_int() => (-50.0, 50.0),
        UnaryOp::Log | UnaryOp::Sqrt => (0.05, 6.0),
        UnaryOp::Recip => (0.5, 4.0),
        UnaryOp::Exp => (-6.0, 6.0),
        _ => (-4.0, 4.0),
    }
}

/// Transcendentals may be a few ulps off the correctly rounded value.
fn unary_tol(op: UnaryOp, dtype: DType) -> Tol {
    let k = match op {
        UnaryOp::Neg
        | UnaryOp::Abs
        | UnaryOp::Ceil
        | UnaryOp::Floor
        | UnaryOp::Round
        | UnaryOp::Sign
        | UnaryOp::Relu => 1.0,
        _ => 4.0,
    };
    Tol::of(dtype).times(k)
}

async fn unary_matches_reference(dev: &Device) -> Result<()> {
    for &op in UnaryOp::ALL {
        for &dtype in op.dtypes() {
            let (lo, hi) = unary_range(op, dtype);
            for view in View::ALL {
                for shape in [&[5, 7][..], &[2, 3, 4], &[0, 3]] {
                    let what = format!("{op} {dtype} {view:?} {shape:?}");
                    same_as_cpu(dev, unary_tol(op, dtype), &what, |d| {
                        view_tensor(d, view, dtype, shape, 1, lo, hi)?.unary(op)
                    })
                    .await?;
                }
            }
        }
    }
    Ok(())
}

async fn unary_hand_computed(dev: &Device) -> Result<()> {
    let x = Tensor::from_vec(vec![-2.5f32, -0.5, 0.0, 0.5, 1.5, 2.0], [6], dev)?;
    assert_values(&x.round()?, &[6], &[-2f32, -0.0, 0.0, 0.0, 2.0, 2.0], 0.0).await?;
    assert_values(&x.ceil()?, &[6], &[-2f32, 0.0, 0.0, 1.0, 2.0, 2.0], 0.0).await?;
    assert_values(&x.floor()?, &[6], &[-3f32, -1.0, 0.0, 0.0, 1.0, 2.0], 0.0).await?;
    assert_values(&x.sign()?, &[6], &[-1f32, -1.0, 0.0, 1.0, 1.0, 1.0], 0.0).await?;
    assert_values(&x.relu()?, &[6], &[0f32, 0.0, 0.0, 0.5, 1.5, 2.0], 0.0).await?;
    assert_values(&x.abs()?, &[6], &[2.5f32, 0.5, 0.0, 0.5, 1.5, 2.0], 0.0).await?;
    assert_values(&x.neg()?, &[6], &[2.5f32, 0.5, 0.0, -0.5, -1.5, -2.0], 0.0).await?;
    assert_values(&x.sqr()?, &[6], &[6.25f32, 0.25, 0.0, 0.25, 2.25, 4.0], 0.0).await?;
    // The f64 math library of the WGSL path, where the device has f64 arithmetic.
    crate::unless_unsupported(dev, DType::F64, async || {
        let y = Tensor::from_vec(vec![0.0f64, 0.5, 1.0, 4.0], [4], dev)?;
        let e = 1e-12;
        assert_values(&y.exp()?, &[4], &[1.0, 1.648_721_270_700_128, std::f64::consts::E, 54.598_150_033_144_24], e)
            .await?;
        assert_values(&y.sqrt()?, &[4], &[0.0, std::f64::consts::FRAC_1_SQRT_2, 1.0, 2.0], e).await?;
        assert_values(
            &y.sin()?,
            &[4],
            &[0.0, 0.479_425_538_604_203, 0.841_470_984_807_896_5, -0.756_802_495_307_928_2],
            e,
        )
        .await?;
        assert_values(
            &y.cos()?,
            &[4],
            &[1.0, 0.877_582_561_890_372_8, 0.540_302_305_868_139_8, -0.653_643_620_863_611_9],
            e,
        )
        .await?;
        assert_values(
            &y.tanh()?,
            &[4],
            &[0.0, 0.462_117_157_260_009_8, 0.761_594_155_955_764_9, 0.999_329_299_739_067],
            e,
        )
        .await?;
        assert_values(
            &y.erf()?,
            &[4],
            &[0.0, 0.520_499_877_813_046_5, 0.842_700_792_949_714_9, 0.999_999_984_582_742_1],
            e,
        )
        .await?;
        assert_values(
            &y.gelu_erf()?,
            &[4],
            &[0.0, 0.345_731_230_637_006_56, 0.841_344_746_068_542_9, 3.999_873_315_032_667_5],
            e,
        )
        .await?;
        assert_values(
            &y.gelu()?,
            &[4],
            &[0.0, 0.345_714_009_825_143_94, 0.841_191_990_608_276_8, 3.999_929_754_051_807_5],
            e,
        )
        .await?;
        assert_values(
            &y.sigmoid()?,
            &[4],
            &[0.5, 0.622_459_331_201_854_6, 0.731_058_578_630_004_9, 0.982_013_790_037_908_5],
            e,
        )
        .await?;
        assert_values(
            &y.silu()?,
            &[4],
            &[0.0, 0.311_229_665_600_927_3, 0.731_058_578_630_004_9, 3.928_055_160_151_634],
            e,
        )
        .await?;
        Ok(())
    })
    .await?;
    let z = Tensor::from_vec(vec![1.0f32, 2.0, 0.5, 0.0], [4], dev)?;
    assert_values(&z.log()?, &[4], &[0.0f32, std::f32::consts::LN_2, -std::f32::consts::LN_2, f32::NEG_INFINITY], 1e-6)
        .await?;
    assert_values(&z.recip()?, &[4], &[1.0f32, 0.5, 2.0, f32::INFINITY], 0.0).await?;
    let i = Tensor::from_vec(vec![-3i64, 0, 5, i64::MIN], [4], dev)?;
    assert_values(&i.neg()?, &[4], &[3i64, 0, -5, i64::MIN], 0.0).await?;
    assert_values(&i.sign()?, &[4], &[-1i64, 0, 1, -1], 0.0).await?;
    assert_values(&i.relu()?, &[4], &[0i64, 0, 5, 0], 0.0).await?;
    let u = Tensor::from_vec(vec![0u8, 3, 20, 255], [4], dev)?;
    assert_values(&u.sqr()?, &[4], &[0u8, 9, 144, 1], 0.0).await?;
    assert_values(&u.sign()?, &[4], &[0u8, 1, 1, 1], 0.0).await?;
    assert_values(&u.abs()?, &[4], &[0u8, 3, 20, 255], 0.0).await?;
    let nan = Tensor::from_vec(vec![f32::NAN], [1], dev)?;
    assert!(nan.sign()?.to_vec_async::<f32>().await?[0].is_nan(), "sign(NaN) is NaN");
    assert!(nan.relu()?.to_vec_async::<f32>().await?[0].is_nan(), "relu(NaN) is NaN");
    Ok(())
}

async fn float_maps_match_reference(dev: &Device) -> Result<()> {
    for &dtype in DType::FLOAT {
        for view in View::ALL {
            let shape = [4, 6];
            let tol = Tol::of(dtype).times(4.0);
            let what = |op: ScalarOp| format!("{op} {dtype} {view:?}");
            same_as_cpu(dev, tol, &what(ScalarOp::Affine), |d| {
                view_tensor(d, view, dtype, &shape, 2, -3.0, 3.0)?.affine(1.5, -0.25)
            })
            .await?;
            same_as_cpu(dev, tol, &what(ScalarOp::Powf), |d| {
                view_tensor(d, view, dtype, &shape, 3, 0.1, 3.0)?.powf(2.5)
            })
            .await?;
            same_as_cpu(dev, tol, &what(ScalarOp::Elu), |d| {
                view_tensor(d, view, dtype, &shape, 4, -3.0, 3.0)?.elu(0.7)
            })
            .await?;
        }
    }
    Ok(())
}

async fn float_maps_hand_computed(dev: &Device) -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, -1.0], [3], dev)?;
    assert_values(&x.affine(2.0, 1.0)?, &[3], &[3f32, 5.0, -1.0], 0.0).await?;
    assert_values(&x.elu(1.0)?, &[3], &[1f32, 2.0, -0.632_120_56], 1e-6).await?;
    crate::unless_unsupported(dev, DType::F64, async || {
        let y = Tensor::from_vec(vec![4.0f64, 9.0, 2.0], [3], dev)?;
        assert_values(&y.powf(0.5)?, &[3], &[2.0, 3.0, std::f64::consts::SQRT_2], 1e-12).await
    })
    .await
}

/// `got` against `want` within `ulps` units in the last place; NaN matches NaN, and zeros and
/// infinities must match with their sign.
fn assert_ulps(what: &str, x: &[f64], got: &[f64], want: &[f64], ulps: u64) {
    let key = |v: f64| if v.is_sign_negative() { i64::MIN - v.to_bits() as i64 } else { v.to_bits() as i64 };
    for ((&x, &g), &w) in x.iter().zip(got).zip(want) {
        let ok = if w.is_nan() || g.is_nan() {
            w.is_nan() && g.is_nan()
        } else if w == 0.0 || w.is_infinite() {
            g == w && g.is_sign_negative() == w.is_sign_negative()
        } else {
            key(g).abs_diff(key(w)) <= ulps
        };
        assert!(ok, "{what}({x:e}): got {g:e}, want {w:e} (within {ulps} ulps)");
    }
}

/// The f64 library of the WGSL path (exp, log, sin, cos, tanh, erf, pow, and expm1 through
/// elu) at the ends of its range, against Rust's std (and libm's erf), within 2 ulps.
async fn f64_math_edge_cases(dev: &Device) -> Result<()> {
    crate::unless_unsupported(dev, DType::F64, async || {
        let check = async |what: &str,
                           xs: &[f64],
                           op: &dyn Fn(&Tensor) -> Result<Tensor>,
                           f: &dyn Fn(f64) -> f64|
               -> Result<()> {
            let got = op(&Tensor::from_vec(xs.to_vec(), [xs.len()], dev)?)?.to_vec_async::<f64>().await?;
            let want: Vec<f64> = xs.iter().map(|&x| f(x)).collect();
            assert_ulps(what, xs, &got, &want, 2);
            Ok(())
        };
        let (nan, inf) = (f64::NAN, f64::INFINITY);
        // Overflow just past 709.78, the subnormal tail down to 2^-1074, then 0.
        let xs = [709.0, 709.78, 710.0, -708.0, -740.0, -745.0, -745.2, 1e-20, -0.0, 30.5, nan, inf, -inf];
        check("exp", &xs, &|t| t.exp(), &f64::exp).await?;
        // Subnormal and huge arguments, 0 (-inf), negatives (NaN), around 1.
        let xs = [
            5e-324,
            2.5e-310,
            2.2250738585072014e-308,
            1e-300,
            0.0,
            -0.0,
            -1.0,
            1.0,
            1.0 + 1e-15,
            0.75,
            1e300,
            f64::MAX,
            nan,
            inf,
        ];
        check("log", &xs, &|t| t.log(), &f64::ln).await?;
        // Cody-Waite reduction up to 2^20 pi/2, Payne-Hanek past it; near multiples of pi/2.
        let pi = std::f64::consts::PI;
        let xs = [1e-9, 0.785, 2.0, -pi, 100.0, 1e5, 355.0, 1.6e6, 1e7, 6.5e12, 1e22, 1e300, f64::MAX, -0.0, nan, inf];
        check("sin", &xs, &|t| t.sin(), &f64::sin).await?;
        check("cos", &xs, &|t| t.cos(), &f64::cos).await?;
        let xs = [20.0, -20.0, 0.3, 0.55, -0.9, 3.0, 1e-10, -1e-300, 0.0, -0.0, nan, inf, -inf];
        check("tanh", &xs, &|t| t.tanh(), &f64::tanh).await?;
        let xs = [6.0, -6.0, 0.5, 0.9, 1.2, 2.0, 3.0, 5.5, 1e-10, -1e-300, -0.0, nan, inf, -inf];
        check("erf", &xs, &|t| t.erf(), &libm::erf).await?;
        // elu(x, 1) = expm1(x) below 0: expm1(-1e-10) is -1e-10 to 2^-53, which exp(x) - 1 is not.
        let xs = [-1e-10, -1e-300, -0.3, -1.0, -30.0, -800.0];
        check("elu", &xs, &|t| t.elu(1.0), &f64::exp_m1).await?;
        // Scalars past f32's range and subnormal reach the kernel exactly.
        check("affine(1e300, -5e-324)", &[2.0, -3.0, 0.0], &|t| t.affine(1e300, -5e-324), &|x| x * 1e300 - 5e-324)
            .await?;
        check("affine(3e-310, 1e-310)", &[2.0, -3.0, 0.0], &|t| t.affine(3e-310, 1e-310), &|x| x * 3e-310 + 1e-310)
            .await?;
        // Negative bases with integer exponents, results near overflow and underflow.
        for (e, xs) in [
            (3.0, &[-2.0, -0.5, 1e100, -1e103, 7.0][..]),
            (-2.0, &[-3.0, 1e-155, 1e160]),
            (0.5, &[-4.0, 2.0, 5e-324]),
            (709.78, &[std::f64::consts::E, 0.99]),
            (1e19, &[1.0000000000000002, -1.0, 0.9999999999999999]),
        ] {
            check(&format!("powf({e})"), xs, &|t| t.powf(e), &|x| x.powf(e)).await?;
        }
        Ok(())
    })
    .await
}

/// powf's special values (Rust's powf, C99 pow) in f32 and f64: NaN bases, zeros and
/// infinities of both signs, negative bases, infinite exponents.
async fn powf_special_values(dev: &Device) -> Result<()> {
    let (nan, inf) = (f64::NAN, f64::INFINITY);
    let xs = [-2.0, -0.5, -0.0, 0.0, 0.5, 1.0, -1.0, 2.0, 4.0, -inf, inf, nan];
    for &dtype in &[DType::F32, DType::F64] {
        crate::unless_unsupported(dev, dtype, async || {
            // (The spec refuses a NaN exponent.)
            for e in [3.0, -1.0, 2.0, -2.0, 0.5, -0.5, 0.0, -0.0, inf, -inf, 1.0] {
                let got: Vec<f64> = if dtype == DType::F32 {
                    let x = Tensor::from_vec(xs.iter().map(|&v| v as f32).collect::<Vec<_>>(), [xs.len()], dev)?;
                    x.powf(e)?.to_vec_async::<f32>().await?.into_iter().map(f64::from).collect()
                } else {
                    Tensor::from_vec(xs.to_vec(), [xs.len()], dev)?.powf(e)?.to_vec_async::<f64>().await?
                };
                let want: Vec<f64> = xs.iter().map(|&x| x.powf(e)).collect();
                // f64 within an ulp; f32 (exp2 and log2 of the driver) within 4 of its own ulps.
                assert_ulps(
                    &format!("{dtype} powf({e})"),
                    &xs,
                    &got,
                    &want,
                    if dtype == DType::F32 { 1 << 31 } else { 1 },
                );
            }
            Ok(())
        })
        .await?;
    }
    Ok(())
}

async fn clamp_matches_reference(dev: &Device) -> Result<()> {
    for &dtype in DType::ALL {
        for view in View::ALL {
            let what = format!("clamp {dtype} {view:?}");
            same_as_cpu(dev, Tol::EXACT, &what, |d| {
                view_tensor(d, view, dtype, &[5, 4], 5, -40.0, 40.0)?.clamp(3.0f64, 20.5f64)
            })
            .await?;
        }
    }
    let i = Tensor::from_vec(vec![-5i64, 0, 5], [3], dev)?;
    assert_values(&i.clamp(-1i64, 3i64)?, &[3], &[-1i64, 0, 3], 0.0).await?;
    let f = Tensor::from_vec(vec![-5f32, f32::NAN, 0.25], [3], dev)?;
    let c = f.clamp(-1.0f32, 0.0f32)?.to_vec_async::<f32>().await?;
    assert_eq!((c[0], c[2]), (-1.0, 0.0));
    assert!(c[1].is_nan(), "clamp keeps NaN");
    Ok(())
}

/// Operand shapes that broadcast: same, trailing, both sides, rank 0, empty.
const BROADCASTS: &[(&[usize], &[usize])] =
    &[(&[3, 4], &[3, 4]), (&[3, 4], &[4]), (&[2, 1, 4], &[3, 1]), (&[], &[5]), (&[0, 4], &[4]), (&[4, 1], &[4, 0])];

async fn binary_matches_reference(dev: &Device) -> Result<()> {
    for &op in BinaryOp::ALL {
        for &dtype in op.dtypes() {
            let (lo, hi) = if dtype.is_int() { (-100.0, 100.0) } else { (-4.0, 4.0) };
            for &(ls, rs) in BROADCASTS {
                for view in View::ALL {
                    let what = format!("{op} {dtype} {ls:?} {rs:?} {view:?}");
                    same_as_cpu(dev, Tol::of(dtype), &what, |d| {
                        let a = view_tensor(d, view, dtype, ls, 6, lo, hi)?;
                        let b = rand_tensor(d, dtype, rs, 7, lo, hi)?;
                        a.binary(&b, op)
                    })
                    .await?;
                }
            }
        }
    }
    Ok(())
}

async fn binary_hand_computed(dev: &Device) -> Result<()> {
    let a = Tensor::from_vec(vec![7i64, -7, 5, i64::MIN], [4], dev)?;
    let b = Tensor::from_vec(vec![2i64, 2, 0, -1], [4], dev)?;
    assert_values(&a.div(&b)?, &[4], &[3i64, -3, 0, i64::MIN], 0.0).await?;
    let u = Tensor::from_vec(vec![200u8, 100, 3], [3], dev)?;
    let v = Tensor::from_vec(vec![100u8, 200, 5], [3], dev)?;
    assert_values(&u.add(&v)?, &[3], &[44u8, 44, 8], 0.0).await?;
    assert_values(&u.sub(&v)?, &[3], &[100u8, 156, 254], 0.0).await?;
    assert_values(&u.mul(&v)?, &[3], &[32u8, 32, 15], 0.0).await?;
    let x = Tensor::from_vec(vec![1f32, 2., 3., 4., 5., 6.], [2, 3], dev)?;
    let col = Tensor::from_vec(vec![10f32, 20.], [2, 1], dev)?;
    assert_values(&x.add(&col)?, &[2, 3], &[11f32, 12., 13., 24., 25., 26.], 0.0).await?;
    assert_values(&x.t()?.mul(&col.t()?)?, &[3, 2], &[10f32, 80., 20., 100., 30., 120.], 0.0).await?;
    let n = Tensor::from_vec(vec![f32::NAN, 1.0, 2.0], [3], dev)?;
    let m = Tensor::from_vec(vec![0.0f32, f32::NAN, 1.0], [3], dev)?;
    for r in [n.maximum(&m)?, n.minimum(&m)?] {
        let r = r.to_vec_async::<f32>().await?;
        assert!(r[0].is_nan() && r[1].is_nan(), "maximum/minimum propagate NaN: {r:?}");
    }
    assert_values(&n.maximum(&m)?.narrow(0, 2, 1)?, &[1], &[2f32], 0.0).await?;
    assert_values(&n.minimum(&m)?.narrow(0, 2, 1)?, &[1], &[1f32], 0.0).await?;
    Ok(())
}

async fn cmp_matches_reference(dev: &Device) -> Result<()> {
    for &op in CmpOp::ALL {
        for &dtype in op.dtypes() {
            // A small range makes ties common.
            let (lo, hi) = if dtype.is_int() { (0.0, 4.0) } else { (-2.0, 2.0) };
            for &(ls, rs) in &BROADCASTS[..4] {
                for view in View::ALL {
                    let what = format!("{op} {dtype} {ls:?} {rs:?} {view:?}");
                    same_as_cpu(dev, Tol::EXACT, &what, |d| {
                        let a = view_tensor(d, view, dtype, ls, 8, lo, hi)?.to_dtype(DType::I64)?.to_dtype(dtype)?;
                        let b = rand_tensor(d, dtype, rs, 9, lo, hi)?.to_dtype(DType::I64)?.to_dtype(dtype)?;
                        a.cmp(&b, op)
                    })
                    .await?;
                }
            }
        }
    }
    Ok(())
}

async fn cmp_hand_computed(dev: &Device) -> Result<()> {
    let a = Tensor::from_vec(vec![1f32, 2., 3., f32::NAN], [4], dev)?;
    let b = Tensor::from_vec(vec![2f32, 2., 2., f32::NAN], [4], dev)?;
    assert_values(&a.lt(&b)?, &[4], &[1u8, 0, 0, 0], 0.0).await?;
    assert_values(&a.le(&b)?, &[4], &[1u8, 1, 0, 0], 0.0).await?;
    assert_values(&a.gt(&b)?, &[4], &[0u8, 0, 1, 0], 0.0).await?;
    assert_values(&a.ge(&b)?, &[4], &[0u8, 1, 1, 0], 0.0).await?;
    assert_values(&a.eq(&b)?, &[4], &[0u8, 1, 0, 0], 0.0).await?;
    assert_values(&a.ne(&b)?, &[4], &[1u8, 0, 1, 1], 0.0).await?;
    let i = Tensor::from_vec(vec![-1i64, 5], [2], dev)?;
    let j = Tensor::from_vec(vec![0i64], [1], dev)?;
    assert_values(&i.lt(&j)?, &[2], &[1u8, 0], 0.0).await?;
    Ok(())
}

async fn where_cond_matches_reference(dev: &Device) -> Result<()> {
    for &cdt in DType::INT {
        for &dtype in DType::ALL {
            for view in View::ALL {
                let what = format!("where_cond {cdt} {dtype} {view:?}");
                same_as_cpu(dev, Tol::EXACT, &what, |d| {
                    let c = rand_tensor(d, cdt, &[3, 1], 10, 0.0, 2.0)?;
                    let t = view_tensor(d, view, dtype, &[3, 4], 11, -9.0, 9.0)?;
                    let f = rand_tensor(d, dtype, &[4], 12, -9.0, 9.0)?;
                    c.where_cond(&t, &f)
                })
                .await?;
            }
        }
    }
    let c = Tensor::from_vec(vec![1u32, 0, 2], [3], dev)?;
    let t = Tensor::from_vec(vec![1i64, 2, 3], [3], dev)?;
    let f = Tensor::from_vec(vec![10i64, 20, 30], [3], dev)?;
    assert_values(&c.where_cond(&t, &f)?, &[3], &[1i64, 20, 3], 0.0).await?;
    Ok(())
}

async fn cast_matches_reference(dev: &Device) -> Result<()> {
    for &from in DType::ALL {
        for &to in DType::ALL {
            for view in View::ALL {
                let what = format!("cast {from} -> {to} {view:?}");
                // Values every dtype holds (u8 needs [0, 255]) with fractions for float sources.
                same_as_cpu(dev, Tol::of(to), &what, |d| {
                    view_tensor(d, view, from, &[6, 5], 13, 0.0, 250.0)?.to_dtype(to)
                })
                .await?;
                same_as_cpu(dev, Tol::of(to), &what, |d| {
                    view_tensor(d, view, from, &[6, 5], 14, -100.0, 100.0)?.to_dtype(to)
                })
                .await?;
            }
        }
    }
    Ok(())
}

async fn cast_hand_computed(dev: &Device) -> Result<()> {
    let f = Tensor::from_vec(vec![300.7f32, -5.5, f32::NAN, 1.5], [4], dev)?;
    assert_values(&f.to_dtype(DType::U8)?, &[4], &[255u8, 0, 0, 1], 0.0).await?;
    assert_values(&f.to_dtype(DType::U32)?, &[4], &[300u32, 0, 0, 1], 0.0).await?;
    assert_values(&f.to_dtype(DType::I64)?, &[4], &[300i64, -5, 0, 1], 0.0).await?;
    // u32 past 2^31 widens without sign extension; i64 scalars with such low words survive.
    let big = Tensor::from_vec(vec![3_000_000_000u32, u32::MAX], [2], dev)?;
    assert_values(&big.to_dtype(DType::I64)?, &[2], &[3_000_000_000i64, 4_294_967_295], 0.0).await?;
    let wide = Tensor::from_vec(vec![0i64, 5_000_000_000, 3_500_000_000], [3], dev)?;
    let clamped = wide.clamp(3_000_000_000i64, 4_000_000_000i64)?;
    assert_values(&clamped, &[3], &[3_000_000_000i64, 4_000_000_000, 3_500_000_000], 0.0).await?;
    let steps = Tensor::arange_step(-3_000_000_000i64, 7_000_000_000, 3_000_000_000, dev)?;
    assert_values(&steps, &[4], &[-3_000_000_000i64, 0, 3_000_000_000, 6_000_000_000], 0.0).await?;
    // f64 sources where the device has f64: NaN gives 0 (a `v != v` test was folded away on
    // lavapipe: i64::MIN, the fuzz test's find), infinities and values past the range saturate.
    if crate::float_dtypes(dev).contains(&DType::F64) {
        let g = Tensor::from_vec(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e19, -1e19, -2.5], [6], dev)?;
        let (max, min) = (i64::MAX, i64::MIN);
        assert_values(&g.to_dtype(DType::I64)?, &[6], &[0i64, max, min, max, min, -2], 0.0).await?;
        assert_values(&g.to_dtype(DType::U32)?, &[6], &[0u32, u32::MAX, 0, u32::MAX, 0, 0], 0.0).await?;
        assert_values(&g.to_dtype(DType::U8)?, &[6], &[0u8, 255, 0, 255, 0, 0], 0.0).await?;
    }
    let i = Tensor::from_vec(vec![-1i64, 256, 16_777_217], [3], dev)?;
    assert_values(&i.to_dtype(DType::U8)?, &[3], &[255u8, 0, 1], 0.0).await?;
    assert_values(&i.to_dtype(DType::U32)?, &[3], &[u32::MAX, 256, 16_777_217], 0.0).await?;
    assert_values(&i.to_dtype(DType::F32)?, &[3], &[-1f32, 256.0, 16_777_216.0], 0.0).await?;
    let h = Tensor::from_vec(vec![(1.0f32 + 1.0 / 1024.0), 65520.0, 2.0e-8], [3], dev)?.to_dtype(DType::F16)?;
    assert_values(&h.to_dtype(DType::F32)?, &[3], &[(1.0f32 + 1.0 / 1024.0), f32::INFINITY, 0.0], 0.0).await?;
    let b = Tensor::from_vec(vec![(1.0f32 + 1.0 / 256.0), 3.0e38], [2], dev)?.to_dtype(DType::BF16)?;
    crate::assert_floats(&b, &[2], &[1.0, 3.004_055_270_473_91e38], 0.0).await?;
    Ok(())
}
