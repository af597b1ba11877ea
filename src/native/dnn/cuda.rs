//! The cuDNN side of [`Dnn`]: one handle on the backend's context and stream, loaded at run
//! time (cudarc `dynamic-loading`), so a `cuda` build starts where cuDNN is absent (its ops then
//! run in our kernels). A convolution's first choice is a plan of the graph API (`graph.rs`,
//! cached here per case), its fallbacks the legacy API's algorithms ranked by the `_v7`
//! heuristics (alone with `RWO_CUDNN_GRAPH=0`).
//!
//! Invariants kept here: legacy descriptors live only for the call that made them (dropped, and
//! so destroyed, on every path); the handle is used under its mutex with the context bound (the
//! plans' lock is taken after it); f32 convolutions run with `CUDNN_FMA_MATH` (never TF32),
//! halves with tensor ops accumulating in f32; alpha and beta are f64 for f64 data and f32
//! otherwise, as cuDNN reads them.

mod graph;
mod sdpa;

use super::{Algo, AttnBuffers, AttnDesc, BnParams, ConvBuffers, ConvDesc, ConvDir, Dnn, Tensor4, Workspace};
use crate::{BackendKind, DType, Error, Result};
use cudarc::cudnn::sys::{self, cudnnDataType_t, cudnnMathType_t, cudnnStatus_t};
use cudarc::driver::{CudaContext, CudaStream};
use graph::Plan;
use std::collections::HashMap;
use std::ffi::{CStr, c_int, c_void};
use std::sync::{Arc, Mutex};

/// The math mode of an [`Algo`] that is the graph API's plan for its case (its id unused).
const GRAPH: u32 = u32::MAX;

/// Every cuDNN entry point used here, checked at load (cudarc panics on a missing symbol).
const SYMBOLS: &[&str] = &[
    "cudnnCreate",
    "cudnnDestroy",
    "cudnnSetStream",
    "cudnnGetVersion",
    "cudnnGetErrorString",
    "cudnnCreateTensorDescriptor",
    "cudnnDestroyTensorDescriptor",
    "cudnnSetTensorNdDescriptor",
    "cudnnCreateFilterDescriptor",
    "cudnnDestroyFilterDescriptor",
    "cudnnSetFilterNdDescriptor",
    "cudnnCreateConvolutionDescriptor",
    "cudnnDestroyConvolutionDescriptor",
    "cudnnSetConvolutionNdDescriptor",
    "cudnnSetConvolutionGroupCount",
    "cudnnSetConvolutionMathType",
    "cudnnGetConvolutionForwardAlgorithmMaxCount",
    "cudnnGetConvolutionForwardAlgorithm_v7",
    "cudnnGetConvolutionForwardWorkspaceSize",
    "cudnnConvolutionForward",
    "cudnnGetConvolutionBackwardDataAlgorithmMaxCount",
    "cudnnGetConvolutionBackwardDataAlgorithm_v7",
    "cudnnGetConvolutionBackwardDataWorkspaceSize",
    "cudnnConvolutionBackwardData",
    "cudnnBatchNormalizationForwardInference",
    "cudnnBackendCreateDescriptor",
    "cudnnBackendDestroyDescriptor",
    "cudnnBackendSetAttribute",
    "cudnnBackendGetAttribute",
    "cudnnBackendFinalize",
    "cudnnBackendExecute",
];

/// The smallest epsilon every cuDNN version takes for batch norm (`CUDNN_BN_MIN_EPSILON` was
/// 1e-5 in early versions, 0 since); smaller ones run in our kernel.
const BN_MIN_EPSILON: f64 = 1e-5;

fn text(status: cudnnStatus_t) -> String {
    // SAFETY: cuDNN returns a static NUL-terminated string for every status.
    unsafe { CStr::from_ptr(sys::cudnnGetErrorString(status)) }.to_string_lossy().into_owned()
}

/// A cuDNN status as an error, with the library's own text.
fn check(what: &str, status: cudnnStatus_t) -> Result<()> {
    if status == cudnnStatus_t::CUDNN_STATUS_SUCCESS {
        return Ok(());
    }
    Err(Error::Backend { backend: BackendKind::Cuda, msg: format!("{what}: {status:?} ({})", text(status)) })
}

