//! local_response_norm, the recurrent cells, and LSTM and GRU against an f64 implementation of
//! PyTorch's equations written here (independent of the crate's cpu path, which runs the same
//! composition of products and cells as the GPU backends).

use crate::{Tol, View, assert_floats, compare_with_cpu, cpu, rand_tensor, sample, suite, view_tensor, wide};
use rocm_wgpu_ops::spec::nn::NnOp;
use rocm_wgpu_ops::{DType, Device, Error, Result, RnnOptions, RnnWeights, Tensor};

suite!(
    local_response_norm_matches_reference,
    local_response_norm_hand_computed,
    rnn_cells_match_reference,
    lstm_and_gru_match_pytorchs_equations,
    recurrent_ops_reject_bad_input,
);

/// A handful of roundings in the computing precision (squares, sum, pow; gate sums, exp,
/// divide, tanh) on top of the one rounding to the dtype, as the other nn ops.
fn tol(dtype: DType) -> Tol {
    Tol::of(dtype).times(8.0)
}

async fn local_response_norm_matches_reference(dev: &Device) -> Result<()> {
    // Channels in one block of the blocked kernels and in several (19); windows within its
    // reach and past it (11: the per-element kernels), as views whose positions do and do not
    // merge into one stride.
    let shapes: [&[usize]; 5] = [&[2, 7, 3, 4], &[3, 5], &[2, 19, 5], &[2, 6, 5], &[0, 3, 2]];
    let params =
        [(5, 1e-4, 0.75, 1.0), (1, 0.5, 1.5, 0.5), (2, 2.0, 0.75, 0.25), (8, 1.0, -0.5, 2.0), (11, 0.3, 0.6, 1.5)];
    for &dtype in NnOp::LocalResponseNorm.dtypes() {
        for view in View::ALL {
            for shape in shapes {
                for (size, alpha, beta, k) in params {
                    let what = format!("local_response_norm {dtype} {view:?} {shape:?} size {size} {alpha} {beta} {k}");
                    if sample::skip() {
                        continue;
                    }
                    compare_with_cpu(dev, tol(dtype), &what, |d| {
                        view_tensor(d, view, dtype, shape, 21, -3.0, 3.0)?.local_response_norm(size, alpha, beta, k)
                    })
                    .await?;
                }
            }
        }
    }
    Ok(())
}

async fn local_response_norm_hand_computed(dev: &Device) -> Result<()> {
    let (dtype, e) = wide(dev);
    let x = crate::floats(dev, vec![1.0, 2.0, 2.0], &[1, 3, 1], dtype)?;
    // size 3: windows {0, 1}, {0, 1, 2}, {1, 2}; size 2 (asymmetric): {0}, {0, 1}, {1, 2}.
    let want = [1.0 / (1.0 + 5.0 / 3.0), 2.0 / 4.0, 2.0 / (1.0 + 8.0 / 3.0)];
    assert_floats(&x.local_response_norm(3, 1.0, 1.0, 1.0)?, &[1, 3, 1], &want, e).await?;
    let want = [1.0 / 1.5, 2.0 / (1.0 + 2.5), 2.0 / (1.0 + 4.0)];
    assert_floats(&x.local_response_norm(2, 1.0, 1.0, 1.0)?, &[1, 3, 1], &want, e).await?;
    // beta 2, k 0: x / (alpha s / size)^2.
    let want = [1.0 / (5.0f64 / 6.0).powi(2), 2.0 / 1.5f64.powi(2), 2.0 / (8.0f64 / 6.0).powi(2)];
    assert_floats(&x.local_response_norm(3, 0.5, 2.0, 0.0)?, &[1, 3, 1], &want, 1e3 * e).await
}

