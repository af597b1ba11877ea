//! The vendor runtime under the native backend: the few calls that differ between HIP (`rocm.rs`)
//! and CUDA (cudarc). Everything above it (layouts, dtype dispatch, grid sizing, argument
//! packing, the allocator and the module cache) is written once in [`super`].

use super::blas::Blas;
use super::dnn::Dnn;
use super::ptr::DevicePtr;
use crate::spec::Family;
use crate::{BackendKind, Error, Result};
use std::borrow::Cow;
use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::ThreadId;

/// Whether `RWO_NATIVE_LIBS` lets the native backend load vendor library `name` (`blas`,
/// `dnn`): unset or `all` allows every one, `none` none, else a comma-separated list. A library
/// left out is absent: its ops run in our kernels (or, for a BLAS, on the cpu reference).
pub fn library_allowed(name: &str) -> std::result::Result<(), String> {
    let list = std::env::var("RWO_NATIVE_LIBS").unwrap_or_default();
    let list = list.trim();
    if list.is_empty() || list == "all" || list.split(',').any(|l| l.trim() == name) {
        Ok(())
    } else {
        Err(format!("left out by RWO_NATIVE_LIBS={list}"))
    }
}

/// The device ordinal environment variable `var` (`RWO_CUDA_DEVICE`, `RWO_ROCM_DEVICE`) names,
/// if set.
pub fn requested_ordinal(var: &str) -> std::result::Result<Option<usize>, String> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => {
            v.trim().parse().map(Some).map_err(|_| format!("{var}={v} is not a device number"))
        }
        _ => Ok(None),
    }
}

/// The thread capturing a runtime's work into a graph, if any (one at a time per device): its
/// work goes to the capture's own stream and libraries, every other thread's to the main ones,
/// so a capture records the capturing thread's work only.
#[derive(Default)]
pub struct Capturer {
    active: AtomicBool,
    thread: Mutex<Option<ThreadId>>,
}

impl Capturer {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<ThreadId>> {
        self.thread.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the calling thread is capturing (one load when nobody is).
    pub fn is_mine(&self) -> bool {
        self.active.load(Ordering::Acquire) && *self.lock() == Some(std::thread::current().id())
    }

    /// Makes the calling thread the capturer, unless a capture is under way.
    pub fn claim(&self) -> Result<()> {
        let mut t = self.lock();
        if t.is_some() {
            return Err(Error::Capture { msg: "a capture is already under way on this device".into() });
        }
        *t = Some(std::thread::current().id());
        self.active.store(true, Ordering::Release);
        Ok(())
    }

    /// The capture ended.
    pub fn release(&self) {
        *self.lock() = None;
        self.active.store(false, Ordering::Release);
    }
}

/// What a runtime says about its device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device's name.
    pub name: String,
    /// `gfx90a`, `sm_90`: what code objects are built for.
    pub arch: String,
    /// Threads of a warp (wavefront): 32 on NVIDIA, 32 or 64 on AMD.
    pub warp_size: u32,
    /// Multiprocessors (compute units).
    pub multiprocessors: u32,
    /// Device memory, in bytes.
    pub total_memory: u64,
    /// Runtime and driver versions, as the vendor prints them.
    pub versions: String,
}

