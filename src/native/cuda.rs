//! The CUDA runtime (feature `cuda`): the native backend on NVIDIA GPUs through cudarc's
//! driver API, with the very same `hip/*.hip` sources compiled by NVRTC at first use. The
//! driver and NVRTC are loaded at run time: where either is missing, the backend is absent.

use super::blas::{Blas, cuda::CuBlas};
use super::cache::{Cache, Key};
use super::dnn::{Dnn, cuda::CuDnn};
use super::ptr::DevicePtr;
use super::runtime::{Capturer, DeviceInfo, Runtime, requested_ordinal};
use super::{HIP_COMMON, NativeBackend, hip_source};
use crate::spec::Family;
use crate::{BackendKind, Error, Result};
use cudarc::driver::{CudaContext, CudaGraph, CudaStream, DriverError, result as cu, sys};
use cudarc::nvrtc::{result as rtc, sys as rtc_sys};
use std::borrow::Cow;
use std::ffi::{CString, c_char, c_int, c_void};
use std::sync::{Arc, Mutex, OnceLock};

/// The native backend on a CUDA device.
pub type CudaBackend = NativeBackend<Cuda>;

/// NVRTC options: the crate's rounding (no fused multiply-add, as the cpu reference and the
/// random spec compute), C++17 for the shared sources.
const NVRTC_OPTIONS: &[&str] = &["--std=c++17", "--fmad=false"];

fn err(what: &str, e: impl std::fmt::Debug) -> Error {
    Error::Backend { backend: BackendKind::Cuda, msg: format!("{what}: {e:?}") }
}

fn cu_err(what: &'static str) -> impl Fn(DriverError) -> Error {
    move |e| {
        let text = e.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        Error::Backend { backend: BackendKind::Cuda, msg: format!("{what}: {e:?} {text}") }
    }
}

/// A non-blocking stream and the vendor libraries bound to it, loaded at first use (or why
/// they did not load).
struct Lane {
    /// First: dropped (their handles destroyed) before the stream they use.
    blas: OnceLock<std::result::Result<CuBlas, String>>,
    dnn: OnceLock<std::result::Result<CuDnn, String>>,
    stream: Arc<CudaStream>,
}

impl Drop for Lane {
    fn drop(&mut self) {
        // Destroying a library's handle waits for the whole device.
        super::gate::alone(|| drop((self.blas.take(), self.dnn.take())));
    }
}

impl Lane {
    fn new(ctx: &Arc<CudaContext>) -> std::result::Result<Lane, String> {
        let stream = ctx.new_stream().map_err(|e| format!("no stream: {e:?}"))?;
        Ok(Lane { blas: OnceLock::new(), dnn: OnceLock::new(), stream })
    }

    fn cu(&self) -> sys::CUstream {
        self.stream.cu_stream()
    }
}

/// A device of the CUDA driver: one lane for all work, and a second one, made at the first
/// capture, for the capturing thread's (see [`Capturer`]).
pub struct Cuda {
    /// First: dropped before the context they use.
    main: Lane,
    side: OnceLock<std::result::Result<Lane, String>>,
    /// The stream of [`Runtime::htod_now`]'s copies, made at its first use.
    uploads: OnceLock<std::result::Result<Arc<CudaStream>, String>>,
    capturer: Capturer,
    ctx: Arc<CudaContext>,
    info: DeviceInfo,
}

/// A loaded module; unloaded with its context current.
pub struct CuModule {
    raw: sys::CUmodule,
    ctx: Arc<CudaContext>,
}

// SAFETY: a CUmodule is a handle any thread may use while the context is current, which every
// use here makes it first.
unsafe impl Send for CuModule {}
// SAFETY: as for Send; the module is only read after loading.
unsafe impl Sync for CuModule {}

impl Drop for CuModule {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: the module was loaded in this context and its functions die with it.
            super::gate::alone(|| {
                let _ = unsafe { cu::module::unload(self.raw) };
            });
        }
    }
}

/// A kernel of a loaded module.
#[derive(Clone, Copy)]
pub struct CuFunction(sys::CUfunction);

