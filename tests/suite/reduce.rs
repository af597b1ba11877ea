use crate::{Tol, View, assert_close, assert_values, cpu, same_as_cpu, suite, view_tensor};
use half::{bf16, f16};
use rocm_wgpu_ops::spec::reduce::ReduceOp;
use rocm_wgpu_ops::{DType, Device, Error, Result, Tensor};

suite!(
    reduce_matches_reference,
    reduce_empty_matches_reference,
    reduce_long_matches_reference,
    nan_in_long_rows_matches_reference,
    f16_specials_in_whole_words_match_reference,
    sum_hand_computed,
    sum_wraps_integers,
    sum_rounds_once,
    sum_of_empty_dim_is_zero,
    sum_all_hand_computed,
    min_max_hand_computed,
    arg_hand_computed,
    arg_over_two_dims_is_flat,
    nan_hand_computed,
    arg_agrees_with_value,
    sum_over_two_dims_is_nested_sum,
    reduce_rejects_bad_input,
);

/// Shapes with the dim sets reduced over: first, last, middle, two apart, all; long rows.
const CASES: &[(&[usize], &[&[usize]])] = &[
    (&[3, 4, 5], &[&[0], &[2], &[1], &[0, 2], &[0, 1, 2]]),
    (&[4, 300], &[&[1], &[0], &[0, 1]]),
    (&[2, 3, 2, 3], &[&[1, 3], &[0, 2]]),
];

/// Integer data wide enough for u8 sums to wrap; floats with cancellation.
fn range(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::U8 | DType::U32 => (0.0, 250.0),
        DType::I64 => (-250.0, 250.0),
        _ => (-3.0, 3.0),
    }
}

/// Min, max and the arg ops pick an element: exact. A sum rounds once to f16/bf16 from a
/// wider accumulator; a GPU may accumulate f32/f64 in their own type, about a rounding a term.
fn tol(op: ReduceOp, dtype: DType, terms: usize) -> Tol {
    match (op, dtype) {
        (ReduceOp::Sum, DType::F32 | DType::F64) => Tol::of(dtype).times(terms.max(1) as f64),
        (ReduceOp::Sum, _) => Tol::of(dtype).times(2.0),
        _ => Tol::EXACT,
    }
}

