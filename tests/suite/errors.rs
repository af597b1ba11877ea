//! Every error the spec returns, triggered on every backend: the kind and the message are
//! checked, and the inputs stay intact.

use crate::suite;
use rocm_wgpu_ops::spec::conv::ConvParams;
use rocm_wgpu_ops::spec::pool::Pool2dParams;
use rocm_wgpu_ops::spec::random::Distribution;
use rocm_wgpu_ops::{BackendKind, D, DType, Device, Error, Result, Tensor};

suite!(
    shape_errors,
    rank_and_dim_errors,
    dtype_errors,
    index_errors,
    view_errors,
    conv_param_errors,
    pool_and_upsample_param_errors,
    other_param_errors,
    matmul_errors,
    host_errors,
    shapes_past_the_address_space_are_errors,
    #[cfg(target_pointer_width = "64")]
    memory_that_cannot_be_had_is_an_error,
);

/// Asserts `r` failed with an error `kind` accepts, whose message holds `msg`.
fn expect<T: std::fmt::Debug>(r: Result<T>, kind: impl Fn(&Error) -> bool, msg: &str) {
    match r {
        Ok(v) => panic!("expected an error containing {msg:?}, got Ok({v:?})"),
        Err(e) => {
            assert!(kind(&e), "unexpected error kind: {e:?}");
            assert!(e.to_string().contains(msg), "message {:?} lacks {msg:?}", e.to_string());
        }
    }
}

fn f32s(dev: &Device, shape: &[usize]) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| i as f32).collect(), shape.to_vec(), dev)
}

/// The values stay what `f32s` made.
async fn intact(t: &Tensor) -> Result<()> {
    let n = t.elem_count();
    assert_eq!(t.to_vec_async::<f32>().await?, (0..n).map(|i| i as f32).collect::<Vec<_>>(), "input changed");
    Ok(())
}

async fn shape_errors(dev: &Device) -> Result<()> {
    let a = f32s(dev, &[2, 3])?;
    let b = f32s(dev, &[4])?;
    expect(a.add(&b), |e| matches!(e, Error::Broadcast { op: "add", .. }), "cannot broadcast [2, 3] with [4]");
    expect(a.broadcast_as([4, 3]), |e| matches!(e, Error::Broadcast { .. }), "cannot broadcast");
    let w = f32s(dev, &[2])?;
    expect(
        a.layer_norm(Some(&w), None, 1e-5),
        |e| matches!(e, Error::ShapeMismatch { op: "layer_norm", .. }),
        "[2] vs [3]",
    );
    let ids = Tensor::from_vec(vec![0u32; 6], [3, 2], dev)?;
    let src = f32s(dev, &[2, 2])?;
    expect(a.scatter(&ids, &src, 1), |e| matches!(e, Error::ShapeMismatch { op: "scatter", .. }), "shape mismatch");
    let ids1 = Tensor::from_vec(vec![0u32, 1], [2], dev)?;
    expect(
        a.index_add(&ids1, &a, 1),
        |e| matches!(e, Error::ShapeMismatch { op: "index_add", .. }),
        "[2, 3] vs [2, 2]",
    );
    let big_ids = Tensor::from_vec(vec![0u32; 8], [2, 4], dev)?;
    expect(a.gather(&big_ids, 0), |e| matches!(e, Error::ShapeMismatch { op: "gather", .. }), "[2, 4] vs [2, 3]");
    expect(Tensor::cat(&[&a, &b], 0), |e| matches!(e, Error::ShapeMismatch { op: "cat", .. }), "shape mismatch");
    let x = f32s(dev, &[1, 4, 5, 5])?;
    let k = f32s(dev, &[2, 3, 3, 3])?;
    expect(
        x.conv2d(&k, &ConvParams::default()),
        |e| matches!(e, Error::Operand { op: "conv2d", operand: "kernel", .. }),
        "conv2d: kernel [2, 3, 3, 3] takes 3 input channels (its dim 1 times 1 group), the input [1, 4, 5, 5] has 4: \
         the channels differ",
    );
    intact(&a).await?;
    intact(&x).await
}

