//! Attention and the rotary embeddings as tensor methods ([`crate::spec::attention`]).

use super::Tensor;
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
        let r = self.run(Family::Attention, op.name(), &[cos, sin], &out)?;
        let s = dispatch!(self.device, |b| {
            let (x, c, si) = ((r.arg(b, self)?, &self.layout), (r.arg(b, cos)?, &cl), (r.arg(b, sin)?, &sl));
            b.wrap(b.rope(op, x, c, si)?)
        });
        Ok(r.finish(s))
    }
}
