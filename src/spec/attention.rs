//! Attention and rotary embeddings.
//!
//! - scaled_dot_product_attention: `q [B, Hq, Lq, D]`, `k [B, Hkv, Lk, D]`, `v [B, Hkv, Lk, Dv]`
//!   give `[B, Hq, Lq, Dv]`: for query head `h` (reading kv head `h / (Hq / Hkv)`, grouped-query
//!   heads), row `i` is `softmax_j(scale * q_i . k_j + mask_ij) . v`. `scale` defaults to
//!   `1 / sqrt(D)`. `causal` keeps key `j` for query `i` only where `j <= i + Lk - Lq` (aligned
//!   bottom-right: the last query sees every key, as decoding with a KV cache needs; PyTorch's
//!   `is_causal` where `Lq == Lk`). The mask, broadcastable to `[B, Hq, Lq, Lk]`, is `u8`
//!   (1 keeps the key, 0 drops it) or additive in the dtype of `q`.
//!   **A row whose every key is dropped (by the mask, `causal` or `Lk = 0`) is NaN**, as softmax
//!   of a line of -inf is here. A dropped key's weight is zero; whether a NaN or an infinity in
//!   its k or v still reaches the row (0 x NaN) depends on the backend and on where the key falls
//!   in its kernel's tiles (the fused kernels skip whole tiles past the causal bound, and the cpu
//!   forms every product), so keep dropped keys finite, as a zero-filled KV cache is. A NaN
//!   score (from q, a kept key's k or an additive mask) makes its row NaN on the cpu, where the
//!   fused kernels, whose running max passes over a NaN, may drop that key instead; an additive
//!   -inf drops a key on every backend.
//! - rope (candle's `rope`): `x [B, H, T, D]`, `cos` and `sin` `[T, D/2]` or `[B, T, D/2]`; for
//!   `i < D/2`, `y_i = x_i cos_i - x_{i+D/2} sin_i` and `y_{i+D/2} = x_i sin_i + x_{i+D/2} cos_i`.
//! - rope_i (candle's `rope_i`): the same rotation of the pairs `(x_{2i}, x_{2i+1})`.
//!
//! f16 and bf16 compute in f32 (or wider), f64 in f64.

use super::{Out, check_dtype, check_rank, check_same_dtype, invalid, spec_enum};
use crate::{DType, Error, Layout, Result, Shape};

spec_enum! {
    /// Attention and the rotary embeddings.
    pub enum AttentionOp in Attention {
        ScaledDotProductAttention = scaled_dot_product_attention: DType::FLOAT,
        Rope = rope: DType::FLOAT,
        RopeI = rope_i: DType::FLOAT,
    }
}

/// How a mask enters the scores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MaskKind {
    /// No mask.
    None,
    /// `u8`: 1 keeps the key, 0 drops it (its score becomes -inf).
    Keep,
    /// Added to the scaled scores, in the dtype of `q`.
    Additive,
}

/// The geometry of one attention call, as backends receive it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sdpa {
    /// Batch.
    pub b: usize,
    /// Query heads.
    pub hq: usize,
    /// Key/value heads (divides `hq`).
    pub hkv: usize,
    /// Queries per head.
    pub lq: usize,
    /// Keys per head.
    pub lk: usize,
    /// Head size of `q` and `k`.
    pub d: usize,
    /// Head size of `v` and the output.
    pub dv: usize,
    /// Bottom-right causal masking.
    pub causal: bool,
    /// The factor of the dot products.
    pub scale: f64,
    /// The mask's kind; its layout reaches backends broadcast to `[B, Hq, Lq, Lk]`.
    pub mask: MaskKind,
}

impl Sdpa {
    /// The last key query `i` sees under `causal`, plus one (0: none): `i + Lk - Lq + 1`
    /// clamped to `0..=Lk`.
    pub fn keys_seen(&self, i: usize) -> usize {
        if !self.causal {
            return self.lk;
        }
        (i + 1 + self.lk).saturating_sub(self.lq).min(self.lk)
    }
}

