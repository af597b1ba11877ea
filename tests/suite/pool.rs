use crate::{Tol, View, assert_close, assert_values, same_as_cpu, suite, view_tensor};
use rocm_wgpu_ops::spec::pool::{Pool2dParams, PoolOp};
use rocm_wgpu_ops::{DType, Device, Result, Tensor};

suite!(
    pool2d_matches_reference,
    avg_pool2d_hand_computed,
    max_pool2d_hand_computed,
    ceil_mode_hand_computed,
    count_include_pad_hand_computed,
    dilation_hand_computed,
    pool2d_large_planes_match_reference,
    avg_pool2d_whole_image_is_mean,
    max_pool2d_1x1_is_identity,
);

fn pool(x: &Tensor, op: PoolOp, p: &Pool2dParams) -> Result<Tensor> {
    match op {
        PoolOp::AvgPool2d => x.avg_pool2d(p),
        PoolOp::MaxPool2d => x.max_pool2d(p),
    }
}

/// A `kh x kw` window, stride `[sh, sw]`, padding `[ph, pw]`, the other settings at their defaults.
fn window(k: [usize; 2], s: [usize; 2], p: [usize; 2]) -> Pool2dParams {
    Pool2dParams { kernel: k, stride: s, padding: p, ..Pool2dParams::new(1) }
}

/// Windows for `op`: padding, strides that do not divide the size, ceil_mode, and the settings
/// only one of the pools takes (count_include_pad for avg, dilation for max).
fn params(op: PoolOp) -> Vec<Pool2dParams> {
    let mut v = vec![
        Pool2dParams::new(2),
        Pool2dParams::new(3).stride(1).padding(1),
        window([2, 3], [1, 2], [1, 1]),
        window([3, 2], [2, 3], [0, 1]),
        Pool2dParams::new(2).ceil_mode(true),
        Pool2dParams::new(3).stride(2).padding(1).ceil_mode(true),
        window([3, 2], [2, 3], [1, 1]).ceil_mode(true),
    ];
    match op {
        PoolOp::AvgPool2d => v.extend([
            Pool2dParams::new(3).stride(1).padding(1).count_include_pad(false),
            window([2, 3], [1, 2], [1, 1]).count_include_pad(false),
            Pool2dParams::new(3).stride(2).padding(1).ceil_mode(true).count_include_pad(false),
        ]),
        PoolOp::MaxPool2d => v.extend([
            Pool2dParams::new(2).stride(1).dilation(2),
            Pool2dParams { dilation: [2, 3], ..window([3, 2], [1, 2], [1, 1]) },
            Pool2dParams::new(2).padding(1).dilation(2).ceil_mode(true),
        ]),
    }
    v
}

