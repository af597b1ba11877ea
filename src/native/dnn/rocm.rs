//! The MIOpen side of [`Dnn`]: one handle on the backend's device and stream, the library
//! loaded at run time like the HIP runtime (`dylib.rs`), so a `rocm` build starts where MIOpen
//! is absent (its ops then run in our kernels). Each call mirrors the cuDNN one of
//! `dnn/cuda.rs`; the entry points are declared here from `miopen/miopen.h` (MIOpen 2 and 3).
//!
//! `libMIOpen` is found as `RWO_MIOPEN_LIB` names it, else by its soname beside the HIP runtime
//! loaded, then through the loader and under `$ROCM_PATH/lib` and `/opt/rocm/lib`; its soname is
//! the same in every ROCm, so one that brings a second HIP runtime along is refused
//! (`hip_api::HipLib::open_library`).
//!
//! Invariants kept here: descriptors live only for the call that made them (destroyed on drop);
//! the handle is used under its mutex with the device bound; alpha and beta are f32 for every
//! dtype (MIOpen reads them so). What this side declines, for our kernels to run: f64 and bf16
//! convolutions and any batch norm but f32 and f16 data (MIOpen's solvers and its inference
//! kernel cover those), and tensors that are not packed (MIOpen's solvers read packed NCHW).
//! Algorithms come from `miopenFind*` (it runs the candidates: once per case, by the cache of
//! `dnn.rs`), which MIOpen also requires before the call that runs one.

use super::{Algo, BnParams, ConvBuffers, ConvDesc, ConvDir, Dnn, Tensor4, Workspace};
use crate::native::dylib::dylib;
use crate::native::gfx;
use crate::native::hip_api::{self, Bound, Stream};
use crate::{BackendKind, DType, Error, Result};
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Mutex, MutexGuard};

// The values below are include/miopen/miopen.h's at ROCm/MIOpen rocm-5.2.3 and rocm-6.2.2 (and,
// for the convolution and batch-norm modes, at ROCm/rocm-libraries 01d724c5, projects/miopen of
// ROCm 7): the same everywhere they were read.

type Handle = *mut c_void;
type Desc = *mut c_void;
/// `miopenStatus_t`: `miopenStatusSuccess` is 0.
type Status = u32;
const STATUS_SUCCESS: Status = 0;
/// `miopenDataType_t`: `miopenHalf`, `miopenFloat`.
const HALF: u32 = 0;
const FLOAT: u32 = 1;
/// `miopenConvolution` (cross-correlation, as cuDNN's `CUDNN_CROSS_CORRELATION`).
const CONVOLUTION: u32 = 0;
/// `miopenBNSpatial`.
const BN_SPATIAL: u32 = 1;
/// How many algorithms one Find returns at most (MIOpen has five per direction).
const FIND_MAX: usize = 8;

/// `miopenConvAlgoPerf_t`: the algorithm (a union of 4-byte enums), its time and workspace (the
/// same three fields at rocm-5.2.3 and rocm-6.2.2).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct Perf {
    algo: u32,
    time: f32,
    memory: usize,
}

