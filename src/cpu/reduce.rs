//! Placeholder

use crate::backend::*;
use crate::cpu::{CpuBackend, CpuStorage};
#[allow(unused_imports)]
use crate::spec::{
    conv::ConvGeometry, copy::Copy2d, elementwise::*, index::ScatterMode, matmul::MatmulGeometry, pool::*,
    random::Distribution, reduce::ReduceOp,
};
use crate::*;

impl ReduceOps for CpuBackend {
    #[allow(unused_variables)]
    fn reduce(&self, x: &CpuStorage, l: &Layout, op: ReduceOp, dims: &[usize]) -> Result<CpuStorage> {
        todo!()
    }
}
