//! The GPT-2 decoder of examples/transformer.rs: learned positions, LayerNorm, fused qkv with
//! biases, GELU MLP.

use crate::common::{Ctx, Res, budget};
use crate::parallel::{Ranks, first_only, split};
use crate::{Config, EPS, Kv, STD, Slot, Weight, attend, heads, matmul, weights};
use rocm_wgpu_ops::{Device, Error, Result, Tensor};

/// A norm's weight and bias.
type Affine = (Tensor, Tensor);

/// A matmul weight and its bias.
type Linear = (Weight, Tensor);

pub struct Layer {
    ln1: Affine,
    qkv: Linear,
    proj: Linear,
    ln2: Affine,
    fc: Linear,
    fc2: Linear,
}

pub struct Model {
    pub wte: Tensor,
    wpe: Tensor,
    layers: Vec<Layer>,
    ln_f: Affine,
}

impl Model {
    pub fn random(c: &Config) -> Result<Model> {
        let w = weights();
        let resid = c.residual_std();
        let norm = || Ok::<_, rocm_wgpu_ops::Error>((w(1.0, STD, &[c.width])?, w(0.0, STD, &[c.width])?));
        let q = |w: Tensor| Weight::new(w, c.quant.uniform());
        let layers = (0..c.layers)
            .map(|_| {
                Ok(Layer {
                    ln1: norm()?,
                    qkv: (q(w(0.0, STD, &[c.width, 3 * c.width])?)?, w(0.0, STD, &[3 * c.width])?),
                    proj: (q(w(0.0, resid, &[c.width, c.width])?)?, w(0.0, STD, &[c.width])?),
                    ln2: norm()?,
                    fc: (q(w(0.0, STD, &[c.width, c.mlp])?)?, w(0.0, STD, &[c.mlp])?),
                    fc2: (q(w(0.0, resid, &[c.mlp, c.width])?)?, w(0.0, STD, &[c.width])?),
                })
            })
            .collect::<Result<_>>()?;
        Ok(Model {
            wte: w(0.0, STD, &[c.vocab, c.width])?,
            wpe: w(0.0, STD, &[c.positions(), c.width])?,
            layers,
            ln_f: norm()?,
        })
    }

    /// Every weight through `t` (to `dev`, to a dtype); blocks copied to `dev` as they are.
    pub fn map(&self, dev: &Device, t: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Model> {
        let p = |(a, b): &Affine| Ok::<_, rocm_wgpu_ops::Error>((t(a)?, t(b)?));
        let lin = |(a, b): &Linear| Ok::<_, rocm_wgpu_ops::Error>((a.map(dev, &t)?, t(b)?));
        let layers = self
            .layers
            .iter()
            .map(|l| {
                Ok(Layer {
                    ln1: p(&l.ln1)?,
                    qkv: lin(&l.qkv)?,
                    proj: lin(&l.proj)?,
                    ln2: p(&l.ln2)?,
                    fc: lin(&l.fc)?,
                    fc2: lin(&l.fc2)?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Model { wte: t(&self.wte)?, wpe: t(&self.wpe)?, layers, ln_f: p(&self.ln_f)? })
    }

    /// Rank `r` of `n`'s shard for tensor parallelism: q, k, v and fc by columns (heads, hidden
    /// units), proj and fc2 by rows with their biases on rank 0 (zeros elsewhere, so the sum of
    /// the ranks' outputs adds them once); embeddings and norms whole. Dense weights only.
    pub fn shard(&self, cfg: &Config, r: usize, n: usize) -> Result<Model> {
        let (c, m) = (cfg.width / n, cfg.mlp / n);
        let qkv = [(r * c, c), (cfg.width + r * c, c), (2 * cfg.width + r * c, c)];
        let cols = |(w, b): &Linear, at: &[(usize, usize)]| Ok::<_, Error>((w.split(1, at)?, split(b, 0, at)?));
        let rows = |(w, b): &Linear, at: (usize, usize)| Ok::<_, Error>((w.split(0, &[at])?, first_only(b, r)?));
        let layers = self
            .layers
            .iter()
            .map(|l| {
                Ok(Layer {
                    ln1: l.ln1.clone(),
                    qkv: cols(&l.qkv, &qkv)?,
                    proj: rows(&l.proj, (r * c, c))?,
                    ln2: l.ln2.clone(),
                    fc: cols(&l.fc, &[(r * m, m)])?,
                    fc2: rows(&l.fc2, (r * m, m))?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Model { wte: self.wte.clone(), wpe: self.wpe.clone(), layers, ln_f: self.ln_f.clone() })
    }

    /// The final normed hidden states `(T, C)` of tokens `(T)` on every rank, at positions
    /// `0..T` or at those of the rank's cache slot (`slots[r]`, if any): rank `r` runs shard
    /// `ms[r]`; the attention's and the MLP's outputs are summed over the ranks before the
    /// residual adds.
    pub fn forward(ms: &[&Model], p: &Ranks, cfg: &Config, ids: &[Tensor], slots: &[Slot]) -> Res<Vec<Tensor>> {
        let t = ids[0].dims()[0];
        let mut x = p.map(|r, c| {
            let tok = c.op("index", budget::COPY, || ms[r].wte.index_select(&ids[r], 0))?;
            let pos = match slots.get(r) {
                None => ms[r].wpe.narrow(0, 0, t)?,
                Some(s) => c.op("index", budget::COPY, || ms[r].wpe.index_select(&s.at, 0))?,
            };
            c.op("elementwise", budget::EXACT_MAP, || tok.add(&pos))
        })?;
        for i in 0..ms[0].layers.len() {
            let a = p.sum(p.map(|r, c| {
                let l = &ms[r].layers[i];
                attention(c, cfg, l, &norm(c, &x[r], &l.ln1)?, slots.get(r).map(|s| (s, i)))
            })?)?;
            x = p.map(|r, c| c.op("elementwise", budget::EXACT_MAP, || x[r].add(&a[r])))?;
            let out = p.sum(p.map(|r, c| {
                let l = &ms[r].layers[i];
                let hidden = linear(c, &norm(c, &x[r], &l.ln2)?, &l.fc)?;
                let hidden = c.op("elementwise", budget::MAP, || hidden.gelu())?;
                linear(c, &hidden, &l.fc2)
            })?)?;
            x = p.map(|r, c| c.op("elementwise", budget::EXACT_MAP, || x[r].add(&out[r])))?;
        }
        p.map(|r, c| norm(c, &x[r], &ms[r].ln_f))
    }
}

/// `x @ w + b` for `x` of `(tokens, k)`.
fn linear(c: &Ctx, x: &Tensor, (w, b): &Linear) -> Res<Tensor> {
    let y = matmul(c, x, w)?;
    c.op("elementwise", budget::EXACT_MAP, || y.add(b))
}

fn norm(c: &Ctx, x: &Tensor, (w, b): &Affine) -> Res<Tensor> {
    c.op("nn", budget::NN, || x.layer_norm(Some(w), Some(b), EPS))
}

/// Causal self-attention of `x` `(T, C)`: q, and k and v together, as head views of one
/// projection (no copies).
fn attention(c: &Ctx, cfg: &Config, l: &Layer, x: &Tensor, slot: Option<(&Slot, usize)>) -> Res<Tensor> {
    let (h, d) = (cfg.heads, cfg.head_dim());
    let qkv = linear(c, x, &l.qkv)?;
    let (q, kv) = (heads(&qkv, 0, h, d)?, heads(&qkv, h, 2 * h, d)?);
    let y = attend(c, &q, Kv::Joint(&kv), slot)?;
    linear(c, &y, &l.proj)
}
