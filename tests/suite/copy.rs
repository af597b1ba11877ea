use crate::{Data, Tol, View, assert_close, assert_values, cpu, rand_tensor, same_as_cpu, suite, view_tensor};
use half::{bf16, f16};
use rocm_wgpu_ops::{CpuStorage, DType, Device, Error, Result, Tensor, WithDType, with_storage};

suite!(
    contiguous_matches_reference,
    copy_never_shares_storage,
    cat_matches_reference,
    cat_hand_computed,
    slice_set_hand_computed,
    fill_through_views,
    full_zeros_ones,
    arange_matches_reference,
    arange_hand_computed,
    to_device_round_trip,
    host_readback,
    reshape_and_views,
    zero_size_tensors,
    copy_rejects_bad_input,
);

/// Shapes for layout tests, with a zero-size one and rank 1 and 0.
const SHAPES: &[&[usize]] = &[&[5, 7], &[2, 3, 4], &[0, 3], &[6], &[]];

/// A range every dtype holds, negative where the dtype allows.
fn range(dtype: DType) -> (f64, f64) {
    if matches!(dtype, DType::U8 | DType::U32) { (0.0, 250.0) } else { (-100.0, 100.0) }
}

/// Small integers as a host buffer of `dtype` (exact in every dtype for |v| <= 255).
fn host(dtype: DType, v: &[i64]) -> CpuStorage {
    fn of<T: WithDType>(v: &[i64]) -> CpuStorage {
        CpuStorage::from_vec(v.iter().map(|&x| T::from_i64(x)).collect::<Vec<T>>())
    }
    match dtype {
        DType::U8 => of::<u8>(v),
        DType::U32 => of::<u32>(v),
        DType::I64 => of::<i64>(v),
        DType::F16 => of::<f16>(v),
        DType::BF16 => of::<bf16>(v),
        DType::F32 => of::<f32>(v),
        DType::F64 => of::<f64>(v),
    }
}

fn ints(dev: &Device, dtype: DType, v: &[i64], shape: &[usize]) -> Result<Tensor> {
    Tensor::from_cpu(host(dtype, v), shape.to_vec(), dev)
}

/// `0, 1, ..., n - 1` in `shape`.
fn iota(dev: &Device, dtype: DType, shape: &[usize]) -> Result<Tensor> {
    let n = shape.iter().product::<usize>() as i64;
    ints(dev, dtype, &(0..n).collect::<Vec<_>>(), shape)
}

/// Asserts the shape and the exact values of `t`.
async fn check(t: &Tensor, shape: &[usize], want: &[i64], what: &str) -> Result<()> {
    assert_eq!(t.dims(), shape, "{what}: shape");
    stores(t, host(t.dtype(), want), format!("{what}: values")).await
}

/// Asserts that `t` reads back as `want` ([`crate::later`]).
async fn stores(t: &Tensor, want: CpuStorage, what: String) -> Result<()> {
    crate::later::check(&[t], async move |t| {
        assert_eq!(t[0].to_cpu_storage_async().await?, want, "{what}");
        Ok(())
    })
    .await
}

/// `(source length, source index of each element in row-major order)` of
/// `view_tensor(_, view, _, shape, ..)`, worked out on the host from how it builds the view.
fn view_indices(view: View, shape: &[usize]) -> (usize, Vec<usize>) {
    let r = shape.len();
    let mut src = shape.to_vec();
    match view {
        View::Transposed if r >= 2 => src.swap(0, r - 1),
        View::Offset if r == 1 => src[0] += 5,
        View::Offset if r >= 2 => {
            src[r - 1] += 3;
            src[0] += 2;
        }
        View::Broadcast if r >= 1 => src[0] = 1,
        _ => {}
    }
    let mut strides = vec![1; r];
    for d in (0..r.saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * src[d + 1];
    }
    let n: usize = shape.iter().product();
    let idx = (0..n)
        .map(|flat| {
            let mut at = vec![0; r];
            let mut f = flat;
            for d in (0..r).rev() {
                at[d] = f % shape[d];
                f /= shape[d];
            }
            match view {
                View::Transposed if r >= 2 => at.swap(0, r - 1),
                View::Offset if r == 1 => at[0] += 3,
                View::Offset if r >= 2 => {
                    at[0] += 1;
                    at[r - 1] += 2;
                }
                View::Broadcast if r >= 1 => at[0] = 0,
                _ => {}
            }
            at.iter().zip(&strides).map(|(a, s)| a * s).sum()
        })
        .collect();
    (src.iter().product(), idx)
}

