//! The HIP runtime and hiprtc, loaded at run time (feature `rocm`): the entry points the rocm
//! backend calls, declared from `hip_runtime_api.h` and `hiprtc.h` (one C ABI from ROCm 5.2 to
//! 7.x: see `gfx::OLDEST`), the libraries found by soname, and compiling with hiprtc.
//!
//! `libamdhip64` is found as `RWO_ROCM_LIB` names it, else by the sonames of the supported
//! majors, else under `$ROCM_PATH/lib` and `/opt/rocm/lib` (versioned names first there too).
//! Every other ROCm library is looked for beside the runtime that loaded first
//! ([`HipLib::open_library`]), so that one process never mixes two ROCm installs. hiprtc lives
//! in `libhiprtc.so.N` from ROCm 6 (and in some 5.x), and inside `libamdhip64` in ROCm 5: the
//! separate library is tried first (`RWO_HIPRTC_LIB` names another), then the runtime's own
//! exports.
//!
//! Every size, offset and value declared here by hand is compared with the headers of the ROCm
//! installed where the suite runs (`tests/suite/rocm.rs`; Debian's ROCm 5.2 in CI), and each
//! says below where else it was read: ROCm/HIP include/hip at the tags rocm-5.2.3 and
//! rocm-6.2.2, and ROCm/rocm-systems projects/hip/include/hip at 003a5d10 (ROCm 7).

use super::dylib::{self, Opened, dylib};
use super::gfx;
use std::ffi::{CStr, CString, c_char, c_int, c_uchar, c_uint, c_void};
use std::sync::{Mutex, OnceLock};

/// `hipError_t` (a C enum).
pub type HipError = c_int;
/// `hipStream_t`, `hipModule_t`, `hipFunction_t`: opaque handles.
pub type Stream = *mut c_void;
pub type Module = *mut c_void;
pub type Function = *mut c_void;
/// `hipGraph_t` and `hipGraphExec_t`: opaque handles.
pub type Graph = *mut c_void;
pub type GraphExec = *mut c_void;
/// `hiprtcProgram` and `hiprtcResult`.
type Program = *mut c_void;
type RtcResult = c_int;

/// `hipSuccess` (`hipError_t`, hip_runtime_api.h at rocm-5.2.3, rocm-6.2.2 and 003a5d10).
pub const HIP_SUCCESS: HipError = 0;
/// `hipErrorNoDevice`: what `hipGetDeviceCount` returns where there is no AMD GPU (as above).
pub const HIP_ERROR_NO_DEVICE: HipError = 100;
/// `hipMemcpyKind`: `hipMemcpyHostToDevice`, `hipMemcpyDeviceToHost`, `hipMemcpyDeviceToDevice`
/// (driver_types.h at rocm-5.2.3 and rocm-6.2.2).
pub const MEMCPY_HOST_TO_DEVICE: c_int = 1;
pub const MEMCPY_DEVICE_TO_HOST: c_int = 2;
pub const MEMCPY_DEVICE_TO_DEVICE: c_int = 3;
/// `hipStreamNonBlocking`: no implicit synchronisation with the null stream, as cudarc's
/// (hip_runtime_api.h at rocm-5.2.3, rocm-6.2.2 and 003a5d10).
pub const STREAM_NON_BLOCKING: c_uint = 1;
/// `hipStreamCaptureModeRelaxed` (`hipStreamCaptureMode`, hip_runtime_api.h at rocm-5.2.3 and
/// rocm-6.2.2: after Global = 0 and ThreadLocal).
pub const STREAM_CAPTURE_MODE_RELAXED: c_int = 2;
/// `HIPRTC_SUCCESS` (`hiprtcResult`, hiprtc.h at rocm-5.2.3 and rocm-6.2.2).
const HIPRTC_SUCCESS: RtcResult = 0;