/// Whether `status` says the library does not take the case (its `NOT_SUPPORTED` family, or a
/// parameter its descriptors cannot state).
fn refused(status: cudnnStatus_t) -> bool {
    let code = status as u32;
    code / 1000 == 3 || (2000..3000).contains(&code)
}

fn data_type(dtype: DType) -> Option<cudnnDataType_t> {
    match dtype {
        DType::F32 => Some(cudnnDataType_t::CUDNN_DATA_FLOAT),
        DType::F64 => Some(cudnnDataType_t::CUDNN_DATA_DOUBLE),
        DType::F16 => Some(cudnnDataType_t::CUDNN_DATA_HALF),
        DType::BF16 => Some(cudnnDataType_t::CUDNN_DATA_BFLOAT16),
        _ => None,
    }
}

/// alpha = 1 and beta = 0 as cuDNN reads them for data of `dtype`.
struct Scale {
    f: [f32; 2],
    d: [f64; 2],
    double: bool,
}

impl Scale {
    fn new(dtype: DType) -> Scale {
        Scale { f: [1.0, 0.0], d: [1.0, 0.0], double: dtype == DType::F64 }
    }
    fn alpha(&self) -> *const c_void {
        if self.double { &self.d[0] as *const f64 as _ } else { &self.f[0] as *const f32 as _ }
    }
    fn beta(&self) -> *const c_void {
        if self.double { &self.d[1] as *const f64 as _ } else { &self.f[1] as *const f32 as _ }
    }
}

fn dev(p: super::DevicePtr) -> *mut c_void {
    p.0 as usize as *mut c_void
}

/// Descriptors made for one call, destroyed on drop.
struct TensorDesc(sys::cudnnTensorDescriptor_t);
struct FilterDesc(sys::cudnnFilterDescriptor_t);
struct ConvolutionDesc(sys::cudnnConvolutionDescriptor_t);

impl Drop for TensorDesc {
    fn drop(&mut self) {
        // SAFETY: created by cudnnCreateTensorDescriptor, destroyed once.
        let _ = unsafe { sys::cudnnDestroyTensorDescriptor(self.0) };
    }
}
impl Drop for FilterDesc {
    fn drop(&mut self) {
        // SAFETY: created by cudnnCreateFilterDescriptor, destroyed once.
        let _ = unsafe { sys::cudnnDestroyFilterDescriptor(self.0) };
    }
}
impl Drop for ConvolutionDesc {
    fn drop(&mut self) {
        // SAFETY: created by cudnnCreateConvolutionDescriptor, destroyed once.
        let _ = unsafe { sys::cudnnDestroyConvolutionDescriptor(self.0) };
    }
}

/// What making a descriptor gave: the descriptor, or "the library does not take it".
type Made<T> = Result<Option<T>>;

/// `Ok(None)` for a refusal, an error for any other failure.
fn made<T>(what: &str, status: cudnnStatus_t, value: T) -> Made<T> {
    if refused(status) { Ok(None) } else { check(what, status).map(|_| Some(value)) }
}

fn ints(v: &[usize]) -> Vec<c_int> {
    // Descriptors are built from shared-logic values already checked against `LIMIT`.
    v.iter().map(|&x| x as c_int).collect()
}

fn tensor(dtype: cudnnDataType_t, t: &Tensor4) -> Made<TensorDesc> {
    let mut raw = std::ptr::null_mut();
    // SAFETY: writes one descriptor handle.
    check("cudnnCreateTensorDescriptor", unsafe { sys::cudnnCreateTensorDescriptor(&mut raw) })?;
    let d = TensorDesc(raw);
    let (dims, strides) = (ints(&t.dims), ints(&t.strides));
    // SAFETY: the descriptor is live; both arrays hold 4 ints.
    let st = unsafe { sys::cudnnSetTensorNdDescriptor(d.0, dtype, 4, dims.as_ptr(), strides.as_ptr()) };
    made("cudnnSetTensorNdDescriptor", st, d)
}

