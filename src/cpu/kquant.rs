//! ggml's reference quantizers of the k-quants (`quantize_row_q{2,3,4,5,6}_K_ref` in
//! `ggml-quants.c`), a super-block of 256 values at a time, with the searches for scales they
//! call. Byte for byte ggml's: the same f32 operations in the same order (never fused into a
//! multiply-add), ggml's `nearest_int`, the same strict or non-strict comparisons, the same
//! integer truncations. `tests/vectors/gen_kquant.sh` pins them to ggml's own C.

use super::quant::{f16_at, f16_bytes, q3_k_scales, scale_min_k4};

/// ggml's `GROUP_MAX_EPS`: a run whose largest magnitude is below it quantizes as all zeros.
const GROUP_MAX_EPS: f32 = 1e-15;

/// ggml's `nearest_int`: `x` rounded to nearest even through the bits of `x + 1.5 * 2^23`
/// (exact for |x| < 2^22, which ggml asserts; the same bit arithmetic past it).
fn nearest_int(x: f32) -> i32 {
    let bits = (x + 12582912.0).to_bits() as i32;
    (bits & 0x007f_ffff) - 0x0040_0000
}

/// Writes `x` as ggml's f16 at `b[at..at + 2]` and returns the f32 it stands for (ggml reads
/// the scales back from the block before requantizing with them).
fn put_f16(b: &mut [u8], at: usize, x: f32) -> f32 {
    b[at..at + 2].copy_from_slice(&f16_bytes(x));
    f16_at(b, at)
}

/// The settings of one `make_qkx2_quants` search: quants `0..=nmax`, trial scales
/// `(rmin + rdelta * is + nmax) / (max - min)` for `is` in `0..=nstep`, absolute (`mad`)
/// or squared errors.
struct Qkx2 {
    nmax: i32,
    rmin: f32,
    rdelta: f32,
    nstep: i32,
    mad: bool,
}

/// q2_K's search: runs of 16, 2-bit quants, absolute errors.
const Q2_K: Qkx2 = Qkx2 { nmax: 3, rmin: -0.5, rdelta: 0.1, nstep: 15, mad: true };
/// q4_K's search: runs of 32, 4-bit quants.
const Q4_K: Qkx2 = Qkx2 { nmax: 15, rmin: -1.0, rdelta: 0.1, nstep: 20, mad: false };
/// q5_K's search: runs of 32, 5-bit quants.
const Q5_K: Qkx2 = Qkx2 { nmax: 31, rmin: -0.5, rdelta: 0.1, nstep: 15, mad: false };

/// The quants `clamp(nearest_int(iscale * (x - min)), 0, nmax)` of a run, into `l`.
fn quants_above_min(iscale: f32, min: f32, nmax: i32, x: &[f32], l: &mut [u8]) {
    for (q, &v) in l.iter_mut().zip(x) {
        *q = nearest_int(iscale * (v - min)).clamp(0, nmax) as u8;
    }
}

/// The weighted error of `scale * l + min` against `x`: `|diff|` or `diff^2`, summed in order.
fn weighted_error(scale: f32, min: f32, l: &[u8], x: &[f32], weights: &[f32], mad: bool) -> f32 {
    let mut err = 0f32;
    for ((&q, &v), &w) in l.iter().zip(x).zip(weights) {
        let diff = scale * q as f32 + min - v;
        err += w * if mad { diff.abs() } else { diff * diff };
    }
    err
}

