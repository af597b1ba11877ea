//! A GGUF's vocabulary (`tokenizer.ggml.*`): token ids to text, and, for a SentencePiece
//! vocabulary (`tokenizer.ggml.model` "llama"), text to ids as llama.cpp's SPM tokenizer makes
//! them: a space before the text and `\u{2581}` for every space, single characters merged
//! pairwise, each time the adjacent pair whose joined text is the token of highest score (the
//! leftmost of equal scores), characters no token holds as their UTF-8 bytes' `<0xNN>` tokens.

use crate::common::Res;
use rocm_wgpu_ops::io::{Gguf, GgufArray, GgufValue};
use std::collections::HashMap;
use std::sync::OnceLock;

/// SentencePiece's mark for a space.
const SPACE: char = '\u{2581}';

pub struct Vocab {
    tokens: Vec<String>,
    scores: Vec<f32>,
    ids: HashMap<String, u32>,
    /// `tokenizer.ggml.model`.
    model: String,
    /// The id put before a prompt (`tokenizer.ggml.bos_token_id`, unless `add_bos_token` is false).
    bos: Option<u32>,
}

/// The vocabulary of the first file read that has one.
static VOCAB: OnceLock<Vocab> = OnceLock::new();

/// Keeps `g`'s vocabulary, if it has one and none is kept yet.
pub fn keep(g: &Gguf) {
    let Some(GgufValue::Array(GgufArray::String(tokens))) = g.get("tokenizer.ggml.tokens") else { return };
    let scores = match g.get("tokenizer.ggml.scores") {
        Some(GgufValue::Array(GgufArray::F32(s))) => s.clone(),
        _ => vec![0.0; tokens.len()],
    };
    let ids = tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
    let model = g.get("tokenizer.ggml.model").and_then(GgufValue::as_str).unwrap_or("").to_string();
    let add_bos = !matches!(g.get("tokenizer.ggml.add_bos_token"), Some(GgufValue::Bool(false)));
    let bos = g.get("tokenizer.ggml.bos_token_id").and_then(GgufValue::to_u64).filter(|_| add_bos).map(|b| b as u32);
    let _ = VOCAB.set(Vocab { tokens: tokens.clone(), scores, ids, model, bos });
}

/// Token ids as text, if a vocabulary is kept: the space mark as a space, a byte token `<0xNN>`
/// as its byte, an id past the vocabulary as `<?>`.
pub fn text(ids: &[u32]) -> Option<String> {
    let v = VOCAB.get()?;
    let mut bytes = Vec::new();
    for &id in ids {
        let token = v.tokens.get(id as usize).map_or("<?>", String::as_str);
        match byte_token(token) {
            Some(b) => bytes.push(b),
            None => bytes.extend_from_slice(token.replace(SPACE, " ").as_bytes()),
        }
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The byte of a token `<0xNN>`.
fn byte_token(token: &str) -> Option<u8> {
    let hex = token.strip_prefix("<0x")?.strip_suffix('>')?;
    u8::from_str_radix(hex, 16).ok()
}

/// `text` as token ids (the BOS id first where the file asks for it), with the kept vocabulary,
/// which must be SentencePiece's.
pub fn tokenize(text: &str) -> Res<Vec<u32>> {
    let v = VOCAB.get().ok_or("--prompt needs a file with a vocabulary (tokenizer.ggml.tokens)")?;
    if v.model != "llama" {
        let msg = format!(
            "--prompt tokenizes SentencePiece vocabularies (tokenizer.ggml.model \"llama\"), not {:?}",
            v.model
        );
        return Err(msg.into());
    }
    let marked: String = format!(" {text}").chars().map(|c| if c == ' ' { SPACE } else { c }).collect();
    let mut symbols: Vec<String> = marked.chars().map(String::from).collect();
    loop {
        let mut best: Option<(f32, usize)> = None;
        for i in 0..symbols.len().saturating_sub(1) {
            let joined = format!("{}{}", symbols[i], symbols[i + 1]);
            if let Some(&id) = v.ids.get(&joined) {
                let score = v.scores.get(id as usize).copied().unwrap_or(0.0);
                if best.is_none_or(|(b, _)| score > b) {
                    best = Some((score, i));
                }
            }
        }
        let Some((_, i)) = best else { break };
        let right = symbols.remove(i + 1);
        symbols[i].push_str(&right);
    }
    let mut ids: Vec<u32> = v.bos.into_iter().collect();
    for s in &symbols {
        match v.ids.get(s) {
            Some(&id) => ids.push(id),
            None => {
                for b in s.bytes() {
                    let id = v.ids.get(&format!("<0x{b:02X}>")).ok_or(format!("no token for {s:?} nor its bytes"))?;
                    ids.push(*id);
                }
            }
        }
    }
    Ok(ids)
}