fn filter(dtype: cudnnDataType_t, dims: &[usize; 4]) -> Made<FilterDesc> {
    let mut raw = std::ptr::null_mut();
    // SAFETY: writes one descriptor handle.
    check("cudnnCreateFilterDescriptor", unsafe { sys::cudnnCreateFilterDescriptor(&mut raw) })?;
    let d = FilterDesc(raw);
    let dims = ints(dims);
    let nchw = sys::cudnnTensorFormat_t::CUDNN_TENSOR_NCHW;
    // SAFETY: the descriptor is live; `dims` holds 4 ints.
    let st = unsafe { sys::cudnnSetFilterNdDescriptor(d.0, dtype, nchw, 4, dims.as_ptr()) };
    made("cudnnSetFilterNdDescriptor", st, d)
}

/// The math mode a convolution of `dtype` may use: FMA for f32 (no TF32) and f64, tensor ops
/// (accumulating in f32) for halves.
fn math_for(dtype: DType) -> cudnnMathType_t {
    if matches!(dtype, DType::F16 | DType::BF16) {
        cudnnMathType_t::CUDNN_TENSOR_OP_MATH
    } else {
        cudnnMathType_t::CUDNN_FMA_MATH
    }
}

fn math_from(v: u32) -> Option<cudnnMathType_t> {
    use cudnnMathType_t::*;
    [CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, CUDNN_FMA_MATH]
        .into_iter()
        .find(|m| *m as u32 == v)
}

fn convolution(c: &ConvDesc, math: cudnnMathType_t) -> Made<ConvolutionDesc> {
    let compute =
        if c.dtype == DType::F64 { cudnnDataType_t::CUDNN_DATA_DOUBLE } else { cudnnDataType_t::CUDNN_DATA_FLOAT };
    let mut raw = std::ptr::null_mut();
    // SAFETY: writes one descriptor handle.
    check("cudnnCreateConvolutionDescriptor", unsafe { sys::cudnnCreateConvolutionDescriptor(&mut raw) })?;
    let d = ConvolutionDesc(raw);
    let (pad, stride, dil) = (ints(&c.padding), ints(&c.stride), ints(&c.dilation));
    let mode = sys::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION;
    // SAFETY: the descriptor is live; each array holds 2 ints.
    let st = unsafe {
        sys::cudnnSetConvolutionNdDescriptor(d.0, 2, pad.as_ptr(), stride.as_ptr(), dil.as_ptr(), mode, compute)
    };
    if refused(st) {
        return Ok(None);
    }
    check("cudnnSetConvolutionNdDescriptor", st)?;
    // SAFETY: the descriptor is live.
    let st = unsafe { sys::cudnnSetConvolutionGroupCount(d.0, c.groups as c_int) };
    if refused(st) {
        return Ok(None);
    }
    check("cudnnSetConvolutionGroupCount", st)?;
    // SAFETY: the descriptor is live.
    let st = unsafe { sys::cudnnSetConvolutionMathType(d.0, math) };
    made("cudnnSetConvolutionMathType", st, d)
}

/// The descriptors of one convolution.
struct ConvDescs {
    x: TensorDesc,
    w: FilterDesc,
    y: TensorDesc,
    conv: ConvolutionDesc,
}

fn descs(c: &ConvDesc, math: cudnnMathType_t) -> Made<ConvDescs> {
    let Some(dtype) = data_type(c.dtype) else { return Ok(None) };
    let (Some(x), Some(w), Some(y), Some(conv)) =
        (tensor(dtype, &c.x)?, filter(dtype, &c.w)?, tensor(dtype, &c.y)?, convolution(c, math)?)
    else {
        return Ok(None);
    };
    Ok(Some(ConvDescs { x, w, y, conv }))
}

/// One candidate of a search: algorithm, status, math mode and workspace bytes.
type Candidate = (u32, cudnnStatus_t, cudnnMathType_t, usize);