/// An instantiated CUDA graph (none: a capture that recorded nothing), launched under a lock:
/// the driver does not let two threads use one graph at once.
pub struct CuGraph(Mutex<Option<CudaGraph>>);

// SAFETY: every use of the graph goes through the mutex, with the context bound by cudarc.
unsafe impl Send for CuGraph {}
// SAFETY: as for Send.
unsafe impl Sync for CuGraph {}

// SAFETY: a CUfunction is an immutable handle, usable from any thread with the context current.
unsafe impl Send for CuFunction {}
// SAFETY: as for Send.
unsafe impl Sync for CuFunction {}

impl Cuda {
    /// Device `ordinal`, else the one `RWO_CUDA_DEVICE` names, else device 0; or why it cannot
    /// be used: no driver library, no NVRTC, no such device.
    pub fn open(ordinal: Option<usize>) -> std::result::Result<Cuda, String> {
        // cudarc panics when a library or symbol it loads is missing; keep that a reason.
        std::panic::catch_unwind(|| Self::open_inner(ordinal)).unwrap_or_else(|p| {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            Err(format!("the CUDA libraries failed to load: {}", msg.unwrap_or_default()))
        })
    }

    fn open_inner(ordinal: Option<usize>) -> std::result::Result<Cuda, String> {
        // SAFETY: only tries to load the driver library.
        if !unsafe { sys::is_culib_present() } {
            return Err("no CUDA driver library (libcuda.so) found".into());
        }
        // SAFETY: only tries to load the NVRTC library.
        if !unsafe { rtc_sys::is_culib_present() } {
            return Err("no NVRTC library (libnvrtc.so) found: put CUDA's lib64 on LD_LIBRARY_PATH".into());
        }
        let count = CudaContext::device_count().map_err(|e| format!("cuInit failed: {e:?}"))?;
        if count < 1 {
            return Err("the CUDA driver sees no device".into());
        }
        let n = ordinal.map_or_else(|| requested_ordinal("RWO_CUDA_DEVICE"), |n| Ok(Some(n)))?.unwrap_or(0);
        if n >= count as usize {
            return Err(format!("no CUDA device {n} (there are {count})"));
        }
        let ctx = CudaContext::new(n).map_err(|e| format!("no context on device {n}: {e:?}"))?;
        // cudarc's tracking of its own buffers across streams, which we do not use, would
        // synchronize the whole context when the first stream is made: a capture under way on
        // another `Device` of this GPU would fail.
        // SAFETY: no cudarc buffer or event is made on this context.
        unsafe { ctx.disable_event_tracking() };
        let main = Lane::new(&ctx)?;
        let info = Self::device_info(&ctx).map_err(|e| e.to_string())?;
        let archs = nvrtc_archs().map_err(|e| e.to_string())?;
        if target(&info.arch, &archs).is_err() {
            return Err(format!("NVRTC ({}) cannot build for {} (it knows {archs:?})", info.versions, info.arch));
        }
        let (side, uploads) = (OnceLock::new(), OnceLock::new());
        Ok(Cuda { main, side, uploads, capturer: Capturer::default(), ctx, info })
    }

    /// The lane the calling thread's work goes to: the capture's while it captures.
    fn lane(&self) -> &Lane {
        match self.side.get() {
            Some(Ok(side)) if self.capturer.is_mine() => side,
            _ => &self.main,
        }
    }

    fn device_info(ctx: &CudaContext) -> Result<DeviceInfo> {
        use sys::CUdevice_attribute::*;
        let attr = |a| ctx.attribute(a).map_err(cu_err("cuDeviceGetAttribute"));
        let (major, minor) = ctx.compute_capability().map_err(cu_err("compute capability"))?;
        let mut driver: c_int = 0;
        // SAFETY: writes one int.
        unsafe { sys::cuDriverGetVersion(&mut driver) }.result().map_err(cu_err("cuDriverGetVersion"))?;
        let (mut rmaj, mut rmin): (c_int, c_int) = (0, 0);
        // SAFETY: writes two ints.
        unsafe { rtc_sys::nvrtcVersion(&mut rmaj, &mut rmin) }.result().map_err(|e| err("nvrtcVersion", e))?;
        Ok(DeviceInfo {
            name: format!("{} (CUDA device {})", ctx.name().map_err(cu_err("cuDeviceGetName"))?, ctx.ordinal()),
            arch: format!("sm_{major}{minor}"),
            warp_size: attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE)? as u32,
            multiprocessors: attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            total_memory: ctx.total_mem().map_err(cu_err("cuDeviceTotalMem"))? as u64,
            versions: format!("driver {}.{}, NVRTC {rmaj}.{rmin}", driver / 1000, (driver % 1000) / 10),
        })
    }

    fn bind(&self) -> Result<()> {
        self.ctx.bind_to_thread().map_err(cu_err("binding the context"))
    }
}

