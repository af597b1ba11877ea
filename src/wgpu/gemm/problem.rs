//! A GEMM problem in plain numbers ([`Gemm`]): what matmul and the convolutions map their ops
//! to, so that a transposed or broadcast operand is another stride, never a copy.

use super::slots::{self, Slot};
use crate::{BackendKind, DType, Error};

/// One operand in place: where it starts, its strides along its outer dim (M for A, N for B)
/// and along K, and along each batch dim of the problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Operand {
    pub offset: usize,
    pub outer: usize,
    pub k: usize,
    pub batch: Vec<usize>,
}

/// `C[b] = A[b] B[b]` for every batch index `b` (row-major over `batch`), C contiguous
/// `(batch.., m, n)`. B may instead be gathered by generated code (a convolution's image).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Gemm {
    pub batch: Vec<usize>,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: Operand,
    pub b: Operand,
    /// The metadata words of a gathered B, each in its slot (from C's strides' up to the parts
    /// of K: a gathered problem's C is contiguous).
    pub gather: Vec<(Slot, u32)>,
    /// C is stored transposed, `(batch.., n, m)`: the problem is the transpose of the one
    /// asked (matrix-vector kernels only).
    pub c_transposed: bool,
}

impl Gemm {
    pub fn batches(&self) -> usize {
        self.batch.iter().product()
    }

    /// The metadata words after `EXTRA` for `tiles` (rows, columns) per batch, K in `split`
    /// parts of `split.1` (the last part the rest): each in its slot of [`slots`].
    pub fn meta(&self, tiles: (usize, usize), split: (usize, usize)) -> Vec<u32> {
        use slots::*;
        let (a, b) = (&self.a, &self.b);
        let words = [
            (M, self.m),
            (N, self.n),
            (K, self.k),
            (TILE_ROWS, tiles.0),
            (TILE_COLS, tiles.1),
            (TILES, tiles.0 * tiles.1),
            (BATCHES, self.batches()),
            (A_OFFSET, a.offset),
            (A_OUTER, a.outer),
            (A_K, a.k),
            (B_OFFSET, b.offset),
            (B_OUTER, b.outer),
            (B_K, b.k),
            (PARTS, split.0),
            (PART_K, split.1),
            (RANK, self.batch.len()),
        ];
        // The batch sizes and both operands' batch strides follow the rank.
        let mut m = vec![0u32; RANK.at + 1 + 3 * self.batch.len()];
        for (s, w) in words {
            m[s.at] = w as u32;
        }
        if self.gather.is_empty() {
            // C's strides along M and N (the matrix-vector kernels write a transposed problem).
            let (cm, cn) = if self.c_transposed { (1, self.m) } else { (self.n, 1) };
            (m[C_M.at], m[C_N.at]) = (cm as u32, cn as u32);
        }
        for &(s, w) in &self.gather {
            m[s.at] = w;
        }
        let lists = self.batch.iter().chain(&self.a.batch).chain(&self.b.batch);
        for (word, &w) in m[RANK.at + 1..].iter_mut().zip(lists) {
            *word = w as u32;
        }
        m
    }

    /// The problem with its batch dims merged ([`merge_batch_dims`]), and a batch that only
    /// walks down A's rows (B shared) folded into M.
    pub fn simplified(mut self) -> Gemm {
        let mut dims = merge_batch_dims(&self.batch, &self.a.batch, &self.b.batch);
        if self.m == 1 {
            self.a.outer = 0;
        }
        if self.n == 1 {
            self.b.outer = 0;
        }
        if self.k == 1 {
            (self.a.k, self.b.k) = (1, 1);
        }
        if let [(d, sa, 0)] = dims[..]
            && self.gather.is_empty()
            && (sa == self.a.outer * self.m || self.m == 1)
        {
            if self.m == 1 {
                self.a.outer = sa;
            }
            self.m *= d;
            dims.clear();
        }
        self.batch = dims.iter().map(|d| d.0).collect();
        self.a.batch = dims.iter().map(|d| d.1).collect();
        self.b.batch = dims.iter().map(|d| d.2).collect();
        self
    }
}

