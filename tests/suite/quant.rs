//! Quantized tensors: dequantization bit for bit against ggml's (llama.cpp's gguf-py, through
//! the vectors `tests/vectors/gen_quant.py` wrote), quantization byte for byte against ggml's
//! reference quantizers (gguf-py's for the simple types, ggml's own C through
//! `tests/vectors/gen_kquant.sh` for the k-quants), and the errors of bad blocks.

use crate::{Tol, compare_with_cpu, cpu, rand_tensor, suite};
use half::{bf16, f16};
use rocm_wgpu_ops::spec::quant::{GgmlType, QMATVEC_MAX_ROWS};
use rocm_wgpu_ops::{DType, Device, Error, QTensor, Result, Tensor};

suite!(
    dequantize_matches_ggml,
    quantize_matches_ggml,
    quantize_reads_strided_and_half_inputs,
    quantized_round_trip_is_close,
    kquantized_round_trip_is_close,
    quant_rejects_bad_blocks,
    dequantize_reads_blocks_at_any_byte_offset,
    qmatmul_matches_reference,
    qmatmul_matches_cpu_at_every_row_count,
    qmatmul_rejects_bad_shapes,
    qmatmul_q8_matches_cpu,
    qmatmul_q8_rounds_x_exactly,
);

/// The committed vectors of a type: its blocks and gguf-py's dequantization of them.
fn vectors(ty: GgmlType) -> (&'static [u8], &'static [u8]) {
    macro_rules! files {
        ($($t:ident = $n:literal),*) => {
            match ty {
                $(GgmlType::$t => (
                    &include_bytes!(concat!("../vectors/quant/", $n, ".blocks"))[..],
                    &include_bytes!(concat!("../vectors/quant/", $n, ".deq"))[..],
                )),*
            }
        };
    }
    files!(
        Q4_0 = "q4_0",
        Q4_1 = "q4_1",
        Q5_0 = "q5_0",
        Q5_1 = "q5_1",
        Q8_0 = "q8_0",
        Q2_K = "q2_K",
        Q3_K = "q3_K",
        Q4_K = "q4_K",
        Q5_K = "q5_K",
        Q6_K = "q6_K"
    )
}

/// The quantizers' input for `ty` and its shape: `input.f32` (16 blocks of 32, edge cases among
/// them) as `[4, 128]` for the simple types, `kinput.f32` (12 super-blocks, an edge case each) as
/// rows of two super-blocks, `[6, 512]`, for the k-quants.
fn input_for(ty: GgmlType) -> (Vec<f32>, [usize; 2]) {
    if ty.block_size() == 32 {
        (f32s(include_bytes!("../vectors/quant/input.f32")), [4, 128])
    } else {
        (f32s(include_bytes!("../vectors/quant/kinput.f32")), [6, 512])
    }
}

/// ggml's reference quantization (`quantize_row_*_ref`) of [`input_for`]`(ty)`: gguf-py's for
/// the simple types, ggml's own C's for the k-quants (`tests/vectors/gen_kquant.sh`).
fn quantized(ty: GgmlType) -> &'static [u8] {
    match ty {
        GgmlType::Q4_0 => include_bytes!("../vectors/quant/q4_0.quant"),
        GgmlType::Q4_1 => include_bytes!("../vectors/quant/q4_1.quant"),
        GgmlType::Q5_0 => include_bytes!("../vectors/quant/q5_0.quant"),
        GgmlType::Q5_1 => include_bytes!("../vectors/quant/q5_1.quant"),
        GgmlType::Q8_0 => include_bytes!("../vectors/quant/q8_0.quant"),
        GgmlType::Q2_K => include_bytes!("../vectors/quant/q2_K.kquant"),
        GgmlType::Q3_K => include_bytes!("../vectors/quant/q3_K.kquant"),
        GgmlType::Q4_K => include_bytes!("../vectors/quant/q4_K.kquant"),
        GgmlType::Q5_K => include_bytes!("../vectors/quant/q5_K.kquant"),
        GgmlType::Q6_K => include_bytes!("../vectors/quant/q6_K.kquant"),
    }
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// The logical shape of `bytes` of `ty`: rows of two blocks (one for the k-quants).
fn shape_of(ty: GgmlType, bytes: usize) -> [usize; 2] {
    let blocks = bytes / ty.block_bytes();
    let per_row = if ty.block_size() == 32 { 2 } else { 1 };
    [blocks / per_row, per_row * ty.block_size()]
}