async fn rank_and_dim_errors(dev: &Device) -> Result<()> {
    let a = f32s(dev, &[2, 3])?;
    expect(
        a.sum([2]),
        |e| matches!(e, Error::DimOutOfRange { op: "sum", dim: 2, rank: 2 }),
        "dim 2 out of range for rank 2",
    );
    expect(a.sum([1, 1]), |e| matches!(e, Error::DuplicateDim { op: "sum", dim: 1 }), "dim 1 given twice");
    expect(a.softmax(D::Minus(3)), |e| matches!(e, Error::DimOutOfRange { dim: -3, .. }), "dim -3 out of range");
    expect(a.narrow(5, 0, 1), |e| matches!(e, Error::DimOutOfRange { op: "narrow", .. }), "out of range");
    let ids2 = Tensor::from_vec(vec![0u32; 4], [2, 2], dev)?;
    expect(
        a.index_select(&ids2, 0),
        |e| matches!(e, Error::Rank { op: "index_select", .. }),
        "expected rank 1 for ids",
    );
    expect(a.conv2d(&a, &ConvParams::default()), |e| matches!(e, Error::Rank { op: "conv2d", .. }), "expected rank 4");
    expect(a.max_pool2d(&Pool2dParams::new(2)), |e| matches!(e, Error::Rank { op: "max_pool2d", .. }), "rank 4");
    expect(a.upsample_nearest1d(4), |e| matches!(e, Error::Rank { op: "upsample_nearest1d", .. }), "rank 3");
    let s = Tensor::from_vec(vec![1f32], [], dev)?;
    expect(s.argsort(false), |e| matches!(e, Error::Rank { op: "argsort", .. }), "at least 1");
    expect(s.layer_norm(None, None, 1e-5), |e| matches!(e, Error::Rank { op: "layer_norm", .. }), "at least 1");
    let m = f32s(dev, &[1])?;
    expect(
        b(dev)?.batch_norm(&m, &m, None, None, 1e-5),
        |e| matches!(e, Error::Rank { op: "batch_norm", .. }),
        "at least 2",
    );
    expect(b(dev)?.t(), |e| matches!(e, Error::Rank { op: "t", .. }), "at least 2");
    intact(&a).await
}

fn b(dev: &Device) -> Result<Tensor> {
    f32s(dev, &[4])
}

async fn dtype_errors(dev: &Device) -> Result<()> {
    let i = Tensor::from_vec(vec![1i64, 2, 3], [3], dev)?;
    expect(
        i.exp(),
        |e| matches!(e, Error::WrongDType { op: "exp", dtype: DType::I64, .. }),
        "expected one of f16, bf16",
    );
    let u = Tensor::from_vec(vec![1u32, 2], [1, 2], dev)?;
    expect(u.matmul(&u.t()?), |e| matches!(e, Error::WrongDType { op: "matmul", .. }), "dtype u32 not supported");
    expect(u.neg(), |e| matches!(e, Error::WrongDType { op: "neg", dtype: DType::U32, .. }), "u32");
    let f = f32s(dev, &[3])?;
    let h = f.to_dtype(DType::F16)?;
    expect(
        f.add(&h),
        |e| matches!(e, Error::DTypeMismatch { op: "add", lhs: DType::F32, rhs: DType::F16 }),
        "f32 vs f16",
    );
    expect(
        f.index_select(&f, 0),
        |e| matches!(e, Error::Operand { op: "index_select", operand: "ids", .. }),
        "index_select: ids of dtype f32: ids must be an integer dtype (u8, u32 or i64)",
    );
    expect(
        f.where_cond(&f, &f),
        |e| matches!(e, Error::Operand { op: "where_cond", operand: "condition", .. }),
        "where_cond: condition of dtype f32: condition must be an integer dtype",
    );
    expect(Tensor::cat(&[&f, &h], 0), |e| matches!(e, Error::DTypeMismatch { op: "cat", .. }), "mismatch");
    let x = Tensor::zeros([1, 1, 3, 3], DType::U8, dev)?;
    expect(x.avg_pool2d(&Pool2dParams::new(2)), |e| matches!(e, Error::WrongDType { .. }), "u8");
    expect(i.affine(2.0, 1.0), |e| matches!(e, Error::WrongDType { op: "affine", .. }), "i64");
    expect(
        Tensor::random([2], DType::U32, Distribution::Uniform { low: 0.0, high: 1.0 }, 0, 0, dev),
        |e| matches!(e, Error::WrongDType { op: "rand_uniform", .. }),
        "u32",
    );
    intact(&f).await
}

