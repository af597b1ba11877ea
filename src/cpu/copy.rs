//! Copies, fills and arange on the cpu.

use super::{CpuBackend, CpuStorage, dtype_mismatch, strided};
use crate::backend::CopyOps;
use crate::spec::copy::Copy2d;
use crate::{DType, Layout, Result, Scalar, WithDType, with_storage, with_storage_pair};
use half::{bf16, f16};

fn arange_vec<T: WithDType>(start: Scalar, step: Scalar, len: usize) -> Vec<T> {
    if T::DTYPE.is_int() {
        let (s, st) = (start.to::<i64>(), step.to::<i64>());
        (0..len as i64).map(|i| T::from_i64(s.wrapping_add(i.wrapping_mul(st)))).collect()
    } else {
        let (s, st) = (start.to_f64(), step.to_f64());
        (0..len).map(|i| T::from_f64(s + i as f64 * st)).collect()
    }
}

impl CopyOps for CpuBackend {
    fn copy_strided(&self, src: &CpuStorage, sl: &Layout, dst: &mut CpuStorage, dst_offset: usize) -> Result<()> {
        let mismatch = dtype_mismatch("copy_strided", src, dst);
        with_storage_pair!(src, dst, (s, d) => {
            let n = sl.elem_count();
            d[dst_offset..dst_offset + n].copy_from_slice(&strided(s, sl));
            Ok(())
        }, Err(mismatch))
    }

    fn copy2d(&self, src: &CpuStorage, dst: &mut CpuStorage, p: &Copy2d) -> Result<()> {
        let mismatch = dtype_mismatch("copy2d", src, dst);
        with_storage_pair!(src, dst, (s, d) => {
            for r in 0..p.rows {
                let (so, dof) = (p.src_offset + r * p.src_stride, p.dst_offset + r * p.dst_stride);
                d[dof..dof + p.cols].copy_from_slice(&s[so..so + p.cols]);
            }
            Ok(())
        }, Err(mismatch))
    }

    fn fill(&self, dst: &mut CpuStorage, l: &Layout, value: Scalar) -> Result<()> {
        with_storage!(dst, d => {
            let v = value.to();
            for i in l.strided_index() {
                d[i] = v;
            }
        });
        Ok(())
    }

    fn arange(&self, dtype: DType, start: Scalar, step: Scalar, len: usize) -> Result<CpuStorage> {
        Ok(match dtype {
            DType::U8 => CpuStorage::U8(arange_vec(start, step, len)),
            DType::U32 => CpuStorage::U32(arange_vec(start, step, len)),
            DType::I64 => CpuStorage::I64(arange_vec(start, step, len)),
            DType::F16 => CpuStorage::F16(arange_vec::<f16>(start, step, len)),
            DType::BF16 => CpuStorage::BF16(arange_vec::<bf16>(start, step, len)),
            DType::F32 => CpuStorage::F32(arange_vec(start, step, len)),
            DType::F64 => CpuStorage::F64(arange_vec(start, step, len)),
        })
    }
}