async fn dequantize_matches_ggml(dev: &Device) -> Result<()> {
    for &ty in GgmlType::ALL {
        let (blocks, deq) = vectors(ty);
        let want = f32s(deq);
        let q = QTensor::from_bytes(ty, shape_of(ty, blocks.len()), blocks, dev)?;
        let got = q.dequantize(DType::F32)?.flatten_all()?.to_vec_async::<f32>().await?;
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "{ty} to f32 on {}", dev.describe());
        let got = q.dequantize(DType::F16)?.flatten_all()?.to_vec_async::<f16>().await?;
        let half: Vec<f16> = want.iter().map(|&x| f16::from_f32(x)).collect();
        assert!(got.iter().zip(&half).all(|(a, b)| a.to_bits() == b.to_bits()), "{ty} to f16");
        let got = q.dequantize(DType::BF16)?.flatten_all()?.to_vec_async::<bf16>().await?;
        let brain: Vec<bf16> = want.iter().map(|&x| bf16::from_f32(x)).collect();
        assert!(got.iter().zip(&brain).all(|(a, b)| a.to_bits() == b.to_bits()), "{ty} to bf16");
        assert_eq!(q.to_bytes_async().await?, blocks, "{ty}: the blocks as stored");
    }
    Ok(())
}

/// Every block type against ggml's reference quantizer, byte for byte.
async fn quantize_matches_ggml(dev: &Device) -> Result<()> {
    for &ty in GgmlType::ALL {
        let (values, shape) = input_for(ty);
        let q = QTensor::quantize_async(&Tensor::from_vec(values, shape, dev)?, ty).await?;
        assert_eq!((q.ty(), q.dims()), (ty, &shape[..]));
        let (got, want) = (q.to_bytes_async().await?, quantized(ty));
        let first = got.chunks(ty.block_bytes()).zip(want.chunks(ty.block_bytes())).position(|(a, b)| a != b);
        assert!(got == want, "{ty}: block {first:?} is not ggml's reference quantizer's");
    }
    Ok(())
}

/// A transposed view quantizes as its contiguous copy; f16 and bf16 inputs as their f32 values.
async fn quantize_reads_strided_and_half_inputs(dev: &Device) -> Result<()> {
    for ty in [GgmlType::Q8_0, GgmlType::Q4_1, GgmlType::Q4_K, GgmlType::Q6_K] {
        let (values, shape) = input_for(ty);
        let x = Tensor::from_vec(values, shape, dev)?;
        let xt = x.t()?.contiguous()?.t()?;
        assert!(!xt.is_contiguous());
        let a = QTensor::quantize_async(&xt, ty).await?.to_bytes_async().await?;
        assert_eq!(a, quantized(ty), "{ty} of a transposed view");
        for dtype in [DType::F16, DType::BF16] {
            let h = x.to_dtype(dtype)?;
            let a = QTensor::quantize_async(&h, ty).await?.to_bytes_async().await?;
            let b = QTensor::quantize_async(&h.to_dtype(DType::F32)?, ty).await?.to_bytes_async().await?;
            assert_eq!(a, b, "{ty} of {dtype}");
        }
    }
    Ok(())
}

