//! Matmul on the native backend: one strided-batched GEMM of the runtime's BLAS per product
//! (cuBLAS on NVIDIA), planned by `blas::plan` (flags and leading dims for strided operands,
//! copies only where no flag reaches). A runtime without a BLAS runs matmul on the cpu
//! reference (`info()` says so).

use super::blas::{self, LIMIT, MatrixView, Reach};
use super::ptr::DevicePtr;
use super::usage::Path;
use super::{NativeBackend, NativeStorage, Runtime};
use crate::backend::{MatmulOps, Memory, matmul_then_fused};
use crate::cpu::CpuBackend;
use crate::expr::program::Program;
use crate::spec::matmul::MatmulGeometry;
use crate::{Layout, Result, Scalar};

impl<R: Runtime> NativeBackend<R> {
    /// Where the GEMM reads an operand: its first element in place, or a contiguous copy (kept
    /// alive in `keep` until the GEMM is queued).
    fn gemm_input(
        &self,
        s: &NativeStorage<R>,
        l: &Layout,
        reach: Reach,
        keep: &mut Vec<NativeStorage<R>>,
    ) -> Result<DevicePtr> {
        if reach != Reach::Copy {
            return Ok(s.at(l.offset()));
        }
        let c = self.contiguous(s, l)?;
        let p = c.ptr;
        keep.push(c);
        Ok(p)
    }
}

impl<R: Runtime> MatmulOps for NativeBackend<R> {
    fn matmul(
        &self,
        lhs: &NativeStorage<R>,
        ll: &Layout,
        rhs: &NativeStorage<R>,
        rl: &Layout,
        g: &MatmulGeometry,
    ) -> Result<NativeStorage<R>> {
        let Ok(lib) = self.0.rt.blas() else {
            self.0.library_use.count(Path::MatmulOnCpu);
            // No BLAS in this runtime: the cpu reference (correct, not fast; `info()` says so).
            let (a, b) = (self.to_host(lhs)?, self.to_host(rhs)?);
            return self.upload(&CpuBackend.matmul(&a, ll, &b, rl, g)?);
        };
        if let Some(plan) = self.matvec_plan(lhs.dtype, ll, rl, g) {
            let product = Program { inputs: vec![lhs.dtype], steps: vec![] };
            return self.run_matvec(&plan, (lhs, rhs), g, &product, &[], &[]);
        }
        self.0.library_use.count(Path::GemmLibrary);
        let (m, n, k) = (g.m, g.n, g.k);
        let y = self.storage(lhs.dtype, g.batch.elem_count() * m * n)?;
        if y.len == 0 {
            return Ok(y);
        }
        if k == 0 {
            // Empty sums: every float type's zero is all-zero bytes.
            // SAFETY: `y` holds exactly these bytes.
            unsafe { self.0.rt.memset(y.ptr, 0, y.bytes())? };
            return Ok(y);
        }
        let nb = g.batch.rank();
        let (lv, rv) = (MatrixView::of(ll, nb), MatrixView::of(rl, nb));
        let p = blas::plan(g.batch.dims(), m, n, k, &lv, &rv);
        let mut keep = vec![];
        let lp = self.gemm_input(lhs, ll, p.lhs, &mut keep)?;
        let rp = self.gemm_input(rhs, rl, p.rhs, &mut keep)?;
        let gemms = blas::calls(&p, lhs.dtype, (m, n, k), lp, rp, y.ptr).map_err(|big| {
            self.error(format!("matmul: a GEMM size or leading dim of {big} is past the BLAS limit {LIMIT}"))
        })?;
        for gemm in &gemms {
            // SAFETY: the plan reads each operand through its own layout (validated by the spec
            // to lie inside its storage) or through a contiguous copy in `keep`, alive until the
            // GEMM is queued (the stream orders its release); C is the new storage `y`.
            unsafe { lib.gemm(gemm)? };
        }
        Ok(y)
    }

    /// The matrix-vector kernels take an epilogue (where the BLAS would take the product:
    /// without one, matmul runs on the cpu).
    fn epilogues(&self) -> bool {
        !super::matvec::off() && self.0.rt.blas().is_ok()
    }

    fn matmul_then(
        &self,
        (lhs, ll): (&Self::Storage, &Layout),
        (rhs, rl): (&Self::Storage, &Layout),
        g: &MatmulGeometry,
        p: &Program,
        inputs: &[(&Self::Storage, &Layout)],
        params: &[Scalar],
    ) -> Result<Self::Storage> {
        match self.matvec_plan(lhs.dtype, ll, rl, g) {
            Some(plan) => self.run_matvec(&plan, (lhs, rhs), g, p, inputs, params),
            None => matmul_then_fused(self, (lhs, ll), (rhs, rl), g, p, inputs, params),
        }
    }
}
