//! The API as users reach for it (issue 31): printing, operators and scalars, counting, means,
//! stack/flatten/reshape with a hole, `*_like`, readbacks by rank, integer literals, `.i(..)`,
//! dims in every form, `slice_set` into strided views, 1-D matmul, convolutions with a bias,
//! exact small-integer powf, and errors that name the operand.

use crate::{Tol, View, assert_close, assert_floats, assert_values, cpu, float_dtypes, floats, same_as_cpu, suite};
use crate::{rand_tensor, view_tensor};
use rocm_wgpu_ops::spec::conv::ConvParams;
use rocm_wgpu_ops::{D, DType, Device, Error, IndexOp, Result, Tensor};

suite!(
    printing_shows_values,
    operators_take_tensors_and_scalars,
    comparisons_with_scalars_and_candle_names,
    counting_sums_in_a_wider_dtype,
    means_over_dims,
    stack_flatten_and_reshape_with_a_hole,
    like_constructors_and_readbacks_by_rank,
    integer_literals_are_i64,
    indexing_with_i,
    dims_in_every_form,
    slice_set_into_strided_views,
    matmul_of_vectors,
    convolutions_with_a_bias,
    powf_small_integer_exponents_are_exact,
    errors_name_the_operand,
);

/// `t` prints as `want`, through the async form and (natively) `{}`.
async fn shows(t: &Tensor, want: &str) -> Result<()> {
    assert_eq!(t.to_string_async().await?, want);
    #[cfg(not(target_family = "wasm"))] // `{}` blocks, which a browser does not allow on WebGPU
    assert_eq!(format!("{t}"), want);
    Ok(())
}

async fn printing_shows_values(dev: &Device) -> Result<()> {
    let k = dev.kind();
    let x = Tensor::arange(0f32, 6.0, dev)?.reshape((2, 3))?;
    shows(&x, &format!("[[0., 1., 2.],\n [3., 4., 5.]]\nTensor[[2, 3], f32, {k}]")).await?;
    // A transposed f16 view whose values span past 10^3: scientific notation.
    let h = floats(dev, vec![0.5, -1.25, 3.0, 1e-3], &[2, 2], DType::F16)?.t()?;
    let want = format!("[[ 5.0000e-01,  3.0000e+00],\n [-1.2500e+00,  1.0004e-03]]\nTensor[[2, 2], f16, {k}]");
    shows(&h, &want).await?;
    let u = Tensor::arange(0u8, 8, dev)?.reshape((2, 2, 2))?;
    shows(&u, &format!("[[[0, 1],\n  [2, 3]],\n\n [[4, 5],\n  [6, 7]]]\nTensor[[2, 2, 2], u8, {k}]")).await?;
    let z = Tensor::from_vec(vec![f32::NAN, f32::NEG_INFINITY, 2.5], 3, dev)?;
    shows(&z, &format!("[   nan,   -inf, 2.5000]\nTensor[[3], f32, {k}]")).await?;
    let w = floats(dev, vec![1e9, -2.0], &[2], DType::F64)?;
    shows(&w, &format!("[ 1.0000e+09, -2.0000e+00]\nTensor[[2], f64, {k}]")).await?;
    shows(&Tensor::full(1.5, (), DType::BF16, dev)?, &format!("[1.5000]\nTensor[[], bf16, {k}]")).await?;
    shows(&Tensor::zeros((0, 3), DType::U32, dev)?, &format!("[]\nTensor[[0, 3], u32, {k}]")).await?;
    // Past 1000 elements the middle of each long dim is left out.
    let big = Tensor::arange(0i64, 2000, dev)?.reshape((100, 20))?;
    let want = format!(
        "[[   0,    1,    2, ...,   17,   18,   19],\n [  20,   21,   22, ...,   37,   38,   39],\n \
         [  40,   41,   42, ...,   57,   58,   59],\n ...,\n [1940, 1941, 1942, ..., 1957, 1958, 1959],\n \
         [1960, 1961, 1962, ..., 1977, 1978, 1979],\n [1980, 1981, 1982, ..., 1997, 1998, 1999]]\n\
         Tensor[[100, 20], i64, {k}]"
    );
    shows(&big, &want).await?;
    #[cfg(not(target_family = "wasm"))] // `{}` blocks, which a browser does not allow on WebGPU
    assert_eq!(format!("{:.1}", z.narrow(0, 2, 1)?), format!("[2.5]\nTensor[[1], f32, {k}]"));
    Ok(())
}

