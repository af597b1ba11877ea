//! Fusion (`src/tensor/fuse.rs`): random elementwise chains give the same bits fused and one op
//! at a time (`Device::with_fusion`), and the cpu reference's values; a deferred result sees the
//! data as it was when its op was called, and carries its inputs' failures.

use crate::{Tol, assert_close, cpu, float_dtypes, rand_tensor, suite};
use rocm_wgpu_ops::spec::elementwise::{BinaryOp, UnaryOp};
use rocm_wgpu_ops::{DType, Device, Error, Result, Tensor};

suite!(
    random_chains_fuse_to_the_same_bits,
    a_deferred_result_reads_its_inputs_as_they_were,
    a_deferred_result_carries_its_inputs_failures
);

/// A small deterministic stream for choosing ops.
struct Pick(u64);

impl Pick {
    fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Well-conditioned unary maps (a chain of them stays within the tolerance of its dtype).
const UNARY: [UnaryOp; 12] = [
    UnaryOp::Tanh,
    UnaryOp::Sigmoid,
    UnaryOp::Gelu,
    UnaryOp::GeluErf,
    UnaryOp::Silu,
    UnaryOp::Neg,
    UnaryOp::Abs,
    UnaryOp::Sin,
    UnaryOp::Relu,
    UnaryOp::Erf,
    UnaryOp::Floor,
    UnaryOp::Sqr,
];

const BINARY: [BinaryOp; 5] = [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Maximum, BinaryOp::Minimum];

/// Chain `seed` on `dev` in `dtype`: inputs of shapes [4, 33], [33] and [4, 1] (broadcast) and
/// a transposed view, then 3 to 10 elementwise ops of every kind, each on earlier results.
fn chain(dev: &Device, dtype: DType, other: DType, seed: u64) -> Result<Tensor> {
    let x = rand_tensor(dev, dtype, &[4, 33], seed, -2.0, 2.0)?;
    let inputs = [
        x.clone(),
        rand_tensor(dev, dtype, &[33], seed + 1, -2.0, 2.0)?.broadcast_as([4, 33])?,
        rand_tensor(dev, dtype, &[4, 1], seed + 2, -2.0, 2.0)?.broadcast_as([4, 33])?,
        rand_tensor(dev, dtype, &[33, 4], seed + 3, -2.0, 2.0)?.t()?,
    ];
    let mut pick = Pick(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut values = vec![x];
    for _ in 0..3 + pick.next(8) {
        let a = values[pick.next(values.len())].clone();
        let b = if pick.next(2) == 0 { inputs[pick.next(4)].clone() } else { values[pick.next(values.len())].clone() };
        let v = match pick.next(6) {
            0 => a.unary(UNARY[pick.next(UNARY.len())])?,
            1 => a.binary(&b, BINARY[pick.next(BINARY.len())])?,
            2 => match pick.next(3) {
                0 => a.affine(0.75, -0.25)?,
                1 => a.elu(0.5)?,
                _ => a.clamp(-1.0, 1.5)?,
            },
            3 => a.gt(&b)?.where_cond(&a, &b)?,
            4 => a.to_dtype(other)?.tanh()?.to_dtype(dtype)?,
            _ => a.lt(&b)?.to_dtype(dtype)?.add(&a)?,
        };
        values.push(v);
    }
    Ok(values.pop().unwrap_or_else(|| unreachable!("a chain has ops")))
}

async fn random_chains_fuse_to_the_same_bits(dev: &Device) -> Result<()> {
    let (fused, alone) = (dev.with_fusion(true), dev.with_fusion(false));
    let dtypes = float_dtypes(dev);
    for seed in 0..48u64 {
        if crate::sample::skip() {
            continue;
        }
        let dtype = dtypes[seed as usize % dtypes.len()];
        let other = dtypes[(seed as usize + 1) % dtypes.len()];
        let what = format!("chain {seed} in {dtype} (through {other})");
        let got = chain(&fused, dtype, other, seed)?;
        let want = chain(&alone, dtype, other, seed)?;
        let (g, w) = (got.to_cpu_storage_async().await?, want.to_cpu_storage_async().await?);
        assert_eq!(g.as_bytes(), w.as_bytes(), "{what}: fused and one at a time differ on {}", dev.kind());
        // Each op rounds to the dtype on both sides; a chain of up to 10 compounds that.
        assert_close(&got, &chain(&cpu(), dtype, other, seed)?, Tol::of(dtype).times(16.0), &what).await?;
    }
    Ok(())
}

async fn a_deferred_result_reads_its_inputs_as_they_were(dev: &Device) -> Result<()> {
    let x = rand_tensor(dev, DType::F32, &[3, 8], 7, -1.0, 1.0)?;
    let want = x.to_vec_async::<f32>().await?.iter().map(|v| v.exp() * 2.0).collect::<Vec<f32>>();
    let y = x.exp()?.affine(2.0, 0.0)?;
    // In-place writes to what the deferred program reads: it runs first.
    x.narrow(0, 1, 1)?.fill_(5.0)?;
    let z = x.neg()?;
    x.slice_set(&Tensor::zeros([1, 8], DType::F32, dev)?, 0, 2)?;
    let got = y.to_vec_async::<f32>().await?;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-5 * w.abs(), "element {i}: {g} against {w}");
    }
    assert_eq!(z.to_vec_async::<f32>().await?[8..16], [-5.0; 8], "the fill is seen by an op called after it");
    Ok(())
}

async fn a_deferred_result_carries_its_inputs_failures(dev: &Device) -> Result<()> {
    let x = rand_tensor(dev, DType::F32, &[4, 3], 9, -1.0, 1.0)?;
    let ids = Tensor::from_vec(vec![0u32, 7, 1], [3], dev)?;
    let bad = |e: &Error| matches!(e, Error::IndexOutOfRange { index: 7, size: 4, .. });
    // The cpu reports a bad id at once; a GPU records it in the output's data.
    let picked = match x.index_select(&ids, 0) {
        Err(e) if bad(&e) => return Ok(()),
        r => r?,
    };
    let y = picked.exp()?.add(&picked)?;
    let err = y.to_vec_async::<f32>().await.unwrap_err();
    assert!(bad(&err), "{err}");
    // Its neighbours computed from clean data are clean.
    assert!(x.exp()?.add(&x)?.to_vec_async::<f32>().await.is_ok());
    Ok(())
}
