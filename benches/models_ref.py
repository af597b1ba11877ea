#!/usr/bin/env python3
"""PyTorch's twins of examples/transformer.rs and examples/unet.rs, timed on the same GPU.

    python3 benches/models_ref.py [EXAMPLES_OUTPUT] [--dtype f32,f16,bf16] [--no-compile]

With the output of the examples (their MODEL lines), runs torch at exactly the shapes those lines
name, in their dtypes, and prints each backend's ms per forward as a ratio of torch eager's (and
torch.compile's, where it works). Without it, runs the examples' default shapes. Prints one line
per (model, dtype, mode):

    TORCH <model> <dtype> <eager|graphs|compile> <ms> ms <config>

"graphs" is eager captured once in a CUDA graph and replayed (torch.cuda.graph): the twin of the
examples' `+replay` lines (the same forward through `Device::capture` and `Plan::run`).

The transformer's DECODE lines (`--decode N`: ms per generated token) get the same twin of its
decode: the prompt into a static KV cache, then N greedy tokens one at a time, each step writing
its keys and values at its position (index_copy_) and attending over the whole cache through a
mask, position and token fed back on the device; eager, and one step captured in a CUDA graph
(which also advances the token and position) replayed per token:

    TORCH decode <dtype> <eager|graphs> <ms per token> ms <config>

The twins run the examples' op chains one for one (attention through
F.scaled_dot_product_attention, as the example's fused op; torch has no fused rope, so the llama
twin's is the usual rotate-half expression), so eager is nearly the same sequence of launches and
compile shows what fusion buys. TF32 is off for matmul and conv: the crate computes
f32 in f32. The transformer's MODEL lines name its arch (gpt2 or llama); a line without one, from
before the llama arch, is gpt2.
"""
import functools
import math
import sys
import torch
import torch.nn.functional as F
from timing import measure_ms

dev = "cuda"
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
TRANSFORMER = [
    "arch=gpt2,layers=12,width=768,heads=12,kv_heads=12,mlp=3072,seq=128,vocab=50257",
    "arch=llama,layers=12,width=768,heads=12,kv_heads=12,mlp=2048,seq=128,vocab=50257",
]
UNET = ["batch=8,size=256,width=32,levels=3,up=nearest", "batch=8,size=256,width=32,levels=3,up=transpose"]