async fn contiguous_matches_reference(dev: &Device) -> Result<()> {
    for &dtype in DType::ALL {
        let (lo, hi) = range(dtype);
        for view in View::ALL {
            for &shape in SHAPES {
                let what = format!("{dtype} {view:?} {shape:?}");
                let t = view_tensor(dev, view, dtype, shape, 21, lo, hi)?;
                let (n, idx) = view_indices(view, shape);
                let data = Data::new(21).storage(dtype, n, lo, hi);
                let want = with_storage!(&data, v => CpuStorage::from_vec(idx.iter().map(|&i| v[i]).collect()));
                for (how, c) in [("contiguous", t.contiguous()?), ("copy", t.copy()?)] {
                    assert!(c.is_contiguous(), "{what}: {how} is not contiguous");
                    assert_eq!(c.dims(), shape, "{what}: {how} shape");
                    stores(&c, want.clone(), format!("{what}: {how} vs host")).await?;
                }
                same_as_cpu(dev, Tol::EXACT, &what, |d| view_tensor(d, view, dtype, shape, 21, lo, hi)?.copy()).await?;
            }
        }
    }
    Ok(())
}

async fn copy_never_shares_storage(dev: &Device) -> Result<()> {
    let t = iota(dev, DType::I64, &[2, 3])?;
    let c = t.copy()?;
    c.fill_(-1i64)?;
    check(&t, &[2, 3], &[0, 1, 2, 3, 4, 5], "source after filling its copy").await?;
    check(&c, &[2, 3], &[-1; 6], "copy").await?;
    // `contiguous` of a contiguous tensor is the tensor itself.
    t.contiguous()?.fill_(4i64)?;
    check(&t, &[2, 3], &[4; 6], "source after filling its contiguous self").await?;
    Ok(())
}

async fn cat_matches_reference(dev: &Device) -> Result<()> {
    for &dtype in DType::ALL {
        let (lo, hi) = range(dtype);
        for view in View::ALL {
            for dim in 0..2 {
                let what = format!("cat {dtype} {view:?} dim {dim}");
                same_as_cpu(dev, Tol::EXACT, &what, |d| {
                    let a = view_tensor(d, view, dtype, &[3, 4], 22, lo, hi)?;
                    let mut other = [3, 4];
                    other[dim] = 2;
                    let b = view_tensor(d, view, dtype, &other, 23, lo, hi)?;
                    other[dim] = 0;
                    let e = rand_tensor(d, dtype, &other, 24, lo, hi)?;
                    Tensor::cat(&[&a, &e, &b, &a], dim)
                })
                .await?;
            }
        }
        // Rows of whole 16-byte chunks (native: copy2d's `_vec` kernel), then pieces that start
        // at odd elements of the source or of the destination (the element walk).
        for odd in [false, true] {
            same_as_cpu(dev, Tol::EXACT, &format!("cat {dtype} rows of chunks, odd {odd}"), |d| {
                let a = rand_tensor(d, dtype, &[3, 32], 25, lo, hi)?;
                let at = usize::from(odd);
                let b = rand_tensor(d, dtype, &[48 + at], 26, lo, hi)?.narrow(0, at, 48)?.reshape([3, 16])?;
                let one = rand_tensor(d, dtype, &[3, 1], 27, lo, hi)?;
                if odd { Tensor::cat(&[&one, &a, &b], 1) } else { Tensor::cat(&[&a, &b, &a], 1) }
            })
            .await?;
        }
    }
    Ok(())
}

