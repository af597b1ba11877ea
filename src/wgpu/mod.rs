//! The portable backend: WGSL compute shaders on wgpu (Vulkan, Metal, DX12, GL, and software
//! adapters such as lavapipe).

mod alloc;
mod attention;
mod batch;
mod capture;
mod context;
mod conv;
mod copy;
mod elementwise;
mod fused;
mod gemm;
mod groups;
mod index;
pub mod kernel;
mod matmul;
mod nn;
#[cfg(not(target_family = "wasm"))]
mod pipeline_cache;
mod pool;
mod profile;
mod quant;
mod random;
mod reduce;
mod render;
pub mod repr;
mod sort;
mod submit;
mod support;
mod tune;
mod upsample;

use crate::backend::{BackendStorage, Memory, Readback};
use crate::spec::index::IndexOp;
use crate::{BackendKind, CpuStorage, DType, Error, Result};
pub use alloc::{MemoryStats, SLACK as POOL_SLACK};
use alloc::{Pool, PooledBuffer};
use batch::{Mapping, Recorder};
pub(crate) use context::Pick;
use context::{BoundsChecks, Gpu};
use foldhash::HashMap;
#[doc(hidden)]
pub use gemm::hooks as gemm_hooks;
use kernel::Spec;
pub use random::Mul;
pub use repr::Caps;
use std::sync::{Arc, Mutex, MutexGuard};
pub use tune::Tune;

/// Every kernel the WGSL path builds for `caps`, named like `spec::kernel_name` (`exp_f32`):
/// the shader validation test parses and validates each with naga, and checks that every op
/// and dtype of the WGSL families has one.
#[doc(hidden)]
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    [
        elementwise::shader_variants(caps),
        copy::shader_variants(caps),
        reduce::shader_variants(caps),
        index::shader_variants(caps),
        sort::shader_variants(caps),
        random::shader_variants(caps),
        upsample::shader_variants(caps),
        nn::shader_variants(caps),
        pool::shader_variants(caps),
        matmul::shader_variants(caps),
        conv::shader_variants(caps),
        attention::shader_variants(caps),
        quant::shader_variants(caps),
    ]
    .concat()
}

/// A compiled kernel and the layout of its bind group.
pub(crate) struct Pipeline {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    /// `family::entry`, for errors and the profile.
    name: String,
}

/// A kernel's spec and its pipeline.
pub(crate) type Kernel = (Arc<Spec>, Arc<Pipeline>);

/// What decides a kernel, for the kernels found without building their source.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum KernelKey {
    /// An elementwise map.
    Map(elementwise::MapKey),
    /// A fused elementwise program.
    Fused(fused::FusedKey),
    /// An nn lines kernel (softmax, the norms) of a dtype.
    Lines(DType, nn::Variant),
    /// A norm of a few rows (`nn::rows`) of a dtype.
    NormRows(DType, nn::rows::RowNorm),
    /// An attention kernel of a dtype.
    Attention(DType, attention::Variant),
    /// A rotary embedding (`rope` or `rope_i`) of a dtype.
    Rope(DType, crate::spec::attention::AttentionOp),
    /// A copy or fill kernel.
    Copy(copy::CopyKey),
    /// A pool kernel: the op, the dtype, the window, four outputs an invocation.
    Pool(crate::spec::pool::PoolOp, DType, [usize; 2], bool),
    /// The nearest-neighbour upsampling kernel of a dtype, four outputs an invocation or one word.
    Upsample(DType, bool),
    /// A reduction's kernel: the op, the input's dtype, the walk and the pass.
    Reduce(crate::spec::reduce::ReduceOp, DType, reduce::Kernel, reduce::Stage),
    /// An index kernel (index_select's rows, the scatters).
    Index(index::IndexKey),
    /// A quantized matrix-vector kernel: the block type, x's dtype, the rows of x it is built
    /// for, x read as vectors, scales shared through subgroup shuffles, the norm it computes
    /// first and the program it stores.
    Qmatvec(
        crate::spec::quant::GgmlType,
        DType,
        usize,
        (bool, bool),
        Option<nn::rows::RowNorm>,
        Option<gemm::Epilogue>,
    ),
    /// The q8 activation mode's products by integer dot products: the block type, x's dtype, the
    /// rows of x it is built for, the blocks on 16 bytes.
    QmatvecQ8(crate::spec::quant::GgmlType, DType, usize, bool),
    /// x's rows rounded to q8 blocks: x's dtype, packed for `QmatvecQ8` (else f32 values).
    RoundQ8(DType, bool),
    /// A dequantize kernel: the output's dtype, the block type it decodes by words of quants
    /// (`None`: every type, value by value).
    Dequantize(DType, Option<crate::spec::quant::GgmlType>),
    /// An nn kernel of one output word an invocation (batch_norm, local_response_norm, a cell).
    Point(nn::PointKey),
    /// A random kernel: the op, the dtype, the product form, x's index (dropout's).
    Random(crate::spec::random::RandomOp, DType, random::Mul, kernel::Index),
    /// An argsort kernel.
    Sort(sort::SortKey),
    /// A GEMM-family kernel: the stage and what decides its source.
    Gemm(gemm::Stage, gemm::Variant),
}