def graphed(f):
    """f captured in a CUDA graph after a warm-up on a side stream (as torch's docs do); each
    call replays it and returns the captured output."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            f()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = f()

    def replay():
        g.replay()
        return out

    return replay


def parse(config):
    return {k: (v if k in ("up", "arch", "quant") else int(v)) for k, v in (kv.split("=") for kv in config.split(","))}


def weight(dtype, *shape, std=0.02, mean=0.0):
    return torch.randn(*shape, device=dev, dtype=dtype) * std + mean


def prompt(T, V):
    return torch.tensor([(i * 2654435761) % V for i in range(T)], device=dev)


def transformer(c, dtype):
    """The forward of examples/transformer.rs on its prompt, batch 1, in its --arch."""
    f = model(c, dtype)
    ids = prompt(c["seq"], c["vocab"])
    return lambda: f(ids)


def model(c, dtype):
    """examples/transformer.rs's model in its --arch: f(ids, slot=None) gives the greedy next
    token at every position; with a Slot, the tokens are at its positions in its cache."""
    return llama(c, dtype) if c.get("arch", "gpt2") == "llama" else gpt2(c, dtype)


class Slot:
    """A KV cache ([1, Hkv, P, D] per layer) and the positions `at` [T] of a step's tokens in
    it, with the mask [1, 1, T, P] of the cache positions each sees (the example's Slot)."""

    def __init__(self, c, dtype, at):
        H, K, P = c["heads"], c.get("kv_heads", c["heads"]), c["seq"] + c.get("decode", 0)
        D = c["width"] // H
        self.k = [torch.zeros(1, K, P, D, device=dev, dtype=dtype) for _ in range(c["layers"])]
        self.v = [torch.zeros(1, K, P, D, device=dev, dtype=dtype) for _ in range(c["layers"])]
        self.keys = torch.arange(P, device=dev)
        self.at = at

    def mask(self):
        return (self.keys[None, :] <= self.at[:, None])[None, None]


def decoder(c, dtype, mode):
    """examples/transformer.rs's --decode N: the prompt into the cache, then a callable that
    generates the N tokens after it (eager, or each step a replay of one captured step)."""
    f, T, N = model(c, dtype), c["seq"], c["decode"]
    slot = Slot(c, dtype, torch.arange(T, device=dev))
    first = f(prompt(T, c["vocab"]), slot)[-1:].clone()
    token, at = first.clone(), torch.tensor([T], device=dev)
    slot.at = at

    def step():
        token.copy_(f(token, slot)[-1:])
        at.add_(1)

    if mode == "graphs":
        step = graphed(step)

    def generate():
        token.copy_(first)
        at.fill_(T)
        for _ in range(N):
            step()

    return generate


def gpt2(c, dtype):
    """examples/common/gpt2.rs: GPT-2 small's shape."""
    L, C, H, M, T, V = c["layers"], c["width"], c["heads"], c["mlp"], c["seq"], c["vocab"]
    D = C // H
    w = functools.partial(weight, dtype)

    def norm():
        return w(C, mean=1.0), w(C)

    resid = 0.02 / math.sqrt(2 * L)
    layers = [
        (norm(), (w(C, 3 * C), w(3 * C)), (w(C, C, std=resid), w(C)), norm(), (w(C, M), w(M)), (w(M, C, std=resid), w(C)))
        for _ in range(L)
    ]
    wte, wpe, ln_f = w(V, C), w(T + c.get("decode", 0), C), norm()

    def forward(ids, slot=None):
        x = wte.index_select(0, ids) + (wpe[: len(ids)] if slot is None else wpe.index_select(0, slot.at))
        mask = None if slot is None else slot.mask()
        for i, (ln1, qkv, proj, ln2, fc, fc2) in enumerate(layers):
            h = F.layer_norm(x, (C,), *ln1, 1e-5) @ qkv[0] + qkv[1]
            q, k, v = (heads(h, j * H, H, D) for j in range(3))
            x = x + (attend(q, k, v, slot, i, mask) @ proj[0] + proj[1])
            h = F.gelu(F.layer_norm(x, (C,), *ln2, 1e-5) @ fc[0] + fc[1], approximate="tanh")
            x = x + (h @ fc2[0] + fc2[1])
        logits = F.layer_norm(x, (C,), *ln_f, 1e-5) @ wte.t()
        return logits.argmax(1)

    return forward


def heads(x, first, n, d):
    """Columns [first d, (first + n) d) of x (T, _) as n heads [1, n, T, d] (a view)."""
    return x[:, first * d : (first + n) * d].unflatten(1, (n, d)).permute(1, 0, 2).unsqueeze(0)


def attend(q, k, v, slot=None, layer=0, mask=None):
    """Causal attention, back to (T, H D); with a slot, k and v written into its cache at its
    positions and the whole cache attended through its mask. enable_gqa only where k and v
    have fewer heads, so that equal heads keep torch's choice of kernel as without it."""
    gqa = k.shape[1] != q.shape[1]
    if slot is None:
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
    else:
        kc, vc = slot.k[layer], slot.v[layer]
        kc.index_copy_(2, slot.at, k)
        vc.index_copy_(2, slot.at, v)
        y = F.scaled_dot_product_attention(q, kc, vc, attn_mask=mask, enable_gqa=gqa)
    return y[0].permute(1, 0, 2).flatten(1)


def llama(c, dtype):
    """examples/common/llama.rs: RMSNorm, RoPE (theta 10000, rotating half against half),
    grouped KV heads, SwiGLU MLP, no biases, the lm head tied to the embedding."""
    L, C, H, K, M, T, V = c["layers"], c["width"], c["heads"], c["kv_heads"], c["mlp"], c["seq"], c["vocab"]
    D = C // H
    w = functools.partial(weight, dtype)
    resid = 0.02 / math.sqrt(2 * L)
    layers = [
        (w(C, mean=1.0), w(C, (H + 2 * K) * D), w(C, C, std=resid), w(C, mean=1.0), w(C, 2 * M), w(M, C, std=resid))
        for _ in range(L)
    ]
    embed, norm = w(V, C), w(C, mean=1.0)
    inv = 10000.0 ** (-torch.arange(0, D, 2, device=dev, dtype=torch.float64) / D)
    ang = torch.arange(T + c.get("decode", 0), device=dev, dtype=torch.float64)[:, None] * inv[None, :]
    cos_all, sin_all = ang.cos().to(torch.float32).to(dtype), ang.sin().to(torch.float32).to(dtype)

    def rope(x, cos, sin):
        a, b = x[..., : D // 2], x[..., D // 2 :]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)

    def forward(ids, slot=None):
        if slot is None:
            cos, sin, mask = cos_all[: len(ids)], sin_all[: len(ids)], None
        else:
            cos, sin, mask = cos_all.index_select(0, slot.at), sin_all.index_select(0, slot.at), slot.mask()
        x = embed.index_select(0, ids)
        for i, (attn_norm, qkv, out, mlp_norm, gate_up, down) in enumerate(layers):
            h = F.rms_norm(x, (C,), attn_norm, 1e-5) @ qkv
            q, k, v = rope(heads(h, 0, H, D), cos, sin), rope(heads(h, H, K, D), cos, sin), heads(h, H + K, K, D)
            x = x + attend(q, k, v, slot, i, mask) @ out
            g = F.rms_norm(x, (C,), mlp_norm, 1e-5) @ gate_up
            x = x + (F.silu(g[:, :M]) * g[:, M:]) @ down
        logits = F.rms_norm(x, (C,), norm, 1e-5) @ embed.t()
        return logits.argmax(1)

    return forward


def unet(c, dtype):
    """The forward of examples/unet.rs."""
    N, S, W, L, up = c["batch"], c["size"], c["width"], c["levels"], c["up"]
    ch = [W << l for l in range(L + 1)]

    def conv(o, i, k):
        return torch.randn(o, i, k, k, device=dev, dtype=dtype) * math.sqrt(2 / (i * k * k)), torch.randn(o, device=dev, dtype=dtype) * 0.02

    def block(o, i):
        return conv(o, i, 3), conv(o, o, 3)

    down = [block(ch[l], 3 if l == 0 else ch[l - 1]) for l in range(L)]
    mid = block(ch[L], ch[L - 1])
    ups = []
    for l in reversed(range(L)):
        if up == "transpose":
            t = (torch.randn(ch[l + 1], ch[l], 2, 2, device=dev, dtype=dtype) * math.sqrt(2 / ch[l + 1]), torch.randn(ch[l], device=dev, dtype=dtype) * 0.02)
            ups.append((t, block(ch[l], 2 * ch[l])))
        else:
            ups.append((None, block(ch[l], ch[l + 1] + ch[l])))
    head = conv(3, W, 1)
    x0 = torch.rand(N, 3, S, S, device=dev, dtype=dtype) * 2 - 1

    def run_block(x, b):
        for k, bias in b:
            x = F.relu(F.conv2d(x, k, bias, padding=1))
        return x

    def forward():
        x, skips = x0, []
        for b in down:
            y = run_block(x, b)
            skips.append(y)
            x = F.max_pool2d(y, 2)
        x = run_block(x, mid)
        for (t, b), skip in zip(ups, reversed(skips)):
            if t is None:
                x = F.interpolate(x, size=skip.shape[2:], mode="nearest")
            else:
                x = F.conv_transpose2d(x, t[0], t[1], stride=2)
            x = run_block(torch.cat([x, skip], 1), b)
        return F.conv2d(x, *head)

    return forward


def main():
    args = sys.argv[1:]
    dtypes, compile_too = ["f32", "f16", "bf16"], True
    if "--dtype" in args:
        i = args.index("--dtype")
        dtypes = args[i + 1].split(",")
        del args[i : i + 2]
    if "--no-compile" in args:
        args.remove("--no-compile")
        compile_too = False
    ours = []
    if args:
        for line in open(args[0]):
            p = line.split()
            if len(p) == 7 and p[0] in ("MODEL", "DECODE") and p[5] == "ms":
                model = "decode" if p[0] == "DECODE" else p[1]
                ours.append((model, p[2], p[3], float(p[4]), p[6]))
    if ours:
        runs = sorted({(m, d, cfg) for m, _, d, _, cfg in ours})
    else:
        runs = [(m, d, cfg) for d in dtypes for m, cfg in [("transformer", t) for t in TRANSFORMER] + [("unet", u) for u in UNET]]

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name()}")
    ref = {}
    for model, dtype, cfg in runs:
        if parse(cfg).get("quant", "none") != "none":
            print(f"# {model} {dtype} {cfg}: no twin (torch has no ggml blocks)")
            continue
        build = {"transformer": transformer, "unet": unet, "decode": None}[model]
        c = parse(cfg)
        with torch.no_grad():
            if build is None:
                # ms per token: a call generates all of them.
                n = c["decode"]
                modes = [(m, lambda m=m: decoder(c, DTYPES[dtype], m)) for m in ("eager", "graphs")]
            else:
                f, n = build(c, DTYPES[dtype]), 1
                modes = [("eager", lambda: f), ("graphs", lambda: graphed(f))]
                if compile_too:
                    modes.append(("compile", lambda: torch.compile(f)))
            for mode, make in modes:
                try:
                    ms = measure_ms(make(), max_batch=100) / n
                except Exception as e:  # torch.compile needs a working Triton/compiler: say why not
                    print(f"# {model} {dtype} {mode}: failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                    continue
                ref[(model, dtype, mode, cfg)] = ms
                print(f"TORCH {model} {dtype} {mode} {ms:.3f} ms {cfg}")
        torch.cuda.empty_cache()

    if ours:
        head = " ".join(f"{m:>9} {'ratio':>6}" for m in ("eager", "graphs", "compile"))
        print(f"\n{'model':<12} {'backend':>12} {'dtype':>5} {'ms':>9} {head}  config")
        for model, backend, dtype, ms, cfg in ours:
            fmt = lambda t: f"{t:>9.3f} {ms / t:>6.2f}" if t else f"{'-':>9} {'-':>6}"
            cols = " ".join(fmt(ref.get((model, dtype, m, cfg))) for m in ("eager", "graphs", "compile"))
            print(f"{model:<12} {backend:>12} {dtype:>5} {ms:>9.3f} {cols}  {cfg}")
        print("(ratio: our ms / torch's ms; above 1 is slower than torch)")


main()
