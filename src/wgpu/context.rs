//! The wgpu device: adapter choice, the features and limits asked for, and the capture of
//! wgpu errors as values.

use super::alloc::Retired;
use super::profile::Profiler;
use crate::spec::Family;
use crate::{BackendKind, Error, Result};
use std::sync::{Arc, Mutex};
use wgpu::{DeviceType, Features};

/// The optional features that make kernels faster or a dtype possible; none is assumed.
pub(crate) const WANTED: &[(&str, Features)] = &[
    ("f16", Features::SHADER_F16),
    ("f64", Features::SHADER_F64),
    ("i64", Features::SHADER_INT64),
    ("subgroup", Features::SUBGROUP),
    ("timestamp", Features::TIMESTAMP_QUERY),
    ("coop", Features::EXPERIMENTAL_COOPERATIVE_MATRIX),
];

/// Which optional features to request: all of [`WANTED`] unless `RWO_WGPU_FEATURES` says
/// `none` or lists some by name (`f16,i64`).
pub(crate) fn allowed_features(setting: Option<&str>) -> Result<Features> {
    let Some(list) = setting.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(WANTED.iter().fold(Features::empty(), |f, (_, x)| f | *x));
    };
    if list == "none" {
        return Ok(Features::empty());
    }
    list.split(',').try_fold(Features::empty(), |acc, name| {
        let found = WANTED.iter().find(|(n, _)| *n == name.trim()).map(|(_, f)| *f);
        found.map(|f| acc | f).ok_or_else(|| Error::BackendUnavailable {
            kind: "wgpu".into(),
            reason: format!(
                "RWO_WGPU_FEATURES: unknown feature {name:?}; known: none, f16, f64, i64, subgroup, timestamp, coop"
            ),
        })
    })
}

/// Errors wgpu reports through callbacks, kept until the next synchronisation point.
#[derive(Default)]
pub(crate) struct ErrorSink(Mutex<Option<String>>);

impl ErrorSink {
    fn record(&self, msg: String) {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert(msg);
    }

    /// The first error recorded since the last call, as an [`Error`].
    pub(crate) fn take(&self) -> Result<()> {
        match self.0.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(msg) => Err(Error::Backend { backend: BackendKind::Wgpu, msg }),
            None => Ok(()),
        }
    }
}

/// An open wgpu device and what it can do.
pub(crate) struct Gpu {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub features: Features,
    pub limits: wgpu::Limits,
    pub errors: Arc<ErrorSink>,
    /// The cooperative-matrix shapes and types the adapter multiplies (with the feature).
    pub coop: Vec<wgpu::CooperativeMatrixProperties>,
    /// Buffers the pools let go of, destroyed after the next submit.
    pub retired: Arc<Retired>,
    /// GPU time per kernel, when `RWO_WGPU_PROFILE=1` asks and the adapter can.
    pub profiler: Option<Profiler>,
    /// Whether kernels use WGSL's `dot4I8Packed`: natively naga always has it (SPIR-V's packed
    /// integer dot product where the driver has it, shifts and multiplies elsewhere). Not in a
    /// browser: its `wgslLanguageFeatures` would say, but wgpu's web backend reads that set
    /// unguarded, and a browser without it (Firefox ESR) would throw.
    pub dot4: bool,
}

/// Preference of an adapter: hardware before software, native APIs before GL.
fn rank(info: &wgpu::AdapterInfo) -> (u8, u8) {
    let ty = match info.device_type {
        DeviceType::DiscreteGpu => 0,
        DeviceType::IntegratedGpu => 1,
        DeviceType::VirtualGpu => 2,
        DeviceType::Other => 3,
        DeviceType::Cpu => 4,
    };
    let api = if info.backend == wgpu::Backend::Gl { 1 } else { 0 };
    (ty, api)
}

/// Whether an adapter is a software rasteriser (lavapipe, SwiftShader, WARP).
pub(crate) fn is_software(info: &wgpu::AdapterInfo) -> bool {
    info.device_type == DeviceType::Cpu
}

/// A software renderer behind OpenGL (llvmpipe): it compiles each kernel for seconds.
pub(crate) fn is_gl_software(info: &wgpu::AdapterInfo) -> bool {
    is_software(info) && info.backend == wgpu::Backend::Gl
}

