//! scaled_dot_product_attention, rope and rope_i against the cpu reference on every backend,
//! the reference against hand-computed values, the errors, and (wgpu) that no buffer as large
//! as the scores is allocated.

use crate::{Tol, assert_floats, floats, rand_tensor, same_as_cpu, suite, wide};
use rocm_wgpu_ops::spec::attention::AttentionOp;
use rocm_wgpu_ops::{BackendKind, DType, Device, Error, Result, Tensor};

suite!(
    sdpa_matches_reference,
    sdpa_masks_match_reference,
    sdpa_strided_inputs_match_reference,
    sdpa_long_rows_match_reference,
    sdpa_long_prefill_matches_reference,
    sdpa_split_keys_match_reference,
    sdpa_rising_scores_match_reference,
    sdpa_hand_computed,
    rope_matches_reference,
    rope_hand_computed,
    attention_errors,
);
crate::tests!(
    #[cfg(not(target_family = "wasm"))]
    sdpa_allocates_nothing_the_size_of_the_scores
);

/// A few roundings in the computing precision on top of the one to the dtype, as the nn family
/// (the softmax's max, exp and sum; the dot products and weighted sums).
fn tol(dtype: DType) -> Tol {
    Tol::of(dtype).times(8.0)
}

const SDPA: AttentionOp = AttentionOp::ScaledDotProductAttention;

/// (B, Hq, Hkv, Lq, Lk, D, Dv, causal): grouped heads; Lq = 1, Lq = Lk and Lq < Lk causal; an odd
/// Dv (sub-word dtypes store element by element); D and Dv past one chunk of the kernels and Lq
/// past one query tile; Lq > Lk causal (the first rows see no key: NaN); no keys at all (NaN).
/// The GPU paths take up to 8 query rows a kv head (`Hq / Hkv x Lq`) through their decode pass
/// (where q, k and v rows are whole 16-byte words, else the tiled pass) and more through the tiled
/// one: each case above comes in both, the decode pass's up to its 8 rows (8 heads of one kv head
/// over more keys than its tile of 128; 8 rows of D 128, causal with Lq < Lk, in two key ranges of
/// two and one tiles). On CUDA
/// (sm_80 on) the halves take the tensor-core pass instead, for every case with D and Dv up to
/// 128 (64 rows a block, D and Dv padded to 64 or 128; `RWO_NATIVE_MMA=0` runs the other two);
/// the last two cases are for it: rows of two heads over three blocks (one crossing from a head
/// to the next), causal with Lq < Lk; and D = Dv = 128, the widest it takes. On WGSL with
/// cooperative matrices f16 rows past 8 a kv head with D and Dv whole 16-byte words (up to 128)
/// take the cooperative-matrix pass instead of the tiled one: the last three cases.
type Geometry = (usize, usize, usize, usize, usize, usize, usize, bool);

const SHAPES: [Geometry; 15] = [
    (2, 4, 2, 5, 7, 8, 6, false),
    (1, 2, 2, 1, 9, 4, 4, true),
    (1, 3, 1, 6, 6, 5, 3, true),
    (1, 2, 1, 2, 37, 5, 3, true),
    (1, 2, 2, 3, 20, 16, 8, true),
    (1, 2, 1, 19, 33, 72, 70, true),
    (1, 8, 1, 1, 150, 72, 70, false),
    (1, 8, 2, 2, 300, 128, 64, true),
    (1, 1, 1, 6, 3, 4, 4, true),
    (1, 2, 1, 6, 3, 4, 4, true),
    (1, 1, 1, 3, 0, 4, 4, false),
    (1, 3, 1, 3, 0, 4, 4, false),
    (2, 6, 3, 17, 17, 32, 16, false),
    (1, 4, 2, 70, 90, 64, 64, true),
    (1, 2, 1, 40, 130, 128, 128, false),
];

