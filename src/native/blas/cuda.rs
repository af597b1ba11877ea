//! The cuBLAS side of [`Blas`]: one handle on the backend's context and stream, loaded at run
//! time (cudarc `dynamic-loading`), so a `cuda` build starts where cuBLAS is absent (matmul then
//! runs on the cpu reference: see `src/native/matmul.rs`).

use super::{Blas, Gemm};
use crate::{BackendKind, DType, Error, Result};
use cudarc::cublas::sys::{self, cublasComputeType_t, cublasOperation_t, cublasStatus_t, cudaDataType};
use cudarc::driver::{CudaContext, CudaStream};
use std::ffi::{CStr, c_int, c_longlong, c_void};
use std::sync::{Arc, Mutex};

/// Every cuBLAS entry point used here: checked at load, so a library too old for one is
/// "absent" with a reason instead of a panic at the first call (cudarc panics on a missing symbol).
const SYMBOLS: &[&str] = &[
    "cublasCreate_v2",
    "cublasDestroy_v2",
    "cublasSetStream_v2",
    "cublasSetMathMode",
    "cublasGetVersion_v2",
    "cublasGetStatusString",
    "cublasSgemmStridedBatched",
    "cublasDgemmStridedBatched",
    "cublasGemmStridedBatchedEx",
];

/// A cuBLAS status as an error, with the library's own text.
fn check(what: &str, status: cublasStatus_t) -> Result<()> {
    if status == cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        return Ok(());
    }
    // SAFETY: cuBLAS returns a static NUL-terminated string for every status.
    let text = unsafe { CStr::from_ptr(sys::cublasGetStatusString(status)) }.to_string_lossy();
    Err(Error::Backend { backend: BackendKind::Cuda, msg: format!("{what}: {status:?} ({text})") })
}

/// A cuBLAS handle bound to the backend's stream. cuBLAS allows one handle on several threads,
/// but the mutex keeps each call whole (the stream and math mode are set once, at creation).
pub struct CuBlas {
    handle: Mutex<sys::cublasHandle_t>,
    ctx: Arc<CudaContext>,
    version: c_int,
}

// SAFETY: the handle is only used under the mutex, with the context bound to the calling thread.
unsafe impl Send for CuBlas {}
// SAFETY: as for Send.
unsafe impl Sync for CuBlas {}

impl CuBlas {
    /// A handle on `stream`, or why cuBLAS cannot be used: no library, a missing entry point,
    /// or a failing call.
    pub fn open(ctx: &Arc<CudaContext>, stream: &CudaStream) -> std::result::Result<CuBlas, String> {
        // cudarc panics when a library or symbol it loads is missing; keep that a reason.
        std::panic::catch_unwind(|| Self::open_inner(ctx, stream))
            .unwrap_or_else(|_| Err("cuBLAS failed to load".into()))
    }

    fn open_inner(ctx: &Arc<CudaContext>, stream: &CudaStream) -> std::result::Result<CuBlas, String> {
        // SAFETY: only tries to load the library.
        if !unsafe { sys::is_culib_present() } {
            return Err("no cuBLAS library (libcublas.so) found: put CUDA's lib64 on LD_LIBRARY_PATH".into());
        }
        // SAFETY: the library is present (checked above); only looks symbols up.
        let lib = unsafe { sys::culib() };
        // SAFETY: looks a symbol up without calling it.
        if let Some(s) = SYMBOLS.iter().find(|s| unsafe { lib.get::<unsafe extern "C" fn()>(s.as_bytes()) }.is_err()) {
            return Err(format!("the cuBLAS library lacks {s}"));
        }
        ctx.bind_to_thread().map_err(|e| format!("binding the context: {e:?}"))?;
        let mut handle: sys::cublasHandle_t = std::ptr::null_mut();
        // SAFETY: writes one handle.
        check("cublasCreate", unsafe { sys::cublasCreate_v2(&mut handle) }).map_err(|e| e.to_string())?;
        // Owned from here: dropped (destroyed) if a setting below fails.
        let mut blas = CuBlas { handle: Mutex::new(handle), ctx: ctx.clone(), version: 0 };
        let mut version = 0;
        // SAFETY: the handle is live; the stream outlives it (both belong to the runtime, which
        // drops the handle first). Reductions stay in f32 for the halves (no f16 split-K sums);
        // f32 GEMMs never use TF32 under this mode.
        unsafe {
            check("cublasSetStream", sys::cublasSetStream_v2(handle, stream.cu_stream() as sys::cudaStream_t))
                .and_then(|_| {
                    let mode = sys::cublasMath_t::CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
                    check("cublasSetMathMode", sys::cublasSetMathMode(handle, mode))
                })
                .and_then(|_| check("cublasGetVersion", sys::cublasGetVersion_v2(handle, &mut version)))
                .map_err(|e| e.to_string())?;
        }
        blas.version = version;
        Ok(blas)
    }
}

