//! What the native backend needs from a BLAS, and the logic above it, written once for every
//! vendor library: matmul's row-major strided operands mapped onto one column-major
//! strided-batched GEMM (transpose flags, leading dims, batch strides).
//!
//! A row-major product `C = L R` (`M x K` times `K x N`) is the column-major product
//! `C^T = R^T L^T`, as candle's CUDA backend computes it: the BLAS's `A` is the rhs, its `B` the
//! lhs, its `m` our `N` and its `n` our `M`, and the contiguous row-major `C` is a column-major
//! `N x M` matrix with leading dim `N`. A row-major operand with unit column stride is already
//! its own transpose in column-major terms (flag `N`, leading dim its row stride); one with unit
//! row stride (a transposed view) is read with flag `T` (leading dim its column stride). A
//! transposed view is a flag, never a copy. An operand gets copied to contiguous memory first
//! only where no flag and leading dim reach it (neither stride is 1, or a leading dim shorter
//! than a column, as a stride-0 broadcast row), or where its batch dims are not one uniform
//! stride (a batch broadcast along some dims but not others): see [`plan`].
//!
//! The vendor sides are only the calls: `cuda.rs` (cuBLAS, feature `cuda`) and `rocm.rs`
//! (rocBLAS, feature `rocm`).

#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "rocm")]
pub mod rocm;

use super::ptr::DevicePtr;
use crate::{DType, Result};

/// How the BLAS reads one operand of a strided-batched GEMM, in column-major terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmOperand {
    /// The first matrix.
    pub ptr: DevicePtr,
    /// `op(X) = X^T`.
    pub trans: bool,
    /// Leading dim: the distance between columns of the stored matrix, in elements.
    pub ld: usize,
    /// Distance between consecutive matrices of the batch, in elements (0: one matrix for all).
    pub stride: usize,
}

/// `C[i] = op(A[i]) op(B[i])` for `i < batch`, column-major: `C` is `m x n`, `op(A)` `m x k`,
/// `op(B)` `k x n`, alpha 1 and beta 0 (`C` is overwritten). f32 and f64 compute in their own
/// type (f32 never in TF32); f16 and bf16 compute in f32, with f32 alpha and beta.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gemm {
    /// The element type of A, B and C.
    pub dtype: DType,
    /// Rows of `op(A)` and `C`.
    pub m: usize,
    /// Columns of `op(B)` and `C`.
    pub n: usize,
    /// Columns of `op(A)`, rows of `op(B)`.
    pub k: usize,
    /// The left operand.
    pub a: GemmOperand,
    /// The right operand.
    pub b: GemmOperand,
    /// The first output matrix.
    pub c: DevicePtr,
    /// Leading dim of `C`, in elements.
    pub ldc: usize,
    /// Distance between consecutive matrices of `C`, in elements.
    pub stride_c: usize,
    /// Number of products.
    pub batch: usize,
}

/// A vendor BLAS bound to the backend's device and stream: one handle, used by one thread at a
/// time. Status codes come back as `Error::Backend` with the library's own text.
pub trait Blas: Send + Sync {
    /// The library's name and version, for `info()`.
    fn describe(&self) -> String;

    /// Queues one strided-batched GEMM on the backend's stream. Sizes, leading dims, strides and
    /// the batch fit the library's integer types (see [`LIMIT`]); `m`, `n`, `k` and `batch` are
    /// non-zero.
    ///
    /// # Safety
    /// Every matrix the call reads or writes lies inside live device allocations of the
    /// backend's runtime, and `C` overlaps no input.
    unsafe fn gemm(&self, g: &Gemm) -> Result<()>;
}

/// The largest size, leading dim or batch count a BLAS call takes (their C `int`).
pub const LIMIT: usize = i32::MAX as usize;

/// A row-major `rows x cols` operand with strides `(rs, cs)`, as the BLAS reads its transpose
/// (see the module docs): `(trans, ld)`, or `None` when no flag and leading dim express it.
/// A dim of size 1 leaves its stride free.
pub fn as_gemm_matrix(rows: usize, cols: usize, rs: usize, cs: usize) -> Option<(bool, usize)> {
    if cols == 1 || cs == 1 {
        let ld = if rows == 1 { cols.max(1) } else { rs };
        if ld >= cols.max(1) && ld <= LIMIT {
            return Some((false, ld));
        }
    }
    if rows == 1 || rs == 1 {
        let ld = if cols == 1 { rows.max(1) } else { cs };
        if ld >= rows.max(1) && ld <= LIMIT {
            return Some((true, ld));
        }
    }
    None
}

