//! GGML blocks on the cpu: the reference dequantizers (ggml's `dequantize_row_*`: the same f32
//! steps in the same order, so the same bits), the matrix-vector product on those values, and
//! ggml's reference quantizers (`quantize_row_*_ref`: the simple types here, the k-quants in
//! `kquant`). Lengths reach here checked by `spec::quant`: whole blocks only.

use super::{CpuBackend, CpuStorage, kquant, map_strided, wrong_dtype};
use crate::backend::{Operand, QuantOps};
use crate::spec::quant::{FLOATS, GgmlType, Q8_BLOCK, QuantOp, q8_round, q8_scale};
use crate::{DType, Error, Result};
use half::{bf16, f16};

impl QuantOps for CpuBackend {
    fn dequantize(&self, q: &CpuStorage, offset: usize, ty: GgmlType, n: usize, dtype: DType) -> Result<CpuStorage> {
        let CpuStorage::U8(bytes) = q else {
            return Err(Error::HostDType { expected: DType::U8, got: q.dtype() });
        };
        let blocks = &bytes[offset..offset + n / ty.block_size() * ty.block_bytes()];
        let mut values = crate::host::try_vec(n, 0f32)?;
        dequantize(ty, blocks, &mut values);
        Ok(match dtype {
            DType::F16 => CpuStorage::F16(values.iter().map(|&v| f16::from_f32(v)).collect()),
            DType::BF16 => CpuStorage::BF16(values.iter().map(|&v| bf16::from_f32(v)).collect()),
            _ => CpuStorage::F32(values),
        })
    }

    /// Each weight row dequantized exactly (ggml's values), then each output the sum over K, in
    /// order, of x (widened exactly) times those values in f32, rounded once to x's dtype.
    fn qmatvec(
        &self,
        q: &CpuStorage,
        offset: usize,
        ty: GgmlType,
        n: usize,
        x: Operand<CpuStorage>,
    ) -> Result<CpuStorage> {
        qmatvec_of(q, offset, ty, n, x, false)
    }

    /// x's values rounded to q8 blocks (`round_q8`), then [`QuantOps::qmatvec`]'s products.
    fn qmatvec_q8(
        &self,
        q: &CpuStorage,
        offset: usize,
        ty: GgmlType,
        n: usize,
        x: Operand<CpuStorage>,
    ) -> Result<CpuStorage> {
        qmatvec_of(q, offset, ty, n, x, true)
    }
}

/// `qmatvec` (`q8`: `qmatvec_q8`): x's values widened to f32 (and rounded to q8 blocks), then
/// [`products`].
fn qmatvec_of(
    q: &CpuStorage,
    offset: usize,
    ty: GgmlType,
    n: usize,
    (xs, xl): Operand<CpuStorage>,
    q8: bool,
) -> Result<CpuStorage> {
    let CpuStorage::U8(bytes) = q else {
        return Err(Error::HostDType { expected: DType::U8, got: q.dtype() });
    };
    let op = if q8 { QuantOp::QmatvecQ8 } else { QuantOp::Qmatvec };
    let mut x = match xs {
        CpuStorage::F32(v) => map_strided(v, xl, |e| e),
        CpuStorage::F16(v) => map_strided(v, xl, f16::to_f32),
        CpuStorage::BF16(v) => map_strided(v, xl, bf16::to_f32),
        other => return Err(wrong_dtype(op.name(), other, FLOATS)),
    };
    if q8 {
        round_q8(&mut x);
    }
    products(bytes, offset, ty, n, &x, xl, xs.dtype())
}

/// Rows of x (a multiple of `Q8_BLOCK` values each) rounded to q8 activation blocks in place: each
/// value to d q (`spec::quant::q8_scale` of the block's largest magnitude, `q8_round`). The
/// magnitudes are compared as bits, as the kernels do: a NaN is above infinity.
pub(crate) fn round_q8(x: &mut [f32]) {
    for block in x.chunks_mut(Q8_BLOCK) {
        let amax = block.iter().map(|v| v.to_bits() & 0x7fff_ffff).max().unwrap_or(0);
        let d = q8_scale(f32::from_bits(amax));
        for v in block {
            *v = q8_round(*v, d) * d;
        }
    }
}