/// Whether a candidate may run: it succeeded, and f32 and f64 keep to FMA math (a candidate
/// offered only with tensor ops, TF32, is not taken).
fn usable(dtype: DType, (_, status, math, _): &Candidate) -> bool {
    let full = matches!(dtype, DType::F32 | DType::F64);
    let tensor_ops = !matches!(math, cudnnMathType_t::CUDNN_DEFAULT_MATH | cudnnMathType_t::CUDNN_FMA_MATH);
    *status == cudnnStatus_t::CUDNN_STATUS_SUCCESS && !(full && tensor_ops)
}

/// The `_v7` heuristics' candidates for `conv`, best first (empty when refused).
fn heuristics(handle: sys::cudnnHandle_t, dir: ConvDir, conv: &ConvDesc) -> Result<Vec<Candidate>> {
    let Some(d) = descs(conv, math_for(conv.dtype))? else { return Ok(vec![]) };
    let mut max: c_int = 0;
    let mut n: c_int = 0;
    // SAFETY: every descriptor is live; the result arrays hold `max` entries (zeroed entries
    // are valid values of every field).
    unsafe {
        let found: Vec<Candidate> = match dir {
            ConvDir::Forward => {
                let st = sys::cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &mut max);
                check("cudnnGetConvolutionForwardAlgorithmMaxCount", st)?;
                let mut perf: Vec<sys::cudnnConvolutionFwdAlgoPerf_t> = vec![std::mem::zeroed(); max.max(0) as usize];
                #[rustfmt::skip]
                let st = sys::cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x.0, d.w.0, d.conv.0, d.y.0, max, &mut n,
                    perf.as_mut_ptr());
                if refused(st) {
                    return Ok(vec![]);
                }
                check("cudnnGetConvolutionForwardAlgorithm_v7", st)?;
                perf.iter().take(n.max(0) as usize).map(|p| (p.algo as u32, p.status, p.mathType, p.memory)).collect()
            }
            ConvDir::BackwardData => {
                let st = sys::cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &mut max);
                check("cudnnGetConvolutionBackwardDataAlgorithmMaxCount", st)?;
                let mut perf: Vec<sys::cudnnConvolutionBwdDataAlgoPerf_t> =
                    vec![std::mem::zeroed(); max.max(0) as usize];
                #[rustfmt::skip]
                let st = sys::cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, d.w.0, d.y.0, d.conv.0, d.x.0, max,
                    &mut n, perf.as_mut_ptr());
                if refused(st) {
                    return Ok(vec![]);
                }
                check("cudnnGetConvolutionBackwardDataAlgorithm_v7", st)?;
                perf.iter().take(n.max(0) as usize).map(|p| (p.algo as u32, p.status, p.mathType, p.memory)).collect()
            }
        };
        Ok(found)
    }
}

fn fwd_algo(id: u32) -> Option<sys::cudnnConvolutionFwdAlgo_t> {
    use sys::cudnnConvolutionFwdAlgo_t::*;
    [
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
        CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
        CUDNN_CONVOLUTION_FWD_ALGO_DIRECT,
        CUDNN_CONVOLUTION_FWD_ALGO_FFT,
        CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
        CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
        CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
    ]
    .into_iter()
    .find(|a| *a as u32 == id)
}

fn bwd_algo(id: u32) -> Option<sys::cudnnConvolutionBwdDataAlgo_t> {
    use sys::cudnnConvolutionBwdDataAlgo_t::*;
    [
        CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
        CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
        CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT,
        CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING,
        CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD,
        CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED,
    ]
    .into_iter()
    .find(|a| *a as u32 == id)
}

/// A case of the plans' cache: direction, descriptor, the buffers' alignment.
type PlanKey = (ConvDir, ConvDesc, usize);

/// A cuDNN handle bound to the backend's stream.
pub struct CuDnn {
    handle: Mutex<sys::cudnnHandle_t>,
    ctx: Arc<CudaContext>,
    version: usize,
    /// Whether convolutions try the graph API first (`RWO_CUDNN_GRAPH=0`: never).
    graph: bool,
    /// The graph API's plan per case, `None` where it refused (taken after the handle's lock).
    plans: Mutex<HashMap<PlanKey, Option<Arc<Plan>>>>,
    /// The same for attention.
    attention_plans: Mutex<HashMap<AttnDesc, Option<Arc<Plan>>>>,
}