/// Pipelines held in memory before the cache starts again from empty (with the kernels found by
/// key; the disk cache keeps them): a bound on what a program making ever new kernels holds. The
/// fuzz test's random fused chains made ~575 a device in 4000 cases, 1.35 MB each on lavapipe
/// (23 GB at 40000 cases); a model's kernels are far fewer.
const MAX_PIPELINES: usize = 1024;

pub(crate) struct Context {
    gpu: Gpu,
    caps: Caps,
    pool: Arc<Pool>,
    meta_pool: Arc<Pool>,
    /// The error flags' buffers, apart from the tensors': a flag lives until it is read, so
    /// flags in the tensors' pool changed which buffers the small tensors of a repeated step
    /// get, and so their bind groups.
    flag_pool: Arc<Pool>,
    rec: Mutex<Recorder>,
    pipelines: Mutex<HashMap<Spec, Arc<Pipeline>>>,
    /// Kernels found by what they are rather than by their generated text (which costs more
    /// CPU to build and hash than the rest of recording an op), with their specs.
    kernels: Mutex<HashMap<KernelKey, Kernel>>,
    /// Dispatches recorded so far.
    launches: std::sync::atomic::AtomicU64,
    /// wgpu's injected bounds checks (and loop bounding): which kernels get them
    /// (`RWO_WGPU_BOUNDS_CHECKS`, see [`BoundsChecks`]).
    bounds_checks: BoundsChecks,
    /// Overrides of the tuning tables (`RWO_WGPU_TUNE`).
    tune: Tune,
    /// Whether the adapter is a browser's software fallback, found once (the name test cost a
    /// hundred instructions an op where every elementwise op asked).
    browser_fallback: bool,
    /// Pipelines kept on disk between processes, where the adapter can.
    #[cfg(not(target_family = "wasm"))]
    disk: Option<pipeline_cache::DiskPipelineCache>,
}

/// The wgpu backend: one device, its pools, pipelines and pending work.
#[derive(Clone)]
pub struct WgpuBackend(Arc<Context>);

impl std::fmt::Debug for WgpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.gpu.describe())
    }
}

/// A tensor buffer on the device.
#[derive(Clone)]
pub struct WgpuStorage {
    buf: Arc<PooledBuffer>,
    dtype: DType,
    len: usize,
}

impl std::fmt::Debug for WgpuStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WgpuStorage[{} x {}]", self.len, self.dtype)
    }
}

impl WgpuStorage {
    pub(crate) fn buffer(&self) -> &wgpu::Buffer {
        self.buf.buffer()
    }
}

impl BackendStorage for WgpuStorage {
    fn dtype(&self) -> DType {
        self.dtype
    }
    fn len(&self) -> usize {
        self.len
    }
}

fn wgpu_err(msg: impl std::fmt::Display) -> Error {
    Error::Backend { backend: BackendKind::Wgpu, msg: msg.to_string() }
}

impl crate::backend::Open for WgpuBackend {
    /// Opens the adapter `RWO_ADAPTER` names (or the preferred one) with the features
    /// `RWO_WGPU_FEATURES` allows (all wanted ones by default).
    async fn open_default() -> std::result::Result<WgpuBackend, String> {
        let adapter = std::env::var("RWO_ADAPTER").ok();
        let features = std::env::var("RWO_WGPU_FEATURES").ok();
        Self::open(Pick::Name(adapter.as_deref()), features.as_deref()).await.map_err(|e| match e {
            Error::BackendUnavailable { reason, .. } => reason,
            e => e.to_string(),
        })
    }
}

