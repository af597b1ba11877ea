//! local_response_norm, the recurrent cells, and LSTM and GRU made of matrix products and those
//! cells ([`crate::spec::rnn`]): one product for the input projections of a whole sequence, then
//! per step a product with `W_hh` and one cell kernel.

use super::Tensor;
use super::parts::{self, Split};
use crate::Result;
use crate::backend::NnOps;
use crate::device::{BackendOf, dispatch};
use crate::spec::Family;
use crate::spec::nn::{self, NnOp};
use crate::spec::rnn::{self, RnnDims, RnnLayouts, RnnMode};

/// One layer and direction's weights of an RNN, in PyTorch's shapes and gate order:
/// `w_ih [G H, in]`, `w_hh [G H, H]`, `b_ih` and `b_hh` `[G H]` (G = 4 for LSTM, 3 for GRU).
#[derive(Clone, Debug)]
pub struct RnnWeights {
    /// Input-to-hidden weights.
    pub w_ih: Tensor,
    /// Hidden-to-hidden weights.
    pub w_hh: Tensor,
    /// Input-to-hidden bias.
    pub b_ih: Option<Tensor>,
    /// Hidden-to-hidden bias.
    pub b_hh: Option<Tensor>,
}

/// How an RNN reads its input: both directions or forward only, `[B, T, I]` or `[T, B, I]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RnnOptions {
    /// Each layer runs forward and backward over the sequence, outputs side by side.
    pub bidirectional: bool,
    /// Input and output are `[B, T, ..]` rather than `[T, B, ..]`.
    pub batch_first: bool,
}

impl RnnWeights {
    fn lays(&self) -> RnnLayouts<'_> {
        [Some(&self.w_ih), Some(&self.w_hh), self.b_ih.as_ref(), self.b_hh.as_ref()].map(|t| t.map(Tensor::lay))
    }
}