dylib! {
    /// The MIOpen calls made here (cuDNN's twins in `dnn/cuda.rs`).
    pub(crate) struct Fns {
        fn miopenCreate(handle: *mut Handle) -> Status;
        fn miopenDestroy(handle: Handle) -> Status;
        fn miopenSetStream(handle: Handle, stream: Stream) -> Status;
        fn miopenGetVersion(major: *mut usize, minor: *mut usize, patch: *mut usize) -> Status;
        fn miopenGetErrorString(status: Status) -> *const c_char;
        fn miopenCreateTensorDescriptor(desc: *mut Desc) -> Status;
        fn miopenSetTensorDescriptor(desc: Desc, dtype: u32, n: c_int, dims: *const c_int, strides: *const c_int)
            -> Status;
        fn miopenDestroyTensorDescriptor(desc: Desc) -> Status;
        fn miopenCreateConvolutionDescriptor(desc: *mut Desc) -> Status;
        fn miopenInitConvolutionNdDescriptor(
            desc: Desc, spatial: c_int, pad: *const c_int, stride: *const c_int, dilation: *const c_int, mode: u32,
        ) -> Status;
        fn miopenSetConvolutionGroupCount(desc: Desc, groups: c_int) -> Status;
        fn miopenDestroyConvolutionDescriptor(desc: Desc) -> Status;
        fn miopenConvolutionForwardGetWorkSpaceSize(
            handle: Handle, w: Desc, x: Desc, conv: Desc, y: Desc, size: *mut usize,
        ) -> Status;
        fn miopenFindConvolutionForwardAlgorithm(
            handle: Handle, xd: Desc, x: *const c_void, wd: Desc, w: *const c_void, conv: Desc, yd: Desc,
            y: *mut c_void, request: c_int, returned: *mut c_int, perf: *mut Perf, ws: *mut c_void, ws_size: usize,
            exhaustive: bool,
        ) -> Status;
        fn miopenConvolutionForward(
            handle: Handle, alpha: *const c_void, xd: Desc, x: *const c_void, wd: Desc, w: *const c_void,
            conv: Desc, algo: u32, beta: *const c_void, yd: Desc, y: *mut c_void, ws: *mut c_void, ws_size: usize,
        ) -> Status;
        fn miopenConvolutionBackwardDataGetWorkSpaceSize(
            handle: Handle, dy: Desc, w: Desc, conv: Desc, dx: Desc, size: *mut usize,
        ) -> Status;
        fn miopenFindConvolutionBackwardDataAlgorithm(
            handle: Handle, dyd: Desc, dy: *const c_void, wd: Desc, w: *const c_void, conv: Desc, dxd: Desc,
            dx: *mut c_void, request: c_int, returned: *mut c_int, perf: *mut Perf, ws: *mut c_void, ws_size: usize,
            exhaustive: bool,
        ) -> Status;
        fn miopenConvolutionBackwardData(
            handle: Handle, alpha: *const c_void, dyd: Desc, dy: *const c_void, wd: Desc, w: *const c_void,
            conv: Desc, algo: u32, beta: *const c_void, dxd: Desc, dx: *mut c_void, ws: *mut c_void, ws_size: usize,
        ) -> Status;
        fn miopenBatchNormalizationForwardInference(
            handle: Handle, mode: u32, alpha: *mut c_void, beta: *mut c_void, xd: Desc, x: *const c_void,
            yd: Desc, y: *mut c_void, pd: Desc, scale: *mut c_void, bias: *mut c_void, mean: *mut c_void,
            var: *mut c_void, eps: f64,
        ) -> Status;
    }
}

/// A MIOpen handle bound to the backend's stream.
pub struct MiOpen {
    fns: Fns,
    handle: Mutex<Handle>,
    hip: &'static hip_api::HipLib,
    ordinal: c_int,
    version: String,
}

// SAFETY: the handle is only used under the mutex, with the device bound to the calling thread.
unsafe impl Send for MiOpen {}
// SAFETY: as for Send.
unsafe impl Sync for MiOpen {}

fn err(msg: String) -> Error {
    Error::Backend { backend: BackendKind::Rocm, msg }
}

/// A MIOpen status as a reason, with the library's own text.
fn check(fns: &Fns, what: &str, s: Status) -> std::result::Result<(), String> {
    if s == STATUS_SUCCESS {
        return Ok(());
    }
    // SAFETY: a plain call taking a status code.
    let text = hip_api::static_text(unsafe { (fns.miopenGetErrorString)(s) });
    Err(format!("{what}: status {s} ({text})"))
}

impl MiOpen {
    /// The library built for `hip` with every entry point used here, and where it was found;
    /// or why not. Needs no GPU.
    pub(crate) fn load(hip: &hip_api::HipLib) -> std::result::Result<(Fns, String), String> {
        let sonames: Vec<String> = gfx::MIOPEN_SONAMES.iter().map(|s| s.to_string()).collect();
        let opened = hip.open_library("MIOpen", "RWO_MIOPEN_LIB", &sonames)?;
        let fns = Fns::resolve(&opened.lib).map_err(|e| format!("{}: {e}", opened.name))?;
        Ok((fns, opened.name))
    }