async fn operators_take_tensors_and_scalars(dev: &Device) -> Result<()> {
    let a = Tensor::from_vec(vec![1f32, 2., 3.], 3, dev)?;
    let b = Tensor::from_vec(vec![4f32, 5., 6.], 3, dev)?;
    assert_values(&(&a + &b)?, &[3], &[5f32, 7., 9.], 0.0).await?;
    assert_values(&(&a - &b)?, &[3], &[-3f32, -3., -3.], 0.0).await?;
    assert_values(&(&a * &b)?, &[3], &[4f32, 10., 18.], 0.0).await?;
    assert_values(&(&b / &a)?, &[3], &[4f32, 2.5, 2.], 0.0).await?;
    assert_values(&(&a + 1.5)?, &[3], &[2.5f32, 3.5, 4.5], 0.0).await?;
    assert_values(&(10.0 - &a)?, &[3], &[9f32, 8., 7.], 0.0).await?;
    assert_values(&(12 / &a)?, &[3], &[12f32, 6., 4.], 0.0).await?;
    assert_values(&(-&a)?, &[3], &[-1f32, -2., -3.], 0.0).await?;
    assert_values(&((&a + &b) * &a)?, &[3], &[5f32, 14., 27.], 0.0).await?;
    assert_values(&(a.clone() * b.clone())?, &[3], &[4f32, 10., 18.], 0.0).await?;
    assert_values(&a.maximum(2.0)?, &[3], &[2f32, 2., 3.], 0.0).await?;
    // A column broadcast against rows, as every binary op broadcasts.
    let col = Tensor::from_vec(vec![10f32, 20.], (2, 1), dev)?;
    assert_values(&(&col + &a)?, &[2, 3], &[11f32, 12., 13., 21., 22., 23.], 0.0).await?;
    let u = Tensor::from_vec(vec![1u32, 5, 9], 3, dev)?;
    assert_values(&((&u * 2)? - 1u32)?, &[3], &[1u32, 9, 17], 0.0).await?;
    let i = Tensor::from_vec(vec![-3i64, 0, 7], 3, dev)?;
    assert_values(&(&i * -2)?, &[3], &[6i64, 0, -14], 0.0).await?;
    // Every dtype the device computes in, on every view, against the cpu.
    let dtypes = [&[DType::U8, DType::U32, DType::I64][..], &float_dtypes(dev)].concat();
    for dtype in dtypes {
        for view in View::ALL {
            same_as_cpu(dev, Tol::of(dtype).times(4.0), &format!("operators {dtype} {view:?}"), |d| {
                let x = view_tensor(d, view, dtype, &[3, 4], 1, 0.0, 20.0)?;
                let y = view_tensor(d, View::Contiguous, dtype, &[4], 2, 1.0, 20.0)?;
                (((&x * 3)? + &y)? - 1)? / &y
            })
            .await?;
        }
    }
    Ok(())
}

async fn comparisons_with_scalars_and_candle_names(dev: &Device) -> Result<()> {
    let dtypes = [&[DType::U8, DType::U32, DType::I64][..], &float_dtypes(dev)].concat();
    for dtype in dtypes {
        let x = floats(dev, vec![1.0, 5.0, 9.0], &[3], dtype)?;
        assert_values(&x.ge(5)?, &[3], &[0u8, 1, 1], 0.0).await?;
        assert_values(&x.lt(5.0)?, &[3], &[1u8, 0, 0], 0.0).await?;
        assert_values(&x.eq(9)?, &[3], &[0u8, 0, 1], 0.0).await?;
        assert_values(&x.ne(1)?, &[3], &[0u8, 1, 1], 0.0).await?;
        assert_values(&x.gt(1)?, &[3], &[0u8, 1, 1], 0.0).await?;
        assert_values(&x.le(5)?, &[3], &[1u8, 1, 0], 0.0).await?;
        let rows = x.broadcast_as((2, 3))?;
        let col = x.narrow(0, 0, 2)?.reshape((2, 1))?;
        assert_close(&rows.broadcast_add(&col)?, &rows.add(&col)?, Tol::EXACT, "broadcast_add").await?;
        assert_close(&rows.broadcast_ge(&col)?, &rows.ge(&col)?, Tol::EXACT, "broadcast_ge").await?;
        assert_values(&rows.broadcast_ge(&col)?, &[2, 3], &[1u8, 1, 1, 0, 1, 1], 0.0).await?;
    }
    Ok(())
}