async fn index_errors(dev: &Device) -> Result<()> {
    let a = f32s(dev, &[3, 2])?;
    let ids = Tensor::from_vec(vec![0i64, 3], [2], dev)?;
    // GPU backends find bad ids in device data and report them at the next readback.
    expect(
        async { a.index_select(&ids, 0)?.to_vec_async::<f32>().await }.await,
        |e| matches!(e, Error::IndexOutOfRange { op: "index_select", index: 3, size: 3 }),
        "index 3 out of range for size 3",
    );
    let neg = Tensor::from_vec(vec![-1i64], [1], dev)?;
    expect(
        async { a.index_select(&neg, 1)?.to_vec_async::<f32>().await }.await,
        |e| matches!(e, Error::IndexOutOfRange { index: -1, size: 2, .. }),
        "index -1",
    );
    intact(&a).await
}

async fn view_errors(dev: &Device) -> Result<()> {
    let a = f32s(dev, &[2, 3])?;
    expect(a.narrow(1, 2, 2), |e| matches!(e, Error::InvalidView { op: "narrow", .. }), "past size 3 of dim 1");
    expect(a.squeeze(0), |e| matches!(e, Error::InvalidView { op: "squeeze", .. }), "has size 2, not 1");
    expect(a.permute([0]), |e| matches!(e, Error::InvalidView { op: "permute", .. }), "has 1 dims, tensor has 2");
    expect(a.permute([1, 1]), |e| matches!(e, Error::DuplicateDim { op: "permute", dim: 1 }), "given twice");
    expect(a.unsqueeze(3), |e| matches!(e, Error::DimOutOfRange { op: "unsqueeze", .. }), "dim 3");
    expect(a.reshape([4, 2]), |e| matches!(e, Error::ElementCount { op: "reshape", .. }), "holds 8 elements, got 6");
    let col = f32s(dev, &[3, 1])?;
    let wide = a.narrow(0, 0, 1)?.broadcast_as([4, 3])?;
    expect(
        wide.slice_set(&col.t()?, 0, 0),
        |e| matches!(e, Error::InvalidView { op: "slice_set", .. }),
        "slice_set: destination [4, 3] is broadcast along dim 0 (stride 0): its elements share memory",
    );
    let src = f32s(dev, &[2, 1])?;
    expect(a.slice_set(&src, 1, 3), |e| matches!(e, Error::InvalidParam { op: "slice_set", .. }), "past size 3");
    intact(&a).await
}

async fn conv_param_errors(dev: &Device) -> Result<()> {
    let x = f32s(dev, &[1, 2, 5, 5])?;
    let k = f32s(dev, &[4, 2, 3, 3])?;
    let p = ConvParams::<2>::default();
    let is_param = |e: &Error| matches!(e, Error::InvalidParam { op: "conv2d", .. });
    expect(x.conv2d(&k, &p.stride(0)), is_param, "zero stride");
    expect(x.conv2d(&k, &p.dilation(0)), is_param, "zero dilation");
    expect(x.conv2d(&k, &p.dilation(3)), is_param, "kernel span 7 larger than padded input 5");
    expect(x.conv2d(&k, &p.groups(0)), is_param, "groups must be at least 1");
    expect(x.conv2d(&k, &p.output_padding(1)), is_param, "output_padding applies to transposed");
    let kg = f32s(dev, &[4, 1, 3, 3])?;
    let x3 = f32s(dev, &[1, 3, 5, 5])?;
    expect(x3.conv2d(&kg, &p.groups(2)), is_param, "3 input channels not divisible by 2 groups");
    let kt = f32s(dev, &[2, 3, 3, 3])?;
    let is_tparam = |e: &Error| matches!(e, Error::InvalidParam { op: "conv_transpose2d", .. });
    expect(x.conv_transpose2d(&kt, &p.stride(2).output_padding(2)), is_tparam, "output_padding 2 must be smaller");
    let x1 = f32s(dev, &[1, 2, 1])?;
    let k1 = f32s(dev, &[2, 1, 3])?;
    expect(
        x1.conv_transpose1d(&k1, &ConvParams::default().padding(2)),
        |e| matches!(e, Error::InvalidParam { op: "conv_transpose1d", .. }),
        "leaves no output",
    );
    intact(&x).await
}

