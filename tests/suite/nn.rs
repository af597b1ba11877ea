use crate::{Tol, View, assert_close, assert_values, rand_tensor, same_as_cpu, suite, unless_unsupported, view_tensor};
use rocm_wgpu_ops::spec::nn::NnOp;
use rocm_wgpu_ops::{CpuStorage, DType, Device, Result, Tensor};

suite!(
    softmax_matches_reference,
    layer_norm_matches_reference,
    rms_norm_matches_reference,
    batch_norm_matches_reference,
    softmax_hand_computed,
    norms_hand_computed,
    batch_norm_hand_computed,
    softmax_rows_sum_to_one,
    exp_log_softmax_is_softmax,
    softmax_large_inputs_do_not_overflow,
    layer_norm_rows_are_standardised,
    batch_norm_unit_stats_is_identity,
    lines_of_every_length_match_reference,
    special_values_match_reference,
    half_lines_past_the_half_range_match_reference,
    layer_norm_large_offsets_keep_the_spread,
    layer_norm_constant_lines_are_zero,
);
crate::tests!(
    #[cfg(not(target_family = "wasm"))]
    line_ops_without_subgroups_match_reference
);

/// Each output goes through a handful of roundings in the computing precision (max, exp, sum,
/// log or divide; mean, variance, sqrt, scale, shift) on top of the one rounding to the dtype.
fn tol(dtype: DType) -> Tol {
    Tol::of(dtype).times(8.0)
}

/// Matches the cpu reference, and on `dev` equals `op` of fresh contiguous copies of the
/// inputs (so strided, offset and stride-0 reads are checked against row-major data even on
/// the cpu).
async fn check(
    dev: &Device,
    tol: Tol,
    what: &str,
    inputs: impl Fn(&Device) -> Result<Inputs>,
    op: impl Fn(&Inputs) -> Result<Tensor>,
) -> Result<()> {
    if crate::sample::skip() {
        return Ok(());
    }
    crate::compare_with_cpu(dev, tol, what, |d| op(&inputs(d)?)).await?;
    let ins = inputs(dev)?;
    let got = match op(&ins) {
        Err(e) if crate::stated_unsupported(dev, &e) => return Ok(()),
        r => r?,
    };
    let copies = Inputs {
        x: ins.x.copy()?,
        stats: ins.stats.iter().map(Tensor::copy).collect::<Result<_>>()?,
        params: ins.params.iter().map(|t| t.as_ref().map(Tensor::copy).transpose()).collect::<Result<_>>()?,
    };
    assert_close(&got, &op(&copies)?, tol, &format!("{what}: vs contiguous copies")).await
}

/// An op's input, its running statistics and its optional weight and bias.
struct Inputs {
    x: Tensor,
    stats: Vec<Tensor>,
    params: Vec<Option<Tensor>>,
}

impl Inputs {
    fn new(x: Tensor, stats: Vec<Tensor>, params: Vec<Option<Tensor>>) -> Self {
        Inputs { x, stats, params }
    }

    fn param(&self, i: usize) -> Option<&Tensor> {
        self.params.get(i).and_then(Option::as_ref)
    }
}

/// A 1-D parameter of length `len` laid out as `view`: `Transposed` is a column of a matrix
/// (stride 2), `Offset` a window of a longer vector, `Broadcast` one value with stride 0.
fn param(d: &Device, view: View, dtype: DType, len: usize, seed: u64, lo: f64, hi: f64) -> Result<Tensor> {
    match view {
        View::Contiguous => rand_tensor(d, dtype, &[len], seed, lo, hi),
        View::Transposed => rand_tensor(d, dtype, &[len, 2], seed, lo, hi)?.narrow(1, 1, 1)?.squeeze(1),
        View::Offset => rand_tensor(d, dtype, &[len + 3], seed, lo, hi)?.narrow(0, 2, len),
        View::Broadcast => rand_tensor(d, dtype, &[1], seed, lo, hi)?.broadcast_as([len]),
    }
}