/// The one stride between consecutive matrices of a batch walked row-major over `dims` with
/// `strides`, or `None` when the batch dims are not one uniform stride. Dims of size 1 are
/// skipped; no batch dims (or all of size 1) give 0.
pub fn uniform_batch_stride(dims: &[usize], strides: &[usize]) -> Option<usize> {
    let mut stride = None;
    let mut span = 1;
    for (&d, &s) in dims.iter().zip(strides).rev().filter(|(d, _)| **d != 1) {
        let inner = *stride.get_or_insert(s);
        if s != inner * span {
            return None;
        }
        span *= d;
    }
    Some(stride.unwrap_or(0))
}

/// One row-major operand of a matmul as the plan sees it: its batch dims' strides, its matrix
/// strides and offset (all in elements).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatrixView<'a> {
    /// The strides of the batch dims.
    pub batch_strides: &'a [usize],
    /// The stride between rows.
    pub rs: usize,
    /// The stride between columns.
    pub cs: usize,
}

impl MatrixView<'_> {
    /// A `(batch.., rows, cols)` layout with `nb` batch dims.
    pub fn of(l: &crate::Layout, nb: usize) -> MatrixView<'_> {
        let s = l.strides();
        MatrixView { batch_strides: &s[..nb], rs: s[nb], cs: s[nb + 1] }
    }
}

/// How an operand reaches the GEMM: read in place with a flag, leading dim and batch stride,
/// or copied to a contiguous `(batch.., rows, cols)` buffer first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Read where it lies.
    InPlace {
        /// The BLAS transposes it.
        trans: bool,
        /// Its leading dim, in elements.
        ld: usize,
        /// Distance between its matrices, in elements (0: one for the whole batch).
        stride: usize,
    },
    /// Copied to a contiguous buffer first.
    Copy,
}

/// The GEMM(s) of a row-major batched product `(batch.., M, K) x (batch.., K, N)`: how each
/// operand is reached, the column-major sizes, and whether the batch folds into the rows of
/// the lhs (a contiguous stack of lhs matrices against one rhs matrix: one GEMM of `batch * M`
/// rows, which runs faster than `batch` small ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulPlan {
    /// How the lhs is reached.
    pub lhs: Reach,
    /// How the rhs is reached.
    pub rhs: Reach,
    /// Column-major sizes: `m` = N, `n` = M (times the batch when folded), `k` = K.
    pub m: usize,
    /// Column-major `n`: M, times the batch when folded.
    pub n: usize,
    /// Column-major `k`: K.
    pub k: usize,
    /// GEMMs in the batch (1 when folded).
    pub batch: usize,
}

/// How an operand of `rows x cols` matrices over `batch_dims` is reached.
fn reach(batch_dims: &[usize], v: &MatrixView, rows: usize, cols: usize) -> Reach {
    match (as_gemm_matrix(rows, cols, v.rs, v.cs), uniform_batch_stride(batch_dims, v.batch_strides)) {
        (Some((trans, ld)), Some(stride)) => Reach::InPlace { trans, ld, stride },
        _ => Reach::Copy,
    }
}

/// The reach of an operand once copied to a contiguous `(batch.., rows, cols)` buffer.
pub fn contiguous_reach(rows: usize, cols: usize) -> Reach {
    Reach::InPlace { trans: false, ld: cols.max(1), stride: rows * cols }
}

impl Reach {
    /// How the GEMM reads the operand, after a copy where one is due.
    pub fn effective(self, rows: usize, cols: usize) -> (bool, usize, usize) {
        match self {
            Reach::InPlace { trans, ld, stride } => (trans, ld, stride),
            Reach::Copy => contiguous_reach(rows, cols).effective(rows, cols),
        }
    }
}

/// Plans `(batch.., m, k) x (batch.., k, n)` for non-empty sizes. Operands marked `Copy` are
/// read as [`contiguous_reach`] once copied.
pub fn plan(batch_dims: &[usize], m: usize, n: usize, k: usize, lhs: &MatrixView, rhs: &MatrixView) -> MatmulPlan {
    let batch: usize = batch_dims.iter().product();
    let (lr, rr) = (reach(batch_dims, lhs, m, k), reach(batch_dims, rhs, k, n));
    let ((lt, lld, lstride), (_, _, rstride)) = (lr.effective(m, k), rr.effective(k, n));
    let folds = batch > 1 && !lt && rstride == 0 && lstride == m * lld && m * batch <= LIMIT;
    if folds {
        MatmulPlan { lhs: lr, rhs: rr, m: n, n: m * batch, k, batch: 1 }
    } else {
        MatmulPlan { lhs: lr, rhs: rr, m: n, n: m, k, batch }
    }
}

