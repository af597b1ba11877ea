//! A GPT-2-small-shaped decoder on every backend found, with deterministic random weights:
//! forward time, tokens/s, the greedy next tokens, and the largest difference from the cpu.
//!
//! ```text
//! cargo run --release --example transformer -- --layers 2 --width 64 --heads 4 --seq 16 --vocab 512
//! ```

mod common;

use common::{Ctx, Flags, Res, budget};
use rocm_wgpu_ops::{DType, Device, Tensor};
use std::process::ExitCode;

const USAGE: &str = "\
transformer: a GPT-2-small-shaped decoder (embedding lookup, pre-norm attention with a causal
mask, GELU MLP, logits against the tied embedding, greedy next token) with random weights.
  --layers N       decoder layers (default 12)
  --width N        embedding width (default 768)
  --heads N        attention heads; must divide the width (default 12)
  --mlp N          MLP hidden width (default 4 x width)
  --seq N          tokens per forward (default 128)
  --vocab N        vocabulary size (default 50257)
  --check-seq N    tokens of the prompt's prefix compared with the cpu (default min(seq, 16)):
                   the cpu reference is slow at full size, and with a causal mask the logits
                   of a prefix are those of the whole prompt at its positions";

/// Weight init as GPT-2's: normal with std 0.02, residual projections scaled by 1/sqrt(2 layers).
const STD: f64 = 0.02;
const SEED: u64 = 2024;
const EPS: f64 = 1e-5;

#[derive(Clone, Copy)]
struct Config {
    layers: usize,
    width: usize,
    heads: usize,
    mlp: usize,
    seq: usize,
    vocab: usize,
}

impl Config {
    fn tag(&self) -> String {
        let Config { layers, width, heads, mlp, seq, vocab } = self;
        format!("layers={layers},width={width},heads={heads},mlp={mlp},seq={seq},vocab={vocab}")
    }
}

struct Layer {
    ln1: (Tensor, Tensor),
    qkv: (Tensor, Tensor),
    proj: (Tensor, Tensor),
    ln2: (Tensor, Tensor),
    fc: (Tensor, Tensor),
    fc2: (Tensor, Tensor),
}

struct Model {
    wte: Tensor,
    wpe: Tensor,
    layers: Vec<Layer>,
    ln_f: (Tensor, Tensor),
}

impl Model {
    /// Draws every weight on the cpu from the crate's generator, so every backend gets the
    /// same bits (uploaded in f32, then cast on the device).
    fn random(c: &Config) -> Res<Model> {
        let cpu = Device::cpu();
        cpu.set_seed(SEED);
        let w = |mean: f64, std: f64, shape: &[usize]| Tensor::randn(mean, std, shape, DType::F32, &cpu);
        let resid = STD / (2.0 * c.layers as f64).sqrt();
        let norm = || Ok::<_, rocm_wgpu_ops::Error>((w(1.0, STD, &[c.width])?, w(0.0, STD, &[c.width])?));
        let layers = (0..c.layers)
            .map(|_| {
                Ok(Layer {
                    ln1: norm()?,
                    qkv: (w(0.0, STD, &[c.width, 3 * c.width])?, w(0.0, STD, &[3 * c.width])?),
                    proj: (w(0.0, resid, &[c.width, c.width])?, w(0.0, STD, &[c.width])?),
                    ln2: norm()?,
                    fc: (w(0.0, STD, &[c.width, c.mlp])?, w(0.0, STD, &[c.mlp])?),
                    fc2: (w(0.0, resid, &[c.mlp, c.width])?, w(0.0, STD, &[c.width])?),
                })
            })
            .collect::<rocm_wgpu_ops::Result<_>>()?;
        Ok(Model {
            wte: w(0.0, STD, &[c.vocab, c.width])?,
            wpe: w(0.0, STD, &[c.seq, c.width])?,
            layers,
            ln_f: norm()?,
        })
    }

    fn to(&self, dev: &Device, dtype: DType) -> Res<Model> {
        let t = |x: &Tensor| x.to_device(dev)?.to_dtype(dtype);
        let p = |(a, b): &(Tensor, Tensor)| Ok::<_, rocm_wgpu_ops::Error>((t(a)?, t(b)?));
        let layers = self
            .layers
            .iter()
            .map(|l| {
                Ok(Layer {
                    ln1: p(&l.ln1)?,
                    qkv: p(&l.qkv)?,
                    proj: p(&l.proj)?,
                    ln2: p(&l.ln2)?,
                    fc: p(&l.fc)?,
                    fc2: p(&l.fc2)?,
                })
            })
            .collect::<rocm_wgpu_ops::Result<_>>()?;
        Ok(Model { wte: t(&self.wte)?, wpe: t(&self.wpe)?, layers, ln_f: p(&self.ln_f)? })
    }
}