/// Which optional parameters are present, and the views they get.
fn param_cases() -> Vec<(bool, bool, View)> {
    let mut cases =
        vec![(false, false, View::Contiguous), (true, false, View::Offset), (false, true, View::Transposed)];
    cases.extend(View::ALL.map(|v| (true, true, v)));
    cases
}

async fn softmax_matches_reference(dev: &Device) -> Result<()> {
    let shapes: [(&[usize], &[usize]); 6] = [
        (&[4, 5, 6], &[0, 1, 2]),
        (&[3, 7], &[0, 1]),
        (&[3, 1], &[1]),
        (&[0, 5], &[0, 1]),
        (&[4, 0, 3], &[1, 2]),
        (&[2, 3, 2, 3], &[1, 3]),
    ];
    for op in [NnOp::Softmax, NnOp::LogSoftmax] {
        for &dtype in op.dtypes() {
            for view in View::ALL {
                for (shape, dims) in shapes {
                    for &dim in dims {
                        let what = format!("{op} {dtype} {view:?} {shape:?} dim {dim}");
                        let x = |d: &Device| {
                            Ok(Inputs::new(view_tensor(d, view, dtype, shape, 1, -4.0, 4.0)?, vec![], vec![]))
                        };
                        check(dev, tol(dtype), &what, x, |i| {
                            if op == NnOp::Softmax { i.x.softmax(dim) } else { i.x.log_softmax(dim) }
                        })
                        .await?;
                    }
                }
            }
        }
    }
    Ok(())
}

const NORM_SHAPES: [&[usize]; 4] = [&[3, 8], &[2, 3, 5], &[0, 4], &[2, 1]];

async fn layer_norm_matches_reference(dev: &Device) -> Result<()> {
    for &dtype in NnOp::LayerNorm.dtypes() {
        for view in View::ALL {
            for shape in NORM_SHAPES {
                let len = shape[shape.len() - 1];
                for (has_w, has_b, pv) in param_cases() {
                    let what = format!("layer_norm {dtype} {view:?} {shape:?} w {has_w} b {has_b} {pv:?}");
                    let inputs = |d: &Device| {
                        let x = view_tensor(d, view, dtype, shape, 2, -3.0, 3.0)?;
                        let w = has_w.then(|| param(d, pv, dtype, len, 3, -2.0, 2.0)).transpose()?;
                        let b = has_b.then(|| param(d, pv, dtype, len, 4, -1.0, 1.0)).transpose()?;
                        Ok(Inputs::new(x, vec![], vec![w, b]))
                    };
                    check(dev, tol(dtype), &what, inputs, |i| i.x.layer_norm(i.param(0), i.param(1), 1e-5)).await?;
                }
            }
        }
    }
    Ok(())
}

async fn rms_norm_matches_reference(dev: &Device) -> Result<()> {
    for &dtype in NnOp::RmsNorm.dtypes() {
        for view in View::ALL {
            for shape in NORM_SHAPES {
                let len = shape[shape.len() - 1];
                for pv in
                    [None, Some(View::Contiguous), Some(View::Transposed), Some(View::Offset), Some(View::Broadcast)]
                {
                    let what = format!("rms_norm {dtype} {view:?} {shape:?} weight {pv:?}");
                    let inputs = |d: &Device| {
                        let x = view_tensor(d, view, dtype, shape, 5, -3.0, 3.0)?;
                        let w = pv.map(|pv| param(d, pv, dtype, len, 6, -2.0, 2.0)).transpose()?;
                        Ok(Inputs::new(x, vec![], vec![w]))
                    };
                    check(dev, tol(dtype), &what, inputs, |i| i.x.rms_norm(i.param(0), 1e-6)).await?;
                }
            }
        }
    }
    Ok(())
}

