use crate::{Tol, View, assert_close, assert_values, rand_tensor, suite, view_tensor};
use rocm_wgpu_ops::wgpu::gemm_hooks::{
    Kernel as GemmKernel, last_kernel, last_parts, table_coop_tiles, table_tiles, with_kernel, with_parts,
};
use rocm_wgpu_ops::{BackendKind, DType, Device, Result, Tensor};

suite!(
    matmul_layouts_match_reference,
    matmul_views_match_reference,
    matmul_batches_match_reference,
    matmul_empty_match_reference,
    matmul_hand_computed,
    matmul_transpose_identity,
    matmul_identity_matrix,
    matmul_row_is_host_dot,
    matmul_edge_sizes_match_reference,
    matmul_split_k_matches_reference,
    matmul_f16_takes_cooperative_matrices,
    matmul_library_shapes_match_reference,
    matmul_small_shapes_match_reference,
    matmul_few_rows_match_reference,
    #[cfg(not(target_family = "wasm"))] // threads: a browser's module has one
    matmul_from_threads_at_once_matches_reference,
    matmul_repeats_bit_for_bit,
);

/// A k-term sum of products accumulated in precision u errs by at most ~k·u·Σ|a_i b_i| (the
/// classic γ_k bound); with operands in [-1, 1] that sum is below k, so the allowed error grows
/// linearly in k on top of the one rounding to the output dtype.
fn tol(dtype: DType, k: usize) -> Tol {
    Tol::of(dtype).times(1.0 + k as f64 / 4.0)
}

/// Operands of logical shapes `ls` and `rs`; `lt`/`rt` store an operand with its last two dims
/// swapped and hand out a transposed view of it.
fn operands(d: &Device, dtype: DType, ls: &[usize], lt: bool, rs: &[usize], rt: bool) -> Result<(Tensor, Tensor)> {
    let operand = |shape: &[usize], t: bool, seed| {
        if !t {
            return rand_tensor(d, dtype, shape, seed, -1.0, 1.0);
        }
        let r = shape.len();
        let mut s = shape.to_vec();
        s.swap(r - 2, r - 1);
        rand_tensor(d, dtype, &s, seed, -1.0, 1.0)?.t()
    };
    Ok((operand(ls, lt, 1)?, operand(rs, rt, 2)?))
}

/// Matches the cpu reference, and on `dev` equals the product of fresh contiguous copies of
/// the operands with their batch dims materialised (so strides, offsets and stride-0 batches are
/// checked against plain row-major data even on the cpu).
async fn check(dev: &Device, tol: Tol, what: &str, f: impl Fn(&Device) -> Result<(Tensor, Tensor)>) -> Result<()> {
    if crate::sample::skip() {
        return Ok(());
    }
    crate::compare_with_cpu(dev, tol, what, |d| {
        let (a, b) = f(d)?;
        a.matmul(&b)
    })
    .await?;
    let (a, b) = f(dev)?;
    let got = match a.matmul(&b) {
        Err(e) if crate::stated_unsupported(dev, &e) => return Ok(()),
        r => r?,
    };
    let batch = &got.dims()[..got.rank() - 2];
    let full = |t: &Tensor| {
        let r = t.rank();
        t.broadcast_as([batch, &t.dims()[r - 2..]].concat())?.copy()
    };
    assert_close(&got, &full(&a)?.matmul(&full(&b)?)?, tol, &format!("{what}: vs contiguous copies")).await
}

async fn matmul_layouts_match_reference(dev: &Device) -> Result<()> {
    for &dtype in DType::FLOAT {
        for (m, k, n) in [(5, 7, 3), (1, 33, 6), (8, 1, 9)] {
            for (lt, rt) in [(false, false), (true, false), (false, true), (true, true)] {
                let what = format!("matmul {dtype} ({m},{k})x({k},{n}) lhs^T {lt} rhs^T {rt}");
                check(dev, tol(dtype, k), &what, |d| operands(d, dtype, &[m, k], lt, &[k, n], rt)).await?;
            }
        }
    }
    Ok(())
}

