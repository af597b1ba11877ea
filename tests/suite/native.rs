//! The native kernels without a GPU: every op x dtype of the families with HIP kernels has its
//! entry point in `hip/*.hip`; every HIP source compiles with hiprtc (feature `rocm`, where the
//! HIP library loads) and NVRTC (feature `cuda`, where NVRTC loads) exactly as the runtimes
//! compile them; and an absent rocm backend says why, while `Device::auto()` falls through.

use rocm_wgpu_ops::native::{hip_sources, unit_of, unit_sources, where_kernel_name};
use rocm_wgpu_ops::spec::elementwise::cast_kernel_name;
use rocm_wgpu_ops::spec::{self, Family};
use rocm_wgpu_ops::{BackendKind, DType, Device, Error};
use std::collections::{HashMap, HashSet};

crate::tests!(
    every_op_and_dtype_of_the_native_families_has_a_hip_entry_point,
    elementwise_and_copy_kernels_have_their_fast_variants,
    reduce_and_sort_define_their_extra_kernels,
    instantiation_lines_parse_as_the_macros_expand,
    the_generated_elementwise_header_is_current,
    units_hold_each_kernel_once,
    #[cfg(feature = "cuda")]
    every_hip_source_compiles_with_nvrtc,
    #[cfg(feature = "rocm")]
    rocm_hiprtc_compiles_every_hip_source,
    rocm_absent_says_why_and_auto_falls_through,
);

/// The name suffixes of the kernels each instantiation macro of a HIP source defines per
/// instance: `#define NAME(op, ...) RWO_EACH(RWO_BODY, op, __VA_ARGS__)` instantiates
/// `RWO_BODY`, whose `RWO_KERNEL op##_##T##_vec(` makes the suffix `_vec` (and
/// `RWO_KERNEL op##_##T(` none). Macros without such lines make the one unsuffixed name.
fn variants(source: &str) -> HashMap<String, Vec<String>> {
    let mut bodies: HashMap<String, Vec<String>> = HashMap::new();
    let mut uses = vec![];
    let mut current: Option<String> = None;
    for line in source.lines() {
        if let Some(rest) = line.strip_prefix("#define ") {
            let (name, def) = rest.split_once('(').unwrap_or((rest, ""));
            if let Some(body) = def.split_once("RWO_EACH(").and_then(|(_, b)| b.split_once(',')) {
                uses.push((name.to_string(), body.0.trim().to_string()));
            }
            current = Some(name.to_string());
        }
        if let Some(m) = &current {
            for piece in line.split("RWO_KERNEL ").skip(1) {
                let kernel = piece.split('(').next().unwrap_or_default();
                let last = kernel.rsplit("##").next().unwrap_or_default();
                let suffix = if kernel.contains("##") && last.len() > 1 && last.starts_with('_') { last } else { "" };
                bodies.entry(m.clone()).or_default().push(suffix.to_string());
            }
            if !line.trim_end().ends_with('\\') {
                current = None;
            }
        }
    }
    uses.into_iter().map(|(name, body)| (name, bodies.remove(&body).unwrap_or_else(|| vec![String::new()]))).collect()
}

/// The entry points the instantiation lines of a HIP source make. A line `NAME(a, b, c...)` at
/// the start of a line (an instantiation macro of the file) makes `a_b`, `a_c`, ... (each with
/// every suffix of [`variants`]); two make longer names: `CAST(from, to...)` makes
/// `cast_{from}_{to}` and `WHERE(dtype, cond...)` makes `where_cond_{dtype}_{cond}`.
fn entry_points(source: &str) -> Vec<String> {
    let suffixes = variants(source);
    let mut names = vec![];
    for line in source.lines() {
        let Some((mac, rest)) = line.split_once('(') else { continue };
        let is_macro = !mac.is_empty() && mac.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        let Some(args) = rest.trim_end().strip_suffix(')') else { continue };
        if !is_macro || mac.starts_with("RWO_") {
            continue;
        }
        let args: Vec<&str> = args.split(',').map(str::trim).collect();
        let stem = match mac {
            "CAST" => format!("cast_{}", args[0]),
            "WHERE" => format!("where_cond_{}", args[0]),
            _ => args[0].to_string(),
        };
        let none = vec![String::new()];
        for a in &args[1..] {
            names.extend(suffixes.get(mac).unwrap_or(&none).iter().map(|s| format!("{stem}_{a}{s}")));
        }
    }
    names
}

