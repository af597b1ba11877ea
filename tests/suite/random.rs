use crate::{Tol, View, assert_close, assert_values, float_dtypes, rand_tensor, same_as_cpu, suite, view_tensor};
use rocm_wgpu_ops::spec::random::{Distribution, word};
#[cfg(not(target_family = "wasm"))]
use rocm_wgpu_ops::wgpu::{Mul, Tune};
use rocm_wgpu_ops::{DType, Device, Error, Result, Tensor};

suite!(
    random_matches_reference,
    uniform_is_bit_identical,
    large_draws_match_reference,
    uniform_known_values,
    normal_known_values,
    uniform_statistics,
    normal_statistics,
    stream_is_continuous,
    seeds_and_offsets_give_different_streams,
    device_seed_reproduces_draws,
    random_rejects_bad_params,
    dropout_matches_the_spec,
    dropout_of_special_values_matches_the_spec,
    dropout_keeps_at_its_rate,
    dropout_rejects_bad_params,
);
crate::tests!(
    #[cfg(not(target_family = "wasm"))]
    every_wgpu_product_form_matches_reference
);

const UNIFORM: Distribution = Distribution::Uniform { low: -2.0, high: 3.0 };
const NORMAL: Distribution = Distribution::Normal { mean: 0.5, std: 2.0 };

/// `(seed, offset)` pairs: odd offsets (normal pairs split at the start), a block-counter carry
/// into its high word, offsets past 2^32, and positions wrapping past 2^64.
const STREAMS: &[(u64, u64)] =
    &[(0, 0), (7, 1), (42, 3), (0xDEAD_BEEF_CAFE, 6), (1, (1 << 34) - 5), (3, (1 << 34) + 1), (u64::MAX, u64::MAX - 4)];

/// Normal values go through ln/cos/sin, which backends need not round alike.
fn tol(dist: Distribution, dtype: DType) -> Tol {
    match dist {
        Distribution::Uniform { .. } => Tol::of(dtype),
        Distribution::Normal { .. } => Tol::of(dtype).times(4.0),
    }
}

fn draw(dev: &Device, dtype: DType, dist: Distribution, seed: u64, offset: u64, len: usize) -> Result<Tensor> {
    Tensor::random([len], dtype, dist, seed, offset, dev)
}

async fn values(t: &Tensor) -> Result<Vec<f64>> {
    Ok(t.to_cpu_storage_async().await?.to_f64_vec())
}

/// `(w >> 8) * 2^-24`, straight from the spec text.
fn unit(w: u32) -> f64 {
    f64::from(w >> 8) / 16_777_216.0
}

/// Box-Muller in f64 on the words at positions `2p`, `2p + 1` of `seed`, for position `pos`.
fn normal_at(seed: u64, pos: u64) -> f64 {
    let p = pos / 2;
    let u1 = f64::from((word(seed, 2 * p) >> 8) + 1) / 16_777_216.0;
    let u2 = unit(word(seed, 2 * p + 1));
    let r = (-2.0 * u1.ln()).sqrt();
    let t = 2.0 * std::f64::consts::PI * u2;
    if pos.is_multiple_of(2) { r * t.cos() } else { r * t.sin() }
}

async fn random_matches_reference(dev: &Device) -> Result<()> {
    for dist in [UNIFORM, NORMAL] {
        for &dtype in DType::FLOAT {
            crate::unless_unsupported(dev, dtype, async || {
                for &(seed, offset) in STREAMS {
                    for shape in [&[37][..], &[3, 5], &[0, 4]] {
                        let what = format!("{} {dtype} seed {seed} offset {offset} {shape:?}", dist.op());
                        same_as_cpu(dev, tol(dist, dtype), &what, |d| {
                            Tensor::random(shape, dtype, dist, seed, offset, d)
                        })
                        .await?;
                    }
                }
                Ok(())
            })
            .await?;
        }
    }
    Ok(())
}

