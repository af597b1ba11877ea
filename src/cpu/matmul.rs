//! Batched matmul on the cpu: each matrix of a batch is gathered into a contiguous f64 buffer
//! (whatever its strides), multiplied in i-k-j order so the inner loop streams memory, and
//! every output element is rounded once to the dtype.

use super::{CpuBackend, CpuStorage, dtype_mismatch, wrong_dtype};
use crate::backend::MatmulOps;
use crate::spec::matmul::{MatmulGeometry, MatmulOp};
use crate::{DType, Layout, Result, Shape, WithDType, with_float_storage};

/// The storage offset of every matrix of `l`, whose last two dims are the matrix, in row-major
/// order of the batch dims (no batch dims: the one matrix at the layout's offset).
fn matrix_starts(l: &Layout) -> Vec<usize> {
    let nb = l.rank() - 2;
    let batch = Layout::new(Shape::new(&l.dims()[..nb]), l.strides()[..nb].to_vec(), l.offset());
    batch.strided_index().collect()
}

/// Copies the `rows x cols` matrix at `start` with strides `(rs, cs)` into `buf`, row-major.
fn gather<T: WithDType>(
    data: &[T],
    start: usize,
    (rows, cols): (usize, usize),
    (rs, cs): (usize, usize),
    buf: &mut [f64],
) {
    for r in 0..rows {
        let base = start + r * rs;
        for (c, x) in buf[r * cols..(r + 1) * cols].iter_mut().enumerate() {
            *x = data[base + c * cs].to_f64();
        }
    }
}

fn matmul_vec<T: WithDType>(a: &[T], al: &Layout, b: &[T], bl: &Layout, g: &MatmulGeometry) -> Vec<T> {
    let (m, n, k) = (g.m, g.n, g.k);
    let batches = g.batch.elem_count();
    let mut out = Vec::with_capacity(batches * m * n);
    if m == 0 || n == 0 {
        return out;
    }
    // k = 0 is an empty sum: the zeros the accumulator starts with.
    let (ar, br) = (al.rank(), bl.rank());
    let a_strides = (al.strides()[ar - 2], al.strides()[ar - 1]);
    let b_strides = (bl.strides()[br - 2], bl.strides()[br - 1]);
    let (mut abuf, mut bbuf, mut acc) = (vec![0.0; m * k], vec![0.0; k * n], vec![0.0f64; n]);
    // Stride-0 batch dims repeat a matrix: gather it once.
    let (mut a_prev, mut b_prev) = (None, None);
    for (a0, b0) in matrix_starts(al).into_iter().zip(matrix_starts(bl)) {
        if a_prev != Some(a0) {
            gather(a, a0, (m, k), a_strides, &mut abuf);
            a_prev = Some(a0);
        }
        if b_prev != Some(b0) {
            gather(b, b0, (k, n), b_strides, &mut bbuf);
            b_prev = Some(b0);
        }
        for i in 0..m {
            acc.fill(0.0);
            for (p, &aip) in abuf[i * k..(i + 1) * k].iter().enumerate() {
                for (s, &bpj) in acc.iter_mut().zip(&bbuf[p * n..(p + 1) * n]) {
                    *s += aip * bpj;
                }
            }
            out.extend(acc.iter().map(|&s| T::from_f64(s)));
        }
    }
    out
}

fn matmul_typed<T: WithDType>(
    a: &[T],
    al: &Layout,
    rhs: &CpuStorage,
    bl: &Layout,
    g: &MatmulGeometry,
    lhs: &CpuStorage,
) -> Result<CpuStorage> {
    let b = rhs.as_slice::<T>().ok_or_else(|| dtype_mismatch(MatmulOp::Matmul.name(), lhs, rhs))?;
    Ok(CpuStorage::from_vec(matmul_vec(a, al, b, bl, g)))
}

impl MatmulOps for CpuBackend {
    fn matmul(
        &self,
        lhs: &CpuStorage,
        ll: &Layout,
        rhs: &CpuStorage,
        rl: &Layout,
        g: &MatmulGeometry,
    ) -> Result<CpuStorage> {
        with_float_storage!(lhs, a => matmul_typed(a, ll, rhs, rl, g, lhs),
            Err(wrong_dtype(MatmulOp::Matmul.name(), lhs, DType::FLOAT)))
    }
}
