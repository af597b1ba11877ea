//! What a device states it can run ([`Device::supports`]) is what it runs, both ways: every op x
//! dtype it states unsupported fails with that `UnsupportedDType`, every other one passes the
//! self-check against the cpu reference; and the self-check covers every op x dtype of the spec.
//! On every backend, and on a wgpu adapter without optional features.

use crate::selfcheck::{self, Verdict};
use crate::suite;
#[cfg(not(target_family = "wasm"))]
use rocm_wgpu_ops::BackendKind;
use rocm_wgpu_ops::spec::{self, Family};
use rocm_wgpu_ops::{DType, Device, Error, Result};
use std::collections::HashSet;

suite!(the_statement_is_the_behaviour);
crate::tests!(
    #[cfg(not(target_family = "wasm"))]
    the_statement_is_the_behaviour_without_optional_features,
    the_statement_answers_by_name
);

/// The op and the dtypes of a self-check named `{op} {dtype}...` (dtypes stop at the first word
/// that is not one: `index_select f64 ids u8` is about f64).
fn parse(name: &str) -> (&str, Vec<DType>) {
    let mut words = name.split(' ');
    let op = words.next().unwrap_or_default();
    let dtypes = words.map_while(|w| DType::ALL.iter().copied().find(|d| d.name() == w)).collect();
    (op, dtypes)
}

async fn agree(dev: &Device) -> Result<()> {
    let mut wrong = vec![];
    let mut covered = HashSet::new();
    for &family in Family::ALL {
        for (name, verdict) in selfcheck::verdicts(dev, family).await {
            let (op, dtypes) = parse(&name);
            covered.extend(dtypes.iter().map(|&d| (op.to_string(), d)));
            // A cast to its own dtype is the identity: no kernel runs.
            let identity = op == "cast" && dtypes.windows(2).all(|w| w[0] == w[1]);
            let stated = dtypes.iter().find_map(|&d| dev.supports(op, d).err()).filter(|_| !identity);
            match (stated, verdict) {
                (None, Verdict::Pass) => {}
                (Some(want), Verdict::Unsupported(got)) => {
                    let same = matches!((&want, &got),
                        (Error::UnsupportedDType { op: a, .. }, Error::UnsupportedDType { op: b, dtype, .. })
                            if a == b && dtypes.contains(dtype));
                    if !same {
                        wrong.push(format!("{name}: stated {want}, refused with {got}"));
                    }
                }
                (Some(want), Verdict::Pass) => wrong.push(format!("{name}: stated unsupported ({want}), yet it ran")),
                (None, Verdict::Unsupported(got)) => wrong.push(format!("{name}: stated supported, refused: {got}")),
                (_, Verdict::Failed(e)) => wrong.push(format!("{name}: {e}")),
            }
        }
    }
    for op in spec::ops() {
        for &d in op.dtypes {
            if !covered.contains(&(op.name.to_string(), d)) {
                wrong.push(format!("{} {d}: no self-check runs it", op.name));
            }
        }
    }
    assert!(wrong.is_empty(), "on {}: statement and behaviour differ:\n{}", dev.describe(), wrong.join("\n"));
    Ok(())
}

async fn the_statement_is_the_behaviour(dev: &Device) -> Result<()> {
    agree(dev).await
}

#[cfg(not(target_family = "wasm"))] // a wgpu device of its own, opened blocking
fn the_statement_is_the_behaviour_without_optional_features() -> Result<()> {
    let dev = match Device::wgpu(None, Some("none")) {
        Ok(d) => d,
        Err(e) if crate::required_kinds().contains(&BackendKind::Wgpu) => panic!("RWO_REQUIRE names wgpu: {e}"),
        Err(e) => crate::harness::skip(format!("no wgpu adapter: {e}")),
    };
    let stated = dev.unsupported();
    assert!(stated.iter().all(|(_, d, why)| *d == DType::F64 && why.contains("SHADER_F64")), "{stated:?}");
    use rocm_wgpu_ops::spec::Prop;
    // Without SHADER_F64, f64 is refused exactly by the ops that do arithmetic on it: the ops
    // the spec declares `MovesBytes` run on its 8 bytes.
    for op in spec::ops().into_iter().filter(|o| o.dtypes.contains(&DType::F64)) {
        let refused = stated.iter().any(|(o, _, _)| o.name == op.name);
        assert_eq!(refused, !op.has(Prop::MovesBytes), "{} f64 without SHADER_F64", op.name);
    }
    pollster::block_on(agree(&dev))
}

fn the_statement_answers_by_name() {
    let cpu = Device::cpu();
    assert!(cpu.unsupported().is_empty(), "the cpu reference runs everything");
    assert!(matches!(cpu.supports("exp", DType::U8), Err(Error::WrongDType { op: "exp", .. })));
    assert!(matches!(cpu.supports("no_such_op", DType::F32), Err(Error::InvalidParam { op: "supports", .. })));
    assert!(cpu.supports("cast", DType::F64).is_ok());
}