/// Uniform values take one rounded product and one rounded sum, which every backend does alike.
async fn uniform_is_bit_identical(dev: &Device) -> Result<()> {
    let wide = Distribution::Uniform { low: -1.0e30, high: 3.5e35 };
    for dist in [UNIFORM, wide, Distribution::Uniform { low: 0.1, high: 0.7 }] {
        for &dtype in DType::FLOAT {
            crate::unless_unsupported(dev, dtype, async || {
                for &(seed, offset) in STREAMS {
                    for n in [1, 2, 3, 5, 8, 61] {
                        let what = format!("{dist:?} {dtype} seed {seed} offset {offset} n {n}");
                        same_as_cpu(dev, Tol::EXACT, &what, |d| draw(d, dtype, dist, seed, offset, n)).await?;
                    }
                }
                Ok(())
            })
            .await?;
        }
    }
    Ok(())
}

/// Many workgroups, every alignment of the offset to the four positions of a block, and an
/// odd length (half a word at the end for f16 and bf16).
async fn large_draws_match_reference(dev: &Device) -> Result<()> {
    for dist in [UNIFORM, NORMAL] {
        for &dtype in DType::FLOAT {
            crate::unless_unsupported(dev, dtype, async || {
                for offset in [0, 1, 2, 3, (1 << 34) - 1, u64::MAX - 1000] {
                    let what = format!("{} {dtype} offset {offset}", dist.op());
                    same_as_cpu(dev, tol(dist, dtype), &what, |d| draw(d, dtype, dist, 77, offset, 300_001)).await?;
                }
                Ok(())
            })
            .await?;
        }
    }
    Ok(())
}

async fn uniform_known_values(dev: &Device) -> Result<()> {
    // Random123's known answer for philox4x32_10(counter 0, key 0) is block 0 of seed 0.
    let kat = [0x6627_e8d5u32, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8];
    let want = kat.map(|w| (w >> 8) as f32 / 16_777_216.0);
    assert_eq!(want, [0.399_046_42f32, 0.880_520_16, 0.735_712_77, 0.605_481_8]);
    let unit01 = Distribution::Uniform { low: 0.0, high: 1.0 };
    assert_values(&draw(dev, DType::F32, unit01, 0, 0, 4)?, &[4], &want, 0.0).await?;
    let (seed, offset) = (5, (1u64 << 32) + 3);
    let want: Vec<f32> = (0..10).map(|i| unit(word(seed, offset + i)) as f32).collect();
    assert_values(&draw(dev, DType::F32, unit01, seed, offset, 10)?, &[10], &want, 0.0).await?;
    // In [-2, 3) every step of the f64 formula is exact.
    let want: Vec<f64> = (0..10).map(|i| -2.0 + 5.0 * unit(word(seed, offset + i))).collect();
    crate::unless_unsupported(dev, DType::F64, async || {
        assert_values(&draw(dev, DType::F64, UNIFORM, seed, offset, 10)?, &[10], &want, 0.0).await
    })
    .await?;
    // Halves round the f32 value once: within half an ulp (2^-10 near 3).
    let h: Vec<half::f16> = want.iter().map(|&v| half::f16::from_f64(v)).collect();
    assert_values(&draw(dev, DType::F16, UNIFORM, seed, offset, 10)?, &[10], &h, 1e-3).await?;
    let b: Vec<half::bf16> = want.iter().map(|&v| half::bf16::from_f64(v)).collect();
    assert_values(&draw(dev, DType::BF16, UNIFORM, seed, offset, 10)?, &[10], &b, 8e-3).await?;
    Ok(())
}

async fn normal_known_values(dev: &Device) -> Result<()> {
    // Box-Muller on the Random123 known answer above, worked out with python3 `math`.
    let want = [0.991_137_475_145_897_1, -0.924_662_780_354_433_2, -0.617_609_054_984_854_4, -0.482_068_347_264_496_3]
        .map(|v: f64| v as f32);
    let std_normal = Distribution::Normal { mean: 0.0, std: 1.0 };
    assert_values(&draw(dev, DType::F32, std_normal, 0, 0, 4)?, &[4], &want, 4e-6).await?;
    let want64: Vec<f64> = (0..4).map(|i| normal_at(0, i)).collect();
    crate::unless_unsupported(dev, DType::F64, async || {
        assert_values(&draw(dev, DType::F64, std_normal, 0, 0, 4)?, &[4], &want64, 1e-12).await
    })
    .await?;
    // An odd offset starts on the sine half of a pair; mean and std apply after.
    let (seed, offset) = (9, 1);
    let dist = Distribution::Normal { mean: 1.0, std: 3.0 };
    let want64: Vec<f64> = (0..16).map(|i| 1.0 + 3.0 * normal_at(seed, offset + i)).collect();
    crate::unless_unsupported(dev, DType::F64, async || {
        assert_values(&draw(dev, DType::F64, dist, seed, offset, 16)?, &[16], &want64, 1e-12).await
    })
    .await?;
    let want32: Vec<f32> = want64.iter().map(|&v| v as f32).collect();
    assert_values(&draw(dev, DType::F32, dist, seed, offset, 16)?, &[16], &want32, 2e-5).await?;
    Ok(())
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    (mean, v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n)
}