/// A `[rows, cols]` operand laid out as `view`: a column block of a wider matrix (`Offset`), or
/// stored transposed (`Transposed`); the rest contiguous.
fn matrix(d: &Device, view: View, dtype: DType, rows: usize, cols: usize, seed: u64) -> Result<Tensor> {
    match view {
        View::Offset => rand_tensor(d, dtype, &[rows, cols + 3], seed, -2.0, 2.0)?.narrow(1, 2, cols),
        View::Transposed => rand_tensor(d, dtype, &[cols, rows], seed, -2.0, 2.0)?.t(),
        _ => rand_tensor(d, dtype, &[rows, cols], seed, -2.0, 2.0),
    }
}

async fn rnn_cells_match_reference(dev: &Device) -> Result<()> {
    for op in [NnOp::LstmCell, NnOp::GruCell] {
        let g = if op == NnOp::LstmCell { 4 } else { 3 };
        for &dtype in op.dtypes() {
            for view in [View::Contiguous, View::Offset, View::Transposed] {
                for (b, h) in [(3, 5), (1, 1), (2, 8), (4, 33)] {
                    for bias in [false, true] {
                        let what = format!("{op} {dtype} {view:?} B {b} H {h} bias {bias}");
                        if sample::skip() {
                            continue;
                        }
                        compare_with_cpu(dev, tol(dtype), &what, |d| {
                            let gx = matrix(d, view, dtype, b, g * h, 31)?;
                            let gh = matrix(d, View::Contiguous, dtype, b, g * h, 32)?;
                            let state = matrix(d, view, dtype, b, h, 33)?;
                            let p = bias.then(|| rand_tensor(d, dtype, &[g * h], 34, -1.0, 1.0)).transpose()?;
                            if op == NnOp::LstmCell {
                                gx.lstm_cell(&gh, p.as_ref(), &state)
                            } else {
                                gx.gru_cell(&gh, p.as_ref(), &state)
                            }
                        })
                        .await?;
                    }
                }
            }
        }
    }
    Ok(())
}

