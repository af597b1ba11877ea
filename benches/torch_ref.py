#!/usr/bin/env python3
"""PyTorch's figures for the cases of src/app/bench.rs, by the same names, on the same GPU.

    python3 benches/torch_ref.py [RWO_BENCH_OUTPUT] [--scale N] [--only TEXT]

With the output of `rocm-wgpu-ops bench` (its BENCH lines), prints each backend's throughput
as a ratio of torch's, measured in the same run on the same GPU. Its own output (TORCH lines) is
what `rocm-wgpu-ops bench --torch FILE` reads to put torch in its table and chart.
"""
import sys
import torch
from timing import measure_ms

args = [a for a in sys.argv[1:]]
scale = 1
if "--scale" in args:
    i = args.index("--scale")
    scale = int(args[i + 1])
    del args[i : i + 2]
only = ""
if "--only" in args:
    i = args.index("--only")
    only = args[i + 1]
    del args[i : i + 2]
ours = args[0] if args else None
dev = "cuda"


def s(n):
    return max(n // scale, 1)


def rand(*shape, dtype=torch.float32):
    return torch.rand(*shape, device=dev, dtype=dtype) * 2 - 1


def cases():
    big = s(64 << 20)
    rows, cols = s(8192), 8192
    rr, rc = s(4096), 16384
    a, b = rand(big), rand(big)
    yield f"add f32 [{big}]", 12 * big, lambda: a + b
    yield f"mul f32 [{big}]", 12 * big, lambda: a * b
    h1, h2 = rand(big, dtype=torch.float16), rand(big, dtype=torch.float16)
    yield f"add f16 [{big}]", 6 * big, lambda: h1 + h2
    m, r = rand(rows, cols), rand(cols)
    yield f"add f32 [{rows},{cols}] + [{cols}]", 8 * rows * cols + 4 * cols, lambda: m + r
    mt = rand(cols, rows)
    yield f"add f32 [{rows},{cols}] + [{cols},{rows}]^T", 12 * rows * cols, lambda: m + mt.t()
    yield f"cast f32->f16 [{big}]", 6 * big, lambda: a.to(torch.float16)
    yield f"exp f32 [{big}]", 8 * big, lambda: torch.exp(a)
    wide = a * 1000
    yield f"sin f32 [{big}]", 8 * big, lambda: torch.sin(wide)
    x = rand(rr, rc)
    for name, f in [("sum", lambda d: x.sum(d)), ("max", lambda d: x.amax(d))]:
        for d in [1, 0]:
            out = rr if d == 1 else rc
            yield f"{name} f32 [{rr},{rc}] dim {d}", 4 * (rr * rc + out), (lambda f=f, d=d: f(d))
    table, picked, width = s(50000), s(4096), 4096
    t = rand(table, width)
    ids = torch.tensor([((i * 2654435761) % (1 << 32) >> 7) % table for i in range(picked)], device=dev)
    yield f"index_select f32 {picked} of [{table},{width}]", 8 * picked * width + 4 * picked, lambda: t.index_select(0, ids)
    yield f"copy f32 [{rows},{cols}]^T", 8 * rows * cols, lambda: mt.t().contiguous()
    yield f"fill f32 [{big}]", 4 * big, lambda: torch.full((big,), 1.5, device=dev)
    yield f"rand_uniform f32 [{big}]", 4 * big, lambda: torch.rand(big, device=dev)
    xd = rand(big)
    yield f"dropout p 0.1 f32 [{big}]", 8 * big, lambda: torch.nn.functional.dropout(xd, 0.1)
    sr = rand(s(4096), 4096)
    yield f"argsort f32 [{s(4096)},4096]", 8 * s(4096) * 4096, lambda: torch.argsort(sr, dim=-1, stable=True)
    yield from nn_cases()
    yield from pool_cases()
    yield from upsample_cases()
    yield from matmul_cases()
    yield from conv_cases()
    yield from attention_cases()


def nn_cases():
    rows, cols = s(4096), 16384
    x, w, b = rand(rows, cols), rand(cols), rand(cols)
    nbytes = 8 * rows * cols
    F = torch.nn.functional
    yield f"softmax f32 [{rows},{cols}]", nbytes, lambda: torch.softmax(x, -1)
    yield f"log_softmax f32 [{rows},{cols}]", nbytes, lambda: torch.log_softmax(x, -1)
    yield f"layer_norm f32 [{rows},{cols}]", nbytes, lambda: F.layer_norm(x, (cols,), w, b, 1e-5)
    yield f"rms_norm f32 [{rows},{cols}]", nbytes, lambda: F.rms_norm(x, (cols,), w, 1e-6)
    rows, cols, bf = s(4096), 4096, torch.bfloat16
    xh, wh, bh = rand(rows, cols, dtype=bf), rand(cols, dtype=bf), rand(cols, dtype=bf)
    nbytes = 4 * rows * cols
    yield f"layer_norm bf16 [{rows},{cols}]", nbytes, lambda: F.layer_norm(xh, (cols,), wh, bh, 1e-5)
    yield f"rms_norm bf16 [{rows},{cols}]", nbytes, lambda: F.rms_norm(xh, (cols,), wh, 1e-6)
    shape = planes()
    n = shape[0] * shape[1] * shape[2] * shape[3]
    xl = rand(*shape)
    dims = ",".join(map(str, shape))
    yield f"local_response_norm size 5 f32 [{dims}]", 8 * n, lambda: F.local_response_norm(xl, 5, 1e-4, 0.75, 1.0)
    t, b, h = s(128), 32, 1024
    for name, cls, g in [("lstm", torch.nn.LSTM, 4), ("gru", torch.nn.GRU, 3)]:
        for dt, dtype, size in [("f32", torch.float32, 4), ("f16", torch.float16, 2)]:
            m = cls(h, h, 2).to(dev, dtype).eval()
            xr = rand(t, b, h, dtype=dtype)

            def run(m=m, xr=xr):
                with torch.no_grad():
                    return m(xr)[0]

            yield f"{name} 2x{h} T {t} B {b} {dt}", 2 * 2 * g * h * h * size, run


def planes():
    return [s(32), 64, 112, 112]


def pool_cases():
    shape = planes()
    n = shape[0] * shape[1] * shape[2] * shape[3]
    x = rand(*shape)
    dims = ",".join(map(str, shape))
    F = torch.nn.functional
    yield f"max_pool2d 2x2 f32 [{dims}]", 4 * (n + n // 4), lambda: F.max_pool2d(x, 2)
    yield f"avg_pool2d 2x2 f32 [{dims}]", 4 * (n + n // 4), lambda: F.avg_pool2d(x, 2)


def upsample_cases():
    shape = planes()
    n = shape[0] * shape[1] * shape[2] * shape[3]
    x = rand(*shape)
    dims = ",".join(map(str, shape))
    size = (2 * shape[2], 2 * shape[3])
    yield f"upsample_nearest2d x2 f32 [{dims}]", 20 * n, lambda: torch.nn.functional.interpolate(x, size=size, mode="nearest")


# FLOPs of the FLOP-bound cases (a multiply-add is two), by name.
flops = {}


def matmul_cases():
    torch.backends.cuda.matmul.allow_tf32 = False
    sq, wide, big = s(4096), s(1024), s(8192)
    shapes = [
        (1, sq, sq, sq, "f32", False),
        (1, sq, sq, sq, "f16", False),
        (1, sq, sq, sq, "bf16", False),
        (1, wide, wide, wide, "f32", False),
        (1, big, wide, big, "f32", False),
        (s(64), 512, 64, 512, "f32", False),
        (1, 1, 4096, s(16384), "f32", False),
        (s(32), 64, 576, 3136, "f16", False),
    ]
    # The GPT-2-small example's GEMMs (128 tokens); a rhs named [.., n, k]^T is a transposed view.
    t, vocab = s(128), s(50257)
    for dt in ["f16", "f32"]:
        shapes += [
            (1, t, 768, 2304, dt, False),
            (12, t, 64, t, dt, True),
            (12, t, t, 64, dt, False),
            (1, t, 768, 768, dt, False),
            (1, t, 768, 3072, dt, False),
            (1, t, 3072, 768, dt, False),
            (1, t, 768, vocab, dt, True),
        ]
    # Its f16 decode step (one token): matrix-vector products, the logits' against the tied embedding.
    shapes += [(1, 1, k, n, "f16", False) for k, n in [(768, 2304), (768, 768), (768, 3072), (3072, 768)]]
    shapes += [(1, 1, 768, vocab, "f16", True)]
    types = {"f32": (torch.float32, 4), "f16": (torch.float16, 2), "bf16": (torch.bfloat16, 2)}
    for b, m, k, n, dt, rt in shapes:
        dtype, size = types[dt]
        lead = [] if b == 1 else [b]
        ls, rs = lead + [m, k], lead + ([n, k] if rt else [k, n])
        x, y = rand(*ls, dtype=dtype), rand(*rs, dtype=dtype)
        if rt:
            y = y.transpose(-2, -1)
        name = f"matmul {dt} [{','.join(map(str, ls))}]x[{','.join(map(str, rs))}]{'^T' if rt else ''}"
        flops[name] = 2 * b * m * k * n
        yield name, b * (m * k + k * n + m * n) * size, (lambda x=x, y=y: x @ y)


def conv_cases():
    torch.backends.cudnn.allow_tf32 = False
    F = torch.nn.functional
    issue = [(op, dt, s(32), 64, 56, 64) for op, dt in [("conv2d", "f32"), ("conv2d", "f16"), ("conv_transpose2d", "f32")]]
    # The U-Net example's levels (examples/unet.rs: 32 channels at 256 x 256, batch 8, then
    # channels doubled and sides halved).
    unet = [("conv2d", dt, s(8), 32 << l, 256 >> l, 32 << l) for l in range(4) for dt in ["f32", "f16"]]
    for op, dt, n, c, h, f in issue + unet:
        w = h
        dtype, size = (torch.float32, 4) if dt == "f32" else (torch.float16, 2)
        x, k = rand(n, c, h, w, dtype=dtype), rand(f, c, 3, 3, dtype=dtype)
        name = f"{op} {dt} [{n},{c},{h},{w}] {f}x3x3 pad 1"
        flops[name] = 2 * n * f * h * w * c * 9
        fn = F.conv_transpose2d if op == "conv_transpose2d" else F.conv2d
        yield name, (2 * n * c * h * w + f * c * 9) * size, (lambda x=x, k=k, fn=fn: fn(x, k, padding=1))


def attention_cases():
    # Issue 23's shapes; F.scaled_dot_product_attention picks its flash kernel. FLOPs as torch
    # counts them: 4 B H Lq Lk D, halved where causal and square.
    F = torch.nn.functional
    types = {"f32": (torch.float32, 4), "f16": (torch.float16, 2), "bf16": (torch.bfloat16, 2)}
    shapes = [
        (12, 12, 128, 128, 64, "f32"),
        (12, 12, 128, 128, 64, "f16"),
        (32, 32, s(4096), s(4096), 128, "f16"),
        (32, 32, s(4096), s(4096), 128, "bf16"),
        (32, 32, s(1024), s(1024), 128, "f16"),
        (32, 8, 1, s(4096), 128, "f16"),
        (32, 16, 1, s(4096), 128, "f16"),
        (32, 32, 1, s(4096), 128, "f16"),
        (32, 8, 1, s(1024), 128, "f16"),
        (32, 32, 1, s(1024), 128, "f16"),
        (12, 12, 1, 256, 64, "f32"),
        (12, 12, 1, 256, 64, "f16"),
    ]
    for hq, hkv, lq, lk, d, dt in shapes:
        dtype, size = types[dt]
        causal = lq > 1
        q, k, v = rand(1, hq, lq, d, dtype=dtype), rand(1, hkv, lk, d, dtype=dtype), rand(1, hkv, lk, d, dtype=dtype)
        name = f"sdpa {dt} [1,{hq},{lq},{d}] kv [1,{hkv},{lk},{d}]{' causal' if causal else ''}"
        flops[name] = 4 * hq * lq * lk * d // (2 if causal else 1)
        nbytes = (2 * hq * lq * d + 2 * hkv * lk * d) * size
        yield name, nbytes, (
            lambda q=q, k=k, v=v, c=causal, g=hq != hkv: F.scaled_dot_product_attention(q, k, v, is_causal=c, enable_gqa=g)
        )
    t = s(4096)
    x, c, sn = rand(1, 32, t, 128, dtype=torch.float16), rand(t, 64, dtype=torch.float16), rand(t, 64, dtype=torch.float16)
    n = 32 * t * 128

    def rope():
        a, b = x[..., :64], x[..., 64:]
        return torch.cat([a * c - b * sn, a * sn + b * c], -1)

    def rope_i():
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * c - b * sn, a * sn + b * c], -1).flatten(-2)

    yield f"rope f16 [1,32,{t},128]", 4 * n, rope
    yield f"rope_i f16 [1,32,{t},128]", 4 * n, rope_i
    yield f"copy f16 [1,32,{t},128] (rope's x)", 4 * n, lambda: x.clone()


torch_rate = {}
print(f"# torch {torch.__version__} on {torch.cuda.get_device_name()}")
for name, nbytes, f in cases():
    if only not in name:
        continue
    t = measure_ms(f, max_batch=1000) / 1e3
    torch_rate[name] = nbytes / t / 1e9
    tf = f"\t{flops[name] / t / 1e12:.1f} TFLOP/s" if name in flops else ""
    print(f"TORCH\t{name}\t{t * 1e6:.1f}us\t{torch_rate[name]:.1f} GB/s{tf}")

if ours:
    print(f"\n{'case':<48} {'backend':>7} {'GB/s':>8} {'torch':>8} {'ratio':>6}")
    for line in open(ours):
        parts = line.rstrip("\n").split("\t")
        if len(parts) == 5 and parts[0] == "BENCH":
            _, kind, name, _, gbs = parts
            ref = torch_rate.get(name)
            ratio = f"{float(gbs) / ref:.2f}" if ref else "-"
            # A FLOP-bound case's TFLOP/s from its time (the ratio is the same).
            tf = f" {flops[name] / (int(parts[3]) * 1e-9) / 1e12:>7.1f} TFLOP/s" if name in flops else ""
            print(f"{name:<48} {kind:>7} {float(gbs):>8.1f} {ref or 0:>8.1f} {ratio:>6}{tf}")