async fn pool_and_upsample_param_errors(dev: &Device) -> Result<()> {
    let x = f32s(dev, &[1, 1, 4, 4])?;
    let is = |op: &'static str| move |e: &Error| matches!(e, Error::InvalidParam { op: o, .. } if *o == op);
    expect(x.max_pool2d(&Pool2dParams::new(2).stride(0)), is("max_pool2d"), "zero stride");
    expect(x.avg_pool2d(&Pool2dParams::new(5)), is("avg_pool2d"), "kernel 5 larger than padded input 4");
    expect(x.avg_pool2d(&Pool2dParams::new(2).padding(2)), is("avg_pool2d"), "more than half the kernel");
    expect(x.max_pool2d(&Pool2dParams::new(0)), is("max_pool2d"), "zero kernel size");
    expect(x.max_pool2d(&Pool2dParams::new(2).dilation(0)), is("max_pool2d"), "zero dilation");
    expect(x.max_pool2d(&Pool2dParams::new(2).dilation(4)), is("max_pool2d"), "kernel 5 larger than padded input 4");
    expect(x.avg_pool2d(&Pool2dParams::new(2).dilation(2)), is("avg_pool2d"), "no dilation");
    let no_pad = Pool2dParams::new(2).count_include_pad(false);
    expect(x.max_pool2d(&no_pad), is("max_pool2d"), "count_include_pad = false is an avg_pool2d setting");
    // ceil_mode adds at most a window that starts inside the input.
    let ceil = Pool2dParams::new(5).stride(1).ceil_mode(true);
    expect(x.avg_pool2d(&ceil), is("avg_pool2d"), "kernel 5 larger than padded input 4");
    let e = Tensor::zeros([1, 1, 0], DType::F32, dev)?;
    expect(e.upsample_nearest1d(3), is("upsample_nearest1d"), "from an empty input dim");
    intact(&x).await
}

async fn other_param_errors(dev: &Device) -> Result<()> {
    let a = f32s(dev, &[2, 3])?;
    expect(a.clamp(3.0f32, 1.0f32), |e| matches!(e, Error::InvalidParam { op: "clamp", .. }), "min 3f32 > max 1f32");
    expect(a.clamp(f32::NAN, 1.0f32), |e| matches!(e, Error::InvalidParam { op: "clamp", .. }), "NaN bound");
    expect(a.powf(f64::NAN), |e| matches!(e, Error::InvalidParam { op: "powf", .. }), "NaN parameter");
    expect(
        a.sum(Vec::<usize>::new()),
        |e| matches!(e, Error::InvalidParam { op: "sum", .. }),
        "no dims to reduce over",
    );
    expect(a.layer_norm(None, None, -1.0), |e| matches!(e, Error::InvalidParam { op: "layer_norm", .. }), "eps -1");
    let empty = Tensor::zeros([2, 0], DType::F32, dev)?;
    expect(
        empty.max([1]),
        |e| matches!(e, Error::EmptyReduction { op: "max", .. }),
        "cannot reduce over an empty extent",
    );
    expect(empty.argmin([1]), |e| matches!(e, Error::EmptyReduction { op: "argmin", .. }), "empty extent");
    assert_eq!(empty.sum([1])?.to_vec_async::<f32>().await?, vec![0.0, 0.0], "a sum over nothing is 0");
    let uni = Distribution::Uniform { low: 1.0, high: 1.0 };
    expect(Tensor::random([2], DType::F32, uni, 0, 0, dev), |e| matches!(e, Error::InvalidParam { .. }), "low < high");
    let norm = Distribution::Normal { mean: 0.0, std: -1.0 };
    expect(Tensor::random([2], DType::F32, norm, 0, 0, dev), |e| matches!(e, Error::InvalidParam { .. }), "std >= 0");
    expect(
        Tensor::arange_step(0i64, 5, 0, dev),
        |e| matches!(e, Error::InvalidParam { op: "arange", .. }),
        "zero step",
    );
    expect(Tensor::arange_step(0f32, f32::INFINITY, 1.0, dev), |e| matches!(e, Error::InvalidParam { .. }), "finite");
    intact(&a).await
}

