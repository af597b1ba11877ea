//! Which backend runs the ops, chosen at run time.
//!
//! [`Device::auto`] tries, in order: a native runtime (rocm, then cuda) if compiled in and a
//! device answers; a wgpu adapter (hardware before software); the cpu reference. The
//! environment variable `RWO_BACKEND=cpu|wgpu|rocm|cuda` forces one and fails with a clear
//! error when it is absent. [`Device::describe`] says what was chosen and why.

use crate::CpuStorage;
use crate::backend::{BackendKind, BackendStorage, MatmulOps, Memory, Open};
use crate::cpu::CpuBackend;
#[cfg(any(feature = "rocm", feature = "cuda"))]
use crate::native::NativeStorage;
#[cfg(feature = "cuda")]
use crate::native::cuda::{Cuda, CudaBackend};
#[cfg(feature = "rocm")]
use crate::native::rocm::{Hip, RocmBackend};
use crate::tensor::parts::Parts;
use crate::wgpu::{WgpuBackend, WgpuStorage};
use crate::{Error, Result};
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, Weak};

/// The one list of backends: every enum over them, the storage conversions, [`dispatch!`] and
/// [`probe`] are generated from it, so a backend joins in one line.
macro_rules! backends {
    ($d:tt $($(#[$cfg:meta])* $kind:ident => $backend:ty, $storage:ty;)*) => {
        /// A backend that answered, whatever its kind.
        #[derive(Clone, Debug)]
        pub(crate) enum AnyBackend {
            $($(#[$cfg])* $kind($backend),)*
        }

        /// A buffer of any backend.
        #[derive(Debug)]
        pub(crate) enum Storage {
            $($(#[$cfg])* $kind($storage),)*
            /// A tensor larger than one buffer of its backend, in parts (`tensor/parts.rs`).
            Parts(Box<Parts>),
        }

        impl Storage {
            pub(crate) fn dtype(&self) -> crate::DType {
                match self {
                    $($(#[$cfg])* Storage::$kind(s) => s.dtype(),)*
                    Storage::Parts(p) => p.dtype(),
                }
            }

            pub(crate) fn kind(&self) -> BackendKind {
                match self {
                    $($(#[$cfg])* Storage::$kind(_) => BackendKind::$kind,)*
                    Storage::Parts(p) => p.kind(),
                }
            }

            /// The elements it holds.
            pub(crate) fn len(&self) -> usize {
                match self {
                    $($(#[$cfg])* Storage::$kind(s) => s.len(),)*
                    Storage::Parts(p) => p.len(),
                }
            }
        }

        $(
            $(#[$cfg])*
            impl BackendOf for $backend {
                fn get<'a>(&self, s: &'a Storage) -> Result<&'a $storage> {
                    match s {
                        Storage::$kind(s) => Ok(s),
                        Storage::Parts(p) => Err(p.unsplit("an op")),
                        #[allow(unreachable_patterns)]
                        other => Err(mismatch(BackendKind::$kind, other)),
                    }
                }
                fn get_mut<'a>(&self, s: &'a mut Storage) -> Result<&'a mut $storage> {
                    match s {
                        Storage::$kind(s) => Ok(s),
                        Storage::Parts(p) => Err(p.unsplit("a write in place")),
                        #[allow(unreachable_patterns)]
                        other => Err(mismatch(BackendKind::$kind, other)),
                    }
                }
                fn wrap(&self, s: $storage) -> Storage {
                    Storage::$kind(s)
                }
            }
        )*

        /// Runs `$body` with `$b` bound to the concrete backend of a [`Device`].
        macro_rules! dispatch {
            ($d dev:expr, |$d b:ident| $d body:expr) => {
                match $d dev.backend() {
                    $($(#[$cfg])* $crate::device::AnyBackend::$kind($d b) => $d body,)*
                }
            };
        }
        pub(crate) use dispatch;

        /// Asks one kind of backend whether it can run here.
        async fn probe(kind: BackendKind) -> Probe<AnyBackend> {
            match kind {
                $($(#[$cfg])* BackendKind::$kind => <$backend as Open>::open_default().await.map(|b| {
                    let label = b.describe();
                    (AnyBackend::$kind(b), label)
                }),)*
                #[allow(unreachable_patterns)]
                other => Err(format!("not compiled in (build with --features {other})")),
            }
        }

        impl Device {
            /// Whether tensors of the two devices can meet in one op.
            pub fn same_device(&self, other: &Device) -> bool {
                match (self.backend(), other.backend()) {
                    $($(#[$cfg])* (AnyBackend::$kind(a), AnyBackend::$kind(b)) => a.same(b),)*
                    #[allow(unreachable_patterns)]
                    _ => false,
                }
            }
        }
    };
}

backends! {$
    Cpu => CpuBackend, CpuStorage;
    Wgpu => WgpuBackend, WgpuStorage;
    #[cfg(feature = "rocm")]
    Rocm => RocmBackend, NativeStorage<Hip>;
    #[cfg(feature = "cuda")]
    Cuda => CudaBackend, NativeStorage<Cuda>;
}

impl Storage {
    /// Another handle on the same memory, for a view of one part of a [`Parts`] storage (wgpu's
    /// storages are shared handles; no other backend stores tensors in parts).
    pub(crate) fn share(&self) -> Option<Storage> {
        match self {
            Storage::Wgpu(s) => Some(Storage::Wgpu(s.clone())),
            _ => None,
        }
    }
}

fn mismatch(want: BackendKind, s: &Storage) -> Error {
    Error::DeviceMismatch { op: "storage", lhs: want.to_string(), rhs: s.kind().to_string() }
}

/// Maps between a backend's own storage and [`Storage`].
pub(crate) trait BackendOf: crate::backend::Backend {
    fn get<'a>(&self, s: &'a Storage) -> Result<&'a Self::Storage>;
    fn get_mut<'a>(&self, s: &'a mut Storage) -> Result<&'a mut Self::Storage>;
    fn wrap(&self, s: Self::Storage) -> Storage;
}

/// A probe's answer: the backend and a one-line label, or why there is none.
type Probe<T> = std::result::Result<(T, String), String>;

/// Picks a backend: the forced one, or the first that answers in preference order. Returns
/// it with a sentence saying why. Probes run lazily, in order.
pub(crate) async fn choose<T, F: Future<Output = Probe<T>>>(
    forced: Option<BackendKind>,
    mut probe: impl FnMut(BackendKind) -> F,
) -> Result<(T, String)> {
    if let Some(kind) = forced {
        return match probe(kind).await {
            Ok((b, label)) => Ok((b, format!("{label}: forced by RWO_BACKEND={kind}"))),
            Err(reason) => Err(Error::BackendUnavailable { kind: kind.to_string(), reason }),
        };
    }
    let mut skipped = Vec::new();
    for &kind in BackendKind::PREFERENCE {
        match probe(kind).await {
            Ok((b, label)) => {
                let why = if skipped.is_empty() {
                    "first choice".to_string()
                } else {
                    format!("skipped {}", skipped.join("; "))
                };
                return Ok((b, format!("{label}: {why}")));
            }
            Err(reason) => skipped.push(format!("{kind} ({reason})")),
        }
    }
    Err(Error::BackendUnavailable { kind: "any".into(), reason: skipped.join("; ") })
}

/// [`probe`] from sync code: where it would block (a WebGPU adapter in a browser), the reason
/// says to use the async form.
fn probe_blocking(kind: BackendKind) -> Probe<AnyBackend> {
    crate::block::block_on(probe(kind)).unwrap_or_else(|| Err(Error::WouldBlock { op: "Device::new" }.to_string()))
}

/// The backend `RWO_BACKEND` forces, if any.
fn forced() -> Result<Option<BackendKind>> {
    match std::env::var("RWO_BACKEND") {
        Ok(name) if !name.trim().is_empty() => Ok(Some(BackendKind::parse(&name)?)),
        _ => Ok(None),
    }
}

/// Where the stream of [`Device`]'s own random draws stands.
#[derive(Debug)]
struct RngState {
    seed: u64,
    offset: u64,
}

/// A deferred result (a fused program not run yet) the device runs before an in-place write or
/// a synchronize.
pub(crate) trait Pending: Send + Sync {
    /// Runs it (nothing if it already ran).
    fn run(&self) -> Result<()>;
    /// Whether it may stay deferred while the storage at `written` is written in place: it
    /// reads none of it (a deferred norm says so; a program may read anything it inlined).
    fn can_wait(&self, _written: *const ()) -> bool {
        false
    }
}

/// A deferred result as the device lists it: the thread that deferred it and whether inside a
/// capture.
struct Deferral {
    thread: std::thread::ThreadId,
    captured: bool,
    result: Weak<dyn Pending>,
}

struct DeviceInner {
    backend: AnyBackend,
    description: String,
    rng: Mutex<RngState>,
    /// Whether elementwise ops defer their results into fused programs (`RWO_FUSION`).
    fusion: bool,
    /// The deferred results not run yet (dropped ones are skipped), shared by every handle on
    /// this backend (`Device::with_fusion`): a write through one must run what the others defer.
    pending: Arc<Mutex<Vec<Deferral>>>,
    /// Held through a capture (`Device::capture`), shared as `pending` is: one capture at a
    /// time per backend, another thread's waiting for it.
    capture_gate: Arc<Mutex<()>>,
}

impl fmt::Debug for DeviceInner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceInner").field("backend", &self.backend).field("description", &self.description).finish()
    }
}

thread_local! {
    /// Whether this thread is inside a capture's closure (`Device::capture`).
    static CAPTURING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread is inside a capture's closure.
pub(crate) fn capturing() -> bool {
    CAPTURING.get()
}

/// Marks the calling thread as inside a capture's closure, or not.
pub(crate) fn set_capturing(on: bool) {
    CAPTURING.set(on);
}

/// Deferred results a device keeps before it drops the ones already gone.
const PENDING_PRUNE: usize = 256;

/// A backend chosen at run time, with its random stream. Cheap to clone.
///
/// [`Device::auto`] takes the best backend found (or the one `RWO_BACKEND` names);
/// [`Device::probe_all`] says which answer here and why the others do not.
///
/// ```
/// use rocm_wgpu_ops::{BackendKind, DType, Device, Tensor};
///
/// for (kind, dev) in Device::probe_all() {
///     match dev {
///         Ok(dev) => println!("{kind}: {}", dev.describe()),
///         Err(e) => println!("{kind}: absent: {e}"),
///     }
/// }
/// let cpu = Device::new(BackendKind::Cpu)?;
/// assert_eq!(cpu.kind(), BackendKind::Cpu);
/// assert!(cpu.supports("exp", DType::F64).is_ok());
///
/// // Draws follow the device's stream: the same seed gives the same values.
/// cpu.set_seed(7);
/// let a = Tensor::rand(0., 1., [4], DType::F32, &cpu)?.to_vec::<f32>()?;
/// cpu.set_seed(7);
/// assert_eq!(Tensor::rand(0., 1., [4], DType::F32, &cpu)?.to_vec::<f32>()?, a);
/// # Ok::<(), rocm_wgpu_ops::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Device(Arc<DeviceInner>);

impl Device {
    pub(crate) fn from_backend(backend: AnyBackend, description: String) -> Device {
        let fusion = std::env::var("RWO_FUSION").map_or(true, |v| v.trim() != "0");
        let rng = Mutex::new(RngState { seed: 0, offset: 0 });
        let (pending, capture_gate) = (Arc::default(), Arc::default());
        Device(Arc::new(DeviceInner { backend, description, rng, fusion, pending, capture_gate }))
    }

    /// Whether elementwise ops on this device defer their results into fused programs, which
    /// run as one kernel when the data is needed (on by default where the backend fuses: the
    /// GPU backends; `RWO_FUSION=0` turns it off). Fused and unfused results are the same bits.
    pub fn fusion(&self) -> bool {
        self.0.fusion
    }

    /// A handle on this same device (its tensors meet this one's in ops) whose elementwise ops
    /// fuse (`on`) or run one at a time, for comparing the two; it has a random stream of its
    /// own, at seed 0.
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    /// let dev = Device::auto()?;
    /// let x = Tensor::from_vec(vec![0.5f32, 1.5], [2], &dev)?;
    /// let one_at_a_time = dev.with_fusion(false);
    /// let y = x.exp()?.affine(2.0, 1.0)?;
    /// let z = Tensor::from_vec(vec![0.5f32, 1.5], [2], &one_at_a_time)?.exp()?.affine(2.0, 1.0)?;
    /// assert_eq!(y.to_vec::<f32>()?, z.to_vec::<f32>()?);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn with_fusion(&self, on: bool) -> Device {
        let inner = &self.0;
        let rng = Mutex::new(RngState { seed: 0, offset: 0 });
        Device(Arc::new(DeviceInner {
            backend: inner.backend.clone(),
            description: inner.description.clone(),
            rng,
            fusion: on,
            pending: inner.pending.clone(),
            capture_gate: inner.capture_gate.clone(),
        }))
    }

    /// Registers a deferred result, to run before the next in-place write or synchronize.
    pub(crate) fn defer(&self, p: &Arc<impl Pending + 'static>) {
        let result: Weak<dyn Pending> = Arc::downgrade(p) as Weak<dyn Pending>;
        let mut list = self.0.pending.lock().unwrap_or_else(|e| e.into_inner());
        if list.len() >= PENDING_PRUNE {
            list.retain(|d| d.result.strong_count() > 0);
        }
        list.push(Deferral { thread: std::thread::current().id(), captured: capturing(), result });
    }

    /// Runs every deferred result of this device still held by a tensor, but those of a
    /// capture under way (`Device::capture`) on any other thread than it: a capture runs its
    /// thread's only (another's would be recorded into the plan), every other thread all but
    /// the capture's (which the plan must record).
    pub(crate) fn run_deferred(&self) -> Result<()> {
        self.run_deferred_before(None)
    }

    /// [`Device::run_deferred`] before the storage at `written` is written in place: what reads
    /// none of it may stay deferred ([`Pending::can_wait`]).
    pub(crate) fn run_deferred_before(&self, written: Option<*const ()>) -> Result<()> {
        let me = std::thread::current().id();
        let mine = |d: &Deferral| if capturing() { d.thread == me } else { !d.captured };
        let list = {
            let mut all = self.0.pending.lock().unwrap_or_else(|e| e.into_inner());
            let (run, kept) = std::mem::take(&mut *all).into_iter().partition(mine);
            *all = kept;
            run
        };
        let mut first = Ok(());
        for d in list {
            let Some(p) = d.result.upgrade() else { continue };
            if written.is_some_and(|w| p.can_wait(w)) {
                self.0.pending.lock().unwrap_or_else(|e| e.into_inner()).push(d);
                continue;
            }
            if let Err(e) = p.run() {
                // It stays deferred: its own readback reports the failure again.
                self.0.pending.lock().unwrap_or_else(|e| e.into_inner()).push(d);
                first = first.and(Err(e));
            }
        }
        first
    }

    /// The calling thread's capture was abandoned: what it deferred runs as any result does.
    pub(crate) fn release_captured(&self) {
        let me = std::thread::current().id();
        let mut all = self.0.pending.lock().unwrap_or_else(|e| e.into_inner());
        all.iter_mut().filter(|d| d.thread == me).for_each(|d| d.captured = false);
    }

    /// The cpu reference backend.
    pub fn cpu() -> Device {
        Device::from_backend(AnyBackend::Cpu(CpuBackend), format!("{}: asked for by name", CpuBackend.describe()))
    }

    /// The best backend here, or the one `RWO_BACKEND` names. Blocks while the device opens;
    /// in a browser use [`Device::auto_async`] (this one cannot wait for WebGPU there, so it
    /// skips it, with that reason, and gives the cpu).
    ///
    /// ```
    /// let dev = rocm_wgpu_ops::Device::auto()?;
    /// println!("{}", dev.describe());
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn auto() -> Result<Device> {
        let chosen = choose(forced()?, |k| std::future::ready(probe_blocking(k)));
        let (backend, why) = crate::block::block_on_result("Device::auto", chosen)?;
        Ok(Device::from_backend(backend, why))
    }

    /// [`Device::auto`] without blocking: the form that works in a browser, where it picks
    /// WebGPU, else the cpu.
    ///
    /// ```
    /// # pollster::block_on(async {
    /// let dev = rocm_wgpu_ops::Device::auto_async().await?;
    /// println!("{}", dev.describe());
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn auto_async() -> Result<Device> {
        let (backend, why) = choose(forced()?, probe).await?;
        Ok(Device::from_backend(backend, why))
    }

    /// The backend of `kind`, or why it is not available. Blocks while the device opens; in a
    /// browser use [`Device::new_async`].
    pub fn new(kind: BackendKind) -> Result<Device> {
        Self::named(kind, probe_blocking(kind))
    }

    /// [`Device::new`] without blocking: the form that works in a browser.
    pub async fn new_async(kind: BackendKind) -> Result<Device> {
        Self::named(kind, probe(kind).await)
    }

    fn named(kind: BackendKind, probed: Probe<AnyBackend>) -> Result<Device> {
        match probed {
            Ok((b, label)) => Ok(Device::from_backend(b, format!("{label}: asked for by name"))),
            Err(reason) => Err(Error::BackendUnavailable { kind: kind.to_string(), reason }),
        }
    }

    /// Every kind with whether it answers here (the device, or why not).
    pub fn probe_all() -> Vec<(BackendKind, Result<Device>)> {
        BackendKind::PREFERENCE.iter().map(|&k| (k, Device::new(k))).collect()
    }

    /// Which backend this device runs on.
    pub fn kind(&self) -> BackendKind {
        dispatch!(self, |b| b.kind())
    }

    /// The device's name, features and limits, as `(key, value)` pairs.
    pub fn info(&self) -> Vec<(&'static str, String)> {
        let mut info = dispatch!(self, |b| b.info());
        let (fuses, epilogues) = dispatch!(self, |b| (b.fuses(&[]), b.epilogues()));
        let fusion = match (fuses, self.fusion()) {
            (false, _) => "off (ops run one at a time on this backend)",
            (true, true) if epilogues => {
                "on: elementwise chains run as one kernel, those on a matmul's product in its kernel \
                 (RWO_FUSION=0 turns it off)"
            }
            (true, true) => "on: elementwise chains run as one kernel (RWO_FUSION=0 turns it off)",
            (true, false) => "off (RWO_FUSION=0 or Device::set_fusion)",
        };
        info.push(("fusion", fusion.into()));
        info
    }

    /// Kernels launched on this device so far: wgpu dispatches, native kernel launches and
    /// vendor library calls (0 on the cpu). The difference around a model's forward is its
    /// kernels per forward.
    pub fn launches(&self) -> u64 {
        dispatch!(self, |b| b.launches())
    }

    /// Which backend this is, and why it was chosen.
    pub fn describe(&self) -> &str {
        &self.0.description
    }

    /// The adapter's name when this is a wgpu device on a software renderer behind OpenGL
    /// (llvmpipe), which compiles each kernel for seconds; `None` otherwise.
    pub fn gl_software_adapter(&self) -> Option<&str> {
        match self.backend() {
            AnyBackend::Wgpu(b) => b.gl_software(),
            _ => None,
        }
    }

    /// A wgpu device on the adapter whose name holds `adapter` (or the preferred one), with
    /// the optional features `features` names (`"none"`, `"f16,i64"`; all by default) and the
    /// kernel tuning overrides of `RWO_WGPU_TUNE`, if set. Blocks while the device opens; in a
    /// browser use [`Device::wgpu_async`].
    pub fn wgpu(adapter: Option<&str>, features: Option<&str>) -> Result<Device> {
        crate::block::block_on_result("Device::wgpu", Self::wgpu_async(adapter, features))
    }

    /// [`Device::wgpu`] without blocking: the form that works in a browser.
    pub async fn wgpu_async(adapter: Option<&str>, features: Option<&str>) -> Result<Device> {
        let b = WgpuBackend::open(crate::wgpu::Pick::Name(adapter), features).await?;
        let label = b.describe();
        Ok(Device::from_backend(AnyBackend::Wgpu(b), format!("{label}: asked for by name")))
    }

    /// [`Device::wgpu`] with the kernel tuning `tune` instead of `RWO_WGPU_TUNE`'s (the suite
    /// runs every variant of the tuning tables with it).
    #[doc(hidden)]
    pub fn wgpu_tuned(adapter: Option<&str>, features: Option<&str>, tune: crate::wgpu::Tune) -> Result<Device> {
        crate::block::block_on_result("Device::wgpu_tuned", Self::wgpu_tuned_async(adapter, features, tune))
    }

    /// [`Device::wgpu_tuned`] without blocking.
    #[doc(hidden)]
    pub async fn wgpu_tuned_async(
        adapter: Option<&str>,
        features: Option<&str>,
        tune: crate::wgpu::Tune,
    ) -> Result<Device> {
        let b = WgpuBackend::open_tuned(crate::wgpu::Pick::Name(adapter), features, tune).await?;
        let label = b.describe();
        Ok(Device::from_backend(AnyBackend::Wgpu(b), format!("{label}: asked for by name, tuned {tune:?}")))
    }

    /// Whether this device runs the spec's op `op` (its name, e.g. `"exp"`) in `dtype`: `Ok`,
    /// or the `Error::UnsupportedDType` the op returns here (e.g. f64 arithmetic on a wgpu
    /// adapter without SHADER_F64). For `cast` it covers casts from and to `dtype` (a cast to
    /// the tensor's own dtype is the identity and always runs). An op
    /// name the spec lacks is `InvalidParam`; a dtype the op never takes is `WrongDType`.
    ///
    /// ```
    /// use rocm_wgpu_ops::{DType, Device};
    /// assert!(Device::cpu().supports("exp", DType::F64).is_ok());
    /// assert!(Device::cpu().supports("exp", DType::U8).is_err()); // exp takes floats
    /// ```
    pub fn supports(&self, op: &str, dtype: crate::DType) -> Result<()> {
        let info = crate::spec::ops()
            .into_iter()
            .find(|o| o.name == op)
            .ok_or_else(|| Error::InvalidParam { op: "supports", msg: format!("no op named {op:?} in the spec") })?;
        crate::spec::check_dtype(info.name, dtype, info.dtypes)?;
        match dispatch!(self, |b| b.unsupported(&info, dtype)) {
            None => Ok(()),
            Some(reason) => Err(Error::UnsupportedDType { backend: self.kind(), op: info.name, dtype, reason }),
        }
    }

    /// Every op x dtype of the spec this device cannot run, with the reason (empty on the cpu
    /// and native backends).
    pub fn unsupported(&self) -> Vec<(crate::spec::OpInfo, crate::DType, String)> {
        let mut out = vec![];
        for op in crate::spec::ops() {
            for &dtype in op.dtypes {
                if let Some(reason) = dispatch!(self, |b| b.unsupported(&op, dtype)) {
                    out.push((op, dtype, reason));
                }
            }
        }
        out
    }

    /// Whether ops of `family` compute on the host here (see [`Memory::on_host`]).
    pub(crate) fn on_host(&self, family: crate::spec::Family) -> bool {
        dispatch!(self, |b| b.on_host(family))
    }

    /// What the GPU buffer pool holds (`None` on backends without one).
    pub fn memory_stats(&self) -> Option<crate::wgpu::MemoryStats> {
        match self.backend() {
            AnyBackend::Wgpu(b) => Some(b.memory_stats()),
            _ => None,
        }
    }

    /// Waits for all work recorded on the device. (A failure found in device data, such as a
    /// bad id, belongs to the tensors it spoiled: their readbacks report it.) Blocks until the
    /// GPU is done; in a browser use [`Device::synchronize_async`].
    pub fn synchronize(&self) -> Result<()> {
        crate::block::block_on_result("Device::synchronize", self.synchronize_async())
    }

    /// [`Device::synchronize`] without blocking: the form that works in a browser. Deferred
    /// elementwise results (see [`Device::fusion`]) run first.
    pub async fn synchronize_async(&self) -> Result<()> {
        self.run_deferred()?;
        dispatch!(self, |b| b.synchronize()).wait().await
    }

    /// Restarts this device's random stream at `seed`, offset 0.
    pub fn set_seed(&self, seed: u64) {
        let mut rng = self.0.rng.lock().unwrap_or_else(|e| e.into_inner());
        *rng = RngState { seed, offset: 0 };
    }

    /// Reserves `len` positions of the random stream: returns `(seed, offset)` to draw from.
    pub(crate) fn next_random(&self, len: usize) -> (u64, u64) {
        let mut rng = self.0.rng.lock().unwrap_or_else(|e| e.into_inner());
        let at = rng.offset;
        // Keep every draw on a fresh Philox block so normal pairs never straddle two draws.
        rng.offset = at.wrapping_add((len as u64).div_ceil(4) * 4);
        (rng.seed, at)
    }

    pub(crate) fn backend(&self) -> &AnyBackend {
        &self.0.backend
    }

    /// The lock a capture holds (see `tensor/plan.rs`).
    pub(crate) fn capture_gate(&self) -> &Mutex<()> {
        &self.0.capture_gate
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind().name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(avail: &'static [BackendKind]) -> impl FnMut(BackendKind) -> std::future::Ready<Probe<BackendKind>> {
        move |k| {
            std::future::ready(if avail.contains(&k) {
                Ok((k, format!("{k} device")))
            } else {
                Err(format!("no {k} here"))
            })
        }
    }

    fn choose(forced: Option<BackendKind>, avail: &'static [BackendKind]) -> Result<(BackendKind, String)> {
        pollster::block_on(super::choose(forced, fake(avail)))
    }

    #[test]
    fn auto_prefers_native_then_wgpu_then_cpu() {
        use BackendKind::*;
        assert_eq!(choose(None, &[Cpu, Wgpu, Cuda]).unwrap().0, Cuda);
        assert_eq!(choose(None, &[Cpu, Wgpu]).unwrap().0, Wgpu);
        let (k, why) = choose(None, &[Cpu]).unwrap();
        assert_eq!(k, Cpu);
        assert!(why.contains("wgpu (no wgpu here)"), "{why}");
        assert!(why.contains("rocm (no rocm here)"), "{why}");
    }

    #[test]
    fn forcing_an_absent_backend_fails_with_its_reason() {
        use BackendKind::*;
        let err = choose(Some(Wgpu), &[Cpu]).unwrap_err();
        assert_eq!(err, Error::BackendUnavailable { kind: "wgpu".into(), reason: "no wgpu here".into() });
        let (k, why) = choose(Some(Cpu), &[Cpu, Wgpu]).unwrap();
        assert_eq!(k, Cpu);
        assert!(why.contains("forced"), "{why}");
        assert!(BackendKind::parse("metal").unwrap_err().to_string().contains("unknown backend"));
    }
}
