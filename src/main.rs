//! The main job: lists the backends found here, then runs the self-check of every op on every
//! available backend against the cpu reference. Exits non-zero if any check fails.
//!
//! `cargo run --release` (or `-- check`); `cargo run --release -- bench [FILTER] [--scale N]
//! [--cpu]` times the benchmark cases on every GPU backend found.

use rocm_wgpu_ops::{BackendKind, Device, bench, selfcheck};
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None | Some("check") => check(),
        Some("bench") => run_bench(&args[1..]),
        Some(other) => {
            eprintln!("unknown command {other:?}; usage: rocm-wgpu-ops [check | bench [FILTER] [--scale N] [--cpu]]");
            ExitCode::from(2)
        }
    }
}

fn check() -> ExitCode {
    println!("rocm-wgpu-ops {}", env!("CARGO_PKG_VERSION"));
    println!("backends:");
    let mut devices = Vec::new();
    for (kind, dev) in Device::probe_all() {
        match dev {
            Ok(dev) => {
                println!("  {kind:5} found");
                for (key, value) in dev.info() {
                    println!("        {key}: {value}");
                }
                print_unsupported(&dev);
                devices.push(dev);
            }
            Err(e) => println!("  {kind:5} absent: {e}"),
        }
    }
    match Device::auto() {
        Ok(dev) => println!("Device::auto() chooses {}", dev.describe()),
        Err(e) => println!("Device::auto() fails: {e}"),
    }
    println!("self-check of every op and dtype against the cpu reference:");
    let mut failed = 0;
    for dev in &devices {
        for report in selfcheck::run(dev) {
            let status = if report.failures.is_empty() { "pass" } else { "FAIL" };
            let (kind, family) = (dev.kind().name(), report.family.name());
            let unsupported = match report.unsupported.len() {
                0 => String::new(),
                n => format!(", {n} unsupported here (UnsupportedDType)"),
            };
            println!(
                "  {kind:5} {family:12} {status} ({} checks, {} failed{unsupported})",
                report.checks,
                report.failures.len()
            );
            for f in report.failures.iter().take(5) {
                println!("        {f}");
            }
            failed += report.failures.len();
        }
    }
    if failed == 0 {
        println!("all checks passed");
        ExitCode::SUCCESS
    } else {
        println!("{failed} checks failed");
        ExitCode::FAILURE
    }
}

/// The device's statement of what it cannot run (`Device::supports`), one line per dtype and
/// reason.
fn print_unsupported(dev: &Device) {
    let mut by: std::collections::BTreeMap<(String, String), Vec<&str>> = Default::default();
    for (op, dtype, reason) in dev.unsupported() {
        by.entry((dtype.name().to_string(), reason)).or_default().push(op.name);
    }
    if by.is_empty() {
        println!("        unsupported: none (every op x dtype of the spec runs)");
    }
    for ((dtype, reason), ops) in by {
        println!("        unsupported in {dtype} ({reason}): {}", ops.join(" "));
    }
}

fn run_bench(args: &[String]) -> ExitCode {
    let mut filter = String::new();
    let mut scale = 1;
    let mut with_cpu = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--scale" => scale = it.next().and_then(|s| s.parse().ok()).unwrap_or(1).max(1),
            "--cpu" => with_cpu = true,
            f => filter = f.to_string(),
        }
    }
    let devices: Vec<Device> = Device::probe_all()
        .into_iter()
        .filter_map(|(kind, d)| d.ok().filter(|_| kind != BackendKind::Cpu || with_cpu))
        .collect();
    if devices.is_empty() {
        eprintln!("no GPU backend found (add --cpu to time the cpu reference)");
        return ExitCode::FAILURE;
    }
    for d in &devices {
        println!("# {}", d.describe());
    }
    println!("{:<48} {:>5} {:>11} {:>9}", "case", "on", "time", "GB/s");
    let mut failed = false;
    for case in bench::cases(scale).iter().filter(|c| c.name.contains(&filter) || c.family.name().contains(&filter)) {
        let mut rates = vec![];
        for dev in &devices {
            let kind = dev.kind().name();
            let t = case.prepare(dev).and_then(|op| bench::measure(dev, &op, Duration::from_millis(400)));
            match t {
                Ok(t) => {
                    let gbs = case.bytes as f64 / t.as_secs_f64() / 1e9;
                    println!("{:<48} {kind:>5} {:>9.1}us {gbs:>9.1}", case.name, t.as_secs_f64() * 1e6);
                    println!("BENCH\t{kind}\t{}\t{}\t{gbs:.3}", case.name, t.as_nanos());
                    rates.push((kind, gbs));
                }
                Err(e) => {
                    println!("{:<48} {kind:>5} error: {e}", case.name);
                    failed = true;
                }
            }
        }
        if let [(k0, r0), rest @ ..] = rates.as_slice() {
            for (k, r) in rest {
                println!("{:<48} {k}/{k0} = {:.2}x", "", r / r0);
            }
        }
    }
    for dev in &devices {
        match bench::record_cost(dev, 20_000) {
            Ok(t) => println!(
                "{:<48} {:>5} {:>9.2}us of CPU to record one op",
                "record add f32 [16]",
                dev.kind().name(),
                t.as_secs_f64() * 1e6
            ),
            Err(e) => {
                println!("record add f32 [16] {}: error: {e}", dev.kind());
                failed = true;
            }
        }
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