/// ggml's `make_qkx2_quants`: quants of a run (at most 32 values) as `scale * l - the_min` with
/// `the_min >= 0`, the best by weighted error of the scales from the range and `p`'s trials
/// (each refitted by weighted least squares); writes the quants to `l`, returns
/// `(scale, the_min)`. (ggml's early return for `nstep < 1` has no caller here.)
fn make_qkx2_quants(p: &Qkx2, x: &[f32], weights: &[f32], l: &mut [u8]) -> (f32, f32) {
    let (mut min, mut max) = (x[0], x[0]);
    let mut sum_w = weights[0];
    let mut sum_x = sum_w * x[0];
    for (&v, &w) in x.iter().zip(weights).skip(1) {
        if v < min {
            min = v;
        }
        if v > max {
            max = v;
        }
        sum_w += w;
        sum_x += w * v;
    }
    if min > 0.0 {
        min = 0.0;
    }
    if max == min {
        l.fill(0);
        return (0.0, -min);
    }
    let nmax = p.nmax as f32;
    let iscale = nmax / (max - min);
    let mut scale = 1.0 / iscale;
    quants_above_min(iscale, min, p.nmax, x, l);
    let mut best_error = weighted_error(scale, min, l, x, weights, p.mad);
    let mut aux = [0u8; 32];
    let aux = &mut aux[..x.len()];
    for is in 0..=p.nstep {
        let iscale = (p.rmin + p.rdelta * is as f32 + nmax) / (max - min);
        quants_above_min(iscale, min, p.nmax, x, aux);
        let (mut sum_l, mut sum_l2, mut sum_xl) = (0f32, 0f32, 0f32);
        for ((&q, &v), &w) in aux.iter().zip(x).zip(weights) {
            let q = q as f32;
            sum_l += w * q;
            sum_l2 += w * q * q;
            sum_xl += w * q * v;
        }
        let d = sum_w * sum_l2 - sum_l * sum_l;
        if d > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / d;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / d;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let cur_error = weighted_error(this_scale, this_min, aux, x, weights, p.mad);
            if cur_error < best_error {
                l.copy_from_slice(aux);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    (scale, -min)
}

/// The largest of `x` above 0 (ggml's `if (v > max) max = v` from 0).
fn positive_max(x: &[f32]) -> f32 {
    x.iter().fold(0.0, |max, &v| if v > max { v } else { max })
}

/// The value of largest magnitude of `x` (the first of ties) and that magnitude; zeros when all
/// are zero.
fn signed_max(x: &[f32]) -> (f32, f32) {
    let (mut max, mut amax) = (0f32, 0f32);
    for &v in x {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    (max, amax)
}

/// The symmetric quant `clamp(nearest_int(iscale * x), -nmax, nmax - 1)` and its weighted
/// terms `(w x l, w l^2)` with `w = x^2`.
fn symmetric_term(iscale: f32, nmax: i32, x: f32) -> (i32, f32, f32) {
    let l = nearest_int(iscale * x).clamp(-nmax, nmax - 1);
    let w = x * x;
    (l, w * x * l as f32, w * l as f32 * l as f32)
}

/// The sums of [`symmetric_term`] over a run, in order: `(sum w x l, sum w l^2)`.
fn symmetric_sums(iscale: f32, nmax: i32, x: &[f32]) -> (f32, f32) {
    x.iter().fold((0f32, 0f32), |(sx, s2), &v| {
        let (_, tx, t2) = symmetric_term(iscale, nmax, v);
        (sx + tx, s2 + t2)
    })
}

/// ggml's `make_qx_quants` as `quantize_row_q6_K_ref` calls it (`rmse_type` 1, no quant
/// weights): quants `l + nmax` of a run as `scale * l`, `l` in `-nmax..nmax`, the best of 19
/// scales around `-nmax / max` by `x^2`-weighted least squares; writes them to `l`, returns
/// the scale.
fn make_qx_quants(nmax: i32, x: &[f32], l: &mut [u8]) -> f32 {
    let (max, amax) = signed_max(x);
    if amax < GROUP_MAX_EPS {
        l.fill(0);
        return 0.0;
    }
    let fill = |iscale: f32, l: &mut [u8]| {
        for (q, &v) in l.iter_mut().zip(x) {
            *q = (nearest_int(iscale * v).clamp(-nmax, nmax - 1) + nmax) as u8;
        }
    };
    let iscale = -nmax as f32 / max;
    fill(iscale, l);
    let (sumlx, suml2) = symmetric_sums(iscale, nmax, x);
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    let mut best = scale * sumlx;
    for is in (-9..=9).filter(|&is| is != 0) {
        let iscale = -(nmax as f32 + 0.1 * is as f32) / max;
        let (sumlx, suml2) = symmetric_sums(iscale, nmax, x);
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            fill(iscale, l);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    scale
}

/// ggml's `make_q3_quants` as `quantize_row_q3_K_ref` calls it (`nmax` 4, `do_rmse`): 3-bit
/// quants `l + 4` of a run of 16 as `scale * l`, from `-4 / max`, then up to 5 sweeps moving
/// one quant at a time where that lowers the `x^2`-weighted error; writes them to `l`, returns
/// the scale.
fn make_q3_quants(x: &[f32], l: &mut [u8]) -> f32 {
    const NMAX: i32 = 4;
    let (max, amax) = signed_max(x);
    if amax < GROUP_MAX_EPS {
        l.fill(0);
        return 0.0;
    }
    let iscale = -NMAX as f32 / max;
    let mut q = [0i32; 16];
    let (mut sumlx, mut suml2) = (0f32, 0f32);
    for (q, &v) in q.iter_mut().zip(x) {
        let (l, tx, t2) = symmetric_term(iscale, NMAX, v);
        *q = l;
        sumlx += tx;
        suml2 += t2;
    }
    for _ in 0..5 {
        let mut changed = false;
        for (q, &v) in q.iter_mut().zip(x) {
            let w = v * v;
            let mut slx = sumlx - w * v * *q as f32;
            if slx > 0.0 {
                let mut sl2 = suml2 - w * *q as f32 * *q as f32;
                let new_l = nearest_int(v * sl2 / slx).clamp(-NMAX, NMAX - 1);
                if new_l != *q {
                    slx += w * v * new_l as f32;
                    sl2 += w * new_l as f32 * new_l as f32;
                    if sl2 > 0.0 && slx * slx * suml2 > sumlx * sumlx * sl2 {
                        (*q, sumlx, suml2) = (new_l, slx, sl2);
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    for (l, &q) in l.iter_mut().zip(&q) {
        *l = (q + NMAX) as u8;
    }
    if suml2 > 0.0 { sumlx / suml2 } else { 0.0 }
}

/// The 2-bit quants of 256 values as q2_K and q3_K store them: byte `32n + l` holds values
/// `128n + l + 32j` at bits `2j`.
fn pack_2bit(l: &[u8; 256], qs: &mut [u8]) {
    for (qs, l) in qs.chunks_exact_mut(32).zip(l.chunks_exact(128)) {
        for (i, q) in qs.iter_mut().enumerate() {
            *q = l[i] | (l[i + 32] << 2) | (l[i + 64] << 4) | (l[i + 96] << 6);
        }
    }
}

/// ggml's `quantize_row_q2_K_ref` of one super-block: `scales[16] qs[64] d dmin`.
pub(super) fn q2_k_block(x: &[f32], out: &mut Vec<u8>) {
    let mut b = [0u8; 84];
    let mut l = [0u8; 256];
    let (mut scales, mut mins) = ([0f32; 16], [0f32; 16]);
    for (j, (xs, ls)) in x.chunks_exact(16).zip(l.chunks_exact_mut(16)).enumerate() {
        let weights: [f32; 16] = std::array::from_fn(|i| xs[i].abs());
        (scales[j], mins[j]) = make_qkx2_quants(&Q2_K, xs, &weights, ls);
    }
    let (max_scale, max_min) = (positive_max(&scales), positive_max(&mins));
    // The 4-bit scales (low nibbles) and mins (high) against the largest; zeros when none is
    // positive, as the block starts.
    if max_scale > 0.0 {
        let iscale = 15.0 / max_scale;
        for (s, &scale) in b.iter_mut().zip(&scales) {
            *s = nearest_int(iscale * scale) as u8;
        }
        put_f16(&mut b, 80, max_scale / 15.0);
    }
    if max_min > 0.0 {
        let iscale = 15.0 / max_min;
        for (s, &min) in b.iter_mut().zip(&mins) {
            *s |= (nearest_int(iscale * min) << 4) as u8;
        }
        put_f16(&mut b, 82, max_min / 15.0);
    }
    let (d, dmin) = (f16_at(&b, 80), f16_at(&b, 82));
    for (j, (xs, ls)) in x.chunks_exact(16).zip(l.chunks_exact_mut(16)).enumerate() {
        let d = d * (b[j] & 15) as f32;
        if d == 0.0 {
            continue;
        }
        let dm = dmin * (b[j] >> 4) as f32;
        for (q, &v) in ls.iter_mut().zip(xs) {
            *q = nearest_int((v + dm) / d).clamp(0, 3) as u8;
        }
    }
    pack_2bit(&l, &mut b[16..80]);
    out.extend_from_slice(&b);
}

/// ggml's `quantize_row_q3_K_ref` of one super-block: `hmask[32] qs[64] scales[12] d`.
pub(super) fn q3_k_block(x: &[f32], out: &mut Vec<u8>) {
    let mut b = [0u8; 110];
    let mut l = [0u8; 256];
    let mut scales = [0f32; 16];
    for (s, (xs, ls)) in scales.iter_mut().zip(x.chunks_exact(16).zip(l.chunks_exact_mut(16))) {
        *s = make_q3_quants(xs, ls);
    }
    let (max_scale, _) = signed_max(&scales);
    if max_scale != 0.0 {
        // Sixteen 6-bit scales: low nibbles in bytes 0..8 (two each), the top 2 bits in 8..12.
        let iscale = -32.0 / max_scale;
        let s = &mut b[96..108];
        for (j, &scale) in scales.iter().enumerate() {
            let q = ((nearest_int(iscale * scale) as i8).clamp(-32, 31) + 32) as u8;
            s[j % 8] |= (q & 15) << (4 * (j / 8));
            s[8 + j % 4] |= (q >> 4) << (2 * (j / 4));
        }
        put_f16(&mut b, 108, 1.0 / iscale);
    }
    let d = f16_at(&b, 108);
    let sc = q3_k_scales(&b[96..108]);
    for ((xs, ls), &sc) in x.chunks_exact(16).zip(l.chunks_exact_mut(16)).zip(&sc) {
        let d = d * sc as f32;
        if d == 0.0 {
            continue;
        }
        for (q, &v) in ls.iter_mut().zip(xs) {
            *q = (nearest_int(v / d).clamp(-4, 3) + 4) as u8;
        }
    }
    // The third bit of value j at bit j / 32 of hmask[j % 32].
    for (j, q) in l.iter_mut().enumerate() {
        if *q > 3 {
            b[j % 32] |= 1 << (j / 32);
            *q -= 4;
        }
    }
    pack_2bit(&l, &mut b[32..96]);
    out.extend_from_slice(&b);
}

/// The common part of `quantize_row_q4_K_ref` and `quantize_row_q5_K_ref`: each run of 32
/// searched with weights `av_x + |x|` (`av_x` the run's root mean square), the 6-bit scales
/// and mins packed in `b[4..16]` under the f16 `d` and `dmin` at `b[0..4]`, then every run
/// requantized with the stored values into `l` (`0..=p.nmax`).
fn scales_and_mins(p: &Qkx2, x: &[f32], b: &mut [u8], l: &mut [u8; 256]) {
    let (mut scales, mut mins) = ([0f32; 8], [0f32; 8]);
    for (j, (xs, ls)) in x.chunks_exact(32).zip(l.chunks_exact_mut(32)).enumerate() {
        let sum_x2 = xs.iter().fold(0f32, |s, &v| s + v * v);
        let av_x = (sum_x2 / 32.0).sqrt();
        let weights: [f32; 32] = std::array::from_fn(|i| av_x + xs[i].abs());
        (scales[j], mins[j]) = make_qkx2_quants(p, xs, &weights, ls);
    }
    let (max_scale, max_min) = (positive_max(&scales), positive_max(&mins));
    let inv_scale = if max_scale > 0.0 { 63.0 / max_scale } else { 0.0 };
    let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
    // ggml stores the rounded scale in a uint8_t before clamping to 63: a negative one wraps.
    let six_bits = |v: f32| (nearest_int(v) as u8).min(63);
    let s = &mut b[4..16];
    for j in 0..8 {
        let (ls, lm) = (six_bits(inv_scale * scales[j]), six_bits(inv_min * mins[j]));
        if j < 4 {
            s[j] = ls;
            s[j + 4] = lm;
        } else {
            s[j + 4] = (ls & 15) | ((lm & 15) << 4);
            s[j - 4] |= (ls >> 4) << 6;
            s[j] |= (lm >> 4) << 6;
        }
    }
    let d = put_f16(b, 0, max_scale / 63.0);
    let dmin = put_f16(b, 2, max_min / 63.0);
    for (j, (xs, ls)) in x.chunks_exact(32).zip(l.chunks_exact_mut(32)).enumerate() {
        let (sc, m) = scale_min_k4(j, &b[4..16]);
        let d = d * sc as f32;
        if d == 0.0 {
            continue;
        }
        let dm = dmin * m as f32;
        for (q, &v) in ls.iter_mut().zip(xs) {
            *q = nearest_int((v + dm) / d).clamp(0, p.nmax) as u8;
        }
    }
}

/// ggml's `quantize_row_q4_K_ref` of one super-block: `d dmin scales[12] qs[128]`, byte
/// `32n + l` of qs holding values `64n + l` (low nibble) and `64n + l + 32` (high).
pub(super) fn q4_k_block(x: &[f32], out: &mut Vec<u8>) {
    let mut b = [0u8; 144];
    let mut l = [0u8; 256];
    scales_and_mins(&Q4_K, x, &mut b, &mut l);
    for (qs, l) in b[16..].chunks_exact_mut(32).zip(l.chunks_exact(64)) {
        for (i, q) in qs.iter_mut().enumerate() {
            *q = l[i] | (l[i + 32] << 4);
        }
    }
    out.extend_from_slice(&b);
}

/// ggml's `quantize_row_q5_K_ref` of one super-block: `d dmin scales[12] qh[32] qs[128]`, as
/// q4_K plus each value's 5th bit: bit `2n` (`2n + 1`) of `qh[l]` for value `64n + l` (`+ 32`).
pub(super) fn q5_k_block(x: &[f32], out: &mut Vec<u8>) {
    let mut b = [0u8; 176];
    let mut l = [0u8; 256];
    scales_and_mins(&Q5_K, x, &mut b, &mut l);
    let (qh, qs) = b[16..].split_at_mut(32);
    for (n, (qs, l)) in qs.chunks_exact_mut(32).zip(l.chunks_exact(64)).enumerate() {
        for (i, q) in qs.iter_mut().enumerate() {
            let (lo, hi) = (l[i], l[i + 32]);
            qh[i] |= ((lo >> 4) << (2 * n)) | ((hi >> 4) << (2 * n + 1));
            *q = (lo & 15) | ((hi & 15) << 4);
        }
    }
    out.extend_from_slice(&b);
}

/// ggml's `quantize_row_q6_K_ref` of one super-block: `ql[128] qh[64] scales[16] d`, all zeros
/// when every run's scale is below `GROUP_MAX_EPS`.
pub(super) fn q6_k_block(x: &[f32], out: &mut Vec<u8>) {
    let mut b = [0u8; 210];
    let mut l = [0u8; 256];
    let mut scales = [0f32; 16];
    for (s, (xs, ls)) in scales.iter_mut().zip(x.chunks_exact(16).zip(l.chunks_exact_mut(16))) {
        *s = make_qx_quants(32, xs, ls);
    }
    let (max_scale, max_abs) = signed_max(&scales);
    if max_abs < GROUP_MAX_EPS {
        out.extend_from_slice(&b);
        return;
    }
    let iscale = -128.0 / max_scale;
    let d = put_f16(&mut b, 208, 1.0 / iscale);
    for (s, &scale) in b[192..208].iter_mut().zip(&scales) {
        // ggml's int8_t scale: the low byte of the rounded value, clamped above only.
        *s = nearest_int(iscale * scale).min(127) as u8;
    }
    for (j, (xs, ls)) in x.chunks_exact(16).zip(l.chunks_exact_mut(16)).enumerate() {
        let d = d * b[192 + j] as i8 as f32;
        if d == 0.0 {
            continue;
        }
        for (q, &v) in ls.iter_mut().zip(xs) {
            *q = (nearest_int(v / d).clamp(-32, 31) + 32) as u8;
        }
    }
    // Value 128n + 32j + i: nibble j / 2 of ql[64n + 32(j % 2) + i], bits 2j of qh[32n + i].
    let (ql, qh) = b[..192].split_at_mut(128);
    for ((ql, qh), l) in ql.chunks_exact_mut(64).zip(qh.chunks_exact_mut(32)).zip(l.chunks_exact(128)) {
        for i in 0..32 {
            let q: [u8; 4] = std::array::from_fn(|j| l[i + 32 * j]);
            ql[i] = (q[0] & 15) | ((q[2] & 15) << 4);
            ql[i + 32] = (q[1] & 15) | ((q[3] & 15) << 4);
            qh[i] = (q[0] >> 4) | ((q[1] >> 4) << 2) | ((q[2] >> 4) << 4) | ((q[3] >> 4) << 6);
        }
    }
    out.extend_from_slice(&b);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::quant::GgmlType;

    #[test]
    fn nearest_int_rounds_half_to_even() {
        let cases = [(0.5, 0), (1.5, 2), (2.5, 2), (-0.5, 0), (-1.5, -2), (-2.49, -2), (4194303.0, 4194303)];
        for (x, want) in cases {
            assert_eq!(nearest_int(x), want, "{x}");
        }
    }

    #[test]
    fn zeros_quantize_to_zero_blocks() {
        for &ty in GgmlType::ALL.iter().filter(|t| t.block_size() == 256) {
            let out = crate::cpu::quant::quantize(ty, &[0.0; 512]);
            assert_eq!(out, Ok(vec![0; 2 * ty.block_bytes()]), "{ty}");
        }
    }
}