async fn counting_sums_in_a_wider_dtype(dev: &Device) -> Result<()> {
    let labels = Tensor::arange(0u32, 1000, dev)?;
    let pred = labels.clone().maximum(3)?; // wrong where the label is 0, 1 or 2
    let hits = pred.eq(&labels)?;
    // `sum` keeps the dtype, as in candle: 997 wraps in u8.
    assert_values(&hits.sum_all()?, &[], &[(997 % 256) as u8], 0.0).await?;
    assert_values(&hits.sum_all_as(DType::U32)?, &[], &[997u32], 0.0).await?;
    assert_values(&hits.sum_as(0, DType::I64)?, &[], &[997i64], 0.0).await?;
    let rows = hits.reshape((10, 100))?.sum_as(D::Minus1, DType::U32)?;
    assert_values(&rows, &[10], &[97u32, 100, 100, 100, 100, 100, 100, 100, 100, 100], 0.0).await?;
    let big = Tensor::full(u32::MAX, 2, DType::U32, dev)?;
    assert_values(&big.sum(0)?, &[], &[u32::MAX - 1], 0.0).await?;
    assert_values(&big.sum_as(0, DType::I64)?, &[], &[2 * u32::MAX as i64], 0.0).await
}

async fn means_over_dims(dev: &Device) -> Result<()> {
    for dtype in float_dtypes(dev) {
        let x = floats(dev, vec![1., 2., 3., 4., 5., 6.], &[2, 3], dtype)?;
        assert_floats(&x.mean(D::Minus1)?, &[2], &[2., 5.], 0.0).await?;
        assert_floats(&x.mean((0, 1))?, &[], &[3.5], 0.0).await?;
        assert_floats(&x.mean_keepdim(0)?, &[1, 3], &[2.5, 3.5, 4.5], 0.0).await?;
        assert_floats(&x.t()?.mean_all()?, &[], &[3.5], 0.0).await?;
        let empty = Tensor::zeros((2, 0), dtype, dev)?.mean(1)?;
        assert_floats(&empty, &[2], &[f64::NAN, f64::NAN], 0.0).await?;
        for view in View::ALL {
            same_as_cpu(dev, Tol::of(dtype).times(8.0), &format!("mean {dtype} {view:?}"), |d| {
                view_tensor(d, view, dtype, &[3, 40], 3, -2.0, 2.0)?.mean(1)
            })
            .await?;
        }
    }
    let u = Tensor::arange(0u8, 4, dev)?;
    assert!(matches!(u.mean(0), Err(Error::WrongDType { op: "mean", .. })), "integer mean");
    Ok(())
}

async fn stack_flatten_and_reshape_with_a_hole(dev: &Device) -> Result<()> {
    let a = Tensor::arange(0u32, 6, dev)?.reshape((2, 3))?;
    let b = (&a + 10)?;
    let s0 = Tensor::stack(&[&a, &b], 0)?;
    assert_values(&s0, &[2, 2, 3], &[0u32, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15], 0.0).await?;
    let s1 = Tensor::stack(&[&a, &b], 1)?;
    assert_values(&s1, &[2, 2, 3], &[0u32, 1, 2, 10, 11, 12, 3, 4, 5, 13, 14, 15], 0.0).await?;
    let last = Tensor::stack(&[a.clone(), b.t()?.t()?], D::Minus1)?;
    assert_values(&last, &[2, 3, 2], &[0u32, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15], 0.0).await?;
    let x = Tensor::arange(0u32, 24, dev)?.reshape((2, 3, 4))?;
    assert_eq!(x.flatten(1, 2)?.dims(), [2, 12]);
    assert_eq!(x.flatten_from(D::Minus2)?.dims(), [2, 12]);
    assert_eq!(x.flatten_to(1)?.dims(), [6, 4]);
    assert_eq!(x.flatten_all()?.dims(), [24]);
    // A non-contiguous tensor flattens through a copy, in its row-major order.
    let t = x.transpose(1, 2)?.flatten(0, 1)?;
    assert_values(&t.narrow(0, 0, 2)?, &[2, 3], &[0u32, 4, 8, 1, 5, 9], 0.0).await?;
    let r = Tensor::arange(0u32, 12, dev)?;
    assert_eq!(r.reshape(((), 4))?.dims(), [3, 4]);
    assert_eq!(r.reshape((2, ()))?.dims(), [2, 6]);
    assert_values(&r.reshape((2, (), 3))?.i((1, 1))?, &[3], &[9u32, 10, 11], 0.0).await?;
    assert!(matches!(r.reshape(((), 5)), Err(Error::InvalidView { op: "reshape", .. })));
    Ok(())
}