const N: usize = 100_000;

async fn uniform_statistics(dev: &Device) -> Result<()> {
    for &dtype in DType::FLOAT {
        crate::unless_unsupported(dev, dtype, || uniform_statistics_of(dev, dtype)).await?;
    }
    Ok(())
}

async fn uniform_statistics_of(dev: &Device, dtype: DType) -> Result<()> {
    let (low, high) = (-2.0, 3.0);
    let v = values(&draw(dev, dtype, UNIFORM, 123, 0, N)?).await?;
    // Rounding to a half type may reach `high`; in f32 and f64 this range cannot.
    let top_ok = |x: f64| if matches!(dtype, DType::F16 | DType::BF16) { x <= high } else { x < high };
    assert!(v.iter().all(|&x| x >= low && top_ok(x)), "{dtype}: a uniform left [{low}, {high})");
    let (mean, var) = mean_var(&v);
    // Standard errors: mean 0.0046, variance 0.0043 (bf16 rounding adds about 2e-4).
    assert!((mean - 0.5).abs() < 0.025, "{dtype}: mean {mean}");
    assert!((var - 25.0 / 12.0).abs() < 0.03, "{dtype}: variance {var}");
    let mut bins = [0usize; 10];
    for &x in &v {
        bins[(((x - low) / (high - low) * 10.0) as usize).min(9)] += 1;
    }
    // 10000 expected per bin, standard deviation 95 (bf16 moves bin edges by up to 1/64).
    assert!(bins.iter().all(|&b| b.abs_diff(N / 10) < 600), "{dtype}: bins {bins:?}");
    Ok(())
}

async fn normal_statistics(dev: &Device) -> Result<()> {
    for &dtype in DType::FLOAT {
        crate::unless_unsupported(dev, dtype, || normal_statistics_of(dev, dtype)).await?;
    }
    Ok(())
}

async fn normal_statistics_of(dev: &Device, dtype: DType) -> Result<()> {
    let (mu, sigma) = (1.0, 2.0);
    let dist = Distribution::Normal { mean: mu, std: sigma };
    let v = values(&draw(dev, dtype, dist, 321, 3, N)?).await?;
    assert!(v.iter().all(|x| x.is_finite()), "{dtype}: non-finite normal");
    let (mean, var) = mean_var(&v);
    // Standard errors: mean 0.0063, variance 0.018.
    assert!((mean - mu).abs() < 0.035, "{dtype}: mean {mean}");
    assert!((var - sigma * sigma).abs() < 0.1, "{dtype}: variance {var}");
    let frac = |f: &dyn Fn(f64) -> bool| v.iter().filter(|&&x| f(x)).count() as f64 / N as f64;
    // P(|z| < 1) = 0.6827, P(z > 0) = 0.5; standard errors 0.0015, 0.0016.
    let within = frac(&|x| (x - mu).abs() < sigma);
    assert!((within - 0.6827).abs() < 0.008, "{dtype}: {within} within one std");
    let above = frac(&|x| x > mu);
    assert!((above - 0.5).abs() < 0.008, "{dtype}: {above} above the mean");
    // 24-bit u1 bounds |z| by sqrt(48 ln 2) = 5.768.
    let max = v.iter().map(|x| ((x - mu) / sigma).abs()).fold(0.0, f64::max);
    assert!(max < 5.8, "{dtype}: |z| reaches {max}");
    assert!(max > 3.5, "{dtype}: no tail, max |z| {max}");
    Ok(())
}

