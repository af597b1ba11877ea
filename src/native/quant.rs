//! Quantized blocks on the native backend (`hip/quant.hip`). `dequantize`: a thread per unit of
//! 32 values (16 for q8_0; q4_0, q8_0, q4_K, q6_K from whole words) or per value (the fields
//! read byte by byte); launches of whole blocks, each within the kernels' 32-bit index.
//! `qmatvec`: a warp per two weight rows, the blocks decoded in registers once (units of 16 or 32
//! values from whole words) and used for every row of x, the sums added by warp shuffles; on
//! tensor cores for q4_K and q8_0 times f16 x (`qmatvec_f16_mma4`, `_mma8`, `qmatvec_f16_q8_0_mma4`,
//! `_mma8`: 16 weight rows a block, split along K over its 4 or 8 warps; `_xs`: x's rows staged
//! in shared memory first).

use super::kernel::{Args, MAX_ELEMS, launches};
use super::{NativeBackend, NativeStorage, Runtime};
use crate::backend::{Operand, QuantOps};
use crate::spec::quant::{GgmlType, QMATVEC_MAX_ROWS, QuantOp, qmatvec_row_offsets, qmatvec_rows_class};
use crate::spec::{Family, kernel_name};
use crate::{DType, Result};
use bytemuck::{Pod, Zeroable};

/// Threads per `qmatvec` block (`QMV_THREADS` in `hip/quant.hip`: a multiple of every warp
/// size).
const QMV_THREADS: u32 = 128;
/// Weight rows each warp of `qmatvec` takes (`QMV_ROWS` in `hip/quant.hip`).
const QMV_ROWS: u64 = 2;
/// Weight rows of a `qmatvec_f16_mma4` / `_mma8` block (`QMMA_ROWS`).
const QMMA_ROWS: u64 = 16;
/// The most values of x (rows times K) the `_xs` kernels stage in shared memory (`QMMA_XS`).
const QMMA_XS: usize = 16384;
/// Values a thread of `dequantize_T_units` decodes (`Unit::VALUES` in `hip/quant.hip`): half a
/// block of q8_0, 32 of the other types.
fn unit_values(ty: GgmlType) -> usize {
    match ty {
        GgmlType::Q8_0 => 16,
        _ => 32,
    }
}

/// `struct QmvArgs` of `hip/quant.hip`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct QmvArgs {
    first: u64,
    n: u64,
    k: u64,
    bs: u64,
    bb: u64,
    rows: u64,
    sk: u64,
    row: [u64; QMATVEC_MAX_ROWS],
    t: u64,
    align: u64,
    xvec: u64,
}

/// The alignment every block of `ty` from byte `offset` of `q` starts on: 16, 2 or 1 bytes (the
/// kernels read 16-byte vectors or whole words where the type's layout allows).
fn block_align<R: Runtime>(q: &NativeStorage<R>, offset: usize, ty: GgmlType) -> u64 {
    let start = (q.ptr.0 + offset as u64) | ty.block_bytes() as u64;
    [16, 2].into_iter().find(|a| start.is_multiple_of(*a)).unwrap_or(1)
}

impl<R: Runtime> NativeBackend<R> {
    /// Warps a block of the tensor-core `qmatvec` kernels for `n` weight rows: 4 (K split 4 ways)
    /// where that still gives every multiprocessor 16 warps, else 8 (H200, q4_K: [14336, 4096]
    /// 17.3 against 18.3 us, [4096, 14336] 18.8 against 16.4).
    fn qmma_warps(&self, n: usize) -> u32 {
        let mps = u64::from(self.0.rt.info().multiprocessors);
        if (n as u64).div_ceil(QMMA_ROWS) * 4 >= 16 * mps { 4 } else { 8 }
    }

    /// What `Device::info` says of the matrix-vector kernels.
    pub(super) fn qmatvec_pass(&self) -> &'static str {
        match self.tensor_cores() {
            true => {
                "q4_K, and q8_0 from two rows of x, times f16 on tensor cores (RWO_NATIVE_MMA=0 turns them off), the rest SIMT"
            }
            false => "SIMT",
        }
    }
}

