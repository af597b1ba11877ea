//! The ROCm runtime (feature `rocm`): the native backend on AMD GPUs through the HIP runtime,
//! loaded at run time (`hip_api.rs`), so a `rocm` binary starts, and falls back, where ROCm is
//! absent. Kernels: the code objects build.rs embedded for a target that fits the device
//! (`RWO_GFX_TARGETS`, optional), else `hip/*.hip` compiled by hiprtc for the device's exact
//! target id at first use, kept in the disk cache (`cache.rs`).
//!
//! HIP allocates, loads modules and resolves launches on the calling thread's current device,
//! so every call that touches the device runs under a `Bound` guard: ours is made current,
//! and the thread's own is restored afterwards, whichever thread calls.

use super::blas::{Blas, rocm::RocBlas};
use super::cache::{Cache, Key};
use super::dnn::{Dnn, rocm::MiOpen};
use super::gfx::{self, Candidate};
use super::hip_api::{self, Bound, HipLib, c_text};
use super::ptr::DevicePtr;
use super::runtime::{Capturer, DeviceInfo, Runtime, library_allowed, requested_ordinal};
use super::{HIP_COMMON, NativeBackend, hip_source};
use crate::spec::Family;
use crate::{BackendKind, Error, Result};
use std::borrow::Cow;
use std::ffi::{CString, c_char, c_int, c_void};
use std::sync::{Mutex, OnceLock};

/// What build.rs made: `TARGETS`, `OBJECTS` (family, target, code object) and `FLAGS`, the
/// compiler flags of every kernel (hipcc ahead of time, hiprtc at run time).
mod objects {
    include!(concat!(env!("OUT_DIR"), "/hip_objects.rs"));
}

/// The native backend on a ROCm device.
pub type RocmBackend = NativeBackend<Hip>;

fn err(msg: impl Into<String>) -> Error {
    Error::Backend { backend: BackendKind::Rocm, msg: msg.into() }
}

/// A non-blocking stream and the vendor libraries bound to it, loaded at first use (or why
/// they did not load); destroyed after them.
struct Lane {
    blas: OnceLock<std::result::Result<RocBlas, String>>,
    dnn: OnceLock<std::result::Result<MiOpen, String>>,
    lib: &'static HipLib,
    ordinal: c_int,
    stream: hip_api::Stream,
}

// SAFETY: the HIP runtime is thread-safe and every call binds the device first; the stream
// handle is only passed to HIP calls and destroyed once, when the lane drops.
unsafe impl Send for Lane {}
// SAFETY: as for Send.
unsafe impl Sync for Lane {}

impl Lane {
    fn new(lib: &'static HipLib, ordinal: c_int) -> std::result::Result<Lane, String> {
        let _bound = Bound::new(lib, ordinal)?;
        let mut stream: hip_api::Stream = std::ptr::null_mut();
        // SAFETY: writes one handle; the device is current.
        let created = unsafe { (lib.fns.hipStreamCreateWithFlags)(&mut stream, hip_api::STREAM_NON_BLOCKING) };
        lib.check("hipStreamCreateWithFlags", created)?;
        Ok(Lane { blas: OnceLock::new(), dnn: OnceLock::new(), lib, ordinal, stream })
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        // The library handles first: they use the stream.
        super::gate::alone(|| drop((self.blas.take(), self.dnn.take())));
        if let Ok(_bound) = Bound::new(self.lib, self.ordinal) {
            // SAFETY: the stream was created by `new` and is destroyed once; the backend drops
            // its modules and memory first.
            let _ = unsafe { (self.lib.fns.hipStreamDestroy)(self.stream) };
        }
    }
}

/// One HIP device: one lane for all work, and a second one, made at the first capture, for the
/// capturing thread's (see [`Capturer`]).
pub struct Hip {
    main: Lane,
    side: OnceLock<std::result::Result<Lane, String>>,
    capturer: Capturer,
    lib: &'static HipLib,
    ordinal: c_int,
    info: DeviceInfo,
    /// The embedded target whose code objects fit the device, if any.
    embedded: Option<&'static str>,
}

/// A loaded code object, unloaded on drop.
pub struct HipModule {
    raw: hip_api::Module,
    lib: &'static HipLib,
    ordinal: c_int,
}

