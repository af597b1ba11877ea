//! The rocBLAS side of [`Blas`]: one handle on the backend's device and stream, the library
//! loaded at run time like the HIP runtime (`dylib.rs`), so a `rocm` build starts where rocBLAS
//! is absent (matmul then runs on the cpu reference: see `src/native/matmul.rs`).
//!
//! `librocblas` is found as `RWO_ROCBLAS_LIB` names it, else by the sonames of ROCm 5 to 7,
//! else under `$ROCM_PATH/lib` and `/opt/rocm/lib`. The entry points are declared here from
//! `rocblas/rocblas-functions.h` (rocBLAS 2 to 5: `rocblas_int` is 32 bits, `rocblas_stride` 64);
//! each mirrors the cuBLAS call of `blas/cuda.rs`.

use super::{Blas, Gemm};
use crate::native::dylib::{self, dylib};
use crate::native::hip_api::{self, Stream};
use crate::native::rocm::Bound;
use crate::{BackendKind, DType, Error, Result};
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Mutex;

/// `rocblas_handle`.
type Handle = *mut c_void;
/// `rocblas_status` (a C enum; 0 is success).
type Status = c_int;
/// `rocblas_operation`: none and transpose.
const OP_N: c_int = 111;
const OP_T: c_int = 112;
/// `rocblas_datatype`: the real types.
const F16_R: c_int = 150;
const F32_R: c_int = 151;
const BF16_R: c_int = 168;
/// `rocblas_gemm_algo_standard`.
const ALGO_STANDARD: c_int = 0;

dylib! {
    /// The rocBLAS calls made here (cuBLAS's twins: `cublasCreate`, `cublasSetStream`,
    /// `cublas{S,D}gemmStridedBatched`, `cublasGemmStridedBatchedEx`).
    pub(crate) struct Fns {
        fn rocblas_create_handle(handle: *mut Handle) -> Status;
        fn rocblas_destroy_handle(handle: Handle) -> Status;
        fn rocblas_set_stream(handle: Handle, stream: Stream) -> Status;
        fn rocblas_status_to_string(status: Status) -> *const c_char;
        fn rocblas_get_version_string(buf: *mut c_char, len: usize) -> Status;
        fn rocblas_sgemm_strided_batched(
            handle: Handle, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const f32,
            a: *const f32, lda: c_int, sa: i64, b: *const f32, ldb: c_int, sb: i64, beta: *const f32,
            c: *mut f32, ldc: c_int, sc: i64, batch: c_int,
        ) -> Status;
        fn rocblas_dgemm_strided_batched(
            handle: Handle, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const f64,
            a: *const f64, lda: c_int, sa: i64, b: *const f64, ldb: c_int, sb: i64, beta: *const f64,
            c: *mut f64, ldc: c_int, sc: i64, batch: c_int,
        ) -> Status;
        fn rocblas_gemm_strided_batched_ex(
            handle: Handle, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const c_void,
            a: *const c_void, a_type: c_int, lda: c_int, sa: i64, b: *const c_void, b_type: c_int,
            ldb: c_int, sb: i64, beta: *const c_void, c: *const c_void, c_type: c_int, ldc: c_int,
            sc: i64, d: *mut c_void, d_type: c_int, ldd: c_int, sd: i64, batch: c_int, compute: c_int,
            algo: c_int, solution: i32, flags: u32,
        ) -> Status;
    }
}

/// A rocBLAS handle bound to the backend's stream, used under a mutex with the device bound.
pub struct RocBlas {
    fns: Fns,
    handle: Mutex<Handle>,
    hip: &'static hip_api::HipLib,
    ordinal: c_int,
    version: String,
}

// SAFETY: the handle is only used under the mutex, with the device bound to the calling thread.
unsafe impl Send for RocBlas {}
// SAFETY: as for Send.
unsafe impl Sync for RocBlas {}

impl RocBlas {
    /// A handle on `stream` of device `ordinal`, or why rocBLAS cannot be used: no library, a
    /// missing entry point, or a failing call.
    pub(crate) fn open(
        hip: &'static hip_api::HipLib,
        ordinal: c_int,
        stream: Stream,
    ) -> std::result::Result<RocBlas, String> {
        let names = ["librocblas.so.5", "librocblas.so.4", "librocblas.so.3", "librocblas.so.0"].map(String::from);
        let opened = dylib::open("rocBLAS", "RWO_ROCBLAS_LIB", &hip_api::candidates(&names, "librocblas.so"))?;
        let fns = Fns::resolve(&opened.lib).map_err(|e| format!("{}: {e}", opened.name))?;
        let _bound = Bound::new(hip, ordinal)?;
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: writes one handle; the device is current.
        status(&fns, "rocblas_create_handle", unsafe { (fns.rocblas_create_handle)(&mut handle) })?;
        let mut buf = [0 as c_char; 128];
        // SAFETY: `buf` holds `len` bytes; rocBLAS writes a NUL-terminated string within them.
        let version = match unsafe { (fns.rocblas_get_version_string)(buf.as_mut_ptr(), buf.len()) } {
            // SAFETY: NUL-terminated (the call succeeded within the buffer).
            0 => unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned(),
            _ => "(version unknown)".into(),
        };
        // Owned from here: dropped (destroyed) if setting the stream fails.
        let blas = RocBlas { fns, handle: Mutex::new(handle), hip, ordinal, version };
        // SAFETY: the handle is live; the stream outlives it (the runtime drops the handle first).
        status(&blas.fns, "rocblas_set_stream", unsafe { (blas.fns.rocblas_set_stream)(handle, stream) })?;
        Ok(blas)
    }
}