/// Validates an attention call: `q`, `k`, `v` rank 4 of one float dtype, one batch, `Hq` a
/// multiple of `Hkv`, `k` and `v` of the same heads and keys, `q` and `k` of one head size; the
/// mask `u8` or of the dtype of `q`, broadcastable to `[B, Hq, Lq, Lk]`. Gives the output, the
/// geometry and the mask's layout broadcast to `[B, Hq, Lq, Lk]`.
pub fn sdpa(
    q: (&Layout, DType),
    k: (&Layout, DType),
    v: (&Layout, DType),
    mask: Option<(&Layout, DType)>,
    causal: bool,
    scale: Option<f64>,
) -> Result<(Out, Sdpa, Option<Layout>)> {
    let op = AttentionOp::ScaledDotProductAttention.name();
    check_dtype(op, q.1, AttentionOp::ScaledDotProductAttention.dtypes())?;
    check_same_dtype(op, q.1, k.1)?;
    check_same_dtype(op, q.1, v.1)?;
    for l in [q.0, k.0, v.0] {
        check_rank(op, l.shape(), 4, "4 ([B, H, L, D])")?;
    }
    let (qd, kd, vd) = (q.0.dims(), k.0.dims(), v.0.dims());
    let mismatch = |a: &Layout, b: &Layout| Error::ShapeMismatch { op, lhs: a.shape().clone(), rhs: b.shape().clone() };
    if qd[0] != kd[0] || kd[..3] != vd[..3] {
        return Err(mismatch(if qd[0] != kd[0] { q.0 } else { k.0 }, if qd[0] != kd[0] { k.0 } else { v.0 }));
    }
    if qd[3] != kd[3] {
        return Err(mismatch(q.0, k.0));
    }
    let (hq, hkv) = (qd[1], kd[1]);
    if hkv == 0 && hq > 0 || hkv > 0 && !hq.is_multiple_of(hkv) {
        return Err(invalid(op, format!("{hq} query heads are not a multiple of {hkv} key/value heads")));
    }
    let scale = scale.unwrap_or(1.0 / (qd[3] as f64).sqrt());
    if !scale.is_finite() {
        return Err(invalid(op, format!("scale {scale} must be finite")));
    }
    let shape = Shape::new([qd[0], hq, qd[2], vd[3]]);
    let scores = Shape::new([qd[0], hq, qd[2], kd[2]]);
    let (kind, ml) = match mask {
        None => (MaskKind::None, None),
        Some((l, dt)) => {
            let kind = if dt == DType::U8 { MaskKind::Keep } else { MaskKind::Additive };
            if kind == MaskKind::Additive {
                check_same_dtype(op, q.1, dt)?;
            }
            let b = l.broadcast_as(&scores).map_err(|_| Error::Broadcast {
                op,
                lhs: l.shape().clone(),
                rhs: scores.clone(),
            })?;
            (kind, Some(b))
        }
    };
    let p = Sdpa { b: qd[0], hq, hkv, lq: qd[2], lk: kd[2], d: qd[3], dv: vd[3], causal, scale, mask: kind };
    Ok((Out::new(shape, q.1), p, ml))
}

/// Validates rope or rope_i: `x` rank 4 `[B, H, T, D]` with D even; `cos` and `sin` of the dtype
/// of `x`, one shape, `[T, D/2]` or `[B, T, D/2]`. Gives the output and the layouts of `cos`
/// and `sin` as `[B, T, D/2]` (a 2-D table broadcast over the batch).
pub fn rope(
    op: AttentionOp,
    x: (&Layout, DType),
    cos: (&Layout, DType),
    sin: (&Layout, DType),
) -> Result<(Out, Layout, Layout)> {
    let name = op.name();
    check_dtype(name, x.1, op.dtypes())?;
    check_same_dtype(name, x.1, cos.1)?;
    check_same_dtype(name, x.1, sin.1)?;
    check_rank(name, x.0.shape(), 4, "4 ([B, H, T, D])")?;
    let d = x.0.dims();
    if !d[3].is_multiple_of(2) {
        return Err(invalid(name, format!("the last dim {} must be even", d[3])));
    }
    let table = Shape::new([d[0], d[2], d[3] / 2]);
    let fit = |l: &Layout| -> Result<Layout> {
        let ok = l.dims() == &table.dims()[1..] || l.dims() == table.dims();
        if !ok {
            return Err(Error::ShapeMismatch { op: name, lhs: l.shape().clone(), rhs: table.clone() });
        }
        l.broadcast_as(&table)
    };
    Ok((Out::new(x.0.shape().clone(), x.1), fit(cos.0)?, fit(sin.0)?))
}

/// A multiple of the keys per tile of every GPU kernel (`AttTiles::BK` in HIP: 64, or 16 for
/// f64; `BK` in WGSL: 16): a key range of a split pass starts at a multiple of it and, but for
/// the last, ends at one, so that no tile straddles two ranges.
pub const KEY_TILE: u64 = 64;
/// The fewest keys a range of a split pass takes.
pub const MIN_SPLIT: u64 = 128;

/// Rows each lane of a GPU rope workgroup (block) takes, a step of rows apart (`RUN` in
/// `shaders/attention.wgsl`, `ROPE_RUN` in `hip/attention.hip`).
pub const ROPE_RUN: u64 = 4;

/// A GPU rope launch over `rows` rows of `units` each (output words on WGSL, elements natively),
/// `threads` to a workgroup: (lanes a row, rows a step, workgroups).
pub fn rope_grid(rows: u64, units: u64, threads: u64) -> (u64, u64, u64) {
    let lanes = units.min(threads);
    let step = threads / lanes;
    (lanes, step, rows.div_ceil(step * ROPE_RUN))
}

/// How the GPU kernels split the keys when few rows meet many keys (decoding): the number of
/// ranges and each one's length (a multiple of [`KEY_TILE`]). `row_blocks` workgroups cover the
/// rows; the keys split until about `target` workgroups run, each range at least [`MIN_SPLIT`]
/// keys long; one range (no split) when the rows alone fill `target`.
pub fn key_splits(row_blocks: u64, lk: u64, target: u64) -> (u64, u64) {
    let want = target.div_ceil(row_blocks.max(1));
    let splits = want.min(lk / MIN_SPLIT).max(1);
    let len = (lk.div_ceil(splits).div_ceil(KEY_TILE) * KEY_TILE).max(KEY_TILE);
    (lk.div_ceil(len).max(1), len)
}
