//! A decoder-only transformer on every backend found, GPT-2-small-shaped (`--arch gpt2`) or
//! Llama-shaped (`--arch llama`), with deterministic random weights: forward time, tokens/s, the
//! greedy next tokens, and the largest difference from the cpu; with `--decode N`, N tokens
//! generated one at a time through a KV cache; with `--quant TYPE`, its matmul weights as ggml
//! blocks multiplied by `QTensor::qmatmul`; with `--gguf-out PATH` the llama's weights written
//! as a GGUF file as llama.cpp lays one out, and with `--gguf PATH` a llama GGUF run instead of
//! random weights.
//!
//! ```text
//! cargo run --release --example transformer -- --layers 2 --width 64 --heads 4 --seq 16 --vocab 512
//! cargo run --release --example transformer -- --arch llama --heads 4 --kv-heads 2 --layers 2 --width 64 --seq 16 --vocab 512 --decode 8
//! cargo run --release --example transformer -- --arch llama --quant q4_k_m --gguf-out llama.gguf
//! cargo run --release --example transformer -- --gguf llama.gguf --decode 64
//! ```

mod common;
#[path = "common/config.rs"]
mod config;
// This example's alone; under common/ so that cargo does not take them for examples.
#[path = "common/gpt2.rs"]
mod gpt2;
#[path = "common/llama.rs"]
mod llama;
#[path = "common/parallel.rs"]
mod parallel;
#[path = "common/weight.rs"]
mod weight;

use common::{Ctx, Flags, Res, budget};
use config::{Arch, Config, Quant, Role, check, config};
use parallel::Ranks;
use rocm_wgpu_ops::{DType, Device, Tensor};
use std::process::ExitCode;
pub use weight::{Weight, matmul};

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
                   of a prefix are those of the whole prompt at its positions; 0: no
                   comparison (a large model from --gguf, whose cpu forward takes minutes)
  --decode N       after the prompt, N greedy tokens generated one at a time, each fed back on
                   the device, with a KV cache (preallocated per layer, written in place at
                   positions held on the device, attended through a mask): tokens/s op by op
                   and, on a GPU, with one step captured and replayed per token (Plan::run);
                   checked against the cpu generating from the check prefix, each step fed the
                   cpu's token (default 0)
  --quant TYPE     the matmul weights (not the embedding, norms or biases) as ggml blocks of
                   TYPE (q4_0, q4_1, q5_0, q5_1, q8_0, q2_K ... q6_K: quantized on the cpu by
                   ggml's reference quantizers), or q4_k_m (llama only: llama.cpp's Q4_K_M mix,
                   q6_K for v and the MLP's down projection in a third of the layers, q4_K
                   elsewhere), multiplied by QTensor::qmatmul (its matrix-vector kernel for up
                   to 8 rows: decoding); the cpu reference multiplies by the same blocks
                   (default: dense)
  --activations A  exact (default), or q8: quantized weights (--quant, --gguf) multiply x rounded
                   to q8 blocks where up to 8 rows (QTensor::qmatmul_q8: integer dot products
                   for q4_0, q8_0 and q4_K), the cpu reference too
  --gguf-out PATH  llama only: also write the weights to PATH as a GGUF file as llama.cpp lays
                   out a llama (its tensor names; q and k rows permuted for interleaved RoPE),
                   read it back and check the read model's logits against the written one's
  --gguf PATH      run the llama-architecture GGUF at PATH (llama.cpp's names and metadata;
                   any block types the crate has) instead of random weights: the width, heads,
                   layers, MLP and vocabulary are the file's; the prompt is token ids as above
                   or --prompt's, the tokens --decode generates also printed as text through
                   the file's vocabulary (tokenizer.ggml.tokens)
  --prompt TEXT    with --gguf: the prompt, tokenized as llama.cpp tokenizes for a SentencePiece
                   vocabulary (tokenizer.ggml.model llama; the BOS token first), replacing
                   --seq
  --devices LIST   also the forward split over these devices of each backend (ordinals, e.g.
                   0,1; wgpu: adapters, where 0,0 is two devices on one): tensor parallel,
                   heads and MLP columns split, one all-reduce (a Group: NCCL, RCCL, else the
                   host) after the attention and after the MLP of each layer; timed, and checked
                   against the cpu as the one-device forward is (dense weights only)";

