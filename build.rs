//! With feature `rocm`: writes `$OUT_DIR/hip_objects.rs` (`src/native/rocm.rs` includes it):
//! the compiler flags of every kernel and, only when `RWO_GFX_TARGETS` names gfx targets
//! (comma-separated target ids, `gfx90a` or `gfx90a:xnack+`), code objects of every
//! `hip/*.hip` compiled ahead of time with `hipcc --genco` and embedded. Without it no hipcc is
//! needed: the kernels are compiled at run time by hiprtc for the device in hand. A target the
//! compiler cannot build (or a missing hipcc) is a warning and is left out, never a failed build.
//!
//! Environment: `HIPCC` (the compiler; else `$ROCM_PATH/bin/hipcc`, else `hipcc` on the PATH),
//! `RWO_HIPCC_FLAGS` (extra flags, e.g. `-Wall -Werror`). Without feature `rocm` this does
//! nothing.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What every kernel is built with, by hipcc here and by hiprtc at run time: the crate's
/// rounding (no contraction into fused multiply-adds, as the cpu reference and the random spec
/// compute) and C++17.
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
        eprintln!("\nerror: writing the HIP code objects for feature `rocm` failed:\n{msg}\n");
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

/// Prints a build warning, one `cargo:warning` per line.
fn warn(msg: &str) {
    for line in msg.lines() {
        println!("cargo:warning={line}");
    }
}

fn build() -> Result<(), String> {
    let out = PathBuf::from(std::env::var("OUT_DIR").map_err(|e| format!("OUT_DIR: {e}"))?);
    let targets_env = env("RWO_GFX_TARGETS").unwrap_or_default();
    let targets: Vec<&str> = targets_env.split(',').map(str::trim).filter(|t| !t.is_empty()).collect();
    let objects = if targets.is_empty() { vec![] } else { compile(&out, &targets)? };
    write_objects(&out, &objects)
}

/// (family, target, code object file) for every source and every target hipcc builds; a target
/// for which any source fails is left out with a warning.
fn compile(out: &Path, targets: &[&str]) -> Result<Vec<(String, String, PathBuf)>, String> {
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
    let hipcc = hipcc();
    if !Command::new(&hipcc).arg("--version").output().is_ok_and(|o| o.status.success()) {
        warn(&format!(
            "RWO_GFX_TARGETS is set, but `{}` is missing or does not run: no code objects embedded (the kernels \
             will be compiled at run time by hiprtc). Install ROCm's hipcc or point HIPCC at it.",
            hipcc.display()
        ));
        return Ok(vec![]);
    }
    let extra: Vec<String> =
        env("RWO_HIPCC_FLAGS").map(|f| f.split_whitespace().map(String::from).collect()).unwrap_or_default();

    let mut jobs: Vec<(String, String, PathBuf, PathBuf)> = vec![];
    for src in &sources {
        let family = src.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        for t in targets {
            // Target ids may hold `:`; keep file names plain.
            let file = format!("{family}.{}.co", t.replace(':', "_"));
            jobs.push((family.clone(), t.to_string(), src.clone(), out.join(file)));
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
            .map_err(|e| (t.clone(), format!("running {}: {e}", hipcc.display())))?;
        if o.status.success() {
            Ok(())
        } else {
            let log = String::from_utf8_lossy(&o.stderr);
            let first = log.lines().find(|l| l.contains("error")).or_else(|| log.lines().next()).unwrap_or_default();
            Err((t.clone(), format!("{}: {}", src.display(), first.trim())))
        }
    });
    let mut skipped: Vec<String> = vec![];
    for (t, why) in &failures {
        if !skipped.contains(t) {
            warn(&format!(
                "RWO_GFX_TARGETS: {t} left out, hipcc cannot build it ({why}); hiprtc will compile for it at run time"
            ));
            skipped.push(t.clone());
        }
    }
    Ok(jobs.into_iter().filter(|(_, t, _, _)| !skipped.contains(t)).map(|(f, t, _, obj)| (f, t, obj)).collect())
}

/// Writes `hip_objects.rs`: `FLAGS`, `TARGETS` and `OBJECTS`, which embeds the code objects.
fn write_objects(out: &Path, objects: &[(String, String, PathBuf)]) -> Result<(), String> {
    let mut targets: Vec<&str> = vec![];
    for (_, t, _) in objects {
        if !targets.contains(&t.as_str()) {
            targets.push(t);
        }
    }
    let list = |items: &[&str]| items.iter().map(|t| format!("{t:?}")).collect::<Vec<_>>().join(", ");
    let mut code = String::new();
    let _ = writeln!(
        code,
        "/// The flags every kernel is compiled with.\npub(crate) const FLAGS: &[&str] = &[{}];",
        list(FLAGS)
    );
    let _ = writeln!(
        code,
        "/// The gfx targets this build has code objects for.\npub(crate) const TARGETS: &[&str] = &[{}];",
        list(&targets)
    );
    let _ = writeln!(code, "#[repr(C, align(4096))]\n#[allow(dead_code)]\nstruct Aligned<const N: usize>([u8; N]);");
    let mut entries = vec![];
    for (i, (family, target, obj)) in objects.iter().enumerate() {
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
fn run_all<J: Sync, E: Send>(jobs: &[J], threads: usize, job: impl Fn(&J) -> Result<(), E> + Sync) -> Vec<E> {
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
