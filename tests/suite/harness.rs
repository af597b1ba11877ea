//! The suite's own harness (libtest-mimic, `harness = false`): a case of a backend that is absent
//! here is reported as ignored, with the reason, not as passed; `RWO_REQUIRE` turns that into a
//! failure. Cases and tests register themselves (`suite!`, `tests!`), so adding one stays a
//! one-line edit in its family file; names and filtering are libtest's (`suite index::gather`).
//! In a browser the registry is walked by `web.rs` instead; the runner here is native.

#[cfg(not(target_family = "wasm"))]
use libtest_mimic::{Arguments, Completion, Failed, Trial};
#[cfg(not(target_family = "wasm"))]
use rocm_wgpu_ops::BackendKind;
use rocm_wgpu_ops::{Device, Result};
use std::future::Future;
#[cfg(not(target_family = "wasm"))]
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::pin::Pin;
#[cfg(not(target_family = "wasm"))]
use std::process::ExitCode;
#[cfg(not(target_family = "wasm"))]
use std::sync::Mutex;
#[cfg(not(target_family = "wasm"))]
use std::time::{Duration, Instant};

/// A running case: boxed, as each `async fn` has its own future type, and not `Send`, as
/// WebGPU's handles are not.
pub type CaseFuture<'a> = Pin<Box<dyn Future<Output = Result<()>> + 'a>>;

/// A case written once as an `async fn` of `&Device`, run once per backend kind.
pub struct Case {
    pub module: &'static str,
    pub name: &'static str,
    pub body: CaseFn,
}

/// A case's body, as `suite!` registers it.
pub type CaseFn = for<'a> fn(&'a Device) -> CaseFuture<'a>;

/// A test that takes no device.
pub struct Plain {
    pub module: &'static str,
    pub name: &'static str,
    pub body: fn() -> std::result::Result<(), String>,
}

inventory::collect!(Case);
inventory::collect!(Plain);