/// Every test view of each operand: transposed (batch and column dims swapped), offset
/// windows and stride-0 batches, crossed with each other.
async fn matmul_views_match_reference(dev: &Device) -> Result<()> {
    let (b, m, k, n) = (3, 4, 6, 5);
    for &dtype in DType::FLOAT {
        for lv in View::ALL {
            for rv in View::ALL {
                let what = format!("matmul {dtype} lhs {lv:?} rhs {rv:?}");
                check(dev, tol(dtype, k), &what, |d| {
                    let lhs = view_tensor(d, lv, dtype, &[b, m, k], 3, -1.0, 1.0)?;
                    Ok((lhs, view_tensor(d, rv, dtype, &[b, k, n], 4, -1.0, 1.0)?))
                })
                .await?;
            }
        }
    }
    Ok(())
}

async fn matmul_batches_match_reference(dev: &Device) -> Result<()> {
    for &dtype in DType::FLOAT {
        let t = tol(dtype, 5);
        let cases: [(&str, &[usize], &[usize]); 5] = [
            ("rank 3", &[2, 4, 5], &[2, 5, 3]),
            ("rank 4", &[2, 3, 4, 5], &[2, 3, 5, 3]),
            ("broadcast batch", &[2, 1, 4, 5], &[3, 5, 3]),
            ("rank-2 lhs, batched rhs", &[4, 5], &[2, 2, 5, 3]),
            ("batched lhs, rank-2 rhs", &[3, 4, 5], &[5, 3]),
        ];
        for (name, ls, rs) in cases {
            for (lt, rt) in [(false, false), (true, true)] {
                let what = format!("matmul {dtype} {name} {ls:?}x{rs:?} transposed {lt}");
                check(dev, t, &what, |d| operands(d, dtype, ls, lt, rs, rt)).await?;
            }
        }
        check(dev, t, &format!("matmul {dtype} stride-0 batch via broadcast_as"), |d| {
            let lhs = rand_tensor(d, dtype, &[1, 4, 5], 5, -1.0, 1.0)?.broadcast_as([4, 4, 5])?;
            Ok((lhs, rand_tensor(d, dtype, &[4, 5, 3], 6, -1.0, 1.0)?))
        })
        .await?;
        check(dev, t, &format!("matmul {dtype} both batches stride 0"), |d| {
            let lhs = rand_tensor(d, dtype, &[1, 4, 5], 5, -1.0, 1.0)?.broadcast_as([2, 3, 4, 5])?;
            Ok((lhs, rand_tensor(d, dtype, &[1, 3, 5, 3], 6, -1.0, 1.0)?.broadcast_as([2, 3, 5, 3])?))
        })
        .await?;
        check(dev, t, &format!("matmul {dtype} offset windows (narrow)"), |d| {
            let lhs = rand_tensor(d, dtype, &[4, 7, 9], 7, -1.0, 1.0)?.narrow(0, 1, 2)?.narrow(1, 2, 4)?;
            let rhs = rand_tensor(d, dtype, &[3, 6, 8], 8, -1.0, 1.0)?.narrow(0, 1, 2)?.narrow(2, 3, 3)?;
            Ok((lhs.narrow(2, 3, 5)?, rhs.narrow(1, 1, 5)?))
        })
        .await?;
    }
    Ok(())
}

async fn matmul_empty_match_reference(dev: &Device) -> Result<()> {
    for dtype in crate::float_dtypes(dev) {
        let cases: [(&[usize], &[usize], &[usize]); 5] = [
            (&[0, 4], &[4, 3], &[0, 3]),
            (&[2, 4], &[4, 0], &[2, 0]),
            (&[2, 0], &[0, 3], &[2, 3]),
            (&[0, 2, 4], &[0, 4, 3], &[0, 2, 3]),
            (&[2, 3, 0], &[2, 0, 5], &[2, 3, 5]),
        ];
        for (ls, rs, out) in cases {
            for (lt, rt) in [(false, false), (true, true)] {
                let what = format!("matmul {dtype} {ls:?}x{rs:?} transposed {lt}");
                check(dev, Tol::EXACT, &what, |d| {
                    let (a, b) = operands(d, dtype, ls, lt, rs, rt)?;
                    assert_eq!(a.matmul(&b)?.dims(), out, "{what}: shape");
                    Ok((a, b))
                })
                .await?;
            }
        }
    }
    // k = 0 sums nothing: all zeros.
    let (a, b) = operands(dev, DType::F32, &[2, 0], false, &[0, 3], true)?;
    assert_values(&a.matmul(&b)?, &[2, 3], &[0f32; 6], 0.0).await
}