async fn cat_hand_computed(dev: &Device) -> Result<()> {
    for &dtype in DType::ALL {
        let a = iota(dev, dtype, &[2, 2, 2])?;
        let b = [10, 11, 12, 13];
        let b0 = ints(dev, dtype, &b, &[1, 2, 2])?;
        let e0 = Tensor::zeros([0, 2, 2], dtype, dev)?;
        let want0 = [0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13];
        check(&Tensor::cat(&[&e0, &a, &b0], 0)?, &[3, 2, 2], &want0, &format!("{dtype} dim 0")).await?;
        let b1 = ints(dev, dtype, &b, &[2, 1, 2])?;
        let e1 = Tensor::zeros([2, 0, 2], dtype, dev)?;
        let want1 = [0, 1, 2, 3, 10, 11, 4, 5, 6, 7, 12, 13];
        check(&Tensor::cat(&[&a, &e1, &b1], 1)?, &[2, 3, 2], &want1, &format!("{dtype} dim 1")).await?;
        let b2 = ints(dev, dtype, &b, &[2, 2, 1])?;
        let e2 = Tensor::zeros([2, 2, 0], dtype, dev)?;
        let want2 = [0, 1, 10, 2, 3, 11, 4, 5, 12, 6, 7, 13];
        check(&Tensor::cat(&[&a, &b2, &e2], 2)?, &[2, 2, 3], &want2, &format!("{dtype} dim 2")).await?;
        // A transposed piece is read through its view; a tensor may be joined to itself.
        let t = iota(dev, dtype, &[2, 3])?.t()?;
        let want = [0, 3, 1, 4, 2, 5, 0, 3, 1, 4, 2, 5];
        check(&Tensor::cat(&[&t, &t], 0)?, &[6, 2], &want, &format!("{dtype} transposed pieces")).await?;
        check(&Tensor::cat(&[&t], 1)?, &[3, 2], &want[..6], &format!("{dtype} one piece")).await?;
    }
    Ok(())
}

async fn slice_set_hand_computed(dev: &Device) -> Result<()> {
    for &dtype in DType::ALL {
        let what = |s: &str| format!("{dtype} {s}");
        let dst = iota(dev, dtype, &[3, 4])?;
        dst.slice_set(&ints(dev, dtype, &[100, 101, 102, 103, 104, 105], &[3, 2])?, 1, 1)?;
        check(&dst, &[3, 4], &[0, 100, 101, 3, 4, 102, 103, 7, 8, 104, 105, 11], &what("columns 1..3")).await?;
        dst.slice_set(&ints(dev, dtype, &[200, 201, 202, 203], &[1, 4])?, 0, 2)?;
        check(&dst, &[3, 4], &[0, 100, 101, 3, 4, 102, 103, 7, 200, 201, 202, 203], &what("row 2")).await?;
        // A transposed source: [[50, 53], [51, 54], [52, 55]].
        let src = ints(dev, dtype, &[50, 51, 52, 53, 54, 55], &[2, 3])?.t()?;
        dst.slice_set(&src, 1, 2)?;
        check(&dst, &[3, 4], &[0, 100, 50, 53, 4, 102, 51, 54, 200, 201, 52, 55], &what("transposed source")).await?;
        // A source that is a view of the destination itself.
        dst.slice_set(&dst.narrow(1, 0, 2)?, 1, 2)?;
        check(&dst, &[3, 4], &[0, 100, 0, 100, 4, 102, 4, 102, 200, 201, 200, 201], &what("self source")).await?;
        dst.slice_set(&Tensor::zeros([3, 0], dtype, dev)?, 1, 4)?;
        check(&dst, &[3, 4], &[0, 100, 0, 100, 4, 102, 4, 102, 200, 201, 200, 201], &what("empty source")).await?;
        // A contiguous destination at an offset in a larger storage.
        let base = Tensor::zeros([4, 3], dtype, dev)?;
        base.narrow(0, 1, 2)?.slice_set(&ints(dev, dtype, &[7, 8], &[2, 1])?, 1, 2)?;
        check(&base, &[4, 3], &[0, 0, 0, 0, 0, 7, 0, 0, 8, 0, 0, 0], &what("offset destination")).await?;
    }
    Ok(())
}