    /// A handle on `stream` of device `ordinal`, or why MIOpen cannot be used.
    pub(crate) fn open(
        hip: &'static hip_api::HipLib,
        ordinal: c_int,
        stream: Stream,
    ) -> std::result::Result<MiOpen, String> {
        let (fns, _) = Self::load(hip)?;
        let (mut major, mut minor, mut patch) = (0, 0, 0);
        // SAFETY: writes three numbers.
        check(&fns, "miopenGetVersion", unsafe { (fns.miopenGetVersion)(&mut major, &mut minor, &mut patch) })?;
        let _bound = Bound::new(hip, ordinal)?;
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: writes one handle; the device is current.
        check(&fns, "miopenCreate", unsafe { (fns.miopenCreate)(&mut handle) })?;
        let version = format!("{major}.{minor}.{patch}");
        // Owned from here: dropped (destroyed) if setting the stream fails.
        let dnn = MiOpen { fns, handle: Mutex::new(handle), hip, ordinal, version };
        // SAFETY: the handle is live; the stream outlives it (the runtime drops the handle first).
        check(&dnn.fns, "miopenSetStream", unsafe { (dnn.fns.miopenSetStream)(handle, stream) })?;
        Ok(dnn)
    }

    /// The handle, locked, with the device bound to this thread.
    fn lock(&self) -> Result<(MutexGuard<'_, Handle>, Bound)> {
        let guard = self.handle.lock().unwrap_or_else(|e| e.into_inner());
        Ok((guard, Bound::new(self.hip, self.ordinal).map_err(err)?))
    }

    fn check(&self, what: &str, s: Status) -> Result<()> {
        check(&self.fns, what, s).map_err(err)
    }
}

impl Drop for MiOpen {
    fn drop(&mut self) {
        let handle = *self.handle.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Ok(_bound) = Bound::new(self.hip, self.ordinal) {
            // SAFETY: the handle is live and used by nobody else (we hold `&mut self`).
            let _ = unsafe { (self.fns.miopenDestroy)(handle) };
        }
    }
}

/// A descriptor made for one call, destroyed on drop by `destroy`.
struct Made<'a> {
    desc: Desc,
    destroy: unsafe extern "C" fn(Desc) -> Status,
    _fns: &'a Fns,
}

impl Drop for Made<'_> {
    fn drop(&mut self) {
        // SAFETY: created by the matching create call, destroyed once.
        let _ = unsafe { (self.destroy)(self.desc) };
    }
}

fn ints(v: &[usize]) -> Vec<c_int> {
    // Descriptors are built from shared-logic values already checked against `LIMIT`.
    v.iter().map(|&x| x as c_int).collect()
}

/// The MIOpen type of a convolution's data, where this side runs it.
fn conv_type(dtype: DType) -> Option<u32> {
    match dtype {
        DType::F32 => Some(FLOAT),
        DType::F16 => Some(HALF),
        _ => None,
    }
}

/// The descriptors of one convolution: x, w, y, conv.
struct ConvDescs<'a> {
    x: Made<'a>,
    w: Made<'a>,
    y: Made<'a>,
    conv: Made<'a>,
}

