//! The native backend: our HIP kernels (`hip/*.hip`), written once and generic over a small
//! vendor [`Runtime`]: ROCm through the HIP runtime loaded at run time (`rocm.rs`, feature
//! `rocm`) and the very same sources on NVIDIA through NVRTC (`cuda.rs`, feature `cuda`).
//!
//! This module holds what every runtime shares: storages on a caching allocator, the module and
//! function cache, and the launch helpers; `kernel.rs` holds layout merging, argument packing
//! and grid sizing; one file per op family dispatches that family's kernels.

mod alloc;
mod attention;
pub mod blas;
mod capture;
// Also the wgpu backend's pipeline cache (src/wgpu/pipeline_cache.rs), wherever there is a disk.
#[cfg(not(target_family = "wasm"))]
pub(crate) mod cache;
mod conv;
mod copy;
pub mod dnn;
#[cfg(any(test, feature = "rocm", feature = "cuda"))]
mod dylib;
mod elementwise;
mod fused;
mod gate;
#[cfg(any(test, feature = "rocm"))]
mod gfx;
#[cfg(feature = "rocm")]
mod hip_api;
mod index;
pub(crate) mod kernel;
mod matmul;
mod matvec;
#[cfg(any(feature = "cuda", feature = "rocm"))]
pub(crate) mod nccl;
mod nn;
mod pool;
mod ptr;
mod quant;
mod random;
mod reduce;
mod render;
pub mod runtime;
mod sort;
mod units;
mod upsample;
mod usage;

#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "rocm")]
pub mod rocm;

use crate::backend::{BackendStorage, Memory, Readback};
use crate::expr::program::Program;
use crate::spec::Family;
use crate::spec::index::IndexOp;
use crate::{BackendKind, CpuStorage, DType, Error, Layout, Result};
use alloc::Allocator;
pub use alloc::PoolStats;
pub use elementwise::where_kernel_name;
use foldhash::{HashMap, HashMapExt};
use kernel::{Args, Part};
pub use matvec::matvec_samples;
pub use ptr::DevicePtr;
pub use render::elementwise_ops;
pub use runtime::{DeviceInfo, Runtime};
use std::borrow::Cow;
use std::sync::{Arc, Mutex, OnceLock};
pub use units::{Unit, unit_of, unit_sources};

/// The header every HIP source includes.
pub const HIP_COMMON: &str = include_str!("../../hip/common.h");

/// The HIP file of each family that has native kernels (matmul and, in part, conv go through
/// the vendor libraries).
const HIP_FILES: &[(Family, &str)] = &[
    (Family::Elementwise, include_str!("../../hip/elementwise.hip")),
    (Family::Copy, include_str!("../../hip/copy.hip")),
    (Family::Index, include_str!("../../hip/index.hip")),
    (Family::Random, include_str!("../../hip/random.hip")),
    (Family::Reduce, include_str!("../../hip/reduce.hip")),
    (Family::Sort, include_str!("../../hip/sort.hip")),
    (Family::Upsample, include_str!("../../hip/upsample.hip")),
    (Family::Nn, include_str!("../../hip/nn.hip")),
    (Family::Conv, include_str!("../../hip/conv.hip")),
    (Family::Pool, include_str!("../../hip/pool.hip")),
    (Family::Attention, include_str!("../../hip/attention.hip")),
    (Family::Quant, include_str!("../../hip/quant.hip")),
];

/// Counters through which the last block of a group finds itself (a product split along K, the
/// key ranges of a decode step): the most groups one launch may count on.
pub(crate) const COUNTERS: usize = 4096;

/// Where `hip/elementwise.hip` includes its generated functors and instantiation lines.
const ELEMENTWISE_OPS: &str = "#include \"elementwise_ops.h\"";

