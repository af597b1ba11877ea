//! The main job: lists the backends found here, then runs the self-check of every op on every
//! available backend against the cpu reference (f32 only and within a time budget on a GL
//! software adapter, which compiles kernels slowly: it is named, with the fix), with a progress
//! line on a terminal.
//! Exits non-zero if any check fails.
//!
//! `cargo run --release` (or `-- check`); `cargo run --release -- bench [FILTER] [--scale N]
//! [--cpu] [--torch FILE] [--chart PATH]` times the benchmark cases on every GPU backend found
//! and draws them (`bench.svg` unless `--chart` says where), with PyTorch's figures from FILE (the
//! output of `benches/torch_ref.py`) beside them.
//!
//! A terminal program, so native only: on wasm32 it compiles to an empty module, and the
//! self-check runs in a browser through the page in `examples/web/`.
#![cfg_attr(target_family = "wasm", no_main)]
#![cfg(not(target_family = "wasm"))]

mod app;

use app::chart::{self, Group, Panel};
use app::{bench, selfcheck};
use rocm_wgpu_ops::spec::Family;
use rocm_wgpu_ops::{BackendKind, Device};
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None | Some("check") => check(),
        Some("bench") => run_bench(&args[1..]),
        Some(other) => {
            eprintln!(
                "unknown command {other:?}; usage: rocm-wgpu-ops [check | bench [FILTER] [--scale N] [--cpu] \
                 [--torch FILE] [--chart PATH]]"
            );
            ExitCode::from(2)
        }
    }
}