/// The GEMM calls of planned product `p` of `(batch.., m, k) x (batch.., k, n)` in `dtype`:
/// the lhs and rhs first elements at `lhs` and `rhs` (their copies where the plan copies), the
/// contiguous output at `c`. Batches past [`LIMIT`] go to further calls. `Err` names a size or
/// leading dim past the limit.
#[allow(clippy::too_many_arguments)]
pub fn calls(
    p: &MatmulPlan,
    dtype: DType,
    (m, n, k): (usize, usize, usize),
    lhs: DevicePtr,
    rhs: DevicePtr,
    c: DevicePtr,
) -> std::result::Result<Vec<Gemm>, usize> {
    let operand = |ptr, reach: Reach, rows, cols| {
        let (trans, ld, stride) = reach.effective(rows, cols);
        GemmOperand { ptr, trans, ld, stride }
    };
    // The BLAS's A is our rhs and its B our lhs (row-major C = L R is column-major C^T = R^T L^T).
    let (a, b) = (operand(rhs, p.rhs, k, n), operand(lhs, p.lhs, m, k));
    if let Some(&big) = [p.m, p.n, p.k, a.ld, b.ld].iter().find(|&&v| v > LIMIT) {
        return Err(big);
    }
    let size = dtype.size_in_bytes();
    let shift = |o: GemmOperand, i: usize| GemmOperand { ptr: o.ptr.offset(i * o.stride * size), ..o };
    let mut out = vec![];
    let mut done = 0;
    while done < p.batch {
        let batch = (p.batch - done).min(LIMIT);
        out.push(Gemm {
            dtype,
            m: p.m,
            n: p.n,
            k: p.k,
            a: shift(a, done),
            b: shift(b, done),
            c: c.offset(done * m * n * size),
            ldc: n,
            stride_c: m * n,
            batch,
        });
        done += batch;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_operands_are_flag_n_with_their_row_stride() {
        // (3 x 5) contiguous, and a window of rows of 8.
        assert_eq!(as_gemm_matrix(3, 5, 5, 1), Some((false, 5)));
        assert_eq!(as_gemm_matrix(3, 5, 8, 1), Some((false, 8)));
        // Rows closer than a row's length overlap: not a matrix a BLAS reads.
        assert_eq!(as_gemm_matrix(3, 5, 4, 1), None);
    }

    #[test]
    fn transposed_views_are_flag_t_with_their_column_stride() {
        // The transpose of a contiguous (5 x 3): strides (1, 3).
        assert_eq!(as_gemm_matrix(3, 5, 1, 3), Some((true, 3)));
        assert_eq!(as_gemm_matrix(3, 5, 1, 7), Some((true, 7)));
        assert_eq!(as_gemm_matrix(3, 5, 1, 2), None);
        // Neither stride 1: copied.
        assert_eq!(as_gemm_matrix(3, 5, 10, 2), None);
    }

    #[test]
    fn size_one_dims_leave_their_stride_free() {
        // One row: any row stride (0 from a broadcast too); one column likewise.
        assert_eq!(as_gemm_matrix(1, 5, 0, 1), Some((false, 5)));
        assert_eq!(as_gemm_matrix(1, 5, 99, 1), Some((false, 5)));
        assert_eq!(as_gemm_matrix(4, 1, 3, 0), Some((false, 3)));
        assert_eq!(as_gemm_matrix(4, 1, 1, 0), Some((false, 1)));
        assert_eq!(as_gemm_matrix(4, 1, 0, 0), None);
        assert_eq!(as_gemm_matrix(1, 1, 0, 0), Some((false, 1)));
        // A row broadcast down the rows (row stride 0) cannot be read in place.
        assert_eq!(as_gemm_matrix(4, 5, 0, 1), None);
    }

    #[test]
    fn batch_strides_must_be_one_uniform_stride() {
        assert_eq!(uniform_batch_stride(&[], &[]), Some(0));
        assert_eq!(uniform_batch_stride(&[4], &[20]), Some(20));
        assert_eq!(uniform_batch_stride(&[2, 3], &[60, 20]), Some(20));
        // Broadcast over every batch dim: stride 0.
        assert_eq!(uniform_batch_stride(&[2, 3], &[0, 0]), Some(0));
        // Size-1 dims carry any stride.
        assert_eq!(uniform_batch_stride(&[2, 1, 3], &[60, 7, 20]), Some(20));
        // Broadcast along one dim only ([2, 1] -> [2, 3]): not uniform.
        assert_eq!(uniform_batch_stride(&[2, 3], &[20, 0]), None);
        assert_eq!(uniform_batch_stride(&[2, 3], &[0, 20]), None);
        // Gaps between batches are fine when uniform; a permuted batch is not.
        assert_eq!(uniform_batch_stride(&[2, 3], &[90, 30]), Some(30));
        assert_eq!(uniform_batch_stride(&[2, 3], &[20, 40]), None);
    }

    fn view(batch_strides: &[usize], rs: usize, cs: usize) -> MatrixView<'_> {
        MatrixView { batch_strides, rs, cs }
    }

    #[test]
    fn plans_swap_operands_into_column_major() {
        // (4 x 5) x (5 x 3): the BLAS computes the 3 x 4 C^T.
        let p = plan(&[], 4, 3, 5, &view(&[], 5, 1), &view(&[], 3, 1));
        let n = |ld, stride| Reach::InPlace { trans: false, ld, stride };
        assert_eq!(p, MatmulPlan { lhs: n(5, 0), rhs: n(3, 0), m: 3, n: 4, k: 5, batch: 1 });
        // Both transposed views: flags, no copies.
        let p = plan(&[2], 4, 3, 5, &view(&[20], 1, 4), &view(&[15], 1, 5));
        let t = |ld, stride| Reach::InPlace { trans: true, ld, stride };
        assert_eq!(p, MatmulPlan { lhs: t(4, 20), rhs: t(5, 15), m: 3, n: 4, k: 5, batch: 2 });
    }

    #[test]
    fn a_stack_of_lhs_matrices_against_one_rhs_folds_into_one_gemm() {
        let p = plan(&[2, 3], 4, 3, 5, &view(&[60, 20], 5, 1), &view(&[0, 0], 3, 1));
        assert_eq!((p.m, p.n, p.k, p.batch), (3, 24, 5, 1));
        // Not when the lhs matrices have gaps, are transposed, or the rhs differs per batch.
        assert_eq!(plan(&[2], 4, 3, 5, &view(&[21], 5, 1), &view(&[0], 3, 1)).batch, 2);
        assert_eq!(plan(&[2], 4, 3, 5, &view(&[20], 1, 4), &view(&[0], 3, 1)).batch, 2);
        assert_eq!(plan(&[2], 4, 3, 5, &view(&[20], 5, 1), &view(&[15], 3, 1)).batch, 2);
    }

    /// What a column-major strided-batched GEMM computes (the BLAS contract), on host f64 data
    /// addressed by byte offsets of 8-byte elements.
    fn host_gemm(g: &Gemm, a: &[f64], b: &[f64], c: &mut [f64]) {
        let at = |o: &GemmOperand, data: &[f64], i: usize, r: usize, col: usize| {
            let base = o.ptr.0 as usize / 8 + i * o.stride;
            if o.trans { data[base + col + r * o.ld] } else { data[base + r + col * o.ld] }
        };
        for i in 0..g.batch {
            for col in 0..g.n {
                for r in 0..g.m {
                    let dot = (0..g.k).map(|q| at(&g.a, a, i, r, q) * at(&g.b, b, i, q, col)).sum();
                    c[g.c.0 as usize / 8 + i * g.stride_c + r + col * g.ldc] = dot;
                }
            }
        }
    }

    /// Row-major `(batch.., rows, cols)` data of a layout (what a copy to contiguous gives).
    fn gather(data: &[f64], l: &crate::Layout) -> Vec<f64> {
        l.strided_index().map(|i| data[i]).collect()
    }

    /// matmul of `(lhs, ll) x (rhs, rl)` (already broadcast to a batch) through the plan and the
    /// BLAS contract, against a plain row-major product of the gathered operands.
    fn check_product(ld: &[f64], ll: &crate::Layout, rd: &[f64], rl: &crate::Layout) {
        let nb = ll.rank() - 2;
        let (m, k, n) = (ll.dims()[nb], ll.dims()[nb + 1], rl.dims()[nb + 1]);
        let batch_dims = &ll.dims()[..nb];
        let (lv, rv) = (MatrixView::of(ll, nb), MatrixView::of(rl, nb));
        let p = plan(batch_dims, m, n, k, &lv, &rv);
        // Operands in place (from their offset) or copied, as the backend does.
        let (lhs, lstart) = if p.lhs == Reach::Copy { (gather(ld, ll), 0) } else { (ld.to_vec(), ll.offset()) };
        let (rhs, rstart) = if p.rhs == Reach::Copy { (gather(rd, rl), 0) } else { (rd.to_vec(), rl.offset()) };
        let batch: usize = batch_dims.iter().product();
        let mut c = vec![f64::NAN; batch * m * n];
        let gemms =
            calls(&p, DType::F64, (m, n, k), DevicePtr(8 * lstart as u64), DevicePtr(8 * rstart as u64), DevicePtr(0))
                .unwrap();
        for g in &gemms {
            host_gemm(g, &rhs, &lhs, &mut c);
        }
        let (lg, rg) = (gather(ld, ll), gather(rd, rl));
        for bi in 0..batch {
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k).map(|q| lg[(bi * m + i) * k + q] * rg[(bi * k + q) * n + j]).sum();
                    assert_eq!(c[(bi * m + i) * n + j], want, "{p:?} batch {bi} ({i}, {j})");
                }
            }
        }
    }

    #[test]
    fn planned_gemms_compute_the_row_major_product() {
        use crate::{Layout, Shape};
        let data =
            |n: usize, seed: f64| (0..n).map(|i| ((i as f64 * 0.37 + seed).sin() * 8.0).round()).collect::<Vec<_>>();
        let (d1, d2) = (data(400, 1.0), data(400, 2.0));
        // Plain, transposed and offset matrices.
        let c = |s: &[usize]| Layout::contiguous(s.to_vec());
        check_product(&d1, &c(&[4, 5]), &d2, &c(&[5, 3]));
        check_product(&d1, &c(&[5, 4]).transpose(0, 1).unwrap(), &d2, &c(&[3, 5]).transpose(0, 1).unwrap());
        check_product(&d1, &c(&[7, 9]).narrow(0, 2, 4).unwrap().narrow(1, 3, 5).unwrap(), &d2, &c(&[5, 3]));
        // Batches: uniform, transposed per batch, broadcast rhs (folds), broadcast lhs.
        check_product(&d1, &c(&[2, 4, 5]), &d2, &c(&[2, 5, 3]));
        check_product(&d1, &c(&[2, 5, 4]).transpose(1, 2).unwrap(), &d2, &c(&[2, 3, 5]).transpose(1, 2).unwrap());
        let rb = c(&[5, 3]).broadcast_as(&Shape::new([2, 3, 5, 3])).unwrap();
        check_product(&d1, &c(&[2, 3, 4, 5]), &d2, &rb);
        let lb = c(&[4, 5]).broadcast_as(&Shape::new([3, 4, 5])).unwrap();
        check_product(&d1, &lb, &d2, &c(&[3, 5, 3]));
        // A batch broadcast along one dim of two (copied), and a matrix with no unit stride.
        let lp = c(&[2, 1, 4, 5]).broadcast_as(&Shape::new([2, 3, 4, 5])).unwrap();
        check_product(&d1, &lp, &d2, &c(&[2, 3, 5, 3]));
        let strided = Layout::new([2, 4, 5], vec![60, 12, 2], 1);
        check_product(&d1, &strided, &d2, &c(&[2, 5, 3]));
        // Single rows and columns.
        check_product(&d1, &c(&[1, 5]), &d2, &c(&[5, 1]));
        check_product(&d1, &c(&[3, 4, 1]), &d2, &c(&[3, 1, 6]));
    }

    #[test]
    fn operands_no_flag_reaches_are_copied() {
        // A batch broadcast along one of two dims, and a matrix with no unit stride.
        let p = plan(&[2, 3], 4, 3, 5, &view(&[20, 0], 5, 1), &view(&[45, 15], 6, 2));
        assert_eq!((p.lhs, p.rhs, p.batch), (Reach::Copy, Reach::Copy, 6));
        assert_eq!(contiguous_reach(4, 5), Reach::InPlace { trans: false, ld: 5, stride: 20 });
        // A copied lhs stack still folds against one rhs matrix.
        let p = plan(&[2, 3], 4, 3, 5, &view(&[20, 0], 5, 1), &view(&[0, 0], 3, 1));
        assert_eq!((p.lhs, p.n, p.batch), (Reach::Copy, 24, 1));
    }
}