/// A browser's software (fallback) WebGPU adapter, which a browser does not name, or SwiftShader
/// by name natively (Chromium's fallback is SwiftShader, and Chromium ships its Vulkan driver):
/// its compiler takes minutes over some kernels every other adapter builds at once, and the
/// browser loses the device (see the uses).
pub(crate) fn is_browser_fallback(info: &wgpu::AdapterInfo) -> bool {
    is_software(info) && (info.backend == wgpu::Backend::BrowserWebGpu || info.name.contains("SwiftShader"))
}

/// What the adapter is, in plain words.
pub(crate) fn plain_kind(info: &wgpu::AdapterInfo) -> String {
    let what = match info.device_type {
        DeviceType::DiscreteGpu => "a discrete GPU",
        DeviceType::IntegratedGpu => "an integrated GPU",
        DeviceType::VirtualGpu => "a virtual GPU",
        DeviceType::Cpu => "a software renderer running on the CPU",
        DeviceType::Other => "a device of unknown kind",
    };
    let api = match info.backend {
        wgpu::Backend::Vulkan => "Vulkan",
        wgpu::Backend::Metal => "Metal",
        wgpu::Backend::Dx12 => "Direct3D 12",
        wgpu::Backend::Gl => "OpenGL",
        wgpu::Backend::BrowserWebGpu => "the browser's WebGPU",
        wgpu::Backend::Noop => "no graphics API",
    };
    format!("{what}, through {api}")
}

/// Which adapter to open: the preferred one or the first whose name holds a text, or the
/// `n`-th in the order of [`Gpu::adapters`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum Pick<'a> {
    Name(Option<&'a str>),
    Ordinal(usize),
}

impl Gpu {
    /// The adapters that can run compute kernels, in the order the crate prefers them (the
    /// ordinals of [`Pick::Ordinal`]), and the names of every adapter found.
    pub(crate) async fn adapters() -> (Vec<wgpu::Adapter>, Vec<String>) {
        // GL only when no native API answers: probing it costs time and prints display noise.
        let mut adapters = Self::instance(wgpu::Backends::PRIMARY).enumerate_adapters(wgpu::Backends::all()).await;
        if adapters.is_empty() {
            adapters = Self::instance(wgpu::Backends::all()).enumerate_adapters(wgpu::Backends::all()).await;
        }
        let all_names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
        // Compute needs storage buffers in compute shaders; some GL adapters have none.
        adapters.retain(|a| a.limits().max_storage_buffers_per_shader_stage >= 8);
        adapters.sort_by_key(|a| rank(&a.get_info()));
        (adapters, all_names)
    }

