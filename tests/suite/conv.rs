use crate::matmul::{forced, tile_choices};
use crate::{Tol, View, assert_close, assert_values, rand_tensor, same_as_cpu, suite, view_tensor};
use rocm_wgpu_ops::spec::conv::{ConvOp, ConvParams};
use rocm_wgpu_ops::wgpu::gemm_hooks::{Kernel as GemmKernel, last_kernel};
use rocm_wgpu_ops::{BackendKind, DType, Device, Result, Tensor};

suite!(
    conv1d_matches_reference,
    conv2d_matches_reference,
    conv_transpose1d_matches_reference,
    conv_transpose2d_matches_reference,
    conv1d_hand_computed,
    conv2d_hand_computed,
    conv_transpose1d_hand_computed,
    conv_transpose2d_hand_computed,
    conv2d_is_im2col_matmul,
    conv_transpose_is_adjoint,
    conv_1x1_is_channel_mix,
    conv_tiles_match_reference,
    conv_f16_takes_cooperative_matrices,
    conv_library_shapes_match_reference,
);

/// Sums of a few dozen products: a few roundings' worth past one.
fn conv_tol(dtype: DType) -> Tol {
    Tol::of(dtype).times(4.0)
}

fn p1(padding: usize, stride: usize, dilation: usize, groups: usize, out_pad: usize) -> ConvParams<1> {
    ConvParams::default().padding(padding).stride(stride).dilation(dilation).groups(groups).output_padding(out_pad)
}

fn p2(padding: usize, stride: usize, dilation: usize, groups: usize, out_pad: usize) -> ConvParams<2> {
    ConvParams::default().padding(padding).stride(stride).dilation(dilation).groups(groups).output_padding(out_pad)
}

/// Input shape, kernel shape and params; a kernel is `(C_out, C_in / g, ..)` for conv and
/// `(C_in, C_out / g, ..)` for conv_transpose, so one list of shapes serves both.
type Case<const D: usize> = (&'static [usize], &'static [usize], ConvParams<D>);

fn cases1d(transposed: bool) -> Vec<Case<1>> {
    let op = usize::from(transposed);
    vec![
        (&[2, 4, 9], &[4, 4, 3], p1(0, 1, 1, 1, 0)),
        (&[2, 4, 9], &[4, 4, 3], p1(1, 1, 1, 1, 0)),
        (&[2, 4, 9], &[4, 4, 3], p1(1, 2, 1, 1, op)),
        (&[2, 4, 9], &[4, 4, 3], p1(2, 1, 2, 1, 0)),
        (&[2, 4, 9], &[4, 2, 2], p1(1, 2, 2, 2, op)),
        (&[0, 4, 9], &[4, 4, 3], p1(1, 1, 1, 1, 0)),
    ]
}

fn cases2d(transposed: bool) -> Vec<Case<2>> {
    let op = usize::from(transposed);
    let mixed = ConvParams { padding: [1, 0], stride: [2, 1], dilation: [1, 2], output_padding: [op, 0], groups: 1 };
    vec![
        (&[2, 4, 5, 6], &[4, 4, 3, 2], p2(0, 1, 1, 1, 0)),
        (&[2, 4, 5, 6], &[4, 4, 3, 3], p2(1, 1, 1, 1, 0)),
        (&[2, 4, 5, 6], &[4, 4, 3, 3], p2(1, 2, 1, 1, op)),
        (&[2, 4, 5, 6], &[4, 4, 2, 2], p2(1, 1, 2, 1, 0)),
        (&[2, 4, 5, 6], &[4, 2, 3, 2], p2(1, 2, 1, 2, op)),
        (&[2, 4, 5, 6], &[4, 4, 3, 2], mixed),
        (&[0, 4, 5, 6], &[4, 4, 3, 3], p2(1, 1, 1, 1, 0)),
    ]
}

