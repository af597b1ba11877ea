//! Attention and the rotary embeddings as tensor methods ([`crate::spec::attention`]).

use super::Tensor;
use super::parts::{self, Split};
use crate::backend::AttentionOps;
use crate::device::{BackendOf, dispatch};
use crate::spec::Family;
use crate::spec::attention::{self, AttentionOp};
use crate::{DType, Error, Result, Scalar};

impl Tensor {
    /// Scaled dot-product attention of `self` (`q [B, Hq, Lq, D]`) over `k [B, Hkv, Lk, D]` and
    /// `v [B, Hkv, Lk, Dv]`, giving `[B, Hq, Lq, Dv]`; `Hq` a multiple of `Hkv` (grouped-query
    /// heads). `mask`, broadcastable to `[B, Hq, Lq, Lk]`, is `u8` (1 keeps a key) or additive;
    /// `causal` keeps key `j` for query `i` where `j <= i + Lk - Lq`; `scale` defaults to
    /// `1 / sqrt(D)`. A row with every key dropped is NaN. The scores never reach memory.
    ///
    /// ```
    /// # use rocm_wgpu_ops::{Device, DType, Tensor};
    /// let dev = Device::cpu();
    /// let q = Tensor::zeros([1, 4, 3, 8], DType::F32, &dev)?;
    /// let kv = Tensor::ones([1, 2, 5, 8], DType::F32, &dev)?;
    /// let y = q.scaled_dot_product_attention(&kv, &kv, None, true, None)?;
    /// assert_eq!(y.dims(), [1, 4, 3, 8]);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn scaled_dot_product_attention(
        &self,
        k: &Tensor,
        v: &Tensor,
        mask: Option<&Tensor>,
        causal: bool,
        scale: Option<f64>,
    ) -> Result<Tensor> {
        let op = AttentionOp::ScaledDotProductAttention.name();
        let others: Vec<&Tensor> = [Some(k), Some(v), mask].into_iter().flatten().collect();
        self.same_device(op, &others)?;
        let (out, p, ml) = attention::sdpa(self.lay(), k.lay(), v.lay(), mask.map(Tensor::lay), causal, scale)?;
        if parts::needed(&out, &others) || others.iter().any(|t| t.in_parts()) {
            // Batches with every operand; heads too where each has its own kv head (grouped
            // heads keep theirs whole); the rows and keys never (the causal alignment is theirs).
            let own_kv = self.dims()[1] == k.dims()[1];
            let with = |heads: bool| vec![Some(0), heads.then_some(1), None, None];
            let mut xs = vec![(self.clone(), with(true)), (k.clone(), with(own_kv)), (v.clone(), with(own_kv))];
            if let (Some(m), Some(l)) = (mask, &ml) {
                xs.push((m.view(l.clone()), with(true)));
            }
            let fixed: &[usize] = if own_kv { &[2, 3] } else { &[1, 2, 3] };
            let scale = Some(p.scale);
            let split = Split::mapped(op, &out, xs)
                .fixed(fixed)
                .run(|x| x[0].scaled_dot_product_attention(&x[1], &x[2], x.get(3), causal, scale));
            return match split {
                Err(Error::LimitExceeded { .. }) if self.in_parts() || others.iter().any(|t| t.in_parts()) => {
                    let mask = mask.zip(ml).map(|(m, l)| m.view(l));
                    self.attention_parts(k, v, mask.as_ref(), causal, p.scale)
                }
                r => r,
            };
        }
        let r = self.run(Family::Attention, op, &others, &out)?;
        let s = dispatch!(self.device, |b| {
            let m = match (mask, &ml) {
                (Some(t), Some(l)) => Some((r.arg(b, t)?, l)),
                _ => None,
            };
            let (q, k, v) = ((r.arg(b, self)?, &self.layout), (r.arg(b, k)?, &k.layout), (r.arg(b, v)?, &v.layout));
            b.wrap(b.sdpa(q, k, v, m, &p)?)
        });
        Ok(r.finish(s))
    }

    /// Attention composed of ops that split, where a row of keys or values past one buffer
    /// leaves the fused kernel no split: the scores `q kᵀ` (each kv head's query heads as rows of
    /// one product) scaled, masked (`mask` broadcast to `[B, Hq, Lq, Lk]`) and causally aligned,
    /// softmax over the keys, the product with `v`. The scores are in memory, in f32 for 16-bit
    /// inputs as the kernels compute them.
    fn attention_parts(
        &self,
        k: &Tensor,
        v: &Tensor,
        mask: Option<&Tensor>,
        causal: bool,
        scale: f64,
    ) -> Result<Tensor> {
        let (dims, kd) = (self.dims(), k.dims());
        let (b, hq, lq, hkv, lk) = (dims[0], dims[1], dims[2], kd[1], kd[2]);
        if lk == 0 {
            // No key: every row has all its keys dropped, NaN (the spec; an empty product would
            // give zeros).
            return Tensor::full(f64::NAN, [b, hq, lq, v.dims()[3]], self.dtype, &self.device);
        }
        let f32s = |t: &Tensor| if t.dtype.size_in_bytes() == 2 { t.to_dtype(DType::F32) } else { Ok(t.clone()) };
        let q = f32s(self)?.contiguous()?.reshape([b, hkv, hq / hkv * lq, dims[3]])?;
        let s = q.matmul(&f32s(k)?.transpose(2, 3)?)?.reshape([b, hq, lq, lk])?.affine(scale, 0.0)?;
        let s = match mask {
            Some(m) if m.dtype == DType::U8 => {
                m.where_cond(&s, &Tensor::full(f64::NEG_INFINITY, (), s.dtype, &self.device)?)?
            }
            Some(m) => s.add(&f32s(m)?)?,
            None => s,
        };
        let s = if causal {
            // Key j is seen by query i where j <= i + Lk - Lq.
            let i = Tensor::arange(0i64, lq as i64, &self.device)?.add(Scalar::I64(lk as i64 - lq as i64))?;
            let j = Tensor::arange(0i64, lk as i64, &self.device)?.reshape([1, lk])?;
            let keep = j.le(&i.reshape([lq, 1])?)?;
            keep.where_cond(&s, &Tensor::full(f64::NEG_INFINITY, (), s.dtype, &self.device)?)?
        } else {
            s
        };
        let p = s.softmax(3)?.reshape([b, hkv, hq / hkv * lq, lk])?;
        let y = p.matmul(&f32s(v)?)?.reshape([b, hq, lq, v.dims()[3]])?;
        y.to_dtype(self.dtype)
    }

    /// Rotary embedding with candle's `rope` convention: `self` is `[B, H, T, D]`, `cos` and
    /// `sin` `[T, D/2]` or `[B, T, D/2]`; element `i < D/2` rotates with element `i + D/2`.
    pub fn rope(&self, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
        self.rope_op(AttentionOp::Rope, cos, sin)
    }

    /// Rotary embedding with candle's `rope_i` convention: the pairs `(2i, 2i + 1)` of the last
    /// dim rotate (shapes as [`Tensor::rope`]).
    pub fn rope_i(&self, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
        self.rope_op(AttentionOp::RopeI, cos, sin)
    }

    fn rope_op(&self, op: AttentionOp, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
        self.same_device(op.name(), &[cos, sin])?;
        let (out, cl, sl) = attention::rope(op, self.lay(), cos.lay(), sin.lay())?;
        if parts::needed(&out, &[self, cos, sin]) {
            // Batches (with cos and sin where they have them) and heads.
            let table = |t: &Tensor| {
                let batch = t.rank() == 3 && t.dims()[0] > 1;
                (t.clone(), vec![batch.then_some(0), None, None, None])
            };
            let xs = vec![(self.clone(), vec![Some(0), Some(1), None, None]), table(cos), table(sin)];
            return Split::mapped(op.name(), &out, xs).fixed(&[2, 3]).run(|x| x[0].rope_op(op, &x[1], &x[2]));
        }
        let r = self.run(Family::Attention, op.name(), &[cos, sin], &out)?;
        let s = dispatch!(self.device, |b| {
            let (x, c, si) = ((r.arg(b, self)?, &self.layout), (r.arg(b, cos)?, &cl), (r.arg(b, sin)?, &sl));
            b.wrap(b.rope(op, x, c, si)?)
        });
        Ok(r.finish(s))
    }
}