/// The name of every device the CUDA driver sees, by ordinal; opens no context.
pub fn device_names() -> std::result::Result<Vec<String>, String> {
    std::panic::catch_unwind(|| {
        // SAFETY: only tries to load the driver library.
        if !unsafe { sys::is_culib_present() } {
            return Err("no CUDA driver library (libcuda.so) found".to_string());
        }
        let count = CudaContext::device_count().map_err(|e| format!("cuInit failed: {e:?}"))?;
        (0..count)
            .map(|i| {
                let dev = cu::device::get(i).map_err(|e| format!("cuDeviceGet({i}): {e:?}"))?;
                cu::device::get_name(dev).map_err(|e| format!("cuDeviceGetName({i}): {e:?}"))
            })
            .collect()
    })
    .unwrap_or_else(|_| Err("the CUDA driver library failed to load".into()))
}

/// Whether the NVRTC library can be loaded here (what [`nvrtc_compile`] needs).
pub fn nvrtc_available() -> bool {
    // SAFETY: only tries to load the library.
    unsafe { rtc_sys::is_culib_present() }
}

/// The architectures NVRTC can build machine code for (`sm_XY` as `XY`).
fn nvrtc_archs() -> Result<Vec<i32>> {
    let mut n: c_int = 0;
    // SAFETY: writes one int.
    unsafe { rtc_sys::nvrtcGetNumSupportedArchs(&mut n) }.result().map_err(|e| err("NVRTC archs", e))?;
    let mut archs = vec![0; n.max(0) as usize];
    // SAFETY: `archs` has room for the `n` ints NVRTC writes.
    unsafe { rtc_sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }.result().map_err(|e| err("NVRTC archs", e))?;
    Ok(archs)
}

/// The NVRTC option that targets `arch` (`sm_90`), and whether it gives machine code: `sm_XY`
/// when NVRTC knows it, else PTX for the newest architecture below it (the driver finishes it).
fn target(arch: &str, archs: &[i32]) -> Result<(String, bool)> {
    let cc: i32 = arch.trim_start_matches("sm_").parse().map_err(|_| err("NVRTC", format!("bad arch {arch}")))?;
    if archs.contains(&cc) {
        return Ok((format!("--gpu-architecture=sm_{cc}"), true));
    }
    let below = archs.iter().copied().filter(|&a| a <= cc).max();
    let a = below.ok_or_else(|| err("NVRTC", format!("no architecture at or below {arch} in {archs:?}")))?;
    Ok((format!("--gpu-architecture=compute_{a}"), false))
}

/// Compiles `hip/<family>.hip` (with `hip/common.h`) with NVRTC for `arch` (`sm_90`), as
/// `target` says. Needs no GPU, only NVRTC.
pub fn nvrtc_compile(family: Family, arch: &str) -> Result<Vec<u8>> {
    let source = hip_source(family).ok_or_else(|| err("NVRTC", format!("{family} has no HIP source")))?;
    nvrtc_compile_source(&format!("{family}.hip"), source, arch)
}