/// `hipDeviceProp_t` as ROCm 5 lays it out, which the exported `hipGetDeviceProperties` keeps
/// in ROCm 6 and 7 (`hipDeviceProp_tR0000` of hip_deprecated.h: the same fields in rocm-5.2.3's
/// hip_runtime_api.h, rocm-6.2.2's and rocm-systems 49678325's hip_deprecated.h, and ROCm 7's
/// clr still exports it under that name: hipamd/src/hip_deprecated_abi.cpp at rocm-systems
/// 260667d5; the new layout has its own entry point, `hipGetDevicePropertiesR0600`, absent from
/// ROCm 5). Unread fields between read ones are kept as bytes.
///
/// `integrated` is never filled through this entry point (hipamd rocm-5.2.3 src/hip_device.cpp,
/// clr rocm-6.2.2 and rocm-systems 0808ea29 hipamd/src/hip_device.cpp: it stays 0), while
/// `pageableMemoryAccessUsesHostPageTables` is filled from the device's `hostUnifiedMemory_`,
/// the very value R0600's `integrated` is filled from where that exists (ROCm 6.2 on).
#[repr(C)]
#[allow(non_snake_case)]
pub struct DeviceProps {
    pub name: [c_char; 256],
    pub totalGlobalMem: usize,
    sharedMemPerBlock: usize,
    regsPerBlock: c_int,
    pub warpSize: c_int,
    maxThreadsPerBlock: c_int,
    maxThreadsDim: [c_int; 3],
    maxGridSize: [c_int; 3],
    clockRate: c_int,
    memoryClockRate: c_int,
    memoryBusWidth: c_int,
    totalConstMem: usize,
    major: c_int,
    minor: c_int,
    pub multiProcessorCount: c_int,
    l2CacheSize: c_int,
    maxThreadsPerMultiProcessor: c_int,
    computeMode: c_int,
    clockInstructionRate: c_int,
    arch: c_uint,
    concurrentKernels: c_int,
    pciDomainID: c_int,
    pciBusID: c_int,
    pciDeviceID: c_int,
    maxSharedMemoryPerMultiProcessor: usize,
    isMultiGpuBoard: c_int,
    canMapHostMemory: c_int,
    gcnArch: c_int,
    pub gcnArchName: [c_char; 256],
    integrated: c_int,
    unread: [u8; 132],
    pub pageableMemoryAccessUsesHostPageTables: c_int,
}

const _: () = assert!(std::mem::size_of::<DeviceProps>() == 792);
const _: () = assert!(std::mem::align_of::<DeviceProps>() == 8);
const _: () = assert!(std::mem::offset_of!(DeviceProps, warpSize) == 276);
const _: () = assert!(std::mem::offset_of!(DeviceProps, multiProcessorCount) == 336);
const _: () = assert!(std::mem::offset_of!(DeviceProps, maxSharedMemoryPerMultiProcessor) == 376);
const _: () = assert!(std::mem::offset_of!(DeviceProps, gcnArchName) == 396);
const _: () = assert!(std::mem::offset_of!(DeviceProps, integrated) == 652);
const _: () = assert!(std::mem::offset_of!(DeviceProps, pageableMemoryAccessUsesHostPageTables) == 788);

/// Every size, offset and value declared here by hand, named as the C headers name them, for
/// the suite to compare with what a C compiler makes of those headers (`tests/suite/rocm.rs`).
pub(crate) fn declared_abi() -> Vec<(&'static str, i64)> {
    use std::mem::{align_of, offset_of, size_of};
    let n = |v: usize| v as i64;
    vec![
        ("sizeof(hipDeviceProp_tR0000)", n(size_of::<DeviceProps>())),
        ("alignof(hipDeviceProp_tR0000)", n(align_of::<DeviceProps>())),
        ("offsetof(name)", n(offset_of!(DeviceProps, name))),
        ("offsetof(totalGlobalMem)", n(offset_of!(DeviceProps, totalGlobalMem))),
        ("offsetof(warpSize)", n(offset_of!(DeviceProps, warpSize))),
        ("offsetof(multiProcessorCount)", n(offset_of!(DeviceProps, multiProcessorCount))),
        ("offsetof(maxSharedMemoryPerMultiProcessor)", n(offset_of!(DeviceProps, maxSharedMemoryPerMultiProcessor))),
        ("offsetof(gcnArchName)", n(offset_of!(DeviceProps, gcnArchName))),
        ("offsetof(integrated)", n(offset_of!(DeviceProps, integrated))),
        (
            "offsetof(pageableMemoryAccessUsesHostPageTables)",
            n(offset_of!(DeviceProps, pageableMemoryAccessUsesHostPageTables)),
        ),
        ("sizeof(hipError_t)", n(size_of::<HipError>())),
        ("hipSuccess", HIP_SUCCESS.into()),
        ("hipErrorNoDevice", HIP_ERROR_NO_DEVICE.into()),
        ("sizeof(hipMemcpyKind)", n(size_of::<c_int>())),
        ("hipMemcpyHostToDevice", MEMCPY_HOST_TO_DEVICE.into()),
        ("hipMemcpyDeviceToHost", MEMCPY_DEVICE_TO_HOST.into()),
        ("hipMemcpyDeviceToDevice", MEMCPY_DEVICE_TO_DEVICE.into()),
        ("hipStreamNonBlocking", STREAM_NON_BLOCKING.into()),
        ("hipStreamCaptureModeRelaxed", STREAM_CAPTURE_MODE_RELAXED.into()),
        ("sizeof(hiprtcResult)", n(size_of::<RtcResult>())),
        ("HIPRTC_SUCCESS", HIPRTC_SUCCESS.into()),
    ]
}

