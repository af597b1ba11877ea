//! Every WGSL kernel x every specialisation, parsed and validated by naga (no GPU needed), and
//! every op x dtype of the WGSL families covered by a kernel.

use rocm_wgpu_ops::spec::{self, Family};
use rocm_wgpu_ops::wgpu::{Caps, shader_variants};
use std::collections::HashSet;

crate::tests!(every_kernel_variant_validates, every_op_and_dtype_of_the_wgsl_families_has_a_kernel);

fn naga_caps(c: Caps) -> naga::valid::Capabilities {
    use naga::valid::Capabilities as C;
    let mut caps = C::empty();
    if c.f16 {
        caps |= C::SHADER_FLOAT16;
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
            let module = match naga::front::wgsl::parse_str(&src) {
                Ok(m) => m,
                Err(e) => {
                    failures.push(format!("{name} {caps:?}: {}", e.emit_to_string(&src)));
                    continue;
                }
            };
            let mut v = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga_caps(caps));
            if let Err(e) = v.validate(&module) {
                failures.push(format!("{name} {caps:?}: {}", e.emit_to_string(&src)));
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

fn every_op_and_dtype_of_the_wgsl_families_has_a_kernel() {
    let wgsl = [
        Family::Elementwise,
        Family::Copy,
        Family::Reduce,
        Family::Index,
        Family::Sort,
        Family::Random,
        Family::Upsample,
        Family::Nn,
        Family::Pool,
    ];
    let caps = Caps { f16: true, f64: true, i64: true, subgroup: false };
    let names: HashSet<String> = shader_variants(caps).into_iter().map(|(n, _)| n).collect();
    for op in spec::ops().into_iter().filter(|o| wgsl.contains(&o.family)) {
        for &dt in op.dtypes {
            let name = spec::kernel_name(op.name, dt);
            let cast = op.name == "cast" || op.name == "where_cond";
            assert!(cast || names.contains(&name), "no WGSL kernel for {name}");
        }
    }
}
