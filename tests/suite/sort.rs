use crate::{Data, Tol, View, assert_values, cpu, rand_tensor, same_as_cpu, suite, view_tensor};
use half::{bf16, f16};
#[cfg(not(target_family = "wasm"))]
use rocm_wgpu_ops::wgpu::Tune;
use rocm_wgpu_ops::{DType, Device, Error, Result, Tensor};
use std::cmp::Ordering;

suite!(
    argsort_matches_reference,
    argsort_hand_computed,
    argsort_is_stable,
    argsort_places_nan,
    argsort_orders_sorted_rows,
    argsort_of_sorted_is_identity,
    argsort_rejects_rank_0,
    argsort_long_rows_match_reference,
    argsort_many_short_rows_match_reference,
    argsort_block_edges_match_reference,
);
crate::tests!(
    #[cfg(not(target_family = "wasm"))]
    every_wgpu_pairs_per_invocation_matches_reference
);

/// Rows of 1 and 0, rank 1, short and long rows, and no rows at all.
const SHAPES: &[&[usize]] = &[&[5, 7], &[2, 3, 4], &[4, 1], &[9], &[3, 0], &[0, 5], &[2, 300]];

/// Few distinct values, so ties (and stability) are common; floats get fractions too.
fn range(dtype: DType) -> (f64, f64) {
    if dtype.is_int() { (0.0, 6.0) } else { (-3.0, 3.0) }
}

/// `view_tensor`, except that a rank-1 offset view is a window of a longer vector (the shared
/// helper widens dim 0 twice there and then cannot narrow it).
fn input(dev: &Device, view: View, dtype: DType, shape: &[usize], seed: u64, lo: f64, hi: f64) -> Result<Tensor> {
    match (view, shape) {
        (View::Offset, &[n]) => rand_tensor(dev, dtype, &[n + 5], seed, lo, hi)?.narrow(0, 2, n),
        _ => view_tensor(dev, view, dtype, shape, seed, lo, hi),
    }
}

/// `shape` laid out as `view` (as `input` does it) over a tensor `make` builds for the shape
/// stored.
fn viewed(view: View, shape: &[usize], make: impl Fn(&[usize]) -> Result<Tensor>) -> Result<Tensor> {
    let (rank, mut s) = (shape.len(), shape.to_vec());
    match view {
        View::Transposed if rank >= 2 => {
            s.swap(0, rank - 1);
            make(&s)?.transpose(0, rank - 1)
        }
        View::Offset if rank == 1 => make(&[shape[0] + 5])?.narrow(0, 2, shape[0]),
        View::Offset if rank >= 2 => {
            s[rank - 1] += 3;
            s[0] += 2;
            make(&s)?.narrow(0, 1, shape[0])?.narrow(rank - 1, 2, shape[rank - 1])
        }
        View::Broadcast if rank >= 1 => {
            s[0] = 1;
            make(&s)?.broadcast_as(shape)
        }
        _ => make(shape),
    }
}

/// Integer values in `[-spread, spread]` (many exact ties; u8 and u32 clamp at 0) laid out as
/// `view`; floats get a NaN at every `nan_every`-th stored element (0: none) and both zeros.
fn tied_input(
    dev: &Device,
    view: View,
    dtype: DType,
    shape: &[usize],
    seed: u64,
    spread: i32,
    nan_every: usize,
) -> Result<Tensor> {
    viewed(view, shape, |s| {
        let n: usize = s.iter().product();
        let spread = spread as f64;
        let mut v: Vec<f64> = Data::new(seed).storage(DType::F64, n, -spread, spread + 1.0).to_f64_vec();
        for (k, x) in v.iter_mut().enumerate() {
            *x = x.floor();
            if matches!(dtype, DType::U8 | DType::U32) {
                *x = x.max(0.0);
            }
            if *x == 0.0 && k % 2 == 1 {
                *x = -0.0;
            }
            if !dtype.is_int() && nan_every > 0 && k % nan_every == nan_every - 1 {
                *x = f64::NAN;
            }
        }
        crate::floats(dev, v, s, dtype)
    })
}