fn every_op_and_dtype_of_the_native_families_has_a_hip_entry_point() {
    let families: Vec<Family> = hip_sources().iter().map(|(f, _)| *f).collect();
    for f in
        [Family::Elementwise, Family::Copy, Family::Reduce, Family::Index, Family::Random, Family::Sort, Family::Quant]
    {
        assert!(families.contains(&f), "{f} has no HIP source");
    }
    let names: HashSet<String> = hip_sources().iter().flat_map(|(_, s)| entry_points(s)).collect();
    let mut missing = vec![];
    let mut count = 0;
    for op in spec::ops().into_iter().filter(|o| families.contains(&o.family)) {
        for &dt in op.dtypes {
            let wanted: Vec<String> = match op.name {
                "cast" => DType::ALL.iter().map(|&to| cast_kernel_name(dt, to)).collect(),
                "where_cond" => DType::INT.iter().map(|&c| where_kernel_name(dt, c)).collect(),
                _ => vec![spec::kernel_name(op.name, dt)],
            };
            count += wanted.len();
            missing.extend(wanted.into_iter().filter(|n| !names.contains(n)));
        }
    }
    assert!(missing.is_empty(), "{} of {count} HIP entry points missing: {missing:?}", missing.len());
    assert!(names.contains("exp_f32") && names.contains("cast_bf16_u8") && names.contains("arange_i64"));
    assert!(names.contains("scatter_add_bf16") && names.contains("rand_normal_f16"));
    // index_select's row copy, by chunk width in bytes (src/native/index.rs picks one).
    assert!([1, 2, 4, 8, 16].iter().all(|n| names.contains(&format!("index_select_rows_{n}"))));
    assert!(names.contains("argmax_f16") && names.contains("sum_u8") && names.contains("argsort_bf16"));
    // qmatvec's forms for 2, 4 and 8 rows of x (src/native/quant.rs picks one), qmatvec_q8's too, and round_q8's two outputs.
    for dt in spec::quant::QuantOp::Qmatvec.dtypes() {
        assert!([2, 4, 8].iter().all(|m| names.contains(&format!("qmatvec_{dt}_m{m}"))), "qmatvec {dt}");
        assert!([2, 4, 8].iter().all(|m| names.contains(&format!("qmatvec_q8_{dt}_m{m}"))), "qmatvec_q8 {dt}");
        assert!(names.contains(&format!("round_q8_{dt}")) && names.contains(&format!("round_q8_{dt}_pack")));
    }
}

/// The fast variants the native elementwise and copy launches pick (src/native/kernel.rs
/// `Path`): every elementwise op x dtype, copy_strided, copy2d and fill have `_vec` (16-byte chunks);
/// binary ops and copy_strided have `_tiled` (transposed operands).
fn elementwise_and_copy_kernels_have_their_fast_variants() {
    let names: HashSet<String> = hip_sources().iter().flat_map(|(_, s)| entry_points(s)).collect();
    let binary: Vec<&str> = spec::elementwise::BinaryOp::ALL.iter().map(|o| o.name()).collect();
    let mut missing = vec![];
    let mut count = 0;
    for op in spec::ops() {
        let tiled = binary.contains(&op.name) || op.name == "copy_strided";
        let vec = op.family == Family::Elementwise || ["copy_strided", "copy2d", "fill"].contains(&op.name);
        for &dt in op.dtypes.iter().filter(|_| vec) {
            let base: Vec<String> = match op.name {
                "cast" => DType::ALL.iter().map(|&to| cast_kernel_name(dt, to)).collect(),
                "where_cond" => DType::INT.iter().map(|&c| where_kernel_name(dt, c)).collect(),
                _ => vec![spec::kernel_name(op.name, dt)],
            };
            for b in base {
                let wanted = [Some(format!("{b}_vec")), tiled.then(|| format!("{b}_tiled"))];
                for w in wanted.into_iter().flatten() {
                    count += 1;
                    if !names.contains(&w) {
                        missing.push(w);
                    }
                }
            }
        }
    }
    assert!(missing.is_empty(), "{} of {count} fast variants missing: {missing:?}", missing.len());
    assert!(count > 300, "only {count} fast variants checked");
    assert!(names.contains("add_f16_tiled") && names.contains("cast_f32_f16_vec") && names.contains("fill_u8_vec"));
    assert!(!names.contains("exp_f32_tiled") && !names.contains("arange_f32_vec"));
}