/// The HIP source of `family` as the runtimes compile it, if it has one: its file, the
/// elementwise family's with the expression table rendered in place of `elementwise_ops.h`
/// (the copy of that rendering on disk is for ahead-of-time builds, and checked by the suite).
pub fn hip_source(family: Family) -> Option<&'static str> {
    let file = HIP_FILES.iter().find(|(f, _)| *f == family).map(|(_, s)| *s)?;
    if family != Family::Elementwise {
        return Some(file);
    }
    static RENDERED: OnceLock<String> = OnceLock::new();
    Some(RENDERED.get_or_init(|| file.replace(ELEMENTWISE_OPS, &render::elementwise_ops())))
}

/// Every family with native kernels and its source, as [`hip_source`] gives it.
pub fn hip_sources() -> Vec<(Family, &'static str)> {
    HIP_FILES.iter().filter_map(|&(f, _)| hip_source(f).map(|s| (f, s))).collect()
}

/// A module built at first use (or why it failed to build), shared so that it builds outside
/// the kernels' lock.
type Once<T> = Arc<OnceLock<Result<T>>>;

/// A module built for one kernel, and that kernel.
type Built<R> = (<R as Runtime>::Module, <R as Runtime>::Function);

/// Loaded modules, one per family, and the functions found in them; the fused elementwise
/// programs' kernels (the strided walk, the vector walk); the matrix-vector kernels per
/// epilogue program.
struct Kernels<R: Runtime> {
    functions: HashMap<String, R::Function>,
    /// Per family, or per unit of a family compiled a unit at a time.
    modules: HashMap<(Family, Option<&'static str>), Once<R::Module>>,
    programs: HashMap<Program, [Once<Built<R>>; 2]>,
    matvecs: HashMap<Program, HashMap<matvec::Kernel, Once<Built<R>>>>,
}

struct Inner<R: Runtime> {
    kernels: Mutex<Kernels<R>>,
    alloc: Allocator,
    /// The DNN library's algorithm per convolution (see `dnn.rs`).
    dnn_cache: dnn::AlgoCache,
    /// Calls per path (library or our kernels), for `info()`.
    library_use: usage::LibraryUse,
    /// `library_use`'s launches when the capture under way started.
    capture_start: std::sync::atomic::AtomicU64,
    /// The kernels' counters ([`COUNTERS`] u32, zero between launches), made at first use.
    counters: OnceLock<Result<DevicePtr>>,
    /// Last: dropped after the modules and the cached blocks that need it.
    rt: R,
}

impl<R: Runtime> Drop for Inner<R> {
    fn drop(&mut self) {
        // Nothing can report an error from here; the device reclaims memory at exit anyway.
        gate::alone(|| {
            let _ = self.alloc.trim(&self.rt);
            if let Some(Ok(counters)) = self.counters.get() {
                // SAFETY: from `rt.alloc`, freed once; the stream's work that used it is done or
                // abandoned with the backend.
                let _ = unsafe { self.rt.free(*counters) };
            }
        })
    }
}

/// The native backend over runtime `R`: one device, one stream. Cheap to clone.
pub struct NativeBackend<R: Runtime>(Arc<Inner<R>>);

impl<R: Runtime> Clone for NativeBackend<R> {
    fn clone(&self) -> Self {
        NativeBackend(self.0.clone())
    }
}

impl<R: Runtime> std::fmt::Debug for NativeBackend<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// A tensor buffer in device memory; its block goes back to the backend's cache on drop.
pub struct NativeStorage<R: Runtime> {
    ptr: DevicePtr,
    /// The block's size class (0 for an empty storage, which owns no block).
    class: usize,
    /// The block's serial in the allocator (see `crate::pins`).
    serial: u64,
    dtype: DType,
    len: usize,
    owner: Arc<Inner<R>>,
}

impl<R: Runtime> NativeStorage<R> {
    /// The device address of element `i`.
    pub(crate) fn at(&self, i: usize) -> DevicePtr {
        self.ptr.offset(i * self.dtype.size_in_bytes())
    }

    fn bytes(&self) -> usize {
        self.len * self.dtype.size_in_bytes()
    }
}

impl<R: Runtime> Drop for NativeStorage<R> {
    fn drop(&mut self) {
        if self.class > 0 {
            self.owner.alloc.release(self.ptr, self.class, self.serial);
        }
    }
}

impl<R: Runtime> std::fmt::Debug for NativeStorage<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}Storage[{} x {}]", R::KIND, self.len, self.dtype)
    }
}

