//! The Llama-shaped decoder of examples/transformer.rs: RMSNorm, RoPE on q and k, grouped KV
//! heads, a SwiGLU MLP, no biases, the lm head tied to the embedding.

use crate::common::{Ctx, Res, budget};
use crate::parallel::Ranks;
use crate::{Config, EPS, Kv, Role, STD, Slot, Weight, attend, heads, matmul, weights};
use rocm_wgpu_ops::{Device, Result, Tensor};

#[path = "llama_file.rs"]
pub mod file;

/// RoPE's base: position `t` turns pair `i` of a head by `t * THETA^(-2i / D)`.
const THETA: f64 = 10000.0;

pub struct Layer {
    attn_norm: Tensor,
    /// `[C, (H + 2 Hkv) D]`: q, k and v in one matmul.
    qkv: Weight,
    out: Weight,
    mlp_norm: Tensor,
    /// `[C, 2 M]`: the gate and the up projection in one matmul.
    gate_up: Weight,
    down: Weight,
}

pub struct Model {
    pub embed: Tensor,
    layers: Vec<Layer>,
    norm: Tensor,
    /// The logits' weight when a file has one (`output.weight`); else the embedding's transpose.
    pub head: Option<Weight>,
    /// RoPE's `[positions, D/2]` tables, built once; tokens read the rows of their positions.
    cos: Tensor,
    sin: Tensor,
    /// Whether RoPE turns the pairs `(2i, 2i + 1)` of a head (`rope_i`: a GGUF's q and k rows
    /// are permuted so) rather than `(i, i + D/2)` (`rope`).
    interleaved: bool,
    /// RMSNorm's epsilon.
    eps: f64,
}

impl Model {
    pub fn random(c: &Config) -> Result<Model> {
        let w = weights();
        let resid = c.residual_std();
        let (h, kv, m) = (c.heads * c.head_dim(), c.kv_heads * c.head_dim(), c.mlp);
        let layers = (0..c.layers)
            .map(|i| {
                let ty = |role| c.quant.ty(role, i, c.layers);
                Ok(Layer {
                    attn_norm: w(1.0, STD, &[c.width])?,
                    qkv: Weight::mixed(
                        &w(0.0, STD, &[c.width, h + 2 * kv])?,
                        &[(h, ty(Role::Q)), (kv, ty(Role::K)), (kv, ty(Role::V))],
                    )?,
                    out: Weight::new(w(0.0, resid, &[c.width, c.width])?, ty(Role::Out))?,
                    mlp_norm: w(1.0, STD, &[c.width])?,
                    gate_up: Weight::mixed(
                        &w(0.0, STD, &[c.width, 2 * m])?,
                        &[(m, ty(Role::Gate)), (m, ty(Role::Up))],
                    )?,
                    down: Weight::new(w(0.0, resid, &[m, c.width])?, ty(Role::Down))?,
                })
            })
            .collect::<Result<_>>()?;
        let (cos, sin) = rope_tables(c.positions(), c.head_dim(), THETA)?;
        let embed = w(0.0, STD, &[c.vocab, c.width])?;
        Ok(Model { embed, layers, norm: w(1.0, STD, &[c.width])?, head: None, cos, sin, interleaved: false, eps: EPS })
    }