async fn matmul_errors(dev: &Device) -> Result<()> {
    let a = f32s(dev, &[2, 3])?;
    let b = f32s(dev, &[2, 3])?;
    let is = |e: &Error| matches!(e, Error::MatmulShape { .. });
    expect(a.matmul(&b), is, "matmul: inner dims differ: lhs [2, 3], rhs [2, 3]");
    expect(f32s(dev, &[3])?.matmul(&a), is, "matmul: inner dims differ: lhs [3], rhs [2, 3]");
    expect(f32s(dev, &[])?.matmul(&a), is, "matmul: operands need rank 1 or more: lhs [], rhs [2, 3]");
    expect(f32s(dev, &[2, 2, 3])?.matmul(&f32s(dev, &[3, 3, 2])?), is, "batch dims do not broadcast");
    intact(&a).await
}

async fn host_errors(dev: &Device) -> Result<()> {
    let a = f32s(dev, &[2, 3])?;
    expect(
        a.to_vec_async::<f64>().await,
        |e| matches!(e, Error::HostDType { expected: DType::F64, got: DType::F32 }),
        "holds f32",
    );
    expect(
        Tensor::from_vec(vec![1f32; 5], [2, 3], dev),
        |e| matches!(e, Error::ElementCount { op: "from_vec", expected: 6, got: 5, .. }),
        "holds 6 elements, got 5",
    );
    expect(
        a.to_scalar_async::<f32>().await,
        |e| matches!(e, Error::Rank { op: "to_scalar", .. }),
        "to_scalar: expected rank 0 (or one element), got shape [2, 3]",
    );
    expect(b(dev)?.to_vec2_async::<f32>().await, |e| matches!(e, Error::Rank { op: "to_vec2", .. }), "expected rank 2");
    expect(BackendKind::parse("metal"), |e| matches!(e, Error::BackendUnavailable { .. }), "unknown backend name");
    for kind in [BackendKind::Rocm, BackendKind::Cuda] {
        // Where the backend is absent, asking for it by name says so, with the reason.
        if let Err(e) = Device::new_async(kind).await {
            assert!(matches!(e, Error::BackendUnavailable { .. }), "{e:?}");
            assert!(e.to_string().starts_with(&format!("backend {kind} is not available: ")), "{e}");
        }
    }
    intact(&a).await
}