async fn like_constructors_and_readbacks_by_rank(dev: &Device) -> Result<()> {
    for &dtype in DType::ALL {
        let x = Tensor::zeros((2, 1, 2), dtype, dev)?;
        let (o, z, f) = (x.ones_like()?, x.zeros_like()?, x.full_like(7)?);
        for (t, v) in [(&o, 1), (&z, 0), (&f, 7)] {
            assert_eq!((t.dims(), t.dtype()), (&[2, 1, 2][..], dtype));
            assert_floats(t, &[2, 1, 2], &[v as f64; 4], 0.0).await?;
        }
    }
    let t = Tensor::arange(0i64, 12, dev)?.reshape((2, 3, 2))?;
    assert_eq!(t.to_vec3_async::<i64>().await?, [[[0, 1], [2, 3], [4, 5]], [[6, 7], [8, 9], [10, 11]]]);
    assert_eq!(t.t()?.to_vec3_async::<i64>().await?[1], [[6, 8, 10], [7, 9, 11]]);
    assert!(matches!(t.flatten_all()?.to_vec3_async::<i64>().await, Err(Error::Rank { op: "to_vec3", .. })));
    assert_eq!(Tensor::zeros((2, 0, 3), DType::U8, dev)?.to_vec3_async::<u8>().await?, [Vec::<Vec<u8>>::new(), vec![]]);
    #[cfg(not(target_family = "wasm"))] // the sync forms block
    {
        assert_eq!(t.i((1, 2, 0))?.to_vec0::<i64>()?, 10);
        assert_eq!(t.i((0, 1))?.to_vec1::<i64>()?, [2, 3]);
        assert!(matches!(t.to_vec1::<i64>(), Err(Error::Rank { op: "to_vec1", .. })));
    }
    Ok(())
}

async fn integer_literals_are_i64(dev: &Device) -> Result<()> {
    let r = Tensor::arange(0, 5, dev)?;
    assert_values(&r, &[5], &[0i64, 1, 2, 3, 4], 0.0).await?;
    assert_values(&Tensor::arange_step(10, 0, -3, dev)?, &[4], &[10i64, 7, 4, 1], 0.0).await?;
    assert_values(&Tensor::from_vec(vec![1, -2, 3], 3, dev)?, &[3], &[1i64, -2, 3], 0.0).await?;
    assert_values(&Tensor::from_slice(&[4, 5], (1, 2), dev)?, &[1, 2], &[4i64, 5], 0.0).await?;
    assert_values(&Tensor::full(3, 2, DType::U8, dev)?, &[2], &[3u8, 3], 0.0).await?;
    assert_values(&(&r + 1)?, &[5], &[1i64, 2, 3, 4, 5], 0.0).await
}

async fn indexing_with_i(dev: &Device) -> Result<()> {
    let x = Tensor::arange(0u32, 24, dev)?.reshape((2, 3, 4))?;
    assert_values(&x.i(1)?.narrow(0, 0, 1)?, &[1, 4], &[12u32, 13, 14, 15], 0.0).await?;
    assert_values(&x.i((1, 2))?, &[4], &[20u32, 21, 22, 23], 0.0).await?;
    assert_values(&x.i((1, 2, 3))?, &[], &[23u32], 0.0).await?;
    assert_values(&x.i((.., 1..3, 0))?, &[2, 2], &[4u32, 8, 16, 20], 0.0).await?;
    assert_values(&x.i((0, ..=1, ..2))?, &[2, 2], &[0u32, 1, 4, 5], 0.0).await?;
    assert_eq!(x.i((.., .., 2..))?.dims(), [2, 3, 2]);
    // Views of views: a transposed tensor indexes in its own dims.
    assert_values(&x.t()?.i((1, 2))?, &[3], &[14u32, 18, 22], 0.0).await?;
    let ids = Tensor::from_vec(vec![2u32, 0], 2, dev)?;
    assert_values(&x.i((1, &ids, 3))?, &[2], &[23u32, 15], 0.0).await?;
    let msg = |r: Result<Tensor>| r.map(|t| format!("{t:?}")).unwrap_err().to_string();
    assert_eq!(msg(x.i(2)), "i: index 2 past the end of dim 0 (size 2) of [2, 3, 4]");
    assert_eq!(msg(x.i((0, 0, 0, 0))), "i: 4 indexers for a tensor of rank 3 ([2, 3, 4])");
    assert_eq!(msg(x.i((.., 2..5))), "i: range 2..5 outside dim 1 (size 3) of [2, 3, 4]");
    Ok(())
}