/// Each weight row dequantized exactly (ggml's values), then each output the sum over K, in
/// order, of x's values (row-major, `xl`'s shape) times those values in f32, rounded once to
/// `dtype`.
fn products(
    bytes: &[u8],
    offset: usize,
    ty: GgmlType,
    n: usize,
    x: &[f32],
    xl: &crate::Layout,
    dtype: DType,
) -> Result<CpuStorage> {
    let k = xl.dims().last().copied().unwrap_or(0);
    let rows = x.len().checked_div(k).unwrap_or(0);
    let row_bytes = k / ty.block_size() * ty.block_bytes();
    let (mut w, mut y) = (crate::host::try_vec(k, 0f32)?, crate::host::try_vec(rows * n, 0f32)?);
    for j in 0..n {
        dequantize(ty, &bytes[offset + j * row_bytes..][..row_bytes], &mut w);
        for (r, xr) in x.chunks_exact(k.max(1)).enumerate() {
            y[r * n + j] = xr.iter().zip(&w).fold(0f32, |acc, (a, b)| acc + a * b);
        }
    }
    Ok(match dtype {
        DType::F16 => CpuStorage::F16(y.iter().map(|&v| f16::from_f32(v)).collect()),
        DType::BF16 => CpuStorage::BF16(y.iter().map(|&v| bf16::from_f32(v)).collect()),
        _ => CpuStorage::F32(y),
    })
}

/// The f16 stored little-endian at `b[i..i + 2]`, widened exactly.
pub(super) fn f16_at(b: &[u8], i: usize) -> f32 {
    f16::from_bits(u16::from_le_bytes([b[i], b[i + 1]])).to_f32()
}

/// ggml's `GGML_FP32_TO_FP16`: round to nearest even, little-endian bytes.
pub(super) fn f16_bytes(x: f32) -> [u8; 2] {
    f16::from_f32(x).to_bits().to_le_bytes()
}

/// Dequantizes whole blocks of `ty` into `out` (`block_size` values per block).
fn dequantize(ty: GgmlType, bytes: &[u8], out: &mut [f32]) {
    for (b, y) in bytes.chunks_exact(ty.block_bytes()).zip(out.chunks_exact_mut(ty.block_size())) {
        match ty {
            GgmlType::Q4_0 => q4_0(b, y),
            GgmlType::Q4_1 => q4_1(b, y),
            GgmlType::Q5_0 => q5_0(b, y),
            GgmlType::Q5_1 => q5_1(b, y),
            GgmlType::Q8_0 => q8_0(b, y),
            GgmlType::Q2_K => q2_k(b, y),
            GgmlType::Q3_K => q3_k(b, y),
            GgmlType::Q4_K => q4_k(b, y),
            GgmlType::Q5_K => q5_k(b, y),
            GgmlType::Q6_K => q6_k(b, y),
        }
    }
}

fn q4_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for j in 0..16 {
        let q = b[2 + j];
        y[j] = ((q & 15) as i32 - 8) as f32 * d;
        y[j + 16] = ((q >> 4) as i32 - 8) as f32 * d;
    }
}

fn q4_1(b: &[u8], y: &mut [f32]) {
    let (d, m) = (f16_at(b, 0), f16_at(b, 2));
    for j in 0..16 {
        let q = b[4 + j];
        y[j] = (q & 15) as f32 * d + m;
        y[j + 16] = (q >> 4) as f32 * d + m;
    }
}

/// The 5th bits of a q5 block's 32 quants, bit `j` for value `j`.
fn high_bits(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn q5_0(b: &[u8], y: &mut [f32]) {
    let (d, qh) = (f16_at(b, 0), high_bits(b, 2));
    for j in 0..16 {
        let q = b[6 + j] as u32;
        let x0 = ((q & 15) | (((qh >> j) << 4) & 0x10)) as i32 - 16;
        let x1 = ((q >> 4) | ((qh >> (j + 12)) & 0x10)) as i32 - 16;
        y[j] = x0 as f32 * d;
        y[j + 16] = x1 as f32 * d;
    }
}

fn q5_1(b: &[u8], y: &mut [f32]) {
    let (d, m, qh) = (f16_at(b, 0), f16_at(b, 2), high_bits(b, 4));
    for j in 0..16 {
        let q = b[8 + j] as u32;
        let x0 = (q & 15) | (((qh >> j) << 4) & 0x10);
        let x1 = (q >> 4) | ((qh >> (j + 12)) & 0x10);
        y[j] = x0 as f32 * d + m;
        y[j + 16] = x1 as f32 * d + m;
    }
}

fn q8_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for (v, &q) in y.iter_mut().zip(&b[2..34]) {
        *v = q as i8 as f32 * d;
    }
}

