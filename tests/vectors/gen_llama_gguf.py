#!/usr/bin/env python3
"""A tiny llama GGUF written by llama.cpp's own gguf-py, as its converter writes one
(`pip install gguf numpy`), for the transformer example's `--gguf`: a file this crate did not
write, read by it (.ci/run runs it).

Writes tests/vectors/io/llama-gguf-py.gguf: 2 layers, width 64, 4 heads of 16, 2 KV heads, MLP
128, a 64-token vocabulary (tokenizer.ggml.* arrays as a SentencePiece llama has them), the
embedding in f16, the norms in f32, the matrices as q8_0 blocks (gguf-py's quantizer), an
untied output.weight. Deterministic (numpy seed 7).

Run from the repository root: python3 tests/vectors/gen_llama_gguf.py
"""
import os

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import GGUFWriter, LlamaFileType, TokenType
from gguf import quants

OUT = os.path.join(os.path.dirname(__file__), "io", "llama-gguf-py.gguf")
LAYERS, WIDTH, HEADS, KV_HEADS, MLP, VOCAB = 2, 64, 4, 2, 128, 64
HEAD = WIDTH // HEADS

rng = np.random.default_rng(7)


def normal(std, *shape):
    return (rng.standard_normal(shape) * std).astype(np.float32)


def q8_0(w):
    """A matrix [out, in] as q8_0 blocks, the raw bytes gguf-py's writer takes with their type."""
    return quants.quantize(w, T.Q8_0), T.Q8_0


w = GGUFWriter(OUT, "llama")
w.add_name("gguf-py tiny llama")
w.add_context_length(64)
w.add_embedding_length(WIDTH)
w.add_block_count(LAYERS)
w.add_feed_forward_length(MLP)
w.add_rope_dimension_count(HEAD)
w.add_head_count(HEADS)
w.add_head_count_kv(KV_HEADS)
w.add_layer_norm_rms_eps(1e-5)
w.add_rope_freq_base(10000.0)
w.add_file_type(LlamaFileType.MOSTLY_Q8_0)
w.add_vocab_size(VOCAB)
letters = "abcdefghijklmnopqrstuvwxyz"
tokens = ["<unk>", "<s>", "</s>", "<0x0A>"] + ["\u2581" + c for c in letters] + list(letters)
tokens += [f"\u2581t{i}" for i in range(VOCAB - len(tokens))]
w.add_tokenizer_model("llama")
w.add_token_list(tokens)
w.add_token_scores([-float(i) for i in range(VOCAB)])
types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL, TokenType.BYTE]
w.add_token_types(types + [TokenType.NORMAL] * (VOCAB - len(types)))
w.add_bos_token_id(1)
w.add_eos_token_id(2)

w.add_tensor("token_embd.weight", normal(1.0, VOCAB, WIDTH).astype(np.float16))
for i in range(LAYERS):
    w.add_tensor(f"blk.{i}.attn_norm.weight", 1.0 + normal(0.1, WIDTH))
    for name, rows, cols in [
        ("attn_q", HEADS * HEAD, WIDTH),
        ("attn_k", KV_HEADS * HEAD, WIDTH),
        ("attn_v", KV_HEADS * HEAD, WIDTH),
        ("attn_output", WIDTH, HEADS * HEAD),
        ("ffn_gate", MLP, WIDTH),
        ("ffn_up", MLP, WIDTH),
        ("ffn_down", WIDTH, MLP),
    ]:
        data, ty = q8_0(normal(0.2, rows, cols))
        w.add_tensor(f"blk.{i}.{name}.weight", data, raw_dtype=ty)
    w.add_tensor(f"blk.{i}.ffn_norm.weight", 1.0 + normal(0.1, WIDTH))
w.add_tensor("output_norm.weight", 1.0 + normal(0.1, WIDTH))
data, ty = q8_0(normal(0.2, VOCAB, WIDTH))
w.add_tensor("output.weight", data, raw_dtype=ty)

w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(OUT, os.path.getsize(OUT), "bytes")
