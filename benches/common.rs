//! Shared by every `benches/<family>.rs`: the family's cases of `src/app/bench.rs` on every
//! GPU backend found (and the cpu with `RWO_BENCH_CPU=1`), under one group per family so the
//! backends sit side by side. `RWO_BENCH_SCALE=N` divides the sizes.

#[path = "../src/app/bench.rs"]
#[allow(dead_code, reason = "criterion times the cases itself, without `measure`")]
mod bench;
#[path = "../src/app/cpu_time.rs"]
mod cpu_time;

use criterion::{BenchmarkId, Criterion, Throughput};
use rocm_wgpu_ops::spec::Family;
use rocm_wgpu_ops::{BackendKind, Device};
use std::time::{Duration, Instant};

pub fn run(family: Family) {
    let scale = std::env::var("RWO_BENCH_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let with_cpu = std::env::var("RWO_BENCH_CPU").is_ok_and(|v| v == "1");
    // Each case times one op's kernel: ops run one at a time (a fused result dropped unread
    // would run nothing).
    let devices: Vec<Device> = Device::probe_all()
        .into_iter()
        .filter_map(|(kind, d)| d.ok().filter(|_| kind != BackendKind::Cpu || with_cpu))
        .map(|d| d.with_fusion(false))
        .collect();
    let mut c = Criterion::default()
        .configure_from_args()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    let mut group = c.benchmark_group(family.name());
    for case in bench::cases(scale).into_iter().filter(|c| c.family == family) {
        group.throughput(Throughput::Bytes(case.bytes));
        for dev in &devices {
            let op = match case.prepare(dev) {
                Ok(op) => op,
                Err(e) => {
                    eprintln!("{} on {}: {e}", case.name, dev.kind());
                    continue;
                }
            };
            group.bench_function(BenchmarkId::new(&case.name, dev.kind().name()), |b| {
                // Ops are recorded back to back and the device synchronised before the timer
                // stops, as work runs in real use.
                b.iter_custom(|iters| {
                    let t = Instant::now();
                    for _ in 0..iters {
                        if let Err(e) = op() {
                            eprintln!("{} on {}: {e}", case.name, dev.kind());
                            break;
                        }
                    }
                    if let Err(e) = dev.synchronize() {
                        eprintln!("{} on {}: {e}", case.name, dev.kind());
                    }
                    t.elapsed()
                })
            });
        }
    }
    if family == Family::Elementwise {
        // The CPU cost of recording one small op, without waiting for the device.
        group.throughput(Throughput::Elements(1));
        for dev in &devices {
            group.bench_function(BenchmarkId::new("record add f32 [16]", dev.kind().name()), |b| {
                b.iter_custom(|iters| {
                    bench::record_cost(dev, iters as u32).map_or(Duration::ZERO, |t| t.wall * iters as u32)
                })
            });
        }
    }
    group.finish();
    c.final_summary();
}
