//! The ROCm runtime (feature `rocm`): the native backend on AMD GPUs through rocm-rs. The
//! kernels are the code objects build.rs compiled with hipcc for each target of
//! `RWO_GFX_TARGETS`, embedded in the binary; the device's `gcnArchName` picks one.
//!
//! rocm-rs traps kept away here: its `Stream` is `Clone` but destroys the stream on drop (ours
//! is never cloned), nothing of it is `Send`/`Sync` (wrapped below), `DeviceProperties` has no
//! `gcnArchName` (read through the raw ffi), and `hipFree` synchronises (the allocator above
//! caches blocks).

use super::NativeBackend;
use super::runtime::{DeviceInfo, DevicePtr, Runtime};
use crate::spec::Family;
use crate::{BackendKind, Error, Result};
use rocm_rs::hip::{self, Dim3, Function, Module, Stream, bindings, ffi};
use std::borrow::Cow;
use std::ffi::{c_char, c_void};

/// The code objects build.rs made: `TARGETS` and `OBJECTS` (family, target, bytes).
mod objects {
    include!(concat!(env!("OUT_DIR"), "/hip_objects.rs"));
}

/// The native backend on a ROCm device.
pub type RocmBackend = NativeBackend<Hip>;

fn hip_err(what: &str, e: hip::Error) -> Error {
    Error::Backend { backend: BackendKind::Rocm, msg: format!("{what}: {} ({})", e.name(), e.description()) }
}

/// A raw HIP status as a result.
fn check(what: &str, code: ffi::hipError_t) -> Result<()> {
    if code == ffi::hipError_t_hipSuccess { Ok(()) } else { Err(hip_err(what, hip::Error::new(code))) }
}

/// Device 0 of the HIP runtime, with one stream for all work.
pub struct Hip {
    stream: Stream,
    info: DeviceInfo,
}

// SAFETY: the HIP runtime is thread-safe; the stream handle is only passed to HIP calls and is
// never cloned, so it is destroyed once, when `Hip` drops.
unsafe impl Send for Hip {}
// SAFETY: as for Send; `&Hip` only queues work and reads immutable info.
unsafe impl Sync for Hip {}

/// A loaded code object.
pub struct HipModule(Module);

// SAFETY: a module handle may be used from any thread; it is unloaded once, on drop.
unsafe impl Send for HipModule {}
// SAFETY: as for Send; the module is only read after loading.
unsafe impl Sync for HipModule {}

/// A kernel of a loaded module.
#[derive(Clone, Copy)]
pub struct HipFunction(bindings::hipFunction_t);

// SAFETY: a function handle is immutable and valid on any thread while its module is loaded.
unsafe impl Send for HipFunction {}
// SAFETY: as for Send.
unsafe impl Sync for HipFunction {}