async fn matmul_hand_computed(dev: &Device) -> Result<()> {
    for dtype in crate::float_dtypes(dev) {
        let a = crate::floats(dev, vec![1., 2., 3., 4., 5., 6.], &[2, 3], dtype)?;
        let b = crate::floats(dev, vec![7., 8., 9., 10., 11., 12.], &[3, 2], dtype)?;
        crate::assert_floats(&a.matmul(&b)?, &[2, 2], &[58., 64., 139., 154.], 0.0).await?;
        // The same product from transposed storage.
        let at = crate::floats(dev, vec![1., 4., 2., 5., 3., 6.], &[3, 2], dtype)?.t()?;
        let bt = crate::floats(dev, vec![7., 9., 11., 8., 10., 12.], &[2, 3], dtype)?.t()?;
        crate::assert_floats(&at.matmul(&bt)?, &[2, 2], &[58., 64., 139., 154.], 0.0).await?;
    }
    // [[1,2],[3,4]] [[5,6],[7,8]] = [[19,22],[43,50]]; [[0,1],[1,0]] [[1,2],[3,4]] swaps rows.
    let a = Tensor::from_vec(vec![1f32, 2., 3., 4., 0., 1., 1., 0.], [2, 2, 2], dev)?;
    let b = Tensor::from_vec(vec![5f32, 6., 7., 8., 1., 2., 3., 4.], [2, 2, 2], dev)?;
    assert_values(&a.matmul(&b)?, &[2, 2, 2], &[19f32, 22., 43., 50., 3., 4., 1., 2.], 0.0).await?;
    // One lhs against two rhs matrices by broadcasting: [1,2] [[1,0],[0,1]] and [1,2] [[2,1],[1,2]].
    let a = Tensor::from_vec(vec![1f32, 2.], [1, 2], dev)?;
    let b = Tensor::from_vec(vec![1f32, 0., 0., 1., 2., 1., 1., 2.], [2, 2, 2], dev)?;
    assert_values(&a.matmul(&b)?, &[2, 1, 2], &[1f32, 2., 4., 5.], 0.0).await
}

/// (A B)^T == B^T A^T: the same terms of every sum, multiplied in the other order.
async fn matmul_transpose_identity(dev: &Device) -> Result<()> {
    for dtype in crate::float_dtypes(dev) {
        let a = rand_tensor(dev, dtype, &[2, 5, 9], 11, -1.0, 1.0)?;
        let b = rand_tensor(dev, dtype, &[2, 9, 4], 12, -1.0, 1.0)?;
        let lhs = a.matmul(&b)?.t()?;
        let rhs = b.t()?.matmul(&a.t()?)?;
        assert_close(&lhs, &rhs, tol(dtype, 9), &format!("(AB)^T vs B^T A^T {dtype}")).await?;
    }
    Ok(())
}

/// Products with an identity matrix are exact: every sum has one non-zero term.
async fn matmul_identity_matrix(dev: &Device) -> Result<()> {
    let eye = |n: usize, dtype| {
        let v = (0..n * n).map(|i| if i % (n + 1) == 0 { 1f64 } else { 0. }).collect();
        crate::floats(dev, v, &[n, n], dtype)
    };
    for dtype in crate::float_dtypes(dev) {
        for view in View::ALL {
            let a = view_tensor(dev, view, dtype, &[6, 4], 13, -2.0, 2.0)?;
            let what = format!("identity {dtype} {view:?}");
            assert_close(&a.matmul(&eye(4, dtype)?)?, &a, Tol::EXACT, &format!("A I, {what}")).await?;
            assert_close(&eye(6, dtype)?.matmul(&a)?, &a, Tol::EXACT, &format!("I A, {what}")).await?;
        }
    }
    Ok(())
}

