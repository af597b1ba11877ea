//! The shared suite: one test body per case, written against `&Device`, run on every backend
//! available here and compared with the cpu reference.
//!
//! `suite!(case)` makes one test per backend kind (`case::cpu`, `case::wgpu`, ...); `tests!(name)`
//! registers a test without a device. A backend that is absent is reported as ignored, with the
//! reason, unless `RWO_REQUIRE` names it: then its tests fail.
//!
//! On wasm32 the same cases run in a browser, on the cpu and WebGPU (`web.rs`); what cannot exist
//! there is compiled out, with the reason.

#![cfg_attr(target_family = "wasm", no_main)]

/// Calls macro `$m` with the case modules a browser runs: `web.rs` makes a `cpu` and a `webgpu`
/// test of each, and [`every_case_module_runs_in_a_browser_or_is_native_only`] checks the list.
macro_rules! with_browser_families {
    ($m:ident) => {
        $m! {
            api,
            attention,
            conv,
            copy,
            devices,
            elementwise,
            errors,
            fusion,
            index,
            io,
            matmul,
            nn,
            numerics,
            parts,
            plan,
            pool,
            quant,
            random,
            recurrent,
            reduce,
            sort,
            status,
            support,
            upsample
        }
    };
}

/// The modules compiled out on wasm32 (each `mod` line below says why).
#[cfg(not(target_family = "wasm"))]
const NATIVE_ONLY: &[&str] = &["fuzz", "native", "readback", "runtime", "shaders"];

mod api;
mod attention;
mod conv;
mod copy;
mod devices;
mod elementwise;
mod errors;
mod fusion;
#[cfg(not(target_family = "wasm"))] // proptest drives the blocking API, which a browser cannot run
mod fuzz;
mod harness;
mod index;
mod io;
mod matmul;
#[cfg(not(target_family = "wasm"))] // the native backends and their HIP sources on disk
mod native;
mod nn;
mod numerics;
mod parts;
mod plan;
mod pool;
mod quant;
mod random;
#[cfg(not(target_family = "wasm"))] // compares with the blocking forms, which a browser cannot run
mod readback;
mod recurrent;
mod reduce;
#[cfg(all(feature = "rocm", unix))] // the ROCm installed here, a C compiler, symlinks
mod rocm;
#[cfg(not(target_family = "wasm"))] // wgpu devices of its own, opened and read back blocking
mod runtime;
// The main job's self-check (src/app/), which `runtime` and `support` run.
#[path = "../../src/app/selfcheck.rs"]
#[allow(dead_code, reason = "the suite runs whole families, without the main job's quick scope")]
mod selfcheck;
#[cfg(not(target_family = "wasm"))] // naga on the host: nothing of it differs in a browser
mod shaders;
mod sort;
mod status;
mod support;
mod upsample;
#[cfg(target_family = "wasm")]
mod web;

use rocm_wgpu_ops::{BackendKind, CpuStorage, DType, Device, Result, Shape, Tensor};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Runs the registered cases and tests (see `harness.rs`).
#[cfg(not(target_family = "wasm"))]
fn main() -> std::process::ExitCode {
    lavapipe_without_llvm_passes();
    harness::main()
}

/// Lavapipe compiles each kernel with LLVM at its first dispatch, and most of a cold run is that
/// (ARCHITECTURE.md, "Where the suite's time goes"). Without LLVM's IR optimisation passes
/// (Mesa's `GALLIVM_PERF=nopt`; instruction selection and register allocation still run) a cold
/// run takes 0.84x the time: the same kernels, the same results, which run slower, and the suite's
/// kernels run far less long than they compile. A `GALLIVM_PERF` already set (even empty) wins.
#[cfg(not(target_family = "wasm"))]
fn lavapipe_without_llvm_passes() {
    if std::env::var_os("GALLIVM_PERF").is_none() {
        // SAFETY: no other thread runs yet: the harness starts the test threads after this.
        unsafe { std::env::set_var("GALLIVM_PERF", "nopt") };
    }
}

/// The kinds `RWO_REQUIRE` names (comma-separated).
#[cfg(not(target_family = "wasm"))]
pub fn required_kinds() -> Vec<BackendKind> {
    let list = std::env::var("RWO_REQUIRE").unwrap_or_default();
    list.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| BackendKind::parse(s).unwrap_or_else(|e| panic!("RWO_REQUIRE: {e}")))
        .collect()
}