async fn sdpa_matches_reference(dev: &Device) -> Result<()> {
    for &dt in SDPA.dtypes() {
        for (n, &(b, hq, hkv, lq, lk, d, dv, causal)) in SHAPES.iter().enumerate() {
            for scale in [None, Some(0.3)] {
                let what = format!("sdpa {dt} [{b},{hq},{lq},{d}] kv [{hkv},{lk},{dv}] causal {causal} {scale:?}");
                same_as_cpu(dev, tol(dt), &what, |x| {
                    let q = rand_tensor(x, dt, &[b, hq, lq, d], 10 + n as u64, -1.0, 1.0)?;
                    let k = rand_tensor(x, dt, &[b, hkv, lk, d], 20 + n as u64, -1.0, 1.0)?;
                    let v = rand_tensor(x, dt, &[b, hkv, lk, dv], 30 + n as u64, -1.0, 1.0)?;
                    q.scaled_dot_product_attention(&k, &v, None, causal, scale)
                })
                .await?;
            }
        }
    }
    Ok(())
}

/// u8 masks (1 keeps a key) and additive masks of several broadcast shapes, with and without
/// `causal`; a u8 mask with a row of zeros gives that row NaN. Lq 5 (10 rows a kv head: the
/// tiled pass) and 2 (4 rows: the decode pass).
async fn sdpa_masks_match_reference(dev: &Device) -> Result<()> {
    let (b, hq, hkv, lk, d) = (2, 4, 2, 11, 8);
    let geometries = [5, 2].map(|lq| (lq, [vec![lq, lk], vec![b, 1, lq, lk], vec![b, hq, lq, lk], vec![1, lk]]));
    for &dt in SDPA.dtypes() {
        for (lq, shapes) in &geometries {
            let lq = *lq;
            for (n, shape) in shapes.iter().enumerate() {
                for causal in [false, true] {
                    for keep in [true, false] {
                        let what = format!("sdpa {dt} Lq {lq} mask {shape:?} keep {keep} causal {causal}");
                        same_as_cpu(dev, tol(dt), &what, |x| {
                            let q = rand_tensor(x, dt, &[b, hq, lq, d], 40, -1.0, 1.0)?;
                            let k = rand_tensor(x, dt, &[b, hkv, lk, d], 41, -1.0, 1.0)?;
                            let v = rand_tensor(x, dt, &[b, hkv, lk, d], 42, -1.0, 1.0)?;
                            let m = if keep {
                                keep_mask(x, shape, 43 + n as u64)?
                            } else {
                                rand_tensor(x, dt, shape, 44 + n as u64, -2.0, 1.0)?
                            };
                            q.scaled_dot_product_attention(&k, &v, Some(&m), causal, None)
                        })
                        .await?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// A u8 mask of `shape`, two thirds kept; the first row of a rank-4 mask keeps nothing.
fn keep_mask(dev: &Device, shape: &[usize], seed: u64) -> Result<Tensor> {
    let mut data = crate::Data::new(seed);
    let row = if shape.len() == 4 { shape[3] } else { 0 };
    let n: usize = shape.iter().product();
    let v: Vec<u8> = (0..n).map(|i| (i >= row && data.f64(0.0, 3.0) >= 1.0) as u8).collect();
    Tensor::from_vec(v, shape.to_vec(), dev)
}

/// Heads split by a transpose view (q stored [B, L, H, D]), a KV cache narrowed from a larger
/// buffer, and an offset, transposed head dim of v; Lq 3 (the decode pass) and 5 (tiled). In the
/// cases without the transposed v every row is whole aligned 16-byte words, as WGSL's decode and
/// cooperative-matrix passes read them.
async fn sdpa_strided_inputs_match_reference(dev: &Device) -> Result<()> {
    let (b, hq, hkv, lk, d, cap) = (2, 4, 2, 9, 8, 24);
    for &dt in SDPA.dtypes() {
        for (lq, causal, vt) in [(3, false, true), (3, true, true), (3, true, false), (5, true, true), (5, true, false)]
        {
            let what = format!("sdpa {dt} strided Lq {lq} causal {causal} v transposed {vt}");
            same_as_cpu(dev, tol(dt), &what, |x| {
                let q = rand_tensor(x, dt, &[b, lq, hq, d], 50, -1.0, 1.0)?.transpose(1, 2)?;
                let k = rand_tensor(x, dt, &[b, hkv, cap, d], 51, -1.0, 1.0)?.narrow(2, 8, lk)?;
                let v = if vt {
                    let v = rand_tensor(x, dt, &[b, hkv, d + 2, cap], 52, -1.0, 1.0)?;
                    v.narrow(2, 1, d)?.narrow(3, 0, lk)?.transpose(2, 3)?
                } else {
                    rand_tensor(x, dt, &[b, hkv, cap, d], 52, -1.0, 1.0)?.narrow(2, 3, lk)?
                };
                q.scaled_dot_product_attention(&k, &v, None, causal, None)
            })
            .await?;
        }
    }
    Ok(())
}

/// Rows of more keys than a tile and than 4096 (several key tiles; decode with Lq = 1 and a
/// short prefill against a long cache).
async fn sdpa_long_rows_match_reference(dev: &Device) -> Result<()> {
    let (hq, hkv, lk, d) = (4, 2, 4100, 16);
    for &dt in SDPA.dtypes() {
        for lq in [1, 5] {
            let what = format!("sdpa {dt} long row Lq {lq} Lk {lk}");
            same_as_cpu(dev, tol(dt), &what, |x| {
                let q = rand_tensor(x, dt, &[1, hq, lq, d], 60, -1.0, 1.0)?;
                let k = rand_tensor(x, dt, &[1, hkv, lk, d], 61, -1.0, 1.0)?;
                let v = rand_tensor(x, dt, &[1, hkv, lk, d], 62, -1.0, 1.0)?;
                q.scaled_dot_product_attention(&k, &v, None, true, None)
            })
            .await?;
        }
    }
    Ok(())
}

/// Prefills of 1024 query rows a head in the halves, where CUDA runs cuDNN's flash attention
/// (1024 rows on, no mask, causal only with Lq = Lk, rows on 16 bytes): grouped heads, causal
/// and not, more keys than queries without causality, and q, k and v read in place (q from a
/// `[B, L, H, D]` layout, k and v narrowed from a longer cache). The other cases stay in our
/// kernels there; the GPU backends without the library run them all in theirs. Native backends
/// only: at this size the cpu reference dominates, and wgpu runs the same kernels at smaller
/// sizes above.
async fn sdpa_long_prefill_matches_reference(dev: &Device) -> Result<()> {
    if !matches!(dev.kind(), BackendKind::Cuda | BackendKind::Rocm) {
        return Ok(());
    }
    let (hq, hkv, l, d, cap) = (2, 1, 1024, 64, 1200);
    for dt in [DType::F16, DType::BF16] {
        for (lk, causal, strided) in [(l, true, false), (l, false, false), (l + 40, false, false), (l, true, true)] {
            let what = format!("sdpa {dt} prefill Lq {l} Lk {lk} causal {causal} strided {strided}");
            same_as_cpu(dev, tol(dt), &what, |x| {
                let (q, k, v) = if strided {
                    (
                        rand_tensor(x, dt, &[1, l, hq, d], 80, -1.0, 1.0)?.transpose(1, 2)?,
                        rand_tensor(x, dt, &[1, hkv, cap, d], 81, -1.0, 1.0)?.narrow(2, 16, lk)?,
                        rand_tensor(x, dt, &[1, hkv, cap, d], 82, -1.0, 1.0)?.narrow(2, 8, lk)?,
                    )
                } else {
                    (
                        rand_tensor(x, dt, &[1, hq, l, d], 80, -1.0, 1.0)?,
                        rand_tensor(x, dt, &[1, hkv, lk, d], 81, -1.0, 1.0)?,
                        rand_tensor(x, dt, &[1, hkv, lk, d], 82, -1.0, 1.0)?,
                    )
                };
                q.scaled_dot_product_attention(&k, &v, None, causal, None)
            })
            .await?;
        }
    }
    Ok(())
}

/// Scores that rise along the keys (k's row j scaled by min(j, 127) / 8, scale 1: a row's max
/// climbs by ~10 a tile of 32 keys over its first 128 keys, to ~50), so that WGSL's
/// cooperative-matrix pass raises its rows' reference max and rescales their accumulators (140
/// and 20 rows a kv head, causal and not, Lq < Lk), and the split pass (600 keys) combines ranges
/// whose reference maxima differ.
async fn sdpa_rising_scores_match_reference(dev: &Device) -> Result<()> {
    let (b, hq, hkv, d) = (1, 2, 1, 16);
    for &dt in SDPA.dtypes() {
        for (lq, lk, causal) in [(70, 200, true), (70, 200, false), (10, 90, true), (10, 600, false)] {
            let what = format!("sdpa {dt} rising scores Lq {lq} Lk {lk} causal {causal}");
            same_as_cpu(dev, tol(dt), &what, |x| {
                let ramp: Vec<f32> = (0..lk).map(|j| j.min(127) as f32 / 8.0).collect();
                let ramp = Tensor::from_vec(ramp, vec![1, 1, lk, 1], x)?.to_dtype(dt)?;
                let q = rand_tensor(x, dt, &[b, hq, lq, d], 90, -1.0, 1.0)?;
                let k = rand_tensor(x, dt, &[b, hkv, lk, d], 91, -1.0, 1.0)?.mul(&ramp)?;
                let v = rand_tensor(x, dt, &[b, hkv, lk, d], 92, -1.0, 1.0)?;
                q.scaled_dot_product_attention(&k, &v, None, causal, Some(1.0))
            })
            .await?;
        }
    }
    Ok(())
}

/// Few rows over many keys, where both GPU paths split the keys into ranges and combine them:
/// both mask kinds, causal or not, an odd Dv, a row with no key (NaN), and a mask dropping the
/// first 300 keys of every row (whole ranges without a key); Lq 3 (the decode pass with Dv 16,
/// whole words) and 5 (tiled; with Dv 16 WGSL's cooperative-matrix pass in f16).
async fn sdpa_split_keys_match_reference(dev: &Device) -> Result<()> {
    let (b, hq, hkv, lk, d) = (1, 4, 2, 700, 8);
    for &dt in SDPA.dtypes() {
        for mask in ["keep", "late keys", "additive"] {
            for (lq, causal, dv) in [(3, false, 13), (3, true, 13), (3, true, 16), (5, true, 13), (5, true, 16)] {
                let what = format!("sdpa {dt} split keys Lq {lq} Lk {lk} Dv {dv} mask {mask} causal {causal}");
                same_as_cpu(dev, tol(dt), &what, |x| {
                    let q = rand_tensor(x, dt, &[b, hq, lq, d], 70, -1.0, 1.0)?;
                    let k = rand_tensor(x, dt, &[b, hkv, lk, d], 71, -1.0, 1.0)?;
                    let v = rand_tensor(x, dt, &[b, hkv, lk, dv], 72, -1.0, 1.0)?;
                    let m = match mask {
                        "keep" => keep_mask(x, &[b, hq, lq, lk], 73)?,
                        "late keys" => Tensor::from_vec((0..lk).map(|j| (j >= 300) as u8).collect(), [1, lk], x)?,
                        _ => rand_tensor(x, dt, &[lq, lk], 74, -2.0, 1.0)?,
                    };
                    q.scaled_dot_product_attention(&k, &v, Some(&m), causal, None)
                })
                .await?;
            }
        }
    }
    Ok(())
}

/// One query over two keys (scale 1, scores 0 and ln 3: weights 1/4 and 3/4), then causal with
/// Lq = 2 over Lk = 3 (query 0 sees keys 0 and 1; query 1 all three), a u8 mask dropping key 1,
/// and an all-dropped row (NaN).
async fn sdpa_hand_computed(dev: &Device) -> Result<()> {
    let (dt, tol) = wide(dev);
    let ln3 = 3f64.ln();
    let q = floats(dev, vec![1.0, 1.0], &[1, 1, 2, 1], dt)?;
    let k = floats(dev, vec![0.0, ln3, ln3], &[1, 1, 3, 1], dt)?;
    let v = floats(dev, vec![2.0, 6.0, 10.0], &[1, 1, 3, 1], dt)?;
    let y = q.scaled_dot_product_attention(&k, &v, None, true, Some(1.0))?;
    // Row 1: weights 1, 3, 3 over 7.
    assert_floats(&y, &[1, 1, 2, 1], &[5.0, (2.0 + 18.0 + 30.0) / 7.0], tol).await?;
    let keep = Tensor::from_vec(vec![1u8, 0, 1, 0, 0, 0], [2, 3], dev)?;
    let y = q.scaled_dot_product_attention(&k, &v, Some(&keep), false, Some(1.0))?;
    assert_floats(&y, &[1, 1, 2, 1], &[(2.0 + 30.0) / 4.0, f64::NAN], tol).await
}

/// A kernel's workgroup or block takes several rows at a time (256 lanes over rows of d / 2 or
/// d) and steps each lane's (b, h, t) to its next row: more rows than a step (t 20 over 3 heads
/// and 2 batches at d 8; 150 rows of one position at d 2), an odd half (d 6), and rows longer
/// than a workgroup's lanes (d 520: a lane takes several words of a row, rows a step apart).
async fn rope_matches_reference(dev: &Device) -> Result<()> {
    for (b, h, t, d) in [(2, 3, 5, 8), (2, 3, 5, 6), (2, 3, 20, 8), (3, 50, 1, 2), (1, 2, 3, 520)] {
        rope_shape_matches_reference(dev, b, h, t, d).await?;
    }
    Ok(())
}

async fn rope_shape_matches_reference(dev: &Device, b: usize, h: usize, t: usize, d: usize) -> Result<()> {
    for &dt in AttentionOp::Rope.dtypes() {
        for op in [AttentionOp::Rope, AttentionOp::RopeI] {
            for view in 0..3 {
                for batched in [false, true] {
                    let what = format!("{op} {dt} [{b},{h},{t},{d}] view {view} batched tables {batched}");
                    same_as_cpu(dev, tol(dt), &what, |x| {
                        let xs = match view {
                            0 => rand_tensor(x, dt, &[b, h, t, d], 70, -2.0, 2.0)?,
                            // Heads split by a view of [B, T, H, D].
                            1 => rand_tensor(x, dt, &[b, t, h, d], 70, -2.0, 2.0)?.transpose(1, 2)?,
                            _ => rand_tensor(x, dt, &[b, h, t + 2, d + 4], 70, -2.0, 2.0)?
                                .narrow(2, 1, t)?
                                .narrow(3, 2, d)?,
                        };
                        let table: &[usize] = if batched { &[b, t, d / 2] } else { &[t, d / 2] };
                        let (c, s) =
                            (rand_tensor(x, dt, table, 71, -1.0, 1.0)?, rand_tensor(x, dt, table, 72, -1.0, 1.0)?);
                        if op == AttentionOp::Rope { xs.rope(&c, &s) } else { xs.rope_i(&c, &s) }
                    })
                    .await?;
                }
            }
        }
    }
    Ok(())
}

/// x = (1, 2, 3, 4) at one position with cos = (0.5, 0), sin = (0.25, 1).
async fn rope_hand_computed(dev: &Device) -> Result<()> {
    let (dt, tol) = wide(dev);
    let x = floats(dev, vec![1.0, 2.0, 3.0, 4.0], &[1, 1, 1, 4], dt)?;
    let (c, s) = (floats(dev, vec![0.5, 0.0], &[1, 2], dt)?, floats(dev, vec![0.25, 1.0], &[1, 2], dt)?);
    // rope: (x0, x2) by (0.5, 0.25), (x1, x3) by (0, 1).
    assert_floats(&x.rope(&c, &s)?, &[1, 1, 1, 4], &[0.5 - 0.75, -4.0, 0.25 + 1.5, 2.0], tol).await?;
    // rope_i: (x0, x1) by (0.5, 0.25): 0.5 - 0.5 and 0.25 + 1; (x2, x3) by (0, 1).
    assert_floats(&x.rope_i(&c, &s)?, &[1, 1, 1, 4], &[0.0, 0.25 + 1.0, -4.0, 3.0], tol).await
}

/// Asserts `r` failed with an error `kind` accepts.
fn expect(r: Result<Tensor>, kind: impl Fn(&Error) -> bool) {
    match r {
        Ok(t) => panic!("expected an error, got a tensor of shape {}", t.shape()),
        Err(e) => assert!(kind(&e), "unexpected error: {e:?}"),
    }
}

async fn attention_errors(dev: &Device) -> Result<()> {
    let t = |shape: &[usize], dt: DType| rand_tensor(dev, dt, shape, 80, -1.0, 1.0);
    let q = t(&[1, 3, 4, 8], DType::F32)?;
    let want = q.to_vec_async::<f32>().await?;
    let (k2, v2) = (t(&[1, 2, 5, 8], DType::F32)?, t(&[1, 2, 5, 8], DType::F32)?);
    let shape = |e: &Error| matches!(e, Error::ShapeMismatch { .. });
    let invalid = |e: &Error| matches!(e, Error::InvalidParam { .. });
    let sdpa =
        |q: &Tensor, k: &Tensor, v: &Tensor, m: Option<&Tensor>| q.scaled_dot_product_attention(k, v, m, false, None);
    // 3 query heads over 2 kv heads.
    expect(sdpa(&q, &k2, &v2, None), invalid);
    let (k, v) = (t(&[1, 1, 5, 8], DType::F32)?, t(&[1, 1, 5, 8], DType::F32)?);
    expect(sdpa(&q, &t(&[1, 1, 5, 6], DType::F32)?, &v, None), shape);
    expect(sdpa(&q, &k, &t(&[1, 1, 4, 8], DType::F32)?, None), shape);
    expect(sdpa(&q, &t(&[2, 1, 5, 8], DType::F32)?, &v, None), shape);
    expect(sdpa(&q, &t(&[1, 1, 5, 8], DType::F16)?, &v, None), |e| matches!(e, Error::DTypeMismatch { .. }));
    expect(sdpa(&t(&[3, 4, 8], DType::F32)?, &k, &v, None), |e| matches!(e, Error::Rank { .. }));
    expect(sdpa(&t(&[1, 1, 1, 1], DType::U32)?, &k, &v, None), |e| matches!(e, Error::WrongDType { .. }));
    expect(sdpa(&q, &k, &v, Some(&t(&[4, 6], DType::F32)?)), |e| matches!(e, Error::Broadcast { .. }));
    expect(sdpa(&q, &k, &v, Some(&t(&[4, 5], DType::F16)?)), |e| matches!(e, Error::DTypeMismatch { .. }));
    expect(q.scaled_dot_product_attention(&k, &v, None, false, Some(f64::NAN)), invalid);
    let x = t(&[1, 2, 4, 6], DType::F32)?;
    let (c, s) = (t(&[4, 3], DType::F32)?, t(&[4, 3], DType::F32)?);
    expect(t(&[1, 2, 4, 5], DType::F32)?.rope(&c, &s), invalid);
    expect(x.rope(&t(&[4, 2], DType::F32)?, &s), shape);
    expect(x.rope_i(&c, &t(&[3, 3], DType::F32)?), shape);
    expect(x.rope(&c, &t(&[4, 3], DType::F16)?), |e| matches!(e, Error::DTypeMismatch { .. }));
    expect(t(&[2, 4, 6], DType::F32)?.rope_i(&c, &s), |e| matches!(e, Error::Rank { .. }));
    // The inputs are untouched, and a valid call still works.
    assert_eq!(q.to_vec_async::<f32>().await?, want, "q changed");
    assert_eq!(sdpa(&q, &k, &v, None)?.dims(), [1, 3, 4, 8]);
    Ok(())
}

/// On wgpu (the one pool with a peak), attention over 512 x 512 scores of f32 (1 MiB) allocates
/// nothing beyond its output: the live bytes' peak stays under the inputs, the output and a
/// quarter of the scores.
#[cfg(not(target_family = "wasm"))]
fn sdpa_allocates_nothing_the_size_of_the_scores() -> Result<()> {
    let Some(shared) = crate::wgpu_or_skip() else { return Ok(()) };
    drop(shared);
    let dev = match Device::wgpu(None, None) {
        Ok(d) => d,
        Err(e) => panic!("a wgpu adapter is there but a second device failed: {e}"),
    };
    let (l, d) = (512, 16);
    let q = Tensor::rand(-1.0, 1.0, [1, 1, l, d], DType::F32, &dev)?;
    let k = Tensor::rand(-1.0, 1.0, [1, 1, l, d], DType::F32, &dev)?;
    let v = Tensor::rand(-1.0, 1.0, [1, 1, l, d], DType::F32, &dev)?;
    let keep = Tensor::ones([1, l], DType::U8, &dev)?;
    dev.synchronize()?;
    let stats = |d: &Device| d.memory_stats().expect("a wgpu device has a pool");
    let before = stats(&dev);
    let y = q.scaled_dot_product_attention(&k, &v, Some(&keep), true, None)?;
    dev.synchronize()?;
    let after = stats(&dev);
    let out = (y.elem_count() * 4) as u64;
    let scores = (l * l * 4) as u64;
    assert!(after.peak_live <= before.live + out + scores / 4, "scores allocated: {before:?} -> {after:?}");
    Ok(())
}