/// Each element of a row is the host's f64 dot product of the operands, rounded once; the lhs
/// batch is a transposed view and the rhs one matrix broadcast over the batch.
async fn matmul_row_is_host_dot(dev: &Device) -> Result<()> {
    let (bs, m, k, n) = (2, 3, 40, 5);
    for dtype in crate::float_dtypes(dev) {
        let a = rand_tensor(dev, dtype, &[bs, k, m], 14, -1.0, 1.0)?.transpose(1, 2)?;
        let b = rand_tensor(dev, dtype, &[k, n], 15, -1.0, 1.0)?;
        let (ah, bh) = (a.to_cpu_storage_async().await?.to_f64_vec(), b.to_cpu_storage_async().await?.to_f64_vec());
        let p = a.matmul(&b)?;
        for (bi, i) in (0..bs).flat_map(|bi| (0..m).map(move |i| (bi, i))) {
            let dot = |j: usize| (0..k).map(|q| ah[(bi * m + i) * k + q] * bh[q * n + j]).sum::<f64>();
            let want = crate::floats(dev, (0..n).map(dot).collect(), &[1, n], dtype)?;
            let got = p.narrow(0, bi, 1)?.squeeze(0)?.narrow(0, i, 1)?;
            assert_close(&got, &want, tol(dtype, k), &format!("batch {bi} row {i} vs host dot {dtype}")).await?;
        }
    }
    Ok(())
}

/// The tile configurations of the wgpu GEMM table for `dtype`, each forced in turn (`None`: the
/// table's own choice; on other backends, and for f64, only that): the tiled ones, and for f16
/// the cooperative-matrix one where the adapter has it.
pub(crate) fn tile_choices(dev: &Device, dtype: DType) -> Vec<Option<GemmKernel>> {
    let mut v = vec![None];
    if dev.kind() == BackendKind::Wgpu && dtype != DType::F64 {
        v.extend(table_tiles().map(|t| Some(GemmKernel::Tiled(t))));
        let coop = dev.info().iter().any(|(k, v)| *k == "matmul kernels" && v.contains("cooperative matrix 16x16x16"));
        if coop && dtype == DType::F16 {
            v.extend(table_coop_tiles().map(|t| Some(GemmKernel::Coop(t))));
        }
    }
    v
}

/// `run` under `kernel` (forced where given): a forced configuration larger than the adapter's
/// workgroup memory is refused with `LimitExceeded` (the table never picks it there), which
/// passes.
pub async fn forced(kernel: Option<GemmKernel>, run: impl Future<Output = Result<()>>) -> Result<()> {
    match kernel {
        Some(kn) => match with_gemm_kernel_async(kn, run).await {
            Err(rocm_wgpu_ops::Error::LimitExceeded { .. }) => Ok(()),
            r => r,
        },
        None => run.await,
    }
}

/// [`with_kernel`] around each poll of `fut`, so the GEMMs it records take `kernel` on
/// whichever thread polls it.
pub async fn with_gemm_kernel_async<R>(kernel: GemmKernel, fut: impl Future<Output = R>) -> R {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| with_kernel(kernel, || fut.as_mut().poll(cx))).await
}