// SAFETY: a module handle may be used from any thread; it is unloaded once, on drop.
unsafe impl Send for HipModule {}
// SAFETY: as for Send; the module is only read after loading.
unsafe impl Sync for HipModule {}

impl Drop for HipModule {
    fn drop(&mut self) {
        if let Ok(_bound) = Bound::new(self.lib, self.ordinal) {
            // SAFETY: the module was loaded on this device; its functions are dropped with the
            // backend's function table, before it.
            super::gate::alone(|| {
                let _ = unsafe { (self.lib.fns.hipModuleUnload)(self.raw) };
            });
        }
    }
}

/// A kernel of a loaded module.
#[derive(Clone, Copy)]
pub struct HipFunction(hip_api::Function);

// SAFETY: a function handle is immutable and valid on any thread while its module is loaded.
unsafe impl Send for HipFunction {}
// SAFETY: as for Send.
unsafe impl Sync for HipFunction {}

/// An instantiated HIP graph and the graph it came from, launched under a lock (a graph may
/// not be used by two threads at once); destroyed with the device current.
pub struct HipGraph {
    lib: &'static HipLib,
    ordinal: c_int,
    graph: hip_api::Graph,
    exec: Mutex<hip_api::GraphExec>,
}

// SAFETY: the handles are only used under the mutex (launch) or in drop, with the device bound.
unsafe impl Send for HipGraph {}
// SAFETY: as for Send.
unsafe impl Sync for HipGraph {}

impl Drop for HipGraph {
    fn drop(&mut self) {
        if let Ok(_bound) = Bound::new(self.lib, self.ordinal) {
            let exec = *self.exec.get_mut().unwrap_or_else(|e| e.into_inner());
            // SAFETY: both were made by `end_capture` and are destroyed once, here.
            unsafe {
                (self.lib.fns.hipGraphExecDestroy)(exec);
                (self.lib.fns.hipGraphDestroy)(self.graph);
            }
        }
    }
}

/// The embedded target whose code fits target id `arch`, if any.
fn embedded_target(arch: &str) -> Option<&'static str> {
    gfx::best_target(objects::TARGETS.iter().copied(), arch)
}

/// Whether kernels can run on a device of target id `arch`: a code object of this build fits
/// it, or hiprtc can build one.
fn usable(lib: &HipLib, arch: &str) -> std::result::Result<(), String> {
    if embedded_target(arch).is_some() {
        return Ok(());
    }
    let embedded = if objects::TARGETS.is_empty() { "none".to_string() } else { objects::TARGETS.join(", ") };
    lib.rtc.as_ref().map(|_| ()).map_err(|e| format!("no embedded code object fits it (embedded: {embedded}), and {e}"))
}

/// The compiler as the cache key names it.
fn compiler_id(lib: &HipLib, rtc: &hip_api::Hiprtc) -> String {
    format!("HIP {}, {}", gfx::version_text(lib.version), rtc.describe)
}

/// Whether hiprtc loads here (what [`hiprtc_compile`] needs): its description, or why not.
pub fn hiprtc_available() -> std::result::Result<String, String> {
    let lib = hip_api::library()?;
    lib.rtc.as_ref().map(|rtc| compiler_id(lib, rtc)).map_err(Clone::clone)
}

/// Where each ROCm library of this backend comes from here, or why it does not load: the HIP
/// runtime (its version and path), hiprtc, rocBLAS and MIOpen, in that order (the HIP runtime
/// alone when it is absent). Needs no GPU: the libraries are opened and their entry points
/// resolved, no handle is made.
pub fn libraries() -> Vec<(&'static str, std::result::Result<String, String>)> {
    let lib = match hip_api::library() {
        Ok(lib) => lib,
        Err(why) => return vec![("HIP runtime", Err(why))],
    };
    vec![
        ("HIP runtime", Ok(lib.describe())),
        ("hiprtc", lib.rtc.as_ref().map(|rtc| rtc.describe.clone()).map_err(Clone::clone)),
        ("rocBLAS", RocBlas::load(lib).map(|(_, name)| name)),
        ("MIOpen", MiOpen::load(lib).map(|(_, name)| name)),
    ]
}