/// Every case x float dtype x input view, with contiguous and transposed kernels. In a browser
/// each case runs in one dtype, turning (a case's params are a kernel of their own per dtype).
async fn matches_reference<const D: usize>(
    dev: &Device,
    op: ConvOp,
    cases: &[Case<D>],
    run: impl Fn(&Tensor, &Tensor, &ConvParams<D>) -> Result<Tensor>,
) -> Result<()> {
    for (i, (xs, ks, p)) in cases.iter().enumerate() {
        for dtype in crate::rotated_dtypes(dev, op.name(), op.dtypes(), i) {
            crate::sample::class();
            for view in View::ALL {
                for kview in [View::Contiguous, View::Transposed] {
                    let what = format!("{op} {dtype} {view:?} kernel {kview:?} {xs:?} {ks:?} {p:?}");
                    same_as_cpu(dev, conv_tol(dtype), &what, |d| {
                        let x = view_tensor(d, view, dtype, xs, 20 + i as u64, -1.0, 1.0)?;
                        let k = view_tensor(d, kview, dtype, ks, 40 + i as u64, -1.0, 1.0)?;
                        run(&x, &k, p)
                    })
                    .await?;
                }
            }
        }
    }
    Ok(())
}

async fn conv1d_matches_reference(dev: &Device) -> Result<()> {
    matches_reference(dev, ConvOp::Conv1d, &cases1d(false), |x, k, p| x.conv1d(k, p)).await
}

async fn conv2d_matches_reference(dev: &Device) -> Result<()> {
    matches_reference(dev, ConvOp::Conv2d, &cases2d(false), |x, k, p| x.conv2d(k, p)).await
}

async fn conv_transpose1d_matches_reference(dev: &Device) -> Result<()> {
    matches_reference(dev, ConvOp::ConvTranspose1d, &cases1d(true), |x, k, p| x.conv_transpose1d(k, p)).await
}

async fn conv_transpose2d_matches_reference(dev: &Device) -> Result<()> {
    matches_reference(dev, ConvOp::ConvTranspose2d, &cases2d(true), |x, k, p| x.conv_transpose2d(k, p)).await
}

fn t(v: &[f32], shape: &[usize], dev: &Device) -> Result<Tensor> {
    Tensor::from_slice(v, shape.to_vec(), dev)
}

async fn conv1d_hand_computed(dev: &Device) -> Result<()> {
    let x = t(&[1., 2., 3., 4., 5.], &[1, 1, 5], dev)?;
    let diff = t(&[1., 0., -1.], &[1, 1, 3], dev)?;
    assert_values(&x.conv1d(&diff, &p1(0, 1, 1, 1, 0))?, &[1, 1, 3], &[-2f32, -2., -2.], 0.0).await?;
    // Padded: [0 1 2 3 4 5 0], taken at 0, 2, 4.
    assert_values(&x.conv1d(&diff, &p1(1, 2, 1, 1, 0))?, &[1, 1, 3], &[-2f32, -2., 4.], 0.0).await?;
    // Dilation 2: x[i] + 2 x[i + 2].
    let k = t(&[1., 2.], &[1, 1, 2], dev)?;
    assert_values(&x.conv1d(&k, &p1(0, 1, 2, 1, 0))?, &[1, 1, 3], &[7f32, 10., 13.], 0.0).await?;
    // Two input and two output channels: out[o][i] = sum_c k[o][c] . x[c][i..i+2].
    let x = t(&[1., 2., 3., 4., 5., 6.], &[1, 2, 3], dev)?;
    let k = t(&[1., 1., 2., -1., 0., 1., 1., 0.], &[2, 2, 2], dev)?;
    assert_values(&x.conv1d(&k, &p1(0, 1, 1, 1, 0))?, &[1, 2, 2], &[6f32, 9., 6., 8.], 0.0).await?;
    Ok(())
}

