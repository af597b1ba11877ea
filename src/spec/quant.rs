//! Quantized weights: GGML's block types, their byte layouts, and the checks a quantized
//! tensor's shape and bytes pass.
//!
//! A quantized tensor of logical shape `[.., K]` is `elem_count / block_size` blocks laid end to
//! end, `block_bytes` each, exactly as ggml's `ggml-common.h` lays them out (little-endian, f16
//! scales, no padding); a row of `K` elements is `K / block_size` consecutive blocks.
//!
//! An infinity in x: the products' kernels apply a run's scale and min to sums over the run (d
//! sum(q x) - m sum(x), as llama.cpp's do), so where an exact product w inf would be infinite, a
//! kernel may give inf - inf = NaN (and a zero weight's 0 inf is NaN on every backend): an output
//! whose run holds an infinity of x is NaN or infinite by backend. The same for a block whose
//! scale is infinite (quantized from an infinity): d sum(q x) is infinite where d q x for q = 0
//! is NaN. NaN in x gives NaN everywhere.

use super::spec_enum;
use crate::{Error, Result, Shape};
use std::fmt;

/// The dtypes quantized tensors dequantize to and quantize from.
pub const FLOATS: &[crate::DType] = &[crate::DType::F32, crate::DType::F16, crate::DType::BF16];

spec_enum! {
    /// The ops on quantized tensors (the dtype is the float side: dequantize's output).
    pub enum QuantOp in Quant {
        Dequantize = dequantize: FLOATS,
        /// `x [rows, K] W^T` for few rows (at most [`QMATVEC_MAX_ROWS`]), the blocks streamed
        /// once; the dtype is x's and the output's.
        Qmatvec = qmatvec: FLOATS,
        /// `qmatvec` of x rounded to q8 blocks ([`q8_round`]): the q8 activation mode.
        QmatvecQ8 = qmatvec_q8: FLOATS,
    }
}

/// Values of a row of x per block of the q8 activation mode (`QTensor::qmatmul_q8`): ggml's
/// q8_1 blocks, 32 values under one scale. Every K a quantized weight takes is a multiple of it.
pub const Q8_BLOCK: usize = 32;

/// The least block maximum the q8 activation mode quantizes (2^-100): a block whose values are
/// all smaller in magnitude rounds to zeros, which keeps every product of [`q8_round`] normal.
pub const Q8_TINY: f32 = f32::from_bits(0x0d80_0000);

/// The scale `d` of a q8 activation block whose largest magnitude is `amax`: amax times the f32
/// nearest 1/127, its significand then rounded to 11 bits (half up, on the bits), so that `d q`
/// is exact in f32 for every |q| <= 127 and every backend forms the same bits with one correctly
/// rounded product. 0 for a block below [`Q8_TINY`]; NaN where `amax` is infinite or NaN, so
/// that the block's values are NaN.
pub fn q8_scale(amax: f32) -> f32 {
    if !amax.is_finite() {
        return f32::NAN;
    }
    if amax < Q8_TINY {
        return 0.0;
    }
    let m = amax * Q8_INV127;
    f32::from_bits((m.to_bits() + 0x1000) & !0x1fff)
}

/// The f32 nearest 1/127.
pub const Q8_INV127: f32 = 1.0 / 127.0;

/// The q8 value of `x` in a block of scale `d` ([`q8_scale`]): x / d rounded to the nearest
/// integer, ties to even, exactly (|q| <= 127 follows from d). Computed without a division a GPU
/// may round loosely: a candidate from x times an approximate 1 / d, corrected by comparing x with
/// (r -+ 1/2) d, products exact in f32 (9 and 11 significant bits). 0 where d is 0, NaN where d is.
pub fn q8_round(x: f32, d: f32) -> f32 {
    if d == 0.0 {
        return 0.0;
    }
    let r = (x * (1.0 / d)).round_ties_even();
    let (lo, hi) = ((r - 0.5) * d, (r + 0.5) * d);
    let odd = r.rem_euclid(2.0) == 1.0;
    if x < lo || (x == lo && odd) {
        r - 1.0
    } else if x > hi || (x == hi && odd) {
        r + 1.0
    } else {
        r
    }
}