/// Every size, offset and value `hip_api.rs` declares by hand, named as ROCm's C headers name
/// them (`sizeof(hipDeviceProp_tR0000)`, `hipErrorNoDevice`), for a test to compare with what a
/// C compiler makes of the installed headers.
pub fn declared_abi() -> Vec<(&'static str, i64)> {
    hip_api::declared_abi()
}

/// Compiles `hip/<family>.hip` (with `hip/common.h`) with hiprtc for target id `arch`
/// (`gfx90a`, `gfx90a:xnack+`) exactly as the rocm runtime does, without the cache. Needs the
/// HIP library (any version it loads), no GPU.
pub fn hiprtc_compile(family: Family, arch: &str) -> Result<Vec<u8>> {
    let source = hip_source(family).ok_or_else(|| err(format!("{family} has no HIP source")))?;
    hiprtc_compile_source(&format!("{family}.hip"), source, arch)
}

/// Compiles `source` (which may include `common.h`), named `file` in messages, with hiprtc for
/// `arch`, as the families are compiled.
pub fn hiprtc_compile_source(file: &str, source: &str, arch: &str) -> Result<Vec<u8>> {
    let lib = hip_api::library().map_err(err)?;
    let rtc = lib.rtc.as_ref().map_err(|e| err(e.clone()))?;
    rtc.compile(file, source, &[("common.h", HIP_COMMON)], arch, objects::FLAGS).map_err(err)
}

/// The name and architecture of every device the HIP runtime sees, by ordinal.
pub fn device_names() -> std::result::Result<Vec<String>, String> {
    let lib = hip_api::library()?;
    let count = lib.device_count()?;
    (0..count)
        .map(|i| lib.properties(i as c_int).map(|p| format!("{} ({})", c_text(&p.name), c_text(&p.gcnArchName))))
        .collect()
}

impl Hip {
    /// The code object build.rs embedded for `family` and the device's target, if any.
    fn embedded(&self, family: Family) -> Option<&'static (&'static str, &'static str, &'static [u8])> {
        self.embedded.and_then(|t| objects::OBJECTS.iter().find(|(f, o, _)| *f == family.name() && *o == t))
    }

    /// Device `ordinal`, else the one `RWO_ROCM_DEVICE` names, else the default (the first
    /// usable discrete device, then an integrated one); or why it cannot be used: no HIP
    /// library, an unsupported version, no AMD GPU, no way to get code for it.
    pub fn open(ordinal: Option<usize>) -> std::result::Result<Hip, String> {
        let lib = hip_api::library()?;
        if let Some(why) = gfx::unsupported(lib.version) {
            return Err(format!("{why} ({})", lib.name));
        }
        let at = |e: String| format!("{}: {e}", lib.describe());
        let count = lib.device_count().map_err(at)?;
        if count == 0 {
            return Err(at("no AMD GPU".into()));
        }
        let mut props = Vec::with_capacity(count);
        let mut candidates = Vec::with_capacity(count);
        for i in 0..count {
            let p = lib.properties(i as c_int).map_err(at)?;
            let arch = c_text(&p.gcnArchName);
            let integrated = gfx::integrated(&arch, p.pageableMemoryAccessUsesHostPageTables != 0);
            candidates.push(Candidate { ordinal: i, usable: usable(lib, &arch), arch, integrated });
            props.push(p);
        }
        let ordinal = match ordinal.map_or_else(|| requested_ordinal("RWO_ROCM_DEVICE"), |n| Ok(Some(n)))? {
            Some(n) => {
                let c = candidates.get(n).ok_or_else(|| at(format!("no HIP device {n} (there are {count})")))?;
                c.usable.clone().map_err(|e| at(format!("device {n} ({}): {e}", c.arch)))?;
                n
            }
            None => gfx::default_device(&candidates).map_err(at)?,
        };
        let (p, arch) = (&props[ordinal], candidates[ordinal].arch.clone());
        let embedded = embedded_target(&arch);
        let kernels = match (embedded, &lib.rtc) {
            (Some(t), _) => format!("embedded code objects for {t}"),
            (None, Ok(rtc)) => format!("{} for {arch}, cached in {}", rtc.describe, Cache::from_env()),
            (None, Err(e)) => e.clone(),
        };
        let info = DeviceInfo {
            name: format!("{} (HIP device {ordinal})", c_text(&p.name)),
            arch,
            warp_size: p.warpSize as u32,
            multiprocessors: p.multiProcessorCount as u32,
            total_memory: p.totalGlobalMem as u64,
            versions: format!("{}; kernels: {kernels}", lib.describe()),
        };
        let ordinal = ordinal as c_int;
        let main = Lane::new(lib, ordinal)?;
        Ok(Hip { main, side: OnceLock::new(), capturer: Capturer::default(), lib, ordinal, info, embedded })
    }

    /// The stream the calling thread's work goes to: the capture's while it captures.
    fn lane(&self) -> &Lane {
        match self.side.get() {
            Some(Ok(side)) if self.capturer.is_mine() => side,
            _ => &self.main,
        }
    }

    fn stream(&self) -> hip_api::Stream {
        self.lane().stream
    }

    fn bind(&self) -> Result<Bound> {
        Bound::new(self.lib, self.ordinal).map_err(err)
    }

    fn check(&self, what: &str, code: hip_api::HipError) -> Result<()> {
        self.lib.check(what, code).map_err(err)
    }

    fn copy(&self, what: &str, dst: *mut c_void, src: *const c_void, bytes: usize, kind: c_int) -> Result<()> {
        let _bound = self.bind()?;
        // SAFETY: the callers' contracts: both ranges lie in live memory of the right kind.
        self.check(what, unsafe { (self.lib.fns.hipMemcpyAsync)(dst, src, bytes, kind, self.stream()) })
    }
}