async fn shapes_past_the_address_space_are_errors(dev: &Device) -> Result<()> {
    let too_large = |e: &Error| matches!(e, Error::ShapeTooLarge { .. });
    // Sizes are powers of two scaled to the address space (64-bit natively, 32-bit in a
    // browser): `h` is half its bits, `big` a dim past u32 where usize allows.
    let (bits, h) = (usize::BITS, usize::BITS / 2);
    let big: usize = 1 << (bits * 5 / 8);
    // 2^bits elements: the count itself overflows (it wrapped to 0 before).
    expect(Tensor::zeros([1 << (h + 1), 1 << (h - 1)], DType::F32, dev), too_large, "more elements or bytes");
    let square = format!("[{}, {}]", 1usize << h, 1usize << h);
    expect(Tensor::from_vec(Vec::<f32>::new(), [1 << h, 1 << h], dev), too_large, &square);
    // 2^(bits-2) elements fit in a usize, their 2^bits bytes do not.
    expect(Tensor::ones([1 << (bits - 2)], DType::F32, dev), too_large, "of f32");
    expect(Tensor::arange_step(0f64, (1u64 << (bits - 2)) as f64, 1.0, dev), too_large, "arange");
    let one = f32s(dev, &[1])?;
    expect(one.broadcast_as([1 << (h + 1), 1 << (h - 1)]), too_large, "broadcast_as");
    let empty = f32s(dev, &[0])?;
    expect(empty.reshape([0, big, big]), too_large, "reshape");
    assert_eq!(empty.reshape([0, big])?.dims(), &[0, big], "an empty shape whose strides fit is fine");
    // Ids into a dim past u32 of an empty tensor (found by the fuzz test: wgpu read the size as
    // 0 and called every id bad).
    let ids = Tensor::from_vec(vec![255i64, big as i64 - 1], [2], dev)?;
    let picked = Tensor::zeros([0, big], DType::U8, dev)?.index_select(&ids, 1)?;
    assert_eq!((picked.dims(), picked.to_vec_async::<u8>().await?.len()), (&[0, 2][..], 0));
    // An empty upsample to a size past memory (found by the fuzz test: the cpu built a table of
    // 2^62 offsets).
    let huge: usize = 1 << (bits - 2);
    let up = Tensor::zeros([1, 0, 1], DType::U8, dev)?.upsample_nearest1d(huge)?;
    assert_eq!((up.dims(), up.to_vec_async::<u8>().await?.len()), (&[1, 0, huge][..], 0));
    let up = Tensor::zeros([1, 1, 1, 1], DType::U8, dev)?.upsample_nearest2d(huge, 0)?;
    assert_eq!(up.to_vec_async::<u8>().await?.len(), 0);
    // Joining empty tensors with a huge dim (found by the fuzz test: 2^62 empty row copies).
    let e = Tensor::zeros([huge, 0], DType::U8, dev)?;
    assert_eq!(Tensor::cat(&[&e, &e], 1)?.dims(), &[huge, 0]);
    let bad = Tensor::from_vec(vec![big as i64], [1], dev)?;
    let picked = Tensor::zeros([0, big], DType::U8, dev)?.index_select(&bad, 1);
    expect(
        async { picked?.to_vec_async::<u8>().await }.await,
        |e| matches!(e, Error::IndexOutOfRange { .. }),
        &big.to_string(),
    );
    // Two views that fit, whose broadcast result does not.
    let rows = one.broadcast_as([1 << (h - 1), 1])?;
    let cols = one.broadcast_as([1, 1 << (h + 1)])?;
    expect(rows.add(&cols), |e| matches!(e, Error::ShapeTooLarge { op: "add", .. }), "add");
    intact(&one).await
}

/// A size every layer accepts but no host or device can hold: an error, never an abort. (64-bit
/// only: in a 32-bit address space, as in a browser, a size every layer accepts may be had.)
#[cfg(target_pointer_width = "64")]
async fn memory_that_cannot_be_had_is_an_error(dev: &Device) -> Result<()> {
    let no_memory =
        |e: &Error| matches!(e, Error::OutOfMemory { .. } | Error::LimitExceeded { .. } | Error::Backend { .. });
    let bytes = |e: &Error| e.to_string().contains("bytes");
    let huge = 1usize << 60;
    for r in [
        Tensor::zeros([huge], DType::U8, dev),
        Tensor::arange_step(0i64, 1 << 59, 1, dev),
        Tensor::ones([1], DType::U8, dev)?.broadcast_as([huge])?.contiguous(),
        f32s(dev, &[1])?.broadcast_as([huge])?.exp(),
    ] {
        let e = r.expect_err("no memory holds 2^60 elements");
        assert!(no_memory(&e) && bytes(&e), "{e:?}");
    }
    // A view of 2^40 elements with small results: an answer, or a limit of the device (wgpu
    // kernels index with u32), never a wrong one. (Summing 2^40 terms on the cpu takes hours.)
    let wide = Tensor::ones([1], DType::U8, dev)?.broadcast_as([1 << 40])?;
    let ids = Tensor::from_vec(vec![0u32, (1 << 31) + 5], [2], dev)?;
    match async { wide.index_select(&ids, 0)?.to_vec_async::<u8>().await }.await {
        Ok(v) => assert_eq!(v, vec![1, 1]),
        Err(e) => assert!(matches!(e, Error::LimitExceeded { .. }) && bytes(&e), "{e:?}"),
    }
    let ok = f32s(dev, &[3])?;
    assert_eq!(ok.exp()?.to_vec_async::<f32>().await?.len(), 3, "the device goes on");
    intact(&ok).await
}