async fn stream_is_continuous(dev: &Device) -> Result<()> {
    for dist in [UNIFORM, NORMAL] {
        for (d, &dtype) in DType::FLOAT.iter().enumerate() {
            crate::unless_unsupported(dev, dtype, async || {
                for (o, offset) in [0, 3, (1u64 << 34) - 5].into_iter().enumerate() {
                    // In a browser one length per offset, turning (three readbacks each).
                    for n in crate::rotated(dev, &[7, 8, 13], d + o) {
                        let what = format!("{} {dtype} offset {offset} n {n}", dist.op());
                        let a = values(&draw(dev, dtype, dist, 11, offset, n)?).await?;
                        let b = values(&draw(dev, dtype, dist, 11, offset + n as u64, n)?).await?;
                        let whole = values(&draw(dev, dtype, dist, 11, offset, 2 * n)?).await?;
                        assert_eq!([a, b].concat(), whole, "{what}");
                    }
                }
                Ok(())
            })
            .await?;
        }
    }
    Ok(())
}

async fn seeds_and_offsets_give_different_streams(dev: &Device) -> Result<()> {
    let n = 1000;
    let base = values(&draw(dev, DType::F32, UNIFORM, 1, 0, n)?).await?;
    let others = [(2, 0), (1 + (1 << 32), 0), (1, 1 << 34), (1, 4)];
    for (seed, offset) in others {
        let v = values(&draw(dev, DType::F32, UNIFORM, seed, offset, n)?).await?;
        let same = base.iter().zip(&v).filter(|(a, b)| a == b).count();
        assert!(same < 5, "seed {seed} offset {offset}: {same} of {n} equal to seed 1 offset 0");
    }
    let normal = values(&draw(dev, DType::F32, NORMAL, 1, 0, n)?).await?;
    let same = base.iter().zip(&normal).filter(|(a, b)| a == b).count();
    assert!(same < 5, "uniform and normal agree on {same} of {n}");
    Ok(())
}

async fn device_seed_reproduces_draws(dev: &Device) -> Result<()> {
    for mid in [DType::F64, DType::F32] {
        crate::unless_unsupported(dev, mid, || device_seed_reproduces_draws_of(dev, mid)).await?;
    }
    Ok(())
}

/// Three draws from the device stream, the second of dtype `mid`.
async fn device_seed_reproduces_draws_of(dev: &Device, mid: DType) -> Result<()> {
    // A device of its own: the shared one's stream moves with every other test's draws.
    let own = Device::new_async(dev.kind()).await?;
    let draws = |d: &Device| -> Result<[Tensor; 3]> {
        d.set_seed(42);
        Ok([
            Tensor::rand(-1.0, 1.0, [5], DType::F32, d)?,
            Tensor::randn(0.0, 1.0, [2, 3], mid, d)?,
            Tensor::rand(0.0, 4.0, [3], DType::BF16, d)?,
        ])
    };
    let first = draws(&own)?;
    let again = draws(&own)?;
    for (a, b) in first.iter().zip(&again) {
        assert_close(a, b, Tol::EXACT, "after set_seed(42) again").await?;
    }
    // Each draw starts on a fresh block of four positions.
    let explicit = [
        Tensor::random([5], DType::F32, Distribution::Uniform { low: -1.0, high: 1.0 }, 42, 0, &own)?,
        Tensor::random([2, 3], mid, Distribution::Normal { mean: 0.0, std: 1.0 }, 42, 8, &own)?,
        Tensor::random([3], DType::BF16, Distribution::Uniform { low: 0.0, high: 4.0 }, 42, 16, &own)?,
    ];
    for (a, b) in first.iter().zip(&explicit) {
        assert_close(a, b, Tol::EXACT, "device stream vs explicit (seed, offset)").await?;
    }
    own.set_seed(43);
    let other = Tensor::rand(-1.0, 1.0, [5], DType::F32, &own)?;
    assert_ne!(values(&other).await?, values(&first[0]).await?, "seed 43 repeats seed 42");
    Ok(())
}