async fn fill_through_views(dev: &Device) -> Result<()> {
    for &dtype in DType::ALL {
        let what = |s: &str| format!("fill_ {dtype} {s}");
        let t = iota(dev, dtype, &[3, 4])?;
        t.narrow(1, 1, 2)?.fill_(7u8)?;
        check(&t, &[3, 4], &[0, 7, 7, 3, 4, 7, 7, 7, 8, 7, 7, 11], &what("narrow")).await?;
        // Rows 2..4, columns 0..2 of the transpose are rows 0..2, columns 2..4 of `u`.
        let u = iota(dev, dtype, &[3, 4])?;
        u.t()?.narrow(0, 2, 2)?.narrow(1, 0, 2)?.fill_(9u8)?;
        check(&u, &[3, 4], &[0, 1, 9, 9, 4, 5, 9, 9, 8, 9, 10, 11], &what("transposed")).await?;
        let w = iota(dev, dtype, &[1, 3])?;
        w.broadcast_as([4, 3])?.narrow(1, 1, 1)?.fill_(5u8)?;
        check(&w, &[1, 3], &[0, 5, 2], &what("broadcast")).await?;
        let z = iota(dev, dtype, &[2, 2])?;
        z.narrow(0, 1, 0)?.fill_(5u8)?;
        check(&z, &[2, 2], &[0, 1, 2, 3], &what("empty view")).await?;
        for transposed in [false, true] {
            same_as_cpu(dev, Tol::EXACT, &what(&format!("reference, transposed {transposed}")), |d| {
                let base = rand_tensor(d, dtype, &[5, 6], 25, 0.0, 100.0)?;
                let v = if transposed { base.t()? } else { base.clone() };
                v.narrow(0, 1, 3)?.narrow(1, 2, 3)?.fill_(42.5f64)?;
                Ok(base)
            })
            .await?;
        }
    }
    Ok(())
}

async fn full_zeros_ones(dev: &Device) -> Result<()> {
    for &dtype in DType::ALL {
        let what = |s: &str| format!("{dtype} {s}");
        check(&Tensor::zeros([2, 3], dtype, dev)?, &[2, 3], &[0; 6], &what("zeros")).await?;
        check(&Tensor::ones([3, 1], dtype, dev)?, &[3, 1], &[1; 3], &what("ones")).await?;
        check(&Tensor::full(7u32, [4], dtype, dev)?, &[4], &[7; 4], &what("full 7")).await?;
        check(&Tensor::full(200i64, [2, 2, 2], dtype, dev)?, &[2, 2, 2], &[200; 8], &what("full 200")).await?;
        check(&Tensor::full(5u8, (), dtype, dev)?, &[], &[5], &what("rank 0")).await?;
        // 2.75 is exact in every float dtype; integers truncate it.
        let f = Tensor::full(2.75f64, [3], dtype, dev)?;
        let want = if dtype.is_int() { 2.0 } else { 2.75 };
        assert_eq!(f.to_cpu_storage_async().await?.to_f64_vec(), [want; 3], "{}", what("full 2.75"));
    }
    for dtype in [DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64] {
        check(&Tensor::full(-3i64, [2], dtype, dev)?, &[2], &[-3, -3], &format!("{dtype} full -3")).await?;
    }
    Ok(())
}

