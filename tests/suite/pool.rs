use crate::{Tol, View, assert_close, assert_values, same_as_cpu, suite, view_tensor};
use rocm_wgpu_ops::spec::pool::{Pool2dParams, PoolOp};
use rocm_wgpu_ops::{DType, Device, Result, Tensor};

suite!(
    pool2d_matches_reference,
    avg_pool2d_hand_computed,
    max_pool2d_hand_computed,
    avg_pool2d_whole_image_is_mean,
    max_pool2d_1x1_is_identity,
);

fn pool(x: &Tensor, op: PoolOp, p: &Pool2dParams) -> Result<Tensor> {
    match op {
        PoolOp::AvgPool2d => x.avg_pool2d(p),
        PoolOp::MaxPool2d => x.max_pool2d(p),
    }
}

/// A `kh x kw` window, stride `[sh, sw]`, padding `[ph, pw]`.
fn window(k: [usize; 2], s: [usize; 2], p: [usize; 2]) -> Pool2dParams {
    Pool2dParams { kernel: k, stride: s, padding: p }
}

fn pool2d_matches_reference(dev: &Device) -> Result<()> {
    let params = [
        Pool2dParams::new(2),
        Pool2dParams::new(3).stride(1).padding(1),
        window([2, 3], [1, 2], [1, 1]),
        window([3, 2], [2, 3], [0, 1]),
    ];
    for &op in PoolOp::ALL {
        for &dtype in op.dtypes() {
            for view in View::ALL {
                for shape in [&[2, 3, 6, 7][..], &[1, 2, 5, 4], &[0, 3, 6, 7]] {
                    for p in &params {
                        let what = format!("{op} {dtype} {view:?} {shape:?} {p:?}");
                        // An average of up to 9 terms; max is exact.
                        same_as_cpu(dev, Tol::of(dtype).times(2.0), &what, |d| {
                            pool(&view_tensor(d, view, dtype, shape, 1, -4.0, 4.0)?, op, p)
                        })?;
                    }
                }
            }
        }
    }
    Ok(())
}

fn avg_pool2d_hand_computed(dev: &Device) -> Result<()> {
    let x = Tensor::arange(0f32, 16., dev)?.reshape([1, 1, 4, 4])?;
    assert_values(&x.avg_pool2d(&Pool2dParams::new(2))?, &[1, 1, 2, 2], &[2.5f32, 4.5, 10.5, 12.5], 0.0)?;
    // Padded cells count as zeros: every 3x3 window holds the whole 2x2 image and 5 zeros.
    let x = Tensor::from_vec(vec![-1f64, -2., -3., -4.], [1, 1, 2, 2], dev)?;
    let p = Pool2dParams::new(3).stride(1).padding(1);
    assert_values(&x.avg_pool2d(&p)?, &[1, 1, 2, 2], &[-10.0 / 9.0; 4], 1e-15)?;
    // Window 2x3, stride [1, 2], padding 1 over [[3 -1 4 1] [-5 9 2 -6] [5 3 -5 8]].
    let x = Tensor::from_vec(vec![3f64, -1., 4., 1., -5., 9., 2., -6., 5., 3., -5., 8.], [1, 1, 3, 4], dev)?;
    let want = [2. / 6., 4. / 6., 1., 1.5, 2., 11. / 6., 8. / 6., 1.];
    assert_values(&x.avg_pool2d(&window([2, 3], [1, 2], [1, 1]))?, &[1, 1, 4, 2], &want, 1e-15)?;
    // A NaN spoils its window's average only.
    let x = Tensor::from_vec(vec![1f32, f32::NAN, 3., 4., 5., 6., 7., 8.], [1, 1, 2, 4], dev)?;
    assert_values(&x.avg_pool2d(&Pool2dParams::new(2))?, &[1, 1, 1, 2], &[f32::NAN, 5.5], 0.0)?;
    Ok(())
}

fn max_pool2d_hand_computed(dev: &Device) -> Result<()> {
    let x = Tensor::arange(0f32, 16., dev)?.reshape([1, 1, 4, 4])?;
    assert_values(&x.max_pool2d(&Pool2dParams::new(2))?, &[1, 1, 2, 2], &[5f32, 7., 13., 15.], 0.0)?;
    // Padded cells are ignored, not zeros: an all-negative image keeps its negative max.
    let x = Tensor::from_vec(vec![-1f64, -2., -3., -4.], [1, 1, 2, 2], dev)?;
    let p = Pool2dParams::new(3).stride(1).padding(1);
    assert_values(&x.max_pool2d(&p)?, &[1, 1, 2, 2], &[-1f64; 4], 0.0)?;
    let x = Tensor::from_vec(vec![3f64, -1., 4., 1., -5., 9., 2., -6., 5., 3., -5., 8.], [1, 1, 3, 4], dev)?;
    let want = [3f64, 4., 9., 9., 9., 9., 5., 8.];
    assert_values(&x.max_pool2d(&window([2, 3], [1, 2], [1, 1]))?, &[1, 1, 4, 2], &want, 0.0)?;
    // NaN propagates wherever it sits in the window, before or after the maximum.
    let x = Tensor::from_vec(vec![1f32, f32::NAN, 3., 4., 5., 6., 7., f32::NAN], [1, 1, 2, 4], dev)?;
    assert_values(&x.max_pool2d(&Pool2dParams::new(2))?, &[1, 1, 1, 2], &[f32::NAN, f32::NAN], 0.0)?;
    let x = Tensor::from_vec(vec![9f32, 1., 3., 4., 5., f32::NAN, 7., 8.], [1, 1, 2, 4], dev)?;
    assert_values(&x.max_pool2d(&Pool2dParams::new(2))?, &[1, 1, 1, 2], &[f32::NAN, 8.], 0.0)?;
    Ok(())
}

fn avg_pool2d_whole_image_is_mean(dev: &Device) -> Result<()> {
    let (n, c, h, w) = (2, 3, 5, 7);
    for &dtype in DType::FLOAT {
        for view in View::ALL {
            let x = view_tensor(dev, view, dtype, &[n, c, h, w], 2, -4.0, 4.0)?;
            let v = x.to_cpu_storage()?.to_f64_vec();
            let means = v.chunks(h * w).map(|p| p.iter().sum::<f64>() / (h * w) as f64).collect::<Vec<_>>();
            let want = Tensor::from_vec(means, [n, c, 1, 1], dev)?.to_dtype(dtype)?;
            let p = Pool2dParams { kernel: [h, w], stride: [1, 1], padding: [0, 0] };
            assert_close(&x.avg_pool2d(&p)?, &want, Tol::of(dtype), &format!("mean {dtype} {view:?}"))?;
        }
    }
    Ok(())
}

fn max_pool2d_1x1_is_identity(dev: &Device) -> Result<()> {
    for &dtype in DType::FLOAT {
        for view in View::ALL {
            let x = view_tensor(dev, view, dtype, &[2, 3, 4, 5], 3, -4.0, 4.0)?;
            let p = Pool2dParams::new(1);
            assert_close(&x.max_pool2d(&p)?, &x.contiguous()?, Tol::EXACT, &format!("identity {dtype} {view:?}"))?;
        }
    }
    Ok(())
}