impl<R: Runtime> BackendStorage for NativeStorage<R> {
    fn dtype(&self) -> DType {
        self.dtype
    }
    fn len(&self) -> usize {
        self.len
    }
}

impl<R: Runtime> NativeBackend<R> {
    /// The backend on a runtime's device.
    pub fn new(rt: R) -> Self {
        let kernels = Kernels {
            functions: HashMap::new(),
            modules: HashMap::new(),
            programs: HashMap::new(),
            matvecs: HashMap::new(),
        };
        NativeBackend(Arc::new(Inner {
            kernels: Mutex::new(kernels),
            alloc: Allocator::default(),
            dnn_cache: Default::default(),
            library_use: Default::default(),
            capture_start: Default::default(),
            counters: OnceLock::new(),
            rt,
        }))
    }

    /// The kernels' counters (see [`COUNTERS`]), zeroed once: each launch leaves them at zero.
    /// Made at first use, and zeroed then and there (outside the stream: also during a capture,
    /// whose graph runs later).
    pub(crate) fn counters(&self) -> Result<DevicePtr> {
        let rt = &self.0.rt;
        let made = self.0.counters.get_or_init(|| {
            let zeros = [0u8; COUNTERS * 4];
            let p = rt.alloc(zeros.len())?;
            // SAFETY: `p` holds these bytes; no work uses it before the copy is done.
            unsafe { rt.htod_now(&zeros, p)? };
            Ok(p)
        });
        made.clone()
    }

    /// The vendor runtime underneath.
    pub fn runtime(&self) -> &R {
        &self.0.rt
    }

    /// Device memory held by storages and by the allocator's cache.
    pub fn memory_stats(&self) -> PoolStats {
        self.0.alloc.stats()
    }

    /// A new storage of `len` elements; contents unspecified.
    pub(crate) fn storage(&self, dtype: DType, len: usize) -> Result<NativeStorage<R>> {
        let bytes = len.checked_mul(dtype.size_in_bytes()).filter(|&b| b <= isize::MAX as usize);
        let bytes = bytes.ok_or_else(|| Error::LimitExceeded {
            backend: R::KIND,
            what: format!("{len} elements of {dtype}"),
            needed: (len as u64).saturating_mul(dtype.size_in_bytes() as u64),
            limit: isize::MAX as u64,
        })?;
        let (ptr, class, serial) = if bytes == 0 {
            (DevicePtr(0), 0, 0)
        } else {
            // The vendor's out-of-memory text does not say how much was asked for.
            self.0.alloc.alloc(&self.0.rt, bytes).map_err(|e| match e {
                Error::Backend { backend, msg } => {
                    Error::Backend { backend, msg: format!("{msg} ({bytes} bytes asked for)") }
                }
                e => e,
            })?
        };
        Ok(NativeStorage { ptr, class, serial, dtype, len, owner: self.0.clone() })
    }

    /// `len` elements from element `offset` of `src`, a storage of `from` (another device of
    /// this runtime, or this one), in a new storage here; done when this returns.
    #[cfg(any(feature = "cuda", feature = "rocm"))]
    pub(crate) fn copy_from_peer(
        &self,
        from: &Self,
        src: &NativeStorage<R>,
        offset: usize,
        len: usize,
    ) -> Result<NativeStorage<R>> {
        let out = self.storage(src.dtype, len)?;
        if len > 0 {
            // SAFETY: `src` holds `offset + len` elements (the caller's tensor lies inside it) and
            // `out` holds `len`; both stay alive for the call, which waits for the copy.
            unsafe { self.0.rt.copy_peer(&from.0.rt, src.at(offset), out.ptr, len * src.dtype.size_in_bytes())? };
        }
        Ok(out)
    }

