//! The suite in a browser (`wasm-bindgen-test`, run by `.ci/browser-suite`): one test per family
//! and backend walks that family's registered cases, awaits each on the device, and fails at the
//! end naming every case that failed. A panic (a failed assertion) aborts on wasm: it fails that
//! test, and the case it came from is the one after the last logged (its message names the check).

use crate::harness::{Case, Plain, prefix};
use rocm_wgpu_ops::BackendKind;
use wasm_bindgen_test::{console_log, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

/// On WebGPU the comparison loops run one comparison in `SAMPLE` (see [`crate::sample`]); the
/// cpu runs them all. Chromium (SwiftShader, a core for ~9 minutes) is the longer of the two
/// browsers that `.ci/run` runs beside its native steps on 2 cores.
pub const SAMPLE: u64 = 8;

/// Runs every case of `family` on the device of `kind`; WebGPU is what the browser run is for,
/// so its absence fails.
async fn run(family: &str, kind: BackendKind) {
    crate::open(BackendKind::Cpu).await.unwrap_or_else(|why| panic!("the cpu reference: {why}"));
    let dev = crate::open(kind).await.unwrap_or_else(|why| panic!("{kind} absent in this browser: {why}"));
    let (mut ran, mut failed) = (0, vec![]);
    for case in inventory::iter::<Case> {
        if case.module.rsplit("::").next() != Some(family) {
            continue;
        }
        // Built with `RWO_WEB_CASE` set, only the cases whose name contains it.
        if option_env!("RWO_WEB_CASE").is_some_and(|c| !case.name.contains(c)) {
            continue;
        }
        let name = format!("{family}::{}::{kind}", case.name);
        ran += 1;
        crate::sample::start(&name, if kind == BackendKind::Cpu { 1 } else { SAMPLE });
        let start = web_time::Instant::now();
        // The case's queued checks ([`crate::later`]) are awaited before the next starts.
        let checked = (case.body)(&dev).await;
        if let Err(e) = checked.and(crate::later::flush().await) {
            failed.push(format!("{name}: {e}"));
        }
        console_log!("{name} {:.0} ms", start.elapsed().as_secs_f64() * 1e3);
    }
    assert!(ran > 0, "no case of {family} is registered");
    assert!(failed.is_empty(), "on {}, {} of {ran} cases failed:\n{}", dev.describe(), failed.len(), failed.join("\n"));
}

/// The device-free tests that exist in a browser.
#[wasm_bindgen_test::wasm_bindgen_test]
pub fn plain() {
    let mut failed = vec![];
    for test in inventory::iter::<Plain> {
        if let Err(e) = (test.body)() {
            failed.push(format!("{}{}: {e}", prefix(test.module), test.name));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// `cpu` and `webgpu` tests for each family: `suite::web::nn::webgpu`.
macro_rules! families {
    ($($family:ident),* $(,)?) => {
        $(pub mod $family {
            use rocm_wgpu_ops::BackendKind;
            use wasm_bindgen_test::wasm_bindgen_test;

            #[wasm_bindgen_test]
            pub async fn cpu() {
                super::run(stringify!($family), BackendKind::Cpu).await
            }

            #[wasm_bindgen_test]
            pub async fn webgpu() {
                super::run(stringify!($family), BackendKind::Wgpu).await
            }
        })*
    };
}

with_browser_families!(families);