async fn conv2d_hand_computed(dev: &Device) -> Result<()> {
    // [[1 2 3] [4 5 6]] * [[1 2] [3 4]]: 1+4+12+20 and 2+6+15+24.
    let x = t(&[1., 2., 3., 4., 5., 6.], &[1, 1, 2, 3], dev)?;
    let k = t(&[1., 2., 3., 4.], &[1, 1, 2, 2], dev)?;
    assert_values(&x.conv2d(&k, &p2(0, 1, 1, 1, 0))?, &[1, 1, 1, 2], &[37f32, 47.], 0.0).await?;
    let padded = [4f32, 11., 18., 9., 18., 37., 47., 21., 8., 14., 17., 6.];
    assert_values(&x.conv2d(&k, &p2(1, 1, 1, 1, 0))?, &[1, 1, 3, 4], &padded, 0.0).await?;
    // Two groups of one channel: channel 0 of x (1..=20) meets kernel 0, channel 1 (21..=40) kernel 1.
    let x = Tensor::arange(1f32, 41., dev)?.reshape([1, 2, 4, 5])?;
    let k = t(&[1., -1., 2., 0., 0., 1., -2., 1.], &[2, 1, 2, 2], dev)?;
    let strided = [11f32, 15., 31., 35., -3., -3., -3., -3.];
    assert_values(&x.conv2d(&k, &p2(0, 2, 1, 2, 0))?, &[1, 2, 2, 2], &strided, 0.0).await?;
    let p = ConvParams { padding: [1, 0], dilation: [2, 2], groups: 2, ..Default::default() };
    let dilated = [
        12f32, 14., 16., 20., 22., 24., 30., 32., 34., -2., -2., -2., -24., -25., -26., -6., -6., -6., -6., -6., -6.,
        33., 34., 35.,
    ];
    assert_values(&x.conv2d(&k, &p)?, &[1, 2, 4, 3], &dilated, 0.0).await?;
    Ok(())
}

async fn conv_transpose1d_hand_computed(dev: &Device) -> Result<()> {
    // Each x[i] lays k at 2i: [1 2 3] + [. . 2 4 6] + [. . . . 3 6 9].
    let x = t(&[1., 2., 3.], &[1, 1, 3], dev)?;
    let k = t(&[1., 2., 3.], &[1, 1, 3], dev)?;
    assert_values(&x.conv_transpose1d(&k, &p1(0, 2, 1, 1, 0))?, &[1, 1, 7], &[1f32, 2., 5., 4., 9., 6., 9.], 0.0)
        .await?;
    // Padding crops one from each end; output_padding then gives one back at the end.
    assert_values(&x.conv_transpose1d(&k, &p1(1, 2, 1, 1, 0))?, &[1, 1, 5], &[2f32, 5., 4., 9., 6.], 0.0).await?;
    let cropped = [2f32, 5., 4., 9., 6., 9.];
    assert_values(&x.conv_transpose1d(&k, &p1(1, 2, 1, 1, 1))?, &[1, 1, 6], &cropped, 0.0).await?;
    // Dilation 2, two output channels: out[c][i + 2j] += x[i] k[c][j].
    let x = t(&[1., 2.], &[1, 1, 2], dev)?;
    let k = t(&[1., 10., 2., 0.], &[1, 2, 2], dev)?;
    let want = [1f32, 2., 10., 20., 2., 4., 0., 0.];
    assert_values(&x.conv_transpose1d(&k, &p1(0, 1, 2, 1, 0))?, &[1, 2, 4], &want, 0.0).await?;
    Ok(())
}

async fn conv_transpose2d_hand_computed(dev: &Device) -> Result<()> {
    let x = t(&[1., 2., 3., 4.], &[1, 1, 2, 2], dev)?;
    let ones = t(&[1., 1., 1., 1.], &[1, 1, 2, 2], dev)?;
    let overlapping = [1f32, 3., 2., 4., 10., 6., 3., 7., 4.];
    assert_values(&x.conv_transpose2d(&ones, &p2(0, 1, 1, 1, 0))?, &[1, 1, 3, 3], &overlapping, 0.0).await?;
    // Stride 2: each element becomes a 2x2 block.
    let blocks = [1f32, 1., 2., 2., 1., 1., 2., 2., 3., 3., 4., 4., 3., 3., 4., 4.];
    assert_values(&x.conv_transpose2d(&ones, &p2(0, 2, 1, 1, 0))?, &[1, 1, 4, 4], &blocks, 0.0).await?;
    // Two groups, stride [2, 1], padding [1, 0], output_padding [1, 0].
    let x = t(&[1., 2., 3., 4., 5., 6., 7., 8.], &[1, 2, 2, 2], dev)?;
    let k = t(&[1., 2., 0., -1., 3., 1., 1., 0.], &[2, 1, 2, 2], dev)?;
    let p = ConvParams { padding: [1, 0], stride: [2, 1], output_padding: [1, 0], groups: 2, dilation: [1, 1] };
    let grouped = [0f32, -1., -2., 3., 10., 8., 0., -3., -4., 5., 6., 0., 21., 31., 8., 7., 8., 0.];
    assert_values(&x.conv_transpose2d(&k, &p)?, &[1, 2, 3, 3], &grouped, 0.0).await?;
    // Dilation [2, 1], two channels in and out.
    let k = t(&[1., 2., 0., -1., 3., 1., 1., 0., 1., 0., 0., 1., 2., 2., 1., 1.], &[2, 2, 2, 2], dev)?;
    let p = ConvParams { dilation: [2, 1], ..Default::default() };
    let dilated =
        [6f32, 10., 4., 10., 18., 8., 0., 4., 4., 0., 4., 4., 13., 29., 14., 23., 45., 20., 6., 13., 6., 10., 19., 8.];
    assert_values(&x.conv_transpose2d(&k, &p)?, &[1, 2, 4, 3], &dilated, 0.0).await?;
    Ok(())
}