type Devices = Mutex<HashMap<BackendKind, std::result::Result<Device, String>>>;

fn devices() -> std::sync::MutexGuard<'static, HashMap<BackendKind, std::result::Result<Device, String>>> {
    static DEVICES: OnceLock<Devices> = OnceLock::new();
    DEVICES.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner())
}

/// One device per kind for the whole run (GPU contexts are costly), or why there is none; wgpu
/// natively one per test thread. Lavapipe compiles a kernel with LLVM on its device's queue
/// thread at the kernel's first dispatch: with one device, every kernel of a cold run was
/// compiled on one core while the test threads waited for it. (Kept for the whole run, never
/// dropped as a thread ends: wgpu's locks use thread-locals of their own.) (In a browser,
/// [`open`] opens it first: there only the async form can.)
pub fn device(kind: BackendKind) -> std::result::Result<Device, String> {
    #[cfg(not(target_family = "wasm"))]
    if kind == BackendKind::Wgpu {
        static PER_THREAD: OnceLock<Mutex<HashMap<std::thread::ThreadId, std::result::Result<Device, String>>>> =
            OnceLock::new();
        let mut opened = PER_THREAD.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        let this = std::thread::current().id();
        return opened.entry(this).or_insert_with(|| Device::new(kind).map_err(|e| e.to_string())).clone();
    }
    devices().entry(kind).or_insert_with(|| Device::new(kind).map_err(|e| e.to_string())).clone()
}

/// Opens the device of `kind` for [`device`] with the async form, once.
#[cfg(target_family = "wasm")]
pub async fn open(kind: BackendKind) -> std::result::Result<Device, String> {
    if let Some(opened) = devices().get(&kind) {
        return opened.clone();
    }
    let opened = Device::new_async(kind).await.map_err(|e| e.to_string());
    devices().entry(kind).or_insert(opened).clone()
}

/// The shared wgpu device, or `None` where wgpu is absent and not required: for tests that
/// open wgpu devices of their own (other features or tuning) and compare them with the cpu.
#[cfg(not(target_family = "wasm"))]
pub fn wgpu_or_skip() -> Option<Device> {
    match device(BackendKind::Wgpu) {
        Ok(dev) => Some(dev),
        Err(why) if required_kinds().contains(&BackendKind::Wgpu) => panic!("RWO_REQUIRE names wgpu: {why}"),
        Err(_) => None,
    }
}

#[cfg(not(target_family = "wasm"))] // a browser has no environment
fn required_backends_are_present() {
    for kind in required_kinds() {
        if let Err(why) = device(kind) {
            panic!("RWO_REQUIRE names {kind}, which is absent: {why}");
        }
    }
}

/// Every module that registers cases is run by the browser suite, or is compiled out there: a
/// new family's file cannot silently miss the browsers.
#[cfg(not(target_family = "wasm"))]
fn every_case_module_runs_in_a_browser_or_is_native_only() {
    macro_rules! names {
        ($($f:ident),*) => {
            &[$(stringify!($f)),*]
        };
    }
    let browser: &[&str] = with_browser_families!(names);
    for case in inventory::iter::<harness::Case> {
        let module = case.module.rsplit("::").next().unwrap_or_default();
        assert!(
            browser.contains(&module) || NATIVE_ONLY.contains(&module),
            "{module} registers cases but is neither in with_browser_families! nor NATIVE_ONLY"
        );
    }
    for module in NATIVE_ONLY {
        assert!(!browser.contains(module), "{module} is both native-only and run in a browser");
    }
}

crate::tests!(
    #[cfg(not(target_family = "wasm"))]
    required_backends_are_present,
    #[cfg(not(target_family = "wasm"))]
    every_case_module_runs_in_a_browser_or_is_native_only
);

pub fn cpu() -> Device {
    device(BackendKind::Cpu).expect("the cpu backend always exists")
}

/// Absolute and relative tolerance: `|got - want| <= atol + rtol * |want|`.
#[derive(Clone, Copy, Debug)]
pub struct Tol {
    pub atol: f64,
    pub rtol: f64,
}

impl Tol {
    pub const EXACT: Tol = Tol { atol: 0.0, rtol: 0.0 };