/// Weight init as GPT-2's: normal with std 0.02, residual projections scaled by 1/sqrt(2 layers).
const STD: f64 = 0.02;
const SEED: u64 = 2024;
const EPS: f64 = 1e-5;

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
            Model::Gpt2(m) => Model::Gpt2(m.map(dev, t)?),
            Model::Llama(m) => Model::Llama(m.map(dev, t)?),
        })
    }

    /// The logits `(T, vocab)` of tokens `(T)` and the greedy next token at every position;
    /// with a cache, the tokens follow the ones it holds (and are added to it).
    fn forward(&self, c: &Ctx, cfg: &Config, ids: &Tensor, cache: Option<&mut Cache>) -> Res<(Tensor, Tensor)> {
        let Some(cache) = cache else { return self.step(c, cfg, ids, None) };
        let t = ids.dims()[0];
        let at: Vec<u32> = (cache.len..cache.len + t).map(|p| p as u32).collect();
        let at = Tensor::from_vec(at, [t], ids.device())?;
        let out = self.step(c, cfg, ids, Some((&at, cache)))?;
        cache.len += t;
        Ok(out)
    }

    /// [`Model::forward`] with the tokens' positions `[T]` (u32) as data on the device, so that
    /// a captured step replays at whatever position it is given.
    fn step(&self, c: &Ctx, cfg: &Config, ids: &Tensor, at: Option<(&Tensor, &Cache)>) -> Res<(Tensor, Tensor)> {
        let one = Ranks { ctxs: std::slice::from_ref(c), group: None };
        let slots = at.map(|(at, cache)| cache.slot(c, at)).transpose()?;
        let mut out = Model::forward_ranks(&[self], &one, cfg, std::slice::from_ref(ids), slots.as_slice())?;
        Ok(out.remove(0))
    }

    /// [`Model::forward`] of every rank, rank `r` running shard `ms[r]` on the tokens `ids[r]`
    /// (written to and read from its cache `slots[r]`, if any).
    fn forward_ranks(
        ms: &[&Model],
        p: &Ranks,
        cfg: &Config,
        ids: &[Tensor],
        slots: &[Slot],
    ) -> Res<Vec<(Tensor, Tensor)>> {
        // The final hidden states, and the embedding the logits are taken against unless a
        // file brought a head of its own.
        let (x, heads): (_, Vec<(&Tensor, Option<&Weight>)>) = match ms[0] {
            Model::Gpt2(_) => {
                let ms: Vec<&gpt2::Model> =
                    ms.iter().filter_map(|m| if let Model::Gpt2(m) = m { Some(m) } else { None }).collect();
                (gpt2::Model::forward(&ms, p, cfg, ids, slots)?, ms.iter().map(|m| (&m.wte, None)).collect())
            }
            Model::Llama(_) => {
                let ms: Vec<&llama::Model> =
                    ms.iter().filter_map(|m| if let Model::Llama(m) = m { Some(m) } else { None }).collect();
                (
                    llama::Model::forward(&ms, p, cfg, ids, slots)?,
                    ms.iter().map(|m| (&m.embed, m.head.as_ref())).collect(),
                )
            }
        };
        p.map(|r, c| {
            let logits = match heads[r] {
                (_, Some(head)) => matmul(c, &x[r], head)?,
                (wte, None) => c.op("matmul", budget::sum_of_products(cfg.width), || x[r].matmul(&wte.t()?))?,
            };
            let next = c.op("reduce", budget::COPY, || logits.argmax([1]))?;
            Ok((logits, next))
        })
    }

    /// Rank `r` of `n`'s shard (see the archs' `shard`).
    fn shard(&self, cfg: &Config, r: usize, n: usize) -> rocm_wgpu_ops::Result<Model> {
        Ok(match self {
            Model::Gpt2(m) => Model::Gpt2(m.shard(cfg, r, n)?),
            Model::Llama(m) => Model::Llama(m.shard(cfg, r, n)?),
        })
    }
}

/// Keys and values of every position, per layer one tensor `[1, 2 Hkv, positions, D]` (the keys'
/// heads, then the values'), allocated once, the first `len` filled. A forward with a cache
/// writes its tokens' keys and values at their positions in place (`scatter_set`: one write where
/// they come as one view, as GPT-2's projection lays them out) and attends over the whole cache,
/// masked to the positions each token may see: positions and mask are data on the device, so
/// that one captured step (`Device::capture`) replays at every position.
pub struct Cache {
    kv: Vec<Tensor>,
    len: usize,
    /// `[1, 1, 1, positions]` (u32): `0..positions`, the keys' positions.
    keys: Tensor,
}