async fn dims_in_every_form(dev: &Device) -> Result<()> {
    let x = rand_tensor(dev, DType::F32, &[2, 3, 4], 5, -1.0, 1.0)?;
    let same = async |a: Result<Tensor>, b: Result<Tensor>, what: &str| assert_close(&a?, &b?, Tol::EXACT, what).await;
    same(x.sum(D::Minus1), x.sum(2), "sum").await?;
    same(x.sum((0, D::Minus1)), x.sum([0, 2]), "sum of a tuple").await?;
    same(x.max([D::Minus2]), x.max(vec![1]), "max of an array").await?;
    same(x.argmax(D::Minus1), x.argmax(2), "argmax").await?;
    same(x.min_keepdim(D::Minus(3)), x.min_keepdim(&[0][..]), "min_keepdim").await?;
    same(x.mean(D::Minus1), x.mean(2), "mean").await?;
    same(Tensor::cat(&[&x, &x], D::Minus1), Tensor::cat(&[&x, &x], 2), "cat").await?;
    same(x.permute((2, 0, 1)), x.permute([D::Minus1, D::Minus(3), D::Minus2]), "permute").await?;
    same(x.unsqueeze(D::Minus1), x.unsqueeze(3), "unsqueeze").await?;
    assert_eq!(x.unsqueeze(D::Minus1)?.dims(), [2, 3, 4, 1]);
    assert_eq!(x.unsqueeze(0)?.dims(), [1, 2, 3, 4]);
    assert!(matches!(x.unsqueeze(4), Err(Error::DimOutOfRange { op: "unsqueeze", dim: 4, rank: 3 })));
    assert!(matches!(x.sum((0, 3)), Err(Error::DimOutOfRange { op: "sum", dim: 3, .. })));
    let dst = Tensor::zeros((2, 3, 4), DType::F32, dev)?;
    dst.slice_set(&x.narrow(2, 0, 2)?, D::Minus1, 2)?;
    same(dst.narrow(2, 2, 2), x.narrow(2, 0, 2), "slice_set at the last dim").await
}

/// `start, start + 1, ...` in `shape`, of `dtype`, made on the host (exact in every dtype
/// below 256; no arithmetic on `dev`, which may not compute in `dtype`).
fn iota(dev: &Device, dtype: DType, shape: &[usize], start: f64) -> Result<Tensor> {
    let n = shape.iter().product::<usize>();
    floats(dev, (0..n).map(|i| start + i as f64).collect(), shape, dtype)
}

async fn slice_set_into_strided_views(dev: &Device) -> Result<()> {
    for &dtype in DType::ALL {
        // By hand: rows 1..3 of the transpose are columns 1..3 of the tensor.
        let base = iota(dev, dtype, &[3, 4], 0.0)?;
        base.t()?.slice_set(&iota(dev, dtype, &[2, 3], 100.0)?, 0, 1)?;
        let want = [0., 100., 103., 3., 4., 101., 104., 7., 8., 102., 105., 11.];
        assert_floats(&base, &[3, 4], &want, 0.0).await?;
        // A permuted, narrowed destination; a source that is a view of it; each against the cpu.
        let what = |s: &str| format!("slice_set {dtype} into {s}");
        same_as_cpu(dev, Tol::EXACT, &what("a permuted view"), |d| {
            let base = iota(d, dtype, &[2, 3, 5], 0.0)?;
            base.permute((2, 0, 1))?.slice_set(&iota(d, dtype, &[5, 2, 2], 50.0)?, 2, 1)?;
            Ok(base)
        })
        .await?;
        same_as_cpu(dev, Tol::EXACT, &what("a narrowed transpose"), |d| {
            let base = iota(d, dtype, &[4, 6], 0.0)?;
            base.narrow(1, 1, 4)?.t()?.slice_set(&iota(d, dtype, &[4, 2], 9.0)?, 1, 2)?;
            Ok(base)
        })
        .await?;
        same_as_cpu(dev, Tol::EXACT, &what("itself"), |d| {
            let base = iota(d, dtype, &[4, 4], 0.0)?;
            base.t()?.slice_set(&base.narrow(0, 0, 2)?, 0, 2)?;
            Ok(base)
        })
        .await?;
    }
    let base = Tensor::zeros((1, 3), DType::F32, dev)?;
    let r = base.broadcast_as((4, 3))?.slice_set(&Tensor::ones((4, 1), DType::F32, dev)?, 1, 0);
    assert!(matches!(r, Err(Error::InvalidView { op: "slice_set", .. })), "{r:?}");
    assert_values(&base, &[1, 3], &[0f32; 3], 0.0).await
}

