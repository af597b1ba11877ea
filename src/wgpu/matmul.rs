//! Batched matmul on wgpu: the op as a GEMM problem ([`super::gemm`]), the operands read in
//! place through their strides (a transposed view is another load pattern, never a copy), on
//! the kernel matmul's table ([`super::gemm::TABLE`]) plans for it; an elementwise program over
//! the product (its epilogue) computed where the kernel stores C.

use super::gemm::{EpilogueArgs, Gemm, Operand, Prologue, TABLE, hooks, too_large};
use super::nn::rows::few_rows;
use super::{WgpuBackend, WgpuStorage};
use crate::backend::{MatmulOps, RowNormArgs, matmul_then_fused, norm_then_matmul};
use crate::expr::program::Program;
use crate::spec::matmul::MatmulGeometry;
use crate::{DType, Layout, Result, Scalar};

pub(crate) use super::gemm::variants::matmul as shader_variants;

/// The product of `lhs (batch.., m, k)` and `rhs (batch.., k, n)` as a GEMM problem.
fn problem(ll: &Layout, rl: &Layout, g: &MatmulGeometry) -> Gemm {
    let nb = g.batch.rank();
    let (ls, rs) = (ll.strides(), rl.strides());
    Gemm {
        batch: g.batch.dims().to_vec(),
        m: g.m,
        n: g.n,
        k: g.k,
        a: Operand { offset: ll.offset(), outer: ls[nb], k: ls[nb + 1], batch: ls[..nb].to_vec() },
        b: Operand { offset: rl.offset(), outer: rs[nb + 1], k: rs[nb], batch: rs[..nb].to_vec() },
        gather: vec![],
        c_transposed: false,
    }
    .simplified()
}

impl MatmulOps for WgpuBackend {
    fn matmul(
        &self,
        lhs: &WgpuStorage,
        ll: &Layout,
        rhs: &WgpuStorage,
        rl: &Layout,
        g: &MatmulGeometry,
    ) -> Result<WgpuStorage> {
        self.matmul_with((lhs, ll), (rhs, rl), g, None)
    }

    /// Every GEMM kernel stores C through one function, which an epilogue extends; a kernel
    /// forced by a test hook is recorded when the matmul is called, not later.
    fn epilogues(&self) -> bool {
        self.tune().gemm_epilogue != Some(false) && hooks::forced() == (None, None)
    }

    fn matmul_then(
        &self,
        lhs: (&WgpuStorage, &Layout),
        rhs: (&WgpuStorage, &Layout),
        g: &MatmulGeometry,
        p: &Program,
        inputs: &[(&WgpuStorage, &Layout)],
        params: &[Scalar],
    ) -> Result<WgpuStorage> {
        let epilogue = EpilogueArgs { program: p, inputs };
        if p.steps.is_empty() || !epilogue.fits(g.out.dtype) {
            return matmul_then_fused(self, lhs, rhs, g, p, inputs, params);
        }
        self.matmul_with(lhs, rhs, g, Some(&epilogue))
    }

    /// A few rows' norm (`nn::rows::few_rows`) is computed by the columns matrix-vector kernel that
    /// reads it, where products take epilogues.
    fn norm_prologues(&self, x: &Layout, dtype: DType) -> bool {
        self.epilogues() && self.tune().norm_prologue != Some(false) && few_rows(x, dtype, self.caps())
    }

    fn matmul_norm_then(
        &self,
        n: RowNormArgs<'_, WgpuStorage>,
        (rhs, rl): (&WgpuStorage, &Layout),
        g: &MatmulGeometry,
        p: &Program,
        inputs: &[(&WgpuStorage, &Layout)],
        params: &[Scalar],
    ) -> Result<WgpuStorage> {
        let epilogue = EpilogueArgs { program: p, inputs };
        let (x, xl) = n.x;
        let out = g.out.shape.elem_count() as u64;
        if (p.steps.is_empty() || epilogue.fits(g.out.dtype)) && out <= u32::MAX as u64 {
            let prologue = Prologue::of(&n);
            let epilogue = (!p.steps.is_empty()).then_some(&epilogue);
            if let Some(c) = self.run_gemm_normed(problem(xl, rl, g), (x, rhs), epilogue, &prologue)? {
                return Ok(c);
            }
        }
        norm_then_matmul(self, n, (rhs, rl), g, p, inputs, params)
    }
}

impl WgpuBackend {
    /// The product, or `epilogue`'s program over it.
    fn matmul_with(
        &self,
        (lhs, ll): (&WgpuStorage, &Layout),
        (rhs, rl): (&WgpuStorage, &Layout),
        g: &MatmulGeometry,
        epilogue: Option<&EpilogueArgs>,
    ) -> Result<WgpuStorage> {
        let out = g.out.shape.elem_count();
        if out as u64 > u32::MAX as u64 {
            return Err(too_large(format!("matmul output of {out} elements"), out as u64, lhs.dtype));
        }
        self.run_gemm(&TABLE, problem(ll, rl, g), None, (lhs, rhs), epilogue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wgpu::gemm::hooks::{MatVec, MvTiles};
    use crate::{DType, Shape};

    fn geometry(l: &Layout, r: &Layout) -> MatmulGeometry {
        crate::spec::matmul::matmul((l, DType::F32), (r, DType::F32)).unwrap()
    }

    #[test]
    fn a_batch_against_one_rhs_folds_into_rows() {
        let l = Layout::contiguous([4, 3, 5, 6]);
        let r = Layout::contiguous([6, 7]).broadcast_as(&Shape::new([4, 3, 6, 7])).unwrap();
        let g = problem(&l, &r, &geometry(&l, &Layout::contiguous([6, 7])));
        assert_eq!((g.batch.len(), g.m, g.n, g.k, g.a.outer), (0, 60, 7, 6, 6));
        // A transposed lhs does not fold: its batches are not rows after one another.
        let lt = Layout::contiguous([4, 6, 5]).transpose(1, 2).unwrap();
        let r = Layout::contiguous([6, 7]).broadcast_as(&Shape::new([4, 6, 7])).unwrap();
        let g = problem(&lt, &r, &geometry(&lt, &Layout::contiguous([6, 7])));
        assert_eq!((g.batch.clone(), g.m, g.a.outer, g.a.k), (vec![4], 5, 1, 5));
    }

    #[test]
    fn skinny_problems_take_the_matrix_vector_kernels() {
        let mv = |m, rows, tiles: MvTiles| MatVec { m, rows, tiles };
        let l = Layout::contiguous([1, 64]);
        let r = Layout::contiguous([64, 300]);
        let g = problem(&l, &r, &geometry(&l, &r));
        let (v, t) = TABLE.matvec(&g, None).unwrap();
        assert_eq!((v, t.c_transposed), (mv(1, false, TABLE.matvec), false));
        // n = 1: the transposed problem, reading the lhs down its contiguous rows.
        let l = Layout::contiguous([300, 64]);
        let r = Layout::contiguous([64, 1]);
        let (v, t) = TABLE.matvec(&problem(&l, &r, &geometry(&l, &r)), None).unwrap();
        assert_eq!((v, t.c_transposed, t.m, t.n), (mv(1, true, TABLE.matvec_rows), true, 1, 300));
        let sq = Layout::contiguous([64, 64]);
        assert!(TABLE.matvec(&problem(&sq, &sq, &geometry(&sq, &sq)), None).is_none());
    }
}