/// Compiles `source` (which may include `common.h`), named `file` in messages, with NVRTC for
/// `arch`, as the families are compiled.
pub fn nvrtc_compile_source(file: &str, source: &str, arch: &str) -> Result<Vec<u8>> {
    let (target, cubin) = target(arch, &nvrtc_archs()?)?;
    let text = |s: &str, what| CString::new(s).map_err(|e| err(what, e));
    let (src, name) = (text(source, "source")?, text(file, "name")?);
    let (header, header_name) = (text(HIP_COMMON, "common.h")?, text("common.h", "name")?);
    let mut prog: rtc_sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: every string is NUL-terminated and outlives the program, destroyed below.
    unsafe {
        rtc_sys::nvrtcCreateProgram(&mut prog, src.as_ptr(), name.as_ptr(), 1, &header.as_ptr(), &header_name.as_ptr())
    }
    .result()
    .map_err(|e| err("nvrtcCreateProgram", e))?;
    let mut options: Vec<String> = NVRTC_OPTIONS.iter().map(|s| s.to_string()).collect();
    options.push(target);
    // SAFETY: `prog` is live; the options hold no NUL.
    let compiled = unsafe { rtc::compile_program(prog, &options) };
    // SAFETY: `prog` is live until destroyed at the end.
    let out = unsafe { program_output(prog, compiled, cubin, file) };
    // SAFETY: destroys the live program once.
    let _ = unsafe { rtc::destroy_program(prog) };
    out
}

/// The log on failure, else the machine code (or NUL-terminated PTX).
///
/// # Safety
/// `prog` is a live NVRTC program.
unsafe fn program_output(
    prog: rtc_sys::nvrtcProgram,
    compiled: std::result::Result<(), rtc::NvrtcError>,
    cubin: bool,
    file: &str,
) -> Result<Vec<u8>> {
    if let Err(e) = compiled {
        // SAFETY: the caller's contract.
        let log = unsafe { rtc::get_program_log(prog) }.unwrap_or_default();
        let log: Vec<u8> = log.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
        return Err(err(&format!("NVRTC compiling {file}: {}", String::from_utf8_lossy(&log)), e));
    }
    let mut size = 0usize;
    if cubin {
        // SAFETY: the caller's contract; `out` has room for `size` bytes.
        unsafe {
            rtc_sys::nvrtcGetCUBINSize(prog, &mut size).result().map_err(|e| err("nvrtcGetCUBINSize", e))?;
            let mut out = vec![0u8; size];
            rtc_sys::nvrtcGetCUBIN(prog, out.as_mut_ptr() as *mut c_char)
                .result()
                .map_err(|e| err("nvrtcGetCUBIN", e))?;
            Ok(out)
        }
    } else {
        // SAFETY: the caller's contract; the PTX comes NUL-terminated.
        let ptx = unsafe { rtc::get_ptx(prog) }.map_err(|e| err("nvrtcGetPTX", e))?;
        Ok(ptx.iter().map(|&c| c as u8).collect())
    }
}

impl Runtime for Cuda {
    const KIND: BackendKind = BackendKind::Cuda;
    type Module = CuModule;
    type Function = CuFunction;
    type Graph = CuGraph;

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    fn raw_stream(&self) -> *mut c_void {
        self.lane().cu() as *mut c_void
    }

    fn on_device<T>(&self, f: impl FnOnce() -> T) -> Result<T> {
        self.bind()?;
        Ok(f())
    }

    fn alloc(&self, bytes: usize) -> Result<DevicePtr> {
        self.bind()?;
        // SAFETY: a plain allocation; its contents are never read before being written.
        unsafe { cu::malloc_sync(bytes) }.map(DevicePtr).map_err(cu_err("cuMemAlloc"))
    }

    unsafe fn free(&self, ptr: DevicePtr) -> Result<()> {
        self.bind()?;
        // SAFETY: the caller's contract.
        unsafe { cu::free_sync(ptr.0) }.map_err(cu_err("cuMemFree"))
    }

    unsafe fn htod(&self, src: &[u8], dst: DevicePtr) -> Result<()> {
        self.bind()?;
        // SAFETY: the caller's contract; from pageable memory the call returns once `src` is
        // staged, so it may be reused.
        unsafe { cu::memcpy_htod_async(dst.0, src, self.lane().cu()) }.map_err(cu_err("cuMemcpyHtoDAsync"))
    }

    unsafe fn dtoh(&self, src: DevicePtr, dst: &mut [u8]) -> Result<()> {
        self.bind()?;
        // SAFETY: the caller's contract; the stream is synchronised before `dst` is read.
        unsafe { cu::memcpy_dtoh_async(dst, src.0, self.lane().cu()) }.map_err(cu_err("cuMemcpyDtoHAsync"))?;
        self.synchronize()
    }

