#!/usr/bin/env python3
"""Test vectors for src/io/, written by the reference writers (`pip install gguf numpy safetensors`).

Writes tests/vectors/io/:
  tiny.gguf          gguf-py's GGUFWriter: metadata of every value type (typed, nested and empty
                     arrays, a non-ASCII string), alignment 64, tensors f32, f16, bf16, f64, i64,
                     q8_0 (gguf-py's quantizer) and q4_K (the first block of quant/q4_K.blocks)
  tiny.safetensors   safetensors.numpy: f32, f16, f64, u8, u32, i64 tensors and one metadata
                     string (one: the writer orders metadata as a hash map iterates)
  i32.safetensors    one i32 tensor (a dtype the crate lacks)
  gguf_py_reads_ours.txt   what gguf-py's GGUFReader makes of ours.gguf, when that file is
                     present: `RWO_WRITE_VECTORS=1 target/debug/deps/suite-* io::` writes it
                     (our writer's file of the same content; the suite checks that it is
                     byte-identical to tiny.gguf, so gguf-py reading it is a second check)

tests/suite/io.rs rebuilds every value here by the same formulas and compares.
Run from the repository root: python3 tests/vectors/gen_gguf.py
"""
import importlib.metadata
import os

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import GGUFReader, GGUFValueType as V, GGUFWriter, quants
from safetensors.numpy import save_file

HERE = os.path.dirname(__file__)
OUT = os.path.join(HERE, "io")


def f32_values(n):
    """The f32 test values: (i * 0.37) mod 5 - 2.5, as f32."""
    return (np.arange(n, dtype=np.float64) * 0.37 % 5 - 2.5).astype(np.float32)


def write_gguf(path):
    w = GGUFWriter(path, "llama")  # general.architecture = "llama" first
    w.add_custom_alignment(64)
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -100)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4_000_000_000)
    w.add_int32("t.i32", -2_000_000_000)
    w.add_float32("t.f32", 1.5)
    w.add_bool("t.bool", True)
    w.add_string("t.string", "h\u00e9llo \u2713")
    w.add_uint64("t.u64", 2**63 + 5)
    w.add_int64("t.i64", -(2**62))
    w.add_float64("t.f64", -0.1)
    w.add_array("t.strings", ["a", "bc", ""])
    w.add_key_value("t.u16s", [1, 2, 65535], V.ARRAY, sub_type=V.UINT16)
    w.add_key_value("t.f64s", [0.5, -1e300], V.ARRAY, sub_type=V.FLOAT64)
    w.add_key_value("t.bools", [True, False, True], V.ARRAY, sub_type=V.BOOL)
    w.add_array("t.nested", [[1, 2], [3], [-4, 5, 6]])  # i32 items in arrays of arrays

    w.add_tensor("f32", f32_values(6).reshape(2, 3))
    w.add_tensor("f16", f32_values(8).astype(np.float16).reshape(2, 2, 2))
    # bf16 as raw bytes: the top halves of the f32 values (truncation), shape [2, 4]
    bf16 = (f32_values(8).view(np.uint32) >> 16).astype(np.uint16)
    w.add_tensor("bf16", bf16.view(np.uint8).reshape(2, 8), raw_dtype=T.BF16)
    w.add_tensor("f64", (np.arange(3, dtype=np.float64) / 3))
    w.add_tensor("i64", np.array([[-(2**40), 7], [0, 2**62]], dtype=np.int64))
    q8 = quants.quantize(f32_values(64).reshape(2, 32), T.Q8_0)
    w.add_tensor("q8_0", q8, raw_shape=q8.shape, raw_dtype=T.Q8_0)
    k = np.fromfile(os.path.join(HERE, "quant", "q4_K.blocks"), dtype=np.uint8)[:144].reshape(1, 144)
    w.add_tensor("q4_K", k, raw_dtype=T.Q4_K)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_safetensors():
    tensors = {
        "f32": f32_values(6).reshape(2, 3),
        "f16": f32_values(4).astype(np.float16),
        "f64": np.arange(3, dtype=np.float64) / 3,
        "u8": np.array([0, 1, 255], dtype=np.uint8),
        "u32": np.array([[0, 4_000_000_000]], dtype=np.uint32),
        "i64": np.array([-(2**40), 7], dtype=np.int64),
    }
    save_file(tensors, os.path.join(OUT, "tiny.safetensors"), metadata={"format": "np"})
    save_file({"x": np.array([1, 2, 3], dtype=np.int32)}, os.path.join(OUT, "i32.safetensors"))


def check_ours():
    """gguf-py's reading of our writer's file of the same content, as a note."""
    ours = os.path.join(OUT, "ours.gguf")
    if not os.path.exists(ours):
        return
    r = GGUFReader(ours)
    version = importlib.metadata.version("gguf")
    lines = [f"gguf-py {version}'s GGUFReader read ours.gguf: {len(r.fields)} fields, {len(r.tensors)} tensors"]
    for t in r.tensors:
        lines.append(f"  {t.name}: {t.tensor_type.name} ne {[int(d) for d in t.shape]} at byte {int(t.data_offset)}")
    same = open(ours, "rb").read() == open(os.path.join(OUT, "tiny.gguf"), "rb").read()
    lines.append(f"byte-identical to gguf-py's tiny.gguf: {same}")
    with open(os.path.join(OUT, "gguf_py_reads_ours.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    os.remove(ours)


def main():
    os.makedirs(OUT, exist_ok=True)
    write_gguf(os.path.join(OUT, "tiny.gguf"))
    write_safetensors()
    for name in os.listdir(OUT):
        os.chmod(os.path.join(OUT, name), 0o644)  # safetensors writes 0600
    check_ours()


if __name__ == "__main__":
    main()