    /// The function `name` of `family`'s module, loading the module at first use. Where the
    /// runtime compiles the family now, the module is `name`'s unit alone (`units.rs`: an op's
    /// kernels for one dtype, seconds where the whole family takes NVRTC a minute or more).
    ///
    /// Modules build outside the kernels' lock: meanwhile other threads launch what is built and
    /// build other modules; a second thread asking for the module being built waits for it. A
    /// module that failed to build stays failed: no slow recompilation on every op.
    fn function(&self, family: Family, name: &str) -> Result<R::Function> {
        let rt = &self.0.rt;
        let (unit, once) = {
            let mut k = self.0.kernels.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(&f) = k.functions.get(name) {
                return Ok(f);
            }
            let unit = rt.compiles(family).then(|| unit_of(family, name)).flatten();
            (unit, k.modules.entry((family, unit.map(|(u, _)| u.as_str()))).or_default().clone())
        };
        let module = once.get_or_init(|| {
            let image = match unit {
                Some((u, source)) => rt.compile(&format!("{family}_{u}.hip"), source).map(Cow::Owned),
                None => rt.code_object(family),
            };
            image.and_then(|image| rt.load_module(&image))
        });
        let module = module.as_ref().map_err(Clone::clone)?;
        let f = rt.function(module, name).map_err(|e| self.error(format!("kernel {name} of {family}: {e}")))?;
        self.0.kernels.lock().unwrap_or_else(|e| e.into_inner()).functions.insert(name.to_string(), f);
        Ok(f)
    }

    /// The kernel of fused program `p` (its vector walk if `vec`), compiled from `source()` at
    /// first use, outside the kernels' lock as the families are.
    fn fused_function(&self, p: &Program, vec: bool, source: impl FnOnce() -> String) -> Result<R::Function> {
        let once = {
            let mut k = self.0.kernels.lock().unwrap_or_else(|e| e.into_inner());
            match k.programs.get(p) {
                Some(walks) => walks[usize::from(vec)].clone(),
                None => k.programs.entry(p.clone()).or_default()[usize::from(vec)].clone(),
            }
        };
        self.generated(&once, "fused", source)
    }

    /// The matrix-vector kernel `kernel` with epilogue `p`, as [`Self::fused_function`].
    fn matvec_function(
        &self,
        kernel: matvec::Kernel,
        p: &Program,
        source: impl FnOnce() -> String,
    ) -> Result<R::Function> {
        let once = {
            let mut k = self.0.kernels.lock().unwrap_or_else(|e| e.into_inner());
            let per = match k.matvecs.get_mut(p) {
                Some(per) => per,
                None => k.matvecs.entry(p.clone()).or_default(),
            };
            per.entry(kernel).or_default().clone()
        };
        self.generated(&once, "matvec", source)
    }

    /// Kernel `name` of the generated `source()`, compiled into `once` at its first use.
    fn generated(&self, once: &Once<Built<R>>, name: &str, source: impl FnOnce() -> String) -> Result<R::Function> {
        let rt = &self.0.rt;
        let built = once.get_or_init(|| {
            let module = rt.load_module(&rt.compile(&format!("{name}.hip"), &source())?)?;
            let f = rt.function(&module, name)?;
            Ok((module, f))
        });
        built.as_ref().map(|(_, f)| *f).map_err(Clone::clone)
    }

    pub(crate) fn error(&self, msg: impl Into<String>) -> Error {
        Error::Backend { backend: R::KIND, msg: msg.into() }
    }

    /// Queues kernel `name` of `family` over `threads` threads (grid-stride: the grid is capped).
    ///
    /// # Safety
    /// `args` are laid out as the kernel's parameters; every device range the kernel touches
    /// for `threads` lies inside storages that outlive the call (the stream orders later uses).
    pub(crate) unsafe fn launch(&self, family: Family, name: &str, threads: u64, args: &mut Args) -> Result<()> {
        if threads == 0 {
            return Ok(());
        }
        let f = self.function(family, name)?;
        // SAFETY: the caller's contract.
        unsafe { self.launch_function(f, threads, args) }
    }