/// The adapters that can run compute kernels, by ordinal (what [`Pick::Ordinal`] counts), each
/// with its kind in plain words (natively: a browser has one adapter).
#[cfg(not(target_family = "wasm"))]
pub(crate) async fn adapter_names() -> Vec<String> {
    let named = |a: &wgpu::Adapter| {
        let info = a.get_info();
        format!("{} ({})", info.name, context::plain_kind(&info))
    };
    Gpu::adapters().await.0.iter().map(named).collect()
}

impl WgpuBackend {
    /// Opens an adapter (by name substring or ordinal) with the named features (`"none"`, `"f16,i64"`...)
    /// and the tuning overrides of `RWO_WGPU_TUNE`.
    pub(crate) async fn open(adapter: Pick<'_>, features: Option<&str>) -> Result<WgpuBackend> {
        let tune = Tune::parse(std::env::var("RWO_WGPU_TUNE").ok().as_deref())?;
        Self::open_tuned(adapter, features, tune).await
    }

    /// [`WgpuBackend::open`] with the tuning overrides `tune`.
    pub(crate) async fn open_tuned(adapter: Pick<'_>, features: Option<&str>, tune: Tune) -> Result<WgpuBackend> {
        let allowed = context::allowed_features(features)?;
        let gpu = Gpu::open(adapter, allowed)
            .await
            .map_err(|reason| Error::BackendUnavailable { kind: "wgpu".into(), reason })?;
        let caps = Caps {
            f16: gpu.has(wgpu::Features::SHADER_F16),
            f64: gpu.has(wgpu::Features::SHADER_F64),
            i64: gpu.has(wgpu::Features::SHADER_INT64),
            subgroup: gpu.has(wgpu::Features::SUBGROUP),
        };
        if tune.random_mul == Some(random::Mul::Wide) && !caps.i64 {
            let reason = "RWO_WGPU_TUNE: random_mul=wide needs SHADER_INT64, which this device lacks".into();
            return Err(Error::BackendUnavailable { kind: "wgpu".into(), reason });
        }
        use wgpu::BufferUsages as U;
        let retired = gpu.retired.clone();
        #[cfg(not(target_family = "wasm"))]
        let disk = pipeline_cache::DiskPipelineCache::open(&gpu);
        let browser_fallback = context::is_browser_fallback(&gpu.info);
        Ok(WgpuBackend(Arc::new(Context {
            #[cfg(not(target_family = "wasm"))]
            disk,
            gpu,
            caps,
            pool: Pool::new(U::STORAGE | U::COPY_SRC | U::COPY_DST, retired.clone()),
            meta_pool: Pool::new(U::STORAGE | U::COPY_SRC | U::COPY_DST, retired.clone()),
            flag_pool: Pool::new(U::STORAGE | U::COPY_SRC | U::COPY_DST, retired),
            rec: Mutex::new(Recorder::new(tune.submit_thread == Some(false), tune.submit_delay)),
            pipelines: Mutex::default(),
            kernels: Mutex::default(),
            launches: Default::default(),
            bounds_checks: BoundsChecks::from_env(),
            tune,
            browser_fallback,
        })))
    }

    /// Which thread submits the batches the recording goes on after.
    fn submission_info(&self) -> String {
        let inline = if cfg!(target_family = "wasm") {
            Some("a browser has no threads")
        } else if self.0.tune.submit_thread == Some(false) {
            Some("RWO_WGPU_TUNE says submit=inline")
        } else if self.0.gpu.profiler.is_some() {
            Some("RWO_WGPU_PROFILE resolves its queries at each submit")
        } else {
            None
        };
        match inline {
            None => "batches submitted by a thread while the recording goes on".into(),
            Some(why) => format!("batches submitted on the recording thread ({why})"),
        }
    }

