//! The rocBLAS side of [`Blas`]: one handle on the backend's device and stream, the library
//! loaded at run time like the HIP runtime (`dylib.rs`), so a `rocm` build starts where rocBLAS
//! is absent (matmul then runs on the cpu reference: see `src/native/matmul.rs`).
//!
//! `librocblas` is found as `RWO_ROCBLAS_LIB` names it, else by the soname built for the HIP
//! runtime loaded (`gfx::rocblas_sonames`), beside it first, then through the loader and under
//! `$ROCM_PATH/lib` and `/opt/rocm/lib` (`hip_api::HipLib::open_library`). The entry points
//! are declared here from `rocblas/rocblas-functions.h` and `rocblas-auxiliary.h` (rocBLAS 2 to
//! 5: `rocblas_int` is 32 bits, `rocblas_stride` 64); each mirrors the cuBLAS call of
//! `blas/cuda.rs`.

use super::{Blas, Gemm};
use crate::native::dylib::dylib;
use crate::native::gfx;
use crate::native::hip_api::{self, Bound, Stream};
use crate::{BackendKind, DType, Error, Result};
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Mutex;

// The values below are rocblas/include/internal/rocblas-types.h's at ROCm/rocBLAS rocm-5.2.3
// and rocm-6.2.2, and at ROCm/rocm-libraries 4bd45072 (projects/rocblas, rocBLAS 5 of ROCm 7):
// the same in all three.

/// `rocblas_handle`.
type Handle = *mut c_void;
/// `rocblas_status` (a C enum): `rocblas_status_success` is 0.
type Status = c_int;
const STATUS_SUCCESS: Status = 0;
/// `rocblas_operation`: `rocblas_operation_none`, `rocblas_operation_transpose`.
const OP_N: c_int = 111;
const OP_T: c_int = 112;
/// `rocblas_datatype`: `rocblas_datatype_f16_r`, `_f32_r`, `_bf16_r`.
const F16_R: c_int = 150;
const F32_R: c_int = 151;
const BF16_R: c_int = 168;
/// `rocblas_gemm_algo_standard`.
const ALGO_STANDARD: c_int = 0;
/// `rocblas_gemm_flags_none`.
const GEMM_FLAGS_NONE: u32 = 0;
/// `rocblas_atomics_not_allowed`: `rocblas_atomics_allowed` (1), the default before rocBLAS 5
/// (ROCm 7; rocblas-auxiliary.h at rocm-6.2.2 and at rocm-libraries 339dd37f), lets GEMMs sum
/// with atomics, so that a product can differ from run to run. `rocblas_set_atomics_mode` is
/// exported from rocm-5.0.0 on.
const ATOMICS_NOT_ALLOWED: c_int = 0;