/// A fixed prompt: token ids spread over the vocabulary by a multiplicative hash.
fn prompt(c: &Config, len: usize, dev: &Device) -> Res<Tensor> {
    let ids: Vec<u32> = (0..len as u64).map(|i| ((i * 2654435761) % c.vocab as u64) as u32).collect();
    Ok(Tensor::from_vec(ids, [len], dev)?)
}

/// `mask[i][j] = j <= i`: a position attends to itself and to those before it.
fn causal_mask(len: usize, dev: &Device) -> Res<Tensor> {
    let rows = Tensor::arange(0u32, len as u32, dev)?.reshape([len, 1])?;
    let cols = Tensor::arange(0u32, len as u32, dev)?.reshape([1, len])?;
    Ok(rows.ge(&cols)?)
}

/// `x @ w + b` for `x` of `(tokens, k)`.
fn linear(c: &Ctx, x: &Tensor, (w, b): &(Tensor, Tensor)) -> Res<Tensor> {
    let k = x.dims()[1];
    let y = c.op("matmul", budget::sum_of_products(k), || x.matmul(w))?;
    c.op("elementwise", budget::EXACT_MAP, || y.add(b))
}

fn norm(c: &Ctx, x: &Tensor, (w, b): &(Tensor, Tensor)) -> Res<Tensor> {
    c.op("nn", budget::NN, || x.layer_norm(Some(w), Some(b), EPS))
}

/// Causal self-attention of `x` `(T, C)`: heads split by views, `softmax(q kᵀ / sqrt(d)) v`.
fn attention(c: &Ctx, cfg: &Config, l: &Layer, x: &Tensor, mask: &Tensor) -> Res<Tensor> {
    let (t, w, h) = (x.dims()[0], cfg.width, cfg.heads);
    let d = w / h;
    let qkv = linear(c, x, &l.qkv)?;
    // (T, 3C) -> three (T, H, D) views -> (H, T, D), and k as (H, D, T): no copies.
    let head = |i: usize| qkv.narrow(1, i * w, w)?.reshape([t, h, d]);
    let q = c.op("copy", budget::COPY, || head(0)?.permute([1, 0, 2]))?;
    let k = c.op("copy", budget::COPY, || head(1)?.permute([1, 2, 0]))?;
    let v = c.op("copy", budget::COPY, || head(2)?.permute([1, 0, 2]))?;
    let att = c.op("matmul", budget::sum_of_products(d), || q.matmul(&k))?;
    let att = c.op("elementwise", budget::EXACT_MAP, || att.affine(1.0 / (d as f64).sqrt(), 0.0))?;
    let neg = Tensor::full(f64::NEG_INFINITY, [1], x.dtype(), x.device())?;
    let att = c.op("elementwise", budget::COPY, || mask.where_cond(&att, &neg))?;
    let p = c.op("nn", budget::NN, || att.softmax(2))?;
    let y = c.op("matmul", budget::sum_of_products(t), || p.matmul(&v))?;
    let y = c.op("copy", budget::COPY, || y.permute([1, 0, 2])?.reshape([t, w]))?;
    linear(c, &y, &l.proj)
}

/// The logits `(T, vocab)` of a prompt `(T)` and the greedy next token at every position.
fn forward(c: &Ctx, cfg: &Config, m: &Model, ids: &Tensor, mask: &Tensor) -> Res<(Tensor, Tensor)> {
    let t = ids.dims()[0];
    let tok = c.op("index", budget::COPY, || m.wte.index_select(ids, 0))?;
    let mut x = c.op("elementwise", budget::EXACT_MAP, || tok.add(&m.wpe.narrow(0, 0, t)?))?;
    for l in &m.layers {
        let a = attention(c, cfg, l, &norm(c, &x, &l.ln1)?, mask)?;
        x = c.op("elementwise", budget::EXACT_MAP, || x.add(&a))?;
        let hidden = linear(c, &norm(c, &x, &l.ln2)?, &l.fc)?;
        let hidden = c.op("elementwise", budget::MAP, || hidden.gelu())?;
        let out = linear(c, &hidden, &l.fc2)?;
        x = c.op("elementwise", budget::EXACT_MAP, || x.add(&out))?;
    }
    let x = norm(c, &x, &m.ln_f)?;
    let logits = c.op("matmul", budget::sum_of_products(cfg.width), || x.matmul(&m.wte.t()?))?;
    let next = c.op("reduce", budget::COPY, || logits.argmax([1]))?;
    Ok((logits, next))
}