    unsafe fn dtod(&self, src: DevicePtr, dst: DevicePtr, bytes: usize) -> Result<()> {
        self.bind()?;
        // SAFETY: the caller's contract.
        unsafe { cu::memcpy_dtod_async(dst.0, src.0, bytes, self.lane().cu()) }.map_err(cu_err("cuMemcpyDtoDAsync"))
    }

    unsafe fn copy_peer(&self, from: &Cuda, src: DevicePtr, dst: DevicePtr, bytes: usize) -> Result<()> {
        from.synchronize()?;
        self.bind()?;
        let (to_ctx, from_ctx) = (self.ctx.cu_ctx(), from.ctx.cu_ctx());
        // SAFETY: the caller's contract; `from`'s writes are done (synchronised above), and the
        // copy is waited for below, so `src` may be reused once this returns.
        unsafe { sys::cuMemcpyPeerAsync(dst.0, to_ctx, src.0, from_ctx, bytes, self.lane().cu()) }
            .result()
            .map_err(cu_err("cuMemcpyPeerAsync"))?;
        self.synchronize()
    }

    unsafe fn memset(&self, dst: DevicePtr, value: u8, bytes: usize) -> Result<()> {
        self.bind()?;
        // SAFETY: the caller's contract.
        unsafe { cu::memset_d8_async(dst.0, value, bytes, self.lane().cu()) }.map_err(cu_err("cuMemsetD8Async"))
    }

