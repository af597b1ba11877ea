//! What the rocm runtime decides without a GPU, kept apart from the vendor calls so that it is
//! tested on every machine: which HIP versions it opens, which vendor library sonames go with
//! one, which code object fits a device's target id (`gfx90a:sramecc+:xnack-`), and which device
//! is the default.

/// The oldest HIP runtime the rocm backend opens, as (major, minor): 5.2 is the oldest whose
/// hiprtc CI runs (Debian 12's ROCm 5.2.3 compiles every `hip/*.hip` for gfx90a and gfx1030).
pub const OLDEST: (u32, u32) = (5, 2);
/// The newest major the entry points were checked against: through ROCm 7.2 the exported
/// `hipGetDeviceProperties` keeps the ROCm 5 property layout, and every call used exists.
pub const NEWEST_MAJOR: u32 = 7;

/// (major, minor, patch) of a HIP version number (`hipRuntimeGetVersion`:
/// major * 10^7 + minor * 10^5 + patch).
pub fn version_parts(v: i32) -> (u32, u32, u32) {
    let v = v.max(0) as u32;
    (v / 10_000_000, v / 100_000 % 100, v % 100_000)
}

/// A HIP version number as `major.minor.patch`.
pub fn version_text(v: i32) -> String {
    let (major, minor, patch) = version_parts(v);
    format!("{major}.{minor}.{patch}")
}

/// Why the rocm backend does not open a HIP runtime of version `v`, or `None` if it does.
pub fn unsupported(v: i32) -> Option<String> {
    let (major, minor, _) = version_parts(v);
    let text = version_text(v);
    if (major, minor) < OLDEST {
        Some(format!("HIP {text} is older than {}.{}, the oldest this build supports", OLDEST.0, OLDEST.1))
    } else if major > NEWEST_MAJOR {
        Some(format!("HIP {text} is newer than {NEWEST_MAJOR}.x, the newest this build was checked against"))
    } else {
        None
    }
}

/// rocBLAS's sonames for a HIP runtime of version `v`, best first: the one its ROCm ships, then
/// older ones built for the same HIP major (a later minor of a runtime still runs them; another
/// major would be a second runtime). `rocblas_SOVERSION` (library/CMakeLists.txt) is 0.1 at
/// ROCm/rocBLAS rocm-5.0.0 to rocm-5.5.1, 3.0 at rocm-5.6.0, 3.1.0 at rocm-5.7.1, 4.0 at
/// rocm-6.0.0, 4.2 at rocm-6.2.2, and 5.8 at ROCm/rocm-libraries 08f7f8c2 (projects/rocblas, the
/// rocBLAS 5 of ROCm 7); the soname keeps the first number.
pub fn rocblas_sonames(v: i32) -> Vec<String> {
    let so = |n: u32| format!("librocblas.so.{n}");
    match version_parts(v) {
        (5, minor, _) if minor >= 6 => vec![so(3), so(0)],
        (5, _, _) => vec![so(0)],
        (6, _, _) => vec![so(4)],
        (7, _, _) => vec![so(5)],
        _ => vec![],
    }
}

/// MIOpen's soname in every ROCm from 5.0 to 7 (`MIOpen_SOVERSION` 1.0 in src/CMakeLists.txt at
/// ROCm/MIOpen rocm-5.0.0, rocm-5.2.3, rocm-5.7.1, rocm-6.0.0 and rocm-6.2.2, and at
/// ROCm/rocm-libraries 0011accc, projects/miopen): it names no ROCm, so where it is found decides.
pub const MIOPEN_SONAMES: &[&str] = &["libMIOpen.so.1"];

/// The processors LLVM lists as APUs (the dGPU/APU column of AMDGPUUsage.rst's processor table,
/// llvm-project 001388cf): `gfx942` is listed as a dGPU, though the MI300A is one of its APUs.
const APU_PROCESSORS: &[&str] = &[
    "gfx700", "gfx703", "gfx705", "gfx801", "gfx810", "gfx902", "gfx909", "gfx90c", "gfx1013", "gfx1033", "gfx1035",
    "gfx1036", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1210",
];