/// The cpu's logits and budget for the check prompt, in `dtype`.
struct Reference {
    logits: Tensor,
    next: Vec<u32>,
    budget: f64,
}

fn reference(cfg: &Config, m: &Model, dtype: DType, check: usize) -> Res<Reference> {
    let cpu = Device::cpu();
    let c = Ctx::new(&cpu, false);
    let (logits, next) = forward(&c, cfg, &m.to(&cpu, dtype)?, &prompt(cfg, check, &cpu)?, &causal_mask(check, &cpu)?)?;
    Ok(Reference { logits, next: next.to_vec()?, budget: c.take_budget() })
}

/// Times one backend in one dtype and compares it with the cpu; returns whether it fails.
fn run(f: &Flags, cfg: &Config, m: &Model, dev: &Device, dtype: DType, r: &Reference, check: usize) -> Res<bool> {
    println!("# {} {dtype}", dev.kind());
    let w = m.to(dev, dtype)?;
    let (ids, mask) = (prompt(cfg, cfg.seq, dev)?, causal_mask(cfg.seq, dev)?);
    let c = Ctx::new(dev, false);
    let (t, (_, next)) = common::time(dev, f.get("runs", 5)?, || forward(&c, cfg, &w, &ids, &mask))?;
    let next = next.to_vec::<u32>()?;
    println!("#   tokens/s: {:.1}", cfg.seq as f64 / t.as_secs_f64());
    let last = &next[next.len().saturating_sub(8)..];
    println!("#   greedy next token: {:?}; at the last {} positions: {last:?}", next.last(), last.len());
    let c = Ctx::new(dev, false);
    let (logits, got) = forward(&c, cfg, &w, &prompt(cfg, check, dev)?, &causal_mask(check, dev)?)?;
    let same = got.to_vec::<u32>()?.iter().zip(&r.next).filter(|(a, b)| a == b).count();
    println!("#   greedy tokens of the {check}-token check prefix equal to the cpu's: {same} of {check}");
    let fails = dev.kind() != rocm_wgpu_ops::BackendKind::Cpu
        && common::compare(&logits, &r.logits, dtype, r.budget, &format!("the [{check}, {}] logits", cfg.vocab))?;
    if f.profile {
        let c = Ctx::new(dev, true);
        forward(&c, cfg, &w, &ids, &mask)?;
        c.print_profile();
    }
    common::model_line("transformer", dev, dtype, t, &cfg.tag());
    Ok(fails)
}

fn main() -> ExitCode {
    common::exit("transformer", main_())
}

/// Whether every f32 comparison passed.
fn main_() -> Res<bool> {
    let f = Flags::parse(USAGE, &["layers", "width", "heads", "mlp", "seq", "vocab", "check-seq"])?;
    let width = f.get("width", 768)?;
    let cfg = Config {
        layers: f.get("layers", 12)?,
        width,
        heads: f.get("heads", 12)?,
        mlp: f.get("mlp", 4 * width)?,
        seq: f.get("seq", 128)?,
        vocab: f.get("vocab", 50257)?,
    };
    if cfg.heads == 0 || !cfg.width.is_multiple_of(cfg.heads) || cfg.seq == 0 || cfg.vocab == 0 {
        return Err(format!("need heads dividing width, seq and vocab above 0: {}", cfg.tag()).into());
    }
    let check = f.get("check-seq", cfg.seq.min(16))?.clamp(1, cfg.seq);
    let devices = f.devices()?;
    println!("# transformer {}; compared with the cpu on the first {check} tokens", cfg.tag());
    let model = Model::random(&cfg)?;
    let refs = f.dtypes()?.into_iter().map(|d| Ok((d, reference(&cfg, &model, d, check)?))).collect::<Res<Vec<_>>>()?;
    common::each(&devices, &refs, |dev, dtype, r| run(&f, &cfg, &model, dev, dtype, r, check))
}