/// A NUL-terminated C string field as text.
fn c_text(field: &[c_char]) -> String {
    let bytes: Vec<u8> = field.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

impl Hip {
    /// Device 0, or why there is none: no device, or no code object for its architecture.
    pub fn open() -> std::result::Result<Hip, String> {
        let count = hip::device_count().map_err(|e| format!("no HIP device: {} ({})", e.name(), e.description()))?;
        if count < 1 {
            return Err("the HIP runtime sees no device".into());
        }
        let device = hip::Device::new(0).map_err(|e| format!("device 0: {}", e.name()))?;
        device.set_current().map_err(|e| format!("hipSetDevice: {}", e.name()))?;
        // SAFETY: a plain struct of numbers and char arrays, filled in by the call.
        let mut props: ffi::hipDeviceProp_tR0600 = unsafe { std::mem::zeroed() };
        // SAFETY: `props` is the struct this entry point fills.
        check("hipGetDeviceProperties", unsafe { ffi::hipGetDevicePropertiesR0600(&mut props, 0) })
            .map_err(|e| e.to_string())?;
        // `gfx90a:sramecc+:xnack-`: the code objects are built for the part before the features.
        let full_arch = c_text(&props.gcnArchName);
        let arch = full_arch.split(':').next().unwrap_or_default().to_string();
        if !objects::TARGETS.contains(&arch.as_str()) {
            return Err(format!(
                "device architecture {full_arch} has no code objects in this build (built for {}); rebuild with \
                 RWO_GFX_TARGETS={arch}",
                objects::TARGETS.join(", ")
            ));
        }
        let runtime = hip::runtime_version().map_err(|e| e.name().to_string())?;
        let driver = hip::driver_version().map_err(|e| e.name().to_string())?;
        let info = DeviceInfo {
            name: c_text(&props.name),
            arch,
            warp_size: props.warpSize as u32,
            multiprocessors: props.multiProcessorCount as u32,
            total_memory: props.totalGlobalMem as u64,
            versions: format!(
                "HIP runtime {runtime}, driver {driver}, code objects for {}",
                objects::TARGETS.join(" ")
            ),
        };
        let stream = device.get_stream().map_err(|e| format!("hipStreamCreate: {}", e.name()))?;
        Ok(Hip { stream, info })
    }

    fn stream(&self) -> ffi::hipStream_t {
        self.stream.as_raw()
    }

    fn copy(
        &self,
        what: &str,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
        kind: bindings::hipMemcpyKind,
    ) -> Result<()> {
        // SAFETY: the callers' contracts: both ranges lie in live memory of the right kind.
        check(what, unsafe { ffi::hipMemcpyAsync(dst, src, bytes, kind, self.stream()) })
    }
}

fn dev(p: DevicePtr) -> *mut c_void {
    p.0 as usize as *mut c_void
}

impl Runtime for Hip {
    const KIND: BackendKind = BackendKind::Rocm;
    type Module = HipModule;
    type Function = HipFunction;

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn alloc(&self, bytes: usize) -> Result<DevicePtr> {
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: writes one pointer.
        check("hipMalloc", unsafe { ffi::hipMalloc(&mut ptr, bytes) })?;
        Ok(DevicePtr(ptr as usize as u64))
    }

    unsafe fn free(&self, ptr: DevicePtr) -> Result<()> {
        // SAFETY: the caller's contract.
        check("hipFree", unsafe { ffi::hipFree(dev(ptr)) })
    }

    unsafe fn htod(&self, src: &[u8], dst: DevicePtr) -> Result<()> {
        let kind = ffi::hipMemcpyKind_hipMemcpyHostToDevice;
        self.copy("hipMemcpyAsync (to device)", dev(dst), src.as_ptr() as *const c_void, src.len(), kind)?;
        // HIP does not promise, as CUDA does, that a copy from pageable memory has read `src`
        // when it returns; `src` may be freed once this does.
        self.synchronize()
    }

    unsafe fn dtoh(&self, src: DevicePtr, dst: &mut [u8]) -> Result<()> {
        let kind = ffi::hipMemcpyKind_hipMemcpyDeviceToHost;
        self.copy("hipMemcpyAsync (to host)", dst.as_mut_ptr() as *mut c_void, dev(src), dst.len(), kind)?;
        self.synchronize()
    }

    unsafe fn dtod(&self, src: DevicePtr, dst: DevicePtr, bytes: usize) -> Result<()> {
        self.copy("hipMemcpyAsync (on device)", dev(dst), dev(src), bytes, ffi::hipMemcpyKind_hipMemcpyDeviceToDevice)
    }

    unsafe fn memset(&self, dst: DevicePtr, value: u8, bytes: usize) -> Result<()> {
        // SAFETY: the caller's contract.
        check("hipMemsetD8Async", unsafe { bindings::hipMemsetD8Async(dev(dst), value, bytes, self.stream()) })
    }

    fn code_object(&self, family: Family) -> Result<Cow<'static, [u8]>> {
        let found = objects::OBJECTS.iter().find(|(f, t, _)| *f == family.name() && *t == self.info.arch);
        found.map(|(_, _, bytes)| Cow::Borrowed(*bytes)).ok_or_else(|| Error::Backend {
            backend: BackendKind::Rocm,
            msg: format!(
                "no code object for {family} on {} (built for {})",
                self.info.arch,
                objects::TARGETS.join(", ")
            ),
        })
    }

    fn load_module(&self, image: &[u8]) -> Result<HipModule> {
        Module::load_data(image).map(HipModule).map_err(|e| hip_err("hipModuleLoadData", e))
    }

    fn function(&self, module: &HipModule, name: &str) -> Result<HipFunction> {
        if name.contains('\0') {
            return Err(hip_err("kernel name with a NUL", hip::Error::new(ffi::hipError_t_hipErrorInvalidValue)));
        }
        let f = module.0.get_function(name).map_err(|e| hip_err("hipModuleGetFunction", e))?;
        Ok(HipFunction(f.as_raw()))
    }

    unsafe fn launch(
        &self,
        f: HipFunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        // SAFETY: `f` came from a module the backend keeps loaded.
        let function = unsafe { Function::from_raw(f.0) };
        let (g, b) = (Dim3::new_3d(grid[0], grid[1], grid[2]), Dim3::new_3d(block[0], block[1], block[2]));
        function.launch(g, b, shared_bytes, Some(&self.stream), args).map_err(|e| hip_err("hipModuleLaunchKernel", e))
    }

    fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(|e| hip_err("hipStreamSynchronize", e))
    }
}

impl NativeBackend<Hip> {
    /// Device 0 of the HIP runtime, or why it cannot be used here.
    pub fn open() -> std::result::Result<RocmBackend, String> {
        Hip::open().map(NativeBackend::new)
    }
}