    /// [`NativeBackend::launch`] of a function in hand.
    ///
    /// # Safety
    /// As [`NativeBackend::launch`].
    pub(crate) unsafe fn launch_function(&self, f: R::Function, threads: u64, args: &mut Args) -> Result<()> {
        if threads == 0 {
            return Ok(());
        }
        let (grid, block) = kernel::grid(threads, self.0.rt.info().multiprocessors);
        let mut ptrs = args.pointers();
        self.0.library_use.launched();
        // SAFETY: the caller's contract; `ptrs` point into `args`, alive for the call.
        unsafe { self.0.rt.launch(f, grid, block, 0, &mut ptrs) }
    }

    /// Queues kernel `name` of `family` over `grid` blocks of `block` threads, for kernels that
    /// size their own grid (block-uniform loops, shared memory per block). A grid past the
    /// launch limits (`kernel::grid_limit`) is an error here, on every runtime, not only on HIP.
    ///
    /// # Safety
    /// As [`NativeBackend::launch`], for every block of the grid.
    pub(crate) unsafe fn launch_grid(
        &self,
        family: Family,
        name: &str,
        grid: [u32; 3],
        block: u32,
        args: &mut Args,
    ) -> Result<()> {
        if let Some(why) = kernel::grid_limit(grid, block) {
            return Err(self.error(format!("kernel {name} of {family}: {why}")));
        }
        let f = self.function(family, name)?;
        // SAFETY: the caller's contract.
        unsafe { self.launch_function_grid(f, grid, block, args) }
    }

    /// [`NativeBackend::launch_grid`] of a function in hand, whose grid the caller sized within
    /// the launch limits.
    ///
    /// # Safety
    /// As [`NativeBackend::launch_grid`].
    pub(crate) unsafe fn launch_function_grid(
        &self,
        f: R::Function,
        grid: [u32; 3],
        block: u32,
        args: &mut Args,
    ) -> Result<()> {
        let mut ptrs = args.pointers();
        self.0.library_use.launched();
        // SAFETY: the caller's contract; `ptrs` point into `args`, alive for the call.
        unsafe { self.0.rt.launch(f, grid, [block, 1, 1], 0, &mut ptrs) }
    }

    /// Launches strided kernel `name` once per part of the walk of `shape` through `operands`
    /// (see [`kernel::plan`]). Each launch gets `Dims`, one `View` per operand, then what
    /// `tail` appends for that part (pointers, scalars).
    ///
    /// # Safety
    /// As [`NativeBackend::launch`]: `tail` completes the kernel's parameters, and every
    /// operand's layout lies inside its storage.
    pub(crate) unsafe fn strided(
        &self,
        family: Family,
        name: &str,
        shape: &[usize],
        operands: &[&Layout],
        mut tail: impl FnMut(&Part, &mut Args),
    ) -> Result<()> {
        let strided: Vec<kernel::Strided> = operands.iter().map(|l| (l.strides(), l.offset())).collect();
        for part in kernel::plan(shape, &strided) {
            let mut args = Args::default();
            args.pod(&part.dims);
            for v in &part.views {
                args.pod(v);
            }
            tail(&part, &mut args);
            // SAFETY: the caller's contract, for each part of the walk.
            unsafe { self.launch(family, name, part.dims.n, &mut args)? };
        }
        Ok(())
    }
}

/// A flag's bytes: u64 `[code, index, size, unused]`, `code` = 1 + the op's position in
/// `IndexOp::ALL` (0: no bad id), as `hip/index.hip` writes them.
const FLAG_BYTES: usize = 32;

/// The failure a flag's bytes record.
fn flag_result(bytes: &[u8]) -> Result<()> {
    let word = |k: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[8 * k..8 * k + 8]);
        u64::from_le_bytes(w)
    };
    let code = word(0) as u32;
    if code == 0 {
        return Ok(());
    }
    let op = IndexOp::from_flag_code(code).map_or("index", |o| o.name());
    Err(Error::IndexOutOfRange { op, index: word(1) as i64, size: word(2) as usize })
}

