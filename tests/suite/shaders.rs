//! Every WGSL kernel x every specialisation, parsed and validated by naga (no GPU needed), and
//! every op x dtype of the WGSL families covered by a kernel.

use rocm_wgpu_ops::spec;
use rocm_wgpu_ops::wgpu::{Caps, shader_variants};
use std::collections::HashSet;

crate::tests!(every_kernel_variant_validates, every_op_and_dtype_has_a_wgsl_kernel);

fn naga_caps(c: Caps) -> naga::valid::Capabilities {
    use naga::valid::Capabilities as C;
    let mut caps = C::empty();
    if c.f16 {
        // wgpu grants unpack2x16float and friends beside f16 (on llvmpipe only with it).
        caps |= C::SHADER_FLOAT16 | C::SHADER_FLOAT16_IN_FLOAT32;
    }
    if c.f64 {
        caps |= C::FLOAT64;
    }
    if c.i64 {
        caps |= C::SHADER_INT64;
    }
    if c.subgroup {
        caps |= C::SUBGROUP;
    }
    caps
}

fn every_kernel_variant_validates() {
    let mut failures = vec![];
    let mut count = 0;
    // Most kernels ignore some features (subgroups, mostly): each distinct source once.
    let mut seen = HashSet::new();
    for caps in Caps::all_combinations() {
        for (name, spec) in shader_variants(caps) {
            let spec = spec.unwrap_or_else(|e| panic!("{name} with {caps:?}: {e}"));
            let src = spec.source();
            if !seen.insert(src.clone()) {
                continue;
            }
            count += 1;
            if let Some(line) = src.lines().find(|l| uninitialised_var(l)) {
                failures.push(format!("{name} {caps:?}: `{}` has no initializer", line.trim()));
            }
            let module = match naga::front::wgsl::parse_str(&src) {
                Ok(m) => m,
                Err(e) => {
                    failures.push(format!("{name} {caps:?}: {}", e.emit_to_string(&src)));
                    continue;
                }
            };
            // Cooperative-matrix kernels also need subgroups (wgpu grants both on adapters that
            // run them).
            let coop = spec.enables.contains(&"wgpu_cooperative_matrix");
            let extra = if coop {
                naga::valid::Capabilities::COOPERATIVE_MATRIX | naga::valid::Capabilities::SUBGROUP
            } else {
                naga::valid::Capabilities::empty()
            };
            let mut v = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga_caps(caps) | extra);
            match v.validate(&module) {
                Err(e) => failures.push(format!("{name} {caps:?}: {}", e.emit_to_string(&src))),
                // naga's SPIR-V writer has panicked on valid cooperative-matrix code (a pointer
                // index computed inline): write these as Vulkan will, here, without a GPU.
                Ok(info) if coop => {
                    let written = std::panic::catch_unwind(|| {
                        naga::back::spv::write_vec(&module, &info, &naga::back::spv::Options::default(), None)
                    });
                    match written {
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => failures.push(format!("{name} {caps:?}: SPIR-V: {e}")),
                        Err(_) => failures.push(format!("{name} {caps:?}: naga's SPIR-V writer panicked")),
                    }
                }
                Ok(_) => {}
            }
        }
    }
    let shown: Vec<_> = failures.iter().take(5).collect();
    assert!(
        failures.is_empty(),
        "{} of {count} variants fail:\n{}",
        failures.len(),
        shown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
    );
}

/// A function's `var` without an initializer (`var s: f32;`). WGSL zeroes it each time control
/// reaches it, each iteration of a loop too, but naga before gfx-rs/wgpu#9592 (Firefox 153's)
/// zeroes it once at the function's start: a score summed in a loop then kept the last
/// iteration's (session 35). Every kernel writes its initial value out.
fn uninitialised_var(line: &str) -> bool {
    line.trim_start().strip_prefix("var ").is_some_and(|rest| !rest.starts_with('<') && !rest.contains('='))
}

fn every_op_and_dtype_has_a_wgsl_kernel() {
    let caps = Caps { f16: true, f64: true, i64: true, subgroup: false };
    let names: HashSet<String> = shader_variants(caps).into_iter().map(|(n, _)| n).collect();
    for op in spec::ops() {
        for &dt in op.dtypes {
            let name = spec::kernel_name(op.name, dt);
            let cast = op.name == "cast" || op.name == "where_cond";
            // The kernel itself, or its variants (`qmatvec_f32_q4_0`: one per block type).
            let found = names.contains(&name) || names.iter().any(|n| n.starts_with(&format!("{name}_")));
            assert!(cast || found, "no WGSL kernel for {name}");
        }
    }
}
