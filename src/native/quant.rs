//! Quantized blocks on the native backend (`hip/quant.hip`): one thread per value, the fields read
//! byte by byte; launches of whole blocks, each within the kernels' 32-bit index.

use super::kernel::{Args, MAX_ELEMS};
use super::{NativeBackend, NativeStorage, Runtime};
use crate::backend::QuantOps;
use crate::spec::quant::{GgmlType, QuantOp};
use crate::spec::{Family, kernel_name};
use crate::{DType, Result};

impl<R: Runtime> QuantOps for NativeBackend<R> {
    fn dequantize(
        &self,
        q: &NativeStorage<R>,
        offset: usize,
        ty: GgmlType,
        n: usize,
        dtype: DType,
    ) -> Result<NativeStorage<R>> {
        let y = self.storage(dtype, n)?;
        let name = kernel_name(QuantOp::Dequantize.name(), dtype);
        // The most whole blocks one launch's u32 index covers.
        let step = (MAX_ELEMS as usize / ty.block_size()) * ty.block_size();
        let mut first = 0;
        while first < n {
            let count = step.min(n - first);
            let bytes = offset + first / ty.block_size() * ty.block_bytes();
            let mut args = Args::default();
            args.u64(count as u64).pod(&ty.id()).ptr(q.at(bytes)).ptr(y.at(first));
            // SAFETY: dequantize_T(n, t, q, y) in order; it reads the `count / block_size` blocks
            // of type t at `q` (inside the u8 storage: the spec checked its bytes against the
            // shape) and writes `count` elements of `y` from `first` on.
            unsafe { self.launch(Family::Quant, &name, count as u64, &mut args)? };
            first += count;
        }
        Ok(y)
    }
}