/// Quantize then dequantize stays within each type's step `d` (q8_0, q4_0, q5_0: `amax / 127, 8,
/// 16`; q4_1, q5_1: `(max - min) / 15, 31`): half a step, except in q4_0 and q5_0, whose quants
/// reach 8 (16) steps on the side of the largest magnitude but 7 (15) on the other, where a value
/// may lose a whole step. Plus the f16 rounding of the scale and min: 2^-11 relative, or half of
/// f16's least subnormal (2^-25), times the quant.
async fn quantized_round_trip_is_close(dev: &Device) -> Result<()> {
    let (x, shape) = input_for(GgmlType::Q8_0);
    let t = Tensor::from_vec(x.clone(), shape, dev)?;
    let cases = [
        (GgmlType::Q8_0, 127.0, false, 0.5),
        (GgmlType::Q4_0, 8.0, false, 1.0),
        (GgmlType::Q5_0, 16.0, false, 1.0),
        (GgmlType::Q4_1, 15.0, true, 0.5),
        (GgmlType::Q5_1, 31.0, true, 0.5),
    ];
    for (ty, steps, with_min, lost) in cases {
        let q = QTensor::quantize_async(&t, ty).await?;
        let back = q.dequantize(DType::F32)?.flatten_all()?.to_vec_async::<f32>().await?;
        for (b, (xs, ys)) in x.chunks(32).zip(back.chunks(32)).enumerate() {
            let (lo, hi) = xs.iter().fold((f32::MAX, f32::MIN), |(l, h), &v| (l.min(v), h.max(v)));
            let amax = lo.abs().max(hi.abs());
            let d = if with_min { (hi - lo) / steps } else { amax / steps };
            let f16_rounding = amax * 2f32.powi(-9) + (steps + 1.0) * 2f32.powi(-25);
            for (j, (&v, &w)) in xs.iter().zip(ys).enumerate() {
                let err = (v - w).abs();
                assert!(err <= d * lost + f16_rounding, "{ty} block {b} value {j}: {v} came back {w}");
            }
        }
    }
    Ok(())
}

/// The same for q4_K and q6_K, a super-block at a time: each run's scale (and min) is quantized
/// again against the super-block's largest, so a run's step is bounded only by the super-block's
/// largest one, about `range / 15` for q4_K (quants 0..=15 over the range, 0 included) and
/// `amax / 32` for q6_K (-32..=31). A whole step, not half: a run whose scale rounded down clamps
/// its extremes. Plus the f16 rounding of `d` (and `dmin`) times scale and quant.
async fn kquantized_round_trip_is_close(dev: &Device) -> Result<()> {
    let (x, shape) = input_for(GgmlType::Q4_K);
    let t = Tensor::from_vec(x.clone(), shape, dev)?;
    for ty in [GgmlType::Q4_K, GgmlType::Q6_K] {
        let q = QTensor::quantize_async(&t, ty).await?;
        let back = q.dequantize(DType::F32)?.flatten_all()?.to_vec_async::<f32>().await?;
        for (b, (xs, ys)) in x.chunks(256).zip(back.chunks(256)).enumerate() {
            let (lo, hi) = xs.iter().fold((0f32, 0f32), |(l, h), &v| (l.min(v), h.max(v)));
            let amax = lo.abs().max(hi.abs());
            // The step, and the most that the f16 rounding of d (and dmin) is multiplied by.
            let (step, most) =
                if ty == GgmlType::Q4_K { ((hi - lo) / 15.0, 63.0 * 15.0 + 63.0) } else { (amax / 32.0, 128.0 * 32.0) };
            let f16_rounding = amax * 2f32.powi(-9) + most * 2f32.powi(-25);
            for (j, (&v, &w)) in xs.iter().zip(ys).enumerate() {
                let err = (v - w).abs();
                assert!(err <= step + f16_rounding, "{ty} super-block {b} value {j}: {v} came back {w}");
            }
        }
    }
    Ok(())
}

async fn quant_rejects_bad_blocks(dev: &Device) -> Result<()> {
    let (blocks, _) = vectors(GgmlType::Q4_K);
    let q = |ty, shape: &[usize], bytes: &[u8]| QTensor::from_bytes(ty, shape, bytes, dev).map(|_| ());
    assert!(matches!(q(GgmlType::Q4_K, &[1, 128], &blocks[..72]), Err(Error::BlockShape { block: 256, .. })));
    let truncated = q(GgmlType::Q4_K, &[3, 256], &blocks[..blocks.len() - 1]);
    assert!(matches!(truncated, Err(Error::QuantBytes { expected: 432, got: 431, .. })), "{truncated:?}");
    assert!(matches!(q(GgmlType::Q4_K, &[2, 256], blocks), Err(Error::QuantBytes { expected: 288, got: 432, .. })));
    assert!(matches!(q(GgmlType::Q8_0, &[], &blocks[..34]), Err(Error::Rank { .. })));
    assert_eq!(GgmlType::from_id(1).err(), Some(Error::UnknownBlockType { id: 1 }));
    let ok = QTensor::from_bytes(GgmlType::Q4_K, [3, 256], blocks, dev)?;
    assert!(matches!(ok.dequantize(DType::U8), Err(Error::WrongDType { .. })));
    assert!(matches!(ok.dequantize(DType::F64), Err(Error::WrongDType { .. })));
    let ints = Tensor::zeros([1, 32], DType::U32, dev)?;
    assert!(matches!(QTensor::quantize_async(&ints, GgmlType::Q8_0).await, Err(Error::WrongDType { .. })));
    let ragged = Tensor::zeros([2, 48], DType::F32, dev)?;
    assert!(matches!(QTensor::quantize_async(&ragged, GgmlType::Q8_0).await, Err(Error::BlockShape { .. })));
    let ragged = Tensor::zeros([2, 288], DType::F32, dev)?;
    assert!(matches!(
        QTensor::quantize_async(&ragged, GgmlType::Q4_K).await,
        Err(Error::BlockShape { block: 256, .. })
    ));
    Ok(())
}