async fn batch_norm_matches_reference(dev: &Device) -> Result<()> {
    let shapes: [&[usize]; 5] = [&[2, 3, 4, 5], &[4, 3], &[2, 3, 0], &[0, 3, 2], &[2, 0, 3]];
    for &dtype in NnOp::BatchNorm.dtypes() {
        for view in View::ALL {
            for shape in shapes {
                let c = shape[1];
                for (has_w, has_b, pv) in param_cases() {
                    let what = format!("batch_norm {dtype} {view:?} {shape:?} w {has_w} b {has_b} {pv:?}");
                    let inputs = |d: &Device| {
                        let x = view_tensor(d, view, dtype, shape, 7, -3.0, 3.0)?;
                        let mean = param(d, pv, dtype, c, 8, -1.0, 1.0)?;
                        let var = param(d, pv, dtype, c, 9, 0.25, 2.0)?;
                        let w = has_w.then(|| param(d, pv, dtype, c, 10, -2.0, 2.0)).transpose()?;
                        let b = has_b.then(|| param(d, pv, dtype, c, 11, -1.0, 1.0)).transpose()?;
                        Ok(Inputs::new(x, vec![mean, var], vec![w, b]))
                    };
                    check(dev, tol(dtype), &what, inputs, |i| {
                        i.x.batch_norm(&i.stats[0], &i.stats[1], i.param(0), i.param(1), 1e-5)
                    })
                    .await?;
                }
            }
        }
    }
    Ok(())
}

async fn softmax_hand_computed(dev: &Device) -> Result<()> {
    let (w, e) = crate::wide(dev);
    let x = crate::floats(dev, vec![1., 2., 3.], &[3], w)?;
    crate::assert_floats(
        &x.softmax(0)?,
        &[3],
        &[0.090_030_573_170_380_46, 0.244_728_471_054_797_64, 0.665_240_955_774_821_8],
        e,
    )
    .await?;
    crate::assert_floats(
        &x.log_softmax(0)?,
        &[3],
        &[-2.407_605_964_444_380_6, -1.407_605_964_444_380_4, -0.407_605_964_444_380_4],
        e,
    )
    .await?;
    for dtype in crate::float_dtypes(dev) {
        let x = crate::floats(dev, vec![1., 2., 3.], &[3], dtype)?;
        let v = vec![0.090_030_573_170_380_46, 0.244_728_471_054_797_64, 0.665_240_955_774_821_8];
        let want = crate::floats(dev, v, &[3], dtype)?;
        assert_close(&x.softmax(0)?, &want, Tol::of(dtype), &format!("softmax [1,2,3] {dtype}")).await?;
    }
    // Over dim 0 of [[1, 2], [3, 5]] (a transposed view): the columns are [1, 3] and [2, 5].
    let x = crate::floats(dev, vec![1., 3., 2., 5.], &[2, 2], w)?.t()?;
    let (a, b) = (0.119_202_922_022_117_55, 0.047_425_873_177_566_78);
    crate::assert_floats(&x.softmax(0)?, &[2, 2], &[a, b, 1.0 - a, 1.0 - b], e).await?;
    // A -inf entry weighs 0; a line of -inf has max -inf, so x - max is NaN throughout (PyTorch).
    let x = Tensor::from_vec(vec![f32::NEG_INFINITY, 0.0, f32::NEG_INFINITY, f32::NEG_INFINITY], [2, 2], dev)?;
    assert_values(&x.softmax(1)?, &[2, 2], &[0f32, 1.0, f32::NAN, f32::NAN], 0.0).await?;
    assert_values(&x.log_softmax(1)?, &[2, 2], &[f32::NEG_INFINITY, 0.0, f32::NAN, f32::NAN], 0.0).await
}