async fn arange_matches_reference(dev: &Device) -> Result<()> {
    let tol = Tol::EXACT;
    same_as_cpu(dev, tol, "u8", |d| Tensor::arange_step(3u8, 250, 7, d)).await?;
    same_as_cpu(dev, tol, "u32", |d| Tensor::arange_step(5u32, 100_000, 333, d)).await?;
    same_as_cpu(dev, tol, "i64", |d| Tensor::arange_step(1i64 << 40, -(1 << 40), -(1 << 33), d)).await?;
    same_as_cpu(dev, Tol::of(DType::F32), "f32", |d| Tensor::arange_step(-3.0f32, 7.0, 0.1, d)).await?;
    same_as_cpu(dev, Tol::of(DType::F64), "f64", |d| Tensor::arange_step(-3.0f64, 7.0, 0.1, d)).await?;
    let h = |v: f32| f16::from_f32(v);
    same_as_cpu(dev, Tol::of(DType::F16), "f16", |d| Tensor::arange_step(h(-2.0), h(30.0), h(0.25), d)).await?;
    let b = |v: f32| bf16::from_f32(v);
    same_as_cpu(dev, Tol::of(DType::BF16), "bf16", |d| Tensor::arange_step(b(10.0), b(-10.0), b(-0.5), d)).await?;
    Ok(())
}

async fn arange_hand_computed(dev: &Device) -> Result<()> {
    assert_values(&Tensor::arange(0i64, 5, dev)?, &[5], &[0i64, 1, 2, 3, 4], 0.0).await?;
    assert_values(&Tensor::arange_step(10i64, -3, -4, dev)?, &[4], &[10i64, 6, 2, -2], 0.0).await?;
    assert_values(&Tensor::arange_step(3u32, 20, 5, dev)?, &[4], &[3u32, 8, 13, 18], 0.0).await?;
    assert_values(&Tensor::arange(250u8, 255, dev)?, &[5], &[250u8, 251, 252, 253, 254], 0.0).await?;
    assert_values(&Tensor::arange_step(0.0f32, 1.0, 0.25, dev)?, &[4], &[0f32, 0.25, 0.5, 0.75], 0.0).await?;
    assert_values(&Tensor::arange_step(1.0f32, 0.0, -0.25, dev)?, &[4], &[1f32, 0.75, 0.5, 0.25], 0.0).await?;
    if dev.supports("arange", DType::F64).is_ok() {
        assert_values(&Tensor::arange_step(-1.0f64, 1.0, 0.5, dev)?, &[4], &[-1.0, -0.5, 0.0, 0.5], 0.0).await?;
        assert_values(&Tensor::arange_step(0.0f64, 1.0, 0.3, dev)?, &[4], &[0.0, 0.3, 0.6, 0.9], 1e-15).await?;
    }
    let h = [0.0f32, 0.5, 1.0, 1.5].map(f16::from_f32);
    assert_values(&Tensor::arange_step(h[0], f16::from_f32(2.0), h[1], dev)?, &[4], &h, 0.0).await?;
    let b = [-1.0f32, 0.0, 1.0].map(bf16::from_f32);
    assert_values(&Tensor::arange(b[0], bf16::from_f32(1.5), dev)?, &[3], &b, 0.0).await?;
    for empty in [Tensor::arange(5i64, 5, dev)?, Tensor::arange(5i64, 2, dev)?, Tensor::arange(1.0f32, 0.0, dev)?] {
        assert_eq!(empty.dims(), [0], "empty arange");
        assert_eq!(empty.to_cpu_storage_async().await?.to_f64_vec(), Vec::<f64>::new());
    }
    Ok(())
}

async fn to_device_round_trip(dev: &Device) -> Result<()> {
    for &dtype in DType::ALL {
        let (lo, hi) = range(dtype);
        for view in View::ALL {
            let t = view_tensor(dev, view, dtype, &[3, 5], 26, lo, hi)?;
            let host = t.to_device_async(&cpu()).await?;
            let back = host.to_device(dev)?;
            assert!(back.is_contiguous() && host.is_contiguous(), "to_device gives contiguous tensors");
            let what = format!("to_device {dtype} {view:?}");
            assert_close(&host, &t.to_device_async(&cpu()).await?, Tol::EXACT, &what).await?;
            assert_eq!(back.to_cpu_storage_async().await?, t.to_cpu_storage_async().await?, "{what}");
        }
    }
    Ok(())
}