async fn matmul_of_vectors(dev: &Device) -> Result<()> {
    let m = Tensor::from_vec(vec![1f32, 2., 3., 4., 5., 6.], (2, 3), dev)?;
    let v = Tensor::from_vec(vec![1f32, 0., -1.], 3, dev)?;
    let u = Tensor::from_vec(vec![2f32, -1.], 2, dev)?;
    assert_values(&m.matmul(&v)?, &[2], &[-2f32, -2.], 0.0).await?;
    assert_values(&u.matmul(&m)?, &[3], &[-2f32, -1., 0.], 0.0).await?;
    assert_values(&v.matmul(&v)?, &[], &[2f32], 0.0).await?;
    assert_values(&v.matmul(&m.t()?)?, &[2], &[-2f32, -2.], 0.0).await?;
    for dtype in float_dtypes(dev) {
        let tol = Tol::of(dtype).times(8.0);
        let what = |s: &str| format!("matmul {dtype} {s}");
        let t = |d: &Device, shape: &[usize], seed| view_tensor(d, View::Transposed, dtype, shape, seed, -1.0, 1.0);
        same_as_cpu(dev, tol, &what("batch x vector"), |d| t(d, &[4, 2, 5], 1)?.matmul(&t(d, &[5], 2)?)).await?;
        same_as_cpu(dev, tol, &what("vector x batch"), |d| t(d, &[5], 3)?.matmul(&t(d, &[4, 5, 3], 4)?)).await?;
        same_as_cpu(dev, tol, &what("dot"), |d| t(d, &[70], 5)?.matmul(&t(d, &[70], 6)?)).await?;
    }
    let e = v.matmul(&u).unwrap_err().to_string();
    assert_eq!(e, "matmul: inner dims differ: lhs [3], rhs [2]");
    Ok(())
}

async fn convolutions_with_a_bias(dev: &Device) -> Result<()> {
    for dtype in float_dtypes(dev) {
        let tol = Tol::of(dtype).times(16.0);
        let t = |d: &Device, shape: &[usize], seed| rand_tensor(d, dtype, shape, seed, -1.0, 1.0);
        let what = |s: &str| format!("{s} with a bias, {dtype}");
        let p2 = ConvParams::<2>::default().padding(1);
        same_as_cpu(dev, tol, &what("conv2d"), |d| {
            t(d, &[2, 3, 5, 5], 1)?.conv2d_with_bias(&t(d, &[4, 3, 3, 3], 2)?, Some(&t(d, &[4], 3)?), &p2)
        })
        .await?;
        let p1 = ConvParams::<1>::default().stride(2);
        same_as_cpu(dev, tol, &what("conv1d"), |d| {
            t(d, &[2, 3, 9], 4)?.conv1d_with_bias(&t(d, &[4, 3, 3], 5)?, Some(&t(d, &[4], 6)?), &p1)
        })
        .await?;
        same_as_cpu(dev, tol, &what("conv_transpose2d"), |d| {
            t(d, &[1, 3, 4, 4], 7)?.conv_transpose2d_with_bias(&t(d, &[3, 2, 3, 3], 8)?, Some(&t(d, &[2], 9)?), &p2)
        })
        .await?;
        // The bias is added per output channel: the same as adding it by hand.
        let (x, k, b) = (t(dev, &[1, 2, 4], 10)?, t(dev, &[3, 2, 2], 11)?, t(dev, &[3], 12)?);
        let p = ConvParams::<1>::default();
        let by_hand = x.conv1d(&k, &p)?.add(&b.reshape((3, 1))?)?;
        assert_close(&x.conv1d_with_bias(&k, Some(&b), &p)?, &by_hand, Tol::EXACT, &what("by hand")).await?;
        assert_close(&x.conv1d_with_bias(&k, None, &p)?, &x.conv1d(&k, &p)?, Tol::EXACT, &what("none")).await?;
        let e = x.conv1d_with_bias(&k, Some(&b.narrow(0, 0, 2)?), &p).unwrap_err().to_string();
        assert_eq!(e, "conv1d: bias has shape [2], expected [3]: one value per output channel");
    }
    Ok(())
}

