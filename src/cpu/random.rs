//! Placeholder

use crate::backend::*;
use crate::cpu::{CpuBackend, CpuStorage};
#[allow(unused_imports)]
use crate::spec::{
    conv::ConvGeometry, copy::Copy2d, elementwise::*, index::ScatterMode, matmul::MatmulGeometry, pool::*,
    random::Distribution, reduce::ReduceOp,
};
use crate::*;

impl RandomOps for CpuBackend {
    #[allow(unused_variables)]
    fn random(&self, dtype: DType, len: usize, dist: Distribution, seed: u64, offset: u64) -> Result<CpuStorage> {
        todo!()
    }
}
