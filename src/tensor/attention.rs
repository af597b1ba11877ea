//! Attention and the rotary embeddings as tensor methods ([`crate::spec::attention`]).

use super::Tensor;
use super::parts::{self, Split};
use crate::Result;
use crate::backend::AttentionOps;
use crate::device::{BackendOf, dispatch};
use crate::spec::Family;
use crate::spec::attention::{self, AttentionOp};

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
            return Split::mapped(op, &out, xs)
                .fixed(fixed)
                .run(|x| x[0].scaled_dot_product_attention(&x[1], &x[2], x.get(3), causal, scale));
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