/// Sizes that fill no tile evenly (1, primes, one short of a power of two), k = 1, and both
/// operands transposed, through every tile configuration the table can pick.
async fn matmul_edge_sizes_match_reference(dev: &Device) -> Result<()> {
    let sizes = [(17, 1, 130), (131, 17, 67), (129, 33, 5), (5, 1023, 9), (1023, 7, 13), (64, 64, 64)];
    for &dtype in DType::FLOAT {
        for (j, kernel) in tile_choices(dev, dtype).into_iter().enumerate() {
            // In a browser each tile configuration in one dtype, turning.
            if !crate::rotated_dtypes(dev, "matmul", DType::FLOAT, j).contains(&dtype) {
                continue;
            }
            crate::sample::class();
            for (m, k, n) in sizes {
                for (lt, rt) in [(false, false), (true, true), (false, true)] {
                    let what = format!("matmul {dtype} ({m},{k})x({k},{n}) lhs^T {lt} rhs^T {rt} kernel {kernel:?}");
                    let run = check(dev, tol(dtype, k), &what, |d| operands(d, dtype, &[m, k], lt, &[k, n], rt));
                    forced(kernel, run).await?;
                }
            }
        }
    }
    Ok(())
}

/// K in parts (split-K: each part's f32 products, then one sum rounded once), forced through
/// every tile configuration: K that splits unevenly (the last part short), K shorter than a part,
/// N not a multiple of 4, transposed operands, a batch broadcast against one rhs. On wgpu the
/// product is split as asked, in fewer parts where K is short (every part but the last a
/// multiple of 64 of K); f64 never is (its parts would hold f32).
async fn matmul_split_k_matches_reference(dev: &Device) -> Result<()> {
    let shapes: [(&[usize], &[usize]); 4] =
        [(&[33, 1023], &[1023, 67]), (&[131, 200], &[200, 16]), (&[17, 64], &[64, 5]), (&[3, 9, 300], &[300, 20])];
    for &dtype in DType::FLOAT {
        for kernel in tile_choices(dev, dtype) {
            for parts in [2, 7] {
                for (ls, rs) in shapes {
                    let k = rs[0];
                    for (lt, rt) in [(false, false), (true, true)] {
                        let what = format!(
                            "matmul {dtype} {ls:?}x{rs:?} lhs^T {lt} rhs^T {rt} kernel {kernel:?} in {parts} parts"
                        );
                        let run = check(dev, tol(dtype, k), &what, |d| operands(d, dtype, ls, lt, rs, rt));
                        with_gemm_parts_async(parts, forced(kernel, run)).await?;
                    }
                    if dev.kind() != BackendKind::Wgpu || kernel.is_some() {
                        continue;
                    }
                    let (a, b) = operands(dev, dtype, ls, false, rs, false)?;
                    match with_parts(parts, || a.matmul(&b)) {
                        Err(e) if crate::stated_unsupported(dev, &e) => continue,
                        r => r?,
                    };
                    let per = k.div_ceil(parts).next_multiple_of(64);
                    let want = if dtype == DType::F64 { 1 } else { k.div_ceil(per) };
                    assert_eq!(last_parts(), want, "{dtype} {ls:?}x{rs:?} asked in {parts} parts");
                }
            }
        }
    }
    Ok(())
}

/// [`with_parts`] around each poll of `fut` (as [`with_gemm_kernel_async`]).
pub async fn with_gemm_parts_async<R>(parts: usize, fut: impl Future<Output = R>) -> R {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| with_parts(parts, || fut.as_mut().poll(cx))).await
}

/// Where the wgpu adapter multiplies f16 on cooperative matrices, f16 products take them (and
/// match the reference): large ones the table's large tiles, small ones (fewer than 33 tiles of
/// 128x128, the table's `small_from`) its small ones; elsewhere they stay tiled.
async fn matmul_f16_takes_cooperative_matrices(dev: &Device) -> Result<()> {
    if dev.kind() != BackendKind::Wgpu {
        return Ok(());
    }
    let coop = dev.info().iter().any(|(k, v)| *k == "matmul kernels" && v.contains("cooperative matrix 16x16x16"));
    for (m, k, n, large) in [(641, 24, 771, true), (131, 40, 67, false)] {
        for (lt, rt) in [(false, false), (true, true)] {
            let what = format!("matmul f16 ({m},{k})x({k},{n}) transposed {lt} {rt}");
            check(dev, tol(DType::F16, k), &what, |d| operands(d, DType::F16, &[m, k], lt, &[k, n], rt)).await?;
            let kernel = last_kernel();
            let want = coop.then(|| GemmKernel::Coop(table_coop_tiles()[if large { 0 } else { 1 }]));
            match want {
                Some(w) => assert_eq!(kernel, Some(w), "{what}: the adapter has cooperative matrices"),
                None => assert!(matches!(kernel, Some(GemmKernel::Tiled(_))), "{what}: kernel {kernel:?}"),
            }
        }
    }
    Ok(())
}