/// Host data of any layout as f64, row-major.
async fn host(t: &Tensor) -> Result<Vec<f64>> {
    Ok(t.to_cpu_storage_async().await?.to_f64_vec())
}

/// conv2d as a product on the host: per group, the `(C_out/g, C_in/g*KH*KW)` kernel matrix
/// times the `(C_in/g*KH*KW, OH*OW)` im2col matrix (padded cells are zeros).
async fn im2col_conv(x: &Tensor, k: &Tensor, p: &ConvParams<2>) -> Result<Vec<f64>> {
    let (xv, kv) = (host(x).await?, host(k).await?);
    let (xd, kd) = (x.dims(), k.dims());
    let (n, c_in, h, w) = (xd[0], xd[1], xd[2], xd[3]);
    let (c_out, cig, kh, kw) = (kd[0], kd[1], kd[2], kd[3]);
    let span = |i: usize| p.dilation[i] * ([kh, kw][i] - 1) + 1;
    let oh = (h + 2 * p.padding[0] - span(0)) / p.stride[0] + 1;
    let ow = (w + 2 * p.padding[1] - span(1)) / p.stride[1] + 1;
    let (g, rows) = (p.groups, cig * kh * kw);
    let cog = c_out / g;
    let mut out = vec![0.0; n * c_out * oh * ow];
    for b in 0..n {
        for grp in 0..g {
            let mut cols = vec![0.0; rows * oh * ow];
            for ci in 0..cig {
                for a in 0..kh {
                    for e in 0..kw {
                        let row = (ci * kh + a) * kw + e;
                        for y in 0..oh {
                            for z in 0..ow {
                                let iy =
                                    (y * p.stride[0] + a * p.dilation[0]).checked_sub(p.padding[0]).filter(|&v| v < h);
                                let iz =
                                    (z * p.stride[1] + e * p.dilation[1]).checked_sub(p.padding[1]).filter(|&v| v < w);
                                let c = grp * cig + ci;
                                if let (Some(iy), Some(iz)) = (iy, iz) {
                                    cols[row * oh * ow + y * ow + z] = xv[((b * c_in + c) * h + iy) * w + iz];
                                }
                            }
                        }
                    }
                }
            }
            for co in grp * cog..(grp + 1) * cog {
                for j in 0..oh * ow {
                    let dot = (0..rows).map(|r| kv[co * rows + r] * cols[r * oh * ow + j]).sum::<f64>();
                    out[(b * c_out + co) * oh * ow + j] = dot;
                }
            }
        }
    }
    Ok(out)
}

async fn conv2d_is_im2col_matmul(dev: &Device) -> Result<()> {
    let mixed = ConvParams { padding: [2, 1], stride: [1, 3], dilation: [2, 1], output_padding: [0, 0], groups: 3 };
    let params = [p2(0, 1, 1, 1, 0), p2(1, 2, 1, 1, 0), p2(2, 1, 2, 3, 0), mixed];
    for dtype in crate::float_dtypes(dev).into_iter().filter(|&d| d == DType::F32 || d == DType::F64) {
        for (i, p) in params.iter().enumerate() {
            let x = view_tensor(dev, View::Transposed, dtype, &[2, 6, 7, 8], 60 + i as u64, -1.0, 1.0)?;
            let k = rand_tensor(dev, dtype, &[9, 6 / p.groups, 3, 2], 70 + i as u64, -1.0, 1.0)?;
            let got = x.conv2d(&k, p)?;
            let want = crate::floats(dev, im2col_conv(&x, &k, p).await?, got.dims(), dtype)?;
            assert_close(&got, &want, conv_tol(dtype), &format!("im2col {dtype} {p:?}")).await?;
        }
    }
    Ok(())
}