// SAFETY: the handle is only used under the mutex, with the context bound to the calling thread.
unsafe impl Send for CuDnn {}
// SAFETY: as for Send.
unsafe impl Sync for CuDnn {}

impl CuDnn {
    /// A handle on `stream`, or why cuDNN cannot be used: no library, a missing entry point, or
    /// a failing call.
    pub fn open(ctx: &Arc<CudaContext>, stream: &CudaStream) -> std::result::Result<CuDnn, String> {
        // cudarc panics when a library or symbol it loads is missing; keep that a reason.
        std::panic::catch_unwind(|| Self::open_inner(ctx, stream))
            .unwrap_or_else(|_| Err("cuDNN failed to load".into()))
    }

    fn open_inner(ctx: &Arc<CudaContext>, stream: &CudaStream) -> std::result::Result<CuDnn, String> {
        // SAFETY: only tries to load the library.
        if !unsafe { sys::is_culib_present() } {
            return Err("no cuDNN library (libcudnn.so.9) found: put its lib folder on LD_LIBRARY_PATH".into());
        }
        // SAFETY: the library is present (checked above); only looks symbols up.
        let lib = unsafe { sys::culib() };
        // SAFETY: looks a symbol up without calling it.
        if let Some(s) = SYMBOLS.iter().find(|s| unsafe { lib.get::<unsafe extern "C" fn()>(s.as_bytes()) }.is_err()) {
            return Err(format!("the cuDNN library lacks {s}"));
        }
        ctx.bind_to_thread().map_err(|e| format!("binding the context: {e:?}"))?;
        let mut handle: sys::cudnnHandle_t = std::ptr::null_mut();
        // SAFETY: writes one handle.
        check("cudnnCreate", unsafe { sys::cudnnCreate(&mut handle) }).map_err(|e| e.to_string())?;
        // SAFETY: reads a number.
        let version = unsafe { sys::cudnnGetVersion() };
        // Owned from here: dropped (destroyed) if setting the stream fails.
        let graph = std::env::var("RWO_CUDNN_GRAPH").map_or(true, |v| v.trim() != "0");
        let plans = Mutex::default();
        let attention_plans = Mutex::default();
        let dnn = CuDnn { handle: Mutex::new(handle), ctx: ctx.clone(), version, graph, plans, attention_plans };
        // SAFETY: the handle is live; the stream outlives it (the runtime drops the handle first).
        check("cudnnSetStream", unsafe { sys::cudnnSetStream(handle, stream.cu_stream() as sys::cudaStream_t) })
            .map_err(|e| e.to_string())?;
        Ok(dnn)
    }

    /// The handle, locked, with the context bound to this thread.
    fn lock(&self) -> Result<std::sync::MutexGuard<'_, sys::cudnnHandle_t>> {
        let guard = self.handle.lock().unwrap_or_else(|e| e.into_inner());
        self.ctx.bind_to_thread().map_err(|e| Error::Backend { backend: BackendKind::Cuda, msg: format!("{e:?}") })?;
        Ok(guard)
    }

    /// The graph API's plan for `key`, built on first use (`None`: refused). The caller holds
    /// the handle's lock.
    fn plan(&self, handle: sys::cudnnHandle_t, key: PlanKey) -> Result<Option<Arc<Plan>>> {
        let (dir, conv, align) = key;
        cached(&self.plans, key, || Plan::conv(handle, dir, &conv, align))
    }

    /// The plan for attention `a`, built on first use (`None`: refused). The caller holds the
    /// handle's lock.
    fn attention_plan(&self, handle: sys::cudnnHandle_t, a: &AttnDesc) -> Result<Option<Arc<Plan>>> {
        cached(&self.attention_plans, *a, || Plan::attention(handle, a))
    }
}