    /// The largest buffer a kernel binds and the largest buffer, as the device was opened with
    /// (the adapter's own maxima, or `max_binding` of `RWO_WGPU_TUNE`); larger tensors are
    /// stored in parts.
    fn binding_info(&self) -> String {
        let (b, l) = (self.max_bytes(), &self.0.gpu.limits);
        let forced = if self.0.tune.max_binding.is_some() { ", lowered by RWO_WGPU_TUNE" } else { "" };
        format!(
            "{b} bytes ({} MiB{forced}); max buffer {} MiB; larger tensors are stored in parts",
            b >> 20,
            l.max_buffer_size >> 20
        )
    }

    /// The adapter features that decide how dtypes are represented in kernels.
    pub fn caps(&self) -> Caps {
        self.0.caps
    }

    /// The adapter's name when it is a software renderer behind OpenGL (llvmpipe), which
    /// compiles each kernel for seconds.
    pub(crate) fn gl_software(&self) -> Option<&str> {
        context::is_gl_software(&self.0.gpu.info).then_some(self.0.gpu.info.name.as_str())
    }

    /// Whether the adapter is a browser's software fallback ([`context::is_browser_fallback`]).
    pub(crate) fn browser_fallback(&self) -> bool {
        self.0.browser_fallback
    }

    /// The tuning overrides this device was opened with.
    pub fn tune(&self) -> Tune {
        self.0.tune
    }

    /// What the tensor buffer pool holds.
    pub fn memory_stats(&self) -> MemoryStats {
        self.0.pool.stats()
    }

    /// Where compiled pipelines are kept between processes, or why nowhere.
    fn pipeline_cache(&self) -> String {
        let held = self.0.pipelines.lock().unwrap_or_else(|e| e.into_inner()).len();
        let keys = self.0.kernels.lock().unwrap_or_else(|e| e.into_inner()).len();
        let in_memory = format!("{held} pipelines held, {keys} kernel keys");
        #[cfg(not(target_family = "wasm"))]
        if let Some(d) = &self.0.disk {
            return format!("{in_memory}; on disk: {}", d.describe());
        }
        if self.0.gpu.has(wgpu::Features::PIPELINE_CACHE) {
            format!("{in_memory}; on disk: off (RWO_KERNEL_CACHE=off, or no cache directory)")
        } else {
            format!("{in_memory}; on disk: none (the adapter has no PIPELINE_CACHE: Vulkan only)")
        }
    }

    fn rec(&self) -> MutexGuard<'_, Recorder> {
        self.0.rec.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new buffer for `len` elements of `dtype`.
    pub(crate) fn storage(&self, dtype: DType, len: usize) -> Result<WgpuStorage> {
        self.storage_in(&self.0.pool, dtype, len)
    }

    /// A new buffer for `len` elements of `dtype` from `pool`.
    fn storage_in(&self, pool: &Arc<Pool>, dtype: DType, len: usize) -> Result<WgpuStorage> {
        let size = dtype.size_in_bytes() as u64;
        let bytes = (len as u64).saturating_mul(size);
        if len as u64 > u32::MAX as u64 {
            return Err(Error::LimitExceeded {
                backend: BackendKind::Wgpu,
                what: format!("{len} elements of {dtype} (kernels index with u32, so at most {} elements)", u32::MAX),
                needed: bytes,
                limit: u32::MAX as u64 * size,
            });
        }
        let buf = match pool.alloc(&self.0.gpu, bytes) {
            Err(Error::Backend { .. }) => {
                // Out of memory: give every cached buffer back to the driver and try once more.
                self.0.pool.release_cache();
                self.rec().submit(&self.0.gpu)?;
                pool.alloc(&self.0.gpu, bytes)?
            }
            r => r?,
        };
        Ok(WgpuStorage { buf: Arc::new(buf), dtype, len })
    }

    fn pipeline(&self, spec: &Spec) -> Result<Arc<Pipeline>> {
        let mut cache = self.0.pipelines.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = cache.get(spec) {
            return Ok(p.clone());
        }
        if cache.len() >= self.0.tune.max_pipelines.unwrap_or(MAX_PIPELINES) {
            // Lock order: pipelines, then kernels (`keyed` holds neither while taking the other).
            cache.clear();
            self.0.kernels.lock().unwrap_or_else(|e| e.into_inner()).clear();
        }
        let p = Arc::new(self.build(spec)?);
        cache.insert(spec.clone(), p.clone());
        Ok(p)
    }