/// One device and one in-order stream of a vendor runtime. All work of a backend goes to that
/// stream, so a buffer released on the host may be handed to later work at once: the stream
/// orders the old readers before the new writers.
pub trait Runtime: Send + Sync + Sized + 'static {
    /// The backend kind this runtime implements.
    const KIND: BackendKind;
    /// A loaded code object.
    type Module: Send + Sync;
    /// A kernel of a loaded module; valid while the module is.
    type Function: Copy + Send + Sync;
    /// The stream's work recorded by a capture, ready to launch again.
    type Graph: Send + Sync;

    /// What the runtime says about its device.
    fn info(&self) -> &DeviceInfo;

    /// The driver's ordinal of the device.
    fn ordinal(&self) -> usize;

    /// The stream all work goes to, as the vendor's handle (what NCCL and RCCL queue on).
    fn raw_stream(&self) -> *mut c_void;

    /// `f` run with this device current on the calling thread (what a library call that takes
    /// the current device, as `ncclCommInitRank`, needs).
    fn on_device<T>(&self, f: impl FnOnce() -> T) -> Result<T>;

    /// `bytes` (> 0) of device memory.
    fn alloc(&self, bytes: usize) -> Result<DevicePtr>;

    /// Returns memory from [`Runtime::alloc`].
    ///
    /// # Safety
    /// `ptr` came from `alloc` on this runtime, is not freed yet, and no later work uses it.
    unsafe fn free(&self, ptr: DevicePtr) -> Result<()>;

    /// Copies host bytes to the device, ordered on the stream; `src` may be reused on return.
    ///
    /// # Safety
    /// `dst .. dst + src.len()` lies inside one allocation of this runtime.
    unsafe fn htod(&self, src: &[u8], dst: DevicePtr) -> Result<()>;

    /// Copies device bytes to the host after all earlier work on the stream; waits for it.
    ///
    /// # Safety
    /// `src .. src + dst.len()` lies inside one allocation of this runtime.
    unsafe fn dtoh(&self, src: DevicePtr, dst: &mut [u8]) -> Result<()>;

    /// Copies `bytes` between (non-overlapping) device ranges, ordered on the stream.
    ///
    /// # Safety
    /// Both ranges lie inside allocations of this runtime.
    unsafe fn dtod(&self, src: DevicePtr, dst: DevicePtr, bytes: usize) -> Result<()>;

    /// Copies `bytes` from `src`, on `from`'s device, to `dst` on this one: after all work queued
    /// on `from` so far, and done when this returns (`src` may be reused at once).
    ///
    /// # Safety
    /// Each range lies inside an allocation of its runtime.
    unsafe fn copy_peer(&self, from: &Self, src: DevicePtr, dst: DevicePtr, bytes: usize) -> Result<()>;

    /// Sets `bytes` bytes to `value`, ordered on the stream.
    ///
    /// # Safety
    /// The range lies inside an allocation of this runtime.
    unsafe fn memset(&self, dst: DevicePtr, value: u8, bytes: usize) -> Result<()>;

    /// The code object of a family's kernels for this device (`hip/<family>.hip`, compiled
    /// ahead of time or now).
    fn code_object(&self, family: Family) -> Result<Cow<'static, [u8]>>;

    /// Whether `family`'s code object is compiled now (none was built ahead of time for this
    /// device), so that compiling only the part a kernel needs saves time (`NativeBackend::function`).
    fn compiles(&self, family: Family) -> bool;

    /// The code object of `source`, a kernel generated at run time (a fused elementwise
    /// program) named `name`: compiled as the families are (with `hip/common.h`, the same
    /// flags) and cached on disk by its text.
    fn compile(&self, name: &str, source: &str) -> Result<Vec<u8>>;

    /// Loads a code object.
    fn load_module(&self, image: &[u8]) -> Result<Self::Module>;

    /// The kernel `name` of a loaded module.
    fn function(&self, module: &Self::Module, name: &str) -> Result<Self::Function>;

    /// Queues `f` on the stream over `grid` blocks of `block` threads.
    ///
    /// # Safety
    /// `args` point at values laid out as `f`'s parameters, and every device address they hold
    /// stays valid for the ranges the kernel touches until the kernel has run.
    unsafe fn launch(
        &self,
        f: Self::Function,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        args: &mut [*mut c_void],
    ) -> Result<()>;

    /// Waits for all work queued on the stream.
    fn synchronize(&self) -> Result<()>;

    /// Starts recording the calling thread's work into a graph instead of running it, on a
    /// stream of its own (relaxed mode: memory may be allocated meanwhile); other threads'
    /// work runs as before. One capture at a time ([`Capturer`]).
    fn begin_capture(&self) -> Result<()>;

    /// Whether the calling thread is capturing.
    fn capturing(&self) -> bool;

    /// Ends the calling thread's capture: its graph, instantiated.
    fn end_capture(&self) -> Result<Self::Graph>;

    /// Queues graph `g` on the main stream.
    fn launch_graph(&self, g: &Self::Graph) -> Result<()>;

    /// Copies host bytes to the device at once, outside the stream (an upload inside a
    /// capture, which the stream would record instead of run).
    ///
    /// # Safety
    /// `dst .. dst + src.len()` lies inside one allocation of this runtime that no queued work
    /// uses.
    unsafe fn htod_now(&self, src: &[u8], dst: DevicePtr) -> Result<()>;

    /// The device's BLAS, bound to the stream, or why there is none (loaded at first use; the
    /// ops that need it then run elsewhere, see `blas.rs`).
    fn blas(&self) -> std::result::Result<&dyn Blas, &str> {
        Err("no BLAS library is bound on this runtime yet")
    }

    /// The device's DNN library, bound to the stream, or why there is none (loaded at first
    /// use; the ops that would use it then run in our kernels, see `dnn.rs`).
    fn dnn(&self) -> std::result::Result<&dyn Dnn, &str> {
        Err("no DNN library is bound on this runtime yet")
    }
}