impl Drop for CuBlas {
    fn drop(&mut self) {
        let handle = *self.handle.get_mut().unwrap_or_else(|e| e.into_inner());
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: the handle is live and used by nobody else (we hold `&mut self`).
            let _ = unsafe { sys::cublasDestroy_v2(handle) };
        }
    }
}

fn op(trans: bool) -> cublasOperation_t {
    if trans { cublasOperation_t::CUBLAS_OP_T } else { cublasOperation_t::CUBLAS_OP_N }
}

fn dev(p: super::DevicePtr) -> *mut c_void {
    p.0 as usize as *mut c_void
}

impl Blas for CuBlas {
    fn describe(&self) -> String {
        format!("cuBLAS {}.{}.{}", self.version / 10000, (self.version / 100) % 100, self.version % 100)
    }

    unsafe fn gemm(&self, g: &Gemm) -> Result<()> {
        let handle = self.handle.lock().unwrap_or_else(|e| e.into_inner());
        self.ctx.bind_to_thread().map_err(|e| Error::Backend { backend: BackendKind::Cuda, msg: format!("{e:?}") })?;
        // The caller keeps every size within `LIMIT`, so these conversions are exact.
        let i = |v: usize| v as c_int;
        let s = |v: usize| v as c_longlong;
        let (ta, tb) = (op(g.a.trans), op(g.b.trans));
        let (a, b, c) = (dev(g.a.ptr), dev(g.b.ptr), dev(g.c));
        // SAFETY: the caller's contract: every matrix lies in live device memory of this
        // context; the scalars live through the call (cuBLAS reads them before returning).
        let status = unsafe {
            match g.dtype {
                DType::F32 => {
                    let (one, zero) = (1f32, 0f32);
                    #[rustfmt::skip]
                    let st = sys::cublasSgemmStridedBatched(*handle, ta, tb, i(g.m), i(g.n), i(g.k), &one,
                        a as *const f32, i(g.a.ld), s(g.a.stride), b as *const f32, i(g.b.ld), s(g.b.stride),
                        &zero, c as *mut f32, i(g.ldc), s(g.stride_c), i(g.batch));
                    st
                }
                DType::F64 => {
                    let (one, zero) = (1f64, 0f64);
                    #[rustfmt::skip]
                    let st = sys::cublasDgemmStridedBatched(*handle, ta, tb, i(g.m), i(g.n), i(g.k), &one,
                        a as *const f64, i(g.a.ld), s(g.a.stride), b as *const f64, i(g.b.ld), s(g.b.stride),
                        &zero, c as *mut f64, i(g.ldc), s(g.stride_c), i(g.batch));
                    st
                }
                DType::F16 | DType::BF16 => {
                    let t = if g.dtype == DType::F16 { cudaDataType::CUDA_R_16F } else { cudaDataType::CUDA_R_16BF };
                    // f32 accumulation, f32 alpha and beta (what CUBLAS_COMPUTE_32F reads).
                    let (one, zero) = (1f32, 0f32);
                    let (one, zero) = (&one as *const f32 as *const c_void, &zero as *const f32 as *const c_void);
                    #[rustfmt::skip]
                    let st = sys::cublasGemmStridedBatchedEx(*handle, ta, tb, i(g.m), i(g.n), i(g.k), one,
                        a, t, i(g.a.ld), s(g.a.stride), b, t, i(g.b.ld), s(g.b.stride), zero, c, t, i(g.ldc),
                        s(g.stride_c), i(g.batch), cublasComputeType_t::CUBLAS_COMPUTE_32F,
                        sys::cublasGemmAlgo_t::CUBLAS_GEMM_DFALT);
                    st
                }
                other => {
                    return Err(Error::Backend {
                        backend: BackendKind::Cuda,
                        msg: format!("cuBLAS GEMM of {other}: the spec allows floats only"),
                    });
                }
            }
        };
        check("cuBLAS strided-batched GEMM", status)
    }
}