/// Blocks in a window of a larger u8 buffer, at every byte offset modulo 4 (the WGSL kernels read
/// words), dequantize as they do alone.
async fn dequantize_reads_blocks_at_any_byte_offset(dev: &Device) -> Result<()> {
    for &ty in GgmlType::ALL {
        let (blocks, deq) = vectors(ty);
        let want: Vec<u32> = f32s(deq).iter().map(|x| x.to_bits()).collect();
        for pad in 1..4 {
            let mut buffer = vec![0xa5u8; pad];
            buffer.extend_from_slice(blocks);
            buffer.extend_from_slice(&[0x5a; 3]);
            let window = Tensor::from_vec(buffer, [blocks.len() + pad + 3], dev)?.narrow(0, pad, blocks.len())?;
            let q = QTensor::new(ty, shape_of(ty, blocks.len()), &window)?;
            let got = q.dequantize(DType::F32)?.flatten_all()?.to_vec_async::<f32>().await?;
            assert_eq!(got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), want, "{ty} at byte {pad}");
        }
    }
    let ints = Tensor::zeros([34], DType::U32, dev)?;
    assert!(matches!(QTensor::new(GgmlType::Q8_0, [1, 32], &ints), Err(Error::Operand { .. })));
    Ok(())
}

/// The weights of a qmatmul test: five rows of K = 256 quantized from random values (simple
/// types), the committed blocks (three rows) for the k-quants.
async fn weight(ty: GgmlType, dev: &Device) -> Result<QTensor> {
    if ty.block_size() == 32 {
        let w = crate::rand_tensor(dev, DType::F32, &[5, 256], 7 + ty.id() as u64, -1.0, 1.0)?;
        return QTensor::quantize_async(&w, ty).await;
    }
    let (blocks, _) = vectors(ty);
    QTensor::from_bytes(ty, [3, 256], blocks, dev)
}