/// The most rows of x (M times the batch) `QTensor::qmatmul` sends to the `qmatvec` kernel; more
/// go through dequantize (to x's dtype) + matmul. The kernel decodes each weight once and uses
/// it for every row (a register accumulator per row), so it reads the blocks once where
/// dequantize + matmul also writes and reads 2 or 4 bytes per weight; past 8 rows the accumulators and the
/// untiled products outgrow it, while the tiled GEMM reuses each weight across 64+ rows.
/// llama.cpp draws the same line for its matrix-vector kernels (`MMVQ_MAX_BATCH_SIZE` = 8).
/// Chosen from that count, not measured here yet.
pub const QMATVEC_MAX_ROWS: usize = 8;

/// Values of a row each invocation of the wgpu `qmatvec` kernel decodes at a time for the block
/// types without a word decoder: a run inside one block (every block size is a multiple of it).
pub const QMATVEC_RUN: usize = 8;

/// The accumulators (rows) a `qmatvec` kernel is built for: the power of two at least `rows`
/// (1, 2, 4 or 8; rows past `rows` repeat the last row and are not written).
pub fn qmatvec_rows_class(rows: usize) -> usize {
    rows.next_power_of_two().clamp(1, QMATVEC_MAX_ROWS)
}

/// The element offset of the first value of each row of x `[.., M, K]` (K > 0), row-major: what
/// the `qmatvec` kernels read x from, with K's stride.
pub fn qmatvec_row_offsets(x: &crate::Layout) -> Result<Vec<usize>> {
    let first = x.narrow(x.rank() - 1, 0, 1)?;
    Ok(first.strided_index().collect())
}

/// A GGML block type: how a run of `block_size` values is stored in `block_bytes` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)]
pub enum GgmlType {
    /// 32 values: an f16 scale `d`, 4-bit quants; `x = d * (q - 8)`.
    Q4_0,
    /// 32 values: f16 `d` and `m`, 4-bit quants; `x = d * q + m`.
    Q4_1,
    /// 32 values: an f16 `d`, 5-bit quants (high bits in a u32); `x = d * (q - 16)`.
    Q5_0,
    /// 32 values: f16 `d` and `m`, 5-bit quants; `x = d * q + m`.
    Q5_1,
    /// 32 values: an f16 `d`, i8 quants; `x = d * q`.
    Q8_0,
    /// 256 values in 16 runs of 16: 4-bit scales and mins under f16 `d`, `dmin`; 2-bit quants.
    Q2_K,
    /// 256 values in 16 runs of 16: 6-bit scales under an f16 `d`; 3-bit quants.
    Q3_K,
    /// 256 values in 8 runs of 32: 6-bit scales and mins under f16 `d`, `dmin`; 4-bit quants.
    Q4_K,
    /// 256 values in 8 runs of 32: 6-bit scales and mins under f16 `d`, `dmin`; 5-bit quants.
    Q5_K,
    /// 256 values in 16 runs of 16: i8 scales under an f16 `d`; 6-bit quants.
    Q6_K,
}