/// A forward's tokens in a cache: their positions `at` `[T]` (u32) and `mask` `[1, 1, T,
/// positions]` (u8), the cache positions each token sees (its own and those before it).
pub struct Slot<'a> {
    cache: &'a Cache,
    at: Tensor,
    mask: Tensor,
}

impl Cache {
    fn new(cfg: &Config, dev: &Device, dtype: DType) -> Res<Cache> {
        let (p, shape) = (cfg.positions(), [1, 2 * cfg.kv_heads, cfg.positions(), cfg.head_dim()]);
        let kv = (0..cfg.layers).map(|_| Tensor::zeros(shape, dtype, dev)).collect::<rocm_wgpu_ops::Result<_>>()?;
        let keys = Tensor::arange(0u32, p as u32, dev)?.reshape([1, 1, 1, p])?;
        Ok(Cache { kv, len: 0, keys })
    }

    /// Layer `layer`'s keys and values `[1, Hkv, positions, D]` (views of its one tensor).
    fn layer(&self, layer: usize) -> rocm_wgpu_ops::Result<(Tensor, Tensor)> {
        halves(&self.kv[layer])
    }

    /// Tokens at positions `at` `[T]` (u32) in this cache.
    fn slot(&self, c: &Ctx, at: &Tensor) -> Res<Slot<'_>> {
        let mask = c.op("elementwise", budget::EXACT_MAP, || self.keys.le(&at.reshape([1, 1, at.dims()[0], 1])?))?;
        Ok(Slot { cache: self, at: at.clone(), mask })
    }
}

/// Draws weights on the cpu from the crate's generator, so every backend gets the same bits
/// (uploaded in f32, then cast on the device): `w(mean, std, shape)`.
fn weights() -> impl Fn(f64, f64, &[usize]) -> rocm_wgpu_ops::Result<Tensor> {
    let cpu = Device::cpu();
    cpu.set_seed(SEED);
    move |mean, std, shape| Tensor::randn(mean, std, shape, DType::F32, &cpu)
}

/// Columns `[first * d, (first + n) * d)` of `x` `(T, _)` as `n` heads `[1, n, T, d]` (a view).
fn heads(x: &Tensor, first: usize, n: usize, d: usize) -> rocm_wgpu_ops::Result<Tensor> {
    let t = x.dims()[0];
    x.narrow(1, first * d, n * d)?.reshape([t, n, d])?.permute([1, 0, 2])?.unsqueeze(0)
}

/// The keys and values of one view `[1, 2 Hkv, T, D]` (keys' heads first): two views.
fn halves(kv: &Tensor) -> rocm_wgpu_ops::Result<(Tensor, Tensor)> {
    let n = kv.dims()[1] / 2;
    Ok((kv.narrow(1, 0, n)?, kv.narrow(1, n, n)?))
}

/// Keys and values `[1, Hkv, T, D]` each, or one view `[1, 2 Hkv, T, D]` of both (keys' heads
/// first), which a cache takes in one write.
pub enum Kv<'a> {
    Apart(&'a Tensor, &'a Tensor),
    Joint(&'a Tensor),
}

