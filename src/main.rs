//! The main job: lists the backends found here, then runs the self-check of every op on every
//! available backend against the cpu reference. Exits non-zero if any check fails.
//!
//! `cargo run --release` (or `-- check`).

use rocm_wgpu_ops::{Device, selfcheck};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None | Some("check") => check(),
        Some(other) => {
            eprintln!("unknown command {other:?}; usage: rocm-wgpu-ops [check]");
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