/// Sizes where BLAS libraries change kernels (several tiles, tensor cores for the halves), a
/// stack of lhs matrices against one rhs (one GEMM of all their rows), and operands no
/// transpose flag reaches (a row broadcast down the rows, a column broadcast along them).
async fn matmul_library_shapes_match_reference(dev: &Device) -> Result<()> {
    let k = 70;
    for &dtype in DType::FLOAT {
        let t = tol(dtype, k);
        check(dev, t, &format!("matmul {dtype} stack of lhs against one rhs"), |d| {
            operands(d, dtype, &[3, 33, k], false, &[k, 65], false)
        })
        .await?;
        check(dev, t, &format!("matmul {dtype} transposed stack against one transposed rhs"), |d| {
            operands(d, dtype, &[3, 33, k], true, &[k, 65], true)
        })
        .await?;
        check(dev, t, &format!("matmul {dtype} row broadcast down the rows"), |d| {
            let lhs = rand_tensor(d, dtype, &[1, k], 16, -1.0, 1.0)?.broadcast_as([33, k])?;
            Ok((lhs, rand_tensor(d, dtype, &[k, 17], 17, -1.0, 1.0)?))
        })
        .await?;
        check(dev, t, &format!("matmul {dtype} column broadcast along the columns"), |d| {
            let rhs = rand_tensor(d, dtype, &[k, 1], 18, -1.0, 1.0)?.broadcast_as([k, 9])?;
            Ok((rand_tensor(d, dtype, &[2, 5, k], 19, -1.0, 1.0)?, rhs))
        })
        .await?;
    }
    Ok(())
}

