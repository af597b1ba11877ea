"""How torch_ref.py and models_ref.py time torch on the GPU, the one way for both."""
import torch


def measure_ms(f, max_batch):
    """Median ms per call of `f`: 3 warm-up calls, then 7 timings (CUDA events) of a batch of
    calls that fills about 40 ms, at most `max_batch` calls."""
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    f()
    end.record()
    torch.cuda.synchronize()
    batch = max(1, min(max_batch, int(40.0 / max(start.elapsed_time(end), 1e-3))))
    times = []
    for _ in range(7):
        start.record()
        for _ in range(batch):
            f()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / batch)
    return sorted(times)[len(times) // 2]