async fn norms_hand_computed(dev: &Device) -> Result<()> {
    let (dt, e) = crate::wide(dev);
    let t = |v: Vec<f64>, shape: &[usize]| crate::floats(dev, v, shape, dt);
    let x = t(vec![1., 2., 3., 4.], &[1, 4])?;
    let s = [-1.341_640_786_499_873_8, -0.447_213_595_499_957_9, 0.447_213_595_499_957_9, 1.341_640_786_499_873_8];
    crate::assert_floats(&x.layer_norm(None, None, 0.0)?, &[1, 4], &s, e).await?;
    let w = t(vec![1., 0.5, 2., -1.], &[4])?;
    let b = t(vec![0., 1., -1., 0.5], &[4])?;
    let want = [-1.341_640_786_499_873_8, 0.776_393_202_250_021_1, -0.105_572_809_000_084_14, -0.841_640_786_499_873_8];
    crate::assert_floats(&x.layer_norm(Some(&w), Some(&b), 0.0)?, &[1, 4], &want, e).await?;
    // eps 1 adds to the variance 1.25 before the square root: (x - 2.5) / 1.5.
    crate::assert_floats(&x.layer_norm(None, None, 1.0)?, &[1, 4], &[-1., -1. / 3., 1. / 3., 1.], e).await?;
    let y = t(vec![3., 4.], &[1, 2])?;
    let want = [0.848_528_137_423_857, 1.131_370_849_898_476];
    crate::assert_floats(&y.rms_norm(None, 0.0)?, &[1, 2], &want, e).await?;
    let w = t(vec![2., 0.5], &[2])?;
    let want = [1.697_056_274_847_714, 0.565_685_424_949_238];
    crate::assert_floats(&y.rms_norm(Some(&w), 0.0)?, &[1, 2], &want, e).await?;
    // eps 3 adds to the mean square 1: divide by sqrt(4).
    let o = Tensor::from_vec(vec![1f32, -1.], [1, 2], dev)?;
    assert_values(&o.rms_norm(None, 3.0)?, &[1, 2], &[0.5f32, -0.5], 0.0).await
}

async fn batch_norm_hand_computed(dev: &Device) -> Result<()> {
    let (dt, e) = crate::wide(dev);
    let xs = vec![1., 3., 2., 4., 5., -1., 0., 6.];
    let x = crate::floats(dev, xs.clone(), &[2, 2, 2], dt)?;
    let v = |d: Vec<f64>| crate::floats(dev, d, &[2], dt);
    let (mean, var, w, b) = (v(vec![1., 2.])?, v(vec![4., 0.25])?, v(vec![2., 3.])?, v(vec![0.5, -1.])?);
    // Channel 0: (x - 1) / 2 * 2 + 0.5; channel 1: (x - 2) / 0.5 * 3 - 1.
    let want = [0.5, 2.5, -1., 11., 4.5, -1.5, -13., 23.];
    crate::assert_floats(&x.batch_norm(&mean, &var, Some(&w), Some(&b), 0.0)?, &[2, 2, 2], &want, e).await?;
    // eps 1 over variances 3 and 0: channel 0 (x - 1) / 2, channel 1 (x - 2) / 1.
    let var = v(vec![3., 0.])?;
    let want = [0., 1., 0., 2., 2., -1., -2., 4.];
    crate::assert_floats(&x.batch_norm(&mean, &var, None, None, 1.0)?, &[2, 2, 2], &want, e).await?;
    for dtype in crate::float_dtypes(dev) {
        let c = |d: Vec<f64>, shape: &[usize]| crate::floats(dev, d, shape, dtype);
        let x = c(xs.clone(), &[2, 2, 2])?;
        let (mean, var, w, b) =
            (c(vec![1., 2.], &[2])?, c(vec![4., 0.25], &[2])?, c(vec![2., 3.], &[2])?, c(vec![0.5, -1.], &[2])?);
        let got = x.batch_norm(&mean, &var, Some(&w), Some(&b), 0.0)?;
        crate::assert_floats(&got, &[2, 2, 2], &[0.5, 2.5, -1., 11., 4.5, -1.5, -13., 23.], 0.0).await?;
    }
    Ok(())
}