/// Causal attention of `q [1, H, T, D]` over keys and values `kv` in one fused op, back to
/// `(T, H D)`. With layer `layer` of a cache slot, the keys and values are written at the tokens'
/// positions and the queries attend over the whole cache through the slot's mask.
fn attend(c: &Ctx, q: &Tensor, kv: Kv, slot: Option<(&Slot, usize)>) -> Res<Tensor> {
    let (h, t, d) = (q.dims()[1], q.dims()[2], q.dims()[3]);
    let y = match slot {
        None => {
            let (k, v) = match kv {
                Kv::Apart(k, v) => (k.clone(), v.clone()),
                Kv::Joint(kv) => halves(kv)?,
            };
            let budget = budget::attention(d, t);
            c.op("attention", budget, || q.scaled_dot_product_attention(&k, &v, None, true, None))?
        }
        Some((s, layer)) => {
            let write = |cache: &Tensor, x: &Tensor| {
                let ids = s.at.reshape([1, 1, t, 1])?.broadcast_as(x.dims())?;
                c.op("index", budget::COPY, || cache.scatter_set(&ids, x, 2))
            };
            let (kc, vc) = s.cache.layer(layer)?;
            match kv {
                Kv::Apart(k, v) => {
                    write(&kc, k)?;
                    write(&vc, v)?;
                }
                Kv::Joint(kv) => write(&s.cache.kv[layer], kv)?,
            }
            // The most keys a token sees: the budget of the longest attention.
            let budget = budget::attention(d, s.cache.len + t);
            c.op("attention", budget, || q.scaled_dot_product_attention(&kc, &vc, Some(&s.mask), false, None))?
        }
    };
    c.op("copy", budget::COPY, || y.squeeze(0)?.permute([1, 0, 2])?.reshape([t, h * d]))
}

/// A decode loop's time before its readback, on the wall clock and the calling thread's CPU:
/// recording-bound where the two agree, device-bound where the loop waited.
struct Recording {
    wall: std::time::Duration,
    cpu: Option<std::time::Duration>,
}

impl Recording {
    fn print(&self, tokens: usize) {
        let per = |d: std::time::Duration| format!("{:.3} ms", d.as_secs_f64() * 1e3 / tokens.max(1) as f64);
        let cpu = self.cpu.map_or("unknown".into(), per);
        println!("#   a token's recording: {} of the wall clock, {cpu} of this thread's CPU", per(self.wall));
    }
}

/// The first `len` ids of the prompt: `--prompt`'s tokens, else ids spread over the vocabulary by
/// a multiplicative hash.
fn prompt(c: &Config, len: usize, dev: &Device) -> Res<Tensor> {
    let ids: Vec<u32> = match llama::file::prompt_ids() {
        Some(ids) => ids[..len].to_vec(),
        None => (0..len as u64).map(|i| ((i * 2654435761) % c.vocab as u64) as u32).collect(),
    };
    Ok(Tensor::from_vec(ids, [len], dev)?)
}

/// The cpu's logits and budget for the check prompt, in `dtype`; with `--decode`, the tokens
/// it generates after that prompt and the logits `(N, vocab)` of each step.
struct Reference {
    logits: Tensor,
    next: Vec<u32>,
    budget: f64,
    decode: Option<Decoded>,
}

struct Decoded {
    /// The token fed at each step: the greedy token of the step before.
    fed: Vec<u32>,
    logits: Tensor,
    /// The largest budget of a step (the last: the longest attention).
    budget: f64,
}

fn reference(cfg: &Config, m: &Model, dtype: DType, check: usize) -> Res<Reference> {
    let cpu = Device::cpu();
    let c = Ctx::new(&cpu, false);
    let m = m.to(&cpu, dtype)?;
    let mut cache = (cfg.decode > 0).then(|| Cache::new(cfg, &cpu, dtype)).transpose()?;
    let (logits, next) = m.forward(&c, cfg, &prompt(cfg, check, &cpu)?, cache.as_mut())?;
    let (next, budget) = (next.to_vec::<u32>()?, c.take_budget());
    let decode = match cache {
        None => None,
        Some(mut cache) => {
            let (mut fed, mut steps, mut budget) = (vec![next[check - 1]], vec![], 0f64);
            for _ in 0..cfg.decode {
                let ids = Tensor::from_vec(vec![*fed.last().unwrap_or(&0)], [1], &cpu)?;
                let (l, n) = m.forward(&c, cfg, &ids, Some(&mut cache))?;
                budget = budget.max(c.take_budget());
                steps.push(l);
                fed.push(n.to_vec::<u32>()?[0]);
            }
            fed.pop();
            // The cache checked on the cpu: the first step's logits are those of the whole
            // sequence at its last position.
            let mut ids = prompt(cfg, check, &cpu)?.to_vec::<u32>()?;
            ids.push(fed[0]);
            let (whole, _) = m.forward(&c, cfg, &Tensor::from_vec(ids, [check + 1], &cpu)?, None)?;
            let what = "the cpu's first decode step against the whole sequence's last logits";
            if common::compare(&steps[0], &whole.narrow(0, check, 1)?, dtype, c.take_budget(), what)? {
                return Err("the KV cache does not give the logits of the whole sequence".into());
            }
            Some(Decoded { fed, logits: Tensor::cat(&steps, 0)?, budget })
        }
    };
    Ok(Reference { logits, next, budget, decode })
}