async fn random_rejects_bad_params(dev: &Device) -> Result<()> {
    let bad = [
        (DType::F32, Distribution::Uniform { low: 1.0, high: 1.0 }),
        (DType::F32, Distribution::Uniform { low: 2.0, high: 1.0 }),
        (DType::F64, Distribution::Uniform { low: f64::NAN, high: 1.0 }),
        (DType::F32, Distribution::Normal { mean: 0.0, std: -1.0 }),
        (DType::F16, Distribution::Normal { mean: f64::INFINITY, std: 1.0 }),
        // Finite in f64, not in the f32 a bf16 draw is computed in; a span past f32's range.
        (DType::BF16, Distribution::Uniform { low: -1e39, high: 0.0 }),
        (DType::F32, Distribution::Uniform { low: -3e38, high: 3e38 }),
    ];
    for (dtype, dist) in bad {
        let r = Tensor::random([4], dtype, dist, 0, 0, dev);
        assert!(matches!(r, Err(Error::InvalidParam { .. })), "{dtype} {dist:?}: {r:?}");
    }
    crate::unless_unsupported(dev, DType::F64, async || {
        let wide = Tensor::random([4], DType::F64, Distribution::Uniform { low: -3e38, high: 3e38 }, 0, 0, dev)?;
        assert!(values(&wide).await?.iter().all(|x| x.is_finite()), "f64 takes what f32 cannot");
        Ok(())
    })
    .await?;
    for dtype in [DType::U8, DType::U32, DType::I64] {
        let r = Tensor::random([4], dtype, UNIFORM, 0, 0, dev);
        assert!(matches!(r, Err(Error::WrongDType { .. })), "{dtype}: {r:?}");
    }
    Ok(())
}

/// Each product form of the WGSL tuning table (`RWO_WGPU_TUNE=random_mul=...`) on a device of
/// its own, with and without native f16: bit-identical uniforms, normals as close as ever. u64
/// products need SHADER_INT64; asking for them without it is an error.
#[cfg(not(target_family = "wasm"))] // wgpu devices of its own, opened and run blocking
fn every_wgpu_product_form_matches_reference() -> Result<()> {
    let Some(shared) = crate::wgpu_or_skip() else { return Ok(()) };
    let features = shared.info().into_iter().find(|(k, _)| *k == "features").map(|(_, v)| v).unwrap_or_default();
    let has_i64 = features.split(", ").any(|f| f == "i64");
    for (features, mul) in
        [(None, Mul::Wide), (None, Mul::Pieces), (Some("none"), Mul::Pieces), (Some("f16"), Mul::Wide)]
    {
        let tune = Tune { random_mul: Some(mul), ..Tune::default() };
        let dev = match Device::wgpu_tuned(None, features, tune) {
            Err(Error::BackendUnavailable { reason, .. }) if mul == Mul::Wide && (!has_i64 || features.is_some()) => {
                assert!(reason.contains("SHADER_INT64"), "{reason}");
                continue;
            }
            r => r?,
        };
        pollster::block_on(async {
            uniform_is_bit_identical(&dev).await?;
            large_draws_match_reference(&dev).await?;
            stream_is_continuous(&dev).await
        })?;
    }
    Ok(())
}

/// Dropout straight from the spec's text, for `x`'s values in row-major order: element `i` kept
/// where the uniform at `offset + i` is at least `p` (rounded to the compute type), then
/// `x * 1 / (1 - p)` in the compute type rounded to the dtype; dropped, `x * 0`.
fn dropout_expected(xs: &[f64], dtype: DType, p: f64, seed: u64, offset: u64) -> Vec<f64> {
    let u = |i: usize| unit(word(seed, offset.wrapping_add(i as u64)));
    xs.iter()
        .enumerate()
        .map(|(i, &x)| match dtype {
            DType::F64 => x * if u(i) >= p { 1.0 / (1.0 - p) } else { 0.0 },
            _ => {
                let p = p as f32;
                let y = x as f32 * if u(i) as f32 >= p { 1.0 / (1.0 - p) } else { 0.0 };
                match dtype {
                    DType::F16 => half::f16::from_f32(y).to_f64(),
                    DType::BF16 => half::bf16::from_f32(y).to_f64(),
                    _ => y.into(),
                }
            }
        })
        .collect()
}