    fn code_object(&self, family: Family) -> Result<Cow<'static, [u8]>> {
        // The NVRTC target follows from the arch and NVRTC's version (in `versions`): both key it.
        let source = hip_source(family).unwrap_or_default();
        let key =
            Key::new("cuda", family.name(), &self.info.arch, &self.info.versions, NVRTC_OPTIONS, &[source, HIP_COMMON]);
        Cache::from_env().get_or_compile(&key, || nvrtc_compile(family, &self.info.arch)).map(Cow::Owned)
    }

    fn compiles(&self, _: Family) -> bool {
        true
    }

    fn compile(&self, name: &str, source: &str) -> Result<Vec<u8>> {
        let key = Key::new("cuda", name, &self.info.arch, &self.info.versions, NVRTC_OPTIONS, &[source, HIP_COMMON]);
        Cache::from_env().get_or_compile(&key, || nvrtc_compile_source(name, source, &self.info.arch))
    }

    fn load_module(&self, image: &[u8]) -> Result<CuModule> {
        self.bind()?;
        // An 8-byte-aligned copy with a trailing NUL: what both an ELF image and PTX text need.
        let mut aligned = vec![0u64; image.len() / 8 + 1];
        bytemuck::cast_slice_mut::<u64, u8>(&mut aligned)[..image.len()].copy_from_slice(image);
        // SAFETY: `aligned` holds a whole cubin or NUL-terminated PTX and outlives the call.
        let raw =
            unsafe { cu::module::load_data(aligned.as_ptr() as *const c_void) }.map_err(cu_err("cuModuleLoadData"))?;
        Ok(CuModule { raw, ctx: self.ctx.clone() })
    }

    fn function(&self, module: &CuModule, name: &str) -> Result<CuFunction> {
        self.bind()?;
        let cname = CString::new(name).map_err(|e| err("kernel name", e))?;
        // SAFETY: the module is loaded and outlives the function (the backend keeps both).
        unsafe { cu::module::get_function(module.raw, cname) }.map(CuFunction).map_err(cu_err("cuModuleGetFunction"))
    }

    unsafe fn launch(
        &self,
        f: CuFunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        self.bind()?;
        let (g, b) = ((grid[0], grid[1], grid[2]), (block[0], block[1], block[2]));
        // SAFETY: the caller's contract.
        unsafe { cu::launch_kernel(f.0, g, b, shared_bytes, self.lane().cu(), args) }.map_err(cu_err("cuLaunchKernel"))
    }

    fn synchronize(&self) -> Result<()> {
        self.bind()?;
        // SAFETY: the stream is live (owned by `self`).
        unsafe { cu::stream::synchronize(self.lane().cu()) }.map_err(cu_err("cuStreamSynchronize"))
    }

    fn begin_capture(&self) -> Result<()> {
        let side = match self.side.get_or_init(|| Lane::new(&self.ctx)) {
            Ok(side) => side,
            Err(why) => return Err(err("no stream to capture on", why)),
        };
        self.capturer.claim()?;
        let relaxed = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
        side.stream
            .begin_capture(relaxed)
            .map_err(cu_err("cuStreamBeginCapture"))
            .inspect_err(|_| self.capturer.release())
    }

    fn capturing(&self) -> bool {
        self.capturer.is_mine()
    }

    fn end_capture(&self) -> Result<CuGraph> {
        let Some(Ok(side)) = self.side.get().filter(|_| self.capturer.is_mine()) else {
            return Err(Error::Capture { msg: "no capture is under way on this thread".into() });
        };
        let graph = side.stream.end_capture(sys::CUgraphInstantiate_flags(0));
        self.capturer.release();
        Ok(CuGraph(Mutex::new(graph.map_err(cu_err("cuStreamEndCapture"))?)))
    }

    fn launch_graph(&self, g: &CuGraph) -> Result<()> {
        self.bind()?;
        match &*g.0.lock().unwrap_or_else(|e| e.into_inner()) {
            // SAFETY: the graph lives while `g` does; the main stream is live. (cudarc's own
            // launch would queue it on the capture's stream, unordered with the main one.)
            Some(graph) => {
                unsafe { cu::graph::launch(graph.cu_graph_exec(), self.main.cu()) }.map_err(cu_err("cuGraphLaunch"))
            }
            None => Ok(()),
        }
    }

    unsafe fn htod_now(&self, src: &[u8], dst: DevicePtr) -> Result<()> {
        self.bind()?;
        // Not cuMemcpyHtoD: from pageable memory it returns once the bytes are staged, before
        // they land, on the legacy stream that nothing else here waits for; a block a capture
        // gave back could then be written after its next owner wrote it. A stream of our own,
        // waited for: the copy is done when this returns (and that stream is no capture's).
        let stream = match self.uploads.get_or_init(|| self.ctx.new_stream().map_err(|e| format!("{e:?}"))) {
            Ok(stream) => stream,
            Err(why) => return Err(err("no stream for uploads", why)),
        };
        // SAFETY: the caller's contract; the copy is done when the synchronize returns.
        unsafe { cu::memcpy_htod_async(dst.0, src, stream.cu_stream()) }.map_err(cu_err("cuMemcpyHtoDAsync"))?;
        // SAFETY: the stream is live (owned by `self`).
        unsafe { cu::stream::synchronize(stream.cu_stream()) }.map_err(cu_err("cuStreamSynchronize"))
    }

    fn blas(&self) -> std::result::Result<&dyn Blas, &str> {
        let lane = self.lane();
        let open = || {
            super::runtime::library_allowed("blas")
                .and_then(|_| super::gate::alone(|| CuBlas::open(&self.ctx, &lane.stream)))
        };
        match lane.blas.get_or_init(open) {
            Ok(b) => Ok(b),
            Err(why) => Err(why),
        }
    }

    fn dnn(&self) -> std::result::Result<&dyn Dnn, &str> {
        let lane = self.lane();
        let open = || {
            super::runtime::library_allowed("dnn")
                .and_then(|_| super::gate::alone(|| CuDnn::open(&self.ctx, &lane.stream)))
        };
        match lane.dnn.get_or_init(open) {
            Ok(d) => Ok(d),
            Err(why) => Err(why),
        }
    }
}

impl NativeBackend<Cuda> {
    /// CUDA device `ordinal` (else as [`Cuda::open`] chooses), or why it cannot be used here.
    pub fn open(ordinal: Option<usize>) -> std::result::Result<CudaBackend, String> {
        Cuda::open(ordinal).map(NativeBackend::new)
    }
}

impl crate::backend::Open for CudaBackend {
    async fn open_default() -> std::result::Result<Self, String> {
        Self::open(None)
    }
}