/// The batch dims `(size, A stride, B stride)` of sizes `batch` and strides `a`, `b`, with the
/// dims of size 1 dropped and each dim merged into the one before it where both operands'
/// strides allow (the outer stride is the inner one times the inner size).
pub(crate) fn merge_batch_dims(batch: &[usize], a: &[usize], b: &[usize]) -> Vec<(usize, usize, usize)> {
    let (dims, strides) = crate::layout::coalesce(batch, &[a, b]);
    dims.iter().enumerate().map(|(i, &d)| (d, strides[0][i], strides[1][i])).collect()
}

/// Split-K's sum's metadata words after `EXTRA`: `n` elements of C from `parts` parts.
pub(crate) fn sum_meta(n: usize, parts: usize) -> [u32; 2] {
    let mut m = [0u32; 2];
    for (s, w) in [(slots::SUM_N, n), (slots::SUM_PARTS, parts)] {
        m[s.at] = w as u32;
    }
    m
}

/// K in `parts` parts for `k`, each a multiple of 64 (of every kernel's K step) but the last:
/// the parts that take some of K, and K per part. One part takes all of K.
pub(crate) fn split_k(k: usize, parts: usize) -> (usize, usize) {
    if parts <= 1 || k == 0 {
        return (1, k);
    }
    let per = k.div_ceil(parts).next_multiple_of(64);
    (k.div_ceil(per), per)
}

/// A problem too large for the kernels' u32 indices.
pub(crate) fn too_large(what: String, n: u64, dtype: DType) -> Error {
    Error::LimitExceeded {
        backend: BackendKind::Wgpu,
        what: format!("{what} (kernels index with u32)"),
        needed: n.saturating_mul(dtype.size_in_bytes() as u64),
        limit: u32::MAX as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operand(offset: usize, outer: usize, k: usize, batch: &[usize]) -> Operand {
        Operand { offset, outer, k, batch: batch.to_vec() }
    }

    #[test]
    fn metadata_words_sit_in_their_slots() {
        let g = Gemm {
            batch: vec![2, 3],
            m: 5,
            n: 6,
            k: 7,
            a: operand(1, 7, 1, &[105, 35]),
            b: operand(2, 1, 6, &[0, 42]),
            gather: vec![],
            c_transposed: false,
        };
        let mut want = vec![5, 6, 7, 1, 2, 2, 6, 1, 7, 1, 2, 1, 6, 6, 1];
        want.resize(29, 0);
        want.extend([3, 64, 2, 2, 3, 105, 35, 0, 42]);
        assert_eq!(g.meta((1, 2), (3, 64)), want);
        // A gathered B's words replace C's strides; a transposed C swaps them.
        let t = Gemm { c_transposed: true, ..g.clone() };
        assert_eq!(t.meta((1, 2), (3, 64))[13..15], [1, 5]);
        let gathered = Gemm { gather: vec![(slots::CONV_IH, 9), (slots::CONV_WS, 4)], ..g };
        let m = gathered.meta((1, 2), (1, 7));
        assert_eq!((m[13], m[14], m[26], m[29], m[30]), (9, 0, 4, 1, 7));
    }

    #[test]
    fn batch_dims_merge_where_both_operands_allow() {
        // Contiguous batches merge; a size-1 dim vanishes; a broadcast (stride 0) in one operand
        // merges only with another broadcast dim of it.
        assert_eq!(merge_batch_dims(&[2, 1, 3], &[60, 7, 20], &[30, 9, 10]), [(6, 20, 10)]);
        assert_eq!(merge_batch_dims(&[2, 3], &[0, 0], &[30, 10]), [(6, 0, 10)]);
        assert_eq!(merge_batch_dims(&[2, 3], &[20, 0], &[30, 10]), [(2, 20, 30), (3, 0, 10)]);
        assert_eq!(merge_batch_dims(&[1, 1], &[5, 5], &[5, 5]), []);
    }
}
