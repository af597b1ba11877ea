//! Fusion (`src/tensor/fuse.rs`): random elementwise chains, and random epilogues of matrix
//! products, give the same bits fused and one op at a time (`Device::with_fusion`), and the cpu
//! reference's values; a deferred result sees the data as it was when its op was called, and
//! carries its inputs' failures.

use crate::{Tol, assert_close, cpu, float_dtypes, rand_tensor, suite};
use rocm_wgpu_ops::spec::elementwise::{BinaryOp, UnaryOp};
use rocm_wgpu_ops::spec::quant::GgmlType;
use rocm_wgpu_ops::wgpu::gemm_hooks::{self, Kernel as GemmKernel, last_kernel, last_parts};
use rocm_wgpu_ops::{BackendKind, DType, Device, Error, QTensor, Result, Tensor};

suite!(
    random_chains_fuse_to_the_same_bits,
    random_epilogues_fuse_to_the_same_bits,
    a_layers_epilogue_fuses_to_the_same_bits,
    a_norm_before_a_product_fuses_to_the_same_bits,
    a_norm_before_a_quantized_product_fuses_to_the_same_bits,
    a_quantized_product_reads_each_normed_value_as_stored,
    a_llama_mlp_runs_each_product_once,
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
/// a transposed view, or for every other four seeds (whose rows are whole 16-byte chunks, as the
/// native `fused_vec` kernel takes them) [2, 4, 64], [4, 1] and [64] (broadcast) and a view at an
/// offset; then 3 to 10 elementwise ops of every kind, each on earlier results.
fn chain(dev: &Device, dtype: DType, other: DType, seed: u64) -> Result<Tensor> {
    let rand = |shape: &[usize], k: u64| rand_tensor(dev, dtype, shape, seed + k, -2.0, 2.0);
    let inputs = if (seed / 4).is_multiple_of(2) {
        [
            rand(&[4, 33], 0)?,
            rand(&[33], 1)?.broadcast_as([4, 33])?,
            rand(&[4, 1], 2)?.broadcast_as([4, 33])?,
            rand(&[33, 4], 3)?.t()?,
        ]
    } else {
        [
            rand(&[2, 4, 64], 0)?,
            rand(&[4, 1], 1)?.broadcast_as([2, 4, 64])?,
            rand(&[64], 2)?.broadcast_as([2, 4, 64])?,
            rand(&[3, 4, 64], 3)?.narrow(0, 1, 2)?,
        ]
    };
    let x = inputs[0].clone();
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

/// Products (lead dims of the lhs, K, N) that matmul's table gives each kernel on wgpu: a
/// matrix-vector one (one row; one column: the transposed problem), tiles, tiles in parts of K
/// (their sum takes the epilogue), batches.
const PRODUCTS: [(&[usize], usize, usize); 6] =
    [(&[1], 96, 40), (&[50], 64, 1), (&[33], 40, 65), (&[40], 768, 96), (&[2, 9], 24, 20), (&[1, 3], 48, 36)];

/// Epilogue `seed` on `dev`: the product `x w` of `PRODUCTS[seed % 6]` (w transposed in half
/// the seeds), then 1 to 4 ops on it: a bias row, a unary map, a residual, the product again, a
/// maximum by where_cond, a scalar map, casts through `other`; every fifth ends in a comparison.
/// Whether the ops end in `dtype` and take no scalar map (a wgpu GEMM kernel computes those).
fn epilogue(dev: &Device, dtype: DType, other: DType, seed: u64) -> Result<(Tensor, bool)> {
    let (lead, k, n) = PRODUCTS[seed as usize % PRODUCTS.len()];
    let x = rand_tensor(dev, dtype, &[lead, &[k]].concat(), seed, -1.0, 1.0)?;
    let w = match seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 63 {
        0 => rand_tensor(dev, dtype, &[k, n], seed + 1, -1.0, 1.0)?,
        _ => rand_tensor(dev, dtype, &[n, k], seed + 1, -1.0, 1.0)?.t()?,
    };
    let p = x.matmul(&w)?;
    let shape = p.dims().to_vec();
    let bias = rand_tensor(dev, dtype, &[n], seed + 2, -1.0, 1.0)?.broadcast_as(shape.clone())?;
    let res = rand_tensor(dev, dtype, &shape, seed + 3, -2.0, 2.0)?;
    let mut pick = Pick(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let (mut v, mut fits) = (p.clone(), true);
    for _ in 0..1 + pick.next(4) {
        v = match pick.next(7) {
            0 => v.add(&bias)?,
            1 => v.unary(UNARY[pick.next(5)])?,
            2 => res.add(&v)?,
            3 => v.mul(&p)?,
            4 => v.gt(&res)?.where_cond(&v, &res)?,
            5 => {
                fits = false;
                v.affine(0.5, 0.25)?
            }
            _ => v.to_dtype(other)?.to_dtype(dtype)?,
        };
    }
    if seed % 5 == 4 {
        (v, fits) = (v.gt(&res)?, false);
    }
    Ok((v, fits))
}

async fn random_epilogues_fuse_to_the_same_bits(dev: &Device) -> Result<()> {
    let (fused, alone) = (dev.with_fusion(true), dev.with_fusion(false));
    let dtypes = float_dtypes(dev);
    let mut kernels = vec![];
    for seed in 0..36u64 {
        if crate::sample::skip() {
            continue;
        }
        // Each product in each dtype.
        let (lead, k, n) = PRODUCTS[seed as usize % PRODUCTS.len()];
        let d = seed as usize / PRODUCTS.len();
        let (dtype, other) = (dtypes[d % dtypes.len()], dtypes[(d + 1) % dtypes.len()]);
        let what = format!("epilogue {seed} of {lead:?}x{k}x{n} in {dtype} (through {other})");
        let (got, fits) = epilogue(&fused, dtype, other, seed)?;
        let launches = fused.launches();
        fused.synchronize_async().await?;
        let launched = fused.launches() - launches;
        if dev.kind() == BackendKind::Wgpu {
            // One GEMM kernel (with split-K, and the sum) computes the whole program where it can.
            let kernel = last_kernel();
            let gemm = if last_parts() > 1 { 2 } else { 1 };
            // Nothing deferred: every op ran when called (f64 where the adapter has none, and a
            // browser's software adapter, fuse nothing). Natively the kernels seen below show
            // that the others deferred.
            let eager = launched == 0;
            let want = gemm + !fits as u64;
            assert!(
                eager || launched == want,
                "{what}: {launched} kernels for {want} ({kernel:?} in {} parts)",
                last_parts()
            );
            if !eager {
                kernels.push((kernel, last_parts()));
            }
        }
        let want = epilogue(&alone, dtype, other, seed)?.0;
        let (g, w) = (got.to_cpu_storage_async().await?, want.to_cpu_storage_async().await?);
        assert_eq!(g.as_bytes(), w.as_bytes(), "{what}: fused and one at a time differ on {}", dev.kind());
        if got.dtype() == dtype {
            let tol = Tol::of(dtype).times(4.0 * (1.0 + k as f64 / 4.0));
            assert_close(&got, &epilogue(&cpu(), dtype, other, seed)?.0, tol, &what).await?;
        }
    }
    if dev.kind() == BackendKind::Wgpu && !cfg!(target_family = "wasm") {
        let matvec = |rows| kernels.iter().any(|(k, _)| matches!(k, Some(GemmKernel::MatVec(v)) if v.rows == rows));
        let split = kernels.iter().any(|(k, p)| matches!(k, Some(GemmKernel::Tiled(_))) && *p > 1);
        assert!(matvec(false) && matvec(true) && split, "the kernels taken: {kernels:?}");
    }
    Ok(())
}

/// A layer's bias add, GELU and residual add over a one-row product, computed where the product
/// is stored (natively the matrix-vector kernel: the examples' kernels a token show it; a launch
/// count here would see other tests' kernels on the shared device), have the bits of the ops
/// one at a time and the cpu reference's values, in every float dtype the kernels take.
async fn a_layers_epilogue_fuses_to_the_same_bits(dev: &Device) -> Result<()> {
    let (fused, alone) = (dev.with_fusion(true), dev.with_fusion(false));
    for dtype in float_dtypes(dev).into_iter().filter(|&d| d != DType::F64) {
        // K long enough for the native columns walk to split it over blocks (2048).
        for (k, transposed) in [(64, false), (64, true), (2048, false)] {
            let operands = |d: &Device| -> Result<[Tensor; 4]> {
                let w = match transposed {
                    false => rand_tensor(d, dtype, &[k, 40], 32, -1.0, 1.0)?,
                    true => rand_tensor(d, dtype, &[40, k], 32, -1.0, 1.0)?.t()?,
                };
                Ok([
                    rand_tensor(d, dtype, &[1, k], 31, -1.0, 1.0)?,
                    w,
                    rand_tensor(d, dtype, &[40], 33, -1.0, 1.0)?.broadcast_as([1, 40])?,
                    rand_tensor(d, dtype, &[1, 40], 34, -2.0, 2.0)?,
                ])
            };
            let layer = |[x, w, b, r]: &[Tensor; 4]| x.matmul(w)?.add(b)?.gelu()?.add(r);
            let what = format!("a layer's epilogue in {dtype}, K {k}, weight transposed {transposed}");
            let got = layer(&operands(&fused)?)?;
            let want = layer(&operands(&alone)?)?;
            let (g, w) = (got.to_cpu_storage_async().await?, want.to_cpu_storage_async().await?);
            assert_eq!(g.as_bytes(), w.as_bytes(), "{what}: fused and one at a time differ on {}", dev.kind());
            assert_close(&got, &layer(&operands(&cpu())?)?, Tol::of(dtype).times(8.0 + k as f64 / 4.0), &what).await?;
        }
    }
    Ok(())
}

/// A decode step's norms, each read only by the product after it (computed by that product where
/// it reads its rows: a layer norm with weight and bias or neither, an rms norm with a weight or
/// none), in two residual blocks as a transformer's layer has them: the bits of the ops one at a
/// time and the cpu reference's values, for one to four rows, every float dtype the kernels take,
/// a weight read with a stride; on wgpu the whole block in two kernels where both products take
/// the matrix-vector kernel (a norm's input run once, not again inside a residual's program).
async fn a_norm_before_a_product_fuses_to_the_same_bits(dev: &Device) -> Result<()> {
    let (fused, alone) = (dev.with_fusion(true), dev.with_fusion(false));
    // Where products take epilogues (not a browser's software adapter, which fuses nothing).
    let epilogues = fused.info().iter().any(|(key, v)| *key == "fusion" && v.contains("matmul's product"));
    for dtype in float_dtypes(dev).into_iter().filter(|&d| d != DType::F64) {
        for (case, (rows, k, norm)) in
            [(1, 64, 0), (3, 256, 1), (4, 68, 2), (1, 1024, 3), (2, 128, 0)].into_iter().enumerate()
        {
            let seed = 40 + 10 * case as u64;
            let operands = |d: &Device| -> Result<Vec<Tensor>> {
                Ok(vec![
                    rand_tensor(d, dtype, &[rows, k], seed, -2.0, 2.0)?,
                    // A weight read with a stride (every other element), a bias as it is.
                    rand_tensor(d, dtype, &[k, 2], seed + 1, 0.5, 1.5)?.narrow(1, 1, 1)?.squeeze(1)?,
                    rand_tensor(d, dtype, &[k], seed + 2, -0.5, 0.5)?,
                    rand_tensor(d, dtype, &[k, k], seed + 3, -0.2, 0.2)?,
                    rand_tensor(d, dtype, &[k], seed + 4, -0.5, 0.5)?,
                    rand_tensor(d, dtype, &[k, 3 * k / 4], seed + 5, -0.2, 0.2)?,
                    rand_tensor(d, dtype, &[3 * k / 4, k], seed + 6, -0.2, 0.2)?,
                ])
            };
            let normed = |x: &Tensor, t: &[Tensor]| normed(x, t, norm);
            // x + norm(x) W + b, then that plus (norm(that) W1) W2; and the norm of x's first row
            // as a vector (a 1-D lhs) times W.
            let block = |t: &[Tensor]| -> Result<Tensor> {
                let x1 = t[0].add(&normed(&t[0], t)?.matmul(&t[3])?.add(&t[4])?)?;
                x1.add(&normed(&x1, t)?.matmul(&t[5])?.gelu()?.matmul(&t[6])?)
            };
            let vector = |t: &[Tensor]| normed(&t[0].narrow(0, 0, 1)?.squeeze(0)?, t)?.matmul(&t[3]);
            let what = format!("norm {norm} before a product in {dtype}, {rows} rows of {k}");
            let t = operands(&fused)?;
            let (got, launched) = counted(&fused, || block(&t)).await?;
            if dev.kind() == BackendKind::Wgpu
                && epilogues
                && matches!(last_kernel(), Some(GemmKernel::MatVec(v)) if !v.rows)
            {
                // Three products: the first with its norm and both adds, the second with its
                // norm, the third with the residual add.
                assert_eq!(launched, 3, "{what}: kernels");
            }
            let tol = Tol::of(dtype).times(16.0 + k as f64 / 2.0);
            for (f, name) in [(&block as &dyn Fn(&[Tensor]) -> Result<Tensor>, "block"), (&vector, "vector")] {
                let got = if name == "block" { got.clone() } else { f(&t)? };
                let want = f(&operands(&alone)?)?;
                let (g, w) = (got.to_cpu_storage_async().await?, want.to_cpu_storage_async().await?);
                assert_eq!(
                    g.as_bytes(),
                    w.as_bytes(),
                    "{what}, {name}: fused and one at a time differ on {}",
                    dev.kind()
                );
                assert_close(&got, &f(&operands(&cpu())?)?, tol, &format!("{what}, {name}")).await?;
            }
        }
    }
    Ok(())
}

/// Where two float tensors of one shape differ in bits: (index, a's value, b's value) in f32.
async fn apart(a: &Tensor, b: &Tensor) -> Result<Vec<(usize, f32, f32)>> {
    let (a, b) =
        (a.to_dtype(DType::F32)?.to_vec_async::<f32>().await?, b.to_dtype(DType::F32)?.to_vec_async::<f32>().await?);
    Ok(a.into_iter()
        .zip(b)
        .enumerate()
        .filter(|(_, (x, y))| x.to_bits() != y.to_bits())
        .map(|(i, (x, y))| (i, x, y))
        .collect())
}

/// `f`'s result and the kernels it launched on `dev`, idle before and after.
async fn counted<T>(dev: &Device, f: impl FnOnce() -> Result<T>) -> Result<(T, u64)> {
    dev.synchronize_async().await?;
    let before = dev.launches();
    let out = f()?;
    dev.synchronize_async().await?;
    Ok((out, dev.launches() - before))
}

/// Norm `kind` of x: a layer norm with weight `t[1]` and bias `t[2]`, one with neither, an rms
/// norm with weight `t[1]`, one without.
fn normed(x: &Tensor, t: &[Tensor], kind: usize) -> Result<Tensor> {
    match kind {
        0 => x.layer_norm(Some(&t[1]), Some(&t[2]), 1e-5),
        1 => x.layer_norm(None, None, 1e-3),
        2 => x.rms_norm(Some(&t[1]), 1e-5),
        _ => x.rms_norm(None, 1e-6),
    }
}

/// A decode step's norm read by quantized products (q, k and v of a Llama layer): where norms are
/// deferred, each `qmatvec` computes the norm itself (one kernel a product, the norm never
/// stored), the same bits as the norm stored and read back; every block type's decoder path
/// (q4_0, q8_0, q4_K, q6_K, and q5_0 by runs).
async fn a_norm_before_a_quantized_product_fuses_to_the_same_bits(dev: &Device) -> Result<()> {
    let (fused, alone) = (dev.with_fusion(true), dev.with_fusion(false));
    let epilogues = fused.info().iter().any(|(key, v)| *key == "fusion" && v.contains("matmul's product"));
    let types = [GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q5_0];
    for dtype in float_dtypes(dev).into_iter().filter(|d| [DType::F32, DType::F16].contains(d)) {
        for (case, (rows, k, norm)) in [(1, 256, 2), (2, 512, 0), (3, 256, 3), (4, 256, 1)].into_iter().enumerate() {
            let seed = 70 + 10 * case as u64;
            // The blocks made on the cpu (quantizing on a GPU reads back: not in a browser).
            let blocks = types.iter().enumerate().map(|(i, &ty)| {
                let w = rand_tensor(&cpu(), DType::F32, &[40 + i, k], seed + 3 + i as u64, -1.0, 1.0)?;
                QTensor::quantize(&w, ty)?.to_bytes()
            });
            let blocks: Vec<Vec<u8>> = blocks.collect::<Result<_>>()?;
            let operands = |d: &Device| -> Result<(Vec<Tensor>, Vec<QTensor>)> {
                let t = vec![
                    rand_tensor(d, dtype, &[rows, k], seed, -2.0, 2.0)?,
                    // A weight read with a stride (every other element), a bias as it is.
                    rand_tensor(d, dtype, &[k, 2], seed + 1, 0.5, 1.5)?.narrow(1, 1, 1)?.squeeze(1)?,
                    rand_tensor(d, dtype, &[k], seed + 2, -0.5, 0.5)?,
                ];
                let q = types
                    .iter()
                    .zip(&blocks)
                    .enumerate()
                    .map(|(i, (&ty, b))| QTensor::from_bytes(ty, [40 + i, k], b, d));
                Ok((t, q.collect::<Result<_>>()?))
            };
            let products = |(t, q): &(Vec<Tensor>, Vec<QTensor>)| -> Result<Vec<Tensor>> {
                let x = normed(&t[0], t, norm)?;
                q.iter().map(|q| q.qmatmul(&x)).collect()
            };
            let what = format!("norm {norm} before quantized products in {dtype}, {rows} rows of {k}");
            let ops = operands(&fused)?;
            let (got, launched) = counted(&fused, || products(&ops)).await?;
            if dev.kind() == BackendKind::Wgpu && epilogues {
                assert_eq!(launched, types.len() as u64, "{what}: kernels");
            }
            let want = products(&operands(&alone)?)?;
            let reference = products(&operands(&cpu())?)?;
            let tol = Tol::of(dtype).times(16.0 + k as f64 / 2.0);
            for ((g, w), (r, ty)) in got.iter().zip(&want).zip(reference.iter().zip(types)) {
                let differ = apart(g, w).await?;
                let first = &differ[..differ.len().min(4)];
                assert!(
                    differ.is_empty(),
                    "{what}, {ty:?}: fused and one at a time differ at {} of {} (first: {first:?})",
                    differ.len(),
                    g.elem_count()
                );
                assert_close(g, r, tol, &format!("{what}, {ty:?}")).await?;
            }
        }
    }
    Ok(())
}

/// A Llama MLP in a decode step: `x + down(silu(gate) * up)`, gate and up the halves of one
/// product of x's rms norm, with dense weights and with quantized ones (gate and up in q4_K,
/// down in q6_K, as a Q4_K_M file has them). The same bits fused and one at a time, the cpu
/// reference's values; on wgpu, where products take epilogues, three kernels: the gate-and-up
/// product with its norm (once: the SwiGLU reads both halves, so it reads the product as stored,
/// not the first half again inside a program), the SwiGLU, and the down product with the
/// residual add.
async fn a_llama_mlp_runs_each_product_once(dev: &Device) -> Result<()> {
    let (fused, alone) = (dev.with_fusion(true), dev.with_fusion(false));
    let epilogues = fused.info().iter().any(|(key, v)| *key == "fusion" && v.contains("matmul's product"));
    let (k, m) = (256, 256);
    let blocks = |ty: GgmlType, shape: [usize; 2], seed: u64| -> Result<Vec<u8>> {
        QTensor::quantize(&rand_tensor(&cpu(), DType::F32, &shape, seed, -0.2, 0.2)?, ty)?.to_bytes()
    };
    let (gate_up, down) = (blocks(GgmlType::Q4_K, [2 * m, k], 91)?, blocks(GgmlType::Q6_K, [k, m], 92)?);
    for dtype in float_dtypes(dev).into_iter().filter(|d| [DType::F32, DType::F16].contains(d)) {
        for (rows, quant) in [(1, false), (1, true), (3, true)] {
            let operands = |d: &Device| -> Result<(Vec<Tensor>, Vec<QTensor>)> {
                let t = vec![
                    rand_tensor(d, dtype, &[rows, k], 93, -2.0, 2.0)?,
                    rand_tensor(d, dtype, &[k], 94, 0.5, 1.5)?,
                    rand_tensor(d, dtype, &[k, 2 * m], 95, -0.2, 0.2)?,
                    rand_tensor(d, dtype, &[m, k], 96, -0.2, 0.2)?,
                ];
                let q = vec![
                    QTensor::from_bytes(GgmlType::Q4_K, [2 * m, k], &gate_up, d)?,
                    QTensor::from_bytes(GgmlType::Q6_K, [k, m], &down, d)?,
                ];
                Ok((t, q))
            };
            let mlp = |(t, q): &(Vec<Tensor>, Vec<QTensor>)| -> Result<Tensor> {
                let x = t[0].rms_norm(Some(&t[1]), 1e-5)?;
                let gu = if quant { q[0].qmatmul(&x)? } else { x.matmul(&t[2])? };
                let hidden = gu.narrow(1, 0, m)?.silu()?.mul(&gu.narrow(1, m, m)?)?;
                t[0].add(&if quant { q[1].qmatmul(&hidden)? } else { hidden.matmul(&t[3])? })
            };
            let what = format!("a Llama MLP in {dtype}, {rows} rows, quantized {quant}");
            let ops = operands(&fused)?;
            let products0 = gemm_hooks::recorded();
            let (got, launched) = counted(&fused, || mlp(&ops)).await?;
            let matvec = quant || matches!(last_kernel(), Some(GemmKernel::MatVec(v)) if !v.rows);
            if dev.kind() == BackendKind::Wgpu && epilogues && matvec {
                assert_eq!(launched, 3, "{what}: kernels");
                // Dense: gate-and-up, then down. (A second run of gate-and-up with the SwiGLU
                // as its epilogue would take the SwiGLU kernel's place: the kernels alone do
                // not show it.)
                let products = if quant { 0 } else { 2 };
                assert_eq!(gemm_hooks::recorded() - products0, products, "{what}: products");
            }
            let differ = apart(&got, &mlp(&operands(&alone)?)?).await?;
            assert!(
                differ.is_empty(),
                "{what}: fused and one at a time differ at {:?}",
                &differ[..differ.len().min(4)]
            );
            let tol = Tol::of(dtype).times(16.0 + (k + m) as f64 / 2.0);
            assert_close(&got, &mlp(&operands(&cpu())?)?, tol, &what).await?;
        }
    }
    Ok(())
}

/// As above, through an identity of q8_0 blocks: output n is one constant times the normed value
/// n, so where the fused product's norm differs from the stored one, the message names which
/// values of which rows differ, and by how much (all of a row: its statistics; some: their
/// rounding).
async fn a_quantized_product_reads_each_normed_value_as_stored(dev: &Device) -> Result<()> {
    let (fused, alone) = (dev.with_fusion(true), dev.with_fusion(false));
    let k = 256;
    let eye = Tensor::from_vec((0..k * k).map(|i| f32::from(u8::from(i % (k + 1) == 0))).collect(), [k, k], &cpu())?;
    let blocks = QTensor::quantize(&eye, GgmlType::Q8_0)?.to_bytes()?;
    for dtype in float_dtypes(dev).into_iter().filter(|d| [DType::F32, DType::F16].contains(d)) {
        for (rows, norm) in [(1, 0), (2, 1), (1, 2), (2, 3)] {
            let product = |d: &Device| -> Result<Tensor> {
                let t = [
                    rand_tensor(d, dtype, &[rows, k], 90 + norm as u64, -2.0, 2.0)?,
                    rand_tensor(d, dtype, &[k, 2], 91, 0.5, 1.5)?.narrow(1, 1, 1)?.squeeze(1)?,
                    rand_tensor(d, dtype, &[k], 92, -0.5, 0.5)?,
                ];
                QTensor::from_bytes(GgmlType::Q8_0, [k, k], &blocks, d)?.qmatmul(&normed(&t[0], &t, norm)?)
            };
            let got = product(&fused)?;
            let differ = apart(&got, &product(&alone)?).await?;
            let first: Vec<_> = differ.iter().take(4).map(|&(i, g, w)| (i / k, i % k, g / w - 1.0)).collect();
            assert!(
                differ.is_empty(),
                "norm {norm} of {rows} rows in {dtype}: {} of {} values differ (row, value, relative difference: {first:?})",
                differ.len(),
                got.elem_count()
            );
            assert_close(&got, &product(&cpu())?, Tol::of(dtype).times(16.0), &format!("norm {norm} in {dtype}"))
                .await?;
        }
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
