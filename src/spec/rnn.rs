//! LSTM and GRU (inference forward) with PyTorch's conventions, made of matrix products and the
//! nn family's cells ([`super::nn::rnn_cell`]).
//!
//! - Input `x [T, B, I]` (`[B, T, I]` batch-first), `T, B >= 1`.
//! - Weights per layer and direction, in PyTorch's order (layer 0 forward, layer 0 backward,
//!   layer 1 forward, ...): `w_ih [G H, in]` (`in` = `I` in layer 0, `dirs H` above), `w_hh [G H,
//!   H]`, optional `b_ih` and `b_hh` `[G H]`; `G` = 4 (LSTM gates i, f, g, o) or 3 (GRU r, z, n).
//! - Initial states `h0` (and `c0`) `[layers dirs, B, H]`, zeros when absent.
//! - Per step: `gx = W_ih x_t + b_ih` (for the whole sequence in one product), `gh = W_hh h`,
//!   then the cell with `b_hh`; the backward direction walks `t` from `T - 1` down.
//! - Outputs `y [T, B, dirs H]` (`[B, T, dirs H]` batch-first: the last layer's `h` at each step,
//!   the directions side by side), `h_n` (and `c_n`) `[layers dirs, B, H]`.
//!
//! Everything is in `x`'s dtype (f16, bf16, f32, f64): each product and cell rounds to it, the
//! cells compute in f32 or wider.

use super::nn::{NnOp, gates};
use super::{check_dtype, check_same_dtype, invalid};
use crate::{DType, Error, Layout, Result, Shape};

/// The recurrent cell of an RNN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RnnMode {
    /// Long short-term memory: states `h` and `c`.
    Lstm,
    /// Gated recurrent unit: state `h`.
    Gru,
}

impl RnnMode {
    /// The nn op of one step.
    pub fn cell(self) -> NnOp {
        match self {
            RnnMode::Lstm => NnOp::LstmCell,
            RnnMode::Gru => NnOp::GruCell,
        }
    }

    /// The op's name: `lstm` or `gru`.
    pub fn name(self) -> &'static str {
        match self {
            RnnMode::Lstm => "lstm",
            RnnMode::Gru => "gru",
        }
    }
}

/// The sizes of a validated RNN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RnnDims {
    /// Steps `T`.
    pub steps: usize,
    /// Batch `B`.
    pub batch: usize,
    /// Input features `I`.
    pub input: usize,
    /// Hidden size `H`.
    pub hidden: usize,
    /// Layers.
    pub layers: usize,
    /// Directions: 1, or 2 when bidirectional.
    pub dirs: usize,
}

/// One layer and direction's weights as layouts and dtypes: `w_ih`, `w_hh`, `b_ih`, `b_hh`.
pub type RnnLayouts<'a> = [Option<(&'a Layout, DType)>; 4];

fn expect(op: &'static str, what: &str, got: &Layout, want: Shape) -> Result<()> {
    if got.shape() == &want {
        return Ok(());
    }
    Err(invalid(op, format!("{what} has shape {}, expected {want}", got.shape())))
}

/// Checks an RNN's input `x` (`[T, B, I]` as laid out after a batch-first transpose), its
/// weights (one entry per layer and direction, `w_ih` and `w_hh` present) and initial states.
pub fn rnn(
    mode: RnnMode,
    x: (&Layout, DType),
    weights: &[RnnLayouts],
    bidirectional: bool,
    states: &[Option<(&Layout, DType)>],
) -> Result<RnnDims> {
    let op = mode.name();
    check_dtype(op, x.1, mode.cell().dtypes())?;
    let [steps, batch, input] = *x.0.dims() else {
        return Err(Error::Rank { op, expected: "3 ([T, B, I])", shape: x.0.shape().clone() });
    };
    if steps == 0 || batch == 0 {
        return Err(invalid(op, format!("input {}: the sequence and the batch need at least one entry", x.0.shape())));
    }
    let dirs = if bidirectional { 2 } else { 1 };
    if weights.is_empty() || !weights.len().is_multiple_of(dirs) {
        let n = weights.len();
        return Err(invalid(op, format!("{n} weight sets: one per layer and direction ({dirs} directions) needed")));
    }
    let layers = weights.len() / dirs;
    let Some((w_hh, _)) = weights[0][1] else { return Err(invalid(op, "layer 0: w_hh missing")) };
    let hidden = w_hh.dims().last().copied().unwrap_or(0);
    if hidden == 0 {
        return Err(invalid(op, format!("w_hh of layer 0 has shape {}: the hidden size must be >= 1", w_hh.shape())));
    }
    let g = gates(mode.cell()) * hidden;
    for (i, w) in weights.iter().enumerate() {
        let fan_in = if i < dirs { input } else { dirs * hidden };
        let names = ["w_ih", "w_hh", "b_ih", "b_hh"];
        let shapes = [Shape::new([g, fan_in]), Shape::new([g, hidden]), Shape::new([g]), Shape::new([g])];
        for (k, (p, want)) in w.iter().zip(shapes).enumerate() {
            let what = format!("{} of layer {} direction {}", names[k], i / dirs, i % dirs);
            match p {
                Some((l, d)) => {
                    check_same_dtype(op, x.1, *d)?;
                    expect(op, &what, l, want)?;
                }
                None if k < 2 => return Err(invalid(op, format!("{what} missing"))),
                None => {}
            }
        }
    }
    for (l, d) in states.iter().flatten() {
        check_same_dtype(op, x.1, *d)?;
        expect(op, "an initial state", l, Shape::new([layers * dirs, batch, hidden]))?;
    }
    Ok(RnnDims { steps, batch, input, hidden, layers, dirs })
}
