//! The rocm backend's ties to the ROCm installed here, without a GPU: the ABI `hip_api.rs`
//! declares by hand against what the C compiler makes of the installed HIP headers, and where the
//! vendor libraries are looked for. CI runs both in its rocm modes (`RWO_EXPECT_ROCM` set: the
//! compiler, Debian's headers and, for `no-gpu`, the HIP library must be there); elsewhere what
//! is missing skips them.

use rocm_wgpu_ops::native::rocm;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

crate::tests!(hip_abi_matches_the_installed_headers, libraries_are_found_beside_the_hip_runtime);

/// The C program printing what the headers make of each declared name.
const PROBE: &str = include_str!("rocm_abi.c");

/// Set in the process the library test starts: the directory it prepared.
const CHILD_DIR: &str = "RWO_TEST_ROCM_LIB_DIR";

/// `RWO_EXPECT_ROCM` (CI's rocm modes), if set.
fn expected() -> Option<String> {
    std::env::var("RWO_EXPECT_ROCM").ok().filter(|e| !e.is_empty())
}

/// Skips for what this machine lacks, unless CI's rocm modes say it must be there.
fn lacking(what: String) -> ! {
    if let Some(e) = expected() {
        panic!("RWO_EXPECT_ROCM={e}, and {what}");
    }
    crate::harness::skip(what)
}