fn dev(p: DevicePtr) -> *mut c_void {
    p.0 as usize as *mut c_void
}

impl Runtime for Hip {
    const KIND: BackendKind = BackendKind::Rocm;
    type Module = HipModule;
    type Function = HipFunction;
    type Graph = HipGraph;

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn ordinal(&self) -> usize {
        self.ordinal as usize
    }

    fn raw_stream(&self) -> *mut c_void {
        self.stream()
    }

    fn on_device<T>(&self, f: impl FnOnce() -> T) -> Result<T> {
        let _bound = self.bind()?;
        Ok(f())
    }

    fn alloc(&self, bytes: usize) -> Result<DevicePtr> {
        let _bound = self.bind()?;
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: writes one pointer.
        self.check("hipMalloc", unsafe { (self.lib.fns.hipMalloc)(&mut ptr, bytes) })?;
        Ok(DevicePtr(ptr as usize as u64))
    }

    unsafe fn free(&self, ptr: DevicePtr) -> Result<()> {
        let _bound = self.bind()?;
        // SAFETY: the caller's contract.
        self.check("hipFree", unsafe { (self.lib.fns.hipFree)(dev(ptr)) })
    }

    unsafe fn htod(&self, src: &[u8], dst: DevicePtr) -> Result<()> {
        let kind = hip_api::MEMCPY_HOST_TO_DEVICE;
        self.copy("hipMemcpyAsync (to device)", dev(dst), src.as_ptr() as *const c_void, src.len(), kind)?;
        // HIP does not promise, as CUDA does, that a copy from pageable memory has read `src`
        // when it returns; `src` may be freed once this does.
        self.synchronize()
    }

    unsafe fn dtoh(&self, src: DevicePtr, dst: &mut [u8]) -> Result<()> {
        let kind = hip_api::MEMCPY_DEVICE_TO_HOST;
        self.copy("hipMemcpyAsync (to host)", dst.as_mut_ptr() as *mut c_void, dev(src), dst.len(), kind)?;
        self.synchronize()
    }

    unsafe fn dtod(&self, src: DevicePtr, dst: DevicePtr, bytes: usize) -> Result<()> {
        self.copy("hipMemcpyAsync (on device)", dev(dst), dev(src), bytes, hip_api::MEMCPY_DEVICE_TO_DEVICE)
    }

    unsafe fn copy_peer(&self, from: &Hip, src: DevicePtr, dst: DevicePtr, bytes: usize) -> Result<()> {
        from.synchronize()?;
        let _bound = self.bind()?;
        // SAFETY: the caller's contract; `from`'s writes are done (synchronised above), and the
        // copy is waited for below, so `src` may be reused once this returns.
        let copied = unsafe {
            (self.lib.fns.hipMemcpyPeerAsync)(dev(dst), self.ordinal, dev(src), from.ordinal, bytes, self.stream())
        };
        self.check("hipMemcpyPeerAsync", copied)?;
        self.synchronize()
    }