impl GgmlType {
    /// Every block type the crate reads.
    pub const ALL: &'static [GgmlType] = &[
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::Q8_0,
        GgmlType::Q2_K,
        GgmlType::Q3_K,
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
    ];

    /// The type's id in ggml's `enum ggml_type` (and in GGUF files).
    pub fn id(self) -> u32 {
        match self {
            GgmlType::Q4_0 => 2,
            GgmlType::Q4_1 => 3,
            GgmlType::Q5_0 => 6,
            GgmlType::Q5_1 => 7,
            GgmlType::Q8_0 => 8,
            GgmlType::Q2_K => 10,
            GgmlType::Q3_K => 11,
            GgmlType::Q4_K => 12,
            GgmlType::Q5_K => 13,
            GgmlType::Q6_K => 14,
        }
    }

    /// The block type of a ggml type id; `Error::UnknownBlockType` for any other id.
    pub fn from_id(id: u32) -> Result<GgmlType> {
        GgmlType::ALL.iter().copied().find(|t| t.id() == id).ok_or(Error::UnknownBlockType { id })
    }

    /// ggml's name of the type (`q4_0`, `q4_K`).
    pub fn name(self) -> &'static str {
        match self {
            GgmlType::Q4_0 => "q4_0",
            GgmlType::Q4_1 => "q4_1",
            GgmlType::Q5_0 => "q5_0",
            GgmlType::Q5_1 => "q5_1",
            GgmlType::Q8_0 => "q8_0",
            GgmlType::Q2_K => "q2_K",
            GgmlType::Q3_K => "q3_K",
            GgmlType::Q4_K => "q4_K",
            GgmlType::Q5_K => "q5_K",
            GgmlType::Q6_K => "q6_K",
        }
    }

    /// Values per block: 32, or 256 for the k-quants.
    pub fn block_size(self) -> usize {
        match self {
            GgmlType::Q4_0 | GgmlType::Q4_1 | GgmlType::Q5_0 | GgmlType::Q5_1 | GgmlType::Q8_0 => 32,
            _ => 256,
        }
    }

    /// Bytes per block (`sizeof(block_*)` in ggml).
    pub fn block_bytes(self) -> usize {
        match self {
            GgmlType::Q4_0 => 18,
            GgmlType::Q4_1 => 20,
            GgmlType::Q5_0 => 22,
            GgmlType::Q5_1 => 24,
            GgmlType::Q8_0 => 34,
            GgmlType::Q2_K => 84,
            GgmlType::Q3_K => 110,
            GgmlType::Q4_K => 144,
            GgmlType::Q5_K => 176,
            GgmlType::Q6_K => 210,
        }
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Bytes of a tensor of `shape` in blocks of `ty`: rank at least 1, the last dim a multiple of
/// the block (`Error::BlockShape` otherwise), the total within `isize`.
pub fn quantized_bytes(ty: GgmlType, shape: &Shape) -> Result<usize> {
    let Some(&k) = shape.dims().last() else {
        return Err(Error::Rank { op: "quantize", expected: "at least 1", shape: shape.clone() });
    };
    if k % ty.block_size() != 0 {
        return Err(Error::BlockShape { ty: ty.name(), shape: shape.clone(), block: ty.block_size() });
    }
    let blocks = shape.dims().iter().try_fold(1usize, |a, &d| a.checked_mul(d)).map(|e| e / ty.block_size());
    match blocks.and_then(|b| b.checked_mul(ty.block_bytes())) {
        Some(bytes) if bytes <= isize::MAX as usize => Ok(bytes),
        _ => Err(Error::ShapeTooLarge { op: "quantize", shape: shape.clone(), dtype: crate::DType::U8 }),
    }
}

/// Checks a quantization of a tensor of `shape` and `dtype` to `ty`: a float input (f32, f16,
/// bf16) and whole blocks. The cpu quantizes to every block type (ggml's reference quantizers).
pub fn check_quantize(ty: GgmlType, shape: &Shape, dtype: crate::DType) -> Result<()> {
    super::check_dtype("quantize", dtype, FLOATS)?;
    quantized_bytes(ty, shape).map(|_| ())
}

/// The product `x [.., M, K] x W^T` with `W [N, K]` quantized: `[.., M, N]` in x's dtype (f32,
/// f16 or bf16). x has rank at least 2 and W rank 2, sharing K (`Error::MatmulShape` otherwise).
pub fn qmatmul(x: &Shape, dtype: crate::DType, w: &Shape) -> Result<super::Out> {
    super::check_dtype("qmatmul", dtype, FLOATS)?;
    let (xd, wd) = (x.dims(), w.dims());
    let mismatch = |msg: &'static str| Error::MatmulShape { msg, lhs: x.clone(), rhs: w.clone() };
    if xd.len() < 2 || wd.len() != 2 {
        return Err(mismatch("qmatmul takes x of rank 2 or more and a weight [N, K]"));
    }
    if xd[xd.len() - 1] != wd[1] {
        return Err(mismatch("x's last dim is not the weight's K"));
    }
    let out = [&xd[..xd.len() - 1], &wd[..1]].concat();
    Ok(super::Out::new(out, dtype))
}

/// Checks that `got` bytes hold a tensor of `shape` in blocks of `ty` exactly
/// (`Error::QuantBytes` for a truncated or overlong buffer).
pub fn check_quantized(ty: GgmlType, shape: &Shape, got: usize) -> Result<()> {
    let expected = quantized_bytes(ty, shape)?;
    if got == expected { Ok(()) } else { Err(Error::QuantBytes { ty: ty.name(), shape: shape.clone(), expected, got }) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_unknown_ids_are_errors() {
        for &t in GgmlType::ALL {
            assert_eq!(GgmlType::from_id(t.id()), Ok(t));
        }
        assert_eq!(GgmlType::from_id(4), Err(Error::UnknownBlockType { id: 4 }));
    }

    #[test]
    fn sizes_follow_the_block_layouts() {
        let bits: Vec<f64> =
            GgmlType::ALL.iter().map(|t| (t.block_bytes() * 8) as f64 / t.block_size() as f64).collect();
        assert_eq!(bits, [4.5, 5.0, 5.5, 6.0, 8.5, 2.625, 3.4375, 4.5, 5.5, 6.5625]);
    }
}