/// `x W^T` against the sum in f64 of x's values (as stored) times the dequantized weights: within
/// f32 accumulation (2^-20 of the sum of |terms|, K = 256) plus one rounding to x's dtype (its
/// relative tolerance, or half of f16's least subnormal where the result is that small), and for
/// more than `QMATVEC_MAX_ROWS` rows of halves each weight's rounding to x's dtype. M = 1, M = 3
/// and M = 12, a batch, a transposed x, every block type and float dtype.
async fn qmatmul_matches_reference(dev: &Device) -> Result<()> {
    for &ty in GgmlType::ALL {
        let w = weight(ty, dev).await?;
        let n = w.dims()[0];
        let wv = w.dequantize(DType::F32)?.to_vec2_async::<f32>().await?;
        for dtype in crate::float_dtypes(dev).into_iter().filter(|d| *d != DType::F64) {
            let xs = [
                crate::rand_tensor(dev, dtype, &[1, 256], 3, -2.0, 2.0)?,
                crate::rand_tensor(dev, dtype, &[2, 3, 256], 4, -2.0, 2.0)?,
                crate::rand_tensor(dev, dtype, &[256, 3], 5, -2.0, 2.0)?.t()?,
                crate::rand_tensor(dev, dtype, &[12, 256], 6, -2.0, 2.0)?,
            ];
            for x in xs {
                let y = w.qmatmul(&x)?;
                let rows = x.elem_count() / 256;
                assert_eq!(y.dims(), [&x.dims()[..x.rank() - 1], &[n]].concat(), "{ty} {dtype}");
                // Widened through f32, which holds every f16, bf16 and f32 value exactly and every
                // adapter computes in (a browser's has no f64).
                let widened = async |t: &Tensor| -> Result<Vec<f64>> {
                    let v = t.to_dtype(DType::F32)?.flatten_all()?.to_vec_async::<f32>().await?;
                    Ok(v.into_iter().map(f64::from).collect())
                };
                let (xv, yv) = (widened(&x).await?, widened(&y).await?);
                let unit = if dtype == DType::F32 { 0.0 } else { Tol::of(dtype).rtol };
                // Below f16's least normal its rounding is absolute: half a subnormal step.
                let floor = if dtype == DType::F16 { 2f64.powi(-25) } else { 0.0 };
                // Past QMATVEC_MAX_ROWS rows the weights are rounded to x's dtype first: at most
                // its unit roundoff of each (2^-11, 2^-8), or f16's half subnormal step.
                let rounded = rows > QMATVEC_MAX_ROWS && dtype != DType::F32;
                let (w_unit, w_floor) = match dtype {
                    DType::F16 if rounded => (2f64.powi(-11), 2f64.powi(-25)),
                    DType::BF16 if rounded => (2f64.powi(-8), 0.0),
                    _ => (0.0, 0.0),
                };
                for r in 0..rows {
                    for (j, wr) in wv.iter().enumerate() {
                        let xr = &xv[r * 256..(r + 1) * 256];
                        let terms = xr.iter().zip(wr).map(|(&a, &b)| a * b as f64);
                        let (sum, abs) = terms.fold((0.0, 0.0), |(s, a), t| (s + t, a + t.abs()));
                        let x_abs: f64 = xr.iter().map(|a| a.abs()).sum();
                        let got = yv[r * n + j];
                        let bound = abs * (2f64.powi(-20) + w_unit) + x_abs * w_floor + sum.abs() * unit + floor;
                        assert!((got - sum).abs() <= bound, "{ty} {dtype} {:?} [{r}, {j}]: {got} vs {sum}", x.dims());
                    }
                }
            }
        }
    }
    Ok(())
}

/// The blocks of a `[n, k]` weight of `ty` and the largest magnitude of its values: quantized from
/// values in [-1, 1] (simple types), or the committed blocks in turn (k-quants: scales of both
/// signs, a zero, a subnormal).
async fn blocks_of(ty: GgmlType, n: usize, k: usize) -> Result<(Vec<u8>, f64)> {
    let bytes = if ty.block_size() == 32 {
        let w = rand_tensor(&cpu(), DType::F32, &[n, k], 11 + ty.id() as u64, -1.0, 1.0)?;
        QTensor::quantize_async(&w, ty).await?.to_bytes_async().await?
    } else {
        let blocks: Vec<&[u8]> = vectors(ty).0.chunks_exact(ty.block_bytes()).collect();
        (0..n * k / ty.block_size()).flat_map(|b| blocks[b * 7 % blocks.len()].iter().copied()).collect()
    };
    let values = QTensor::from_bytes(ty, [n, k], &bytes, &cpu())?.dequantize(DType::F32)?;
    let v = values.flatten_all()?.to_vec_async::<f32>().await?;
    Ok((bytes, v.iter().fold(0f64, |m, &x| m.max(x.abs() as f64))))
}

/// The layouts of x `[.., M, K]` `qmatmul` must read: M = 1 and 2, a batch (6 rows: the 8-row
/// kernel with two rows unused), the 8 rows of the threshold from a permuted batch, a transpose
/// (K's stride 2), a window (an offset, gaps between rows), broadcasts (stride 0 across rows, and
/// along K), and 9 rows (past the threshold: dequantize + matmul).
const X_CASES: [&str; 9] = [
    "[1, K]",
    "[2, K]",
    "[3, 2, K]",
    "[2, 4, K] permuted",
    "[K, 2]^T",
    "window",
    "[1, K] broadcast",
    "[2, 1] broadcast along K",
    "[3, 3, K]",
];