async fn host_readback(dev: &Device) -> Result<()> {
    let t = Tensor::from_vec(vec![1i64, 2, 3, 4, 5, 6], [2, 3], dev)?;
    assert_eq!(t.to_vec2_async::<i64>().await?, vec![vec![1, 2, 3], vec![4, 5, 6]]);
    assert_eq!(t.t()?.to_vec2_async::<i64>().await?, vec![vec![1, 4], vec![2, 5], vec![3, 6]]);
    assert_eq!(t.narrow(1, 1, 1)?.to_vec2_async::<i64>().await?, vec![vec![2], vec![5]]);
    assert_eq!(
        t.narrow(1, 1, 0)?.to_vec2_async::<i64>().await?,
        vec![Vec::<i64>::new(), vec![]],
        "rows of nothing stay rows"
    );
    assert_eq!(t.narrow(0, 1, 1)?.narrow(1, 2, 1)?.to_scalar_async::<i64>().await?, 6);
    assert_eq!(Tensor::full(2.5f32, (), DType::F32, dev)?.to_scalar_async::<f32>().await?, 2.5);
    assert_eq!(Tensor::full(9u8, [1, 1], DType::U8, dev)?.to_scalar_async::<u8>().await?, 9);
    assert!(matches!(t.to_scalar_async::<i64>().await, Err(Error::Rank { .. })), "to_scalar of 6 elements");
    assert!(matches!(t.flatten_all()?.to_vec2_async::<i64>().await, Err(Error::Rank { .. })), "to_vec2 of rank 1");
    assert!(matches!(t.to_vec_async::<f32>().await, Err(Error::HostDType { .. })), "to_vec in the wrong type");
    Ok(())
}

async fn reshape_and_views(dev: &Device) -> Result<()> {
    for &dtype in DType::ALL {
        let what = |s: &str| format!("{dtype} {s}");
        // A transpose cannot be reshaped in place: the result is a copy.
        let t = iota(dev, dtype, &[2, 3])?;
        let r = t.t()?.reshape([6])?;
        check(&r, &[6], &[0, 3, 1, 4, 2, 5], &what("reshape of transpose")).await?;
        r.fill_(1u8)?;
        check(&t, &[2, 3], &[0, 1, 2, 3, 4, 5], &what("source after filling the reshaped copy")).await?;
        let v = t.reshape([3, 1, 2])?;
        check(&v, &[3, 1, 2], &[0, 1, 2, 3, 4, 5], &what("reshape of contiguous")).await?;
        v.narrow(0, 2, 1)?.fill_(9u8)?;
        check(&t, &[2, 3], &[0, 1, 2, 3, 9, 9], &what("a contiguous reshape is a view")).await?;

        let x = iota(dev, dtype, &[2, 3, 4])?;
        // Element (i, j, k) of the permutation is x[j, k, i] = 12 j + 4 k + i.
        let mut want = Vec::new();
        for i in 0..4 {
            for j in 0..2 {
                for k in 0..3 {
                    want.push(12 * j + 4 * k + i);
                }
            }
        }
        check(&x.permute([2, 0, 1])?, &[4, 2, 3], &want, &what("permute")).await?;
        let all: Vec<i64> = (0..24).collect();
        let u = x.unsqueeze(1)?;
        check(&u, &[2, 1, 3, 4], &all, &what("unsqueeze")).await?;
        check(&u.squeeze(1)?, &[2, 3, 4], &all, &what("squeeze")).await?;
        check(&x.unsqueeze(3)?.squeeze(3)?, &[2, 3, 4], &all, &what("unsqueeze last")).await?;
        let sq = x.narrow(1, 1, 1)?.squeeze(1)?;
        check(&sq, &[2, 4], &[4, 5, 6, 7, 16, 17, 18, 19], &what("squeeze of a narrow")).await?;
        // Column [10, 20, 30] stretched to (2, 3, 4): element (i, j, k) is 10 (j + 1).
        let col = ints(dev, dtype, &[10, 20, 30], &[3, 1])?;
        let want: Vec<i64> = (0..24).map(|f| 10 * ((f / 4) % 3 + 1)).collect();
        check(&col.broadcast_as([2, 3, 4])?, &[2, 3, 4], &want, &what("broadcast_as")).await?;
        let perm = x.permute([1, 2, 0])?.reshape([12, 2])?;
        let want: Vec<i64> = (0..24).map(|f| 12 * (f % 2) + f / 2).collect();
        check(&perm, &[12, 2], &want, &what("reshape of a permutation")).await?;
    }
    Ok(())
}