/// Whether a device of target id `arch` is an APU's GPU: the runtime says so (`host_unified`,
/// the properties' `pageableMemoryAccessUsesHostPageTables`, which holds ROCclr's
/// `hostUnifiedMemory_`: set for agents ROCr reports as APUs from clr rocm-6.2.0's
/// rocclr/device/rocm/rocdevice.cpp on, and before that only for full-profile agents, which
/// today's APUs are not), or its processor is an APU one (what decides before ROCm 6.2).
pub fn integrated(arch: &str, host_unified: bool) -> bool {
    host_unified || arch.split(':').next().is_some_and(|p| APU_PROCESSORS.contains(&p))
}

/// Whether code built for target id `target` runs on a device whose `gcnArchName` is `device`:
/// the same processor, and every feature the target fixes (`xnack+`) set the same way on the
/// device (a feature the target leaves out runs either way). Returns how many features the
/// target fixes, so that the most specific fit can be preferred.
pub fn fits(target: &str, device: &str) -> Option<usize> {
    let mut t = target.trim().split(':');
    let mut d = device.trim().split(':');
    if t.next()? != d.next()? {
        return None;
    }
    let device_features: Vec<&str> = d.collect();
    let mut fixed = 0;
    for feature in t {
        if !device_features.contains(&feature) {
            return None;
        }
        fixed += 1;
    }
    Some(fixed)
}

/// The target of `targets` whose code fits `device` best (see [`fits`]).
pub fn best_target<'a>(targets: impl IntoIterator<Item = &'a str>, device: &str) -> Option<&'a str> {
    targets.into_iter().filter_map(|t| fits(t, device).map(|n| (n, t))).max_by_key(|(n, _)| *n).map(|(_, t)| t)
}

/// A HIP device as the default choice sees it.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub ordinal: usize,
    pub arch: String,
    /// An APU's GPU (it shares host memory).
    pub integrated: bool,
    /// Whether the kernels can run on it (a code object fits, or hiprtc can build one), or why not.
    pub usable: Result<(), String>,
}