dylib! {
    /// The rocBLAS calls made here (cuBLAS's twins: `cublasCreate`, `cublasSetStream`,
    /// `cublas{S,D}gemmStridedBatched`, `cublasGemmStridedBatchedEx`).
    pub(crate) struct Fns {
        fn rocblas_create_handle(handle: *mut Handle) -> Status;
        fn rocblas_destroy_handle(handle: Handle) -> Status;
        fn rocblas_set_stream(handle: Handle, stream: Stream) -> Status;
        fn rocblas_set_atomics_mode(handle: Handle, mode: c_int) -> Status;
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

/// Runs `call` with the handle while its lock is held and the guard `bind` makes (the device
/// bound to the thread) lives: rocBLAS does not synchronise a handle's state, so two threads
/// must never be inside calls on one handle.
fn locked<H: Copy, G, T>(
    handle: &Mutex<H>,
    bind: impl FnOnce() -> std::result::Result<G, String>,
    call: impl FnOnce(H) -> T,
) -> std::result::Result<T, String> {
    let guard = handle.lock().unwrap_or_else(|e| e.into_inner());
    let _bound = bind()?;
    Ok(call(*guard))
}

/// A rocBLAS handle bound to the backend's stream, used under a mutex with the device bound;
/// atomics not allowed, so that a GEMM gives the same bits every run.
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
    /// The library built for `hip` with every entry point used here, and where it was found;
    /// or why not. Needs no GPU.
    pub(crate) fn load(hip: &hip_api::HipLib) -> std::result::Result<(Fns, String), String> {
        let opened = hip.open_library("rocBLAS", "RWO_ROCBLAS_LIB", &gfx::rocblas_sonames(hip.version))?;
        let fns = Fns::resolve(&opened.lib).map_err(|e| format!("{}: {e}", opened.name))?;
        Ok((fns, opened.name))
    }

    /// A handle on `stream` of device `ordinal`, or why rocBLAS cannot be used: no library, a
    /// missing entry point, or a failing call.
    pub(crate) fn open(
        hip: &'static hip_api::HipLib,
        ordinal: c_int,
        stream: Stream,
    ) -> std::result::Result<RocBlas, String> {
        let (fns, _) = Self::load(hip)?;
        let _bound = Bound::new(hip, ordinal)?;
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: writes one handle; the device is current.
        status(&fns, "rocblas_create_handle", unsafe { (fns.rocblas_create_handle)(&mut handle) })?;
        let mut buf = [0 as c_char; 128];
        // SAFETY: `buf` holds `len` bytes; rocBLAS writes a NUL-terminated string within them.
        let version = match unsafe { (fns.rocblas_get_version_string)(buf.as_mut_ptr(), buf.len()) } {
            // SAFETY: NUL-terminated (the call succeeded within the buffer).
            STATUS_SUCCESS => unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned(),
            _ => "(version unknown)".into(),
        };
        // Owned from here: dropped (destroyed) if a setting below fails.
        let blas = RocBlas { fns, handle: Mutex::new(handle), hip, ordinal, version };
        // SAFETY: the handle is live; the stream outlives it (the runtime drops the handle first).
        status(&blas.fns, "rocblas_set_stream", unsafe { (blas.fns.rocblas_set_stream)(handle, stream) })?;
        // SAFETY: the handle is live; a plain setting.
        let atomics = unsafe { (blas.fns.rocblas_set_atomics_mode)(handle, ATOMICS_NOT_ALLOWED) };
        status(&blas.fns, "rocblas_set_atomics_mode", atomics)?;
        Ok(blas)
    }
}

/// A rocBLAS status as a reason, with the library's own text.
fn status(fns: &Fns, what: &str, s: Status) -> std::result::Result<(), String> {
    if s == STATUS_SUCCESS {
        return Ok(());
    }
    // SAFETY: a plain call taking a status code.
    let text = hip_api::static_text(unsafe { (fns.rocblas_status_to_string)(s) });
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

/// The rocBLAS GEMM a dtype takes: `sgemm`, `dgemm`, or `gemm_ex` with this `rocblas_datatype`.
#[derive(Clone, Copy)]
enum Call {
    S,
    D,
    Ex(c_int),
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
        let call = match g.dtype {
            DType::F32 => Call::S,
            DType::F64 => Call::D,
            DType::F16 => Call::Ex(F16_R),
            DType::BF16 => Call::Ex(BF16_R),
            other => {
                let msg = format!("rocBLAS GEMM of {other}: the spec allows floats only");
                return Err(Error::Backend { backend, msg });
            }
        };
        // The caller keeps every size within `LIMIT`, so these conversions are exact.
        let i = |v: usize| v as c_int;
        let s = |v: usize| v as i64;
        let (ta, tb) = (op(g.a.trans), op(g.b.trans));
        let (a, b, c) = (dev(g.a.ptr), dev(g.b.ptr), dev(g.c));
        let f = &self.fns;
        let run = |handle: Handle| {
            // SAFETY: the caller's contract: every matrix lies in live device memory of this
            // device; the scalars live through the call (host pointer mode: read before
            // returning); the handle is ours alone while `locked` holds it.
            unsafe {
                match call {
                    Call::D => {
                        let (one, zero) = (1f64, 0f64);
                        #[rustfmt::skip]
                        let st = (f.rocblas_dgemm_strided_batched)(handle, ta, tb, i(g.m), i(g.n), i(g.k), &one,
                            a as *const f64, i(g.a.ld), s(g.a.stride), b as *const f64, i(g.b.ld), s(g.b.stride),
                            &zero, c as *mut f64, i(g.ldc), s(g.stride_c), i(g.batch));
                        st
                    }
                    Call::Ex(t) => {
                        // f32 accumulation with f32 alpha and beta (what compute type f32_r reads).
                        let (one, zero) = (1f32, 0f32);
                        let (one, zero) = (&one as *const f32 as *const c_void, &zero as *const f32 as *const c_void);
                        // C and D are the same matrix (beta 0: C is not read).
                        #[rustfmt::skip]
                        let st = (f.rocblas_gemm_strided_batched_ex)(handle, ta, tb, i(g.m), i(g.n), i(g.k), one,
                            a, t, i(g.a.ld), s(g.a.stride), b, t, i(g.b.ld), s(g.b.stride), zero, c, t, i(g.ldc),
                            s(g.stride_c), c, t, i(g.ldc), s(g.stride_c), i(g.batch), F32_R, ALGO_STANDARD, 0,
                            GEMM_FLAGS_NONE);
                        st
                    }
                    Call::S => {
                        let (one, zero) = (1f32, 0f32);
                        #[rustfmt::skip]
                        let st = (f.rocblas_sgemm_strided_batched)(handle, ta, tb, i(g.m), i(g.n), i(g.k), &one,
                            a as *const f32, i(g.a.ld), s(g.a.stride), b as *const f32, i(g.b.ld), s(g.b.stride),
                            &zero, c as *mut f32, i(g.ldc), s(g.stride_c), i(g.batch));
                        st
                    }
                }
            }
        };
        let st = locked(&self.handle, || Bound::new(self.hip, self.ordinal), run)
            .map_err(|msg| Error::Backend { backend, msg })?;
        status(f, "rocBLAS strided-batched GEMM", st).map_err(|msg| Error::Backend { backend, msg })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// Set while it lives: stands for the device binding `Bound` keeps.
    struct Flag<'a>(&'a Cell<bool>);

    impl Drop for Flag<'_> {
        fn drop(&mut self) {
            self.0.set(false);
        }
    }

    #[test]
    fn a_call_runs_with_the_handle_locked_and_the_device_bound() {
        let handle = Mutex::new(7usize);
        let bound = Cell::new(false);
        let bind = || {
            bound.set(true);
            Ok(Flag(&bound))
        };
        // Inside the call, another thread's lock would wait, and the binding lives.
        let seen = locked(&handle, bind, |h| (h, handle.try_lock().is_err(), bound.get()));
        assert_eq!(seen, Ok((7, true, true)));
        assert!(handle.try_lock().is_ok() && !bound.get(), "both released after the call");
        // A device that cannot be bound: no call, and the lock is released.
        let ran = Cell::new(false);
        let failed = locked(&handle, || Err::<Flag, _>("hipSetDevice: no device".into()), |_| ran.set(true));
        assert_eq!(failed, Err("hipSetDevice: no device".to_string()));
        assert!(!ran.get() && handle.try_lock().is_ok());
    }
}