/// The row-major values of `t` as f64, grouped into the lines along `dim`.
async fn lines(t: &Tensor, dim: usize) -> Result<Vec<Vec<f64>>> {
    let moved = t.transpose(dim, t.rank() - 1)?;
    let len = moved.dims()[moved.rank() - 1];
    let v = moved.to_cpu_storage_async().await?.to_f64_vec();
    Ok(v.chunks(len.max(1)).map(|c| c.to_vec()).collect())
}

async fn softmax_rows_sum_to_one(dev: &Device) -> Result<()> {
    for dtype in crate::float_dtypes(dev) {
        for view in View::ALL {
            let x = view_tensor(dev, view, dtype, &[4, 6, 5], 12, -5.0, 5.0)?;
            for dim in 0..3 {
                let n = x.dims()[dim] as f64;
                for line in lines(&x.softmax(dim)?, dim).await? {
                    // Each term is within atol + rtol * v of its exact value, and the exact values sum to 1.
                    let (t, sum) = (Tol::of(dtype), line.iter().sum::<f64>());
                    assert!((sum - 1.0).abs() <= n * t.atol + t.rtol, "softmax {dtype} {view:?} dim {dim}: sum {sum}");
                }
            }
        }
    }
    Ok(())
}

async fn exp_log_softmax_is_softmax(dev: &Device) -> Result<()> {
    for dtype in crate::float_dtypes(dev) {
        for view in View::ALL {
            let x = view_tensor(dev, view, dtype, &[3, 5, 4], 13, -6.0, 6.0)?;
            for dim in 0..3 {
                // exp turns the rounding of log_softmax L (relative to |L|) into at most |L| e^L u <= u / e,
                // on top of the roundings of exp and of softmax.
                let what = format!("exp(log_softmax) {dtype} {view:?} dim {dim}");
                assert_close(&x.log_softmax(dim)?.exp()?, &x.softmax(dim)?, Tol::of(dtype).times(3.0), &what).await?;
            }
        }
    }
    Ok(())
}

/// exp(1000) overflows every dtype; softmax subtracts the max first, so it equals the
/// softmax of the shifted input.
async fn softmax_large_inputs_do_not_overflow(dev: &Device) -> Result<()> {
    for dtype in crate::float_dtypes(dev) {
        // Steps of 4 are exact even in bf16 at this magnitude.
        let big = crate::floats(dev, vec![1000., 1004., 1008., -1000., 1000., 1000.], &[2, 3], dtype)?;
        let small = crate::floats(dev, vec![0., 4., 8., -2000., 0., 0.], &[2, 3], dtype)?;
        for dim in [0, 1] {
            let what = format!("softmax of large inputs {dtype} dim {dim}");
            let s = big.softmax(dim)?;
            assert!(s.to_cpu_storage_async().await?.to_f64_vec().iter().all(|v| v.is_finite()), "{what}: not finite");
            assert_close(&s, &small.softmax(dim)?, Tol::of(dtype), &what).await?;
            let what = format!("log_softmax of large inputs {dtype} dim {dim}");
            assert_close(&big.log_softmax(dim)?, &small.log_softmax(dim)?, Tol::of(dtype), &what).await?;
        }
    }
    Ok(())
}

/// Without weight and bias each row has mean 0 and (biased) variance 1, up to eps.
async fn layer_norm_rows_are_standardised(dev: &Device) -> Result<()> {
    for (dtype, eps, tol) in [(DType::F64, 0.0, 1e-12), (DType::F64, 1e-12, 1e-9), (DType::F32, 0.0, 1e-5)] {
        if !crate::float_dtypes(dev).contains(&dtype) {
            continue;
        }
        for view in View::ALL {
            let x = view_tensor(dev, view, dtype, &[5, 3, 16], 14, -10.0, 10.0)?;
            for row in lines(&x.layer_norm(None, None, eps)?, 2).await? {
                let n = row.len() as f64;
                let mean = row.iter().sum::<f64>() / n;
                let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
                assert!(mean.abs() <= tol, "layer_norm {dtype} {view:?} eps {eps}: row mean {mean}");
                assert!((var - 1.0).abs() <= tol, "layer_norm {dtype} {view:?} eps {eps}: row variance {var}");
            }
        }
    }
    Ok(())
}

