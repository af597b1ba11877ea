use crate::{Tol, View, assert_close, assert_values, same_as_cpu, suite, view_tensor};
use rocm_wgpu_ops::{DType, Device, Error, Result, Tensor};

suite!(
    upsample_nearest1d_matches_reference,
    upsample_nearest2d_matches_reference,
    upsample_nearest1d_hand_computed,
    upsample_nearest2d_hand_computed,
    upsample_then_stride_is_identity,
    upsample_long_rows_index_exactly,
);

/// `(N, C, L)` inputs and output sizes: up by 2, up 3 -> 7 and 3 -> 8, down 7 -> 3 and 9 -> 4
/// (sizes of whole vectors take the four-output kernel), to 0, empty input, empty batch.
const SIZES_1D: &[([usize; 3], usize)] = &[
    ([2, 3, 4], 8),
    ([2, 3, 3], 7),
    ([2, 3, 3], 8),
    ([2, 3, 7], 3),
    ([2, 3, 9], 4),
    ([2, 3, 5], 0),
    ([2, 3, 0], 0),
    ([0, 3, 4], 6),
];

/// `(N, C, H, W)` inputs and output sizes, as for 1-D with mixed directions per dim.
const SIZES_2D: &[([usize; 4], [usize; 2])] = &[
    ([2, 2, 3, 4], [6, 8]),
    ([2, 2, 3, 3], [7, 5]),
    ([2, 2, 7, 5], [3, 2]),
    ([2, 2, 3, 5], [7, 2]),
    ([2, 2, 3, 5], [4, 12]),
    ([2, 2, 4, 13], [3, 8]),
    ([2, 2, 2, 3], [0, 4]),
    ([2, 2, 2, 3], [4, 0]),
    ([2, 2, 0, 3], [0, 5]),
];

async fn upsample_nearest1d_matches_reference(dev: &Device) -> Result<()> {
    for &dtype in DType::ALL {
        for view in View::ALL {
            for &(shape, size) in SIZES_1D {
                let what = format!("upsample_nearest1d {dtype} {view:?} {shape:?} -> {size}");
                same_as_cpu(dev, Tol::EXACT, &what, |d| {
                    view_tensor(d, view, dtype, &shape, 1, -50.0, 50.0)?.upsample_nearest1d(size)
                })
                .await?;
            }
        }
    }
    Ok(())
}

async fn upsample_nearest2d_matches_reference(dev: &Device) -> Result<()> {
    for &dtype in DType::ALL {
        for view in View::ALL {
            for &(shape, [h, w]) in SIZES_2D {
                let what = format!("upsample_nearest2d {dtype} {view:?} {shape:?} -> {h}x{w}");
                same_as_cpu(dev, Tol::EXACT, &what, |d| {
                    view_tensor(d, view, dtype, &shape, 2, 0.0, 200.0)?.upsample_nearest2d(h, w)
                })
                .await?;
            }
        }
    }
    Ok(())
}

async fn upsample_nearest1d_hand_computed(dev: &Device) -> Result<()> {
    let x = Tensor::from_vec(vec![1f32, 2., 3.], [1, 1, 3], dev)?;
    // Source cells floor(o * 3 / 7) for o < 7: 0 0 0 1 1 2 2.
    assert_values(&x.upsample_nearest1d(7)?, &[1, 1, 7], &[1f32, 1., 1., 2., 2., 3., 3.], 0.0).await?;
    assert_values(&x.upsample_nearest1d(6)?, &[1, 1, 6], &[1f32, 1., 2., 2., 3., 3.], 0.0).await?;
    assert_values::<f32>(&x.upsample_nearest1d(0)?, &[1, 1, 0], &[], 0.0).await?;
    // Down 7 -> 3: cells floor(o * 7 / 3) = 0 2 4, on two channels.
    let y = Tensor::from_vec((10..24).collect::<Vec<i64>>(), [1, 2, 7], dev)?;
    assert_values(&y.upsample_nearest1d(3)?, &[1, 2, 3], &[10i64, 12, 14, 17, 19, 21], 0.0).await?;
    // A transposed input: y.transpose(0, 1) has shape (2, 1, 7) and the same rows.
    assert_values(&y.transpose(0, 1)?.upsample_nearest1d(2)?, &[2, 1, 2], &[10i64, 13, 17, 20], 0.0).await?;
    // An empty input dim cannot fill a non-empty output.
    let e = Tensor::zeros([1, 1, 0], DType::U8, dev)?;
    assert!(matches!(e.upsample_nearest1d(2), Err(Error::InvalidParam { .. })), "empty input to size 2");
    Ok(())
}