async fn powf_small_integer_exponents_are_exact(dev: &Device) -> Result<()> {
    for dtype in float_dtypes(dev) {
        let x = floats(dev, vec![5., 3., 2., -2., 0.5, 7.], &[6], dtype)?;
        // The exact powers rounded once to the dtype (bf16 holds 343 as 344).
        let exact = |e: i32, xs: &[f64]| -> Result<Vec<f64>> {
            let v: Vec<f64> = xs.iter().map(|x| x.powi(e)).collect();
            Tensor::from_vec(v, xs.len(), &cpu())?.to_dtype(dtype)?.to_dtype(DType::F64)?.to_vec::<f64>()
        };
        let xs = [5., 3., 2., -2., 0.5, 7.];
        for e in [0, 1, 2, 3, 5] {
            assert_floats(&x.powf(e as f64)?, &[6], &exact(e, &xs)?, 0.0).await?;
        }
        // (Results that stay normal in f16.)
        let ys = [2., 0.5, -2., 4., -1.];
        let y = floats(dev, ys.to_vec(), &[5], dtype)?;
        for e in [-1, -3] {
            assert_floats(&y.powf(e as f64)?, &[5], &exact(e, &ys)?, 0.0).await?;
        }
        let zs = [2., -2., -1., 1.];
        assert_floats(&floats(dev, zs.to_vec(), &[4], dtype)?.powf(16.0)?, &[4], &exact(16, &zs)?, 0.0).await?;
        // Squares and cubes are one product order on every backend: bit for bit the cpu's. Longer
        // chains a driver may reorder, and a GPU's division need not be correctly rounded.
        for view in View::ALL {
            let tol = Tol::of(dtype);
            for (e, tol) in [(2.0, Tol::EXACT), (3.0, Tol::EXACT), (7.0, tol), (16.0, tol), (-2.0, tol.times(2.0))] {
                for (lo, hi) in [(0.8, 1.9), (-1.9, -0.8)] {
                    same_as_cpu(dev, tol, &format!("powf({e}) {dtype} {view:?} [{lo}, {hi})"), |d| {
                        view_tensor(d, view, dtype, &[4, 6], 7, lo, hi)?.powf(e)
                    })
                    .await?;
                }
            }
        }
    }
    Ok(())
}

async fn errors_name_the_operand(dev: &Device) -> Result<()> {
    let msg = |r: Result<Tensor>| r.map(|t| format!("{t:?}")).unwrap_err().to_string();
    let x = Tensor::zeros((1, 3, 8, 8), DType::F32, dev)?;
    let k = Tensor::zeros((4, 2, 3, 3), DType::F32, dev)?;
    assert_eq!(
        msg(x.conv2d(&k, &ConvParams::default())),
        "conv2d: kernel [4, 2, 3, 3] takes 2 input channels (its dim 1 times 1 group), the input [1, 3, 8, 8] has 3: \
         the channels differ"
    );
    let f = Tensor::zeros(3, DType::F32, dev)?;
    assert_eq!(
        msg(f.index_select(&f, 0)),
        "index_select: ids of dtype f32: ids must be an integer dtype (u8, u32 or i64)"
    );
    let s = f.to_scalar_async::<f32>().await.unwrap_err().to_string();
    assert_eq!(s, "to_scalar: expected rank 0 (or one element), got shape [3]");
    let u = Tensor::zeros(3, DType::U8, dev)?;
    assert_eq!(
        msg(u.mul(0.5)),
        "mul: invalid parameter: the scalar 0.5f64 is not a u8 value: integer tensors take scalars they hold exactly"
    );
    assert_eq!(msg(Tensor::stack(&[&f, &f.narrow(0, 0, 2)?], 0)), "stack: shape mismatch: [3] vs [2]");
    Ok(())
}