/// Mean 0, variance 1, weight 1, bias 0 and eps 0 leave every value exactly as it was.
async fn batch_norm_unit_stats_is_identity(dev: &Device) -> Result<()> {
    for dtype in crate::float_dtypes(dev) {
        for view in View::ALL {
            let x = view_tensor(dev, view, dtype, &[2, 4, 3, 2], 15, -50.0, 50.0)?;
            let (zero, one) = (Tensor::zeros([4], dtype, dev)?, Tensor::ones([4], dtype, dev)?);
            let y = x.batch_norm(&zero, &one, Some(&one), Some(&zero), 0.0)?;
            assert_close(&y, &x, Tol::EXACT, &format!("batch_norm identity {dtype} {view:?}")).await?;
            let y = x.batch_norm(&zero, &one, None, None, 0.0)?;
            assert_close(&y, &x, Tol::EXACT, &format!("batch_norm identity, no affine {dtype} {view:?}")).await?;
        }
    }
    Ok(())
}

/// A line op by name, on `x` along `dim` (the norms: the last dim) with the parameters of
/// `params` (weight and bias for layer_norm, weight for rms_norm).
fn line_op(op: NnOp, x: &Tensor, dim: usize, params: &[Tensor]) -> Result<Tensor> {
    match op {
        NnOp::Softmax => x.softmax(dim),
        NnOp::LogSoftmax => x.log_softmax(dim),
        NnOp::LayerNorm => x.layer_norm(params.first(), params.get(1), 1e-5),
        NnOp::RmsNorm => x.rms_norm(params.first(), 1e-6),
        _ => unreachable!("{op} is not a line op"),
    }
}

const LINE_OPS: [NnOp; 4] = [NnOp::Softmax, NnOp::LogSoftmax, NnOp::LayerNorm, NnOp::RmsNorm];

/// The weight and bias a line op takes, of length `n`.
fn line_params(d: &Device, op: NnOp, dtype: DType, n: usize) -> Result<Vec<Tensor>> {
    let count = match op {
        NnOp::LayerNorm => 2,
        NnOp::RmsNorm => 1,
        _ => 0,
    };
    (0..count).map(|i| rand_tensor(d, dtype, &[n], 40 + i as u64, -2.0, 2.0)).collect()
}

/// Lines of 1, 3, 1023, 4097 and 100003 elements: within one tile of a lane group, around its
/// capacity, and over many tiles (read twice); along the last dim, through a transposed view
/// (lanes strided across lines), and for softmax along a leading dim.
async fn lines_of_every_length_match_reference(dev: &Device) -> Result<()> {
    for n in [1, 3, 1023, 4097, 100_003] {
        let rows = if n > 10_000 { 2 } else { 5 };
        for dtype in [DType::F32, DType::F16, DType::BF16, DType::F64] {
            for op in LINE_OPS {
                for view in [View::Contiguous, View::Transposed] {
                    let what = format!("{op} {dtype} {view:?} [{rows}, {n}]");
                    same_as_cpu(dev, tol(dtype), &what, |d| {
                        let x = view_tensor(d, view, dtype, &[rows, n], 20, -3.0, 3.0)?;
                        line_op(op, &x, 1, &line_params(d, op, dtype, n)?)
                    })
                    .await?;
                }
                if op == NnOp::Softmax || op == NnOp::LogSoftmax {
                    let what = format!("{op} {dtype} [{n}, 3] dim 0");
                    same_as_cpu(dev, tol(dtype), &what, |d| {
                        line_op(op, &rand_tensor(d, dtype, &[n, 3], 21, -3.0, 3.0)?, 0, &[])
                    })
                    .await?;
                }
            }
        }
    }
    Ok(())
}