/// q2_K: `scales[16] qs[64] d dmin`; value `y[128n + 32j + 16h + l]` is 2 bits of `qs[32n + 16h + l]`
/// at shift `2j`, under scale byte `8n + 2j + h` (low nibble: scale, high: min).
fn q2_k(b: &[u8], y: &mut [f32]) {
    let (d, min) = (f16_at(b, 80), f16_at(b, 82));
    for (i, v) in y.iter_mut().enumerate() {
        let (n, j, h, l) = (i / 128, i / 32 % 4, i / 16 % 2, i % 16);
        let sc = b[8 * n + 2 * j + h];
        let (dl, ml) = (d * (sc & 15) as f32, min * (sc >> 4) as f32);
        let q = (b[16 + 32 * n + 16 * h + l] >> (2 * j)) & 3;
        *v = dl * q as f32 - ml;
    }
}

/// The sixteen 6-bit scales of a q3_K block (ggml's `aux` unpacking), as stored minus 32.
pub(super) fn q3_k_scales(s: &[u8]) -> [i32; 16] {
    let mut out = [0; 16];
    for (i, o) in out.iter_mut().enumerate() {
        let low = (s[i % 8] >> (4 * (i / 8))) & 15;
        let high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
        *o = (low | (high << 4)) as i32 - 32;
    }
    out
}

/// q3_K: `hmask[32] qs[64] scales[12] d`; value `y[128n + 32j + 16h + l]`: 2 bits of
/// `qs[32n + 16h + l]` at shift `2j`, minus 4 where bit `4n + j` of `hmask[16h + l]` is clear.
fn q3_k(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 108);
    let scales = q3_k_scales(&b[96..108]);
    for (i, v) in y.iter_mut().enumerate() {
        let (n, j, h, l) = (i / 128, i / 32 % 4, i / 16 % 2, i % 16);
        let dl = d * scales[8 * n + 2 * j + h] as f32;
        let low = ((b[32 + 32 * n + 16 * h + l] >> (2 * j)) & 3) as i32;
        let high = if b[16 * h + l] & (1 << (4 * n + j)) != 0 { 0 } else { 4 };
        *v = dl * (low - high) as f32;
    }
}

/// ggml's `get_scale_min_k4`: the 6-bit scale and min of run `j` of a q4_K/q5_K block.
pub(super) fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        ((q[j + 4] & 15) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4))
    }
}

/// q4_K: `d dmin scales[12] qs[128]`; run `r` of 32 values: nibble `r % 2` of `qs[32(r/2) + l]`.
fn q4_k(b: &[u8], y: &mut [f32]) {
    let (d, min) = (f16_at(b, 0), f16_at(b, 2));
    for (r, run) in y.chunks_exact_mut(32).enumerate() {
        let (sc, m) = scale_min_k4(r, &b[4..16]);
        let (d1, m1) = (d * sc as f32, min * m as f32);
        for (l, v) in run.iter_mut().enumerate() {
            let q = (b[16 + 32 * (r / 2) + l] >> (4 * (r % 2))) & 15;
            *v = d1 * q as f32 - m1;
        }
    }
}

/// q5_K: `d dmin scales[12] qh[32] qs[128]`; as q4_K, plus 16 where bit `r` of `qh[l]` is set.
fn q5_k(b: &[u8], y: &mut [f32]) {
    let (d, min) = (f16_at(b, 0), f16_at(b, 2));
    for (r, run) in y.chunks_exact_mut(32).enumerate() {
        let (sc, m) = scale_min_k4(r, &b[4..16]);
        let (d1, m1) = (d * sc as f32, min * m as f32);
        for (l, v) in run.iter_mut().enumerate() {
            let low = (b[48 + 32 * (r / 2) + l] >> (4 * (r % 2))) & 15;
            let high = if b[16 + l] & (1 << r) != 0 { 16 } else { 0 };
            *v = d1 * (low + high) as f32 - m1;
        }
    }
}

/// q6_K: `ql[128] qh[64] scales[16] d`; value `y[128n + 32j + l]`: nibble `j / 2` of
/// `ql[64n + 32(j % 2) + l]`, high bits `2j` of `qh[32n + l]`, scale `8n + 2j + l / 16`.
fn q6_k(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 208);
    for (i, v) in y.iter_mut().enumerate() {
        let (n, j, l) = (i / 128, i / 32 % 4, i % 32);
        let low = (b[64 * n + 32 * (j % 2) + l] >> (4 * (j / 2))) & 15;
        let high = (b[128 + 32 * n + l] >> (2 * j)) & 3;
        let q = (low | (high << 4)) as i32 - 32;
        let sc = b[192 + 8 * n + 2 * j + l / 16] as i8;
        *v = d * sc as f32 * q as f32;
    }
}