fn dot(a: &[f64], b: &[f64]) -> (f64, f64) {
    let dot = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let mag = a.iter().zip(b).map(|(x, y)| (x * y).abs()).sum();
    (dot, mag)
}

/// `<conv(x), y> == <x, conv_transpose(y)>` with one kernel; the relative error is judged
/// against the sum of the magnitudes of the terms: 4500 units of roundoff of the dtype (1e-12
/// in f64, in which the case runs where the device has it, else f32).
async fn adjoint<const D: usize>(
    x: &Tensor,
    k: &Tensor,
    p: &ConvParams<D>,
    fwd: impl Fn(&Tensor, &Tensor, &ConvParams<D>) -> Result<Tensor>,
    bwd: impl Fn(&Tensor, &Tensor, &ConvParams<D>) -> Result<Tensor>,
    seed: u64,
) -> Result<()> {
    let cx = fwd(x, k, p)?;
    let y = rand_tensor(x.device(), x.dtype(), cx.dims(), seed, -1.0, 1.0)?;
    // output_padding restores the input size conv's floor division dropped.
    let mut q = *p;
    for i in 0..D {
        let span = p.dilation[i] * (k.dims()[2 + i] - 1) + 1;
        q.output_padding[i] = (x.dims()[2 + i] + 2 * p.padding[i] - span) % p.stride[i];
    }
    let ty = bwd(&y, k, &q)?;
    assert_eq!(ty.dims(), x.dims(), "conv_transpose of conv's output has the input's shape ({p:?})");
    let (l, lm) = dot(&host(&cx).await?, &host(&y).await?);
    let (r, rm) = dot(&host(x).await?, &host(&ty).await?);
    let eps = if x.dtype() == DType::F64 { f64::EPSILON } else { f32::EPSILON as f64 };
    assert!((l - r).abs() <= 4500.0 * eps * lm.max(rm), "adjoint {p:?}: {l} vs {r}");
    Ok(())
}

async fn conv_transpose_is_adjoint(dev: &Device) -> Result<()> {
    let wide = |shape: &[usize], seed| rand_tensor(dev, crate::wide(dev).0, shape, seed, -1.0, 1.0);
    let params1 = [p1(0, 1, 1, 1, 0), p1(2, 3, 1, 1, 0), p1(1, 2, 2, 2, 0), p1(3, 1, 3, 4, 0)];
    for (i, p) in params1.iter().enumerate() {
        let x = wide(&[2, 4, 11], 80 + i as u64)?;
        let k = wide(&[8, 4 / p.groups, 3], 90 + i as u64)?;
        adjoint(&x, &k, p, |x, k, p| x.conv1d(k, p), |y, k, p| y.conv_transpose1d(k, p), 100 + i as u64).await?;
    }
    let mixed = ConvParams { padding: [2, 1], stride: [3, 2], dilation: [1, 2], output_padding: [0, 0], groups: 2 };
    let params2 = [p2(0, 1, 1, 1, 0), p2(1, 2, 1, 1, 0), p2(2, 2, 2, 2, 0), mixed];
    for (i, p) in params2.iter().enumerate() {
        let x = wide(&[2, 4, 9, 8], 110 + i as u64)?;
        let k = wide(&[6, 4 / p.groups, 3, 2], 120 + i as u64)?;
        adjoint(&x, &k, p, |x, k, p| x.conv2d(k, p), |y, k, p| y.conv_transpose2d(k, p), 130 + i as u64).await?;
    }
    Ok(())
}

async fn conv_1x1_is_channel_mix(dev: &Device) -> Result<()> {
    let (n, c_in, c_out, h, w) = (2, 5, 3, 4, 6);
    for dtype in crate::float_dtypes(dev) {
        for view in View::ALL {
            let x = view_tensor(dev, view, dtype, &[n, c_in, h, w], 140, -1.0, 1.0)?;
            let k = rand_tensor(dev, dtype, &[c_out, c_in, 1, 1], 141, -1.0, 1.0)?;
            let (xv, kv) = (host(&x).await?, host(&k).await?);
            let mut mix = vec![0.0; n * c_out * h * w];
            for b in 0..n {
                for co in 0..c_out {
                    for px in 0..h * w {
                        mix[(b * c_out + co) * h * w + px] =
                            (0..c_in).map(|ci| kv[co * c_in + ci] * xv[(b * c_in + ci) * h * w + px]).sum::<f64>();
                    }
                }
            }
            let want = crate::floats(dev, mix, &[n, c_out, h, w], dtype)?;
            let got = x.conv2d(&k, &ConvParams::default())?;
            assert_close(&got, &want, conv_tol(dtype), &format!("1x1 conv {dtype} {view:?}")).await?;
        }
    }
    Ok(())
}