/// `values` (as f64) as a tensor of `dtype` and `shape` on `d`, converted on the host.
fn from_f64(d: &Device, dtype: DType, values: &[f64], shape: &[usize]) -> Result<Tensor> {
    let s = match dtype {
        DType::F16 => CpuStorage::F16(values.iter().map(|&v| half::f16::from_f64(v)).collect()),
        DType::BF16 => CpuStorage::BF16(values.iter().map(|&v| half::bf16::from_f64(v)).collect()),
        DType::F32 => CpuStorage::F32(values.iter().map(|&v| v as f32).collect()),
        _ => CpuStorage::F64(values.to_vec()),
    };
    Tensor::from_cpu(s, shape.to_vec(), d)
}

/// Six lines of `n`: a spread of 1e4 (exp(-1e4) underflows, nothing overflows), a -inf entry
/// (weighs nothing), a NaN, a +inf, all -inf, and +inf beside -inf (each of the last four
/// spoils its own line only, as in the reference); with `n = 1` the last line is -inf alone.
fn special_lines(n: usize) -> Vec<f64> {
    let mut v = crate::Data::new(30).storage(DType::F64, 6 * n, -1e4, 1e4).to_f64_vec();
    let at = |row: usize, k: usize| row * n + (k * 7919) % n;
    v[at(1, 1)] = f64::NEG_INFINITY;
    v[at(2, 2)] = f64::NAN;
    v[at(3, 3)] = f64::INFINITY;
    v[4 * n..5 * n].fill(f64::NEG_INFINITY);
    v[at(5, 4)] = f64::INFINITY;
    v[at(5, 5)] = f64::NEG_INFINITY;
    v
}

async fn special_values_match_reference(dev: &Device) -> Result<()> {
    for n in [1, 7, 4097, 100_003] {
        let values = special_lines(n);
        for &dtype in DType::FLOAT {
            for op in LINE_OPS {
                let what = format!("{op} {dtype} special lines of {n}");
                same_as_cpu(dev, tol(dtype), &what, |d| {
                    line_op(op, &from_f64(d, dtype, &values, &[6, n])?, 1, &line_params(d, op, dtype, n)?)
                })
                .await?;
                if n > 10_000 {
                    continue;
                }
                let what = format!("{op} {dtype} special lines of {n}, transposed");
                same_as_cpu(dev, tol(dtype), &what, |d| {
                    let x = from_f64(d, dtype, &values, &[6, n])?.t()?.contiguous()?.t()?;
                    line_op(op, &x, 1, &line_params(d, op, dtype, n)?)
                })
                .await?;
            }
        }
    }
    Ok(())
}

/// f16 and bf16 lines near f16's largest value: their sums (and sums of squares) pass the f16
/// range, not the f32 one the kernels accumulate in.
async fn half_lines_past_the_half_range_match_reference(dev: &Device) -> Result<()> {
    for dtype in [DType::F16, DType::BF16] {
        for n in [4, 4097] {
            for op in LINE_OPS {
                let what = format!("{op} {dtype} [3, {n}] in [6e4, 6.5e4]");
                same_as_cpu(dev, tol(dtype), &what, |d| {
                    let x = rand_tensor(d, dtype, &[3, n], 22, 60_000.0, 65_000.0)?;
                    line_op(op, &x, 1, &line_params(d, op, dtype, n)?)
                })
                .await?;
            }
        }
    }
    Ok(())
}