/// Times one backend in one dtype and compares it with the cpu; returns whether it fails.
fn run(
    f: &Flags,
    cfg: &Config,
    m: &Model,
    dev: &Device,
    dtype: DType,
    r: &Option<Reference>,
    check: usize,
) -> Res<bool> {
    println!("# {} {dtype}", dev.kind());
    let w = m.to(dev, dtype)?;
    let ids = prompt(cfg, cfg.seq, dev)?;
    let c = Ctx::new(dev, false);
    let (t, (_, next)) = common::time(dev, f.get("runs", 5)?, || w.forward(&c, cfg, &ids, None))?;
    let next = next.to_vec::<u32>()?;
    println!("#   tokens/s: {:.1}", cfg.seq as f64 / t.as_secs_f64());
    let last = &next[next.len().saturating_sub(8)..];
    println!("#   greedy next token: {:?}; at the last {} positions: {last:?}", next.last(), last.len());
    let gpu = dev.kind() != rocm_wgpu_ops::BackendKind::Cpu;
    let mut fails = false;
    if let Some(r) = r {
        let c = Ctx::new(dev, false);
        let (logits, got) = w.forward(&c, cfg, &prompt(cfg, check, dev)?, None)?;
        let same = got.to_vec::<u32>()?.iter().zip(&r.next).filter(|(a, b)| a == b).count();
        println!("#   greedy tokens of the {check}-token check prefix equal to the cpu's: {same} of {check}");
        let what = format!("the [{check}, {}] logits", cfg.vocab);
        fails |= gpu && common::compare(&logits, &r.logits, dtype, r.budget, &what)?;
    }
    if cfg.decode > 0 {
        fails |= decode(cfg, &w, dev, dtype, r.as_ref().and_then(|r| r.decode.as_ref()), check)? && gpu;
    }
    if f.profile {
        let c = Ctx::new(dev, true);
        w.forward(&c, cfg, &ids, None)?;
        c.print_profile();
    }
    common::model_line("transformer", dev, dtype, t, &cfg.tag());
    if gpu {
        fails |= replay(f, cfg, &w, dev, dtype, &ids, &next)?;
    }
    fails |= parallel::run(f, cfg, m, dev, dtype, r.as_ref(), check, t)? && gpu;
    Ok(fails)
}

/// The same forward captured once (`Device::capture`) and timed through `Plan::run`, printed as
/// backend `<kind>+replay`; its greedy tokens must be the op-by-op forward's `next` exactly.
/// Whether they differ.
fn replay(f: &Flags, cfg: &Config, w: &Model, dev: &Device, dtype: DType, ids: &Tensor, next: &[u32]) -> Res<bool> {
    let c = Ctx::new(dev, false);
    let captured = std::time::Instant::now();
    let mut plan = dev.capture(&[ids], |x| {
        let (_, next) = w.forward(&c, cfg, &x[0], None).map_err(crate_error)?;
        Ok(vec![next])
    })?;
    println!("#   replay: captured in {:.3} ms", captured.elapsed().as_secs_f64() * 1e3);
    let (t, out) = common::time(dev, f.get("runs", 5)?, || Ok(plan.run(&[ids])?))?;
    let same = out[0].to_vec::<u32>()? == next;
    println!("#   replay: greedy tokens {} the op-by-op forward's", if same { "equal to" } else { "DIFFER from" });
    println!("MODEL transformer {}+replay {dtype} {:.3} ms {}", dev.kind(), t.as_secs_f64() * 1e3, cfg.tag());
    Ok(!same)
}

