//! A decoder-only transformer on every backend found, GPT-2-small-shaped (`--arch gpt2`) or
//! Llama-shaped (`--arch llama`), with deterministic random weights: forward time, tokens/s, the
//! greedy next tokens, and the largest difference from the cpu.
//!
//! ```text
//! cargo run --release --example transformer -- --layers 2 --width 64 --heads 4 --seq 16 --vocab 512
//! cargo run --release --example transformer -- --arch llama --heads 4 --kv-heads 2 --layers 2 --width 64 --seq 16 --vocab 512
//! ```

mod common;
// This example's alone; under common/ so that cargo does not take them for examples.
#[path = "common/gpt2.rs"]
mod gpt2;
#[path = "common/llama.rs"]
mod llama;

use common::{Ctx, Flags, Res, budget};
use rocm_wgpu_ops::{DType, Device, Tensor};
use std::process::ExitCode;

const USAGE: &str = "\
transformer: a decoder-only transformer with random weights, run on a fixed prompt: embedding
lookup, pre-norm causal self-attention (the fused scaled_dot_product_attention), an MLP, logits
against the tied embedding, the greedy next token.
  --arch A         gpt2 (learned positions, LayerNorm, GELU MLP, biases) or llama (RoPE,
                   RMSNorm, SwiGLU MLP, grouped KV heads, no biases) (default gpt2)
  --layers N       decoder layers (default 12)
  --width N        embedding width (default 768)
  --heads N        attention heads; must divide the width (default 12)
  --kv-heads N     key/value heads, llama only; must divide heads (default: heads)
  --mlp N          MLP hidden width (default 4 x width for gpt2; for llama 8/3 x width rounded
                   up to a multiple of 64, the same weights in its three matrices)
  --seq N          tokens per forward (default 128)
  --vocab N        vocabulary size (default 50257)
  --check-seq N    tokens of the prompt's prefix compared with the cpu (default min(seq, 16)):
                   the cpu reference is slow at full size, and with causal attention the logits
                   of a prefix are those of the whole prompt at its positions";

/// Weight init as GPT-2's: normal with std 0.02, residual projections scaled by 1/sqrt(2 layers).
const STD: f64 = 0.02;
const SEED: u64 = 2024;
const EPS: f64 = 1e-5;

#[derive(Clone, Copy, PartialEq)]
enum Arch {
    Gpt2,
    Llama,
}

#[derive(Clone, Copy)]
struct Config {
    arch: Arch,
    layers: usize,
    width: usize,
    heads: usize,
    kv_heads: usize,
    mlp: usize,
    seq: usize,
    vocab: usize,
}

impl Config {
    fn tag(&self) -> String {
        let Config { arch, layers, width, heads, kv_heads, mlp, seq, vocab } = self;
        let arch = if *arch == Arch::Gpt2 { "gpt2" } else { "llama" };
        format!(
            "arch={arch},layers={layers},width={width},heads={heads},kv_heads={kv_heads},mlp={mlp},seq={seq},vocab={vocab}"
        )
    }

    fn head_dim(&self) -> usize {
        self.width / self.heads
    }

    fn residual_std(&self) -> f64 {
        STD / (2.0 * self.layers as f64).sqrt()
    }
}

enum Model {
    Gpt2(gpt2::Model),
    Llama(llama::Model),
}

impl Model {
    fn random(c: &Config) -> Res<Model> {
        Ok(match c.arch {
            Arch::Gpt2 => Model::Gpt2(gpt2::Model::random(c)?),
            Arch::Llama => Model::Llama(llama::Model::random(c)?),
        })
    }

    fn to(&self, dev: &Device, dtype: DType) -> Res<Model> {
        let t = |x: &Tensor| x.to_device(dev)?.to_dtype(dtype);
        Ok(match self {
            Model::Gpt2(m) => Model::Gpt2(m.map(t)?),
            Model::Llama(m) => Model::Llama(m.map(t)?),
        })
    }

    /// The logits `(T, vocab)` of a prompt `(T)` and the greedy next token at every position.
    fn forward(&self, c: &Ctx, cfg: &Config, ids: &Tensor) -> Res<(Tensor, Tensor)> {
        let (x, wte) = match self {
            Model::Gpt2(m) => (m.forward(c, cfg, ids)?, &m.wte),
            Model::Llama(m) => (m.forward(c, cfg, ids)?, &m.embed),
        };
        let logits = c.op("matmul", budget::sum_of_products(cfg.width), || x.matmul(&wte.t()?))?;
        let next = c.op("reduce", budget::COPY, || logits.argmax([1]))?;
        Ok((logits, next))
    }
}

/// Draws weights on the cpu from the crate's generator, so every backend gets the same bits
/// (uploaded in f32, then cast on the device): `w(mean, std, shape)`.
fn weights() -> impl Fn(f64, f64, &[usize]) -> rocm_wgpu_ops::Result<Tensor> {
    let cpu = Device::cpu();
    cpu.set_seed(SEED);
    move |mean, std, shape| Tensor::randn(mean, std, shape, DType::F32, &cpu)
}

/// `x @ w` for `x` of `(tokens, k)`.
fn matmul(c: &Ctx, x: &Tensor, w: &Tensor) -> Res<Tensor> {
    let k = x.dims()[1];
    c.op("matmul", budget::sum_of_products(k), || x.matmul(w))
}