    /// The rounding error of one op in `dtype` (ints: exact).
    pub fn of(dtype: DType) -> Tol {
        match dtype {
            DType::F64 => Tol { atol: 1e-12, rtol: 1e-12 },
            DType::F32 => Tol { atol: 1e-6, rtol: 1e-5 },
            DType::F16 => Tol { atol: 1e-3, rtol: 2e-3 },
            DType::BF16 => Tol { atol: 8e-3, rtol: 1.6e-2 },
            _ => Tol::EXACT,
        }
    }

    /// This tolerance times `k` (for ops whose error grows, e.g. sums of many terms).
    pub fn times(self, k: f64) -> Tol {
        Tol { atol: self.atol * k, rtol: self.rtol * k }
    }
}

/// Compares every element; NaN matches NaN, infinities match by sign. In a browser on WebGPU
/// the values are compared [`later`].
pub async fn assert_close(got: &Tensor, want: &Tensor, tol: Tol, what: &str) -> Result<()> {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    let what = what.to_string();
    later::check(&[got, want], async move |t| close(&t[0], &t[1], tol, &what).await).await
}

async fn close(got: &Tensor, want: &Tensor, tol: Tol, what: &str) -> Result<()> {
    let (g, w) = (got.to_cpu_storage_async().await?, want.to_cpu_storage_async().await?);
    if got.dtype() == DType::I64 {
        assert_eq!(g, w, "{what}: i64 values");
        return Ok(());
    }
    let (g, w) = (g.to_f64_vec(), w.to_f64_vec());
    for (i, (&a, &b)) in g.iter().zip(&w).enumerate() {
        let ok = if b.is_nan() {
            a.is_nan()
        } else if b.is_infinite() {
            a == b
        } else {
            (a - b).abs() <= tol.atol + tol.rtol * b.abs()
        };
        assert!(ok, "{what}: element {i} of {}: got {a}, want {b} (tol {tol:?})", got.shape());
    }
    Ok(())
}

/// In a browser on WebGPU the checks of values ([`assert_close`], [`assert_values`],
/// [`assert_floats`], through [`later::check`]) wait for their readbacks together: Firefox
/// delivers a readback only at its next 100 ms poll of the device, so one at a time a check
/// costs ~100 ms, whatever its size.
/// A check there takes a copy of its tensors on the device (so that a later in-place write does
/// not reach what it reads), returns at once and is queued; the queue is awaited whole when
/// [`TOGETHER`](later::TOGETHER) checks are in it and at the end of each case (`web.rs`), where a
/// failed check fails the case, naming the check. Natively, and on the browser's cpu, each check
/// reads back and compares where it is called.
pub mod later {
    use rocm_wgpu_ops::{Result, Tensor};
    use std::cell::RefCell;
    use std::future::Future;
    use std::pin::Pin;

    /// Checks awaited together.
    pub const TOGETHER: usize = 32;

    type Check = Pin<Box<dyn Future<Output = Result<()>>>>;

    thread_local! {
        static QUEUE: RefCell<Vec<Check>> = const { RefCell::new(Vec::new()) };
    }

    /// Runs `check` on `ts` now, or, where a check of one of them is queued (in a browser, on
    /// WebGPU), queues it on copies of them as they are now; awaits the queue once it holds
    /// [`TOGETHER`].
    pub async fn check<F>(ts: &[&Tensor], check: impl FnOnce(Vec<Tensor>) -> F) -> Result<()>
    where
        F: Future<Output = Result<()>> + 'static,
    {
        if !ts.iter().any(|t| super::rotating(t.device())) {
            return check(ts.iter().map(|&t| t.clone()).collect()).await;
        }
        let copies = ts.iter().map(|t| if super::rotating(t.device()) { t.copy() } else { Ok((*t).clone()) });
        let check = check(copies.collect::<Result<_>>()?);
        let full = QUEUE.with(|q| {
            let mut q = q.borrow_mut();
            q.push(Box::pin(check));
            q.len() >= TOGETHER
        });
        if full { flush().await } else { Ok(()) }
    }

    /// Awaits every queued check at once; the first error in queue order, if any.
    pub async fn flush() -> Result<()> {
        let checks = QUEUE.with(|q| std::mem::take(&mut *q.borrow_mut()));
        crate::selfcheck::all(checks).await.into_iter().collect()
    }
}