impl MiOpen {
    fn tensor(&self, dtype: u32, dims: &[usize; 4], strides: &[usize; 4]) -> Result<Made<'_>> {
        let mut desc = std::ptr::null_mut();
        // SAFETY: writes one descriptor handle.
        self.check("miopenCreateTensorDescriptor", unsafe { (self.fns.miopenCreateTensorDescriptor)(&mut desc) })?;
        let d = Made { desc, destroy: self.fns.miopenDestroyTensorDescriptor, _fns: &self.fns };
        let (dims, strides) = (ints(dims), ints(strides));
        // SAFETY: the descriptor is live; both arrays hold 4 ints.
        let st = unsafe { (self.fns.miopenSetTensorDescriptor)(d.desc, dtype, 4, dims.as_ptr(), strides.as_ptr()) };
        self.check("miopenSetTensorDescriptor", st)?;
        Ok(d)
    }

    fn descs(&self, c: &ConvDesc) -> Result<Option<ConvDescs<'_>>> {
        let packed = |t: &Tensor4| t.strides == Tensor4::packed(t.dims).strides;
        let Some(dtype) = conv_type(c.dtype).filter(|_| packed(&c.x) && packed(&c.y)) else { return Ok(None) };
        let x = self.tensor(dtype, &c.x.dims, &c.x.strides)?;
        let y = self.tensor(dtype, &c.y.dims, &c.y.strides)?;
        let w = self.tensor(dtype, &c.w, &Tensor4::packed(c.w).strides)?;
        let mut desc = std::ptr::null_mut();
        // SAFETY: writes one descriptor handle.
        let st = unsafe { (self.fns.miopenCreateConvolutionDescriptor)(&mut desc) };
        self.check("miopenCreateConvolutionDescriptor", st)?;
        let conv = Made { desc, destroy: self.fns.miopenDestroyConvolutionDescriptor, _fns: &self.fns };
        let (pad, stride, dil) = (ints(&c.padding), ints(&c.stride), ints(&c.dilation));
        // SAFETY: the descriptor is live; each array holds 2 ints.
        let st = unsafe {
            (self.fns.miopenInitConvolutionNdDescriptor)(
                conv.desc,
                2,
                pad.as_ptr(),
                stride.as_ptr(),
                dil.as_ptr(),
                CONVOLUTION,
            )
        };
        self.check("miopenInitConvolutionNdDescriptor", st)?;
        // SAFETY: the descriptor is live.
        let st = unsafe { (self.fns.miopenSetConvolutionGroupCount)(conv.desc, c.groups as c_int) };
        self.check("miopenSetConvolutionGroupCount", st)?;
        Ok(Some(ConvDescs { x, w, y, conv }))
    }
}

fn dev(p: super::DevicePtr) -> *mut c_void {
    p.0 as usize as *mut c_void
}

impl Dnn for MiOpen {
    fn describe(&self) -> String {
        format!("MIOpen {}", self.version)
    }

    fn search_workspace(&self, dir: ConvDir, conv: &ConvDesc) -> Result<usize> {
        let (guard, _bound) = self.lock()?;
        let Some(d) = self.descs(conv)? else { return Ok(0) };
        let mut size = 0usize;
        // SAFETY: every descriptor is live; writes one size.
        let st = unsafe {
            match dir {
                ConvDir::Forward => (self.fns.miopenConvolutionForwardGetWorkSpaceSize)(
                    *guard,
                    d.w.desc,
                    d.x.desc,
                    d.conv.desc,
                    d.y.desc,
                    &mut size,
                ),
                ConvDir::BackwardData => (self.fns.miopenConvolutionBackwardDataGetWorkSpaceSize)(
                    *guard,
                    d.y.desc,
                    d.w.desc,
                    d.conv.desc,
                    d.x.desc,
                    &mut size,
                ),
            }
        };
        // A case MIOpen cannot size is one it will not find an algorithm for: no workspace.
        Ok(if st == STATUS_SUCCESS { size } else { 0 })
    }

    unsafe fn conv_algorithms(
        &self,
        dir: ConvDir,
        conv: &ConvDesc,
        io: &ConvBuffers,
        workspace: Workspace,
    ) -> Result<Vec<Algo>> {
        let (guard, _bound) = self.lock()?;
        let Some(d) = self.descs(conv)? else { return Ok(vec![]) };
        let mut perf = [Perf::default(); FIND_MAX];
        let mut n: c_int = 0;
        let (ws, ws_len) = (dev(workspace.0), workspace.1);
        // SAFETY: the caller's contract (buffers as described; y, or dx, may be overwritten);
        // `perf` holds FIND_MAX entries.
        #[rustfmt::skip]
        let st = unsafe {
            match dir {
                ConvDir::Forward => (self.fns.miopenFindConvolutionForwardAlgorithm)(*guard, d.x.desc, dev(io.x),
                    d.w.desc, dev(io.w), d.conv.desc, d.y.desc, dev(io.y), FIND_MAX as c_int, &mut n, perf.as_mut_ptr(),
                    ws, ws_len, false),
                ConvDir::BackwardData => (self.fns.miopenFindConvolutionBackwardDataAlgorithm)(*guard, d.y.desc,
                    dev(io.y), d.w.desc, dev(io.w), d.conv.desc, d.x.desc, dev(io.x), FIND_MAX as c_int, &mut n,
                    perf.as_mut_ptr(), ws, ws_len, false),
            }
        };
        // A failing search is MIOpen declining the case (it has no solver for it).
        if st != STATUS_SUCCESS {
            return Ok(vec![]);
        }
        let found = &perf[..(n.max(0) as usize).min(FIND_MAX)];
        // Find returns its results fastest first.
        Ok(found.iter().map(|p| Algo { id: p.algo, math: 0, workspace: p.memory }).collect())
    }