/// What runs a group's collectives on devices of `kind` (NCCL, RCCL), or why nothing does.
#[cfg(any(feature = "cuda", feature = "rocm"))]
fn collectives(kind: BackendKind) -> String {
    nccl::library(kind).map_or_else(|e| format!("none ({e})"), |l| l.describe.clone())
}

/// Without a native feature there is no native device to ask about.
#[cfg(not(any(feature = "cuda", feature = "rocm")))]
fn collectives(_: BackendKind) -> String {
    "none (built without a native feature)".into()
}

impl<R: Runtime> NativeBackend<R> {
    /// The families that run on the cpu reference here: matmul where the runtime has no BLAS
    /// (every other family has kernels).
    fn on_cpu(&self) -> Option<Family> {
        self.0.rt.blas().is_err().then_some(Family::Matmul)
    }

    /// Whether the tensor-core kernels run here (attention in the halves, the q4_K
    /// matrix-vector product with f16 x): CUDA on sm_80 or later, unless `RWO_NATIVE_MMA=0` (for
    /// A/B measurements and to run the SIMT kernels that AMD GPUs take).
    pub(super) fn tensor_cores(&self) -> bool {
        static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let arch = &self.0.rt.info().arch;
        let sm = arch.strip_prefix("sm_").and_then(|a| a.parse::<u32>().ok());
        R::KIND == BackendKind::Cuda
            && sm.is_some_and(|sm| sm >= 80)
            && !*OFF.get_or_init(|| std::env::var("RWO_NATIVE_MMA").is_ok_and(|v| v.trim() == "0"))
    }

    /// The vendor libraries: each one's name and version, or why it is absent.
    fn libraries(&self) -> String {
        let blas = self.0.rt.blas().map(|b| b.describe()).unwrap_or_else(|why| format!("no BLAS ({why})"));
        let dnn = self.0.rt.dnn().map(|d| d.describe()).unwrap_or_else(|why| format!("no DNN ({why})"));
        format!("{blas}; {dnn}")
    }
}

impl<R: Runtime> Memory for NativeBackend<R> {
    type Storage = NativeStorage<R>;

    fn kind(&self) -> BackendKind {
        R::KIND
    }

    /// Kind, device and architecture.
    fn describe(&self) -> String {
        let i = self.0.rt.info();
        format!("{}: {} ({})", R::KIND, i.name, i.arch)
    }