    /// Opens the adapter `pick` names, asking for its own limits and the wanted features it
    /// has, within `allowed`.
    pub(crate) async fn open(pick: Pick<'_>, allowed: Features) -> std::result::Result<Gpu, String> {
        let (mut adapters, all_names) = Self::adapters().await;
        let count = adapters.len();
        match pick {
            Pick::Name(Some(f)) => adapters.retain(|a| a.get_info().name.to_lowercase().contains(&f.to_lowercase())),
            Pick::Ordinal(n) => adapters = adapters.into_iter().skip(n).take(1).collect(),
            Pick::Name(None) => {}
        }
        let Some(adapter) = adapters.into_iter().next() else {
            return Err(match pick {
                Pick::Name(Some(f)) => format!("no adapter named like {f:?} (RWO_ADAPTER); found {all_names:?}"),
                Pick::Ordinal(n) => format!("no adapter {n}: {count} can run compute kernels, of {all_names:?}"),
                Pick::Name(None) if all_names.is_empty() => {
                    "no adapter (install a Vulkan driver, e.g. apt-get install mesa-vulkan-drivers)".into()
                }
                Pick::Name(None) => format!("no adapter with compute storage buffers among {all_names:?}"),
            });
        };
        let info = adapter.get_info();
        // A pipeline cache changes no kernel: asked for whatever `allowed` says.
        let mut features = adapter.features() & (allowed | Features::PIPELINE_CACHE);
        let timing = Features::TIMESTAMP_QUERY | Features::TIMESTAMP_QUERY_INSIDE_PASSES;
        let profile = Profiler::wanted() && adapter.features().contains(timing);
        if profile {
            features |= timing;
        } else if Profiler::wanted() {
            eprintln!("RWO_WGPU_PROFILE: {} has no timestamp queries inside passes; no profile", info.name);
        }
        let limits = adapter.limits();
        let coop = features.contains(Features::EXPERIMENTAL_COOPERATIVE_MATRIX);
        let desc = wgpu::DeviceDescriptor {
            label: Some("rocm-wgpu-ops"),
            required_features: features,
            required_limits: limits.clone(),
            // SAFETY: the one experimental feature asked for is cooperative matrices, used only
            // by the f16 GEMM kernels, which the suite checks against the cpu reference on
            // every adapter that reports it.
            experimental_features: if coop {
                unsafe { wgpu::ExperimentalFeatures::enabled() }
            } else {
                wgpu::ExperimentalFeatures::disabled()
            },
            ..Default::default()
        };
        let coop = if coop { adapter.cooperative_matrix_properties() } else { vec![] };
        let (device, queue) = adapter.request_device(&desc).await.map_err(|e| format!("{}: {e}", info.name))?;
        let errors = Arc::new(ErrorSink::default());
        let sink = errors.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| sink.record(e.to_string())));
        let sink = errors.clone();
        device.set_device_lost_callback(move |reason, msg| sink.record(format!("device lost ({reason:?}): {msg}")));
        let profiler = profile.then(|| Profiler::new(&device, &queue));
        let dot4 = !cfg!(target_family = "wasm");
        Ok(Gpu { device, queue, info, features, limits, errors, coop, retired: Arc::default(), profiler, dot4 })
    }

    /// An instance of `backends`, unless `WGPU_BACKEND` in the environment says otherwise. The
    /// flags are wgpu's release defaults in every build: its debug-build defaults (`DEBUG`,
    /// `VALIDATION`) have naga write debug info into every kernel's SPIR-V, which looks up the
    /// source line of each statement by scanning the text from its start (13% of the CPU of the
    /// suite's elementwise cases), and load the Vulkan validation layers where installed.
    /// `WGPU_DEBUG=1` and `WGPU_VALIDATION=1` turn them on.
    fn instance(backends: wgpu::Backends) -> wgpu::Instance {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = backends;
        desc.flags = wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL;
        wgpu::Instance::new(desc.with_env())
    }

    pub(crate) fn has(&self, f: Features) -> bool {
        self.features.contains(f)
    }

    /// Why the f16 GEMM cannot run on cooperative matrices here (`None`: it can): it needs
    /// 16x16x16 products of f16 into f32, f16 and subgroups, and subgroups of exactly 32.
    pub(crate) fn coop_missing(&self) -> Option<&'static str> {
        use wgpu::CooperativeScalarType as S;
        let sixteen = |p: &wgpu::CooperativeMatrixProperties| {
            (p.m_size, p.n_size, p.k_size, p.ab_type, p.cr_type) == (16, 16, 16, S::F16, S::F32)
        };
        if !self.has(Features::EXPERIMENTAL_COOPERATIVE_MATRIX) {
            Some("no EXPERIMENTAL_COOPERATIVE_MATRIX")
        } else if !self.coop.iter().any(sixteen) {
            Some("no 16x16x16 f16->f32 configuration")
        } else if !self.has(Features::SHADER_F16 | Features::SUBGROUP) {
            Some("needs SHADER_F16 and SUBGROUP")
        } else if (self.info.subgroup_min_size, self.info.subgroup_max_size) != (32, 32) {
            Some("subgroups not exactly 32 wide")
        } else {
            None
        }
    }

    /// The largest buffer a kernel can bind, in bytes, rounded down to the 16 bytes the pool
    /// rounds sizes up to (NVIDIA's limit is 2^32 - 1: a buffer rounded past it fails
    /// validation).
    pub(crate) fn max_binding(&self) -> u64 {
        self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size) / 16 * 16
    }

    /// Runs `f` inside an error scope and returns what it produced, or the error it raised.
    #[cfg(not(target_family = "wasm"))]
    pub(crate) fn scoped<T>(&self, filter: wgpu::ErrorFilter, f: impl FnOnce() -> T) -> Result<T> {
        let scope = self.device.push_error_scope(filter);
        let out = f();
        match pollster::block_on(scope.pop()) {
            None => Ok(out),
            Some(e) => Err(Error::Backend { backend: BackendKind::Wgpu, msg: e.to_string() }),
        }
    }

    /// Runs `f`. A browser answers an error scope only later, on its event loop, so an error
    /// `f` raises reaches the uncaptured-error handler and is returned by the next submit or
    /// readback instead.
    #[cfg(target_family = "wasm")]
    pub(crate) fn scoped<T>(&self, _: wgpu::ErrorFilter, f: impl FnOnce() -> T) -> Result<T> {
        let out = f();
        self.errors.take().map(|()| out)
    }

    pub(crate) fn describe(&self) -> String {
        let software = if is_software(&self.info) { ", software" } else { "" };
        format!("wgpu: {} ({:?}{software})", self.info.name, self.info.backend)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_setting_parses() {
        assert_eq!(allowed_features(Some("none")).unwrap(), Features::empty());
        assert_eq!(allowed_features(Some("f16, i64")).unwrap(), Features::SHADER_F16 | Features::SHADER_INT64);
        assert!(allowed_features(None).unwrap().contains(Features::SHADER_F64));
        assert!(allowed_features(Some("f128")).unwrap_err().to_string().contains("unknown feature"));
    }
}