/// The kernels the native reduce and sort call besides `{op}_{dtype}`: every reduction has its
/// column and partial-state variants (made by the same instantiation macro), and the merge
/// passes of argsort exist for both key widths.
fn reduce_and_sort_define_their_extra_kernels() {
    let source = |f: Family| rocm_wgpu_ops::native::hip_source(f).unwrap_or_default();
    let reduce = source(Family::Reduce);
    for entry in ["op##_##T(", "op##_##T##_cols(", "op##_##T##_partials("] {
        assert!(reduce.contains(&format!("RWO_KERNEL {entry}")), "reduce: no kernel {entry}..)");
    }
    let sort = source(Family::Sort);
    for k in ["argsort_merge_narrow", "argsort_merge_wide"] {
        assert!(sort.contains(&format!("RWO_KERNEL {k}(")), "sort: no kernel {k}");
    }
}

fn instantiation_lines_parse_as_the_macros_expand() {
    let src = "UNARY(exp, f16, f32)\nCAST(u8, i64)\nWHERE(f32, u8)\n#define UNARY(op, ...) x\nRWO_EACH(M, a, b)\n";
    assert_eq!(entry_points(src), ["exp_f16", "exp_f32", "cast_u8_i64", "where_cond_f32_u8"]);
    let src = "#define RWO_B(op, T) \\\n  RWO_KERNEL op##_##T(D d) {} \\\n  RWO_KERNEL op##_##T##_vec(D d) {}\n\
               #define B(op, ...) RWO_EACH(RWO_B, op, __VA_ARGS__)\n\
               #define RWO_C(F, To) RWO_KERNEL cast_##From##_##To##_vec(D d) {}\n\
               #define CAST(F, ...) RWO_EACH(RWO_C, F, __VA_ARGS__)\nB(add, f32, u8)\nCAST(u8, f16)\n";
    assert_eq!(entry_points(src), ["add_f32", "add_f32_vec", "add_u8", "add_u8_vec", "cast_u8_f16_vec"]);
}

/// `hip/elementwise_ops.h` (what hipcc builds ahead of time) is the expression table's rendering
/// the runtimes compile; `RWO_BLESS=1` rewrites it after a change to the table or the spec.
fn the_generated_elementwise_header_is_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/hip/elementwise_ops.h");
    let rendered = rocm_wgpu_ops::native::elementwise_ops();
    if std::env::var("RWO_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(path, &rendered).unwrap_or_else(|e| panic!("writing {path}: {e}"));
    }
    let on_disk = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        on_disk == rendered,
        "{path} is not the table's rendering: run RWO_BLESS=1 cargo test --test suite -- native"
    );
}

/// Every family in units, as the runtimes compile it where nothing was built ahead of time:
/// every kernel the family's instantiation lines make is in exactly one unit, the one `unit_of`
/// names; kernels of other macros' suffixes go to the unit named below, and kernels defined
/// directly (in every unit) to the family's first (the GPU suite runs every op through them on
/// cuda).
fn units_hold_each_kernel_once() {
    let unit = |family, k: &str| unit_of(family, k).map(|u| u.0.as_str());
    for (family, source) in hip_sources() {
        let whole: HashSet<String> = entry_points(source).into_iter().collect();
        let mut seen = HashSet::new();
        for (name, text) in unit_sources(family) {
            // (A set: two lines of one stem may list a name twice, the macros' suffixes unknown here.)
            let kernels: HashSet<String> = entry_points(text).into_iter().collect();
            assert!(!kernels.is_empty(), "{family}: unit {name} makes no kernel");
            for k in kernels {
                assert_eq!(unit(family, &k), Some(name.as_str()), "{family}: {k}");
                assert!(seen.insert(k.clone()), "{family}: {k} is in two units");
            }
        }
        assert_eq!(seen, whole, "{family}: the units' kernels are not the family's");
    }
    for (family, kernel, expected) in [
        (Family::Elementwise, "add_f16_vec", "add"),
        (Family::Elementwise, "cast_bf16_u8_vec", "cast_bf16"),
        (Family::Elementwise, "where_cond_f32_u8", "where_cond_f32"),
        (Family::Attention, "scaled_dot_product_attention_decode4_f16_keep", "scaled_dot_product_attention.f16"),
        (Family::Attention, "scaled_dot_product_attention_mma128_bf16_additive", "scaled_dot_product_attention.bf16"),
        (Family::Attention, "scaled_dot_product_attention_combine_f64", "scaled_dot_product_attention.f64"),
        (Family::Attention, "rope_i_f32", "rope_i.f32"),
        (Family::Attention, "rope_f32", "rope.f32"),
        (Family::Quant, "qmatvec_f16_mma4", "qmatvec.f16"),
        (Family::Quant, "dequantize_bf16_units", "dequantize.bf16"),
        (Family::Index, "index_select_rows_16", "index_select_rows.16"),
        (Family::Copy, "copy2d_f32_vec", "copy2d.f32"),
        (Family::Index, "index_check", "index_select.u8"),
        (Family::Sort, "argsort_merge_wide", "argsort.u8"),
    ] {
        assert_eq!(unit(family, kernel), Some(expected), "{family}: {kernel}");
    }
    let units = unit_sources(Family::Attention);
    let f32 = units.iter().find(|(n, _)| n == "scaled_dot_product_attention.f32").map(|(_, t)| t.as_str());
    let f32 = f32.unwrap_or_default();
    assert!(f32.contains("\nSDPA(scaled_dot_product_attention, f32)\n") && !f32.contains("RWO_SDPA_MMA_EACH(scaled"));
    let f16 = units.iter().find(|(n, _)| n == "scaled_dot_product_attention.f16").map_or("", |(_, t)| t.as_str());
    assert!(f16.contains("\nRWO_SDPA_MMA_EACH(scaled_dot_product_attention, f16)\n"), "the tensor-core kernels' line");
    assert!(!f16.contains("ROPE(rope, f16)"), "another stem's line in the unit");
}