/// `--decode N`: timed, the whole prompt into a fresh cache, then N greedy tokens one at a time,
/// each step's token and position fed to the next on the device (no readback until the end),
/// op by op and, on a GPU, through one captured step (`Device::capture`) replayed per token
/// (`+replay`), whose tokens must be the op-by-op ones; checked, the check prefix, then the
/// cpu's tokens fed one at a time, the logits of every step compared. Whether either fails.
fn decode(cfg: &Config, w: &Model, dev: &Device, dtype: DType, r: Option<&Decoded>, check: usize) -> Res<bool> {
    let c = Ctx::new(dev, false);
    // The prompt, then `n` tokens: their ids, the seconds and the kernels the tokens took, and
    // how long their loop ran before the readback that waits for the device.
    let generate = |n: usize, replay: bool| -> Res<(Vec<u32>, f64, u64, Recording)> {
        let mut cache = Cache::new(cfg, dev, dtype)?;
        let (_, next) = w.forward(&c, cfg, &prompt(cfg, cfg.seq, dev)?, Some(&mut cache))?;
        let mut id = next.narrow(0, cfg.seq - 1, 1)?;
        let mut at = Tensor::from_vec(vec![cfg.seq as u32], [1], dev)?;
        let cache = &cache;
        // One token: the next token and position.
        let step = |x: &[Tensor]| -> rocm_wgpu_ops::Result<Vec<Tensor>> {
            let (_, next) = w.step(&c, cfg, &x[0], Some((&x[1], cache))).map_err(crate_error)?;
            Ok(vec![next, x[1].add(1u32)?])
        };
        let mut plan = if replay { Some(dev.capture(&[&id, &at], &step)?) } else { None };
        dev.synchronize()?;
        let (start, launched, cpu0) = (std::time::Instant::now(), dev.launches(), common::cpu_time::thread_cpu());
        let mut tokens = vec![];
        for _ in 0..n {
            let out = match plan.as_mut() {
                Some(plan) => plan.run(&[&id, &at])?,
                None => step(&[id, at])?,
            };
            [id, at] = <[Tensor; 2]>::try_from(out).map_err(|_| "a step gives a token and a position")?;
            tokens.push(id.clone());
        }
        let recording =
            Recording { wall: start.elapsed(), cpu: common::cpu_time::thread_cpu().zip(cpu0).map(|(b, a)| b - a) };
        let tokens = Tensor::cat(&tokens, 0)?.to_vec::<u32>()?;
        Ok((tokens, start.elapsed().as_secs_f64(), dev.launches() - launched, recording))
    };
    let gpu = dev.kind() != rocm_wgpu_ops::BackendKind::Cpu;
    let mut first: Option<Vec<u32>> = None;
    let mut fails = false;
    for replay in [false, gpu] {
        // A warm-up of two tokens first: it compiles the one-query kernels.
        generate(cfg.decode.min(2), replay)?;
        let (tokens, t, launched, recording) = generate(cfg.decode, replay)?;
        let (per, kind) =
            (launched as f64 / cfg.decode as f64, format!("{}{}", dev.kind(), if replay { "+replay" } else { "" }));
        println!("DECODE transformer {kind} {dtype} {:.3} ms {}", t * 1e3 / cfg.decode as f64, cfg.tag());
        println!(
            "#   decode{}: {} tokens after the {}-token prompt in {:.3} ms: {:.1} tokens/s, {per:.0} kernels a token",
            if replay { " (replay)" } else { "" },
            cfg.decode,
            cfg.seq,
            t * 1e3,
            cfg.decode as f64 / t
        );
        recording.print(cfg.decode);
        match &first {
            None => {
                let more = if tokens.len() > 16 { " ..." } else { "" };
                println!("#   decoded tokens: {:?}{more}", &tokens[..tokens.len().min(16)]);
                if let Some(text) = llama::file::vocab::text(&tokens) {
                    println!("#   decoded text: {text:?}");
                }
                first = Some(tokens);
            }
            Some(op_by_op) => {
                let same = *op_by_op == tokens;
                println!(
                    "#   replay: decoded tokens {} the op-by-op ones",
                    if same { "equal to" } else { "DIFFER from" }
                );
                fails |= !same;
            }
        }
        if !gpu {
            break;
        }
    }
    let Some(r) = r else { return Ok(fails) };
    let c = Ctx::new(dev, false);
    let mut cache = Cache::new(cfg, dev, dtype)?;
    w.forward(&c, cfg, &prompt(cfg, check, dev)?, Some(&mut cache))?;
    let mut steps = vec![];
    for &token in &r.fed {
        steps.push(w.forward(&c, cfg, &Tensor::from_vec(vec![token], [1], dev)?, Some(&mut cache))?.0);
    }
    let what =
        format!("the [{}, {}] logits of the decode steps after the {check}-token check prefix", cfg.decode, cfg.vocab);
    Ok(common::compare(&Tensor::cat(&steps, 0)?, &r.logits, dtype, r.budget, &what)? | fails)
}