    fn same(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    fn on_host(&self, family: Family) -> bool {
        self.on_cpu() == Some(family)
    }

    fn fuses(&self, _: &[DType]) -> bool {
        true
    }

    fn launches(&self) -> u64 {
        self.0.library_use.launches()
    }

    fn max_bytes(&self) -> u64 {
        self.0.rt.info().total_memory
    }

    fn info(&self) -> Vec<(&'static str, String)> {
        let i = self.0.rt.info();
        let mem = self.memory_stats();
        vec![
            ("device", i.name.clone()),
            ("architecture", i.arch.clone()),
            ("warp size", i.warp_size.to_string()),
            ("multiprocessors", i.multiprocessors.to_string()),
            ("memory", format!("{} MiB", i.total_memory >> 20)),
            ("versions", i.versions.clone()),
            ("libraries", self.libraries()),
            ("collectives", collectives(R::KIND)),
            ("attention", self.attention_pass()),
            ("quantized matrix-vector", self.qmatvec_pass().into()),
            ("calls so far", self.0.library_use.describe()),
            ("pool", format!("{} MiB live, {} MiB cached", mem.live >> 20, mem.cached >> 20)),
            ("on the cpu reference", self.on_cpu().map_or("none", Family::name).into()),
        ]
    }

    fn unsupported(&self, _: &crate::spec::OpInfo, _: DType) -> Option<String> {
        None
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<NativeStorage<R>> {
        self.storage(dtype, len)
    }

    fn upload(&self, data: &CpuStorage) -> Result<NativeStorage<R>> {
        let s = self.storage(data.dtype(), data.len())?;
        let bytes = data.as_bytes();
        if !bytes.is_empty() {
            // SAFETY: `s` was just allocated with room for exactly these bytes; inside a
            // capture it is a block no queued work uses (see `crate::pins`), and the stream
            // was idle when the capture started.
            unsafe {
                match self.0.rt.capturing() {
                    true => self.0.rt.htod_now(bytes, s.ptr)?,
                    false => self.0.rt.htod(bytes, s.ptr)?,
                }
            };
        }
        Ok(s)
    }

    fn download(&self, s: &NativeStorage<R>) -> Readback<CpuStorage> {
        Readback::done(self.to_host(s))
    }

    fn synchronize(&self) -> Readback<()> {
        Readback::done(self.refuse_in_capture("a synchronize").and_then(|_| self.0.rt.synchronize()))
    }

    fn begin_capture(&self) -> Result<()> {
        self.begin_capture_native()
    }

    fn end_capture(&self) -> Result<crate::backend::Graph> {
        self.end_capture_native()
    }

    fn abort_capture(&self) {
        self.abort_capture_native()
    }

    fn replay(&self, g: &crate::backend::Graph) -> Result<()> {
        self.replay_native(g)
    }

    fn new_flag(&self) -> Result<NativeStorage<R>> {
        let flag = self.storage(DType::I64, FLAG_BYTES / 8)?;
        // SAFETY: the storage holds FLAG_BYTES bytes; the memset is queued before the kernels
        // that write the flag, on the one stream.
        unsafe { self.0.rt.memset(flag.ptr, 0, FLAG_BYTES)? };
        Ok(flag)
    }

    fn copy_flag(&self, f: &NativeStorage<R>) -> Result<NativeStorage<R>> {
        let copy = self.storage(DType::I64, FLAG_BYTES / 8)?;
        // SAFETY: both storages hold FLAG_BYTES bytes; the copy is queued after the kernels that
        // write `f`, on the one stream.
        unsafe { self.0.rt.dtod(f.ptr, copy.ptr, FLAG_BYTES)? };
        Ok(copy)
    }

    fn read_flags(&self, flags: &[&NativeStorage<R>]) -> Readback<Vec<Result<()>>> {
        let read = || {
            self.refuse_in_capture("reading a kernel's error flag")?;
            if flags.is_empty() {
                return Ok(vec![]);
            }
            // The flags side by side in one buffer, by copies queued on the stream, then one
            // copy to the host: one wait, not one a flag.
            let all = self.storage(DType::I64, flags.len() * FLAG_BYTES / 8)?;
            for (i, f) in flags.iter().enumerate() {
                // SAFETY: every flag holds FLAG_BYTES bytes from its pointer (`new_flag`), and
                // `all` FLAG_BYTES for each; the copy is queued after the kernels that write `f`.
                unsafe { self.0.rt.dtod(f.ptr, all.ptr.offset(i * FLAG_BYTES), FLAG_BYTES)? };
            }
            let mut bytes = vec![0u8; flags.len() * FLAG_BYTES];
            // SAFETY: `all` holds that many bytes; the copy waits for the work queued before it.
            unsafe { self.0.rt.dtoh(all.ptr, &mut bytes)? };
            Ok(bytes.chunks_exact(FLAG_BYTES).map(flag_result).collect())
        };
        Readback::done(read())
    }
}

impl<R: Runtime> NativeBackend<R> {
    /// The whole buffer on the host (the copy waits for the work queued before it).
    pub(crate) fn to_host(&self, s: &NativeStorage<R>) -> Result<CpuStorage> {
        self.refuse_in_capture("a readback")?;
        let mut bytes = crate::host::try_vec(s.bytes(), 0u8)?;
        if !bytes.is_empty() {
            // SAFETY: `s` holds `s.bytes()` bytes from `s.ptr`.
            unsafe { self.0.rt.dtoh(s.ptr, &mut bytes)? };
        }
        CpuStorage::from_bytes(s.dtype, &bytes)
    }
}