/// The plan `plans` holds for `key`, or the one `build` makes (`None`: refused), then kept.
fn cached<K: std::hash::Hash + Eq>(
    plans: &Mutex<HashMap<K, Option<Arc<Plan>>>>,
    key: K,
    build: impl FnOnce() -> Result<Option<Plan>>,
) -> Result<Option<Arc<Plan>>> {
    let mut plans = plans.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = plans.get(&key) {
        return Ok(p.clone());
    }
    let plan = build()?.map(Arc::new);
    plans.insert(key, plan.clone());
    Ok(plan)
}

impl Drop for CuDnn {
    fn drop(&mut self) {
        let handle = *self.handle.get_mut().unwrap_or_else(|e| e.into_inner());
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: the handle is live and used by nobody else (we hold `&mut self`).
            let _ = unsafe { sys::cudnnDestroy(handle) };
        }
    }
}

impl Dnn for CuDnn {
    fn describe(&self) -> String {
        let v = self.version;
        let api = if self.graph { "graph API, legacy fallbacks" } else { "legacy API: RWO_CUDNN_GRAPH=0" };
        format!("cuDNN {}.{}.{} ({api})", v / 10000, (v / 100) % 100, v % 100)
    }

    fn search_workspace(&self, _dir: ConvDir, _conv: &ConvDesc) -> Result<usize> {
        // The `_v7` heuristics rank algorithms without running them. (Ranking by running them,
        // `cudnnFind*AlgorithmEx`, picked slower ones on an H100: conv2d 32x64x56x56, 64 3x3
        // filters, f16 53 TFLOP/s against 84 from the heuristics' choice.)
        Ok(0)
    }

    unsafe fn conv_algorithms(
        &self,
        dir: ConvDir,
        conv: &ConvDesc,
        io: &ConvBuffers,
        _workspace: Workspace,
    ) -> Result<Vec<Algo>> {
        let guard = self.lock()?;
        let handle = *guard;
        let mut ranked = vec![];
        if self.graph
            && let Some(plan) = self.plan(handle, (dir, *conv, io.align()))?
        {
            ranked.push(Algo { id: 0, math: GRAPH, workspace: plan.workspace });
        }
        let found = heuristics(handle, dir, conv)?;
        for c in found.into_iter().filter(|c| usable(conv.dtype, c)) {
            let (id, _, math, memory) = c;
            // The workspace as the size query states it for this algorithm and math mode.
            let Some(d) = descs(conv, math)? else { continue };
            let mut size = 0usize;
            // SAFETY: every descriptor is live; writes one size.
            let st = unsafe {
                match (dir, fwd_algo(id), bwd_algo(id)) {
                    (ConvDir::Forward, Some(a), _) => sys::cudnnGetConvolutionForwardWorkspaceSize(
                        handle, d.x.0, d.w.0, d.conv.0, d.y.0, a, &mut size,
                    ),
                    (ConvDir::BackwardData, _, Some(a)) => sys::cudnnGetConvolutionBackwardDataWorkspaceSize(
                        handle, d.w.0, d.y.0, d.conv.0, d.x.0, a, &mut size,
                    ),
                    _ => continue,
                }
            };
            if st == cudnnStatus_t::CUDNN_STATUS_SUCCESS {
                ranked.push(Algo { id, math: math as u32, workspace: size.max(memory) });
            }
        }
        Ok(ranked)
    }