    fn build(&self, spec: &Spec) -> Result<Pipeline> {
        let gpu = &self.0.gpu;
        let source = spec.source();
        let name = format!("{}::{}", spec.family, spec.entry);
        let storage = |i: u32, read_only: bool, dynamic: bool| wgpu::BindGroupLayoutEntry {
            binding: i,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: dynamic,
                min_binding_size: None,
            },
            count: None,
        };
        let mut entries = vec![storage(0, true, true)];
        for (i, &ro) in spec.read_only().iter().enumerate() {
            entries.push(storage(i as u32 + 1, ro, false));
        }
        gpu.scoped(wgpu::ErrorFilter::Validation, || {
            let layout = gpu
                .device
                .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: None, entries: &entries });
            let pl = gpu.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: None,
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
            let desc = wgpu::ShaderModuleDescriptor {
                label: Some(&name),
                source: wgpu::ShaderSource::Wgsl(source.as_str().into()),
            };
            let checked = self.0.bounds_checks.on(spec.family);
            let module = if checked {
                gpu.device.create_shader_module(desc)
            } else {
                let mut checks = wgpu::ShaderRuntimeChecks::checked();
                checks.bounds_checks = false;
                checks.force_loop_bounding = false;
                // SAFETY: only for `UNCHECKED` families or on request (`RWO_WGPU_BOUNDS_CHECKS=0`):
                // every kernel keeps its own indices inside its bindings (GEMM and conv guard every
                // load and store of an edge tile by m, n, k; suite cases at edge sizes) (layouts are validated by the
                // spec, index ids are checked in the kernel, vector tails stay inside buffers
                // allocated in 16-byte multiples), and integer division keeps wgpu's checks.
                unsafe { gpu.device.create_shader_module_trusted(desc, checks) }
            };
            let pipeline = gpu.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&name),
                layout: Some(&pl),
                module: &module,
                entry_point: Some(spec.entry),
                // The unchecked kernels write every workgroup entry they read first, so the
                // zeroing of workgroup memory at each workgroup's start is work for nothing.
                compilation_options: wgpu::PipelineCompilationOptions {
                    zero_initialize_workgroup_memory: checked,
                    ..Default::default()
                },
                #[cfg(not(target_family = "wasm"))]
                cache: self.0.disk.as_ref().map(|d| d.for_build()),
                #[cfg(target_family = "wasm")]
                cache: None,
            });
            Pipeline { pipeline, layout, name: name.clone() }
        })
        .map_err(|e| wgpu_err(format!("building kernel {name}: {e}")))
    }

    /// Records `spec` over `threads` invocations. `buffers` follow `spec.bindings`, then the
    /// op's flag when the spec binds one.
    /// The kernel `key` names and its spec: built by `build` at first use, then found by `key`.
    pub(crate) fn keyed(&self, key: KernelKey, build: impl FnOnce() -> Result<Spec>) -> Result<Kernel> {
        if let Some(hit) = self.0.kernels.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(hit.clone());
        }
        let spec = Arc::new(build()?);
        let pipeline = self.pipeline(&spec)?;
        let mut kernels = self.0.kernels.lock().unwrap_or_else(|e| e.into_inner());
        // Several keys may name one kernel: the keys get a bound of their own.
        if kernels.len() >= 4 * self.0.tune.max_pipelines.unwrap_or(MAX_PIPELINES) {
            kernels.clear();
        }
        kernels.insert(key, (spec.clone(), pipeline.clone()));
        Ok((spec, pipeline))
    }

    /// Records a dispatch of `pipeline` (built from `spec`) over `threads` invocations, its
    /// bindings `buffers` and metadata `meta`.
    pub(crate) fn run(
        &self,
        spec: &Spec,
        pipeline: &Pipeline,
        buffers: &[&wgpu::Buffer],
        meta: &[u32],
        threads: u64,
    ) -> Result<()> {
        if threads == 0 {
            return Ok(());
        }
        let groups = threads.div_ceil(spec.workgroup as u64);
        let max = self.0.gpu.limits.max_compute_workgroups_per_dimension as u64;
        let grid = if groups <= max { (groups as u32, 1) } else { (max as u32, groups.div_ceil(max) as u32) };
        if grid.1 as u64 > max {
            return Err(wgpu_err(format!("{threads} invocations exceed the dispatch limit")));
        }
        self.0.launches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.rec().dispatch(&self.0.gpu, &self.0.meta_pool, pipeline, buffers, meta, grid)
    }

    /// Submits pending work and starts copying the first `bytes` of each buffer back.
    fn read(&self, parts: &[(&wgpu::Buffer, u64)]) -> Result<Mapping> {
        self.refuse_in_capture(if parts.is_empty() { "a synchronize" } else { "a readback" })?;
        let gpu = &self.0.gpu;
        let padded = |b: u64| b.next_multiple_of(4);
        let total: u64 = parts.iter().map(|&(_, b)| padded(b)).sum();
        let staging = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: total.max(4),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut rec = self.rec();
        let enc = rec.encoder(gpu);
        let mut at = 0;
        for &(buf, bytes) in parts {
            if bytes > 0 {
                enc.copy_buffer_to_buffer(buf, 0, &staging, at, padded(bytes));
            }
            at += padded(bytes);
        }
        rec.submit(gpu)?;
        drop(rec);
        Ok(Mapping::start(gpu, staging, total))
    }
}