async fn upsample_nearest2d_hand_computed(dev: &Device) -> Result<()> {
    let x = Tensor::from_vec(vec![1u8, 2, 3, 4], [1, 1, 2, 2], dev)?;
    // Rows floor(o * 2 / 3) = 0 0 1; cols floor(o * 2 / 4) = 0 0 1 1.
    let want = [1u8, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4];
    assert_values(&x.upsample_nearest2d(3, 4)?, &[1, 1, 3, 4], &want, 0.0).await?;
    // Down (3, 4) -> (2, 3): rows floor(o * 3 / 2) = 0 1; cols floor(o * 4 / 3) = 0 1 2.
    let y = Tensor::from_vec((0..12).map(|v| v as f64).collect(), [1, 1, 3, 4], dev)?;
    assert_values(&y.upsample_nearest2d(2, 3)?, &[1, 1, 2, 3], &[0f64, 1., 2., 4., 5., 6.], 0.0).await?;
    // The transposed image (4, 3) to (2, 2): rows 0 2, cols 0 1 of [[0, 4, 8], [1, 5, 9], ...].
    assert_values(&y.transpose(2, 3)?.upsample_nearest2d(2, 2)?, &[1, 1, 2, 2], &[0f64, 4., 2., 6.], 0.0).await?;
    Ok(())
}

/// The `n` ids `0, step, 2 * step, ...`.
fn every(step: usize, n: usize, dev: &Device) -> Result<Tensor> {
    Tensor::from_vec((0..n).map(|i| (i * step) as u32).collect(), [n], dev)
}

async fn upsample_then_stride_is_identity(dev: &Device) -> Result<()> {
    for dtype in [DType::F32, DType::BF16, DType::U8, DType::I64] {
        for view in View::ALL {
            for k in [1, 2, 3] {
                let x = view_tensor(dev, view, dtype, &[2, 3, 4], 3, 0.0, 100.0)?;
                let back = x.upsample_nearest1d(4 * k)?.index_select(&every(k, 4, dev)?, 2)?;
                assert_close(&back, &x, Tol::EXACT, &format!("upsample_nearest1d x{k} {dtype} {view:?}")).await?;
                let x = view_tensor(dev, view, dtype, &[2, 2, 3, 5], 4, 0.0, 100.0)?;
                let up = x.upsample_nearest2d(3 * k, 5 * k)?;
                let back = up.index_select(&every(k, 3, dev)?, 2)?.index_select(&every(k, 5, dev)?, 3)?;
                assert_close(&back, &x, Tol::EXACT, &format!("upsample_nearest2d x{k} {dtype} {view:?}")).await?;
            }
        }
    }
    Ok(())
}

/// Rows long enough that `o * in` passes 2^32 (the kernels' 64-bit quotient), resized up and
/// down by ratios close to 1, where a rounded quotient would pick a neighbour.
async fn upsample_long_rows_index_exactly(dev: &Device) -> Result<()> {
    for dtype in [DType::F32, DType::BF16, DType::U8, DType::I64] {
        for (len, size) in [(70_000, 70_001), (70_001, 69_999), (65_537, 65_536)] {
            let what = format!("upsample_nearest1d {dtype} {len} -> {size}");
            same_as_cpu(dev, Tol::EXACT, &what, |d| {
                view_tensor(d, View::Offset, dtype, &[1, 2, len], 5, 0.0, 250.0)?.upsample_nearest1d(size)
            })
            .await?;
            let what = format!("upsample_nearest2d {dtype} [2, {len}] -> [3, {size}]");
            same_as_cpu(dev, Tol::EXACT, &what, |d| {
                view_tensor(d, View::Transposed, dtype, &[1, 1, 2, len], 6, 0.0, 250.0)?.upsample_nearest2d(3, size)
            })
            .await?;
        }
    }
    // Values that name their cells: floor(70000 o / 70001) = floor(o - o / 70001) is o - 1 for
    // every o >= 1, where a quotient rounded up by a single ulp would read cell o.
    let x = Tensor::arange(0u32, 70_000, dev)?.reshape([1, 1, 70_000])?;
    let y = x.upsample_nearest1d(70_001)?.to_vec_async::<u32>().await?;
    assert_eq!(y, (0..70_001u32).map(|o| o.saturating_sub(1)).collect::<Vec<_>>());
    Ok(())
}