/// Families whose kernels run without wgpu's injected checks by default, each measurably faster
/// without them. H100 (Vulkan, driver 580), one run, checked / unchecked: matmul f32 4096^3
/// 8.23 / 5.03 ms, f16 (cooperative) 4.03 / 2.29, matrix-vector 1x4096x16384 0.198 / 0.110;
/// conv2d f32 [32,64,56,56] 64x3x3 0.532 / 0.411, f16 0.573 / 0.415, conv_transpose2d f32
/// 0.695 / 0.550. H200 (session 16, the whole bench both ways in one run): sdpa f32
/// [1,12,128,64] causal 319.5 / 74.2 us, f16 [1,32,4096,128] causal 350 / 132 ms, decode f16
/// 1034 / 365 us; qmatvec q4_0 f16 1x4096x4096 109.6 / 38.1 us, q8_0 75.2 / 36.0, q6_K 99.2 /
/// 59.8, q4_K 179.2 / 127.0 (their private arrays and loops). The other families measured within
/// the run's spread, or gains too small to give up the checks for.
const UNCHECKED: &[Family] = &[Family::Matmul, Family::Conv, Family::Attention, Family::Quant];

/// Which kernels get wgpu's injected bounds checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BoundsChecks {
    /// Every kernel but the [`UNCHECKED`] families' (`RWO_WGPU_BOUNDS_CHECKS` unset).
    Default,
    /// Every kernel (`RWO_WGPU_BOUNDS_CHECKS=1`).
    All,
    /// No kernel (`RWO_WGPU_BOUNDS_CHECKS=0`, for measuring what they cost).
    Off,
}

impl BoundsChecks {
    /// As `RWO_WGPU_BOUNDS_CHECKS` says.
    pub(crate) fn from_env() -> BoundsChecks {
        match std::env::var("RWO_WGPU_BOUNDS_CHECKS").as_deref() {
            Ok("0") => BoundsChecks::Off,
            Ok("1") => BoundsChecks::All,
            _ => BoundsChecks::Default,
        }
    }

    pub(crate) fn on(self, family: Family) -> bool {
        match self {
            BoundsChecks::Default => !UNCHECKED.contains(&family),
            BoundsChecks::All => true,
            BoundsChecks::Off => false,
        }
    }

    pub(crate) fn describe(self) -> String {
        match self {
            BoundsChecks::Default => {
                let names: Vec<&str> = UNCHECKED.iter().map(|f| f.name()).collect();
                format!("on, except {} (measured faster without)", names.join(", "))
            }
            BoundsChecks::All => "on for every kernel (RWO_WGPU_BOUNDS_CHECKS=1)".into(),
            BoundsChecks::Off => "off (RWO_WGPU_BOUNDS_CHECKS=0)".into(),
        }
    }
}