impl Tensor {
    /// Local response normalisation across channels of `(N, C, ...)`, PyTorch's formula:
    /// `x / (k + alpha / size * s)^beta` with `s` the sum of `x^2` over the `size` channels
    /// around each one (zero padding at the ends).
    ///
    /// ```
    /// # use rocm_wgpu_ops::{Device, Tensor};
    /// let dev = Device::cpu();
    /// let x = Tensor::from_vec(vec![1f32, 2., 2.], (1, 3, 1), &dev)?;
    /// // Channel 1 sees all three: 2 / (1 + 1 / 3 * 9)^1 = 0.5.
    /// assert_eq!(x.local_response_norm(3, 1.0, 1.0, 1.0)?.to_vec::<f32>()?[1], 0.5);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn local_response_norm(&self, size: usize, alpha: f64, beta: f64, k: f64) -> Result<Tensor> {
        let op = NnOp::LocalResponseNorm.name();
        let out = nn::local_response_norm(&self.layout, self.dtype, size, alpha, beta, k)?;
        if parts::needed(&out, &[self]) {
            let split = Split::pointwise(op, &out, std::slice::from_ref(self)).fixed(&[1]);
            return split.run(|x| x[0].local_response_norm(size, alpha, beta, k));
        }
        let r = self.run(Family::Nn, op, &[], &out)?;
        let s = dispatch!(self.device, |b| {
            b.wrap(b.local_response_norm(r.arg(b, self)?, &self.layout, size, alpha, beta, k)?)
        });
        Ok(r.finish(s))
    }

    /// One LSTM step after its products: `self` is `gx = W_ih x + b_ih` and `gh = W_hh h` (both
    /// `[B, 4H]`, gates i, f, g, o), `bias` is `b_hh`, `c` the cell state `[B, H]`. Returns
    /// `[2, B, H]`: the new `h` then the new `c`.
    pub fn lstm_cell(&self, gh: &Tensor, bias: Option<&Tensor>, c: &Tensor) -> Result<Tensor> {
        self.cell(NnOp::LstmCell, gh, bias, c)
    }

    /// One GRU step after its products: `self` is `gx = W_ih x + b_ih` and `gh = W_hh h` (both
    /// `[B, 3H]`, gates r, z, n), `bias` is `b_hh`, `h` the state `[B, H]`. Returns the new `h`.
    pub fn gru_cell(&self, gh: &Tensor, bias: Option<&Tensor>, h: &Tensor) -> Result<Tensor> {
        self.cell(NnOp::GruCell, gh, bias, h)
    }

    fn cell(&self, op: NnOp, gh: &Tensor, bias: Option<&Tensor>, state: &Tensor) -> Result<Tensor> {
        let others: Vec<&Tensor> = [Some(gh), bias, Some(state)].into_iter().flatten().collect();
        self.same_device(op.name(), &others)?;
        let out = nn::rnn_cell(op, self.lay(), gh.lay(), bias.map(Tensor::lay), state.lay())?;
        if parts::needed(&out, &[self, gh, state]) || bias.is_some_and(Tensor::in_parts) {
            // By batch rows: the output's dim `b` (an LSTM's `[2, B, H]`, a GRU's `[B, H]`).
            let b = out.shape.rank() - 2;
            let rows: Vec<_> = (0..out.shape.rank()).map(|i| (i == b).then_some(0)).collect();
            let mut xs = vec![(self.clone(), rows.clone()), (gh.clone(), rows.clone()), (state.clone(), rows)];
            xs.extend(bias.map(|t| (t.clone(), vec![None; out.shape.rank()])));
            let fixed: Vec<_> = (0..out.shape.rank()).filter(|&i| i != b).collect();
            return Split::mapped(op.name(), &out, xs).fixed(&fixed).run(|x| x[0].cell(op, &x[1], x.get(3), &x[2]));
        }
        let r = self.run(Family::Nn, op.name(), &others, &out)?;
        let s = dispatch!(self.device, |b| {
            let p = bias.map(|t| Ok::<_, crate::Error>((r.arg(b, t)?, &t.layout))).transpose()?;
            let (x, h, st) =
                ((r.arg(b, self)?, &self.layout), (r.arg(b, gh)?, &gh.layout), (r.arg(b, state)?, &state.layout));
            b.wrap(b.rnn_cell(op, x, h, p, st)?)
        });
        Ok(r.finish(s))
    }

    /// A multi-layer LSTM over `self` (`[T, B, I]`, or `[B, T, I]` with `batch_first`), PyTorch's
    /// `nn.LSTM` in inference: `weights` per layer and direction in PyTorch's order (layer 0,
    /// its backward direction if bidirectional, layer 1, ...), `state` the initial `(h0, c0)`
    /// (`[layers dirs, B, H]`, zeros when absent). Returns `(y, h_n, c_n)`: `y [T, B, dirs H]`
    /// (a view `[B, T, dirs H]` with `batch_first`).
    ///
    /// ```
    /// # use rocm_wgpu_ops::{Device, DType, RnnOptions, RnnWeights, Tensor};
    /// let dev = Device::cpu();
    /// let w = |r: usize, c: usize| Tensor::full(0.1f32, [r, c], DType::F32, &dev);
    /// let weights = [RnnWeights { w_ih: w(4 * 8, 3)?, w_hh: w(4 * 8, 8)?, b_ih: None, b_hh: None }];
    /// let x = Tensor::ones([5, 2, 3], DType::F32, &dev)?;
    /// let (y, h, c) = x.lstm(&weights, None, RnnOptions::default())?;
    /// assert_eq!((y.dims(), h.dims(), c.dims()), ([5, 2, 8].as_slice(), [1, 2, 8].as_slice(), [1, 2, 8].as_slice()));
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn lstm(
        &self,
        weights: &[RnnWeights],
        state: Option<(&Tensor, &Tensor)>,
        opts: RnnOptions,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        let (y, h, c) = self.rnn(RnnMode::Lstm, weights, state.map(|s| s.0), state.map(|s| s.1), opts)?;
        Ok((y, h, c.unwrap_or_else(|| unreachable!("an LSTM keeps c"))))
    }

    /// A multi-layer GRU over `self`, PyTorch's `nn.GRU` in inference (arguments as
    /// [`Tensor::lstm`], without `c`). Returns `(y, h_n)`.
    pub fn gru(&self, weights: &[RnnWeights], h0: Option<&Tensor>, opts: RnnOptions) -> Result<(Tensor, Tensor)> {
        let (y, h, _) = self.rnn(RnnMode::Gru, weights, h0, None, opts)?;
        Ok((y, h))
    }

    fn rnn(
        &self,
        mode: RnnMode,
        weights: &[RnnWeights],
        h0: Option<&Tensor>,
        c0: Option<&Tensor>,
        opts: RnnOptions,
    ) -> Result<(Tensor, Tensor, Option<Tensor>)> {
        let x = if opts.batch_first && self.rank() == 3 { self.transpose(0, 1)? } else { self.clone() };
        let lays: Vec<RnnLayouts> = weights.iter().map(RnnWeights::lays).collect();
        let states = [h0.map(Tensor::lay), c0.map(Tensor::lay)];
        let d = rnn::rnn(mode, x.lay(), &lays, opts.bidirectional, &states)?;
        let mut others: Vec<&Tensor> = weights
            .iter()
            .flat_map(|w| [Some(&w.w_ih), Some(&w.w_hh), w.b_ih.as_ref(), w.b_hh.as_ref()])
            .flatten()
            .collect();
        others.extend([h0, c0].into_iter().flatten());
        x.same_device(mode.name(), &others)?;
        let mut input = x;
        let (mut hn, mut cn) = (vec![], vec![]);
        for layer in 0..d.layers {
            let mut outs = Vec::with_capacity(d.dirs);
            for dir in 0..d.dirs {
                let i = layer * d.dirs + dir;
                let (y, h, c) = input.rnn_direction(mode, &weights[i], &d, i, dir == 1, h0, c0)?;
                outs.push(y);
                hn.push(h);
                cn.extend(c);
            }
            input = if outs.len() == 1 { outs.swap_remove(0) } else { Tensor::cat(&outs, 2)? };
        }
        let y = if opts.batch_first { input.transpose(0, 1)? } else { input };
        let c = if mode == RnnMode::Lstm { Some(Tensor::stack(&cn, 0)?) } else { None };
        Ok((y, Tensor::stack(&hn, 0)?, c))
    }

    /// One layer and direction over `self` (`[T, B, in]`): its outputs `[T, B, H]` and last
    /// states (`h`, and `c` for an LSTM).
    #[allow(clippy::too_many_arguments)]
    fn rnn_direction(
        &self,
        mode: RnnMode,
        w: &RnnWeights,
        d: &RnnDims,
        i: usize,
        backward: bool,
        h0: Option<&Tensor>,
        c0: Option<&Tensor>,
    ) -> Result<(Tensor, Tensor, Option<Tensor>)> {
        let (t, b, h) = (d.steps, d.batch, d.hidden);
        let fan_in = self.dims()[2];
        let gx = self.reshape([t * b, fan_in])?.matmul(&w.w_ih.t()?)?;
        let gx = match &w.b_ih {
            Some(bias) => gx.add(bias)?,
            None => gx,
        };
        let gx = gx.reshape([t, b, nn::gates(mode.cell()) * h])?;
        let initial = |s: Option<&Tensor>| match s {
            Some(s) => s.narrow(0, i, 1)?.squeeze(0),
            None => Tensor::zeros([b, h], self.dtype, &self.device),
        };
        let w_hh = w.w_hh.t()?;
        let (mut hs, mut c) = (initial(h0)?, if mode == RnnMode::Lstm { Some(initial(c0)?) } else { None });
        let mut ys: Vec<Option<Tensor>> = vec![None; t];
        for step in 0..t {
            let at = if backward { t - 1 - step } else { step };
            let g = gx.narrow(0, at, 1)?.squeeze(0)?;
            let gh = hs.matmul(&w_hh)?;
            match &c {
                Some(cs) => {
                    let hc = g.lstm_cell(&gh, w.b_hh.as_ref(), cs)?;
                    hs = hc.narrow(0, 0, 1)?;
                    c = Some(hc.narrow(0, 1, 1)?.squeeze(0)?);
                    ys[at] = Some(hs.clone());
                    hs = hs.squeeze(0)?;
                }
                None => {
                    hs = g.gru_cell(&gh, w.b_hh.as_ref(), &hs)?;
                    ys[at] = Some(hs.unsqueeze(0)?);
                }
            }
        }
        let ys: Vec<Tensor> = ys.into_iter().flatten().collect();
        Ok((Tensor::cat(&ys, 0)?, hs, c))
    }
}