async fn argsort_matches_reference(dev: &Device) -> Result<()> {
    for &dtype in DType::ALL {
        let (lo, hi) = range(dtype);
        for view in View::ALL {
            for &shape in SHAPES {
                for descending in [false, true] {
                    let what = format!("argsort {dtype} {view:?} {shape:?} descending {descending}");
                    same_as_cpu(dev, Tol::EXACT, &what, |d| {
                        input(d, view, dtype, shape, 30, lo, hi)?.argsort(descending)
                    })
                    .await?;
                    // Integer-valued floats: many exact ties.
                    same_as_cpu(dev, Tol::EXACT, &what, |d| {
                        tied_input(d, view, dtype, shape, 31, 2, 0)?.argsort(descending)
                    })
                    .await?;
                }
            }
        }
    }
    Ok(())
}

async fn argsort_hand_computed(dev: &Device) -> Result<()> {
    let x = Tensor::from_vec(vec![3i64, -1, 2, 0, 0, -1], [2, 3], dev)?;
    assert_values(&x.argsort(false)?, &[2, 3], &[1u32, 2, 0, 2, 0, 1], 0.0).await?;
    assert_values(&x.argsort(true)?, &[2, 3], &[0u32, 2, 1, 0, 1, 2], 0.0).await?;
    // The transpose [[3, 0], [-1, 0], [2, -1]] sorted along its rows of 2.
    assert_values(&x.t()?.argsort(false)?, &[3, 2], &[1u32, 0, 0, 1, 1, 0], 0.0).await?;
    let f = Tensor::from_vec(vec![0.5f32, -2.0, 1.25, f32::NEG_INFINITY, f32::INFINITY], [5], dev)?;
    assert_values(&f.argsort(false)?, &[5], &[3u32, 1, 0, 2, 4], 0.0).await?;
    assert_values(&f.argsort(true)?, &[5], &[4u32, 2, 0, 1, 3], 0.0).await?;
    let u = Tensor::from_vec(vec![200u8, 7, 255, 0], [4], dev)?;
    assert_values(&u.argsort(false)?, &[4], &[3u32, 1, 0, 2], 0.0).await?;
    let w = Tensor::from_vec(vec![u32::MAX, 1, 0], [3], dev)?;
    assert_values(&w.argsort(true)?, &[3], &[0u32, 1, 2], 0.0).await?;
    let h = Tensor::from_vec([1.5f32, -0.5, 0.25].map(f16::from_f32).to_vec(), [3], dev)?;
    assert_values(&h.argsort(false)?, &[3], &[1u32, 2, 0], 0.0).await?;
    let b = Tensor::from_vec([1.5f32, -0.5, 0.25].map(bf16::from_f32).to_vec(), [3], dev)?;
    assert_values(&b.argsort(true)?, &[3], &[0u32, 2, 1], 0.0).await?;
    // A broadcast: every row the same.
    let r = Tensor::from_vec(vec![2.0f64, 1.0, 3.0], [3], dev)?.broadcast_as([2, 3])?;
    assert_values(&r.argsort(false)?, &[2, 3], &[1u32, 0, 2, 1, 0, 2], 0.0).await?;
    let one = Tensor::from_vec(vec![4.0f32, 9.0], [2, 1], dev)?;
    assert_values(&one.argsort(true)?, &[2, 1], &[0u32, 0], 0.0).await?;
    let empty = Tensor::zeros([3, 0], DType::F32, dev)?;
    assert_values(&empty.argsort(false)?, &[3, 0], &[] as &[u32], 0.0).await?;
    Ok(())
}