impl<R: Runtime> QuantOps for NativeBackend<R> {
    fn dequantize(
        &self,
        q: &NativeStorage<R>,
        offset: usize,
        ty: GgmlType,
        n: usize,
        dtype: DType,
    ) -> Result<NativeStorage<R>> {
        let y = self.storage(dtype, n)?;
        let name = kernel_name(QuantOp::Dequantize.name(), dtype);
        // A thread per unit of 16 or 32 values, read as words and stored as 16-byte vectors, where
        // the type has a unit decoder at its blocks' alignment (as `qmatvec` decodes them); else a
        // thread per value.
        let align = block_align(q, offset, ty);
        let units = y.ptr.0.is_multiple_of(16)
            && match ty {
                GgmlType::Q4_0 | GgmlType::Q8_0 | GgmlType::Q6_K => align >= 2,
                GgmlType::Q4_K => align >= 16,
                _ => false,
            };
        // The most whole blocks one launch's u32 index covers.
        let step = (MAX_ELEMS as usize / ty.block_size()) * ty.block_size();
        let mut first = 0;
        while first < n {
            let count = step.min(n - first);
            let bytes = offset + first / ty.block_size() * ty.block_bytes();
            let mut args = Args::default();
            if units {
                let units = (count / unit_values(ty)) as u64;
                args.u64(units).pod(&ty.id()).u64(ty.block_bytes() as u64).ptr(q.at(bytes)).ptr(y.at(first));
                // SAFETY: dequantize_T_units(units, t, bb, q, y) in order; it reads the
                // `count / block_size` blocks of type t (bb bytes each) at `q`, inside the u8
                // storage (the spec checked its bytes against the shape), in words and 16-byte
                // vectors at the alignment found above, and writes `count` elements of `y` from
                // `first` (a multiple of the block, so of 8: 16-byte aligned, as y is) on.
                unsafe { self.launch(Family::Quant, &format!("{name}_units"), units, &mut args)? };
            } else {
                args.u64(count as u64).pod(&ty.id()).ptr(q.at(bytes)).ptr(y.at(first));
                // SAFETY: dequantize_T(n, t, q, y) in order; it reads the `count / block_size`
                // blocks of type t at `q` (inside the u8 storage: the spec checked its bytes
                // against the shape) and writes `count` elements of `y` from `first` on.
                unsafe { self.launch(Family::Quant, &name, count as u64, &mut args)? };
            }
            first += count;
        }
        Ok(y)
    }

    fn qmatvec(
        &self,
        q: &NativeStorage<R>,
        offset: usize,
        ty: GgmlType,
        n: usize,
        (x, xl): Operand<NativeStorage<R>>,
    ) -> Result<NativeStorage<R>> {
        let starts = qmatvec_row_offsets(xl)?;
        let rows = starts.len();
        let y = self.storage(x.dtype, rows * n)?;
        let base = kernel_name(QuantOp::Qmatvec.name(), x.dtype);
        let u = |v: usize| v as u64;
        let mut row = [0u64; QMATVEC_MAX_ROWS];
        for (i, r) in row.iter_mut().enumerate() {
            *r = u(starts[i.min(rows - 1)]);
        }
        let (k, sk) = (xl.dims()[xl.rank() - 1], xl.strides()[xl.rank() - 1]);
        let (bs, bb) = (u(ty.block_size()), u(ty.block_bytes()));
        // Whether x's rows are whole 16-byte vectors (the kernel reads runs of 8 or more values of
        // a row from multiples of 8).
        let align = block_align(q, offset, ty);
        let xvec = sk == 1 && x.ptr.0.is_multiple_of(16) && starts.iter().all(|s| s.is_multiple_of(8));
        // q4_K blocks on 16 bytes, and q8_0 rows of steps of 256 values on 16 bytes from two rows
        // of x on (at one its SIMT kernel is faster: H200 [1,4096] x [14336,4096]^T 22.3 against
        // 24.2 us; 4 rows 44.0 against 27.0), times f16 x in aligned vectors on tensor cores
        // (every row count up to 8 at once), else the SIMT kernel built for the power of two at
        // least `rows`.
        let q8 =
            ty == GgmlType::Q8_0 && rows >= 2 && (q.ptr.0 + offset as u64).is_multiple_of(16) && k.is_multiple_of(256);
        let mma = (ty == GgmlType::Q4_K && align >= 16 || q8) && x.dtype == DType::F16 && xvec && self.tensor_cores();
        let (name, rows_per_block, threads) = match (mma, qmatvec_rows_class(rows)) {
            (true, _) if q8 => {
                let warps = self.qmma_warps(n);
                (format!("{base}_q8_0_mma{warps}"), QMMA_ROWS, 32 * warps)
            }
            (true, _) => {
                let warps = self.qmma_warps(n);
                // x's rows staged in shared memory where they fit (H200, 4 rows: 22.1 -> 19.3 us).
                let xs = if rows * k <= QMMA_XS { "_xs" } else { "" };
                (format!("{base}_mma{warps}{xs}"), QMMA_ROWS, 32 * warps)
            }
            (false, mq) => {
                let name = if mq == 1 { base } else { format!("{base}_m{mq}") };
                (name, QMV_ROWS * u64::from(QMV_THREADS / self.0.rt.info().warp_size.max(1)), QMV_THREADS)
            }
        };
        let (n, k, rows, sk, t, xvec) = (u(n), u(k), u(rows), u(sk), ty.id().into(), u(xvec.into()));
        let mut args = QmvArgs { first: 0, n, k, bs, bb, rows, sk, row, t, align, xvec };
        for (first, _, blocks) in launches(n, rows_per_block, threads) {
            args.first = first;
            let mut a = Args::default();
            a.pod(&args).ptr(q.at(offset)).ptr(x.ptr).ptr(y.ptr);
            // SAFETY: qmatvec_T[_mMQ|_mmaW|_q8_0_mmaW](QmvArgs, q, x, y) in order; it reads the n
            // rows of K / bs blocks from `q` (inside the u8 storage: the spec checked its bytes
            // against the shape), x at the row offsets plus multiples of its K stride below K
            // (the spec checked x's view against its storage; words and vectors only at the
            // alignments `align`, `xvec` and, for `_q8_0_mma`, `q8` found) and writes the rows x
            // n elements of `y`; warps past n return at once (`_mma`: rows past n read row n - 1
            // and write nothing).
            unsafe { self.launch_grid(Family::Quant, &name, [blocks, 1, 1], threads, &mut a)? };
        }
        Ok(y)
    }