dylib! {
    /// The HIP runtime entry points the rocm backend calls.
    pub struct HipFns {
        fn hipRuntimeGetVersion(version: *mut c_int) -> HipError;
        fn hipDriverGetVersion(version: *mut c_int) -> HipError;
        fn hipGetErrorName(e: HipError) -> *const c_char;
        fn hipGetErrorString(e: HipError) -> *const c_char;
        fn hipGetDeviceCount(count: *mut c_int) -> HipError;
        fn hipGetDeviceProperties(props: *mut DeviceProps, device: c_int) -> HipError;
        fn hipGetDevice(device: *mut c_int) -> HipError;
        fn hipSetDevice(device: c_int) -> HipError;
        fn hipStreamCreateWithFlags(stream: *mut Stream, flags: c_uint) -> HipError;
        fn hipStreamDestroy(stream: Stream) -> HipError;
        fn hipStreamSynchronize(stream: Stream) -> HipError;
        fn hipMalloc(ptr: *mut *mut c_void, bytes: usize) -> HipError;
        fn hipFree(ptr: *mut c_void) -> HipError;
        fn hipMemcpyAsync(dst: *mut c_void, src: *const c_void, bytes: usize, kind: c_int, stream: Stream) -> HipError;
        fn hipMemcpy(dst: *mut c_void, src: *const c_void, bytes: usize, kind: c_int) -> HipError;
        fn hipStreamBeginCapture(stream: Stream, mode: c_int) -> HipError;
        fn hipStreamEndCapture(stream: Stream, graph: *mut Graph) -> HipError;
        fn hipGraphInstantiate(
            exec: *mut GraphExec,
            graph: Graph,
            error_node: *mut *mut c_void,
            log: *mut c_char,
            log_bytes: usize,
        ) -> HipError;
        fn hipGraphLaunch(exec: GraphExec, stream: Stream) -> HipError;
        fn hipGraphExecDestroy(exec: GraphExec) -> HipError;
        fn hipGraphDestroy(graph: Graph) -> HipError;
        fn hipMemcpyPeerAsync(
            dst: *mut c_void,
            dst_device: c_int,
            src: *const c_void,
            src_device: c_int,
            bytes: usize,
            stream: Stream,
        ) -> HipError;
        fn hipMemsetD8Async(dst: *mut c_void, value: c_uchar, count: usize, stream: Stream) -> HipError;
        fn hipModuleLoadData(module: *mut Module, image: *const c_void) -> HipError;
        fn hipModuleUnload(module: Module) -> HipError;
        fn hipModuleGetFunction(f: *mut Function, module: Module, name: *const c_char) -> HipError;
        fn hipModuleLaunchKernel(
            f: Function,
            grid_x: c_uint,
            grid_y: c_uint,
            grid_z: c_uint,
            block_x: c_uint,
            block_y: c_uint,
            block_z: c_uint,
            shared_bytes: c_uint,
            stream: Stream,
            params: *mut *mut c_void,
            extra: *mut *mut c_void,
        ) -> HipError;
    }
}

dylib! {
    /// The hiprtc entry points: compile a program, read its log and code object.
    struct RtcFns {
        fn hiprtcVersion(major: *mut c_int, minor: *mut c_int) -> RtcResult;
        fn hiprtcGetErrorString(r: RtcResult) -> *const c_char;
        fn hiprtcCreateProgram(
            prog: *mut Program,
            source: *const c_char,
            name: *const c_char,
            num_headers: c_int,
            headers: *const *const c_char,
            include_names: *const *const c_char,
        ) -> RtcResult;
        fn hiprtcCompileProgram(prog: Program, num_options: c_int, options: *const *const c_char) -> RtcResult;
        fn hiprtcGetProgramLogSize(prog: Program, size: *mut usize) -> RtcResult;
        fn hiprtcGetProgramLog(prog: Program, log: *mut c_char) -> RtcResult;
        fn hiprtcGetCodeSize(prog: Program, size: *mut usize) -> RtcResult;
        fn hiprtcGetCode(prog: Program, code: *mut c_char) -> RtcResult;
        fn hiprtcDestroyProgram(prog: *mut Program) -> RtcResult;
    }
}