/// A fresh scratch directory for `name`, removed by the caller.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rwo-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// Runs the C compiler (`$CC`, else `cc`) with `args` in `dir`; what it printed if it failed.
fn cc(dir: &Path, args: &[&str]) -> Result<(), String> {
    let compiler = std::env::var("CC").ok().filter(|c| !c.trim().is_empty()).unwrap_or_else(|| "cc".into());
    let out = Command::new(&compiler)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("the C compiler {compiler} does not run: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!("{compiler} {}:\n{}", args.join(" "), String::from_utf8_lossy(&out.stderr)))
}

/// The probe compiled against the installed HIP headers (`$ROCM_PATH/include` where set, else
/// the compiler's own path: Debian's /usr/include) and run: each line's name and value.
fn header_values(dir: &Path) -> Result<BTreeMap<String, i64>, String> {
    std::fs::write(dir.join("probe.c"), PROBE).map_err(|e| e.to_string())?;
    let include = std::env::var("ROCM_PATH").ok().filter(|p| !p.trim().is_empty()).map(|p| format!("-I{p}/include"));
    let mut args = vec!["-std=c11", "-Wall", "-Werror", "-D__HIP_PLATFORM_AMD__"];
    args.extend(include.as_deref());
    args.extend(["probe.c", "-o", "probe"]);
    cc(dir, &args)?;
    let out = Command::new(dir.join("probe")).output().map_err(|e| format!("the probe does not run: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let parse = |line: &str| {
        let (name, value) = line.rsplit_once(' ')?;
        Some((name.to_string(), value.parse().ok()?))
    };
    text.lines().map(|l| parse(l).ok_or_else(|| format!("the probe printed {l:?}"))).collect()
}

/// Every size, offset and value `hip_api.rs` declares by hand equals what the installed HIP
/// headers define (the exported `hipGetDeviceProperties`' layout, hipMemcpyKind, the error and
/// hiprtc codes used, the stream flag), and the probe prints no name the crate does not declare.
fn hip_abi_matches_the_installed_headers() {
    let dir = scratch("rocm-abi");
    let values = header_values(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let headers = match values {
        Ok(v) => v,
        Err(why) if why.contains("hip/hip_runtime_api.h") || why.contains("does not run") => lacking(why),
        Err(why) => panic!("{why}"),
    };
    let declared: BTreeMap<String, i64> = rocm::declared_abi().into_iter().map(|(n, v)| (n.to_string(), v)).collect();
    let wrong: Vec<String> = declared
        .iter()
        .filter(|(n, v)| headers.get(*n) != Some(v))
        .map(|(n, v)| format!("{n}: declared {v}, the headers {:?}", headers.get(n)))
        .collect();
    assert!(wrong.is_empty(), "hip_api.rs disagrees with the installed headers: {wrong:#?}");
    assert_eq!(headers.keys().collect::<Vec<_>>(), declared.keys().collect::<Vec<_>>());
    assert!(declared.len() >= 20, "only {} declared values", declared.len());
}

/// The HIP runtime's description: `HIP 5.2.21153[, driver N] (path)`; its path.
fn runtime_path(describe: &str) -> Option<&str> {
    describe.rsplit_once(" (").and_then(|(_, p)| p.strip_suffix(')'))
}

/// With the HIP runtime taken from a directory that holds versioned names only (a link to the
/// real one), hiprtc and rocBLAS are looked for there first, under the sonames of that runtime's
/// major, and a MIOpen that brings another major's runtime along is refused. The libraries there
/// are stand-ins built by the C compiler: empty ones (the symbol missing names the file taken),
/// and a MIOpen needing `libamdhip64.so` of another major. Runs in a process of its own, as the
/// HIP runtime loads once per process.
fn libraries_are_found_beside_the_hip_runtime() {
    if let Ok(dir) = std::env::var(CHILD_DIR) {
        return beside_the_runtime(&dir);
    }
    let runtime = match rocm::libraries().into_iter().next() {
        Some((_, Ok(describe))) => describe,
        Some((_, Err(why))) if expected().is_some_and(|e| e != "no-gpu") => crate::harness::skip(why),
        other => lacking(format!("the HIP runtime does not load: {other:?}")),
    };
    if std::env::var("RWO_ROCM_LIB").is_ok_and(|v| !v.trim().is_empty()) {
        crate::harness::skip("RWO_ROCM_LIB names the HIP runtime here");
    }
    let real = runtime_path(&runtime).unwrap_or_else(|| panic!("no path in {runtime:?}"));
    let file = Path::new(real).file_name().and_then(|f| f.to_str()).unwrap_or_default();
    let major: u32 = file
        .strip_prefix("libamdhip64.so.")
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("the HIP runtime was loaded from {real:?}, not by a versioned name"));
    let other = if major == 7 { 6 } else { major + 1 };
    let dir = scratch("rocm-libs");
    let made = stand_ins(&dir, real, major, other);
    let child = made.and_then(|()| {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        Command::new(exe)
            .args(["--exact", "rocm::libraries_are_found_beside_the_hip_runtime"])
            .env(CHILD_DIR, &dir)
            .env("RWO_ROCM_LIB", dir.join(format!("libamdhip64.so.{major}")))
            .env_remove("RWO_HIPRTC_LIB")
            .env_remove("RWO_ROCBLAS_LIB")
            .env_remove("RWO_MIOPEN_LIB")
            .env_remove("ROCM_PATH")
            .output()
            .map_err(|e| e.to_string())
    });
    let _ = std::fs::remove_dir_all(&dir);
    let out = match child {
        Ok(out) => out,
        Err(why) if why.contains("does not run") => lacking(why),
        Err(why) => panic!("{why}"),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(" 1 passed;"),
        "the test in a process of its own:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// In `dir`: `libamdhip64.so.{major}` linking to the runtime at `real`, and stand-ins for
/// hiprtc, every rocBLAS soname, a `libamdhip64.so.{other}` and a MIOpen needing it.
fn stand_ins(dir: &Path, real: &str, major: u32, other: u32) -> Result<(), String> {
    let real = std::fs::canonicalize(real).map_err(|e| format!("{real}: {e}"))?;
    std::os::unix::fs::symlink(&real, dir.join(format!("libamdhip64.so.{major}"))).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("empty.c"), "int rwo_stand_in;\n").map_err(|e| e.to_string())?;
    let shared = |soname: &str, extra: &[&str]| {
        let so = format!("-Wl,-soname,{soname}");
        let mut args = vec!["-shared", "-fPIC", &so, "-o", soname, "empty.c"];
        args.extend(extra);
        cc(dir, &args)
    };
    shared(&format!("libhiprtc.so.{major}"), &[])?;
    for n in [0, 3, 4, 5] {
        shared(&format!("librocblas.so.{n}"), &[])?;
    }
    let second = format!("libamdhip64.so.{other}");
    shared(&second, &[])?;
    let needs = format!("-l:{second}");
    shared("libMIOpen.so.1", &["-L.", "-Wl,--no-as-needed", &needs, "-Wl,-rpath,$ORIGIN"])
}

/// The child's side: each library as found with `RWO_ROCM_LIB` pointing into `dir`.
fn beside_the_runtime(dir: &str) {
    let hip = std::env::var("RWO_ROCM_LIB").unwrap_or_default();
    let found: BTreeMap<&str, Result<String, String>> = rocm::libraries().into_iter().collect();
    let get = |what: &str| found.get(what).cloned().unwrap_or_else(|| Err(format!("{what}: not reported")));
    let runtime = get("HIP runtime").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(runtime_path(&runtime), Some(hip.as_str()), "{runtime}");
    let major = hip.rsplit('.').next().unwrap_or_default();
    // Each is the stand-in beside the runtime, found by its versioned name before any other.
    assert_eq!(get("hiprtc"), Err(format!("{dir}/libhiprtc.so.{major}: symbol hiprtcVersion missing")));
    let blas = get("rocBLAS").err().unwrap_or_default();
    assert!(blas.starts_with(&format!("{dir}/librocblas.so.")), "{blas}");
    assert!(blas.ends_with(": symbol rocblas_create_handle missing"), "{blas}");
    let dnn = get("MIOpen").err().unwrap_or_default();
    assert!(dnn.starts_with(&format!("{dir}/libMIOpen.so.1 loads libamdhip64.so.")), "{dnn}");
    assert!(dnn.contains(&format!(", a second HIP runtime beside {hip} (HIP {major}.")), "{dnn}");
}