/// Every float dtype, layout and a range of p, bit for bit against the spec (so the same mask on
/// every backend), signed zeros included.
async fn dropout_matches_the_spec(dev: &Device) -> Result<()> {
    for dtype in float_dtypes(dev) {
        for view in View::ALL {
            for (k, &p) in [0.0, 0.1, 0.5, 0.999, 1.0].iter().enumerate() {
                if crate::sample::skip() {
                    continue;
                }
                let (seed, offset) = STREAMS[k % STREAMS.len()];
                let x = view_tensor(dev, view, dtype, &[5, 7], 11, -3.0, 3.0)?;
                let got = values(&x.dropout_at(p, seed, offset)?).await?;
                let want = dropout_expected(&values(&x).await?, dtype, p, seed, offset);
                let same = |(g, w): (&f64, &f64)| g.to_bits() == w.to_bits();
                assert!(got.iter().zip(&want).all(same), "dropout {dtype} {view:?} p={p}: {got:?} against {want:?}");
            }
        }
    }
    Ok(())
}

/// NaN, infinities and signed zeros through dropout, against the spec: a NaN stays NaN kept or
/// dropped, a dropped infinity is NaN (inf x 0), a kept one infinite. (The kernels' fence against
/// contraction, a max with -inf, turned NaN into -inf on drivers whose max returns the other
/// operand: the fuzz test's find, on lavapipe.)
async fn dropout_of_special_values_matches_the_spec(dev: &Device) -> Result<()> {
    // Made in f32 (browsers have no f64), then cast to each dtype.
    let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0, 1e30, -2.5];
    let v: Vec<f32> = (0..64).map(|i| specials[i % specials.len()]).collect();
    for dtype in float_dtypes(dev) {
        let x = Tensor::from_vec(v.clone(), [64], dev)?.to_dtype(dtype)?;
        for &(seed, offset) in STREAMS {
            let got = values(&x.dropout_at(0.5, seed, offset)?).await?;
            let want = dropout_expected(&values(&x).await?, dtype, 0.5, seed, offset);
            let same = |(g, w): (&f64, &f64)| g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
            assert!(got.iter().zip(&want).all(same), "dropout {dtype}: {got:?} against {want:?}");
        }
    }
    Ok(())
}

/// The kept share of 10^6 elements within 5 standard deviations of the binomial's mean; the
/// device's own stream moves on between calls and repeats after `set_seed`.
async fn dropout_keeps_at_its_rate(dev: &Device) -> Result<()> {
    let n = 1_000_000usize;
    let x = Tensor::ones([n], DType::F32, dev)?;
    let p = 0.1;
    let y = values(&x.dropout_at(p, 5, 0)?).await?;
    let kept = y.iter().filter(|&&v| v != 0.0).count() as f64;
    let bound = 5.0 * (n as f64 * p * (1.0 - p)).sqrt();
    assert!((kept - n as f64 * (1.0 - p)).abs() <= bound, "kept {kept} of {n} at p = {p}");
    let scale = f64::from(1.0f32 / 0.9f32);
    assert!(y.iter().all(|&v| v == 0.0 || v == scale), "values other than 0 and 1 / (1 - p)");
    let own = dev.with_fusion(dev.fusion());
    own.set_seed(9);
    let small = Tensor::ones([64], DType::F32, &own)?;
    let (a, b) = (values(&small.dropout(0.5)?).await?, values(&small.dropout(0.5)?).await?);
    assert_ne!(a, b, "two calls drew the same mask");
    own.set_seed(9);
    assert_eq!(values(&small.dropout(0.5)?).await?, a, "set_seed does not repeat the mask");
    Ok(())
}

async fn dropout_rejects_bad_params(dev: &Device) -> Result<()> {
    let x = rand_tensor(dev, DType::F32, &[4], 3, -1.0, 1.0)?;
    let before = values(&x).await?;
    for p in [-0.1, 1.5, f64::NAN, f64::INFINITY] {
        let r = x.dropout_at(p, 0, 0);
        assert!(matches!(r, Err(Error::InvalidParam { .. })), "p = {p}: {r:?}");
    }
    for dtype in [DType::U8, DType::U32, DType::I64] {
        let r = Tensor::zeros([4], dtype, dev)?.dropout(0.5);
        assert!(matches!(r, Err(Error::WrongDType { .. })), "{dtype}: {r:?}");
    }
    assert_eq!(values(&x).await?, before, "a refused dropout changed its input");
    Ok(())
}