/// Some units (elementwise: an op's, a cast's, a where_cond's; an attention op's, an index
/// kernel's) and generated matrix-vector kernels, as the runtimes compile them.
#[cfg(feature = "rocm")]
fn sample_units() -> Vec<(String, String)> {
    let elementwise = ["exp", "affine", "add", "lt", "cast_f16", "where_cond_f32"].map(|u| (Family::Elementwise, u));
    let others = [(Family::Attention, "rope_i.bf16"), (Family::Index, "index_select_rows.4")];
    elementwise
        .into_iter()
        .chain(others)
        .map(|(f, u)| unit_sources(f).iter().find(|(n, _)| n == u).unwrap_or_else(|| panic!("no unit {u}")).clone())
        .chain(rocm_wgpu_ops::native::matvec_samples())
        .collect()
}

/// NVRTC needs no GPU: where its library loads (`LD_LIBRARY_PATH`), compile every unit of every
/// family (what the cuda runtime compiles) and the sample matrix-vector kernels for the
/// H100/H200 architecture, a thread a family.
/// Absent NVRTC skips, unless `RWO_REQUIRE` names cuda.
#[cfg(feature = "cuda")]
fn every_hip_source_compiles_with_nvrtc() {
    use rocm_wgpu_ops::native::cuda;
    if !cuda::nvrtc_available() {
        assert!(
            !crate::required_kinds().contains(&BackendKind::Cuda),
            "RWO_REQUIRE names cuda, and NVRTC does not load"
        );
        crate::harness::skip("NVRTC does not load here");
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            for (name, source) in rocm_wgpu_ops::native::matvec_samples() {
                let image = cuda::nvrtc_compile_source(&format!("{name}.hip"), &source, "sm_90")
                    .unwrap_or_else(|e| panic!("{e}"));
                assert!(image.starts_with(b"\x7fELF"), "{name}: NVRTC gave no sm_90 machine code");
            }
        });
        for (family, _) in hip_sources() {
            s.spawn(move || {
                for (unit, source) in unit_sources(family) {
                    let image = cuda::nvrtc_compile_source(&format!("{family}_{unit}.hip"), source, "sm_90")
                        .unwrap_or_else(|e| panic!("{e}"));
                    assert!(image.starts_with(b"\x7fELF"), "{family} {unit}: NVRTC gave no sm_90 machine code");
                }
            });
        }
    });
}

/// The AMD targets the hiprtc test compiles for (the first: every source; the others: the sample
/// units): (target id, `EF_AMDGPU_MACH` in the code object's ELF flags).
#[cfg(feature = "rocm")]
const HIPRTC_TARGETS: &[(&str, u32)] = &[("gfx1030", 0x36), ("gfx90a", 0x3f)];

