//! The Llama-shaped decoder of examples/transformer.rs: RMSNorm, RoPE on q and k, grouped KV
//! heads, a SwiGLU MLP, no biases, the lm head tied to the embedding.

use crate::common::{Ctx, Res, budget};
use crate::{Cache, Config, EPS, STD, Weight, attend, heads, matmul, weights};
use rocm_wgpu_ops::{Device, Result, Tensor};

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
    /// RoPE's `[positions, D/2]` tables, built once; tokens at positions `p..p + T` read
    /// those rows.
    cos: Tensor,
    sin: Tensor,
}

impl Model {
    pub fn random(c: &Config) -> Result<Model> {
        let w = weights();
        let resid = c.residual_std();
        let qkv = (c.heads + 2 * c.kv_heads) * c.head_dim();
        let q = |w: Tensor| Weight::new(w, c.quant);
        let layers = (0..c.layers)
            .map(|_| {
                Ok(Layer {
                    attn_norm: w(1.0, STD, &[c.width])?,
                    qkv: q(w(0.0, STD, &[c.width, qkv])?)?,
                    out: q(w(0.0, resid, &[c.width, c.width])?)?,
                    mlp_norm: w(1.0, STD, &[c.width])?,
                    gate_up: q(w(0.0, STD, &[c.width, 2 * c.mlp])?)?,
                    down: q(w(0.0, resid, &[c.mlp, c.width])?)?,
                })
            })
            .collect::<Result<_>>()?;
        let (cos, sin) = rope_tables(c.positions(), c.head_dim())?;
        Ok(Model { embed: w(0.0, STD, &[c.vocab, c.width])?, layers, norm: w(1.0, STD, &[c.width])?, cos, sin })
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
        Ok(Model { embed: t(&self.embed)?, layers, norm: t(&self.norm)?, cos: t(&self.cos)?, sin: t(&self.sin)? })
    }

    /// The final normed hidden states `(T, C)` of tokens `(T)` (after those `cache` holds).
    pub fn forward(&self, c: &Ctx, cfg: &Config, ids: &Tensor, cache: Option<&Cache>) -> Res<Tensor> {
        let (t, pos) = (ids.dims()[0], Cache::pos(cache));
        let (cos, sin) = (self.cos.narrow(0, pos, t)?, self.sin.narrow(0, pos, t)?);
        let mut x = c.op("index", budget::COPY, || self.embed.index_select(ids, 0))?;
        for (i, l) in self.layers.iter().enumerate() {
            let rope = (&cos, &sin);
            let a = attention(c, cfg, l, &norm(c, &x, &l.attn_norm)?, rope, cache.map(|k| (k, i)))?;
            x = c.op("elementwise", budget::EXACT_MAP, || x.add(&a))?;
            let gate_up = matmul(c, &norm(c, &x, &l.mlp_norm)?, &l.gate_up)?;
            let gate = c.op("elementwise", budget::MAP, || gate_up.narrow(1, 0, cfg.mlp)?.silu())?;
            let hidden = c.op("elementwise", budget::EXACT_MAP, || gate.mul(&gate_up.narrow(1, cfg.mlp, cfg.mlp)?))?;
            let out = matmul(c, &hidden, &l.down)?;
            x = c.op("elementwise", budget::EXACT_MAP, || x.add(&out))?;
        }
        norm(c, &x, &self.norm)
    }
}

/// `cos` and `sin` of `t * THETA^(-2i / d)` for `t < seq`, `i < d/2`: `[seq, d/2]` in f32,
/// computed in f64 on the cpu.
fn rope_tables(seq: usize, d: usize) -> Result<(Tensor, Tensor)> {
    let angles: Vec<f64> =
        (0..seq).flat_map(|t| (0..d / 2).map(move |i| t as f64 * THETA.powf(-2.0 * i as f64 / d as f64))).collect();
    let table = |f: fn(f64) -> f64| {
        let v: Vec<f32> = angles.iter().map(|&a| f(a) as f32).collect();
        Tensor::from_vec(v, [seq, d / 2], &Device::cpu())
    };
    Ok((table(f64::cos)?, table(f64::sin)?))
}

fn norm(c: &Ctx, x: &Tensor, w: &Tensor) -> Res<Tensor> {
    c.op("nn", budget::NN, || x.rms_norm(Some(w), EPS))
}

/// Causal self-attention of `x` `(T, C)`: q and k rotated by RoPE, `kv_heads` key/value heads
/// each read by `heads / kv_heads` query heads (the fused op's grouped heads, no copies).
fn attention(
    c: &Ctx,
    cfg: &Config,
    l: &Layer,
    x: &Tensor,
    (cos, sin): (&Tensor, &Tensor),
    cache: Option<(&Cache, usize)>,
) -> Res<Tensor> {
    let (h, kv, d) = (cfg.heads, cfg.kv_heads, cfg.head_dim());
    let qkv = matmul(c, x, &l.qkv)?;
    let q = c.op("attention", budget::ROPE, || heads(&qkv, 0, h, d)?.rope(cos, sin))?;
    let k = c.op("attention", budget::ROPE, || heads(&qkv, h, kv, d)?.rope(cos, sin))?;
    let y = attend(c, &q, &k, &heads(&qkv, h + kv, kv, d)?, cache)?;
    matmul(c, &y, &l.out)
}