/// The line kernels again on an adapter with subgroups withheld, so that lanes combine through
/// workgroup memory (the suite's device uses subgroups where the adapter has them; lavapipe
/// does).
#[cfg(not(target_family = "wasm"))] // a second wgpu device, opened and run blocking
fn line_ops_without_subgroups_match_reference() -> Result<()> {
    if crate::wgpu_or_skip().is_none() {
        return Ok(());
    }
    let dev = Device::wgpu(None, Some("f16,f64,i64"))?;
    let features = dev.info().into_iter().find(|(k, _)| *k == "features").map(|(_, v)| v).unwrap_or_default();
    assert!(!features.contains("subgroup"), "{features}");
    pollster::block_on(async {
        softmax_matches_reference(&dev).await?;
        lines_of_every_length_match_reference(&dev).await?;
        special_values_match_reference(&dev).await?;
        half_lines_past_the_half_range_match_reference(&dev).await
    })
}

/// Values far from 0 next to their spread: the variance must come from deviations from the
/// mean, not from the mean of squares minus the squared mean, which loses the spread to
/// rounding at the scale of the squares (by about 1e-3 for f32 at 30 +- 1, 1e-9 for f64 at
/// 1e3 +- 1, relative); a two-pass (or Welford) form in the dtype's own precision passes.
async fn layer_norm_large_offsets_keep_the_spread(dev: &Device) -> Result<()> {
    for (dtype, offset) in [(DType::F32, 30.0), (DType::F64, 1e3)] {
        let what = format!("layer_norm {dtype} of {offset} +- 1");
        let x = |d: &Device| {
            Ok(Inputs::new(rand_tensor(d, dtype, &[4, 3000], 25, offset - 1.0, offset + 1.0)?, vec![], vec![]))
        };
        check(dev, tol(dtype), &what, x, |i| i.x.layer_norm(None, None, 0.0)).await?;
    }
    Ok(())
}

/// A line of one value has its mean exactly, so it normalises to exactly 0 (as torch's does),
/// and with eps 0 to 0 / 0, NaN: lines of every tiling, stored and broadcast (stride 0), every
/// float dtype, and in f64 a value whose sum of three is not exact (the fuzz test found the cpu
/// reference at +-1 there, from `sum / n`, where the GPUs gave NaN).
async fn layer_norm_constant_lines_are_zero(dev: &Device) -> Result<()> {
    for dtype in [DType::F32, DType::F16, DType::BF16, DType::F64] {
        for (i, len) in [1, 3, 5, 17, 1000, 4099].into_iter().enumerate() {
            // (Full-precision f64 values are made in f64: a device without f64 makes none.)
            let full = if dtype == DType::F64 { &[2.808715366543658][..] } else { &[] };
            let values: Vec<_> = [0.3f32, -7.1, 1234.567]
                .map(|c| (c as f64, false))
                .into_iter()
                .chain(full.iter().map(|&c| (c, true)))
                .collect();
            // In a browser one value per length, turning (four readbacks each).
            for (c, wide_value) in crate::rotated(dev, &values, i) {
                let make = |n: usize| -> Result<Tensor> {
                    if wide_value {
                        Tensor::from_vec(vec![c; n], [n], dev)
                    } else {
                        Tensor::from_vec(vec![c as f32; n], [n], dev)?.to_dtype(dtype)
                    }
                };
                unless_unsupported(dev, dtype, async || {
                    let stored = make(2 * len)?.reshape([2, len])?;
                    let wide = make(1)?.reshape([1, 1])?.broadcast_as([2, len])?;
                    for x in [stored, wide] {
                        let y = x.layer_norm(None, None, 1e-5)?.to_dtype(DType::F32)?;
                        assert_values(&y, &[2, len], &vec![0f32; 2 * len], 0.0).await?;
                        let y = x.layer_norm(None, None, 0.0)?.to_dtype(DType::F32)?;
                        assert_values(&y, &[2, len], &vec![f32::NAN; 2 * len], 0.0).await?;
                    }
                    Ok(())
                })
                .await?;
            }
        }
    }
    Ok(())
}