/// x of layout `X_CASES[case]` with values in [-s, s].
fn x_case(d: &Device, dtype: DType, k: usize, s: f64, case: usize) -> Result<Tensor> {
    let r = |shape: &[usize]| rand_tensor(d, dtype, shape, case as u64, -s, s);
    match case {
        0 => r(&[1, k]),
        1 => r(&[2, k]),
        2 => r(&[3, 2, k]),
        3 => r(&[2, 4, k])?.transpose(0, 1),
        4 => r(&[k, 2])?.t(),
        5 => r(&[2, 2 * k + 5])?.narrow(1, 5, k),
        6 => r(&[1, k])?.broadcast_as([3, k]),
        7 => r(&[2, 1])?.broadcast_as([2, k]),
        _ => r(&[3, 3, k]),
    }
}

/// Device against the cpu, which sums in f32 too but in order: both sum K products of magnitude
/// at most 1 (x is scaled by the largest weight), so they differ within the matmul suite's bound
/// (f32's tolerance grown with K), plus one rounding to x's dtype.
fn qtol(dtype: DType, k: usize) -> Tol {
    let (sum, round) = (Tol::of(DType::F32).times(1.0 + k as f64 / 4.0), Tol::of(dtype));
    Tol { atol: sum.atol + round.atol, rtol: sum.rtol + round.rtol }
}

/// qmatmul of every block type against the cpu reference at row counts on both sides of the
/// threshold (`QMATVEC_MAX_ROWS`), every x layout of [`X_CASES`], f32, f16 and bf16 x, an odd N and
/// a K of several runs per invocation (k-quants: N = 19, past a block of 16 weight rows of the
/// tensor-core kernel, and 9 super-blocks, more than its 8 warps; the 32-value types: 65 blocks, so
/// the lanes of a row take unequal shares of its units, and for q8_0 also 72 blocks, 9 steps of
/// its tensor-core kernel), the blocks off a word boundary of their buffer (at an odd or an even
/// address) and on a 16-byte one: the native kernel reads words from even addresses, q4_K's and
/// q8_0's 16-byte vectors where the blocks start on 16 bytes, and value by value elsewhere.
async fn qmatmul_matches_cpu_at_every_row_count(dev: &Device) -> Result<()> {
    for &ty in GgmlType::ALL {
        let (n, ks): (usize, &[usize]) = match ty {
            GgmlType::Q8_0 => (5, &[2080, 2304]),
            _ if ty.block_size() == 32 => (5, &[2080]),
            _ => (19, &[2304]),
        };
        for &k in ks {
            product_against_cpu(dev, ty, n, k, false).await?;
        }
    }
    Ok(())
}

/// [`qmatmul_matches_cpu_at_every_row_count`] for the q8 activation mode: the types with
/// integer-dot kernels (q4_0, q8_0, q4_K), and two that take the rounded values through qmatvec
/// (q5_1, q6_K). The cpu rounds x as every backend must (the same bits), so the two differ by the
/// order of their f32 sums only.
async fn qmatmul_q8_matches_cpu(dev: &Device) -> Result<()> {
    for ty in [GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_1, GgmlType::Q6_K] {
        let (n, k) = if ty.block_size() == 32 { (5, 2080) } else { (19, 2304) };
        product_against_cpu(dev, ty, n, k, true).await?;
    }
    Ok(())
}

/// `qmatmul` (`q8`: `qmatmul_q8`) of a `[n, k]` weight of `ty` against the cpu's.
async fn product_against_cpu(dev: &Device, ty: GgmlType, n: usize, k: usize, q8: bool) -> Result<()> {
    let (bytes, wmax) = blocks_of(ty, n, k).await?;
    for pad in [1 + ty.id() as usize % 2, 16] {
        let weight = |d: &Device| -> Result<QTensor> {
            let buffer: Vec<u8> = std::iter::repeat_n(0xa5, pad).chain(bytes.iter().copied()).collect();
            let window = Tensor::from_vec(buffer, [pad + bytes.len()], d)?.narrow(0, pad, bytes.len())?;
            QTensor::new(ty, [n, k], &window)
        };
        for dtype in crate::float_dtypes(dev).into_iter().filter(|d| *d != DType::F64) {
            for (case, name) in X_CASES.iter().enumerate() {
                let what = format!("qmatmul (q8 {q8}) {ty} {dtype} x {name}, blocks at byte {pad}");
                let f = |d: &Device| {
                    let (w, x) = (weight(d)?, x_case(d, dtype, k, 1.0 / wmax, case)?);
                    if q8 { w.qmatmul_q8(&x) } else { w.qmatmul(&x) }
                };
                compare_with_cpu(dev, qtol(dtype, k), &what, f).await?;
            }
        }
    }
    Ok(())
}