/// Columns `[first * d, (first + n) * d)` of `x` `(T, _)` as `n` heads `[1, n, T, d]` (a view).
fn heads(x: &Tensor, first: usize, n: usize, d: usize) -> rocm_wgpu_ops::Result<Tensor> {
    let t = x.dims()[0];
    x.narrow(1, first * d, n * d)?.reshape([t, n, d])?.permute([1, 0, 2])?.unsqueeze(0)
}

/// Causal attention of `q [1, H, T, D]` over `k`, `v` `[1, Hkv, T, D]` in one fused op, back to
/// `(T, H D)`.
fn attend(c: &Ctx, q: &Tensor, k: &Tensor, v: &Tensor) -> Res<Tensor> {
    let (h, t, d) = (q.dims()[1], q.dims()[2], q.dims()[3]);
    let y = c.op("attention", budget::attention(d, t), || q.scaled_dot_product_attention(k, v, None, true, None))?;
    c.op("copy", budget::COPY, || y.squeeze(0)?.permute([1, 0, 2])?.reshape([t, h * d]))
}

/// A fixed prompt: token ids spread over the vocabulary by a multiplicative hash.
fn prompt(c: &Config, len: usize, dev: &Device) -> Res<Tensor> {
    let ids: Vec<u32> = (0..len as u64).map(|i| ((i * 2654435761) % c.vocab as u64) as u32).collect();
    Ok(Tensor::from_vec(ids, [len], dev)?)
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
    let (logits, next) = m.to(&cpu, dtype)?.forward(&c, cfg, &prompt(cfg, check, &cpu)?)?;
    Ok(Reference { logits, next: next.to_vec()?, budget: c.take_budget() })
}

/// Times one backend in one dtype and compares it with the cpu; returns whether it fails.
fn run(f: &Flags, cfg: &Config, m: &Model, dev: &Device, dtype: DType, r: &Reference, check: usize) -> Res<bool> {
    println!("# {} {dtype}", dev.kind());
    let w = m.to(dev, dtype)?;
    let ids = prompt(cfg, cfg.seq, dev)?;
    let c = Ctx::new(dev, false);
    let (t, (_, next)) = common::time(dev, f.get("runs", 5)?, || w.forward(&c, cfg, &ids))?;
    let next = next.to_vec::<u32>()?;
    println!("#   tokens/s: {:.1}", cfg.seq as f64 / t.as_secs_f64());
    let last = &next[next.len().saturating_sub(8)..];
    println!("#   greedy next token: {:?}; at the last {} positions: {last:?}", next.last(), last.len());
    let c = Ctx::new(dev, false);
    let (logits, got) = w.forward(&c, cfg, &prompt(cfg, check, dev)?)?;
    let same = got.to_vec::<u32>()?.iter().zip(&r.next).filter(|(a, b)| a == b).count();
    println!("#   greedy tokens of the {check}-token check prefix equal to the cpu's: {same} of {check}");
    let fails = dev.kind() != rocm_wgpu_ops::BackendKind::Cpu
        && common::compare(&logits, &r.logits, dtype, r.budget, &format!("the [{check}, {}] logits", cfg.vocab))?;
    if f.profile {
        let c = Ctx::new(dev, true);
        w.forward(&c, cfg, &ids)?;
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
    let known = ["arch", "layers", "width", "heads", "kv-heads", "mlp", "seq", "vocab", "check-seq"];
    let f = Flags::parse(USAGE, &known)?;
    let arch = match f.get("arch", "gpt2".to_string())?.as_str() {
        "gpt2" => Arch::Gpt2,
        "llama" => Arch::Llama,
        a => return Err(format!("--arch {a}: expected gpt2 or llama").into()),
    };
    let (width, heads): (usize, usize) = (f.get("width", 768)?, f.get("heads", 12)?);
    let mlp = match arch {
        Arch::Gpt2 => 4 * width,
        Arch::Llama => (8 * width).div_ceil(3 * 64) * 64,
    };
    let cfg = Config {
        arch,
        layers: f.get("layers", 12)?,
        width,
        heads,
        kv_heads: f.get("kv-heads", heads)?,
        mlp: f.get("mlp", mlp)?,
        seq: f.get("seq", 128)?,
        vocab: f.get("vocab", 50257)?,
    };
    let heads_ok = cfg.heads > 0 && cfg.width.is_multiple_of(cfg.heads);
    let kv_ok = cfg.kv_heads > 0
        && cfg.heads.is_multiple_of(cfg.kv_heads)
        && (arch == Arch::Llama || cfg.kv_heads == cfg.heads);
    if !heads_ok || !kv_ok || cfg.seq == 0 || cfg.vocab == 0 {
        return Err(format!(
            "need heads dividing width, kv-heads dividing heads (gpt2: equal), seq and vocab above 0: {}",
            cfg.tag()
        )
        .into());
    }
    if arch == Arch::Llama && !cfg.head_dim().is_multiple_of(2) {
        return Err(format!("RoPE needs an even head size width / heads: {}", cfg.tag()).into());
    }
    let check = f.get("check-seq", cfg.seq.min(16))?.clamp(1, cfg.seq);
    let devices = f.devices()?;
    println!("# transformer {}; compared with the cpu on the first {check} tokens", cfg.tag());
    let model = Model::random(&cfg)?;
    let refs = f.dtypes()?.into_iter().map(|d| Ok((d, reference(&cfg, &model, d, check)?))).collect::<Res<Vec<_>>>()?;
    common::each(&devices, &refs, |dev, dtype, r| run(&f, &cfg, &model, dev, dtype, r, check))
}