async fn argsort_is_stable(dev: &Device) -> Result<()> {
    let x = Tensor::from_vec(vec![3u32, 1, 2, 1, 3], [5], dev)?;
    assert_values(&x.argsort(false)?, &[5], &[1u32, 3, 2, 0, 4], 0.0).await?;
    assert_values(&x.argsort(true)?, &[5], &[0u32, 4, 2, 1, 3], 0.0).await?;
    // -0.0 equals 0.0: neither moves ahead of the other.
    let z = Tensor::from_vec(vec![0.0f32, -0.0, -1.0, 0.0], [4], dev)?;
    assert_values(&z.argsort(false)?, &[4], &[2u32, 0, 1, 3], 0.0).await?;
    assert_values(&z.argsort(true)?, &[4], &[0u32, 1, 3, 2], 0.0).await?;
    let n = Tensor::from_vec(vec![-0.0f64, 0.0], [2], dev)?;
    assert_values(&n.argsort(false)?, &[2], &[0u32, 1], 0.0).await?;
    assert_values(&n.argsort(true)?, &[2], &[0u32, 1], 0.0).await?;
    let c = Tensor::from_vec(vec![5i64; 6], [2, 3], dev)?;
    assert_values(&c.argsort(true)?, &[2, 3], &[0u32, 1, 2, 0, 1, 2], 0.0).await?;
    Ok(())
}

async fn argsort_places_nan(dev: &Device) -> Result<()> {
    let nan = f32::NAN;
    let x = Tensor::from_vec(vec![2.0f32, nan, -1.0, nan, 0.0], [5], dev)?;
    assert_values(&x.argsort(false)?, &[5], &[2u32, 4, 0, 1, 3], 0.0).await?;
    assert_values(&x.argsort(true)?, &[5], &[1u32, 3, 0, 4, 2], 0.0).await?;
    let y = Tensor::from_vec(vec![f64::INFINITY, f64::NAN, f64::NEG_INFINITY], [3], dev)?;
    assert_values(&y.argsort(false)?, &[3], &[2u32, 0, 1], 0.0).await?;
    assert_values(&y.argsort(true)?, &[3], &[1u32, 0, 2], 0.0).await?;
    let h = Tensor::from_vec(vec![f16::NAN, f16::ONE, f16::NAN, f16::ZERO], [2, 2], dev)?;
    assert_values(&h.argsort(false)?, &[2, 2], &[1u32, 0, 1, 0], 0.0).await?;
    assert_values(&h.argsort(true)?, &[2, 2], &[0u32, 1, 0, 1], 0.0).await?;
    Ok(())
}