/// An example's error as the crate's, for a closure `Device::capture` runs.
fn crate_error(e: Box<dyn std::error::Error>) -> rocm_wgpu_ops::Error {
    match e.downcast::<rocm_wgpu_ops::Error>() {
        Ok(e) => *e,
        Err(e) => rocm_wgpu_ops::Error::InvalidParam { op: "forward", msg: e.to_string() },
    }
}

fn main() -> ExitCode {
    common::exit("transformer", main_())
}

/// Whether every f32 comparison passed.
fn main_() -> Res<bool> {
    let known = [
        "arch",
        "layers",
        "width",
        "heads",
        "kv-heads",
        "mlp",
        "seq",
        "vocab",
        "check-seq",
        "decode",
        "quant",
        "gguf",
        "gguf-out",
        "prompt",
        "devices",
        "activations",
    ];
    let f = Flags::parse(USAGE, &known)?;
    match f.get("activations", String::from("exact"))?.as_str() {
        "exact" => {}
        "q8" => {
            println!("# quantized weights multiply x rounded to q8 blocks (--activations q8: QTensor::qmatmul_q8)");
            weight::set_q8_activations(true);
        }
        other => return Err(format!("--activations {other}: exact or q8").into()),
    }
    let (file, out) = (f.get("gguf", String::new())?, f.get("gguf-out", String::new())?);
    let (cfg, model) = if file.is_empty() {
        if !f.get("prompt", String::new())?.is_empty() {
            return Err("--prompt tokenizes through a file's vocabulary: add --gguf PATH".into());
        }
        let cfg = config(&f)?;
        (cfg, Model::random(&cfg)?)
    } else {
        let text = f.get("prompt", String::new())?;
        let prompt = (!text.is_empty()).then_some(text.as_str());
        let (cfg, m) = llama::file::read(&file, f.get("seq", 128)?, f.get("decode", 0)?, prompt)?;
        (cfg, Model::Llama(m))
    };
    check(&cfg)?;
    parallel::check(&f, &cfg)?;
    let check = f.get("check-seq", cfg.seq.min(16))?.min(cfg.seq);
    let devices = f.devices()?;
    match check {
        0 => println!("# transformer {}; not compared with the cpu (--check-seq 0)", cfg.tag()),
        _ => println!("# transformer {}; compared with the cpu on the first {check} tokens", cfg.tag()),
    }
    let mut fails = false;
    if !out.is_empty() {
        fails |= round_trip(&cfg, &model, &out, check)?;
    }
    let reference = |d| (check > 0).then(|| reference(&cfg, &model, d, check)).transpose();
    let refs = f.dtypes()?.into_iter().map(|d| Ok((d, reference(d)?))).collect::<Res<Vec<_>>>()?;
    Ok(common::each(&devices, &refs, |dev, dtype, r| run(&f, &cfg, &model, dev, dtype, r, check))? && !fails)
}

/// `--gguf-out`: the llama `model` written to `path`, read back, and the two models' logits of
/// the check prompt compared on the cpu in f32. Whether they differ past the two forwards' budget.
fn round_trip(cfg: &Config, model: &Model, path: &str, check: usize) -> Res<bool> {
    let Model::Llama(m) = model else { return Err("--gguf-out writes llama weights: add --arch llama".into()) };
    let bytes = llama::file::write(m, cfg, path)?;
    let (back_cfg, back) = llama::file::read(path, cfg.seq, cfg.decode, None)?;
    println!("# gguf-out: wrote {path} ({:.1} MB), read back as {}", bytes as f64 / 1e6, back_cfg.tag());
    let cpu = Device::cpu();
    let c = Ctx::new(&cpu, false);
    let ids = prompt(cfg, check, &cpu)?;
    let (want, _) = model.to(&cpu, DType::F32)?.forward(&c, cfg, &ids, None)?;
    let (got, _) = Model::Llama(back).to(&cpu, DType::F32)?.forward(&c, &back_cfg, &ids, None)?;
    let what = format!("the [{check}, {}] logits of the model read back against the written one", cfg.vocab);
    common::compare(&got, &want, DType::F32, c.take_budget(), &what)
}