/// Quantizes whole blocks of `ty` (32 values, or super-blocks of 256 for the k-quants) with
/// ggml's reference quantizer of `ty` (`quantize_row_*_ref`).
pub(crate) fn quantize(ty: GgmlType, x: &[f32]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let bytes = x.len() / ty.block_size() * ty.block_bytes();
    out.try_reserve_exact(bytes).map_err(|_| Error::OutOfMemory { what: "quantize".into(), bytes: bytes as u64 })?;
    for v in x.chunks_exact(ty.block_size()) {
        match ty {
            GgmlType::Q4_0 | GgmlType::Q5_0 => symmetric(ty, v, &mut out),
            GgmlType::Q4_1 | GgmlType::Q5_1 => with_min(ty, v, &mut out),
            GgmlType::Q8_0 => q8_0_block(v, &mut out),
            GgmlType::Q2_K => kquant::q2_k_block(v, &mut out),
            GgmlType::Q3_K => kquant::q3_k_block(v, &mut out),
            GgmlType::Q4_K => kquant::q4_k_block(v, &mut out),
            GgmlType::Q5_K => kquant::q5_k_block(v, &mut out),
            GgmlType::Q6_K => kquant::q6_k_block(v, &mut out),
        }
    }
    Ok(out)
}

/// The low nibbles and 5th bits of 32 quants as q4/q5 blocks store them (values `j` and `j + 16`
/// share byte `j`; bit `j` of `qh` is value `j`'s 5th bit).
fn pack(q: &[u8; 32], five_bits: bool, out: &mut Vec<u8>) {
    if five_bits {
        let qh = (0..32).fold(0u32, |h, j| h | (((q[j] as u32 & 0x10) >> 4) << j));
        out.extend_from_slice(&qh.to_le_bytes());
    }
    out.extend((0..16).map(|j| (q[j] & 15) | ((q[j + 16] & 15) << 4)));
}

/// q4_0 and q5_0 (`quantize_row_q{4,5}_0_ref`): `d = max / -2^(bits-1)` of the value of largest
/// magnitude, quants `x / d + 2^(bits-1)` rounded by `+ 0.5` and truncation.
fn symmetric(ty: GgmlType, v: &[f32], out: &mut Vec<u8>) {
    let (half, bias, top) = if ty == GgmlType::Q4_0 { (8.0, 8.5, 15) } else { (16.0, 16.5, 31) };
    let (mut amax, mut max) = (0f32, 0f32);
    for &x in v {
        if amax < x.abs() {
            amax = x.abs();
            max = x;
        }
    }
    let d = max / -half;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    out.extend_from_slice(&f16_bytes(d));
    let mut q = [0u8; 32];
    for (q, &x) in q.iter_mut().zip(v) {
        // ggml converts to int8_t, then takes the MIN with the top quant.
        *q = ((x * id + bias) as i8).min(top) as u8;
    }
    pack(&q, ty == GgmlType::Q5_0, out);
}

/// q4_1 and q5_1 (`quantize_row_q{4,5}_1_ref`): `d = (max - min) / (2^bits - 1)`, `m = min`,
/// quants `(x - min) / d` rounded by `+ 0.5` and truncation.
fn with_min(ty: GgmlType, v: &[f32], out: &mut Vec<u8>) {
    let (mut min, mut max) = (f32::MAX, -f32::MAX);
    for &x in v {
        if x < min {
            min = x;
        }
        if x > max {
            max = x;
        }
    }
    let d = (max - min) / if ty == GgmlType::Q4_1 { 15.0 } else { 31.0 };
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    out.extend_from_slice(&f16_bytes(d));
    out.extend_from_slice(&f16_bytes(min));
    let mut q = [0u8; 32];
    for (q, &x) in q.iter_mut().zip(v) {
        let r = (x - min) * id + 0.5;
        // q4_1 converts to int8_t and clamps to 15; q5_1 converts to uint8_t and no more.
        *q = if ty == GgmlType::Q4_1 { (r as i8).min(15) as u8 } else { r as u8 };
    }
    pack(&q, ty == GgmlType::Q5_1, out);
}

/// q8_0 (`quantize_row_q8_0_ref`): `d = amax / 127`, quants `roundf(x / d)`.
fn q8_0_block(v: &[f32], out: &mut Vec<u8>) {
    let amax = v.iter().fold(0f32, |a, &x| if a > x.abs() { a } else { x.abs() });
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    out.extend_from_slice(&f16_bytes(d));
    out.extend(v.iter().map(|&x| (x * id).round() as i8 as u8));
}