/// One convolution of each op on `x` and `k` (shapes), `k_sum` terms per output.
type Big = (ConvOp, &'static [usize], &'static [usize], [usize; 5], usize);

/// Convolutions spanning several tiles of every configuration, with odd sizes, groups, every
/// parameter class, and 1x1 ones that are plain GEMMs: (op, x, k, [pad, stride, dilation,
/// groups, output_padding], terms per output).
const BIG: [Big; 7] = [
    (ConvOp::Conv2d, &[2, 6, 13, 11], &[10, 3, 3, 3], [1, 1, 1, 2, 0], 27),
    (ConvOp::Conv2d, &[1, 3, 9, 10], &[70, 3, 2, 3], [0, 2, 1, 1, 0], 18),
    (ConvOp::Conv2d, &[1, 16, 8, 8], &[12, 16, 1, 1], [0, 1, 1, 1, 0], 16),
    (ConvOp::Conv2d, &[2, 6, 9, 15], &[12, 3, 1, 1], [0, 1, 1, 2, 0], 3),
    (ConvOp::ConvTranspose2d, &[2, 6, 7, 5], &[6, 3, 3, 3], [1, 2, 2, 3, 1], 18),
    (ConvOp::Conv1d, &[3, 8, 37], &[16, 4, 5], [2, 3, 2, 2, 0], 20),
    (ConvOp::ConvTranspose1d, &[2, 4, 29], &[4, 7, 4], [1, 3, 1, 1, 2], 8),
];

fn run_big(x: &Tensor, k: &Tensor, op: ConvOp, p: [usize; 5]) -> Result<Tensor> {
    let [pad, stride, dil, groups, out_pad] = p;
    match op {
        ConvOp::Conv1d => x.conv1d(k, &p1(pad, stride, dil, groups, out_pad)),
        ConvOp::Conv2d => x.conv2d(k, &p2(pad, stride, dil, groups, out_pad)),
        ConvOp::ConvTranspose1d => x.conv_transpose1d(k, &p1(pad, stride, dil, groups, out_pad)),
        ConvOp::ConvTranspose2d => x.conv_transpose2d(k, &p2(pad, stride, dil, groups, out_pad)),
    }
}

/// [`BIG`] through every tile configuration of the wgpu GEMM table.
async fn conv_tiles_match_reference(dev: &Device) -> Result<()> {
    for &dtype in DType::FLOAT {
        for kernel in tile_choices(dev, dtype) {
            for (i, &(op, xs, ks, p, terms)) in BIG.iter().enumerate() {
                let what = format!("{op} {dtype} {xs:?} {ks:?} {p:?} kernel {kernel:?}");
                let tol = Tol::of(dtype).times(1.0 + terms as f64 / 4.0);
                let run = same_as_cpu(dev, tol, &what, |d| {
                    let x = rand_tensor(d, dtype, xs, 60 + i as u64, -1.0, 1.0)?;
                    run_big(&x, &rand_tensor(d, dtype, ks, 80 + i as u64, -1.0, 1.0)?, op, p)
                });
                forced(kernel, run).await?;
            }
        }
    }
    Ok(())
}

