//! Placeholder

use crate::backend::*;
use crate::cpu::{CpuBackend, CpuStorage};
#[allow(unused_imports)]
use crate::spec::{
    conv::ConvGeometry, copy::Copy2d, elementwise::*, index::ScatterMode, matmul::MatmulGeometry, pool::*,
    random::Distribution, reduce::ReduceOp,
};
use crate::*;

impl PoolOps for CpuBackend {
    #[allow(unused_variables)]
    fn pool2d(&self, x: &CpuStorage, l: &Layout, op: PoolOp, p: &Pool2dParams) -> Result<CpuStorage> {
        todo!()
    }
}
