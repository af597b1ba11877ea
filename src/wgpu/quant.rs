//! Quantized blocks on wgpu (`shaders/quant.wgsl`): the blocks bound as u32 words (a u8 storage
//! is its bytes packed four to a word), every field read at its byte address. `dequantize`: one
//! output word per invocation. `qmatvec`: a workgroup per weight row, the blocks decoded in
//! registers once and used for every row of x, a tree over the workgroup, one write per output.

use super::kernel::{Index, Spec};
use super::repr::{Access, Caps, Repr};
use super::{WgpuBackend, WgpuStorage};
use crate::backend::{Operand, QuantOps};
use crate::spec::quant::{GgmlType, QMATVEC_MAX_ROWS, QMATVEC_RUN, QuantOp, qmatvec_row_offsets, qmatvec_rows_class};
use crate::spec::{Family, kernel_name};
use crate::{DType, Result};

/// Invocations per `qmatvec` workgroup (a power of two: the tree halves it). With K = 4096 each
/// takes 4 runs of 8 values; the partial sums of 8 rows take 4 KiB of workgroup memory. Chosen
/// to fit, not measured yet.
const QMATVEC_WG: u32 = 128;

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

/// The matrix-vector kernel of x's `dtype` for `mq` rows of x (1, 2, 4 or 8: one accumulator
/// each); the block type is metadata, one branch per run of values.
fn qmatvec_spec(caps: Caps, dtype: DType, mq: usize) -> Result<Spec> {
    let r = Repr::of(dtype, caps, QuantOp::Qmatvec.name())?;
    let mut spec = Spec::new(Family::Quant, "qmatvec", caps)
        .bind("q", Repr::U32, Access::Read, Index::None)
        .bind("x", r, Access::Read, Index::None)
        .bind("y", r, Access::Update, Index::None)
        .constant("MQ", format!("{mq}u"))
        .constant("RUN", format!("{QMATVEC_RUN}u"));
    spec.workgroup = QMATVEC_WG;
    Ok(spec)
}

/// The kernel name of a `qmatvec` variant: `qmatvec_f32`, `qmatvec_f32_m2`, ...
fn qmatvec_name(dtype: DType, mq: usize) -> String {
    let base = kernel_name(QuantOp::Qmatvec.name(), dtype);
    if mq == 1 { base } else { format!("{base}_m{mq}") }
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

    fn qmatvec(
        &self,
        q: &WgpuStorage,
        offset: usize,
        ty: GgmlType,
        n: usize,
        (x, xl): Operand<WgpuStorage>,
    ) -> Result<WgpuStorage> {
        let starts = qmatvec_row_offsets(xl)?;
        let (rows, k) = (starts.len(), xl.dims()[xl.rank() - 1]);
        let y = self.storage(x.dtype, rows * n)?;
        let mq = qmatvec_rows_class(rows);
        let spec = qmatvec_spec(self.caps(), x.dtype, mq)?;
        // Every index fits u32: the storages (x's, the blocks') were checked against it.
        let (bs, bb) = (ty.block_size(), ty.block_bytes());
        let mut extra = vec![ty.id(), offset as u32, k as u32, n as u32, bs as u32, bb as u32, rows as u32];
        extra.push(xl.strides()[xl.rank() - 1] as u32);
        extra.extend((0..mq).map(|i| starts[i.min(rows - 1)] as u32));
        let meta = spec.meta((rows * n) as u32, &[], &extra);
        self.run(&spec, &[q.buffer(), x.buffer(), y.buffer()], &meta, n as u64 * QMATVEC_WG as u64)?;
        Ok(y)
    }
}

/// Every quant kernel: `dequantize_{dtype}`, `qmatvec_{dtype}` and its forms for 2, 4 and 8 rows.
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    let mut v: Vec<(String, Result<Spec>)> = QuantOp::Dequantize
        .dtypes()
        .iter()
        .map(|&dt| (kernel_name(QuantOp::Dequantize.name(), dt), dequantize_spec(caps, dt)))
        .collect();
    for &dt in QuantOp::Qmatvec.dtypes() {
        let classes = std::iter::successors(Some(1), |m| (m * 2 <= QMATVEC_MAX_ROWS).then_some(m * 2));
        v.extend(classes.map(|mq| (qmatvec_name(dt, mq), qmatvec_spec(caps, dt, mq))));
    }
    v
}
