#!/usr/bin/env python3
"""Test vectors for the quant family, from llama.cpp's own gguf-py (`pip install gguf numpy`).

Writes tests/vectors/quant/:
  {ty}.blocks   blocks of every type: random bytes, the f16 scale fields set to finite values
  {ty}.deq      gguf-py's dequantization of {ty}.blocks, f32 little-endian
  input.f32     512 values (16 blocks of 32, including edge cases) for the quantizers
  {ty}.quant    gguf-py's quantization of input.f32, for the five simple types (gguf-py's
                quantizers reproduce ggml's quantize_row_*_ref)

Run from the repository root: python3 tests/vectors/gen_quant.py
"""
import os

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

OUT = os.path.join(os.path.dirname(__file__), "quant")

# name, number of blocks, byte offsets of the f16 scale fields in a block
TYPES = [
    ("q4_0", T.Q4_0, 16, [0]),
    ("q4_1", T.Q4_1, 16, [0, 2]),
    ("q5_0", T.Q5_0, 16, [0]),
    ("q5_1", T.Q5_1, 16, [0, 2]),
    ("q8_0", T.Q8_0, 16, [0]),
    ("q2_K", T.Q2_K, 3, [80, 82]),
    ("q3_K", T.Q3_K, 3, [108]),
    ("q4_K", T.Q4_K, 3, [0, 2]),
    ("q5_K", T.Q5_K, 3, [0, 2]),
    ("q6_K", T.Q6_K, 3, [208]),
]
SIMPLE = ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0"]


def scales(rng, n):
    """Finite f16 scales of both signs over many octaves, a zero and a subnormal among them."""
    s = rng.choice([-1.0, 1.0], n) * np.exp2(rng.uniform(-12, 4, n))
    s[0], s[1 % n] = 0.0, 2.0**-20
    return s.astype(np.float16)


def quantizer_input(rng):
    blocks = [rng.standard_normal(32) * 10.0 ** rng.uniform(-3, 3) for _ in range(10)]
    blocks += [
        np.zeros(32),  # d = 0
        np.full(32, 0.75),  # max = min
        -np.abs(rng.standard_normal(32)),  # the largest magnitude negative
        rng.standard_normal(32) * 1e-6,  # d underflows in f16
        np.round(rng.standard_normal(32) * 8) / 8,  # ties at x / d + 8.5
        rng.uniform(-1e4, 1e4, 32),
    ]
    return np.concatenate(blocks).astype(np.float32)


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(24)
    for name, ty, n, offsets in TYPES:
        size = quants.GGML_QUANT_SIZES[ty][1]
        raw = rng.integers(0, 256, (n, size), dtype=np.uint8)
        for o in offsets:
            raw[:, o : o + 2] = scales(rng, n).view(np.uint8).reshape(n, 2)
        deq = quants.dequantize(raw, ty).astype("<f4")
        raw.tofile(os.path.join(OUT, f"{name}.blocks"))
        deq.tofile(os.path.join(OUT, f"{name}.deq"))
    x = quantizer_input(rng)
    x.astype("<f4").tofile(os.path.join(OUT, "input.f32"))
    for name, ty, _, _ in TYPES:
        if name in SIMPLE:
            quants.quantize(x.reshape(1, -1), ty).tofile(os.path.join(OUT, f"{name}.quant"))


if __name__ == "__main__":
    main()