    unsafe fn conv(
        &self,
        dir: ConvDir,
        conv: &ConvDesc,
        algo: Algo,
        io: &ConvBuffers,
        workspace: Workspace,
    ) -> Result<()> {
        let guard = self.lock()?;
        let handle = *guard;
        let err = |what: &str| Error::Backend {
            backend: BackendKind::Cuda,
            msg: format!("cuDNN {what}: {algo:?} for {conv:?}"),
        };
        if algo.math == GRAPH {
            // Another lane's handle may have made the choice: the plan is this handle's own.
            let plan = self.plan(handle, (dir, *conv, io.align()))?;
            let plan = plan.filter(|p| p.workspace <= workspace.1);
            let plan = plan.ok_or_else(|| err("gave no plan within the workspace where it gave one before"))?;
            // SAFETY: the caller's contract: the buffers as `conv` states them, aligned as the
            // key says, and the workspace checked above.
            return unsafe { plan.run_conv(handle, io, workspace) };
        }
        let math = math_from(algo.math).ok_or_else(|| err("unknown math mode"))?;
        let d = descs(conv, math)?.ok_or_else(|| err("refused the descriptors it ranked algorithms for"))?;
        let s = Scale::new(conv.dtype);
        let (ws, ws_len) = (dev(workspace.0), workspace.1);
        // SAFETY: the caller's contract (buffers as described, workspace of `algo.workspace`
        // bytes); the scales live through the call.
        let st = unsafe {
            match dir {
                ConvDir::Forward => {
                    let a = fwd_algo(algo.id).ok_or_else(|| err("unknown algorithm"))?;
                    #[rustfmt::skip]
                    let st = sys::cudnnConvolutionForward(handle, s.alpha(), d.x.0, dev(io.x), d.w.0, dev(io.w), d.conv.0, a,
                        ws, ws_len, s.beta(), d.y.0, dev(io.y));
                    st
                }
                ConvDir::BackwardData => {
                    let a = bwd_algo(algo.id).ok_or_else(|| err("unknown algorithm"))?;
                    #[rustfmt::skip]
                    let st = sys::cudnnConvolutionBackwardData(handle, s.alpha(), d.w.0, dev(io.w), d.y.0, dev(io.y), d.conv.0,
                        a, ws, ws_len, s.beta(), d.x.0, dev(io.x));
                    st
                }
            }
        };
        check(if dir == ConvDir::Forward { "cudnnConvolutionForward" } else { "cudnnConvolutionBackwardData" }, st)
    }

    fn attention_workspace(&self, a: &AttnDesc) -> Result<Option<usize>> {
        if !self.graph {
            return Ok(None);
        }
        let guard = self.lock()?;
        Ok(self.attention_plan(*guard, a)?.map(|p| p.workspace))
    }

    unsafe fn attention(&self, a: &AttnDesc, io: &AttnBuffers, workspace: Workspace) -> Result<()> {
        let guard = self.lock()?;
        let plan = self.attention_plan(*guard, a)?.filter(|p| p.workspace <= workspace.1);
        let plan = plan.ok_or_else(|| Error::Backend {
            backend: BackendKind::Cuda,
            msg: format!("cuDNN gave no attention plan within {} bytes of workspace for {a:?}", workspace.1),
        })?;
        // SAFETY: the caller's contract; the workspace checked above.
        unsafe { plan.run_attention(*guard, a, io, workspace) }
    }

    unsafe fn batch_norm(
        &self,
        dtype: DType,
        x: (&Tensor4, super::DevicePtr),
        y: (&Tensor4, super::DevicePtr),
        p: &BnParams,
    ) -> Result<bool> {
        if p.eps < BN_MIN_EPSILON {
            return Ok(false);
        }
        let guard = self.lock()?;
        let handle = *guard;
        let (Some(t), Some(pt)) = (data_type(dtype), data_type(p.dtype)) else { return Ok(false) };
        let pdesc = Tensor4::packed([1, x.0.dims[1], 1, 1]);
        let (Some(xd), Some(yd), Some(pd)) = (tensor(t, x.0)?, tensor(t, y.0)?, tensor(pt, &pdesc)?) else {
            return Ok(false);
        };
        let mode = sys::cudnnBatchNormMode_t::CUDNN_BATCHNORM_SPATIAL;
        let s = Scale::new(dtype);
        // SAFETY: the caller's contract; the descriptors and scales live through the call.
        #[rustfmt::skip]
        let st = unsafe {
            sys::cudnnBatchNormalizationForwardInference(handle, mode, s.alpha(), s.beta(), xd.0, dev(x.1), yd.0,
                dev(y.1), pd.0, dev(p.scale), dev(p.bias), dev(p.mean), dev(p.var), p.eps)
        };
        if refused(st) {
            return Ok(false);
        }
        check("cudnnBatchNormalizationForwardInference", st).map(|_| true)
    }
}