    /// Every weight and table through `t` (to `dev`, to a dtype); blocks copied to `dev` as they
    /// are.
    pub fn map(&self, dev: &Device, t: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Model> {
        let layers = self
            .layers
            .iter()
            .map(|l| {
                Ok(Layer {
                    attn_norm: t(&l.attn_norm)?,
                    qkv: l.qkv.map(dev, &t)?,
                    out: l.out.map(dev, &t)?,
                    mlp_norm: t(&l.mlp_norm)?,
                    gate_up: l.gate_up.map(dev, &t)?,
                    down: l.down.map(dev, &t)?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Model {
            embed: t(&self.embed)?,
            layers,
            norm: t(&self.norm)?,
            head: self.head.as_ref().map(|h| h.map(dev, &t)).transpose()?,
            cos: t(&self.cos)?,
            sin: t(&self.sin)?,
            ..*self
        })
    }

    /// Rank `r` of `n`'s shard for tensor parallelism: q, k, v, gate and up by columns (heads,
    /// hidden units), out and down by rows; embedding, norms and tables whole. Dense weights only.
    pub fn shard(&self, cfg: &Config, r: usize, n: usize) -> Result<Model> {
        let d = cfg.head_dim();
        let (h, kv, m) = (cfg.heads / n * d, cfg.kv_heads / n * d, cfg.mlp / n);
        let (all_h, all_kv) = (cfg.heads * d, cfg.kv_heads * d);
        let qkv = [(r * h, h), (all_h + r * kv, kv), (all_h + all_kv + r * kv, kv)];
        let c = cfg.width / n;
        let layers = self
            .layers
            .iter()
            .map(|l| {
                Ok(Layer {
                    attn_norm: l.attn_norm.clone(),
                    qkv: l.qkv.split(1, &qkv)?,
                    out: l.out.split(0, &[(r * c, c)])?,
                    mlp_norm: l.mlp_norm.clone(),
                    gate_up: l.gate_up.split(1, &[(r * m, m), (cfg.mlp + r * m, m)])?,
                    down: l.down.split(0, &[(r * m, m)])?,
                })
            })
            .collect::<Result<_>>()?;
        let (embed, norm, cos, sin) = (self.embed.clone(), self.norm.clone(), self.cos.clone(), self.sin.clone());
        let head = self.head.as_ref().map(|h| h.split(1, &[(0, h.outputs())])).transpose()?;
        Ok(Model { embed, layers, norm, head, cos, sin, ..*self })
    }

    /// The final normed hidden states `(T, C)` of tokens `(T)` on every rank, at positions
    /// `0..T` or at those of the rank's cache slot (`slots[r]`, if any): rank `r` runs shard
    /// `ms[r]`; the attention's and the MLP's outputs are summed over the ranks before the
    /// residual adds.
    pub fn forward(ms: &[&Model], p: &Ranks, cfg: &Config, ids: &[Tensor], slots: &[Slot]) -> Res<Vec<Tensor>> {
        let t = ids[0].dims()[0];
        let rope = p.map(|r, c| {
            let m = ms[r];
            Ok(match slots.get(r) {
                None => (m.cos.narrow(0, 0, t)?, m.sin.narrow(0, 0, t)?),
                Some(s) => {
                    c.op("index", budget::COPY, || Ok((m.cos.index_select(&s.at, 0)?, m.sin.index_select(&s.at, 0)?)))?
                }
            })
        })?;
        let mut x = p.map(|r, c| c.op("index", budget::COPY, || ms[r].embed.index_select(&ids[r], 0)))?;
        for i in 0..ms[0].layers.len() {
            let a = p.sum(p.map(|r, c| {
                let l = &ms[r].layers[i];
                let rope = (&rope[r].0, &rope[r].1);
                attention(
                    c,
                    cfg,
                    ms[r],
                    l,
                    &norm(c, &x[r], &l.attn_norm, ms[r].eps)?,
                    rope,
                    slots.get(r).map(|s| (s, i)),
                )
            })?)?;
            x = p.map(|r, c| c.op("elementwise", budget::EXACT_MAP, || x[r].add(&a[r])))?;
            let out = p.sum(p.map(|r, c| {
                let l = &ms[r].layers[i];
                let gate_up = matmul(c, &norm(c, &x[r], &l.mlp_norm, ms[r].eps)?, &l.gate_up)?;
                let gate = c.op("elementwise", budget::MAP, || gate_up.narrow(1, 0, cfg.mlp)?.silu())?;
                let up = gate_up.narrow(1, cfg.mlp, cfg.mlp)?;
                let hidden = c.op("elementwise", budget::EXACT_MAP, || gate.mul(&up))?;
                matmul(c, &hidden, &l.down)
            })?)?;
            x = p.map(|r, c| c.op("elementwise", budget::EXACT_MAP, || x[r].add(&out[r])))?;
        }
        p.map(|r, c| norm(c, &x[r], &ms[r].norm, ms[r].eps))
    }
}

/// `cos` and `sin` of `t * theta^(-2i / d)` for `t < seq`, `i < d/2`: `[seq, d/2]` in f32,
/// computed in f64 on the cpu.
fn rope_tables(seq: usize, d: usize, theta: f64) -> Result<(Tensor, Tensor)> {
    let angles: Vec<f64> =
        (0..seq).flat_map(|t| (0..d / 2).map(move |i| t as f64 * theta.powf(-2.0 * i as f64 / d as f64))).collect();
    let table = |f: fn(f64) -> f64| {
        let v: Vec<f32> = angles.iter().map(|&a| f(a) as f32).collect();
        Tensor::from_vec(v, [seq, d / 2], &Device::cpu())
    };
    Ok((table(f64::cos)?, table(f64::sin)?))
}

fn norm(c: &Ctx, x: &Tensor, w: &Tensor, eps: f64) -> Res<Tensor> {
    c.op("nn", budget::NN, || x.rms_norm(Some(w), eps))
}

/// Causal self-attention of `x` `(T, C)`: q and k rotated by RoPE, `kv_heads` key/value heads
/// each read by `heads / kv_heads` query heads (the fused op's grouped heads, no copies).
fn attention(
    c: &Ctx,
    cfg: &Config,
    m: &Model,
    l: &Layer,
    x: &Tensor,
    (cos, sin): (&Tensor, &Tensor),
    slot: Option<(&Slot, usize)>,
) -> Res<Tensor> {
    let (h, kv, d) = (cfg.heads, cfg.kv_heads, cfg.head_dim());
    // q and k of one block type and v of another (a Q4_K_M file's layers with v in q6_K): the
    // two products apart, not joined by a copy; else one product.
    let mixed = match &l.qkv {
        Weight::Cat(_) => l.qkv.cols(0, (h + kv) * d).ok().zip(l.qkv.cols((h + kv) * d, kv * d).ok()),
        _ => None,
    };
    let (qk, v) = match mixed {
        Some((wqk, wv)) => (heads(&matmul(c, x, &wqk)?, 0, h + kv, d)?, heads(&matmul(c, x, &wv)?, 0, kv, d)?),
        None => {
            let qkv = matmul(c, x, &l.qkv)?;
            (heads(&qkv, 0, h + kv, d)?, heads(&qkv, h + kv, kv, d)?)
        }
    };
    let rope = |x: Tensor| if m.interleaved { x.rope_i(cos, sin) } else { x.rope(cos, sin) };
    // q's and k's heads are neighbours in the projection: rotated by one op.
    let qk = c.op("attention", budget::ROPE, || rope(qk))?;
    let (q, k) = (qk.narrow(1, 0, h)?, qk.narrow(1, h, kv)?);
    let y = attend(c, &q, Kv::Apart(&k, &v), slot)?;
    matmul(c, &y, &l.out)
}