/// Words in a flag: `[op + 1, index low, index high, size low, size high]` (see
/// `shaders/index.wgsl`).
const FLAG_WORDS: usize = 5;

/// The failure a flag's words record.
fn flag_result(w: &[u32]) -> Result<()> {
    let Some(op) = w.first().copied().filter(|&c| c != 0) else { return Ok(()) };
    let op = IndexOp::from_flag_code(op).map_or("index", |o| o.name());
    let index = (w[1] as u64 | (w[2] as u64) << 32) as i64;
    Err(Error::IndexOutOfRange { op, index, size: (w[3] as u64 | (w[4] as u64) << 32) as usize })
}

impl Memory for WgpuBackend {
    type Storage = WgpuStorage;

    fn kind(&self) -> BackendKind {
        BackendKind::Wgpu
    }

    fn describe(&self) -> String {
        self.0.gpu.describe()
    }

    fn same(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    fn launches(&self) -> u64 {
        self.0.launches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Every dtype but f64 where the adapter has no f64 arithmetic (those ops refuse it).
    /// Not on SwiftShader (`browser_fallback`): its compiler took minutes and 10 GB over a fused
    /// chain of 28 steps that lavapipe builds in a second.
    fn fuses(&self, dtypes: &[DType]) -> bool {
        !self.browser_fallback() && (self.0.caps.f64 || !dtypes.contains(&DType::F64))
    }

    fn info(&self) -> Vec<(&'static str, String)> {
        let gpu = &self.0.gpu;
        let on: Vec<&str> = context::WANTED.iter().filter(|(_, f)| gpu.has(*f)).map(|(n, _)| *n).collect();
        let l = &gpu.limits;
        vec![
            ("adapter", format!("{} ({:?}, {:?})", gpu.info.name, gpu.info.backend, gpu.info.device_type)),
            ("kind", context::plain_kind(&gpu.info)),
            ("bounds checks", self.0.bounds_checks.describe()),
            ("driver", format!("{} {}", gpu.info.driver, gpu.info.driver_info)),
            ("features", if on.is_empty() { "none".into() } else { on.join(", ") }),
            ("max storage binding", self.binding_info()),
            (
                "max workgroup",
                format!(
                    "{} invocations, {} groups per dim",
                    l.max_compute_invocations_per_workgroup, l.max_compute_workgroups_per_dimension
                ),
            ),
            (
                "f64",
                if self.0.caps.f64 { "yes".into() } else { "no SHADER_F64: only ops that move bytes take f64".into() },
            ),
            ("kernel tuning", format!("{}; {}", self.random_tuning(), self.sort_tuning())),
            ("submission", self.submission_info()),
            ("pipeline cache", self.pipeline_cache()),
            ("matmul kernels", self.gemm_info()),
            ("attention", self.attention_info()),
        ]
    }

    fn unsupported(&self, op: &crate::spec::OpInfo, dtype: DType) -> Option<String> {
        support::unsupported(self.0.caps, op, dtype)
    }

    fn max_elements(&self) -> usize {
        // Kernels index with u32: a view (a broadcast) larger than that cannot be walked.
        u32::MAX as usize
    }

    fn max_bytes(&self) -> u64 {
        // A lower limit forced for tests binds tensors only: scratch and metadata keep the
        // adapter's.
        self.0.gpu.max_binding().min(self.0.tune.max_binding.unwrap_or(u64::MAX))
    }

    fn holds_parts(&self) -> bool {
        true
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<WgpuStorage> {
        self.storage(dtype, len)
    }

    fn upload(&self, data: &CpuStorage) -> Result<WgpuStorage> {
        let s = self.storage(data.dtype(), data.len())?;
        let bytes = data.as_bytes();
        if bytes.is_empty() {
            return Ok(s);
        }
        let mut padded;
        let bytes = if bytes.len().is_multiple_of(4) {
            bytes
        } else {
            padded = bytes.to_vec();
            padded.resize(bytes.len().next_multiple_of(4), 0);
            &padded
        };
        // A buffer reused from the pool may still be read by recorded work. Queued writes run
        // before the commands of the next submit: a small upload is copied in order with that
        // work instead (no submit in the middle of a run of ops); a larger one submits it first.
        {
            let mut rec = self.rec();
            if rec.stage(&self.0.gpu, &self.0.meta_pool, s.buffer(), bytes)? {
                return Ok(s);
            }
            // Also waits for the batches handed to the submitting thread.
            rec.submit(&self.0.gpu)?;
        }
        self.0.gpu.queue.write_buffer(s.buffer(), 0, bytes);
        Ok(s)
    }

    fn download(&self, s: &WgpuStorage) -> Readback<CpuStorage> {
        let (bytes, dtype) = (s.len as u64 * s.dtype.size_in_bytes() as u64, s.dtype);
        match self.read(&[(s.buffer(), bytes)]) {
            Ok(m) => Readback::later(async move { CpuStorage::from_bytes(dtype, &m.bytes().await?[..bytes as usize]) }),
            Err(e) => Readback::done(Err(e)),
        }
    }

    fn synchronize(&self) -> Readback<()> {
        match self.read(&[]) {
            Ok(m) => Readback::later(async move { m.bytes().await.map(|_| ()) }),
            Err(e) => Readback::done(Err(e)),
        }
    }

    fn begin_capture(&self) -> Result<()> {
        self.begin_capture_wgpu()
    }

    fn end_capture(&self) -> Result<crate::backend::Graph> {
        self.end_capture_wgpu()
    }

    fn abort_capture(&self) {
        self.abort_capture_wgpu()
    }

    fn replay(&self, g: &crate::backend::Graph) -> Result<()> {
        self.replay_wgpu(g)
    }

    fn new_flag(&self) -> Result<WgpuStorage> {
        let flag = self.storage_in(&self.0.flag_pool, DType::U32, FLAG_WORDS)?;
        // Zeroed by a clear (no kernel, no bind group) in order with the recorded work, before
        // the kernels that write the flag; while this thread captures, by a clear at the start of
        // every replay (only the capture's kernels touch a flag made in it).
        let mut rec = self.rec();
        if !rec.clear_at_replay(flag.buffer()) {
            rec.encoder(&self.0.gpu).clear_buffer(flag.buffer(), 0, None);
        }
        Ok(flag)
    }

    fn copy_flag(&self, f: &WgpuStorage) -> Result<WgpuStorage> {
        let copy = self.storage_in(&self.0.flag_pool, DType::U32, FLAG_WORDS)?;
        let bytes = 4 * FLAG_WORDS as u64;
        self.rec().encoder(&self.0.gpu).copy_buffer_to_buffer(f.buffer(), 0, copy.buffer(), 0, bytes);
        Ok(copy)
    }

    fn read_flags(&self, flags: &[&WgpuStorage]) -> Readback<Vec<Result<()>>> {
        let bytes = 4 * FLAG_WORDS as u64;
        let parts: Vec<(&wgpu::Buffer, u64)> = flags.iter().map(|f| (f.buffer(), bytes)).collect();
        match self.read(&parts) {
            Ok(m) => Readback::later(async move {
                let words: Vec<u32> = bytemuck::pod_collect_to_vec(&m.bytes().await?);
                Ok(words.chunks(FLAG_WORDS).map(flag_result).collect())
            }),
            Err(e) => Readback::done(Err(e)),
        }
    }
}