async fn pool2d_matches_reference(dev: &Device) -> Result<()> {
    for &op in PoolOp::ALL {
        for &dtype in op.dtypes() {
            for view in View::ALL {
                for shape in [&[2, 3, 6, 7][..], &[1, 2, 5, 4], &[2, 2, 7, 9], &[0, 3, 6, 7]] {
                    for p in &params(op) {
                        let what = format!("{op} {dtype} {view:?} {shape:?} {p:?}");
                        // An average of up to 9 terms; max is exact.
                        same_as_cpu(dev, Tol::of(dtype).times(2.0), &what, |d| {
                            pool(&view_tensor(d, view, dtype, shape, 1, -4.0, 4.0)?, op, p)
                        })
                        .await?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Planes of the benchmark's size (more workgroups than one grid row holds): 2x2 windows and
/// ResNet's 3x3 stride 2 padding 1, on a strided input too.
async fn pool2d_large_planes_match_reference(dev: &Device) -> Result<()> {
    let params = [Pool2dParams::new(2), Pool2dParams::new(3).stride(2).padding(1)];
    for &op in PoolOp::ALL {
        for dtype in [DType::F32, DType::BF16] {
            for view in [View::Contiguous, View::Offset] {
                for p in &params {
                    let what = format!("{op} {dtype} {view:?} [2, 8, 112, 112] {p:?}");
                    same_as_cpu(dev, Tol::of(dtype).times(2.0), &what, |d| {
                        pool(&view_tensor(d, view, dtype, &[2, 8, 112, 112], 3, -4.0, 4.0)?, op, p)
                    })
                    .await?;
                }
            }
        }
    }
    Ok(())
}

async fn avg_pool2d_hand_computed(dev: &Device) -> Result<()> {
    let (dt, e) = crate::wide(dev);
    let x = Tensor::arange(0f32, 16., dev)?.reshape([1, 1, 4, 4])?;
    assert_values(&x.avg_pool2d(&Pool2dParams::new(2))?, &[1, 1, 2, 2], &[2.5f32, 4.5, 10.5, 12.5], 0.0).await?;
    // Padded cells count as zeros: every 3x3 window holds the whole 2x2 image and 5 zeros.
    let x = crate::floats(dev, vec![-1., -2., -3., -4.], &[1, 1, 2, 2], dt)?;
    let p = Pool2dParams::new(3).stride(1).padding(1);
    crate::assert_floats(&x.avg_pool2d(&p)?, &[1, 1, 2, 2], &[-10.0 / 9.0; 4], e).await?;
    // Window 2x3, stride [1, 2], padding 1 over [[3 -1 4 1] [-5 9 2 -6] [5 3 -5 8]].
    let x = crate::floats(dev, vec![3., -1., 4., 1., -5., 9., 2., -6., 5., 3., -5., 8.], &[1, 1, 3, 4], dt)?;
    let want = [2. / 6., 4. / 6., 1., 1.5, 2., 11. / 6., 8. / 6., 1.];
    crate::assert_floats(&x.avg_pool2d(&window([2, 3], [1, 2], [1, 1]))?, &[1, 1, 4, 2], &want, e).await?;
    // A NaN spoils its window's average only.
    let x = Tensor::from_vec(vec![1f32, f32::NAN, 3., 4., 5., 6., 7., 8.], [1, 1, 2, 4], dev)?;
    assert_values(&x.avg_pool2d(&Pool2dParams::new(2))?, &[1, 1, 1, 2], &[f32::NAN, 5.5], 0.0).await?;
    Ok(())
}

async fn max_pool2d_hand_computed(dev: &Device) -> Result<()> {
    let dt = crate::wide(dev).0;
    let x = Tensor::arange(0f32, 16., dev)?.reshape([1, 1, 4, 4])?;
    assert_values(&x.max_pool2d(&Pool2dParams::new(2))?, &[1, 1, 2, 2], &[5f32, 7., 13., 15.], 0.0).await?;
    // Padded cells are ignored, not zeros: an all-negative image keeps its negative max.
    let x = crate::floats(dev, vec![-1., -2., -3., -4.], &[1, 1, 2, 2], dt)?;
    let p = Pool2dParams::new(3).stride(1).padding(1);
    crate::assert_floats(&x.max_pool2d(&p)?, &[1, 1, 2, 2], &[-1.; 4], 0.0).await?;
    let x = crate::floats(dev, vec![3., -1., 4., 1., -5., 9., 2., -6., 5., 3., -5., 8.], &[1, 1, 3, 4], dt)?;
    let want = [3., 4., 9., 9., 9., 9., 5., 8.];
    crate::assert_floats(&x.max_pool2d(&window([2, 3], [1, 2], [1, 1]))?, &[1, 1, 4, 2], &want, 0.0).await?;
    // NaN propagates wherever it sits in the window, before or after the maximum.
    let x = Tensor::from_vec(vec![1f32, f32::NAN, 3., 4., 5., 6., 7., f32::NAN], [1, 1, 2, 4], dev)?;
    assert_values(&x.max_pool2d(&Pool2dParams::new(2))?, &[1, 1, 1, 2], &[f32::NAN, f32::NAN], 0.0).await?;
    let x = Tensor::from_vec(vec![9f32, 1., 3., 4., 5., f32::NAN, 7., 8.], [1, 1, 2, 4], dev)?;
    assert_values(&x.max_pool2d(&Pool2dParams::new(2))?, &[1, 1, 1, 2], &[f32::NAN, 8.], 0.0).await?;
    Ok(())
}

/// ceil_mode keeps the last, partial windows, each starting inside the input or its left
/// padding (PyTorch's rule).
async fn ceil_mode_hand_computed(dev: &Device) -> Result<()> {
    let dt = crate::wide(dev).0;
    // 5x5 with 2x2 windows, stride 2: 3x3 windows; the last row and column hold one input row
    // or column.
    let x = crate::floats(dev, (0..25).map(f64::from).collect(), &[1, 1, 5, 5], dt)?;
    let p = Pool2dParams::new(2).ceil_mode(true);
    crate::assert_floats(&x.max_pool2d(&p)?, &[1, 1, 3, 3], &[6., 8., 9., 16., 18., 19., 21., 23., 24.], 0.0).await?;
    // Past the input (and no padding) a window divides by its cells inside: (4 + 9) / 2, 24 / 1.
    let want = [3., 5., 6.5, 13., 15., 16.5, 20.5, 22.5, 24.];
    crate::assert_floats(&x.avg_pool2d(&p)?, &[1, 1, 3, 3], &want, 0.0).await?;
    crate::assert_floats(&x.avg_pool2d(&Pool2dParams::new(2))?, &[1, 1, 2, 2], &[3., 5., 13., 15.], 0.0).await?;
    // Width 6, window 3, stride 2, padding 1: windows [-1, 2) [1, 4) [3, 6) [5, 8); the last
    // overhangs the padded input [-1, 7), and only its part inside counts: 6 / 2, not 6 / 3.
    let x = crate::floats(dev, vec![1., 2., 3., 4., 5., 6.], &[1, 1, 1, 6], dt)?;
    let p = window([1, 3], [1, 2], [0, 1]).ceil_mode(true);
    crate::assert_floats(&x.avg_pool2d(&p)?, &[1, 1, 1, 4], &[1., 3., 5., 3.], 0.0).await?;
    crate::assert_floats(&x.max_pool2d(&p)?, &[1, 1, 1, 4], &[2., 4., 6., 6.], 0.0).await?;
    crate::assert_floats(&x.avg_pool2d(&p.count_include_pad(false))?, &[1, 1, 1, 4], &[1.5, 3., 5., 6.], 0.0).await?;
    // Without ceil_mode the same windows stop at 3.
    crate::assert_floats(&x.avg_pool2d(&p.ceil_mode(false))?, &[1, 1, 1, 3], &[1., 3., 5.], 0.0).await
}

/// count_include_pad = false divides by the input cells of each window only.
async fn count_include_pad_hand_computed(dev: &Device) -> Result<()> {
    let (dt, e) = crate::wide(dev);
    // Every 3x3 window over the padded 2x2 image holds its 4 cells and 5 padded ones.
    let x = crate::floats(dev, vec![-1., -2., -3., -4.], &[1, 1, 2, 2], dt)?;
    let p = Pool2dParams::new(3).stride(1).padding(1);
    crate::assert_floats(&x.avg_pool2d(&p)?, &[1, 1, 2, 2], &[-10.0 / 9.0; 4], e).await?;
    crate::assert_floats(&x.avg_pool2d(&p.count_include_pad(false))?, &[1, 1, 2, 2], &[-2.5; 4], 0.0).await?;
    // Window 2x3, stride [1, 2], padding 1 over [[3 -1 4 1] [-5 9 2 -6] [5 3 -5 8]]: window sums
    // 2 4 6 9 12 11 8 6 over 6 cells with padding, over 2 3 4 6 4 6 2 3 input cells without.
    let x = crate::floats(dev, vec![3., -1., 4., 1., -5., 9., 2., -6., 5., 3., -5., 8.], &[1, 1, 3, 4], dt)?;
    let p = window([2, 3], [1, 2], [1, 1]);
    let want = [2. / 6., 4. / 6., 1., 1.5, 2., 11. / 6., 8. / 6., 1.];
    crate::assert_floats(&x.avg_pool2d(&p)?, &[1, 1, 4, 2], &want, e).await?;
    let want = [1., 4. / 3., 1.5, 1.5, 3., 11. / 6., 4., 2.];
    crate::assert_floats(&x.avg_pool2d(&p.count_include_pad(false))?, &[1, 1, 4, 2], &want, e).await?;
    for dtype in crate::float_dtypes(dev) {
        let x = crate::floats(dev, vec![3., -1., 4., 1., -5., 9., 2., -6., 5., 3., -5., 8.], &[1, 1, 3, 4], dtype)?;
        let got = x.avg_pool2d(&p.count_include_pad(false))?;
        let want = crate::floats(dev, want.to_vec(), &[1, 1, 4, 2], dtype)?;
        assert_close(&got, &want, Tol::of(dtype), &format!("count_include_pad false {dtype}")).await?;
    }
    Ok(())
}

/// Dilated windows read every d-th cell: padded and skipped cells are not seen.
async fn dilation_hand_computed(dev: &Device) -> Result<()> {
    let dt = crate::wide(dev).0;
    // 2x2 windows with dilation 2 (spanning 3x3), stride 1, padding 1 over
    // [[3 -1 4 1] [-5 9 2 -6] [5 3 -5 8]]: output row 0 reads input row 1 only, row 1 rows 0
    // and 2, row 2 row 1; columns likewise {1} {0, 2} {1, 3} {2}.
    let x = crate::floats(dev, vec![3., -1., 4., 1., -5., 9., 2., -6., 5., 3., -5., 8.], &[1, 1, 3, 4], dt)?;
    let p = Pool2dParams::new(2).stride(1).padding(1).dilation(2);
    let want = [9., 2., 9., 2., 3., 5., 8., 4., 9., 2., 9., 2.];
    crate::assert_floats(&x.max_pool2d(&p)?, &[1, 1, 3, 4], &want, 0.0).await?;
    // A NaN between a window's cells is skipped; one on them propagates.
    let x = Tensor::from_vec(vec![1f32, f32::NAN, 3., 0., 2.], [1, 1, 1, 5], dev)?;
    let p = Pool2dParams { dilation: [1, 2], ..window([1, 2], [1, 1], [0, 0]) };
    assert_values(&x.max_pool2d(&p)?, &[1, 1, 1, 3], &[3f32, f32::NAN, 3.], 0.0).await?;
    // Dilation 3, stride 2 with ceil_mode over 7 cells: windows {0, 3} {2, 5} {4} (the last
    // one's second cell lies past the input; without ceil_mode it is dropped).
    let x = Tensor::from_vec(vec![5f32, 1., 2., 7., 3., 4., 6.], [1, 1, 1, 7], dev)?;
    let p = Pool2dParams { dilation: [1, 3], ..window([1, 2], [1, 2], [0, 0]) }.ceil_mode(true);
    assert_values(&x.max_pool2d(&p)?, &[1, 1, 1, 3], &[7f32, 4., 3.], 0.0).await
}

async fn avg_pool2d_whole_image_is_mean(dev: &Device) -> Result<()> {
    let (n, c, h, w) = (2, 3, 5, 7);
    for dtype in crate::float_dtypes(dev) {
        for view in View::ALL {
            let x = view_tensor(dev, view, dtype, &[n, c, h, w], 2, -4.0, 4.0)?;
            let v = x.to_cpu_storage_async().await?.to_f64_vec();
            let means = v.chunks(h * w).map(|p| p.iter().sum::<f64>() / (h * w) as f64).collect::<Vec<_>>();
            let want = crate::floats(dev, means, &[n, c, 1, 1], dtype)?;
            let p = window([h, w], [1, 1], [0, 0]);
            assert_close(&x.avg_pool2d(&p)?, &want, Tol::of(dtype), &format!("mean {dtype} {view:?}")).await?;
        }
    }
    Ok(())
}

async fn max_pool2d_1x1_is_identity(dev: &Device) -> Result<()> {
    for dtype in crate::float_dtypes(dev) {
        for view in View::ALL {
            let x = view_tensor(dev, view, dtype, &[2, 3, 4, 5], 3, -4.0, 4.0)?;
            let p = Pool2dParams::new(1);
            assert_close(&x.max_pool2d(&p)?, &x.contiguous()?, Tol::EXACT, &format!("identity {dtype} {view:?}"))
                .await?;
        }
    }
    Ok(())
}