/// In a browser each (view, shape, dims) class of an op runs in one dtype, turning.
async fn reduce_matches_reference(dev: &Device) -> Result<()> {
    for &op in ReduceOp::ALL {
        for &dtype in op.dtypes() {
            let (lo, hi) = range(dtype);
            let mut class = 0;
            for view in View::ALL {
                for &(shape, dim_sets) in CASES {
                    for &dims in dim_sets {
                        class += 1;
                        if !crate::rotated_dtypes(dev, op.name(), op.dtypes(), class).contains(&dtype) {
                            continue;
                        }
                        let terms = dims.iter().map(|&d| shape[d]).product();
                        for keepdim in [true, false] {
                            let what = format!("{op} {dtype} {view:?} {shape:?} dims {dims:?} keepdim {keepdim}");
                            same_as_cpu(dev, tol(op, dtype, terms), &what, |d| {
                                view_tensor(d, view, dtype, shape, 20, lo, hi)?.reduce(op, dims, keepdim)
                            })
                            .await?;
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// Extents long enough for the multi-workgroup paths: chunked rows and columns with a second
/// pass over the partials, rows of whole 16-byte words and columns of whole words of every
/// dtype, reduced dims that are not the innermost, whole-tensor sums.
const LONG: &[(&[usize], &[&[usize]])] = &[
    (&[3, 5000], &[&[1]]),
    (&[3, 20000], &[&[1], &[0, 1]]),
    (&[5000, 3], &[&[0]]),
    (&[64, 300, 7], &[&[0, 2], &[1]]),
    (&[200, 300], &[&[0, 1], &[0]]),
    (&[5000, 32], &[&[0]]),
    (&[6, 40, 3, 32], &[&[0, 2], &[1, 3]]),
];

/// In a browser each (view, shape, dims) class of an op runs in one dtype, turning.
async fn reduce_long_matches_reference(dev: &Device) -> Result<()> {
    for &op in ReduceOp::ALL {
        for &dtype in op.dtypes() {
            let (lo, hi) = range(dtype);
            let mut class = 0;
            for view in View::ALL {
                for &(shape, dim_sets) in LONG {
                    for &dims in dim_sets {
                        class += 1;
                        if !crate::rotated_dtypes(dev, op.name(), op.dtypes(), class).contains(&dtype) {
                            continue;
                        }
                        let terms = dims.iter().map(|&d| shape[d]).product();
                        let what = format!("{op} {dtype} {view:?} {shape:?} dims {dims:?}");
                        same_as_cpu(dev, tol(op, dtype, terms), &what, |d| {
                            view_tensor(d, view, dtype, shape, 25, lo, hi)?.reduce(op, dims, true)
                        })
                        .await?;
                    }
                }
            }
        }
    }
    Ok(())
}

async fn nan_in_long_rows_matches_reference(dev: &Device) -> Result<()> {
    let n = 20000;
    let mut v = crate::Data::new(26).storage(DType::F64, 3 * n, -3.0, 3.0).to_f64_vec();
    // Row 0: two NaN far apart; row 1: one NaN at the very end; row 2: none, with ties.
    for k in [7000, 15000, 2 * n - 1] {
        v[k] = f64::NAN;
    }
    for k in [2 * n + 100, 2 * n + 9000, 3 * n - 1] {
        v[k] = 9.0;
    }
    for &dtype in DType::FLOAT {
        // On the cpu: each comparison moves it to the device (f64 as bytes where f64 is unsupported).
        let x = Tensor::from_vec(v.clone(), [3, n], &cpu())?.to_dtype(dtype)?;
        for op in [ReduceOp::Min, ReduceOp::Max, ReduceOp::ArgMin, ReduceOp::ArgMax] {
            let what = format!("{op} {dtype} with NaN");
            same_as_cpu(dev, Tol::EXACT, &what, |d| x.to_device(d)?.reduce(op, [1], false)).await?;
            same_as_cpu(dev, Tol::EXACT, &what, |d| x.to_device(d)?.t()?.reduce(op, [0], false)).await?;
            same_as_cpu(dev, Tol::EXACT, &what, |d| x.to_device(d)?.t()?.contiguous()?.reduce(op, [0], false)).await?;
            same_as_cpu(dev, Tol::EXACT, &what, |d| x.to_device(d)?.reduce(op, [0, 1], false)).await?;
        }
    }
    Ok(())
}

/// Rows and columns of whole 16-byte words decode f16 and bf16 themselves: subnormals,
/// infinities, the largest finite values and signed zeros.
async fn f16_specials_in_whole_words_match_reference(dev: &Device) -> Result<()> {
    let specials = [6e-8f32, -0.0, 0.0, 65504.0, -65504.0, f32::INFINITY, 1.5, -2.25, 1e-4, 7.0, -3e-5];
    let tiny = [6e-8f32, -6e-8, 3e-5, -0.0, 0.0, 1e-4, -1.2e-7, 5.9e-5];
    for data in [&specials[..], &tiny] {
        let v: Vec<f32> = (0..64 * 16).map(|i| data[(i * 7 + i / 16) % data.len()]).collect();
        for dtype in [DType::F16, DType::BF16] {
            let x = Tensor::from_vec(v.clone(), [64, 16], &cpu())?.to_dtype(dtype)?;
            for op in [ReduceOp::Min, ReduceOp::Max, ReduceOp::ArgMin, ReduceOp::ArgMax, ReduceOp::Sum] {
                for dims in [&[1][..], &[0], &[0, 1]] {
                    let what = format!("{op} {dtype} specials dims {dims:?}");
                    same_as_cpu(dev, Tol::EXACT, &what, |d| x.to_device(d)?.reduce(op, dims, false)).await?;
                }
            }
        }
    }
    Ok(())
}

async fn reduce_empty_matches_reference(dev: &Device) -> Result<()> {
    let cases: &[(&[usize], &[usize])] =
        &[(&[0, 4], &[1]), (&[0, 4], &[0]), (&[0, 4], &[0, 1]), (&[3, 0, 2], &[1]), (&[3, 0, 2], &[0, 2])];
    for &op in ReduceOp::ALL {
        for &dtype in op.dtypes() {
            for view in View::ALL {
                for &(shape, dims) in cases {
                    let extent: usize = dims.iter().map(|&d| shape[d]).product();
                    if extent == 0 && op != ReduceOp::Sum {
                        continue;
                    }
                    for keepdim in [true, false] {
                        let what = format!("{op} {dtype} {view:?} {shape:?} dims {dims:?} keepdim {keepdim}");
                        same_as_cpu(dev, Tol::EXACT, &what, |d| {
                            view_tensor(d, view, dtype, shape, 21, 0.0, 9.0)?.reduce(op, dims, keepdim)
                        })
                        .await?;
                    }
                }
            }
        }
    }
    Ok(())
}

async fn sum_hand_computed(dev: &Device) -> Result<()> {
    let x = Tensor::from_vec(vec![1f32, 5., 3., 4., 2., 6.], [2, 3], dev)?;
    assert_values(&x.sum([0])?, &[3], &[5f32, 7., 9.], 0.0).await?;
    assert_values(&x.sum([1])?, &[2], &[9f32, 12.], 0.0).await?;
    assert_values(&x.sum_keepdim([1])?, &[2, 1], &[9f32, 12.], 0.0).await?;
    assert_values(&x.sum([0, 1])?, &[], &[21f32], 0.0).await?;
    assert_values(&x.t()?.sum([1])?, &[3], &[5f32, 7., 9.], 0.0).await?;
    let i = Tensor::from_vec(vec![-7i64, 3, 10, -1, 0, 2], [3, 2], dev)?;
    assert_values(&i.sum([0])?, &[2], &[3i64, 4], 0.0).await?;
    assert_values(&i.sum([1])?, &[3], &[-4i64, 9, 2], 0.0).await?;
    // [2, 3, 2] summed over the two outer dims: a column sum across blocks.
    let y = crate::floats(dev, (1..=12).map(f64::from).collect(), &[2, 3, 2], crate::wide(dev).0)?;
    crate::assert_floats(&y.sum([0, 1])?, &[2], &[36.0, 42.0], 0.0).await?;
    crate::assert_floats(&y.sum([0, 2])?, &[3], &[18.0, 26.0, 34.0], 0.0).await?;
    crate::assert_floats(&y.sum_keepdim([0, 2])?, &[1, 3, 1], &[18.0, 26.0, 34.0], 0.0).await?;
    Ok(())
}

async fn sum_wraps_integers(dev: &Device) -> Result<()> {
    let u = Tensor::from_vec(vec![200u8, 100, 3], [3], dev)?;
    assert_values(&u.sum([0])?, &[], &[47u8], 0.0).await?;
    let w = Tensor::from_vec(vec![u32::MAX, 2, u32::MAX, u32::MAX], [2, 2], dev)?;
    assert_values(&w.sum([1])?, &[2], &[1u32, u32::MAX - 1], 0.0).await?;
    let i = Tensor::from_vec(vec![i64::MAX, 1, i64::MIN, -1], [2, 2], dev)?;
    assert_values(&i.sum([1])?, &[2], &[i64::MIN, i64::MAX], 0.0).await?;
    Ok(())
}

async fn sum_rounds_once(dev: &Device) -> Result<()> {
    // Step by step in f16, 2048 + 1 rounds back to 2048 (twice); summed wide it is 2050.
    let h = Tensor::from_vec(vec![f16::from_f32(2048.0), f16::ONE, f16::ONE], [3], dev)?;
    assert_values(&h.sum([0])?, &[], &[f16::from_f32(2050.0)], 0.0).await?;
    let b = Tensor::from_vec(vec![bf16::from_f32(256.0), bf16::ONE, bf16::ONE], [3], dev)?;
    assert_values(&b.sum([0])?, &[], &[bf16::from_f32(258.0)], 0.0).await?;
    // 2^24 + 1 + 1 in f32: wide accumulation keeps both ones.
    let f = Tensor::from_vec(vec![16_777_216f32, 1.0, 1.0], [3], dev)?;
    assert_values(&f.sum([0])?, &[], &[16_777_218f32], 0.0).await?;
    Ok(())
}

async fn sum_of_empty_dim_is_zero(dev: &Device) -> Result<()> {
    for &dtype in DType::ALL.iter().filter(|&&d| dev.supports("sum", d).is_ok()) {
        let x = Tensor::zeros([2, 0, 3], dtype, dev)?;
        crate::assert_floats(&x.sum([1])?, &[2, 3], &[0.0; 6], 0.0).await?;
        crate::assert_floats(&x.sum_keepdim([0, 1])?, &[1, 1, 3], &[0.0; 3], 0.0).await?;
        crate::assert_floats(&x.sum([2])?, &[2, 0], &[], 0.0).await?;
        crate::assert_floats(&x.sum_all()?, &[], &[0.0], 0.0).await?;
    }
    // An empty window of a non-empty tensor.
    let y = Tensor::from_vec(vec![1f32, 2., 3., 4.], [2, 2], dev)?.narrow(1, 2, 0)?;
    assert_values(&y.sum([1])?, &[2], &[0f32, 0.], 0.0).await?;
    Ok(())
}

async fn sum_all_hand_computed(dev: &Device) -> Result<()> {
    let x = Tensor::from_vec(vec![1i64, 2, 3, 4, 5, 6], [2, 3], dev)?;
    assert_values(&x.sum_all()?, &[], &[21i64], 0.0).await?;
    assert_values(&x.t()?.sum_all()?, &[], &[21i64], 0.0).await?;
    assert_values(&x.narrow(1, 1, 2)?.sum_all()?, &[], &[16i64], 0.0).await?;
    let s = Tensor::from_vec(vec![2.5f32], (), dev)?;
    assert_values(&s.sum_all()?, &[], &[2.5f32], 0.0).await?;
    let b = crate::floats(dev, vec![1.5, -0.5], &[2], crate::wide(dev).0)?.broadcast_as([3, 2])?;
    crate::assert_floats(&b.sum_all()?, &[], &[3.0], 0.0).await?;
    Ok(())
}

async fn min_max_hand_computed(dev: &Device) -> Result<()> {
    let x = Tensor::from_vec(vec![1f32, 5., 3., 4., 2., 6.], [2, 3], dev)?;
    assert_values(&x.min([1])?, &[2], &[1f32, 2.], 0.0).await?;
    assert_values(&x.max([1])?, &[2], &[5f32, 6.], 0.0).await?;
    assert_values(&x.min([0])?, &[3], &[1f32, 2., 3.], 0.0).await?;
    assert_values(&x.max_keepdim([0])?, &[1, 3], &[4f32, 5., 6.], 0.0).await?;
    assert_values(&x.max([0, 1])?, &[], &[6f32], 0.0).await?;
    assert_values(&x.t()?.min([1])?, &[3], &[1f32, 2., 3.], 0.0).await?;
    let i = Tensor::from_vec(vec![-7i64, 3, i64::MIN, i64::MAX], [2, 2], dev)?;
    assert_values(&i.min([1])?, &[2], &[-7i64, i64::MIN], 0.0).await?;
    assert_values(&i.max([0])?, &[2], &[-7i64, i64::MAX], 0.0).await?;
    let u = Tensor::from_vec(vec![9u8, 255, 0, 7], [4], dev)?;
    assert_values(&u.min([0])?, &[], &[0u8], 0.0).await?;
    assert_values(&u.max([0])?, &[], &[255u8], 0.0).await?;
    let h = Tensor::from_vec(vec![f16::from_f32(-1.5), f16::NEG_INFINITY, f16::from_f32(0.25)], [3], dev)?;
    assert_values(&h.min([0])?, &[], &[f16::NEG_INFINITY], 0.0).await?;
    assert_values(&h.max([0])?, &[], &[f16::from_f32(0.25)], 0.0).await?;
    Ok(())
}

async fn arg_hand_computed(dev: &Device) -> Result<()> {
    let x = Tensor::from_vec(vec![1f32, 5., 3., 4., 2., 6.], [2, 3], dev)?;
    assert_values(&x.argmax([1])?, &[2], &[1u32, 2], 0.0).await?;
    assert_values(&x.argmin([1])?, &[2], &[0u32, 1], 0.0).await?;
    assert_values(&x.argmin([0])?, &[3], &[0u32, 1, 0], 0.0).await?;
    assert_values(&x.argmax_keepdim([0])?, &[1, 3], &[1u32, 0, 1], 0.0).await?;
    // The transpose [[1, 4], [5, 2], [3, 6]]: indices follow the view, not the storage.
    assert_values(&x.t()?.argmax([0])?, &[2], &[1u32, 2], 0.0).await?;
    assert_values(&x.t()?.argmax([0, 1])?, &[], &[5u32], 0.0).await?;
    assert_values(&x.t()?.argmin([0, 1])?, &[], &[0u32], 0.0).await?;
    // Ties: the first occurrence wins.
    let t = Tensor::from_vec(vec![3u32, 1, 3, 1], [4], dev)?;
    assert_values(&t.argmax([0])?, &[], &[0u32], 0.0).await?;
    assert_values(&t.argmin([0])?, &[], &[1u32], 0.0).await?;
    let z = crate::floats(dev, vec![0.0, -0.0, -1.0, -1.0], &[2, 2], crate::wide(dev).0)?;
    assert_values(&z.argmax([1])?, &[2], &[0u32, 0], 0.0).await?;
    assert_values(&z.argmin([1])?, &[2], &[0u32, 0], 0.0).await?;
    // Broadcast rows are all equal: index 0 everywhere.
    let b = Tensor::from_vec(vec![2i64, -5, 2], [3], dev)?.broadcast_as([4, 3])?;
    assert_values(&b.argmax([0])?, &[3], &[0u32, 0, 0], 0.0).await?;
    assert_values(&b.argmin([0, 1])?, &[], &[1u32], 0.0).await?;
    assert_values(&b.argmax([1])?, &[4], &[0u32; 4], 0.0).await?;
    Ok(())
}

async fn arg_over_two_dims_is_flat(dev: &Device) -> Result<()> {
    // x[i][j][k], flat i*4 + j*2 + k.
    let x = Tensor::from_vec(vec![0i64, 7, 3, 2, 5, 1, 4, 6], [2, 2, 2], dev)?;
    // Over (i, k), flat i*2 + k: j=0 sees [0, 7, 5, 1], j=1 sees [3, 2, 4, 6].
    assert_values(&x.argmax([0, 2])?, &[2], &[1u32, 3], 0.0).await?;
    assert_values(&x.argmin([0, 2])?, &[2], &[0u32, 1], 0.0).await?;
    assert_values(&x.max([0, 2])?, &[2], &[7i64, 6], 0.0).await?;
    assert_values(&x.min_keepdim([0, 2])?, &[1, 2, 1], &[0i64, 2], 0.0).await?;
    assert_values(&x.sum([0, 2])?, &[2], &[13i64, 15], 0.0).await?;
    // Over (j, k): i=0 sees [0, 7, 3, 2], i=1 sees [5, 1, 4, 6].
    assert_values(&x.argmax([1, 2])?, &[2], &[1u32, 3], 0.0).await?;
    assert_values(&x.argmin_keepdim([1, 2])?, &[2, 1, 1], &[0u32, 1], 0.0).await?;
    // Over everything: 7 at flat 1, 0 at flat 0; permuted, 7 sits at (k=1, j=0, i=0) = 4.
    assert_values(&x.argmax([0, 1, 2])?, &[], &[1u32], 0.0).await?;
    assert_values(&x.permute([2, 1, 0])?.argmax([0, 1, 2])?, &[], &[4u32], 0.0).await?;
    Ok(())
}

async fn nan_hand_computed(dev: &Device) -> Result<()> {
    let nan = f32::NAN;
    let x = Tensor::from_vec(vec![1f32, nan, 5., nan, 2., 2., 0., 7.], [2, 4], dev)?;
    let max = x.max([1])?.to_vec_async::<f32>().await?;
    let min = x.min([1])?.to_vec_async::<f32>().await?;
    assert!(max[0].is_nan() && min[0].is_nan(), "min/max propagate NaN: {max:?} {min:?}");
    assert_eq!((max[1], min[1]), (7.0, 0.0));
    assert_values(&x.argmax([1])?, &[2], &[1u32, 3], 0.0).await?;
    assert_values(&x.argmin([1])?, &[2], &[1u32, 2], 0.0).await?;
    assert!(x.max([0, 1])?.to_scalar_async::<f32>().await?.is_nan(), "max over all is NaN");
    assert_values(&x.argmin([0, 1])?, &[], &[1u32], 0.0).await?;
    // Column 3 is [NaN, 7]; the NaN is first.
    assert_values(&x.argmax([0])?, &[4], &[1u32, 0, 0, 0], 0.0).await?;
    // A NaN late in the row still wins; -inf and inf do not beat it.
    let y = crate::floats(dev, vec![f64::NEG_INFINITY, f64::INFINITY, f64::NAN], &[3], crate::wide(dev).0)?;
    assert_values(&y.argmax([0])?, &[], &[2u32], 0.0).await?;
    assert_values(&y.argmin([0])?, &[], &[2u32], 0.0).await?;
    let b = Tensor::from_vec(vec![bf16::ONE, bf16::NAN, bf16::NAN], [3], dev)?;
    assert_values(&b.argmin([0])?, &[], &[1u32], 0.0).await?;
    assert!(b.min([0])?.to_scalar_async::<bf16>().await?.is_nan(), "bf16 min is NaN");
    Ok(())
}

/// The storage offset in a contiguous `dims` tensor of flat index `flat` over `sizes` with
/// `strides` (row-major unravel).
fn unravel(mut flat: usize, sizes: &[usize], strides: &[usize]) -> usize {
    let mut at = 0;
    for (&n, &s) in sizes.iter().zip(strides).rev() {
        at += flat % n * s;
        flat /= n;
    }
    at
}

/// Checks on the host that `idx` points at the first element of each reduction equal to
/// `val` (NaN matching NaN) and that `val` is its extreme.
async fn check_arg(x: &Tensor, dims: &[usize], idx: &Tensor, val: &Tensor, max: bool, what: &str) -> Result<()> {
    let (dims, what) = (dims.to_vec(), what.to_string());
    crate::later::check(&[x, idx, val], async move |t| arg_is(&t[0], &dims, &t[1], &t[2], max, &what).await).await
}

async fn arg_is(x: &Tensor, dims: &[usize], idx: &Tensor, val: &Tensor, max: bool, what: &str) -> Result<()> {
    let xs = x.to_cpu_storage_async().await?.to_f64_vec();
    let (ids, vals) = (idx.to_vec_async::<u32>().await?, val.to_cpu_storage_async().await?.to_f64_vec());
    let shape = x.dims();
    let strides = rocm_wgpu_ops::Shape::new(shape).contiguous_strides();
    let out: Vec<usize> = (0..shape.len()).map(|d| if dims.contains(&d) { 1 } else { shape[d] }).collect();
    let red: Vec<usize> = dims.iter().map(|&d| shape[d]).collect();
    let red_strides: Vec<usize> = dims.iter().map(|&d| strides[d]).collect();
    let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
    assert_eq!(ids.len(), vals.len(), "{what}: lengths");
    for (o, (&i, &v)) in ids.iter().zip(&vals).enumerate() {
        let base = unravel(o, &out, &strides);
        let row: Vec<f64> = (0..red.iter().product()).map(|f| xs[base + unravel(f, &red, &red_strides)]).collect();
        assert!(same(row[i as usize], v), "{what}: output {o}: index {i} holds {}, value is {v}", row[i as usize]);
        assert!(!row[..i as usize].iter().any(|&e| same(e, v)), "{what}: output {o}: {v} occurs before {i}");
        let beaten = |e: f64| e.is_nan() || if max { e > v } else { e < v };
        assert!(v.is_nan() || !row.iter().any(|&e| beaten(e)), "{what}: output {o}: {v} is not extreme in {row:?}");
    }
    Ok(())
}

async fn arg_agrees_with_value(dev: &Device) -> Result<()> {
    for &dtype in DType::ALL.iter().filter(|&&d| dev.supports("argmax", d).is_ok()) {
        let (lo, hi) = range(dtype);
        for view in View::ALL {
            for &(shape, dim_sets) in CASES {
                for &dims in dim_sets {
                    // Four readbacks each: sampled in a browser, as comparisons are.
                    if crate::sample::skip() {
                        continue;
                    }
                    let x = view_tensor(dev, view, dtype, shape, 22, lo, hi)?;
                    let what = format!("{dtype} {view:?} {shape:?} dims {dims:?}");
                    check_arg(&x, dims, &x.argmax_keepdim(dims)?, &x.max_keepdim(dims)?, true, &what).await?;
                    check_arg(&x, dims, &x.argmin_keepdim(dims)?, &x.min_keepdim(dims)?, false, &what).await?;
                }
            }
        }
    }
    // NaN sprinkled into float data, some rows with two.
    for dtype in crate::float_dtypes(dev) {
        let mut v = crate::Data::new(23).storage(DType::F64, 60, -3.0, 3.0).to_f64_vec();
        for k in [4, 9, 17, 33, 34, 58] {
            v[k] = f64::NAN;
        }
        let x = crate::floats(dev, v, &[3, 4, 5], dtype)?;
        for &dims in CASES[0].1 {
            let what = format!("{dtype} with NaN dims {dims:?}");
            check_arg(&x, dims, &x.argmax_keepdim(dims)?, &x.max_keepdim(dims)?, true, &what).await?;
            check_arg(&x, dims, &x.argmin_keepdim(dims)?, &x.min_keepdim(dims)?, false, &what).await?;
        }
    }
    Ok(())
}

async fn sum_over_two_dims_is_nested_sum(dev: &Device) -> Result<()> {
    for (i, &dtype) in DType::ALL.iter().filter(|&&d| dev.supports("sum", d).is_ok()).enumerate() {
        // Small integers: every float dtype sums them exactly, so the two orders agree exactly.
        let (lo, hi) = if dtype == DType::U8 { (0.0, 250.0) } else { (-3.0, 3.0) };
        // In a browser one view per dtype, turning (six readbacks each).
        for view in crate::rotated(dev, &View::ALL, i) {
            let x = view_tensor(dev, view, dtype, &[3, 4, 5], 24, lo, hi)?.to_dtype(DType::I64)?.to_dtype(dtype)?;
            let what = format!("{dtype} {view:?}");
            assert_close(&x.sum([0, 1])?, &x.sum([0])?.sum([0])?, Tol::EXACT, &what).await?;
            assert_close(&x.sum([1, 2])?, &x.sum([2])?.sum([1])?, Tol::EXACT, &what).await?;
            assert_close(&x.sum_all()?, &x.sum([2])?.sum([1])?.sum([0])?, Tol::EXACT, &what).await?;
        }
    }
    Ok(())
}

async fn reduce_rejects_bad_input(dev: &Device) -> Result<()> {
    let x = Tensor::zeros([2, 0], DType::F32, dev)?;
    for op in [ReduceOp::Min, ReduceOp::Max, ReduceOp::ArgMin, ReduceOp::ArgMax] {
        assert!(matches!(x.reduce(op, [1], false), Err(Error::EmptyReduction { .. })), "{op} over nothing");
        assert!(x.reduce(op, [0], false).is_ok(), "{op} over a non-empty dim of an empty tensor");
    }
    let y = Tensor::zeros([2, 3], DType::F32, dev)?;
    assert!(matches!(y.sum(Vec::<usize>::new()), Err(Error::InvalidParam { .. })));
    assert!(matches!(y.sum([1, 1]), Err(Error::DuplicateDim { .. })));
    assert!(matches!(y.max([2]), Err(Error::DimOutOfRange { .. })));
    Ok(())
}
