//! The llama to and from a GGUF file as llama.cpp lays one out: its metadata keys and tensor
//! names, matrices `[out, in]` (dense or ggml blocks), and the rows of q and k permuted within
//! each head so that RoPE turns adjacent pairs (llama.cpp's converter permutes Hugging Face's
//! weights so; a model read from a file turns them with `rope_i`).

use super::{Layer, Model, THETA, rope_tables};
use crate::common::Res;
use crate::{Arch, Config, EPS, Quant, Weight};
use rocm_wgpu_ops::io::{GgufFile, GgufValue, GgufWriter, ModelTensor};
use rocm_wgpu_ops::{DType, Device, QTensor, Result, Tensor};
use std::io::Write;
use std::sync::OnceLock;

#[path = "vocab.rs"]
pub mod vocab;

/// The token ids of `--prompt`, once tokenized: the prompt every forward reads.
static PROMPT: OnceLock<Vec<u32>> = OnceLock::new();

/// The ids of `--prompt`, if given.
pub fn prompt_ids() -> Option<&'static [u32]> {
    PROMPT.get().map(Vec::as_slice)
}

/// Writes `m` (of shape `cfg`) to `path` as a llama GGUF; returns the file's size in bytes.
pub fn write(m: &Model, cfg: &Config, path: &str) -> Res<u64> {
    let mut w = GgufWriter::new();
    let count = |n: usize| GgufValue::U32(n as u32);
    w.metadata("general.architecture", "llama".into())
        .metadata("general.name", "rocm-wgpu-ops random llama".into())
        .metadata("llama.context_length", count(cfg.positions()))
        .metadata("llama.embedding_length", count(cfg.width))
        .metadata("llama.block_count", count(cfg.layers))
        .metadata("llama.feed_forward_length", count(cfg.mlp))
        .metadata("llama.rope.dimension_count", count(cfg.head_dim()))
        .metadata("llama.attention.head_count", count(cfg.heads))
        .metadata("llama.attention.head_count_kv", count(cfg.kv_heads))
        .metadata("llama.attention.layer_norm_rms_epsilon", GgufValue::F32(m.eps as f32))
        .metadata("llama.rope.freq_base", GgufValue::F32(THETA as f32))
        .metadata("llama.vocab_size", count(cfg.vocab));
    w.tensor("token_embd.weight", &m.embed)?;
    let (h, kv, d, mlp) = (cfg.heads * cfg.head_dim(), cfg.kv_heads * cfg.head_dim(), cfg.head_dim(), cfg.mlp);
    for (i, l) in m.layers.iter().enumerate() {
        let name = |n: &str| format!("blk.{i}.{n}.weight");
        w.tensor(&name("attn_norm"), &l.attn_norm)?;
        add(&mut w, &name("attn_q"), interleave(l.qkv.cols(0, h)?.transposed()?, cfg.heads, d)?)?;
        add(&mut w, &name("attn_k"), interleave(l.qkv.cols(h, kv)?.transposed()?, cfg.kv_heads, d)?)?;
        add(&mut w, &name("attn_v"), l.qkv.cols(h + kv, kv)?.transposed()?)?;
        add(&mut w, &name("attn_output"), l.out.transposed()?)?;
        w.tensor(&name("ffn_norm"), &l.mlp_norm)?;
        add(&mut w, &name("ffn_gate"), l.gate_up.cols(0, mlp)?.transposed()?)?;
        add(&mut w, &name("ffn_up"), l.gate_up.cols(mlp, mlp)?.transposed()?)?;
        add(&mut w, &name("ffn_down"), l.down.transposed()?)?;
    }
    w.tensor("output_norm.weight", &m.norm)?;
    if let Some(head) = &m.head {
        add(&mut w, "output.weight", head.transposed()?)?;
    }
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    w.write(&mut file)?;
    file.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

fn add(w: &mut GgufWriter, name: &str, t: ModelTensor) -> Result<()> {
    match t {
        ModelTensor::Plain(t) => w.tensor(name, &t)?,
        ModelTensor::Quantized(q) => w.qtensor(name, &q)?,
    };
    Ok(())
}

/// The rows `[heads * d, in]` of q or k reordered as llama.cpp's converter does: row `2i + s` of
/// a head is its row `s d/2 + i`, so that `rope_i` turns the pairs that `rope` turned. Blocks
/// are moved whole, a row's bytes at a time.
fn interleave(t: ModelTensor, heads: usize, d: usize) -> Result<ModelTensor> {
    let permute = |x: &Tensor, row: usize| x.reshape([heads, 2, d / 2, row])?.permute([0, 2, 1, 3])?.contiguous();
    Ok(match t {
        ModelTensor::Plain(x) => {
            let k = x.dims()[1];
            ModelTensor::Plain(permute(&x, k)?.reshape([heads * d, k])?)
        }
        ModelTensor::Quantized(q) => {
            let bytes = q.bytes().elem_count();
            let rows = permute(q.bytes(), bytes / (heads * d))?.reshape([bytes])?;
            ModelTensor::Quantized(QTensor::new(q.ty(), q.shape().clone(), &rows)?)
        }
    })
}

/// The llama GGUF at `path`, its tensors on the cpu: the model and its shape (`seq` and `decode`
/// from the flags, the rest from the file; with `prompt`, its tokens through the file's
/// vocabulary are the prompt and their count `seq`). Errors name the missing key or the tensor
/// whose shape is not the metadata's.
pub fn read(path: &str, seq: usize, decode: usize, prompt: Option<&str>) -> Res<(Config, Model)> {
    // SAFETY: the map lives in this function only, and nothing here writes the file.
    let file = unsafe { GgufFile::open(path)? };
    let g = file.gguf();
    let arch = g.get("general.architecture").and_then(GgufValue::as_str);
    if arch != Some("llama") {
        return Err(format!("{path}: general.architecture is {arch:?}, not \"llama\"").into());
    }
    vocab::keep(g);
    let seq = match prompt {
        Some(text) => {
            let ids = vocab::tokenize(text)?;
            println!("# prompt: {} tokens {:?}", ids.len(), &ids[..ids.len().min(16)]);
            PROMPT.get_or_init(|| ids).len()
        }
        None => seq,
    };
    let value = |key: &str| g.get(&format!("llama.{key}"));
    let count = |key: &str| -> Res<usize> {
        let n = value(key).and_then(GgufValue::to_u64).ok_or(format!("{path}: no count llama.{key}"))?;
        Ok(n as usize)
    };
    let cpu = Device::cpu();
    let tensor = |name: &str, shape: &[usize]| -> Res<ModelTensor> {
        let t = file.tensor(name, &cpu)?;
        if t.shape().dims() != shape {
            return Err(format!("{path}: tensor {name} is {}, expected {shape:?}", t.shape()).into());
        }
        Ok(t)
    };
    let embed = match file.tensor("token_embd.weight", &cpu)? {
        ModelTensor::Plain(t) => t.to_dtype(DType::F32)?,
        ModelTensor::Quantized(q) => q.dequantize(DType::F32)?,
    };
    let [vocab, width] = embed.dims()[..] else { return Err(format!("{path}: token_embd.weight is not 2-d").into()) };
    let heads = count("attention.head_count")?;
    let cfg = Config {
        arch: Arch::Llama,
        layers: count("block_count")?,
        width,
        heads,
        kv_heads: if value("attention.head_count_kv").is_some() { count("attention.head_count_kv")? } else { heads },
        mlp: count("feed_forward_length")?,
        seq,
        vocab,
        decode,
        quant: Quant::File,
        shards: 1,
    };
    crate::check(&cfg)?;
    let d = cfg.head_dim();
    // What this llama does not have: clear errors rather than wrong logits.
    let scaled = value("rope.scaling.type").and_then(GgufValue::as_str).is_some_and(|t| t != "none");
    if scaled || g.tensor_info("rope_freqs.weight").is_some() {
        return Err(format!("{path}: RoPE scaling (llama.rope.scaling.*, rope_freqs.weight) is not supported").into());
    }
    if value("expert_count").and_then(GgufValue::to_u64).is_some_and(|n| n > 0) {
        return Err(format!("{path}: a mixture of experts (llama.expert_count) is not supported").into());
    }
    if value("rope.dimension_count").is_some() && count("rope.dimension_count")? != d {
        return Err(format!("{path}: RoPE over part of a head (llama.rope.dimension_count) is not supported").into());
    }
    let float = |key: &str, default: f64| value(key).and_then(GgufValue::to_f64).unwrap_or(default);
    let (theta, eps) = (float("rope.freq_base", THETA), float("attention.layer_norm_rms_epsilon", EPS));
    let (h, kv, mlp) = (heads * d, cfg.kv_heads * d, cfg.mlp);
    let matrix = |name: &str, out: usize, inputs: usize| -> Res<Weight> {
        Ok(Weight::from_file(tensor(name, &[out, inputs])?)?)
    };
    let vector = |name: &str| -> Res<Tensor> { Ok(tensor(name, &[width])?.plain()?) };
    let layers = (0..cfg.layers)
        .map(|i| {
            let name = |n: &str| format!("blk.{i}.{n}.weight");
            let qkv = [("attn_q", h), ("attn_k", kv), ("attn_v", kv)].map(|(n, out)| matrix(&name(n), out, width));
            let gate_up = [("ffn_gate", mlp), ("ffn_up", mlp)].map(|(n, out)| matrix(&name(n), out, width));
            Ok(Layer {
                attn_norm: vector(&name("attn_norm"))?,
                qkv: Weight::join(qkv.into_iter().collect::<Res<_>>()?)?,
                out: matrix(&name("attn_output"), width, h)?,
                mlp_norm: vector(&name("ffn_norm"))?,
                gate_up: Weight::join(gate_up.into_iter().collect::<Res<_>>()?)?,
                down: matrix(&name("ffn_down"), width, mlp)?,
            })
        })
        .collect::<Res<_>>()?;
    let head = g.tensor_info("output.weight").map(|_| matrix("output.weight", vocab, width)).transpose()?;
    let (cos, sin) = rope_tables(cfg.positions(), d, theta)?;
    let norm = vector("output_norm.weight")?;
    Ok((cfg, Model { embed, layers, norm, head, cos, sin, interleaved: true, eps }))
}