/// Where the wgpu adapter multiplies f16 on cooperative matrices, f16 convolutions take them.
async fn conv_f16_takes_cooperative_matrices(dev: &Device) -> Result<()> {
    if dev.kind() != BackendKind::Wgpu {
        return Ok(());
    }
    let coop = dev.info().iter().any(|(k, v)| *k == "matmul kernels" && v.contains("cooperative matrix 16x16x16"));
    for (i, &(op, xs, ks, p, terms)) in BIG.iter().enumerate() {
        let what = format!("{op} f16 {xs:?} {ks:?} {p:?}");
        let tol = Tol::of(DType::F16).times(1.0 + terms as f64 / 4.0);
        same_as_cpu(dev, tol, &what, |d| {
            let x = rand_tensor(d, DType::F16, xs, 60 + i as u64, -1.0, 1.0)?;
            run_big(&x, &rand_tensor(d, DType::F16, ks, 80 + i as u64, -1.0, 1.0)?, op, p)
        })
        .await?;
        let kernel = last_kernel();
        let took = matches!(kernel, Some(GemmKernel::Coop(_)));
        assert_eq!(took, coop, "{what}: kernel {kernel:?}, adapter has cooperative matrices: {coop}");
    }
    Ok(())
}

/// Channel counts where DNN libraries pick tensor-core and tiled algorithms, and a
/// conv_transpose no library states as a backward data (output_padding at the stride, which
/// dilation 2 allows). Each output sums `terms` products: the tolerance grows with them, as
/// matmul's does.
async fn conv_library_shapes_match_reference(dev: &Device) -> Result<()> {
    let tol = |dtype, terms: usize| Tol::of(dtype).times(1.0 + terms as f64 / 4.0);
    let mixed = ConvParams { padding: [1, 2], stride: [2, 1], dilation: [1, 2], output_padding: [0, 0], groups: 4 };
    for &dtype in DType::FLOAT {
        let cases2: [(&[usize], &[usize], ConvParams<2>, bool); 5] = [
            (&[2, 16, 12, 12], &[32, 16, 3, 3], p2(1, 1, 1, 1, 0), false),
            // 48 filters: between the wgpu table's narrow and wide tiles.
            (&[2, 16, 9, 9], &[48, 16, 3, 3], p2(1, 1, 1, 1, 0), false),
            (&[2, 16, 13, 11], &[32, 4, 3, 3], mixed, false),
            (&[2, 16, 7, 7], &[16, 8, 3, 3], p2(1, 2, 1, 1, 1), true),
            (&[2, 16, 7, 6], &[16, 2, 3, 3], mixed, true),
        ];
        for (i, (xs, ks, p, transposed)) in cases2.into_iter().enumerate() {
            let terms = ks[1] * ks[2] * ks[3] * if transposed { ks[0] / ks[1].max(1) } else { 1 };
            let what = format!("conv2d library shape {dtype} {xs:?} {ks:?} {p:?} transposed {transposed}");
            same_as_cpu(dev, tol(dtype, terms), &what, |d| {
                let x = rand_tensor(d, dtype, xs, 150 + i as u64, -1.0, 1.0)?;
                let k = rand_tensor(d, dtype, ks, 160 + i as u64, -1.0, 1.0)?;
                if transposed { x.conv_transpose2d(&k, &p) } else { x.conv2d(&k, &p) }
            })
            .await?;
        }
        // Read in place one element past a buffer's start: aligned to the element only.
        let what = format!("conv2d library shape {dtype}, input at an odd offset");
        same_as_cpu(dev, tol(dtype, 144), &what, |d| {
            let n = 2 * 16 * 12 * 12;
            let x = rand_tensor(d, dtype, &[n + 1], 174, -1.0, 1.0)?.narrow(0, 1, n)?.reshape((2, 16, 12, 12))?;
            x.conv2d(&rand_tensor(d, dtype, &[32, 16, 3, 3], 175, -1.0, 1.0)?, &p2(1, 1, 1, 1, 0))
        })
        .await?;
        let what = format!("conv1d library shape {dtype}");
        same_as_cpu(dev, tol(dtype, 80), &what, |d| {
            let x = rand_tensor(d, dtype, &[2, 16, 40], 170, -1.0, 1.0)?;
            x.conv1d(&rand_tensor(d, dtype, &[24, 16, 5], 171, -1.0, 1.0)?, &p1(2, 1, 1, 1, 0))
        })
        .await?;
        let what = format!("conv_transpose1d output_padding at the stride {dtype}");
        same_as_cpu(dev, conv_tol(dtype), &what, |d| {
            let x = rand_tensor(d, dtype, &[2, 4, 9], 172, -1.0, 1.0)?;
            x.conv_transpose1d(&rand_tensor(d, dtype, &[4, 3, 3], 173, -1.0, 1.0)?, &p1(0, 1, 2, 1, 1))
        })
        .await?;
    }
    Ok(())
}