fn check() -> ExitCode {
    println!("rocm-wgpu-ops {}", env!("CARGO_PKG_VERSION"));
    println!("backends:");
    let mut devices = Vec::new();
    let listed = Device::list();
    if !listed.is_empty() {
        println!("  every GPU device here, by ordinal (Device::cuda(n), rocm(n), wgpu_adapter(n)):");
        listed.iter().for_each(|e| println!("        {e}"));
    }
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
        let kind = dev.kind().name();
        let scope = match selfcheck::slow_adapter(dev) {
            Some(warning) => {
                println!("  warning: {warning}.");
                println!(
                    "  {kind:5} quick check on this adapter: f32 only, the other dtypes skipped; \
                     checks start for {} (those left then are skipped)",
                    minutes(selfcheck::QUICK_BUDGET)
                );
                selfcheck::Scope::Quick
            }
            None => selfcheck::Scope::Full,
        };
        let counts: Vec<usize> = Family::ALL.iter().map(|&f| selfcheck::count(f, scope)).collect();
        let mut progress = Progress::new(kind, counts.iter().sum());
        let end = progress.start + selfcheck::QUICK_BUDGET;
        for (k, &family) in Family::ALL.iter().enumerate() {
            // A quick check shares the time left among the families left by their check counts,
            // so every family gets its share whatever the first ones took.
            let until = (scope == selfcheck::Scope::Quick).then(|| {
                let now = Instant::now();
                let left: usize = counts[k..].iter().sum();
                now + end.saturating_duration_since(now).mul_f64(counts[k] as f64 / left.max(1) as f64)
            });
            let report =
                selfcheck::run_family(dev, family, scope, until, &mut |i, name| progress.show(family, i, name));
            progress.finish_family(counts[k]);
            let status = if report.failures.is_empty() { "pass" } else { "FAIL" };
            let mut notes = String::new();
            if !report.unsupported.is_empty() {
                notes += &format!(", {} unsupported here (UnsupportedDType)", report.unsupported.len());
            }
            if report.skipped > 0 {
                notes += &format!(", {} skipped (f32 only here)", report.skipped);
            }
            if report.out_of_time > 0 {
                notes += &format!(", {} skipped (out of time here)", report.out_of_time);
            }
            println!(
                "  {kind:5} {:12} {status} ({} checks, {} failed{notes})",
                family.name(),
                report.checks,
                report.failures.len()
            );
            for f in report.failures.iter().take(5) {
                println!("        {f}");
            }
            failed += report.failures.len();
        }
        println!("  {kind:5} checked in {}", minutes(progress.start.elapsed()));
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

/// ` TFLOP/s` of a FLOP-bound case taking `t`, or nothing.
fn flops(case: &bench::Case, t: Duration) -> String {
    if case.flops == 0 {
        String::new()
    } else {
        format!(" {:>7.1} TFLOP/s", case.flops as f64 / t.as_secs_f64() / 1e12)
    }
}

/// The GEMM kernel the case took on wgpu, then the case under each kernel `RWO_GEMM_KERNELS`
/// lists (space-separated, as `Display` writes them: the tuning sweep), each result checked
/// against the same inputs under the table's small tiles (independent code from the other
/// configurations): `ok` within [`sweep_tol`] (relative L2 error), else `WRONG`.
fn sweep(dev: &Device, case: &bench::Case) {
    use rocm_wgpu_ops::wgpu::gemm_hooks::{Kernel, last_kernel, last_parts, table_tiles, with_kernel, with_parts};
    if let Some(k) = last_kernel() {
        println!("{:<48} kernel {k}@{}", "", last_parts());
    }
    let list = std::env::var("RWO_GEMM_KERNELS").unwrap_or_default();
    let host =
        |t: rocm_wgpu_ops::Result<rocm_wgpu_ops::Tensor>| t.and_then(|t| t.to_cpu_storage()).map(|s| s.to_f64_vec());
    for k in list.split_whitespace() {
        // `KERNEL@PARTS`: K in that many parts (split-K).
        let (kernel, parts) = k.split_once('@').unwrap_or((k, "1"));
        let parts = parts.parse::<usize>().unwrap_or(1);
        let t = kernel.parse::<Kernel>().and_then(|k| {
            let inner = case.prepare(dev)?;
            let want = host(with_parts(1, || with_kernel(Kernel::Tiled(table_tiles()[2]), &inner)))?;
            let op: bench::Op = Box::new(move || with_parts(parts, &inner));
            let got = host(with_kernel(k, &op))?;
            let (mut d2, mut w2) = (0.0, 0.0);
            for (g, w) in got.iter().zip(&want) {
                d2 += (g - w) * (g - w);
                w2 += w * w;
            }
            let err = (d2 / w2).sqrt();
            let t = with_kernel(k, || bench::measure(dev, &op, Duration::from_millis(300)))?;
            Ok((t, err))
        });
        match t {
            Ok((t, err)) => {
                let verdict = if err <= sweep_tol(case) { "ok" } else { "WRONG" };
                let us = t.as_secs_f64() * 1e6;
                println!("{:<48}  {us:>9.1}us{} {k} {verdict} (rel err {err:.1e})", "", flops(case, t));
                let tf = case.flops as f64 / t.as_secs_f64() / 1e12;
                println!("SWEEP\t{}\t{k}\t{us:.1}us\t{tf:.1} TFLOP/s\t{verdict}\t{err:.2e}", case.name);
            }
            Err(e) => println!("{:<48}  {k}: {e}", ""),
        }
    }
}

/// PyTorch's version line and its time per case name, in seconds, from the output of
/// `benches/torch_ref.py` (`# torch ...`, then `TORCH\t{name}\t{microseconds}us\t...` lines).
fn read_torch(path: &str) -> Result<(String, HashMap<String, f64>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--torch {path}: {e}"))?;
    let version =
        text.lines().find_map(|l| l.strip_prefix("# torch ")).map_or("torch".into(), |v| format!("torch {v}"));
    let mut times = HashMap::new();
    for line in text.lines().filter(|l| l.starts_with("TORCH\t")) {
        let parts: Vec<&str> = line.split('\t').collect();
        let us = parts.get(2).and_then(|t| t.strip_suffix("us")).and_then(|t| t.parse::<f64>().ok());
        match (parts.get(1), us) {
            (Some(name), Some(us)) if us > 0.0 => times.insert(name.to_string(), us * 1e-6),
            _ => return Err(format!("--torch {path}: not a TORCH line of torch_ref.py: {line:?}")),
        };
    }
    if times.is_empty() {
        return Err(format!("--torch {path}: no TORCH lines (the output of benches/torch_ref.py)"));
    }
    Ok((version, times))
}

/// What the chart shows for a case taking `secs`: TFLOP/s for a FLOP-bound case, else GB/s.
fn rate(case: &bench::Case, secs: f64) -> f64 {
    if case.flops > 0 { case.flops as f64 / secs / 1e12 } else { case.bytes as f64 / secs / 1e9 }
}

/// The relative L2 error a sweep allows against the reference tiles: f32 summation order, or
/// one rounding of a 2-byte output now and then.
fn sweep_tol(case: &bench::Case) -> f64 {
    if case.name.contains("f32") { 1e-5 } else { 5e-3 }
}

fn run_bench(args: &[String]) -> ExitCode {
    let mut filter = String::new();
    let mut scale = 1;
    let mut with_cpu = false;
    let mut torch_file = None;
    let mut chart_path = "bench.svg".to_string();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--scale" => scale = it.next().and_then(|s| s.parse().ok()).unwrap_or(1).max(1),
            "--cpu" => with_cpu = true,
            "--torch" => torch_file = it.next().cloned(),
            "--chart" => chart_path = it.next().cloned().unwrap_or(chart_path),
            f => filter = f.to_string(),
        }
    }
    let (torch_version, torch) = match torch_file.as_deref().map(read_torch).transpose() {
        Ok(t) => t.unzip(),
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    // Each case times one op's kernel: ops run one at a time (a fused result dropped unread
    // would run nothing).
    let devices: Vec<Device> = Device::probe_all()
        .into_iter()
        .filter_map(|(kind, d)| d.ok().filter(|_| kind != BackendKind::Cpu || with_cpu))
        .map(|d| d.with_fusion(false))
        .collect();
    if devices.is_empty() {
        eprintln!("no GPU backend found (add --cpu to time the cpu reference)");
        return ExitCode::FAILURE;
    }
    let mut lines: Vec<String> = devices.iter().map(|d| d.describe().to_string()).collect();
    lines.extend(torch_version);
    for line in &lines {
        println!("# {line}");
    }
    let mut panels: Vec<Panel> = vec![];
    println!("{:<48} {:>5} {:>11} {:>9}", "case", "on", "time", "GB/s");
    let mut failed = false;
    for case in bench::cases(scale).iter().filter(|c| c.name.contains(&filter) || c.family.name().contains(&filter)) {
        let mut rates = vec![];
        let mut bars = vec![];
        for dev in &devices {
            let kind = dev.kind().name();
            let t = case.prepare(dev).and_then(|op| bench::measure(dev, &op, Duration::from_millis(400)));
            match t {
                Ok(t) => {
                    let gbs = case.bytes as f64 / t.as_secs_f64() / 1e9;
                    println!(
                        "{:<48} {kind:>5} {:>9.1}us {gbs:>9.1}{}",
                        case.name,
                        t.as_secs_f64() * 1e6,
                        flops(case, t)
                    );
                    println!("BENCH\t{kind}\t{}\t{}\t{gbs:.3}", case.name, t.as_nanos());
                    // Speeds as calls a second: a case that moves no bytes still compares.
                    rates.push((kind, 1.0 / t.as_secs_f64()));
                    bars.push((kind.to_string(), rate(case, t.as_secs_f64())));
                    if dev.kind() == BackendKind::Wgpu && case.flops > 0 {
                        sweep(dev, case);
                    }
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
        if let Some(&secs) = torch.as_ref().and_then(|t| t.get(&case.name)) {
            let gbs = case.bytes as f64 / secs / 1e9;
            for (k, r) in &rates {
                println!("{:<48} {k}/torch = {:.2}x (torch {gbs:.1} GB/s)", "", r * secs);
            }
            bars.push(("torch".to_string(), rate(case, secs)));
        }
        let (title, unit) = (case.family.name(), if case.flops > 0 { "TFLOP/s" } else { "GB/s" });
        let group = Group { case: case.name.clone(), bars };
        match panels.last_mut() {
            Some(p) if p.title == title && p.unit == unit => p.groups.push(group),
            _ => panels.push(Panel { title: title.to_string(), unit, groups: vec![group] }),
        }
    }
    for dev in &devices {
        match bench::record_cost(dev, 20_000) {
            Ok(t) => println!(
                "{:<48} {:>5} {:>9.2}us of the wall clock to record one op, {} of the thread's CPU",
                "record add f32 [16]",
                dev.kind().name(),
                t.wall.as_secs_f64() * 1e6,
                t.cpu.map_or("no clock".into(), |c| format!("{:.2}us", c.as_secs_f64() * 1e6))
            ),
            Err(e) => {
                println!("record add f32 [16] {}: error: {e}", dev.kind());
                failed = true;
            }
        }
    }
    let mut backends: Vec<String> = devices.iter().map(|d| d.kind().name().to_string()).collect();
    backends.extend(torch.is_some().then(|| "torch".to_string()));
    match chart::write(std::path::Path::new(&chart_path), &lines, &backends, &panels) {
        Ok(()) => println!("chart: {chart_path}"),
        Err(e) => {
            println!("chart: error: {e}");
            failed = true;
        }
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// `1m05s`, `42s`.
fn minutes(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 { format!("{}m{:02}s", s / 60, s % 60) } else { format!("{s}s") }
}

/// One status line for a backend's self-check, rewritten in place (check, count, time, time
/// left at the rate so far) when stdout is a terminal; nothing otherwise, so logs stay clean.
struct Progress {
    kind: &'static str,
    total: usize,
    done: usize,
    start: Instant,
    on: bool,
}

impl Progress {
    fn new(kind: &'static str, total: usize) -> Progress {
        Progress { kind, total, done: 0, start: Instant::now(), on: std::io::stdout().is_terminal() }
    }

    fn show(&mut self, family: Family, i: usize, name: &str) {
        if !self.on {
            return;
        }
        let (done, total) = (self.done + i, self.total.max(1));
        let elapsed = self.start.elapsed();
        let left = match done {
            0 => String::new(),
            d => format!(", ~{} left", minutes(elapsed.mul_f64((total - d.min(total)) as f64 / d as f64))),
        };
        let bar: String = (0..20).map(|k| if k * total < 20 * done { '#' } else { '.' }).collect();
        let name: String = name.chars().take(28).collect();
        // \r and "erase line": the next line overwrites this one.
        print!(
            "\r\x1b[2K  {:5} {:12} [{bar}] {done}/{total} {name} ({}{left})",
            self.kind,
            family.name(),
            minutes(elapsed)
        );
        let _ = std::io::stdout().flush();
    }

    fn finish_family(&mut self, checks: usize) {
        self.done += checks;
        if self.on {
            print!("\r\x1b[2K");
        }
    }
}