async fn qmatmul_rejects_bad_shapes(dev: &Device) -> Result<()> {
    let w = weight(GgmlType::Q8_0, dev).await?;
    let x = Tensor::zeros([2, 128], DType::F32, dev)?;
    assert!(matches!(w.qmatmul(&x), Err(Error::MatmulShape { .. })));
    let v = Tensor::zeros([256], DType::F32, dev)?;
    assert!(matches!(w.qmatmul(&v), Err(Error::MatmulShape { .. })));
    let ints = Tensor::zeros([1, 256], DType::U32, dev)?;
    assert!(matches!(w.qmatmul(&ints), Err(Error::WrongDType { .. })));
    assert!(matches!(w.qmatmul_q8(&x), Err(Error::MatmulShape { .. })));
    assert!(matches!(w.qmatmul_q8(&ints), Err(Error::WrongDType { .. })));
    Ok(())
}

/// The q8 activation mode's rounding of x, value by value: a q8_0 weight whose row j is 1 at
/// column j (d = 1, q = 1) and 0 elsewhere makes y[j] = x's rounded value j exactly. Run 0 has
/// the largest magnitude 127 / 16 (so d = 1/16) and values on and beside the half steps (ties
/// to even: 2.5 / 16 -> 2 / 16, 3.5 / 16 -> 4 / 16, -2.5 / 16 -> -2 / 16); in f32, run 1 lies below
/// 2^-100 (zeros). A NaN or an infinity anywhere in x makes its run NaN, and so every output.
async fn qmatmul_q8_rounds_x_exactly(dev: &Device) -> Result<()> {
    let k = 64;
    let mut blocks = vec![];
    for j in 0..k {
        for b in 0..k / 32 {
            blocks.extend(f16::from_f32(1.0).to_le_bytes());
            blocks.extend((0..32).map(|i| u8::from(32 * b + i == j)));
        }
    }
    let w = QTensor::from_bytes(GgmlType::Q8_0, [k, k], &blocks, dev)?;
    let run0: [(f32, f32); 8] = [
        (127.0, 127.0),
        (2.5, 2.0),
        (3.5, 4.0),
        (-2.5, -2.0),
        (-3.5, -4.0),
        (2.5 + 1.0 / 64.0, 3.0),
        (-126.49, -126.0),
        (0.4, 0.0),
    ];
    let (mut x, mut want) = (vec![0f32; k], vec![0f32; k]);
    for (i, (v, q)) in run0.iter().enumerate() {
        (x[i], want[i]) = (v / 16.0, q / 16.0);
    }
    x[32] = 1e-31;
    let rounded = async |x: &[f32], dtype: DType| -> Result<Vec<f32>> {
        let xt = Tensor::from_vec(x.to_vec(), [1, k], dev)?.to_dtype(dtype)?;
        w.qmatmul_q8(&xt)?.to_dtype(DType::F32)?.flatten_all()?.to_vec_async::<f32>().await
    };
    for dtype in [DType::F32, DType::F16] {
        let got = rounded(&x, dtype).await?;
        // f16 holds run 0 exactly, not 1e-31.
        let n = if dtype == DType::F32 { k } else { 32 };
        for j in 0..n {
            assert_eq!(got[j], want[j], "{dtype} x[{j}] = {}: rounded to {}", x[j], got[j]);
        }
    }
    for bad in [f32::NAN, f32::INFINITY] {
        let mut xb = x.clone();
        xb[40] = bad;
        let got = rounded(&xb, DType::F32).await?;
        assert!(got.iter().all(|v| v.is_nan()), "x holding {bad}: {got:?}");
    }
    Ok(())
}
