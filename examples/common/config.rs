//! The transformer's shape and weight types, from the flags: the arch, the sizes, `--quant`.

use crate::STD;
use crate::common::{Flags, Res};
use rocm_wgpu_ops::spec::quant::GgmlType;

/// The matmul weights' types (`--quant`).
#[derive(Clone, Copy, PartialEq)]
pub enum Quant {
    Dense,
    Blocks(GgmlType),
    /// llama.cpp's Q4_K_M: q6_K for v and the MLP's down projection in the layers
    /// [`Quant::more_bits`] picks, q4_K elsewhere.
    Q4KM,
    /// As a model file holds them.
    File,
}

/// The matmul weights of a llama layer, for [`Quant::ty`].
#[derive(Clone, Copy, PartialEq)]
pub enum Role {
    Q,
    K,
    V,
    Out,
    Gate,
    Up,
    Down,
}

impl Quant {
    pub fn name(self) -> &'static str {
        match self {
            Quant::Dense => "none",
            Quant::Blocks(ty) => ty.name(),
            Quant::Q4KM => "q4_k_m",
            Quant::File => "gguf",
        }
    }

    /// The one type of every weight, for gpt2 (which takes no mix).
    pub fn uniform(self) -> Option<GgmlType> {
        if let Quant::Blocks(ty) = self { Some(ty) } else { None }
    }

    /// The type of weight `role` in layer `layer` of `layers` (`None`: dense).
    pub fn ty(self, role: Role, layer: usize, layers: usize) -> Option<GgmlType> {
        match self {
            Quant::Dense | Quant::File => None,
            Quant::Blocks(ty) => Some(ty),
            Quant::Q4KM if matches!(role, Role::V | Role::Down) && Quant::more_bits(layer, layers) => {
                Some(GgmlType::Q6_K)
            }
            Quant::Q4KM => Some(GgmlType::Q4_K),
        }
    }

    /// llama.cpp's `use_more_bits`: the first and last eighth of the layers and every third
    /// between.
    fn more_bits(layer: usize, layers: usize) -> bool {
        layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2
    }
}

#[derive(Clone, Copy, PartialEq)]
pub enum Arch {
    Gpt2,
    Llama,
}

#[derive(Clone, Copy)]
pub struct Config {
    pub arch: Arch,
    pub layers: usize,
    pub width: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub mlp: usize,
    pub seq: usize,
    pub vocab: usize,
    pub decode: usize,
    pub quant: Quant,
    /// Devices the heads and the MLP are split over: a rank's config has `heads`, `kv_heads`
    /// and `mlp` divided by it.
    pub shards: usize,
}

impl Config {
    pub fn tag(&self) -> String {
        let Config { arch, layers, width, heads, kv_heads, mlp, seq, vocab, decode, quant, .. } = self;
        let arch = if *arch == Arch::Gpt2 { "gpt2" } else { "llama" };
        let quant = quant.name();
        format!(
            "arch={arch},layers={layers},width={width},heads={heads},kv_heads={kv_heads},mlp={mlp},seq={seq},vocab={vocab},decode={decode},quant={quant}"
        )
    }

    /// The most positions a sequence reaches: the prompt and the generated tokens.
    pub fn positions(&self) -> usize {
        self.seq + self.decode
    }

    pub fn head_dim(&self) -> usize {
        self.width / (self.heads * self.shards)
    }

    pub fn residual_std(&self) -> f64 {
        STD / (2.0 * self.layers as f64).sqrt()
    }
}

/// The model's shape from the flags.
pub fn config(f: &Flags) -> Res<Config> {
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
    let quant = match f.get("quant", "none".to_string())?.as_str() {
        "none" => Quant::Dense,
        "q4_k_m" if arch == Arch::Llama => Quant::Q4KM,
        "q4_k_m" => return Err("--quant q4_k_m: llama only (add --arch llama)".into()),
        q => Quant::Blocks(
            GgmlType::ALL.iter().copied().find(|t| t.name() == q).ok_or(format!("--quant {q}: not a ggml type"))?,
        ),
    };
    Ok(Config {
        arch,
        layers: f.get("layers", 12)?,
        width,
        heads,
        kv_heads: f.get("kv-heads", heads)?,
        mlp: f.get("mlp", mlp)?,
        seq: f.get("seq", 128)?,
        vocab: f.get("vocab", 50257)?,
        decode: f.get("decode", 0)?,
        quant,
        shards: 1,
    })
}

/// Errors for a shape the model cannot take.
pub fn check(cfg: &Config) -> Res<()> {
    let heads_ok = cfg.heads > 0 && cfg.width.is_multiple_of(cfg.heads);
    let kv_ok = cfg.kv_heads > 0
        && cfg.heads.is_multiple_of(cfg.kv_heads)
        && (cfg.arch == Arch::Llama || cfg.kv_heads == cfg.heads);
    if !heads_ok || !kv_ok || cfg.seq == 0 || cfg.vocab == 0 {
        return Err(format!(
            "need heads dividing width, kv-heads dividing heads (gpt2: equal), seq and vocab above 0: {}",
            cfg.tag()
        )
        .into());
    }
    if cfg.arch == Arch::Llama && !cfg.head_dim().is_multiple_of(2) {
        return Err(format!("RoPE needs an even head size width / heads: {}", cfg.tag()).into());
    }
    Ok(())
}