/// The spec's order: NaN above every number and equal to every NaN; -0.0 equals 0.0.
fn key_order(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// The rows of `x` (as f64, row-major) sorted by `ids`; checks each index row is a permutation
/// that keeps ties in order.
async fn sorted_rows(x: &Tensor, ids: &Tensor, what: &str) -> Result<Vec<Vec<f64>>> {
    let n = x.dims().last().copied().unwrap_or(1);
    let (xs, is) = (x.to_cpu_storage_async().await?.to_f64_vec(), ids.to_vec_async::<u32>().await?);
    assert_eq!(ids.dims(), x.dims(), "{what}: shape");
    let mut rows = vec![];
    for (r, (xr, ir)) in xs.chunks(n.max(1)).zip(is.chunks(n.max(1))).enumerate() {
        let mut seen = vec![false; n];
        for &i in ir {
            let i = i as usize;
            assert!(i < n && !std::mem::replace(&mut seen[i], true), "{what}: row {r} {ir:?} is no permutation");
        }
        rows.push(ir.iter().map(|&i| xr[i as usize]).collect());
        // Equal keys keep their order: indices rise across every tie.
        for (k, w) in ir.windows(2).enumerate() {
            let tie = key_order(xr[w[0] as usize], xr[w[1] as usize]) == Ordering::Equal;
            assert!(!tie || w[0] < w[1], "{what}: row {r}: tie at {k} out of order in {ir:?}");
        }
    }
    Ok(rows)
}

/// Inputs with ties, NaN (floats), and every view.
fn inputs(dev: &Device) -> Result<Vec<(String, Tensor)>> {
    let mut out = vec![];
    for &dtype in DType::ALL {
        let (lo, hi) = range(dtype);
        for view in View::ALL {
            for &shape in SHAPES {
                out.push((format!("{dtype} {view:?} {shape:?}"), input(dev, view, dtype, shape, 32, lo, hi)?));
            }
        }
    }
    for &dtype in DType::FLOAT {
        let mut v = crate::Data::new(33).storage(DType::F64, 24, -2.0, 3.0).to_f64_vec();
        v.iter_mut().for_each(|x| *x = x.floor());
        for k in [0, 5, 6, 11, 19, 23] {
            v[k] = f64::NAN;
        }
        v[7] = -0.0;
        out.push((format!("{dtype} with NaN"), crate::floats(dev, v, &[4, 6], dtype)?));
    }
    Ok(out)
}

async fn argsort_orders_sorted_rows(dev: &Device) -> Result<()> {
    // The values are read from the cpu twin of each input (a device may lack f64 copies).
    for ((what, x), (_, host)) in inputs(dev)?.into_iter().zip(inputs(&cpu())?) {
        // Every input is a class of its own (one readback each way): sampled in a browser.
        if crate::sample::skip() {
            continue;
        }
        for descending in [false, true] {
            let what = format!("{what} descending {descending}");
            for row in sorted_rows(&host, &x.argsort(descending)?, &what).await? {
                for w in row.windows(2) {
                    let order = if descending { key_order(w[1], w[0]) } else { key_order(w[0], w[1]) };
                    assert!(order != Ordering::Greater, "{what}: not monotone: {row:?}");
                }
            }
        }
    }
    Ok(())
}

async fn argsort_of_sorted_is_identity(dev: &Device) -> Result<()> {
    // The values are read from the cpu twin of each input (a device may lack f64 copies).
    for ((what, x), (_, host)) in inputs(dev)?.into_iter().zip(inputs(&cpu())?) {
        // Every input is a class of its own (one readback each way): sampled in a browser.
        if crate::sample::skip() {
            continue;
        }
        for descending in [false, true] {
            let what = format!("{what} descending {descending}");
            let rows = sorted_rows(&host, &x.argsort(descending)?, &what).await?;
            let sorted = crate::floats(dev, rows.concat(), x.dims(), x.dtype())?;
            let n = x.dims().last().copied().unwrap_or(1);
            let iota: Vec<u32> = (0..x.elem_count()).map(|i| (i % n.max(1)) as u32).collect();
            assert_values(&sorted.argsort(descending)?, x.dims(), &iota, 0.0).await?;
        }
    }
    Ok(())
}

async fn argsort_rejects_rank_0(dev: &Device) -> Result<()> {
    let s = Tensor::from_vec(vec![1.0f32], (), dev)?;
    assert!(matches!(s.argsort(false), Err(Error::Rank { .. })));
    Ok(())
}

/// Rows longer than one workgroup's block (merged in passes), around the block sizes.
async fn argsort_long_rows_match_reference(dev: &Device) -> Result<()> {
    let shapes: &[(&[usize], &[DType])] = &[
        (&[2, 5000], DType::ALL),
        (&[3, 2049], &[DType::F32, DType::I64, DType::U8]),
        (&[2, 4097], &[DType::F32, DType::F16, DType::I64]),
        (&[1, 8192], &[DType::BF16, DType::U32, DType::F64]),
        (&[1, 70000], &[DType::F32, DType::I64]),
        (&[100_003], &[DType::F32]),
    ];
    // In a browser each (shape, view) class in one of its dtypes, turning.
    for (s, &(shape, dtypes)) in shapes.iter().enumerate() {
        for (v, view) in [View::Contiguous, View::Transposed, View::Offset].into_iter().enumerate() {
            for dtype in crate::rotated(dev, dtypes, s + v) {
                for descending in [false, true] {
                    let what = format!("argsort {dtype} {view:?} {shape:?} descending {descending}");
                    same_as_cpu(dev, Tol::EXACT, &what, |d| {
                        tied_input(d, view, dtype, shape, 34, 20, 37)?.argsort(descending)
                    })
                    .await?;
                }
            }
        }
    }
    // Distinct values: every element moves.
    same_as_cpu(dev, Tol::EXACT, "argsort f32 [2, 30000] distinct", |d| {
        rand_tensor(d, DType::F32, &[2, 30000], 35, -1e3, 1e3)?.argsort(false)
    })
    .await?;
    Ok(())
}

/// Many rows of a few elements (several rows per workgroup). In a browser each (view, shape)
/// class runs in one dtype, turning.
async fn argsort_many_short_rows_match_reference(dev: &Device) -> Result<()> {
    let shapes: &[&[usize]] = &[&[3000, 5], &[1000, 33], &[700, 1], &[257, 2], &[40, 3, 129], &[5, 3000]];
    for &dtype in DType::ALL {
        for (v, view) in View::ALL.into_iter().enumerate() {
            for (s, &shape) in shapes.iter().enumerate() {
                if !crate::rotated_dtypes(dev, "argsort", DType::ALL, v * shapes.len() + s).contains(&dtype) {
                    continue;
                }
                for descending in [false, true] {
                    let what = format!("argsort {dtype} {view:?} {shape:?} descending {descending}");
                    same_as_cpu(dev, Tol::EXACT, &what, |d| {
                        tied_input(d, view, dtype, shape, 36, 3, 11)?.argsort(descending)
                    })
                    .await?;
                }
            }
        }
    }
    Ok(())
}

/// Rows around the pairs an invocation holds (8, 16, 32) and the block sizes (1024 .. 4096 with
/// the workgroup memory of today's adapters): a few rows a workgroup, one row filling a block
/// (every round of the network), one merge, and ping-pong merges.
async fn argsort_block_edges_match_reference(dev: &Device) -> Result<()> {
    let shapes: &[&[usize]] = &[
        &[6, 8],
        &[5, 16],
        &[7, 17],
        &[4, 31],
        &[3, 33],
        &[3, 65],
        &[2, 1024],
        &[2, 2048],
        &[2, 4095],
        &[3, 4096],
        &[1, 9000],
    ];
    // In a browser each (view, shape) class in one dtype, turning.
    for (v, view) in [View::Contiguous, View::Transposed].into_iter().enumerate() {
        for (s, &shape) in shapes.iter().enumerate() {
            for dtype in crate::rotated(dev, &[DType::F32, DType::I64, DType::F16], v + s) {
                for descending in [false, true] {
                    let what = format!("argsort {dtype} {view:?} {shape:?} descending {descending}");
                    same_as_cpu(dev, Tol::EXACT, &what, |d| {
                        tied_input(d, view, dtype, shape, 38, 50, 13)?.argsort(descending)
                    })
                    .await?;
                }
            }
        }
    }
    same_as_cpu(dev, Tol::EXACT, "argsort f32 [4, 4096] distinct descending", |d| {
        rand_tensor(d, DType::F32, &[4, 4096], 39, -1e3, 1e3)?.argsort(true)
    })
    .await?;
    Ok(())
}

/// The other pairs per invocation of the WGSL tuning table (`RWO_WGPU_TUNE=sort_pairs=16`) on
/// a device of its own.
#[cfg(not(target_family = "wasm"))] // a wgpu device of its own, opened and run blocking
fn every_wgpu_pairs_per_invocation_matches_reference() -> Result<()> {
    if crate::wgpu_or_skip().is_none() {
        return Ok(());
    }
    let dev = Device::wgpu_tuned(None, None, Tune { sort_pairs: Some(16), ..Tune::default() })?;
    pollster::block_on(async {
        argsort_block_edges_match_reference(&dev).await?;
        argsort_is_stable(&dev).await?;
        argsort_places_nan(&dev).await
    })
}