/// One case per backend kind (`case::cpu`, `case::wgpu`, ...) for each
/// `async fn(&Device) -> Result<()>`; `suite!(a, #[cfg(..)] b)` as in `tests!`.
#[macro_export]
macro_rules! suite {
    ($($(#[$m:meta])* $case:ident),* $(,)?) => {
        $($(#[$m])* inventory::submit! {
            $crate::harness::Case { module: module_path!(), name: stringify!($case), body: |dev| Box::pin($case(dev)) }
        })*
    };
}

/// Tests without a device: `tests!(name, #[cfg(feature = "cuda")] other)` registers functions
/// returning `()` or a `Result` (libtest's `#[test]` does not run under this harness).
#[macro_export]
macro_rules! tests {
    ($($(#[$m:meta])* $name:ident),* $(,)?) => {
        $($(#[$m])* inventory::submit! {
            $crate::harness::Plain {
                module: module_path!(),
                name: stringify!($name),
                body: || $crate::harness::Outcome::outcome($name()),
            }
        })*
    };
}

/// What a plain test returns: nothing, or a result whose error fails it.
pub trait Outcome {
    fn outcome(self) -> std::result::Result<(), String>;
}

impl Outcome for () {
    fn outcome(self) -> std::result::Result<(), String> {
        Ok(())
    }
}

impl<E: std::fmt::Display> Outcome for std::result::Result<(), E> {
    fn outcome(self) -> std::result::Result<(), String> {
        self.map_err(|e| e.to_string())
    }
}

/// The payload of [`skip`].
#[cfg(not(target_family = "wasm"))]
struct Skipped(String);

/// Ends the running test as ignored, with `reason` (for what this machine lacks).
#[cfg(not(target_family = "wasm"))]
pub fn skip(reason: impl Into<String>) -> ! {
    // `resume_unwind` runs no panic hook: nothing is printed as if the test had failed.
    resume_unwind(Box::new(Skipped(reason.into())))
}

/// How long each test that ran took, for the slowest-cases lines at the end of a run.
#[cfg(not(target_family = "wasm"))]
static TIMES: Mutex<Vec<(Duration, String)>> = Mutex::new(Vec::new());

/// Runs `f`, turning [`skip`] into an ignored outcome; other panics fail the test. A test that
/// ran (passed or failed) has its time noted under `name`.
#[cfg(not(target_family = "wasm"))]
fn guarded(name: &str, f: impl FnOnce() -> std::result::Result<(), String>) -> std::result::Result<Completion, Failed> {
    let start = Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(f));
    if !matches!(&outcome, Err(p) if p.is::<Skipped>()) {
        TIMES.lock().unwrap_or_else(|e| e.into_inner()).push((start.elapsed(), name.to_string()));
    }
    match outcome {
        Ok(Ok(())) => Ok(Completion::Completed),
        Ok(Err(msg)) => Err(msg.into()),
        Err(payload) => match payload.downcast::<Skipped>() {
            Ok(s) => Ok(Completion::ignored_with(s.0)),
            Err(payload) => resume_unwind(payload),
        },
    }
}

/// Runs `case` on the backend of `kind`: ignored when it is absent, unless it is required.
#[cfg(not(target_family = "wasm"))]
fn run_case(kind: BackendKind, case: CaseFn) -> std::result::Result<(), String> {
    let dev = match crate::device(kind) {
        Ok(dev) => dev,
        Err(why) if crate::required_kinds().contains(&kind) => {
            return Err(format!("RWO_REQUIRE names {kind}, which is absent: {why}"));
        }
        Err(why) => skip(format!("{kind} absent: {why}")),
    };
    pollster::block_on(case(&dev)).map_err(|e| format!("on {}: {e}", dev.describe()))
}

/// `suite::index` -> `index::`, the suite's root -> nothing.
pub fn prefix(module: &str) -> String {
    match module.split_once("::") {
        Some((_, rest)) => format!("{rest}::"),
        None => String::new(),
    }
}

#[cfg(not(target_family = "wasm"))]
pub fn main() -> ExitCode {
    let args = Arguments::from_args();
    let mut trials = vec![];
    for c in inventory::iter::<Case> {
        for &kind in &[BackendKind::Cpu, BackendKind::Wgpu, BackendKind::Rocm, BackendKind::Cuda] {
            let body = c.body;
            let name = format!("{}{}::{kind}", prefix(c.module), c.name);
            let label = name.clone();
            trials.push(Trial::ignorable_test(name, move || guarded(&label, || run_case(kind, body))));
        }
    }
    for p in inventory::iter::<Plain> {
        let body = p.body;
        let name = format!("{}{}", prefix(p.module), p.name);
        let label = name.clone();
        trials.push(Trial::ignorable_test(name, move || guarded(&label, body)));
    }
    trials.sort_by(|a, b| a.name().cmp(b.name()));
    let conclusion = libtest_mimic::run(&args, trials);
    print_slowest();
    conclusion.exit_code()
}

/// The slowest tests of the run and the share of the total they took (where many ran), so
/// that where a run's minutes go is in every log.
#[cfg(not(target_family = "wasm"))]
fn print_slowest() {
    const SHOWN: usize = 12;
    let mut times = std::mem::take(&mut *TIMES.lock().unwrap_or_else(|e| e.into_inner()));
    if times.len() <= SHOWN {
        return;
    }
    times.sort_by_key(|t| std::cmp::Reverse(t.0));
    let total: Duration = times.iter().map(|t| t.0).sum();
    let shown: Duration = times[..SHOWN].iter().map(|t| t.0).sum();
    println!(
        "slowest {SHOWN} of {} tests that ran: {:.1} s of {:.1} s (summed over test threads)",
        times.len(),
        shown.as_secs_f64(),
        total.as_secs_f64()
    );
    for (time, name) in &times[..SHOWN] {
        println!("  {:7.2} s  {name}", time.as_secs_f64());
    }
    let mut families: Vec<(Duration, &str)> = vec![];
    for (time, name) in &times {
        let family = name.split("::").next().unwrap_or_default();
        match families.iter_mut().find(|f| f.1 == family) {
            Some(f) => f.0 += *time,
            None => families.push((*time, family)),
        }
    }
    families.sort_by_key(|f| std::cmp::Reverse(f.0));
    let line: Vec<String> = families.iter().map(|(t, f)| format!("{f} {:.0} s", t.as_secs_f64())).collect();
    println!("by family: {}", line.join(", "));
}

/// libtest's `#[test]` attribute registers nothing under this harness: such a test would never
/// run, silently. Every one must be listed in `tests!` instead.
#[cfg(not(target_family = "wasm"))] // the sources on disk
fn no_test_attribute_is_left() -> std::result::Result<(), String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/suite");
    let Ok(entries) = std::fs::read_dir(dir) else { skip(format!("the suite's sources are not at {dir}")) };
    let mut found = vec![];
    for entry in entries.flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[test]") {
                found.push(format!("{}:{}", entry.path().display(), i + 1));
            }
        }
    }
    if found.is_empty() { Ok(()) } else { Err(format!("#[test] never runs here; list it in tests!(..): {found:?}")) }
}

crate::tests!(
    #[cfg(not(target_family = "wasm"))]
    no_test_attribute_is_left
);