/// A rocBLAS status as a reason, with the library's own text.
fn status(fns: &Fns, what: &str, s: Status) -> std::result::Result<(), String> {
    if s == 0 {
        return Ok(());
    }
    // SAFETY: rocBLAS returns a static NUL-terminated string for every status.
    let text = unsafe { CStr::from_ptr((fns.rocblas_status_to_string)(s)) }.to_string_lossy();
    Err(format!("{what}: status {s} ({text})"))
}

impl Drop for RocBlas {
    fn drop(&mut self) {
        let handle = *self.handle.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Ok(_bound) = Bound::new(self.hip, self.ordinal) {
            // SAFETY: the handle is live and used by nobody else (we hold `&mut self`).
            let _ = unsafe { (self.fns.rocblas_destroy_handle)(handle) };
        }
    }
}

fn op(trans: bool) -> c_int {
    if trans { OP_T } else { OP_N }
}

fn dev(p: super::DevicePtr) -> *mut c_void {
    p.0 as usize as *mut c_void
}

impl Blas for RocBlas {
    fn describe(&self) -> String {
        format!("rocBLAS {}", self.version)
    }

    unsafe fn gemm(&self, g: &Gemm) -> Result<()> {
        let backend = BackendKind::Rocm;
        let handle = *self.handle.lock().unwrap_or_else(|e| e.into_inner());
        let _bound = Bound::new(self.hip, self.ordinal).map_err(|msg| Error::Backend { backend, msg })?;
        // The caller keeps every size within `LIMIT`, so these conversions are exact.
        let i = |v: usize| v as c_int;
        let s = |v: usize| v as i64;
        let (ta, tb) = (op(g.a.trans), op(g.b.trans));
        let (a, b, c) = (dev(g.a.ptr), dev(g.b.ptr), dev(g.c));
        let f = &self.fns;
        // SAFETY: the caller's contract: every matrix lies in live device memory of this
        // device; the scalars live through the call (host pointer mode: read before returning).
        let st = unsafe {
            match g.dtype {
                DType::F32 => {
                    let (one, zero) = (1f32, 0f32);
                    #[rustfmt::skip]
                    let st = (f.rocblas_sgemm_strided_batched)(handle, ta, tb, i(g.m), i(g.n), i(g.k), &one,
                        a as *const f32, i(g.a.ld), s(g.a.stride), b as *const f32, i(g.b.ld), s(g.b.stride),
                        &zero, c as *mut f32, i(g.ldc), s(g.stride_c), i(g.batch));
                    st
                }
                DType::F64 => {
                    let (one, zero) = (1f64, 0f64);
                    #[rustfmt::skip]
                    let st = (f.rocblas_dgemm_strided_batched)(handle, ta, tb, i(g.m), i(g.n), i(g.k), &one,
                        a as *const f64, i(g.a.ld), s(g.a.stride), b as *const f64, i(g.b.ld), s(g.b.stride),
                        &zero, c as *mut f64, i(g.ldc), s(g.stride_c), i(g.batch));
                    st
                }
                DType::F16 | DType::BF16 => {
                    let t = if g.dtype == DType::F16 { F16_R } else { BF16_R };
                    // f32 accumulation with f32 alpha and beta (what compute type f32_r reads).
                    let (one, zero) = (1f32, 0f32);
                    let (one, zero) = (&one as *const f32 as *const c_void, &zero as *const f32 as *const c_void);
                    // C and D are the same matrix (beta 0: C is not read).
                    #[rustfmt::skip]
                    let st = (f.rocblas_gemm_strided_batched_ex)(handle, ta, tb, i(g.m), i(g.n), i(g.k), one,
                        a, t, i(g.a.ld), s(g.a.stride), b, t, i(g.b.ld), s(g.b.stride), zero, c, t, i(g.ldc),
                        s(g.stride_c), c, t, i(g.ldc), s(g.stride_c), i(g.batch), F32_R, ALGO_STANDARD, 0, 0);
                    st
                }
                other => {
                    let msg = format!("rocBLAS GEMM of {other}: the spec allows floats only");
                    return Err(Error::Backend { backend, msg });
                }
            }
        };
        status(f, "rocBLAS strided-batched GEMM", st).map_err(|msg| Error::Backend { backend, msg })
    }
}
