//! Quantized blocks on wgpu (`shaders/quant.wgsl`): the blocks bound as u32 words (a u8 storage
//! is its bytes packed four to a word), every field read at its byte address, one output word per
//! invocation.

use super::kernel::{Index, Spec};
use super::repr::{Access, Caps, Repr};
use super::{WgpuBackend, WgpuStorage};
use crate::backend::QuantOps;
use crate::spec::Family;
use crate::spec::quant::{GgmlType, QuantOp};
use crate::{DType, Result};

/// The dequantize kernel writing `dtype` (the block type is metadata: one branch per kernel,
/// the same for every invocation).
fn dequantize_spec(caps: Caps, dtype: DType) -> Result<Spec> {
    let r = Repr::of(dtype, caps, QuantOp::Dequantize.name())?;
    Ok(Spec::new(Family::Quant, "dequantize", caps).bind("q", Repr::U32, Access::Read, Index::None).bind(
        "y",
        r,
        Access::Write,
        Index::None,
    ))
}

impl QuantOps for WgpuBackend {
    fn dequantize(&self, q: &WgpuStorage, offset: usize, ty: GgmlType, n: usize, dtype: DType) -> Result<WgpuStorage> {
        let y = self.storage(dtype, n)?;
        if n == 0 {
            return Ok(y);
        }
        let spec = dequantize_spec(self.caps(), dtype)?;
        // The storage checks n against u32; the blocks' bytes fit the same binding.
        let meta = spec.meta(n as u32, &[], &[ty.id(), offset as u32]);
        let per = Repr::of(dtype, self.caps(), QuantOp::Dequantize.name())?.per_word() as usize;
        self.run(&spec, &[q.buffer(), y.buffer()], &meta, n.div_ceil(per) as u64)?;
        Ok(y)
    }
}

/// Every quant kernel: `dequantize_{dtype}`.
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    QuantOp::Dequantize
        .dtypes()
        .iter()
        .map(|&dt| (crate::spec::kernel_name(QuantOp::Dequantize.name(), dt), dequantize_spec(caps, dt)))
        .collect()
}
