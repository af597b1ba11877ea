//! Attention and the rotary embeddings on the cpu, the plain way: every score of a row in f64
//! (scale times the dot product, plus the mask), its softmax, the weighted sum of the values;
//! each output element rounded once to the dtype.

use super::{CpuBackend, CpuStorage, dtype_mismatch, map_strided, wrong_dtype};
use crate::backend::{AttentionOps, Operand};
use crate::spec::attention::{AttentionOp, MaskKind, Sdpa};
use crate::{DType, Layout, Result, WithDType};

/// The elements of an operand of the dtype `T` of `x`, row-major, as f64.
fn read<T: WithDType>(op: AttentionOp, x: &CpuStorage, (s, l): Operand<CpuStorage>) -> Result<Vec<f64>> {
    let v = s.as_slice::<T>().ok_or_else(|| dtype_mismatch(op.name(), x, s))?;
    Ok(map_strided(v, l, |e| e.to_f64()))
}

/// The additive form of a mask laid out as `[B, Hq, Lq, Lk]`: 0 or -inf for `u8`.
fn read_mask<T: WithDType>(x: &CpuStorage, mask: Option<Operand<CpuStorage>>, p: &Sdpa) -> Result<Option<Vec<f64>>> {
    let op = AttentionOp::ScaledDotProductAttention;
    match (mask, p.mask) {
        (Some((s, l)), MaskKind::Keep) => {
            let v = s.as_slice::<u8>().ok_or_else(|| wrong_dtype(op.name(), s, &[DType::U8]))?;
            Ok(Some(map_strided(v, l, |m| if m != 0 { 0.0 } else { f64::NEG_INFINITY })))
        }
        (Some(m), MaskKind::Additive) => read::<T>(op, x, m).map(Some),
        _ => Ok(None),
    }
}

fn sdpa_typed<T: WithDType>(
    x: &CpuStorage,
    (q, k, v): (Operand<CpuStorage>, Operand<CpuStorage>, Operand<CpuStorage>),
    mask: Option<Operand<CpuStorage>>,
    p: &Sdpa,
) -> Result<CpuStorage> {
    let op = AttentionOp::ScaledDotProductAttention;
    let (q, k, v) = (read::<T>(op, x, q)?, read::<T>(op, x, k)?, read::<T>(op, x, v)?);
    let mask = read_mask::<T>(x, mask, p)?;
    let group = p.hq / p.hkv.max(1);
    let mut out = Vec::with_capacity(p.b * p.hq * p.lq * p.dv);
    let mut s = vec![0.0; p.lk];
    for b in 0..p.b {
        for h in 0..p.hq {
            let kv = b * p.hkv + h / group;
            for i in 0..p.lq {
                let qi = &q[((b * p.hq + h) * p.lq + i) * p.d..][..p.d];
                let seen = p.keys_seen(i);
                for (j, sj) in s.iter_mut().enumerate() {
                    let kj = &k[(kv * p.lk + j) * p.d..][..p.d];
                    let dot: f64 = qi.iter().zip(kj).map(|(a, b)| a * b).sum();
                    let add = mask.as_ref().map_or(0.0, |m| m[((b * p.hq + h) * p.lq + i) * p.lk + j]);
                    *sj = if j < seen { p.scale * dot + add } else { f64::NEG_INFINITY };
                }
                // Every key dropped: max is -inf, every difference NaN, and so the row.
                let max = s.iter().fold(f64::NEG_INFINITY, |m, &v| if v > m || v.is_nan() { v } else { m });
                let e: Vec<f64> = s.iter().map(|&v| (v - max).exp()).collect();
                let sum: f64 = if max == f64::NEG_INFINITY { f64::NAN } else { e.iter().sum() };
                for c in 0..p.dv {
                    let acc: f64 = e.iter().enumerate().map(|(j, &w)| w * v[(kv * p.lk + j) * p.dv + c]).sum();
                    out.push(T::from_f64(acc / sum));
                }
            }
        }
    }
    Ok(CpuStorage::from_vec(out))
}

fn rope_typed<T: WithDType>(
    op: AttentionOp,
    x: (&CpuStorage, &Layout),
    cos: Operand<CpuStorage>,
    sin: Operand<CpuStorage>,
) -> Result<CpuStorage> {
    let (xs, c, s) = (read::<T>(op, x.0, x)?, read::<T>(op, x.0, cos)?, read::<T>(op, x.0, sin)?);
    let [_, h, t, d] = [0, 1, 2, 3].map(|i| x.1.dims()[i]);
    let half = d / 2;
    let mut out = vec![T::from_f64(0.0); xs.len()];
    for (row, (xr, yr)) in xs.chunks_exact(d.max(1)).zip(out.chunks_exact_mut(d.max(1))).enumerate() {
        let (bi, ti) = (row / (h * t), row % t);
        let table = (bi * t + ti) * half;
        for i in 0..half {
            let (cv, sv) = (c[table + i], s[table + i]);
            let (a, z) = if op == AttentionOp::Rope { (i, i + half) } else { (2 * i, 2 * i + 1) };
            yr[a] = T::from_f64(xr[a] * cv - xr[z] * sv);
            yr[z] = T::from_f64(xr[a] * sv + xr[z] * cv);
        }
    }
    Ok(CpuStorage::from_vec(out))
}

impl AttentionOps for CpuBackend {
    fn sdpa(
        &self,
        q: Operand<CpuStorage>,
        k: Operand<CpuStorage>,
        v: Operand<CpuStorage>,
        mask: Option<Operand<CpuStorage>>,
        p: &Sdpa,
    ) -> Result<CpuStorage> {
        let x = q.0;
        match x.dtype() {
            DType::F16 => sdpa_typed::<half::f16>(x, (q, k, v), mask, p),
            DType::BF16 => sdpa_typed::<half::bf16>(x, (q, k, v), mask, p),
            DType::F32 => sdpa_typed::<f32>(x, (q, k, v), mask, p),
            DType::F64 => sdpa_typed::<f64>(x, (q, k, v), mask, p),
            _ => Err(wrong_dtype(AttentionOp::ScaledDotProductAttention.name(), x, DType::FLOAT)),
        }
    }

    fn rope(
        &self,
        op: AttentionOp,
        x: Operand<CpuStorage>,
        cos: Operand<CpuStorage>,
        sin: Operand<CpuStorage>,
    ) -> Result<CpuStorage> {
        match x.0.dtype() {
            DType::F16 => rope_typed::<half::f16>(op, x, cos, sin),
            DType::BF16 => rope_typed::<half::bf16>(op, x, cos, sin),
            DType::F32 => rope_typed::<f32>(op, x, cos, sin),
            DType::F64 => rope_typed::<f64>(op, x, cos, sin),
            _ => Err(wrong_dtype(op.name(), x.0, DType::FLOAT)),
        }
    }
}