/// In a browser the comparison loops run a sample of their comparisons on WebGPU (`web.rs`
/// sets it per case): each case's first and each class's first ([`sample::class`]), then one in
/// `web::SAMPLE`, picked by a hash of the case and the comparison's number. A software adapter
/// there compiles each new kernel for seconds (SwiftShader), or waits ~100 ms for each readback
/// (Firefox), and the whole product of shapes, views and dtypes runs natively. Natively nothing
/// is skipped.
pub mod sample {
    use std::cell::Cell;

    thread_local! {
        /// (the case's hash, one in how many runs, comparisons so far, whether the next runs).
        static STATE: Cell<(u64, u64, u64, bool)> = const { Cell::new((0, 1, 0, true)) };
    }

    /// Starts `case`'s comparisons, running one in `every`.
    #[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
    pub fn start(case: &str, every: u64) {
        let hash = case.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
        STATE.with(|s| s.set((hash, every.max(1), 0, true)));
    }

    /// A class of comparisons starts (a shape class, a kernel): its first runs whatever the
    /// sample.
    pub fn class() {
        STATE.with(|s| {
            let (hash, every, n, _) = s.get();
            s.set((hash, every, n, true));
        });
    }

    /// Whether the next comparison is left out of the sample.
    pub fn skip() -> bool {
        STATE.with(|s| {
            let (hash, every, n, first) = s.get();
            s.set((hash, every, n + 1, false));
            !first && ((hash ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % every != 0
        })
    }
}

/// Whether a case's loops turn ([`rotated`]): in a browser, on WebGPU.
fn rotating(dev: &Device) -> bool {
    cfg!(target_family = "wasm") && dev.kind() != BackendKind::Cpu
}

/// Of `items` (dtypes, views) for the `i`-th class of a case's loop: all of them natively and
/// on the cpu; in a browser on WebGPU the one `i` turns to, so that across the classes every
/// item still runs there and every class runs in one. A software adapter there compiles each
/// (dtype, layout, class) variant of a kernel for ~2.5 s (SwiftShader on 2 cores).
pub fn rotated<T: Copy>(dev: &Device, items: &[T], i: usize) -> Vec<T> {
    match items.len() {
        n if rotating(dev) && n > 0 => vec![items[i % n]],
        _ => items.to_vec(),
    }
}

/// [`rotated`] for the dtypes of `op`: in a browser it turns among those `dev` runs `op` in
/// (`support.rs` checks the statement of the others there).
pub fn rotated_dtypes(dev: &Device, op: &str, dtypes: &[DType], i: usize) -> Vec<DType> {
    let runs: Vec<DType> = dtypes.iter().copied().filter(|&d| dev.supports(op, d).is_ok()).collect();
    if rotating(dev) && !runs.is_empty() { rotated(dev, &runs, i) } else { dtypes.to_vec() }
}

/// Whether `e` is the `UnsupportedDType` that `dev` states for its op and dtype
/// ([`Device::supports`]): the one failure a case may skip over.
pub fn stated_unsupported(dev: &Device, e: &rocm_wgpu_ops::Error) -> bool {
    matches!(e, rocm_wgpu_ops::Error::UnsupportedDType { op, dtype, .. } if dev.supports(op, *dtype).is_err())
}

/// Runs `case` for `dtype`; it passes too when it fails with the `UnsupportedDType` of an op
/// that `dev` states unsupported in `dtype` ([`Device::supports`]).
pub async fn unless_unsupported(dev: &Device, dtype: DType, case: impl AsyncFnOnce() -> Result<()>) -> Result<()> {
    match case().await {
        Err(e @ rocm_wgpu_ops::Error::UnsupportedDType { dtype: d, .. })
            if d == dtype && stated_unsupported(dev, &e) =>
        {
            Ok(())
        }
        r => r,
    }
}

/// Runs `f` on `dev` and on the cpu reference and compares the results. An op `dev` states
/// unsupported for the dtype ([`Device::supports`]) must fail with `UnsupportedDType`, and the
/// comparison is skipped; any other refusal fails.
/// Left out where [`sample`] says so.
pub async fn same_as_cpu(dev: &Device, tol: Tol, what: &str, f: impl Fn(&Device) -> Result<Tensor>) -> Result<()> {
    if sample::skip() {
        return Ok(());
    }
    compare_with_cpu(dev, tol, what, f).await
}

/// [`same_as_cpu`] whatever the sample (for helpers that sample their comparisons themselves).
/// In a browser built with `RWO_WEB_TRACE` set, each comparison logs its start and its time, its
/// queued checks awaited at once (`.ci/browser-suite`);
/// natively, with `RWO_TRACE` set at run time, each logs its start and time to stderr (finding
/// a slow or hanging comparison).
pub async fn compare_with_cpu(dev: &Device, tol: Tol, what: &str, f: impl Fn(&Device) -> Result<Tensor>) -> Result<()> {
    #[cfg(target_family = "wasm")]
    let start = web_time::Instant::now();
    #[cfg(target_family = "wasm")]
    if option_env!("RWO_WEB_TRACE").is_some() {
        wasm_bindgen_test::console_log!("  {what} ...");
    }
    #[cfg(not(target_family = "wasm"))]
    let trace = std::env::var_os("RWO_TRACE").map(|_| {
        eprintln!("  {} {what} ...", dev.kind());
        std::time::Instant::now()
    });
    let got = match f(dev) {
        Err(e) if stated_unsupported(dev, &e) => return Ok(()),
        r => r?,
    };
    let want = f(&cpu())?;
    let r = assert_close(&got, &want, tol, what).await;
    // Traced, the queued checks are awaited here, so that the time is this comparison's.
    #[cfg(target_family = "wasm")]
    let r = if option_env!("RWO_WEB_TRACE").is_some() { r.and(later::flush().await) } else { r };
    #[cfg(target_family = "wasm")]
    if option_env!("RWO_WEB_TRACE").is_some() {
        wasm_bindgen_test::console_log!("  {what} {:.0} ms", start.elapsed().as_secs_f64() * 1e3);
    }
    #[cfg(not(target_family = "wasm"))]
    if let Some(start) = trace {
        eprintln!("  {} {what} {:.1} ms", dev.kind(), start.elapsed().as_secs_f64() * 1e3);
    }
    r
}

/// The float dtypes `dev` computes in: all of them, less f64 where the device states f64
/// arithmetic unsupported (a wgpu adapter without SHADER_F64, WebGPU in a browser;
/// `support.rs` checks that statement both ways).
pub fn float_dtypes(dev: &Device) -> Vec<DType> {
    DType::FLOAT.iter().copied().filter(|&d| dev.supports("mul", d).is_ok()).collect()
}

/// The dtype and absolute tolerance of hand-computed float answers on `dev`: f64 to 1e-15, or
/// f32 to 1e-6 (a few ulps of answers below 32) where the device states f64 arithmetic
/// unsupported.
pub fn wide(dev: &Device) -> (DType, f64) {
    if dev.supports("mul", DType::F64).is_ok() { (DType::F64, 1e-15) } else { (DType::F32, 1e-6) }
}

/// `v` as a `dtype` tensor of `shape` on `dev`, converted on the host (a device without f64
/// arithmetic cannot cast from it).
pub fn floats(dev: &Device, v: Vec<f64>, shape: &[usize], dtype: DType) -> Result<Tensor> {
    Tensor::from_cpu(Tensor::from_vec(v, shape, &cpu())?.to_dtype(dtype)?.to_cpu_storage()?, shape.to_vec(), dev)
}

/// [`assert_values`] for a float tensor of any dtype against f64 answers, converted on the host.
pub async fn assert_floats(t: &Tensor, shape: &[usize], want: &[f64], tol: f64) -> Result<()> {
    let (shape, want) = (shape.to_vec(), want.to_vec());
    later::check(&[t], async move |t| floats_are(&t[0], &shape, &want, tol).await).await
}

async fn floats_are(t: &Tensor, shape: &[usize], want: &[f64], tol: f64) -> Result<()> {
    let host = Tensor::from_cpu(t.to_cpu_storage_async().await?, t.shape().clone(), &cpu())?;
    assert_values(&host.to_dtype(DType::F64)?, shape, want, tol).await
}

/// Asserts a tensor's values exactly (a hand-computed answer; floats compared as f64). In a
/// browser on WebGPU the values are compared [`later`].
pub async fn assert_values<T: rocm_wgpu_ops::WithDType>(
    t: &Tensor,
    shape: &[usize],
    want: &[T],
    tol: f64,
) -> Result<()> {
    assert_eq!(t.dims(), shape, "shape");
    let want = want.to_vec();
    later::check(&[t], async move |t| values_are(&t[0], &want, tol).await).await
}

async fn values_are<T: rocm_wgpu_ops::WithDType>(t: &Tensor, want: &[T], tol: f64) -> Result<()> {
    let got = t.to_vec_async::<T>().await?;
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        let (x, y) = (a.to_f64(), b.to_f64());
        let ok = x == y || (x.is_nan() && y.is_nan()) || (x - y).abs() <= tol;
        assert!(ok, "element {i}: got {a}, want {b}; all: {got:?}");
    }
    assert_eq!(got.len(), want.len());
    Ok(())
}

/// Deterministic test data (an xorshift stream independent of the crate's Philox).
pub struct Data(u64);

impl Data {
    pub fn new(seed: u64) -> Self {
        Data(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `[lo, hi)`.
    pub fn f64(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `n` values of `dtype`: floats uniform in `[lo, hi)`, integers in `[lo, hi)` truncated
    /// (u8 and u32 clamp the range at 0).
    pub fn storage(&mut self, dtype: DType, n: usize, lo: f64, hi: f64) -> CpuStorage {
        let v: Vec<f64> = (0..n).map(|_| self.f64(lo, hi)).collect();
        match dtype {
            DType::U8 => CpuStorage::U8(v.iter().map(|&x| x.max(0.0) as u8).collect()),
            DType::U32 => CpuStorage::U32(v.iter().map(|&x| x.max(0.0) as u32).collect()),
            DType::I64 => CpuStorage::I64(v.iter().map(|&x| x.floor() as i64).collect()),
            DType::F16 => CpuStorage::F16(v.iter().map(|&x| half::f16::from_f64(x)).collect()),
            DType::BF16 => CpuStorage::BF16(v.iter().map(|&x| half::bf16::from_f64(x)).collect()),
            DType::F32 => CpuStorage::F32(v.iter().map(|&x| x as f32).collect()),
            DType::F64 => CpuStorage::F64(v),
        }
    }
}

/// A tensor of `shape` with values in `[lo, hi)`, drawn from `seed`, on `dev`.
pub fn rand_tensor(dev: &Device, dtype: DType, shape: &[usize], seed: u64, lo: f64, hi: f64) -> Result<Tensor> {
    let n = shape.iter().product();
    Tensor::from_cpu(Data::new(seed).storage(dtype, n, lo, hi), shape.to_vec(), dev)
}

/// How a test input is laid out in its storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Contiguous,
    /// Stored with the first and last dims swapped, then transposed back.
    Transposed,
    /// A window of a larger tensor: non-zero offset, gaps between rows.
    Offset,
    /// Dim 0 stretched from size 1 (stride 0).
    Broadcast,
}

impl View {
    pub const ALL: [View; 4] = [View::Contiguous, View::Transposed, View::Offset, View::Broadcast];
}

/// A tensor of logical shape `shape` laid out as `view`, with values from `seed`.
/// The same arguments give the same values on every device.
pub fn view_tensor(
    dev: &Device,
    view: View,
    dtype: DType,
    shape: &[usize],
    seed: u64,
    lo: f64,
    hi: f64,
) -> Result<Tensor> {
    let rank = shape.len();
    match view {
        View::Transposed if rank >= 2 => {
            let mut s = shape.to_vec();
            s.swap(0, rank - 1);
            rand_tensor(dev, dtype, &s, seed, lo, hi)?.transpose(0, rank - 1)
        }
        View::Offset if rank == 1 => rand_tensor(dev, dtype, &[shape[0] + 5], seed, lo, hi)?.narrow(0, 3, shape[0]),
        View::Offset if rank >= 2 => {
            let mut s = shape.to_vec();
            s[rank - 1] += 3;
            s[0] += 2;
            rand_tensor(dev, dtype, &s, seed, lo, hi)?.narrow(0, 1, shape[0])?.narrow(rank - 1, 2, shape[rank - 1])
        }
        View::Broadcast if rank >= 1 => {
            let mut s = shape.to_vec();
            s[0] = 1;
            rand_tensor(dev, dtype, &s, seed, lo, hi)?.broadcast_as(Shape::new(shape))
        }
        _ => rand_tensor(dev, dtype, shape, seed, lo, hi),
    }
}