    unsafe fn conv(
        &self,
        dir: ConvDir,
        conv: &ConvDesc,
        algo: Algo,
        io: &ConvBuffers,
        workspace: Workspace,
    ) -> Result<()> {
        let (guard, _bound) = self.lock()?;
        let what = format!("MIOpen refused the descriptors it found {algo:?} for: {conv:?}");
        let d = self.descs(conv)?.ok_or_else(|| err(what))?;
        let (one, zero) = (1f32, 0f32);
        let (alpha, beta) = (&one as *const f32 as *const c_void, &zero as *const f32 as *const c_void);
        let (ws, ws_len) = (dev(workspace.0), workspace.1);
        // SAFETY: the caller's contract (buffers as described, workspace of `algo.workspace`
        // bytes); the scales live through the call.
        #[rustfmt::skip]
        let (what, st) = unsafe {
            match dir {
                ConvDir::Forward => ("miopenConvolutionForward", (self.fns.miopenConvolutionForward)(*guard, alpha,
                    d.x.desc, dev(io.x), d.w.desc, dev(io.w), d.conv.desc, algo.id, beta, d.y.desc, dev(io.y), ws,
                    ws_len)),
                ConvDir::BackwardData => ("miopenConvolutionBackwardData", (self.fns.miopenConvolutionBackwardData)(
                    *guard, alpha, d.y.desc, dev(io.y), d.w.desc, dev(io.w), d.conv.desc, algo.id, beta, d.x.desc,
                    dev(io.x), ws, ws_len)),
            }
        };
        self.check(what, st)
    }

    unsafe fn batch_norm(
        &self,
        dtype: DType,
        x: (&Tensor4, super::DevicePtr),
        y: (&Tensor4, super::DevicePtr),
        p: &BnParams,
    ) -> Result<bool> {
        let packed = x.0.strides == Tensor4::packed(x.0.dims).strides;
        let Some(t) = conv_type(dtype).filter(|_| packed && p.dtype == DType::F32) else { return Ok(false) };
        let (guard, _bound) = self.lock()?;
        let (xd, yd) = (self.tensor(t, &x.0.dims, &x.0.strides)?, self.tensor(t, &y.0.dims, &y.0.strides)?);
        let pdims = [1, x.0.dims[1], 1, 1];
        let pd = self.tensor(FLOAT, &pdims, &Tensor4::packed(pdims).strides)?;
        let (mut one, mut zero) = (1f32, 0f32);
        let (alpha, beta) = (&mut one as *mut f32 as *mut c_void, &mut zero as *mut f32 as *mut c_void);
        // SAFETY: the caller's contract; the descriptors and scales live through the call
        // (MIOpen reads, never writes, the pointers its header declares mutable).
        #[rustfmt::skip]
        let st = unsafe {
            (self.fns.miopenBatchNormalizationForwardInference)(*guard, BN_SPATIAL, alpha, beta, xd.desc, dev(x.1),
                yd.desc, dev(y.1), pd.desc, dev(p.scale), dev(p.bias), dev(p.mean), dev(p.var), p.eps)
        };
        self.check("miopenBatchNormalizationForwardInference", st).map(|_| true)
    }
}