async fn zero_size_tensors(dev: &Device) -> Result<()> {
    for &dtype in DType::ALL {
        let z = Tensor::zeros([0, 3], dtype, dev)?;
        assert_eq!((z.dims(), z.elem_count()), (&[0, 3][..], 0));
        assert_eq!(z.to_cpu_storage_async().await?, host(dtype, &[]));
        check(&z.t()?.contiguous()?, &[3, 0], &[], "empty transposed").await?;
        check(&z.copy()?, &[0, 3], &[], "empty copy").await?;
        check(&z.reshape([3, 0, 5])?, &[3, 0, 5], &[], "empty reshape").await?;
        z.fill_(1u8)?;
        let a = Tensor::zeros([0, 2], dtype, dev)?;
        check(&Tensor::cat(&[&a, &z], 1)?, &[0, 5], &[], "cat of empties").await?;
        check(&Tensor::cat(&[&z, &z], 0)?, &[0, 3], &[], "cat of empties along 0").await?;
        check(&z.to_device_async(&cpu()).await?.to_device(dev)?, &[0, 3], &[], "empty to_device").await?;
        check(&Tensor::ones([2, 0, 4], dtype, dev)?.permute([2, 0, 1])?, &[4, 2, 0], &[], "empty permute").await?;
    }
    assert_eq!(Tensor::zeros([0, 3], DType::F32, dev)?.to_vec_async::<f32>().await?, Vec::<f32>::new());
    Ok(())
}

async fn copy_rejects_bad_input(dev: &Device) -> Result<()> {
    let bad_param = |r: Result<Tensor>| matches!(r, Err(Error::InvalidParam { .. }));
    assert!(bad_param(Tensor::arange_step(0i64, 5, 0, dev)), "zero integer step");
    assert!(bad_param(Tensor::arange_step(0.0f32, 1.0, 0.0, dev)), "zero float step");
    assert!(bad_param(Tensor::arange_step(0.0f64, f64::INFINITY, 1.0, dev)), "infinite end");
    assert!(bad_param(Tensor::cat::<&Tensor>(&[], 0)), "cat of nothing");
    let a = Tensor::zeros([2, 3], DType::F32, dev)?;
    let b = Tensor::zeros([3, 3], DType::F32, dev)?;
    assert!(matches!(Tensor::cat(&[&a, &b], 1), Err(Error::ShapeMismatch { .. })), "cat with unequal dims");
    let c = Tensor::zeros([2, 3], DType::F64, dev)?;
    assert!(matches!(Tensor::cat(&[&a, &c], 0), Err(Error::DTypeMismatch { .. })), "cat of two dtypes");
    assert!(matches!(Tensor::cat(&[&a, &a], 2), Err(Error::DimOutOfRange { .. })), "cat past the rank");
    let dst = Tensor::zeros([4, 3], DType::F32, dev)?;
    assert!(matches!(dst.slice_set(&a, 0, 3), Err(Error::InvalidParam { .. })), "slice_set past the end");
    let r = dst.narrow(0, 0, 1)?.broadcast_as([4, 3])?.slice_set(&Tensor::zeros([4, 1], DType::F32, dev)?, 1, 0);
    assert!(matches!(r, Err(Error::InvalidView { .. })), "slice_set into a broadcast destination");
    assert!(matches!(dst.slice_set(&c, 0, 0), Err(Error::DTypeMismatch { .. })), "slice_set of another dtype");
    check(&dst, &[4, 3], &[0; 12], "a refused slice_set leaves the destination alone").await?;
    Ok(())
}
