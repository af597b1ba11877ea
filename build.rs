//! With feature `rocm`: compiles every `hip/*.hip` with `hipcc --genco` for each gfx target of
//! `RWO_GFX_TARGETS` (comma-separated; default below) into code objects, and writes
//! `$OUT_DIR/hip_objects.rs`, which embeds them (`src/native/rocm.rs` includes it).
//!
//! Environment: `HIPCC` (the compiler; else `$ROCM_PATH/bin/hipcc`, else `hipcc` on the PATH),
//! `RWO_HIPCC_FLAGS` (extra flags, e.g. `-Wall -Werror` in CI). Without feature `rocm` this
//! does nothing.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const DEFAULT_TARGETS: &str = "gfx90a,gfx942,gfx1030,gfx1100,gfx1101,gfx1200,gfx1201";
/// What every kernel is built with: the crate's rounding (no contraction into fused
/// multiply-adds, as the cpu reference and the random spec compute) and C++17.
const FLAGS: &[&str] = &["-O3", "-std=c++17", "-ffp-contract=off"];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_ROCM").is_none() {
        return;
    }
    for var in ["RWO_GFX_TARGETS", "HIPCC", "ROCM_PATH", "RWO_HIPCC_FLAGS"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    if let Err(msg) = build() {
        eprintln!("\nerror: building the HIP kernels for feature `rocm` failed:\n{msg}\n");
        std::process::exit(1);
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn hipcc() -> PathBuf {
    if let Some(p) = env("HIPCC") {
        return p.into();
    }
    if let Some(root) = env("ROCM_PATH") {
        let p = Path::new(&root).join("bin/hipcc");
        if p.exists() {
            return p;
        }
    }
    "hipcc".into()
}

fn build() -> Result<(), String> {
    let out = PathBuf::from(std::env::var("OUT_DIR").map_err(|e| format!("OUT_DIR: {e}"))?);
    let hip_dir = Path::new("hip");
    println!("cargo:rerun-if-changed=hip");
    let mut sources = vec![];
    for entry in std::fs::read_dir(hip_dir).map_err(|e| format!("reading hip/: {e}"))? {
        let path = entry.map_err(|e| format!("reading hip/: {e}"))?.path();
        println!("cargo:rerun-if-changed={}", path.display());
        if path.extension().is_some_and(|e| e == "hip") {
            sources.push(path);
        }
    }
    sources.sort();
    let targets_env = env("RWO_GFX_TARGETS").unwrap_or_else(|| DEFAULT_TARGETS.into());
    let targets: Vec<&str> = targets_env.split(',').map(str::trim).filter(|t| !t.is_empty()).collect();
    if targets.is_empty() {
        return Err("RWO_GFX_TARGETS names no target".into());
    }
    let hipcc = hipcc();
    match Command::new(&hipcc).arg("--version").output() {
        Ok(o) if o.status.success() => {}
        _ => {
            return Err(format!(
                "`{}` is missing or does not run. Install ROCm (or Debian's `hipcc` package), or point HIPCC \
                 at hipcc, or build without feature `rocm`.",
                hipcc.display()
            ));
        }
    }
    let extra: Vec<String> =
        env("RWO_HIPCC_FLAGS").map(|f| f.split_whitespace().map(String::from).collect()).unwrap_or_default();

    // (family, target, source, code object)
    let mut jobs: Vec<(String, String, PathBuf, PathBuf)> = vec![];
    for src in &sources {
        let family = src.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        for t in &targets {
            jobs.push((family.clone(), t.to_string(), src.clone(), out.join(format!("{family}.{t}.co"))));
        }
    }
    let threads = std::env::var("NUM_JOBS").ok().and_then(|n| n.parse().ok()).unwrap_or(1usize).max(1);
    let failures = run_all(&jobs, threads, |(_, t, src, obj)| {
        let o = Command::new(&hipcc)
            .arg("--genco")
            .arg(format!("--offload-arch={t}"))
            .args(FLAGS)
            .args(&extra)
            .arg("-I")
            .arg(hip_dir)
            .arg(src)
            .arg("-o")
            .arg(obj)
            .output()
            .map_err(|e| format!("running {}: {e}", hipcc.display()))?;
        if o.status.success() {
            Ok(())
        } else {
            Err(format!("{} for {t}:\n{}", src.display(), String::from_utf8_lossy(&o.stderr)))
        }
    });
    if !failures.is_empty() {
        return Err(failures.join("\n"));
    }

    let mut code = String::new();
    let list = targets.iter().map(|t| format!("{t:?}")).collect::<Vec<_>>().join(", ");
    let _ = writeln!(
        code,
        "/// The gfx targets this build has code objects for.\npub(crate) const TARGETS: &[&str] = &[{list}];"
    );
    let _ = writeln!(code, "#[repr(C, align(4096))]\nstruct Aligned<const N: usize>([u8; N]);");
    let mut entries = vec![];
    for (i, (family, target, _, obj)) in jobs.iter().enumerate() {
        let len = std::fs::metadata(obj).map_err(|e| format!("{}: {e}", obj.display()))?.len();
        let _ =
            writeln!(code, "static O{i}: Aligned<{len}> = Aligned(*include_bytes!({:?}));", obj.display().to_string());
        entries.push(format!("({family:?}, {target:?}, &O{i}.0)"));
    }
    let _ = writeln!(
        code,
        "/// (family, target, code object) for every hip/*.hip and target.\npub(crate) static OBJECTS: &[(&str, &str, &[u8])] = &[{}];",
        entries.join(", ")
    );
    std::fs::write(out.join("hip_objects.rs"), code).map_err(|e| format!("writing hip_objects.rs: {e}"))
}

/// Runs `job` over `jobs` on `threads` threads; returns the errors.
fn run_all<J: Sync>(jobs: &[J], threads: usize, job: impl Fn(&J) -> Result<(), String> + Sync) -> Vec<String> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let errors = std::sync::Mutex::new(vec![]);
    std::thread::scope(|s| {
        for _ in 0..threads.min(jobs.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(j) = jobs.get(i) else { break };
                    if let Err(e) = job(j) {
                        errors.lock().unwrap_or_else(|e| e.into_inner()).push(e);
                    }
                }
            });
        }
    });
    errors.into_inner().unwrap_or_else(|e| e.into_inner())
}