fn sigmoid(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

/// `w [rows, cols]` (row-major) times `x [cols]`, plus `b`.
fn affine(w: &[f64], x: &[f64], b: Option<&[f64]>) -> Vec<f64> {
    let cols = x.len();
    (0..w.len() / cols)
        .map(|r| (0..cols).map(|c| w[r * cols + c] * x[c]).sum::<f64>() + b.map_or(0.0, |b| b[r]))
        .collect()
}

/// One layer and direction's weights as f64: w_ih, w_hh, b_ih, b_hh.
type Weights64 = (Vec<f64>, Vec<f64>, Option<Vec<f64>>, Option<Vec<f64>>);

/// PyTorch's LSTM (`lstm`) or GRU over `x [T][B][I]` from `h0` (and `c0`) `[L dirs][B][H]`:
/// `(y [T][B][dirs H], h_n, c_n)`, in f64.
#[allow(clippy::type_complexity)]
fn rnn64(
    lstm: bool,
    x: &[Vec<Vec<f64>>],
    w: &[Weights64],
    dirs: usize,
    h0: &[Vec<Vec<f64>>],
    c0: &[Vec<Vec<f64>>],
) -> (Vec<Vec<Vec<f64>>>, Vec<Vec<Vec<f64>>>, Vec<Vec<Vec<f64>>>) {
    let (t, b, hidden) = (x.len(), x[0].len(), h0[0][0].len());
    let (mut input, mut hn, mut cn) = (x.to_vec(), vec![], vec![]);
    for layer in 0..w.len() / dirs {
        let mut out = vec![vec![vec![]; b]; t];
        for dir in 0..dirs {
            let i = layer * dirs + dir;
            let (w_ih, w_hh, b_ih, b_hh) = &w[i];
            let (mut h, mut c) = (h0[i].clone(), c0[i].clone());
            for step in 0..t {
                let at = if dir == 1 { t - 1 - step } else { step };
                for r in 0..b {
                    let gx = affine(w_ih, &input[at][r], b_ih.as_deref());
                    let gh = affine(w_hh, &h[r], b_hh.as_deref());
                    for j in 0..hidden {
                        let (a, g) = (|q: usize| gx[q * hidden + j], |q: usize| gh[q * hidden + j]);
                        if lstm {
                            let cj = sigmoid(a(1) + g(1)) * c[r][j] + sigmoid(a(0) + g(0)) * (a(2) + g(2)).tanh();
                            c[r][j] = cj;
                            h[r][j] = sigmoid(a(3) + g(3)) * cj.tanh();
                        } else {
                            let (rr, z) = (sigmoid(a(0) + g(0)), sigmoid(a(1) + g(1)));
                            let n = (a(2) + rr * g(2)).tanh();
                            h[r][j] = (1.0 - z) * n + z * h[r][j];
                        }
                    }
                    // Every column of this row's gates is taken from the old h before it changes.
                }
                for r in 0..b {
                    out[at][r].extend_from_slice(&h[r]);
                }
            }
            hn.push(h);
            cn.push(c);
        }
        input = out;
    }
    (input, hn, cn)
}

async fn host(t: &Tensor) -> Result<Vec<f64>> {
    Ok(t.to_cpu_storage_async().await?.to_f64_vec())
}

fn nest(v: &[f64], d0: usize, d1: usize) -> Vec<Vec<Vec<f64>>> {
    let d2 = v.len() / (d0 * d1).max(1);
    (0..d0).map(|i| (0..d1).map(|j| v[(i * d1 + j) * d2..(i * d1 + j + 1) * d2].to_vec()).collect()).collect()
}

fn flat(v: &[Vec<Vec<f64>>]) -> Vec<f64> {
    v.iter().flatten().flatten().copied().collect()
}

async fn lstm_and_gru_match_pytorchs_equations(dev: &Device) -> Result<()> {
    let (input, hidden) = (5, 4);
    // (layers, bidirectional, batch_first, T, B, biases, initial states)
    let cases = [
        (1, false, false, 4, 3, true, true),
        (2, true, false, 3, 2, true, false),
        (2, false, true, 1, 1, false, true),
        (1, true, true, 5, 2, false, false),
    ];
    for lstm in [true, false] {
        let g = if lstm { 4 } else { 3 };
        // The dtypes `dev` computes in (WebGPU has no f64; `support.rs` checks that statement).
        let dtypes = NnOp::LstmCell.dtypes().iter().filter(|&&d| dev.supports(NnOp::LstmCell.name(), d).is_ok());
        for &dtype in dtypes {
            for (ci, &(layers, bidi, batch_first, t, b, biases, states)) in cases.iter().enumerate() {
                let what = format!("{} {dtype} case {ci}", if lstm { "lstm" } else { "gru" });
                if sample::skip() {
                    continue;
                }
                let dirs = if bidi { 2 } else { 1 };
                let seed = 100 + ci as u64 * 10;
                // Inputs made on the cpu (the oracle reads them there), then moved.
                let c = cpu();
                let x_shape = if batch_first { [b, t, input] } else { [t, b, input] };
                let x = rand_tensor(&c, dtype, &x_shape, seed, -2.0, 2.0)?;
                let mut weights = vec![];
                for i in 0..layers * dirs {
                    let fan_in = if i < dirs { input } else { dirs * hidden };
                    let s = seed + 1000 * (i as u64 + 1);
                    let bias = |k| biases.then(|| rand_tensor(&c, dtype, &[g * hidden], s + k, -0.5, 0.5)).transpose();
                    weights.push(RnnWeights {
                        w_ih: rand_tensor(&c, dtype, &[g * hidden, fan_in], s, -0.6, 0.6)?,
                        w_hh: rand_tensor(&c, dtype, &[g * hidden, hidden], s + 1, -0.6, 0.6)?,
                        b_ih: bias(2)?,
                        b_hh: bias(3)?,
                    });
                }
                let state_shape = [layers * dirs, b, hidden];
                let h0 = states.then(|| rand_tensor(&c, dtype, &state_shape, seed + 7, -1.0, 1.0)).transpose()?;
                let c0 = states.then(|| rand_tensor(&c, dtype, &state_shape, seed + 8, -1.0, 1.0)).transpose()?;

                // The oracle, in f64 from the inputs' values.
                let mut x64 = host(&x).await?;
                if batch_first {
                    x64 = flat(&transpose01(&nest(&x64, b, t)));
                }
                let mut w64 = vec![];
                for w in &weights {
                    let opt = async |t: &Option<Tensor>| match t {
                        Some(t) => host(t).await.map(Some),
                        None => Ok(None),
                    };
                    w64.push((host(&w.w_ih).await?, host(&w.w_hh).await?, opt(&w.b_ih).await?, opt(&w.b_hh).await?));
                }
                let zeros = vec![0.0; layers * dirs * b * hidden];
                let h064 = match &h0 {
                    Some(h) => host(h).await?,
                    None => zeros.clone(),
                };
                let c064 = match &c0 {
                    Some(c) => host(c).await?,
                    None => zeros,
                };
                let (y, hn, cn) = rnn64(
                    lstm,
                    &nest(&x64, t, b),
                    &w64,
                    dirs,
                    &nest(&h064, layers * dirs, b),
                    &nest(&c064, layers * dirs, b),
                );
                let y = if batch_first { transpose01(&y) } else { y };

                // The same on `dev`.
                let to = |t: &Tensor| t.to_device(dev);
                let opt = |t: &Option<Tensor>| t.as_ref().map(to).transpose();
                let wd: Vec<RnnWeights> = weights
                    .iter()
                    .map(|w| {
                        Ok(RnnWeights {
                            w_ih: to(&w.w_ih)?,
                            w_hh: to(&w.w_hh)?,
                            b_ih: opt(&w.b_ih)?,
                            b_hh: opt(&w.b_hh)?,
                        })
                    })
                    .collect::<Result<_>>()?;
                let (xd, h0d, c0d) = (to(&x)?, opt(&h0)?, opt(&c0)?);
                let opts = RnnOptions { bidirectional: bidi, batch_first };
                let (yd, hnd, cnd) = if lstm {
                    let st = h0d.as_ref().zip(c0d.as_ref());
                    let (y, h, c) = xd.lstm(&wd, st, opts)?;
                    (y, h, Some(c))
                } else {
                    let (y, h) = xd.gru(&wd, h0d.as_ref(), opts)?;
                    (y, h, None)
                };
                let y_shape = if batch_first { [b, t, dirs * hidden] } else { [t, b, dirs * hidden] };
                assert_eq!((yd.dims(), hnd.dims()), (y_shape.as_slice(), state_shape.as_slice()), "{what}");
                // Each step rounds gx, gh, h (and c) to the dtype, over at most 5 steps and 2
                // layers.
                let e = rnn_tol(dtype);
                near(&what, "y", &host(&yd).await?, &flat(&y), e);
                near(&what, "h_n", &host(&hnd).await?, &flat(&hn), e);
                if let Some(cnd) = cnd {
                    near(&what, "c_n", &host(&cnd).await?, &flat(&cn), e);
                }
            }
        }
    }
    Ok(())
}

/// The absolute error allowed against the f64 oracle: 8 units of the dtype's epsilon. The states
/// stay within (-1, 1) (c within a few units), and the largest error on lavapipe was 1.6 units
/// (f64 GRU; f16 and bf16 below 0.5: their products accumulate in f32).
fn rnn_tol(dtype: DType) -> f64 {
    let eps = match dtype {
        DType::F64 => f64::EPSILON,
        DType::F32 => f32::EPSILON as f64,
        DType::F16 => 9.77e-4,
        _ => 7.82e-3,
    };
    8.0 * eps
}

fn near(what: &str, part: &str, got: &[f64], want: &[f64], e: f64) {
    assert_eq!(got.len(), want.len(), "{what} {part}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= e, "{what} {part}[{i}]: {g} against {w} (tolerance {e})\n{got:?}\n{want:?}");
    }
}

fn transpose01(v: &[Vec<Vec<f64>>]) -> Vec<Vec<Vec<f64>>> {
    (0..v[0].len()).map(|j| (0..v.len()).map(|i| v[i][j].clone()).collect()).collect()
}

async fn recurrent_ops_reject_bad_input(dev: &Device) -> Result<()> {
    let f = DType::F32;
    let z = |shape: &[usize]| Tensor::zeros(shape.to_vec(), f, dev);
    let invalid = |r: Result<Tensor>, what: &str| match r {
        Err(
            Error::InvalidParam { .. } | Error::Rank { .. } | Error::ShapeMismatch { .. } | Error::DTypeMismatch { .. },
        ) => Ok(()),
        other => panic!("{what}: expected a clear error, got {other:?}"),
    };
    let x = z(&[2, 3, 4])?;
    invalid(x.local_response_norm(0, 1e-4, 0.75, 1.0), "lrn size 0")?;
    invalid(x.local_response_norm(3, -1.0, 0.75, 1.0), "lrn alpha < 0")?;
    invalid(x.local_response_norm(3, 1e-4, f64::NAN, 1.0), "lrn beta NaN")?;
    invalid(z(&[4])?.local_response_norm(3, 1e-4, 0.75, 1.0), "lrn rank 1")?;
    // Cells: gates of the wrong width, a state of the wrong rank, a bias of the wrong length, mixed dtypes.
    let (gx, c) = (z(&[2, 12])?, z(&[2, 3])?);
    let g3 = z(&[2, 9])?;
    invalid(g3.lstm_cell(&g3, None, &c), "lstm_cell of 3 gates")?;
    invalid(gx.gru_cell(&z(&[2, 9])?, None, &c), "gru_cell gh narrower")?;
    invalid(gx.lstm_cell(&gx, None, &z(&[6])?), "lstm_cell state rank 1")?;
    invalid(gx.lstm_cell(&gx, Some(&z(&[11])?), &c), "lstm_cell bias length")?;
    invalid(
        gx.gru_cell(&gx, None, &c).and_then(|_| z(&[2, 9])?.gru_cell(&z(&[2, 9])?, None, &c.to_dtype(DType::F16)?)),
        "gru_cell dtypes",
    )?;
    // Whole RNNs.
    let w = |r: usize, c: usize| z(&[r, c]);
    let good = || -> Result<Vec<RnnWeights>> {
        Ok(vec![RnnWeights { w_ih: w(16, 4)?, w_hh: w(16, 4)?, b_ih: None, b_hh: None }])
    };
    let seq = z(&[3, 2, 4])?;
    let lstm = |x: &Tensor, ws: &[RnnWeights], st: Option<(&Tensor, &Tensor)>, o| x.lstm(ws, st, o).map(|r| r.0);
    let d = RnnOptions::default();
    lstm(&seq, &good()?, None, d)?;
    invalid(lstm(&seq, &[], None, d), "no weights")?;
    invalid(lstm(&seq, &good()?, None, RnnOptions { bidirectional: true, ..d }), "one set for two directions")?;
    invalid(lstm(&z(&[0, 2, 4])?, &good()?, None, d), "empty sequence")?;
    invalid(lstm(&z(&[3, 4])?, &good()?, None, d), "rank 2 input")?;
    invalid(lstm(&z(&[3, 2, 5])?, &good()?, None, d), "input width")?;
    let mut bad = good()?;
    bad[0].w_hh = w(16, 3)?;
    invalid(lstm(&seq, &bad, None, d), "w_hh width")?;
    let mut bad = good()?;
    bad[0].b_ih = Some(z(&[12])?);
    invalid(lstm(&seq, &bad, None, d), "b_ih length")?;
    invalid(seq.gru(&good()?, None, d).map(|r| r.0), "LSTM weights to a GRU")?;
    let (h0, c0) = (z(&[1, 2, 4])?, z(&[2, 2, 4])?);
    invalid(lstm(&seq, &good()?, Some((&h0, &c0)), d), "c0 of two layers")?;
    invalid(lstm(&seq.to_dtype(DType::F16)?, &good()?, None, d), "f16 input, f32 weights")?;
    // Nothing else was touched: the input still reads back.
    assert_floats(&seq, &[3, 2, 4], &[0.0; 24], 0.0).await
}