    unsafe fn memset(&self, dst: DevicePtr, value: u8, bytes: usize) -> Result<()> {
        let _bound = self.bind()?;
        // SAFETY: the caller's contract.
        self.check("hipMemsetD8Async", unsafe {
            (self.lib.fns.hipMemsetD8Async)(dev(dst), value, bytes, self.stream())
        })
    }

    fn code_object(&self, family: Family) -> Result<Cow<'static, [u8]>> {
        if let Some((_, _, bytes)) = self.embedded(family) {
            return Ok(Cow::Borrowed(*bytes));
        }
        let arch = &self.info.arch;
        let rtc = self.lib.rtc.as_ref().map_err(|e| err(format!("no code object for {family} on {arch}: {e}")))?;
        let source = hip_source(family).ok_or_else(|| err(format!("{family} has no HIP source")))?;
        let key =
            Key::new("rocm", family.name(), arch, &compiler_id(self.lib, rtc), objects::FLAGS, &[source, HIP_COMMON]);
        let compile =
            || rtc.compile(&format!("{family}.hip"), source, &[("common.h", HIP_COMMON)], arch, objects::FLAGS);
        Cache::from_env().get_or_compile(&key, compile).map(Cow::Owned).map_err(err)
    }

    fn compiles(&self, family: Family) -> bool {
        self.embedded(family).is_none()
    }

    fn compile(&self, name: &str, source: &str) -> Result<Vec<u8>> {
        let arch = &self.info.arch;
        let rtc = self.lib.rtc.as_ref().map_err(|e| err(format!("no compiler for {name} on {arch}: {e}")))?;
        let key = Key::new("rocm", name, arch, &compiler_id(self.lib, rtc), objects::FLAGS, &[source, HIP_COMMON]);
        let compile = || rtc.compile(name, source, &[("common.h", HIP_COMMON)], arch, objects::FLAGS);
        Cache::from_env().get_or_compile(&key, compile).map_err(err)
    }

    fn load_module(&self, image: &[u8]) -> Result<HipModule> {
        let _bound = self.bind()?;
        // An 8-byte-aligned copy: what the ELF reader behind hipModuleLoadData may assume.
        let mut aligned = vec![0u64; image.len().div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut aligned)[..image.len()].copy_from_slice(image);
        let mut raw: hip_api::Module = std::ptr::null_mut();
        // SAFETY: `aligned` holds a whole code object (ELF or offload bundle) and outlives the call.
        let loaded = unsafe { (self.lib.fns.hipModuleLoadData)(&mut raw, aligned.as_ptr() as *const c_void) };
        self.check("hipModuleLoadData", loaded)?;
        Ok(HipModule { raw, lib: self.lib, ordinal: self.ordinal })
    }

    fn function(&self, module: &HipModule, name: &str) -> Result<HipFunction> {
        let cname = CString::new(name).map_err(|_| err(format!("kernel name {name:?} holds a NUL")))?;
        let _bound = self.bind()?;
        let mut f: hip_api::Function = std::ptr::null_mut();
        // SAFETY: the module is loaded (the backend keeps it while `f` is used); writes one handle.
        self.check("hipModuleGetFunction", unsafe {
            (self.lib.fns.hipModuleGetFunction)(&mut f, module.raw, cname.as_ptr())
        })?;
        Ok(HipFunction(f))
    }

    unsafe fn launch(
        &self,
        f: HipFunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        let _bound = self.bind()?;
        let [gx, gy, gz] = grid;
        let [bx, by, bz] = block;
        let params = args.as_mut_ptr();
        // SAFETY: the caller's contract; `f` came from a module the backend keeps loaded.
        let launched = unsafe {
            (self.lib.fns.hipModuleLaunchKernel)(
                f.0,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                shared_bytes,
                self.stream(),
                params,
                std::ptr::null_mut(),
            )
        };
        self.check("hipModuleLaunchKernel", launched)
    }

    fn synchronize(&self) -> Result<()> {
        let _bound = self.bind()?;
        // SAFETY: the stream is live (owned by `self`).
        self.check("hipStreamSynchronize", unsafe { (self.lib.fns.hipStreamSynchronize)(self.stream()) })
    }

    fn begin_capture(&self) -> Result<()> {
        let side = match self.side.get_or_init(|| Lane::new(self.lib, self.ordinal)) {
            Ok(side) => side.stream,
            Err(why) => return Err(err(format!("no stream to capture on: {why}"))),
        };
        let _bound = self.bind()?;
        self.capturer.claim()?;
        let relaxed = hip_api::STREAM_CAPTURE_MODE_RELAXED;
        // SAFETY: the stream is live (owned by `self`).
        let begun = unsafe { (self.lib.fns.hipStreamBeginCapture)(side, relaxed) };
        self.check("hipStreamBeginCapture", begun).inspect_err(|_| self.capturer.release())
    }

    fn capturing(&self) -> bool {
        self.capturer.is_mine()
    }

    fn end_capture(&self) -> Result<HipGraph> {
        let Some(Ok(side)) = self.side.get().filter(|_| self.capturer.is_mine()) else {
            return Err(Error::Capture { msg: "no capture is under way on this thread".into() });
        };
        let _bound = self.bind()?;
        let mut graph: hip_api::Graph = std::ptr::null_mut();
        // SAFETY: the stream is live; writes one handle.
        let ended = unsafe { (self.lib.fns.hipStreamEndCapture)(side.stream, &mut graph) };
        self.capturer.release();
        self.check("hipStreamEndCapture", ended)?;
        let mut exec: hip_api::GraphExec = std::ptr::null_mut();
        let null = std::ptr::null_mut();
        // SAFETY: `graph` was just made; no error node or log is asked for.
        let made = self.check("hipGraphInstantiate", unsafe {
            (self.lib.fns.hipGraphInstantiate)(&mut exec, graph, null, null as *mut c_char, 0)
        });
        if let Err(e) = made {
            // SAFETY: made above, destroyed once.
            unsafe { (self.lib.fns.hipGraphDestroy)(graph) };
            return Err(e);
        }
        Ok(HipGraph { lib: self.lib, ordinal: self.ordinal, graph, exec: Mutex::new(exec) })
    }

    fn launch_graph(&self, g: &HipGraph) -> Result<()> {
        let _bound = self.bind()?;
        let exec = g.exec.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the graph is live while `g` is; the stream is live.
        self.check("hipGraphLaunch", unsafe { (self.lib.fns.hipGraphLaunch)(*exec, self.main.stream) })
    }

    unsafe fn htod_now(&self, src: &[u8], dst: DevicePtr) -> Result<()> {
        let _bound = self.bind()?;
        let kind = hip_api::MEMCPY_HOST_TO_DEVICE;
        // SAFETY: the caller's contract; hipMemcpy returns once the copy is done.
        let code = unsafe { (self.lib.fns.hipMemcpy)(dev(dst), src.as_ptr() as *const c_void, src.len(), kind) };
        self.check("hipMemcpy (to device)", code)
    }

    fn blas(&self) -> std::result::Result<&dyn Blas, &str> {
        let lane = self.lane();
        let open = || {
            library_allowed("blas")
                .and_then(|_| super::gate::alone(|| RocBlas::open(self.lib, self.ordinal, lane.stream)))
        };
        match lane.blas.get_or_init(open) {
            Ok(b) => Ok(b),
            Err(why) => Err(why),
        }
    }

    fn dnn(&self) -> std::result::Result<&dyn Dnn, &str> {
        let lane = self.lane();
        let open = || {
            library_allowed("dnn")
                .and_then(|_| super::gate::alone(|| MiOpen::open(self.lib, self.ordinal, lane.stream)))
        };
        match lane.dnn.get_or_init(open) {
            Ok(d) => Ok(d),
            Err(why) => Err(why),
        }
    }
}

impl NativeBackend<Hip> {
    /// HIP device `ordinal` (else as [`Hip::open`] chooses), or why it cannot be used here.
    pub fn open(ordinal: Option<usize>) -> std::result::Result<RocmBackend, String> {
        Hip::open(ordinal).map(NativeBackend::new)
    }
}

impl crate::backend::Open for RocmBackend {
    async fn open_default() -> std::result::Result<Self, String> {
        Self::open(None)
    }
}