/// Every small shape, plain and with a batched lhs over a rank-2 rhs (whose batch folds into the
/// rows): the matrix-vector kernels' edges in m, n and k. The fuzz test found [2,4,2]x[2,1] in
/// bf16: the rows kernel stored whole packed words where it had written half of one.
async fn matmul_small_shapes_match_reference(dev: &Device) -> Result<()> {
    for &dtype in DType::FLOAT {
        for m in [1, 2, 3, 4, 5, 8] {
            for k in [1, 2, 3, 5, 8] {
                for n in [1, 2, 3, 4, 5] {
                    for batch in [&[][..], &[2]] {
                        let ls = [batch, &[m, k]].concat();
                        let what = format!("matmul {dtype} {ls:?}x[{k}, {n}]");
                        check(dev, tol(dtype, k), &what, |d| operands(d, dtype, &ls, false, &[k, n], false)).await?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// One to four rows of x against weights whose rows are whole 16-byte words (what the native
/// matrix-vector kernels take: N contiguous, or a transposed weight of K contiguous), with x
/// transposed or offset by a row, the weight offset by a row of whole words, K long (several
/// passes of every slice and lane) and N past one block; in every float dtype.
async fn matmul_few_rows_match_reference(dev: &Device) -> Result<()> {
    let shapes = [(1, 8, 8), (2, 40, 264), (3, 1000, 24), (4, 72, 520), (1, 4104, 16), (1, 24, 2056)];
    for &dtype in DType::FLOAT {
        for (m, k, n) in shapes {
            for (xt, wt) in [(false, false), (true, false), (false, true)] {
                let what = format!("matmul {dtype} ({m},{k})x({k},{n}) x^T {xt} w^T {wt}, offset");
                check(dev, tol(dtype, k), &what, |d| {
                    let x = match xt {
                        true => rand_tensor(d, dtype, &[k, m], 21, -1.0, 1.0)?.t()?,
                        false => rand_tensor(d, dtype, &[m + 1, k], 21, -1.0, 1.0)?.narrow(0, 1, m)?,
                    };
                    let w = match wt {
                        true => rand_tensor(d, dtype, &[n + 1, k], 22, -1.0, 1.0)?.narrow(0, 1, n)?.t()?,
                        false => rand_tensor(d, dtype, &[k + 1, n], 22, -1.0, 1.0)?.narrow(0, 1, k)?,
                    };
                    Ok((x, w))
                })
                .await?;
            }
        }
    }
    Ok(())
}

/// The dtypes of [`matmul_from_threads_at_once_matches_reference`]: f32 and f16 take different
/// BLAS calls (`sgemm`, `gemm_ex`), where `dev` runs f16.
#[cfg(not(target_family = "wasm"))]
fn thread_dtypes(dev: &Device) -> Vec<DType> {
    [DType::F32, DType::F16].into_iter().filter(|&d| dev.supports("matmul", d).is_ok()).collect()
}

/// Threads multiplying on one device at once, each with operands of its own, get the cpu
/// reference's products: a native device has one BLAS handle, which two calls must never use
/// at the same time (the handle's lock), and one stream all of them queue on.
#[cfg(not(target_family = "wasm"))]
async fn matmul_from_threads_at_once_matches_reference(dev: &Device) -> Result<()> {
    const THREADS: u64 = 4;
    const ROUNDS: u64 = 6;
    let (m, k, n) = (48, 96, 40);
    let dtypes = thread_dtypes(dev);
    let seed = |t: u64, r: u64| 1000 + 100 * t + 2 * r;
    let operands = |d: &Device, t: u64, r: u64| -> Result<(Tensor, Tensor)> {
        let dtype = dtypes[r as usize % dtypes.len()];
        Ok((
            rand_tensor(d, dtype, &[m, k], seed(t, r), -1.0, 1.0)?,
            rand_tensor(d, dtype, &[k, n], seed(t, r) + 1, -1.0, 1.0)?,
        ))
    };
    let start = std::sync::Barrier::new(THREADS as usize);
    let products: Vec<Vec<Tensor>> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (start, operands) = (&start, &operands);
                s.spawn(move || -> Result<Vec<Tensor>> {
                    start.wait();
                    let mut made = vec![];
                    for r in 0..ROUNDS {
                        let (a, b) = operands(dev, t, r)?;
                        let c = a.matmul(&b)?;
                        // Read back in the thread that queued it, while the others queue theirs.
                        c.to_cpu_storage()?;
                        made.push(c);
                    }
                    Ok(made)
                })
            })
            .collect();
        threads.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect::<Vec<_>>()
    })
    .into_iter()
    .collect::<Result<_>>()?;
    let cpu = crate::cpu();
    for (t, made) in products.iter().enumerate() {
        for (r, got) in made.iter().enumerate() {
            let (a, b) = operands(&cpu, t as u64, r as u64)?;
            let what = format!("matmul {} from thread {t}, round {r}", got.dtype());
            assert_close(got, &a.matmul(&b)?, tol(got.dtype(), k), &what).await?;
        }
    }
    Ok(())
}

/// The same product twice gives the same bits: a GEMM whose sums the library may split across
/// workgroups and finish with atomics (rocBLAS's default: `rocblas_atomics_allowed`) would not.
async fn matmul_repeats_bit_for_bit(dev: &Device) -> Result<()> {
    if crate::sample::skip() {
        return Ok(());
    }
    // Few outputs and a long k: the shape libraries split along k.
    let (m, k, n) = (32, 16384, 32);
    let a = rand_tensor(dev, DType::F32, &[m, k], 41, -1.0, 1.0)?;
    let b = rand_tensor(dev, DType::F32, &[k, n], 42, -1.0, 1.0)?;
    let first = a.matmul(&b)?.to_vec_async::<f32>().await?;
    for run in 1..4 {
        let again = a.matmul(&b)?.to_vec_async::<f32>().await?;
        let differ = first.iter().zip(&again).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
        assert_eq!(differ, 0, "run {run}: {differ} of {} outputs differ from the first run's bits", first.len());
    }
    Ok(())
}
