//! Nearest-neighbour resizing on the cpu: each output cell copies the input cell the spec names.

use super::{CpuBackend, CpuStorage};
use crate::backend::UpsampleOps;
use crate::{Layout, Result, with_storage};

/// Storage offsets, along one spatial dim of input size `len` and `stride`, of the input cell
/// each of `size` output cells reads: `floor(o * len / size)`, exact in u128.
fn source_offsets(len: usize, stride: usize, size: usize) -> Vec<usize> {
    (0..size).map(|o| (o as u128 * len as u128 / size as u128) as usize * stride).collect()
}

/// Output `(n, c, rows, cols)` in row-major order; `rows` and `cols` hold source offsets.
fn resize<T: Copy>(x: &[T], l: &Layout, rows: &[usize], cols: &[usize]) -> Vec<T> {
    let (dims, strides) = (l.dims(), l.strides());
    let mut out = Vec::with_capacity(dims[0] * dims[1] * rows.len() * cols.len());
    for n in 0..dims[0] {
        for c in 0..dims[1] {
            let plane = l.offset() + n * strides[0] + c * strides[1];
            for &r in rows {
                out.extend(cols.iter().map(|&col| x[plane + r + col]));
            }
        }
    }
    out
}

/// Whether an output of `l`'s batch and channels and spatial `sizes` has no element: then no
/// offset table is built (a size may be huge when another dim is 0).
fn empty(l: &Layout, sizes: &[usize]) -> bool {
    l.dims()[..2].iter().chain(sizes).any(|&d| d == 0)
}

impl UpsampleOps for CpuBackend {
    fn upsample_nearest1d(&self, x: &CpuStorage, l: &Layout, size: usize) -> Result<CpuStorage> {
        if empty(l, &[size]) {
            return CpuStorage::zeros(x.dtype(), 0);
        }
        let cols = source_offsets(l.dims()[2], l.strides()[2], size);
        Ok(with_storage!(x, v => CpuStorage::from_vec(resize(v, l, &[0], &cols))))
    }

    fn upsample_nearest2d(&self, x: &CpuStorage, l: &Layout, size: [usize; 2]) -> Result<CpuStorage> {
        if empty(l, &size) {
            return CpuStorage::zeros(x.dtype(), 0);
        }
        let rows = source_offsets(l.dims()[2], l.strides()[2], size[0]);
        let cols = source_offsets(l.dims()[3], l.strides()[3], size[1]);
        Ok(with_storage!(x, v => CpuStorage::from_vec(resize(v, l, &rows, &cols))))
    }
}
