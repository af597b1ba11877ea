//! The self-check in a browser: every op of the spec on the device `Device::auto_async()` picks
//! there (WebGPU, else the cpu), against the cpu reference, one family at a time. The page is
//! `examples/web/index.html`; `examples/web/build.sh` builds this file into `examples/web/pkg/`.
//! It is wasm32-only: natively it compiles to nothing.
#![cfg(target_family = "wasm")]

#[path = "../../src/app/selfcheck.rs"]
#[allow(dead_code, reason = "the page runs the async self-check; the rest serves the main job and the suite")]
mod selfcheck;

use rocm_wgpu_ops::Device;
use rocm_wgpu_ops::spec::Family;
use selfcheck::Scope;
use wasm_bindgen::prelude::*;

/// The device the page checks.
#[wasm_bindgen]
pub struct Checker {
    dev: Device,
}

/// Opens `Device::auto_async()`: WebGPU where the browser has it, else the cpu.
#[wasm_bindgen]
pub async fn open() -> Result<Checker, JsError> {
    let dev = Device::auto_async().await.map_err(|e| JsError::new(&e.to_string()))?;
    Ok(Checker { dev })
}

/// The families of the spec, in the self-check's order.
#[wasm_bindgen]
pub fn families() -> Vec<String> {
    Family::ALL.iter().map(|f| f.name().to_string()).collect()
}

#[wasm_bindgen]
impl Checker {
    /// Which backend runs, and why it was chosen.
    pub fn describe(&self) -> String {
        self.dev.describe().to_string()
    }

    /// The device's name, features and limits, as `[key, value]` pairs.
    pub fn info(&self) -> js_sys::Array {
        self.dev.info().into_iter().map(|(k, v)| js_sys::Array::of2(&k.into(), &v.into())).collect()
    }

    /// Runs the checks of the family named `name` (every dtype, or f32 only when `quick`),
    /// calling `on_check(index, check)` before each. Resolves to `{checks, failures,
    /// unsupported, skipped}` (the lists hold one line per check).
    pub fn run_family(&self, name: String, quick: bool, on_check: js_sys::Function) -> js_sys::Promise {
        let dev = self.dev.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let family = Family::ALL
                .iter()
                .copied()
                .find(|f| f.name() == name)
                .ok_or_else(|| JsError::new(&format!("no family named {name:?}")))?;
            let scope = if quick { Scope::Quick } else { Scope::Full };
            let mut progress = |i: usize, check: &str| {
                // A throwing callback only loses the progress display.
                let _ = on_check.call2(&JsValue::NULL, &(i as u32).into(), &check.into());
            };
            let r = selfcheck::run_family_async(&dev, family, scope, None, &mut progress).await;
            let lines = |v: &[String]| v.iter().map(JsValue::from).collect::<js_sys::Array>();
            let out = js_sys::Object::new();
            let set = |k: &str, v: JsValue| js_sys::Reflect::set(&out, &k.into(), &v).map(drop);
            set("checks", (r.checks as u32).into())?;
            set("failures", lines(&r.failures).into())?;
            set("unsupported", lines(&r.unsupported).into())?;
            set("skipped", (r.skipped as u32).into())?;
            Ok(out.into())
        })
    }
}