/// The default device: the first discrete device the kernels can run on, else the first
/// integrated one (an APU listed first must not hide a card); or why there is none.
pub fn default_device(candidates: &[Candidate]) -> Result<usize, String> {
    let usable = |integrated: bool| candidates.iter().find(|c| c.usable.is_ok() && c.integrated == integrated);
    if let Some(c) = usable(false).or_else(|| usable(true)) {
        return Ok(c.ordinal);
    }
    if candidates.is_empty() {
        return Err("no AMD GPU".into());
    }
    let why: Vec<String> = candidates
        .iter()
        .map(|c| format!("device {} ({}): {}", c.ordinal, c.arch, c.usable.as_ref().err().map_or("", |s| s)))
        .collect();
    Err(format!("no usable AMD GPU: {}", why.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_decode_and_are_checked_against_the_supported_range() {
        assert_eq!(version_parts(50_221_153), (5, 2, 21153));
        assert_eq!(version_text(60_443_483), "6.4.43483");
        assert_eq!(unsupported(50_221_153), None);
        assert_eq!(unsupported(60_000_000), None);
        assert_eq!(unsupported(70_251_234), None);
        let old = unsupported(50_120_000).unwrap_or_default();
        assert!(old.contains("HIP 5.1.20000 is older than 5.2"), "{old}");
        assert!(unsupported(40_400_000).is_some());
        let new = unsupported(80_000_000).unwrap_or_default();
        assert!(new.contains("newer than 7.x"), "{new}");
    }

    #[test]
    fn targets_fit_by_processor_and_the_features_they_fix() {
        let dev = "gfx90a:sramecc+:xnack-";
        assert_eq!(fits("gfx90a", dev), Some(0));
        assert_eq!(fits("gfx90a:xnack-", dev), Some(1));
        assert_eq!(fits("gfx90a:sramecc+:xnack-", dev), Some(2));
        assert_eq!(fits("gfx90a:xnack+", dev), None);
        assert_eq!(fits("gfx90a:sramecc-", dev), None);
        assert_eq!(fits("gfx908", dev), None);
        // gfx1030 reports no features; a target fixing one is not proven to run there.
        assert_eq!(fits("gfx1030", "gfx1030"), Some(0));
        assert_eq!(fits("gfx1030:xnack-", "gfx1030"), None);
        // A processor is matched whole, not by prefix.
        assert_eq!(fits("gfx110", "gfx1100"), None);
        let targets = ["gfx1030", "gfx90a", "gfx90a:xnack-", "gfx90a:xnack+"];
        assert_eq!(best_target(targets, dev), Some("gfx90a:xnack-"));
        assert_eq!(best_target(targets, "gfx90a:sramecc-:xnack+"), Some("gfx90a:xnack+"));
        assert_eq!(best_target(targets, "gfx1100"), None);
    }

    #[test]
    fn rocblas_is_the_one_built_for_the_hip_runtime_then_older_of_its_major() {
        let names = |v| rocblas_sonames(v).join(" ");
        assert_eq!(names(50_221_153), "librocblas.so.0");
        assert_eq!(names(50_530_000), "librocblas.so.0");
        assert_eq!(names(50_631_061), "librocblas.so.3 librocblas.so.0");
        assert_eq!(names(50_731_921), "librocblas.so.3 librocblas.so.0");
        assert_eq!(names(60_032_830), "librocblas.so.4");
        assert_eq!(names(60_443_483), "librocblas.so.4");
        assert_eq!(names(70_051_831), "librocblas.so.5");
        assert_eq!(names(80_000_000), "");
        assert_eq!(MIOPEN_SONAMES, ["libMIOpen.so.1"]);
    }

    #[test]
    fn apus_are_known_by_the_runtime_or_by_their_processor() {
        // ROCm 5 leaves an APU's flag unset: its processor decides.
        assert!(integrated("gfx90c:xnack-", false));
        assert!(integrated("gfx1036", false));
        assert!(integrated("gfx1103", false));
        // The MI300A's processor is the MI300X's: only the runtime can tell them apart.
        assert!(integrated("gfx942:sramecc+:xnack-", true));
        assert!(!integrated("gfx942:sramecc+:xnack-", false));
        assert!(!integrated("gfx1100", false));
        assert!(!integrated("gfx90a:sramecc+:xnack-", false));
        // A processor is matched whole, not by prefix.
        assert!(!integrated("gfx9", false) && !integrated("gfx11030", false));
    }

    fn cand(ordinal: usize, integrated: bool, usable: bool) -> Candidate {
        let usable = if usable { Ok(()) } else { Err("no code object".into()) };
        Candidate { ordinal, arch: format!("gfx{ordinal}"), integrated, usable }
    }

    #[test]
    fn the_default_device_is_the_first_usable_card_then_an_apu() {
        // An integrated GPU listed first does not hide the card behind it.
        assert_eq!(default_device(&[cand(0, true, true), cand(1, false, true)]), Ok(1));
        assert_eq!(default_device(&[cand(0, false, false), cand(1, false, true), cand(2, false, true)]), Ok(1));
        assert_eq!(default_device(&[cand(0, true, true), cand(1, false, false)]), Ok(0));
        let none = default_device(&[cand(0, false, false), cand(1, true, false)]).unwrap_err();
        assert_eq!(none, "no usable AMD GPU: device 0 (gfx0): no code object; device 1 (gfx1): no code object");
        assert_eq!(default_device(&[]), Err("no AMD GPU".into()));
    }
}