/// hiprtc needs no GPU: where the HIP library loads, compile every source through the rocm
/// runtime's own path for gfx1030, and the sample units for gfx1030 and gfx90a, and check that
/// each code object is AMD GPU code for that target holding every entry point of its source.
/// (The sources hold nothing per AMD target. CI's hipcc build compiles every one for gfx90a with
/// warnings as errors, so each target is compiled whole once, by one of the two compilers.)
/// Skipped where hiprtc does not load, unless `RWO_EXPECT_ROCM=no-gpu` (CI: the library is
/// there) says it must.
#[cfg(feature = "rocm")]
fn rocm_hiprtc_compiles_every_hip_source() {
    use rocm_wgpu_ops::native::rocm;
    if let Err(why) = rocm::hiprtc_available() {
        let expected = std::env::var("RWO_EXPECT_ROCM").is_ok_and(|e| e == "no-gpu");
        assert!(!expected, "RWO_EXPECT_ROCM=no-gpu, and hiprtc does not load: {why}");
        eprintln!("skipped: hiprtc does not load here: {why}");
        return;
    }
    let word =
        |b: &[u8], at: usize, n: usize| b.get(at..at + n).map(|w| w.iter().rev().fold(0u32, |a, &x| a << 8 | x as u32));
    let samples = sample_units();
    let units: Vec<(&str, &str)> = samples.iter().map(|(u, s)| (u.as_str(), s.as_str())).collect();
    let families: Vec<(&str, &str)> = hip_sources().into_iter().map(|(f, s)| (f.name(), s)).collect();
    for (i, &(arch, mach)) in HIPRTC_TARGETS.iter().enumerate() {
        let sources = if i == 0 { [&families[..], &units[..]].concat() } else { units.clone() };
        for &(family, source) in &sources {
            let image =
                rocm::hiprtc_compile_source(&format!("{family}.hip"), source, arch).unwrap_or_else(|e| panic!("{e}"));
            assert!(image.starts_with(b"\x7fELF"), "{family} for {arch}: not an ELF code object");
            assert_eq!(word(&image, 18, 2), Some(0xe0), "{family} for {arch}: not EM_AMDGPU");
            assert_eq!(word(&image, 48, 4).map(|f| f & 0xff), Some(mach), "{family}: not built for {arch}");
            // The symbol names are NUL-terminated strings of the ELF string table.
            let strings: HashSet<&[u8]> = image.split(|&b| b == 0).collect();
            let missing: Vec<String> =
                entry_points(source).into_iter().filter(|name| !strings.contains(name.as_bytes())).collect();
            assert!(missing.is_empty(), "{family} for {arch}: {} kernels missing: {missing:?}", missing.len());
        }
    }
}

/// Where the rocm backend is absent it says why in one line, asking by ordinal too, and
/// `Device::auto()` falls through to the next backend, naming that reason. CI pins the reason
/// with `RWO_EXPECT_ROCM`: `no-gpu` (the HIP library loads; no AMD GPU) or `not-found` (the
/// library hidden with `RWO_ROCM_LIB=/nonexistent`).
fn rocm_absent_says_why_and_auto_falls_through() {
    let expect = std::env::var("RWO_EXPECT_ROCM").unwrap_or_default();
    let reason = match Device::new(BackendKind::Rocm) {
        Ok(dev) => {
            assert!(expect.is_empty(), "RWO_EXPECT_ROCM={expect}, but rocm answers: {}", dev.describe());
            return;
        }
        Err(Error::BackendUnavailable { kind, reason }) => {
            assert_eq!(kind, "rocm");
            reason
        }
        Err(e) => panic!("rocm: {e}"),
    };
    assert!(!reason.is_empty() && !reason.contains('\n'), "not a one-line reason: {reason:?}");
    match expect.as_str() {
        "" => {}
        "no-gpu" => assert!(reason.starts_with("HIP ") && reason.ends_with(": no AMD GPU"), "{reason}"),
        "not-found" => assert!(reason.starts_with("libamdhip64 (the HIP runtime) not found (tried "), "{reason}"),
        other => panic!("RWO_EXPECT_ROCM={other}: expected no-gpu or not-found"),
    }
    // RWO_ROCM_DEVICE steers the default device only; an ordinal asked for may still answer.
    let steered = std::env::var("RWO_ROCM_DEVICE").is_ok_and(|d| !d.trim().is_empty());
    match Device::rocm(0) {
        Err(Error::BackendUnavailable { kind, reason: by_ordinal }) => {
            assert_eq!(kind, "rocm");
            if !expect.is_empty() {
                assert_eq!(by_ordinal, reason);
            }
        }
        other if !steered => panic!("rocm device 0 answers where the default device does not: {other:?}"),
        _ => {}
    }
    if std::env::var("RWO_BACKEND").is_ok_and(|b| !b.trim().is_empty()) {
        return;
    }
    let auto = Device::auto().unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(auto.kind(), BackendKind::Rocm);
    assert!(auto.describe().contains(&format!("rocm ({reason})")), "{}", auto.describe());
    if crate::required_kinds().contains(&BackendKind::Wgpu) && Device::new(BackendKind::Cuda).is_err() {
        assert_eq!(auto.kind(), BackendKind::Wgpu, "{}", auto.describe());
    }
}
