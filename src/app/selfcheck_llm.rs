//! The main job's checks of the families an LLM needs: attention (scaled dot-product attention,
//! rope) and quantized weights (dequantize from every GGML block type, the matrix-vector product).

use super::{Check, check, f32s, input, known};
use rocm_wgpu_ops::spec::quant::{GgmlType, QuantOp};
use rocm_wgpu_ops::{DType, QTensor};

pub(super) fn attention() -> Vec<Check> {
    // One query over two keys, scale 1: softmax(0, ln 3) = (1/4, 3/4) of the values (2, 6).
    let mut v = vec![known("scaled_dot_product_attention", &[5.0], |d| {
        let (q, k) = (f32s(d, &[1.], &[1, 1, 1, 1])?, f32s(d, &[0., 3f32.ln()], &[1, 1, 2, 1])?);
        q.scaled_dot_product_attention(&k, &f32s(d, &[2., 6.], &[1, 1, 2, 1])?, None, false, Some(1.0))
    })];
    for &dt in DType::FLOAT {
        v.push(check(format!("scaled_dot_product_attention {dt}"), move |d| {
            let (k, val) = (input(d, dt, &[1, 2, 19, 8], 57, -1., 1.)?, input(d, dt, &[1, 2, 19, 6], 58, -1., 1.)?);
            let q = input(d, dt, &[1, 8, 4, 4], 59, -1., 1.)?.reshape([1, 4, 8, 4])?.transpose(2, 3)?;
            q.scaled_dot_product_attention(&k, &val, None, true, None)
        }));
        for (name, interleaved) in [("rope", false), ("rope_i", true)] {
            v.push(check(format!("{name} {dt}"), move |d| {
                let x = input(d, dt, &[2, 5, 3, 8], 60, -2., 2.)?.transpose(1, 2)?;
                let (c, s) = (input(d, dt, &[5, 4], 61, -1., 1.)?, input(d, dt, &[5, 4], 62, -1., 1.)?);
                if interleaved { x.rope_i(&c, &s) } else { x.rope(&c, &s) }
            }));
        }
    }
    v
}

/// Dequantize to every float dtype from every block type (named dtype first, as the support
/// test parses names): blocks of pseudo-random bytes with bit 6 of each byte clear, so every
/// f16 scale in them is finite (its exponent below 31) whatever the layout; the k-quants' rows
/// are one block, the others' two.
pub(super) fn quant() -> Vec<Check> {
    let mut v = vec![];
    for &ty in GgmlType::ALL {
        for &dt in QuantOp::Dequantize.dtypes() {
            v.push(check(format!("dequantize {dt} {ty}"), move |d| {
                let k = if ty.block_size() == 32 { 64 } else { 256 };
                let n = 3 * k / ty.block_size() * ty.block_bytes();
                let mut x = 0x2545_f491_4f6c_dd1du64 ^ ty.id() as u64;
                let bytes: Vec<u8> = (0..n)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        (x >> 24) as u8 & 0xbf
                    })
                    .collect();
                QTensor::from_bytes(ty, [3, k], &bytes, d)?.dequantize(dt)
            }));
        }
    }
    v.extend(qmatvec());
    v
}

/// qmatmul through the matrix-vector kernel (2 rows of x, read transposed) for every float dtype,
/// on q8_0 and q4_0 rows of one block, with x in multiples of 1/8: every product `d q x` and
/// every partial sum is a multiple of `d / 8` below 2^15 d, exact in f32, so the sum is the
/// same in any order and the device must match the cpu's. The q8 activation mode's
/// (`qmatvec_q8`) the same way: the cpu rounds x to the same values, the sums differ by order.
fn qmatvec() -> Vec<Check> {
    let mut v = vec![];
    for (&dt, q8) in QuantOp::Qmatvec.dtypes().iter().flat_map(|dt| [(dt, false), (dt, true)]) {
        for ty in [GgmlType::Q8_0, GgmlType::Q4_0] {
            let op = if q8 { QuantOp::QmatvecQ8 } else { QuantOp::Qmatvec };
            v.push(check(format!("{} {dt} {ty}", op.name()), move |d| {
                let n = 3 * ty.block_bytes();
                let bytes: Vec<u8> = (0..n).map(|i| ((i * 73 + ty.id() as usize) % 251) as u8 & 0xbf).collect();
                let x: Vec<f32> = (0..64).map(|i| ((i * 5) % 17) as f32 / 8.0 - 1.0).collect();
                let x = f32s(d, &x, &[32, 2])?.to_dtype(dt)?.t()?;
                let w = QTensor::from_bytes(ty, [3, 32], &bytes, d)?;
                if q8 { w.qmatmul_q8(&x) } else { w.qmatmul(&x) }
            }));
        }
    }
    v
}
