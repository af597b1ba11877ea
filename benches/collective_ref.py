#!/usr/bin/env python3
"""torch.distributed's NCCL all-reduce (sum, f32, in place) of the size examples/all_reduce.rs
uses, one process per GPU, timed the same way (median of 20 after 5 warm-ups, host clock
around a synchronised call); prints the line beside ours and, given our output, the ratio.

    python3 benches/collective_ref.py [OUR_OUTPUT] [--mib 256] [--gpus N]
"""
import os, sys, time
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, n, mib, port, q):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), NCCL_NVLS_ENABLE="0")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=n, device_id=torch.device("cuda", rank))
    x = torch.ones(mib << 18, device="cuda")
    for _ in range(5):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    dist.barrier()
    times = []
    for _ in range(20):
        torch.cuda.synchronize()
        dist.barrier()
        t = time.perf_counter()
        dist.all_reduce(x)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    if rank == 0:
        q.put(sorted(times)[len(times) // 2])
    dist.destroy_process_group()


def main():
    args = sys.argv[1:]
    opt = lambda k, d: int(args[args.index(k) + 1]) if k in args else d
    mib, n = opt("--mib", 256), opt("--gpus", torch.cuda.device_count())
    ours = next((a for a in args if not a.startswith("--") and not a.isdigit()), None)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, n, mib, 29511, q)) for r in range(n)]
    for p in procs:
        p.start()
    t = q.get(timeout=240)
    for p in procs:
        p.join()
    alg = (mib << 20) / t / 1e9
    bus = alg * 2 * (n - 1) / n
    print(f"# torch {torch.__version__}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))} on {torch.cuda.get_device_name(0)}")
    print(f"TORCH all_reduce f32 {mib} MiB n={n} {t * 1e3:.3f} ms algbw {alg:.1f} GB/s busbw {bus:.1f} GB/s")
    if ours:
        for line in open(ours):
            if line.startswith("COLLECTIVE all_reduce") and f"n={n}" in line:
                w = line.split()
                our_bus = float(w[w.index("busbw") + 1])
                print(f"{w[2]} busbw {our_bus:.1f} GB/s = {our_bus / bus:.2f}x torch's {bus:.1f} GB/s")


if __name__ == "__main__":
    main()