    /// x's rows rounded to q8 blocks by `round_q8_T` (a thread a run of 32 values). For q4_0 and
    /// q8_0 blocks on 2 bytes and q4_K on 2 or 16, packed (`_pack`: i8 words, the runs' scales and
    /// sums) and multiplied by `qmatvec_q8_T` (4-byte integer dot products: `__dp4a` on NVIDIA);
    /// else as f32 values through [`QuantOps::qmatvec`], then cast to x's dtype.
    fn qmatvec_q8(
        &self,
        q: &NativeStorage<R>,
        offset: usize,
        ty: GgmlType,
        n: usize,
        (x, xl): Operand<NativeStorage<R>>,
    ) -> Result<NativeStorage<R>> {
        let starts = qmatvec_row_offsets(xl)?;
        let rows = starts.len();
        let align = block_align(q, offset, ty);
        let pack = matches!(ty, GgmlType::Q4_0 | GgmlType::Q8_0 | GgmlType::Q4_K) && align >= 2;
        let k = xl.dims()[xl.rank() - 1];
        let xr = match pack {
            true => self.storage(DType::U32, rows * (k / 4 + k / 16))?,
            false => self.storage(DType::F32, rows * k)?,
        };
        let mut row = [0u64; QMATVEC_MAX_ROWS];
        for (i, r) in row.iter_mut().enumerate() {
            *r = starts[i.min(rows - 1)] as u64;
        }
        let (k64, sk) = (k as u64, xl.strides()[xl.rank() - 1] as u64);
        let mut args = QmvArgs { k: k64, rows: rows as u64, sk, row, ..QmvArgs::zeroed() };
        let mut a = Args::default();
        a.pod(&args).ptr(x.ptr).ptr(xr.ptr);
        let name = kernel_name("round_q8", x.dtype) + if pack { "_pack" } else { "" };
        // SAFETY: round_q8_T[_pack](QmvArgs, x, y) in order; it reads the rows (at most
        // QMATVEC_MAX_ROWS, their offsets in `row`) of K values of x through stride sk (the spec
        // checked x's view against its storage) and writes, a thread a run of 32 values (K is a
        // multiple of it: the weight's blocks), rows x K f32 values of `xr` or (`_pack`) its rows x
        // (K / 4 + K / 16) words.
        unsafe { self.launch(Family::Quant, &name, (rows * k / 32) as u64, &mut a)? };
        if !pack {
            let y = self.qmatvec(q, offset, ty, n, (&xr, &crate::Layout::contiguous([rows, k])))?;
            if x.dtype == DType::F32 {
                return Ok(y);
            }
            return crate::backend::ElementwiseOps::cast(self, &y, &crate::Layout::contiguous([rows, n]), x.dtype);
        }
        let y = self.storage(x.dtype, rows * n)?;
        let mq = qmatvec_rows_class(rows);
        let base = kernel_name(QuantOp::QmatvecQ8.name(), x.dtype);
        let name = if mq == 1 { base } else { format!("{base}_m{mq}") };
        for (i, r) in args.row.iter_mut().enumerate() {
            *r = i.min(rows - 1) as u64;
        }
        let (bs, bb) = (ty.block_size() as u64, ty.block_bytes() as u64);
        args = QmvArgs { n: n as u64, bs, bb, t: ty.id().into(), align, ..args };
        let rows_per_block = QMV_ROWS * u64::from(QMV_THREADS / self.0.rt.info().warp_size.max(1));
        for (first, _, blocks) in launches(n as u64, rows_per_block, QMV_THREADS) {
            args.first = first;
            let mut a = Args::default();
            a.pod(&args).ptr(q.at(offset)).ptr(xr.ptr).ptr(y.ptr);
            // SAFETY: qmatvec_q8_T[_mMQ](QmvArgs, q, xq, y) in order; it reads the n rows of K / bs
            // blocks of type t (q4_0, q8_0 or q4_K, on 2 bytes at least, as `align` says) from `q`
            // (inside the u8 storage: the spec checked its bytes against the shape), the packed
            // rows `row` (indices below `rows`) of `xr` as round_q8_T_pack wrote them (16-byte
            // vectors: a fresh storage, rows of K / 4 words, K a multiple of 32) and writes rows x n
            // elements of `y`; warps past n return at once.
            unsafe { self.launch_grid(Family::Quant, &name, [blocks, 1, 1], QMV_THREADS, &mut a)? };
        }
        Ok(y)
    }
}