/// A NUL-terminated C string (or array field) as text.
pub fn c_text(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The text of a static C string a library returns (empty for null).
pub(crate) fn static_text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the HIP and hiprtc error-text calls return pointers to static NUL-terminated strings.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The HIP runtime library, its version, and hiprtc (or why it is missing).
pub struct HipLib {
    pub fns: HipFns,
    /// The name the library was found by.
    pub name: String,
    /// Where it was loaded from, as the loader recorded it (the name, where it cannot say).
    pub path: String,
    /// `hipRuntimeGetVersion`.
    pub version: i32,
    pub rtc: Result<Hiprtc, String>,
}

/// hiprtc, found in its own library or in the runtime's.
pub struct Hiprtc {
    fns: RtcFns,
    /// Library and version, e.g. `hiprtc 6.2 (libhiprtc.so.6)`.
    pub describe: String,
}

/// The HIP runtime of this process, loaded at the first call; or why it cannot be loaded.
pub fn library() -> Result<&'static HipLib, String> {
    static LIB: OnceLock<Result<HipLib, String>> = OnceLock::new();
    LIB.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// Where ROCm installs its libraries: `$ROCM_PATH/lib`, then `/opt/rocm/lib`.
fn rocm_dirs() -> Vec<String> {
    let env = std::env::var("ROCM_PATH").ok().filter(|p| !p.trim().is_empty());
    let from_env = env.map(|p| format!("{}/lib", p.trim().trim_end_matches('/')));
    from_env.into_iter().chain(["/opt/rocm/lib".to_string()]).collect()
}

/// The directory of a library path, if the path has one.
fn dir_of(path: &str) -> Option<&str> {
    path.rsplit_once('/').map(|(dir, _)| dir).filter(|d| !d.is_empty())
}

fn load() -> Result<HipLib, String> {
    let majors = (gfx::OLDEST.0..=gfx::NEWEST_MAJOR).rev();
    // The unversioned name last in each place: a development link, which may be of any major.
    let names: Vec<String> =
        majors.map(|m| format!("libamdhip64.so.{m}")).chain(["libamdhip64.so".to_string()]).collect();
    let candidates = dylib::candidates(None, &names, &rocm_dirs());
    let hip = dylib::open("libamdhip64 (the HIP runtime)", "RWO_ROCM_LIB", &candidates)?;
    let fns = HipFns::resolve(&hip.lib).map_err(|e| format!("{}: {e}", hip.name))?;
    let path = dylib::path_of(fns.hipRuntimeGetVersion as *const c_void).unwrap_or_else(|| hip.name.clone());
    let mut version = 0;
    // SAFETY: writes one int.
    let code = unsafe { (fns.hipRuntimeGetVersion)(&mut version) };
    if code != HIP_SUCCESS {
        return Err(format!("{}: hipRuntimeGetVersion failed ({code})", hip.name));
    }
    let rtc = load_hiprtc(&hip, dir_of(&path), gfx::version_parts(version).0);
    Ok(HipLib { fns, name: hip.name, path, version, rtc })
}

/// hiprtc of HIP major `major`: `RWO_HIPRTC_LIB`, else `libhiprtc.so.{major}` beside the
/// runtime (`dir`), by soname or in ROCm's directories, else the runtime's own exports (ROCm 5).
fn load_hiprtc(hip: &Opened, dir: Option<&str>, major: u32) -> Result<Hiprtc, String> {
    let names = dylib::candidates(dir, &[format!("libhiprtc.so.{major}")], &rocm_dirs());
    let forced = std::env::var("RWO_HIPRTC_LIB").is_ok_and(|v| !v.trim().is_empty());
    let (fns, name) = match dylib::open("libhiprtc", "RWO_HIPRTC_LIB", &names) {
        Ok(o) => (RtcFns::resolve(&o.lib).map_err(|e| format!("{}: {e}", o.name))?, o.name),
        // The library the variable names is the one wanted: no other stands in for it.
        Err(alone) if forced => return Err(alone),
        Err(alone) => {
            let own = RtcFns::resolve(&hip.lib).map_err(|e| format!("no hiprtc: {alone}, and {}: {e}", hip.name))?;
            (own, hip.name.clone())
        }
    };
    let (mut major, mut minor) = (0, 0);
    // SAFETY: writes two ints.
    let code = unsafe { (fns.hiprtcVersion)(&mut major, &mut minor) };
    if code != HIPRTC_SUCCESS {
        return Err(format!("{name}: hiprtcVersion failed ({code})"));
    }
    Ok(Hiprtc { fns, describe: format!("hiprtc {major}.{minor} ({name})") })
}

/// Device `ordinal` current on the calling thread while the guard lives; the thread's previous
/// device is current again after it.
pub(crate) struct Bound {
    lib: &'static HipLib,
    previous: Option<c_int>,
}

impl Bound {
    pub(crate) fn new(lib: &'static HipLib, ordinal: c_int) -> std::result::Result<Bound, String> {
        let mut current: c_int = 0;
        // SAFETY: writes one int.
        lib.check("hipGetDevice", unsafe { (lib.fns.hipGetDevice)(&mut current) })?;
        if current == ordinal {
            return Ok(Bound { lib, previous: None });
        }
        // SAFETY: a plain call; `ordinal` is a device the runtime counted.
        lib.check("hipSetDevice", unsafe { (lib.fns.hipSetDevice)(ordinal) })?;
        Ok(Bound { lib, previous: Some(current) })
    }
}

impl Drop for Bound {
    fn drop(&mut self) {
        if let Some(previous) = self.previous {
            // SAFETY: a plain call back to the device the thread had.
            let _ = unsafe { (self.lib.fns.hipSetDevice)(previous) };
        }
    }
}

impl HipLib {
    /// A HIP status as a result whose error says what failed, with HIP's name and text for it.
    pub fn check(&self, what: &str, code: HipError) -> Result<(), String> {
        if code == HIP_SUCCESS {
            return Ok(());
        }
        // SAFETY: plain calls taking a status code.
        let (name, text) = unsafe { ((self.fns.hipGetErrorName)(code), (self.fns.hipGetErrorString)(code)) };
        Err(format!("{what}: {} ({})", static_text(name), static_text(text)))
    }

    /// The runtime and driver versions, and where the library came from.
    pub fn describe(&self) -> String {
        let mut driver = 0;
        // SAFETY: writes one int.
        let driver = match unsafe { (self.fns.hipDriverGetVersion)(&mut driver) } {
            HIP_SUCCESS => format!(", driver {driver}"),
            _ => String::new(),
        };
        format!("HIP {}{driver} ({})", gfx::version_text(self.version), self.path)
    }

    /// The HIP majors other than this runtime's whose `libamdhip64.so.N` is loaded now.
    fn other_runtimes(&self) -> Vec<u32> {
        let own = gfx::version_parts(self.version).0;
        let majors = gfx::OLDEST.0..=gfx::NEWEST_MAJOR;
        majors.filter(|&m| m != own && dylib::loaded(&format!("libamdhip64.so.{m}"))).collect()
    }

    /// Opens a ROCm library of `sonames` (best first; the ones built for this runtime's major) as
    /// `env_var` names it, else beside this runtime, then by soname, then in ROCm's directories.
    /// Refused when it brings a second HIP runtime into the process (a library built for another
    /// ROCm major: the two would not share devices, memory or streams).
    pub(crate) fn open_library(&self, what: &str, env_var: &str, sonames: &[String]) -> Result<Opened, String> {
        let before = self.other_runtimes();
        let candidates = dylib::candidates(dir_of(&self.path), sonames, &rocm_dirs());
        let opened = dylib::open(what, env_var, &candidates)?;
        if let Some(m) = self.other_runtimes().into_iter().find(|m| !before.contains(m)) {
            return Err(format!(
                "{} loads libamdhip64.so.{m}, a second HIP runtime beside {} (HIP {}): set {env_var} to the {what} of \
                 that ROCm",
                opened.name,
                self.path,
                gfx::version_text(self.version)
            ));
        }
        Ok(opened)
    }

    /// The number of devices; `hipErrorNoDevice` counts none.
    pub fn device_count(&self) -> Result<usize, String> {
        let mut n: c_int = 0;
        // SAFETY: writes one int.
        match unsafe { (self.fns.hipGetDeviceCount)(&mut n) } {
            HIP_ERROR_NO_DEVICE => Ok(0),
            code => self.check("hipGetDeviceCount", code).map(|()| n.max(0) as usize),
        }
    }

    /// The properties of device `ordinal`.
    pub fn properties(&self, ordinal: c_int) -> Result<Box<DeviceProps>, String> {
        // SAFETY: numbers, char arrays and two pointers: all-zero bytes are a valid value.
        let mut props: Box<DeviceProps> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: `props` is the whole struct this entry point fills (size asserted above).
        let code = unsafe { (self.fns.hipGetDeviceProperties)(&mut *props, ordinal) };
        self.check(&format!("hipGetDeviceProperties({ordinal})"), code)?;
        Ok(props)
    }
}

impl Hiprtc {
    /// Compiles `source` (named `name`; `headers` are (include name, text) pairs) for target id
    /// `arch` with `options`, into a code object. Needs no GPU.
    pub fn compile(
        &self,
        name: &str,
        source: &str,
        headers: &[(&str, &str)],
        arch: &str,
        options: &[&str],
    ) -> Result<Vec<u8>, String> {
        // hiprtc runs one compile at a time anyway (comgr locks); this keeps older builds safe.
        static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
        let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let text = |s: &str| CString::new(s).map_err(|_| format!("{name}: a NUL in {s:.20}..."));
        let (src, cname) = (text(source)?, text(name)?);
        let texts: Vec<CString> = headers.iter().map(|(_, t)| text(t)).collect::<Result<_, _>>()?;
        let names: Vec<CString> = headers.iter().map(|(n, _)| text(n)).collect::<Result<_, _>>()?;
        let mut opts: Vec<CString> = options.iter().map(|o| text(o)).collect::<Result<_, _>>()?;
        opts.push(text(&format!("--offload-arch={arch}"))?);
        let ptrs = |v: &[CString]| v.iter().map(|s| s.as_ptr()).collect::<Vec<*const c_char>>();
        let (texts, names, opts) = (ptrs(&texts), ptrs(&names), ptrs(&opts));
        let mut prog: Program = std::ptr::null_mut();
        // SAFETY: every pointer is to a NUL-terminated string that outlives the program.
        let created = unsafe {
            (self.fns.hiprtcCreateProgram)(
                &mut prog,
                src.as_ptr(),
                cname.as_ptr(),
                texts.len() as c_int,
                texts.as_ptr(),
                names.as_ptr(),
            )
        };
        self.check(&format!("hiprtcCreateProgram({name})"), created)?;
        // SAFETY: `prog` is live; the options are NUL-terminated strings.
        let compiled = unsafe { (self.fns.hiprtcCompileProgram)(prog, opts.len() as c_int, opts.as_ptr()) };
        let out = if compiled == HIPRTC_SUCCESS {
            self.code(prog)
        } else {
            let msg = self.check(&format!("hiprtc compiling {name} for {arch}"), compiled).err().unwrap_or_default();
            Err(format!("{msg}:\n{}", self.log(prog)))
        };
        // SAFETY: destroys the live program once.
        let _ = unsafe { (self.fns.hiprtcDestroyProgram)(&mut prog) };
        out
    }

    fn check(&self, what: &str, code: RtcResult) -> Result<(), String> {
        if code == HIPRTC_SUCCESS {
            return Ok(());
        }
        // SAFETY: a plain call taking a status code.
        Err(format!("{what}: {}", static_text(unsafe { (self.fns.hiprtcGetErrorString)(code) })))
    }

    /// The compile log of a live program (empty if it cannot be read).
    fn log(&self, prog: Program) -> String {
        let mut size = 0usize;
        // SAFETY: `prog` is live (the caller's); `log` has room for the `size` bytes hiprtc writes.
        unsafe {
            if (self.fns.hiprtcGetProgramLogSize)(prog, &mut size) != HIPRTC_SUCCESS || size == 0 {
                return String::new();
            }
            let mut log = vec![0 as c_char; size];
            if (self.fns.hiprtcGetProgramLog)(prog, log.as_mut_ptr()) != HIPRTC_SUCCESS {
                return String::new();
            }
            c_text(&log).trim_end().to_string()
        }
    }

    /// The code object of a live, compiled program.
    fn code(&self, prog: Program) -> Result<Vec<u8>, String> {
        let mut size = 0usize;
        // SAFETY: `prog` is live (the caller's); writes one size.
        self.check("hiprtcGetCodeSize", unsafe { (self.fns.hiprtcGetCodeSize)(prog, &mut size) })?;
        let mut code = vec![0u8; size];
        // SAFETY: `code` has room for the `size` bytes hiprtc writes.
        self.check("hiprtcGetCode", unsafe { (self.fns.hiprtcGetCode)(prog, code.as_mut_ptr() as *mut c_char) })?;
        Ok(code)
    }
}
