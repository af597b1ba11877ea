//! Placeholder

use crate::backend::*;
use crate::cpu::{CpuBackend, CpuStorage};
#[allow(unused_imports)]
use crate::spec::{
    conv::ConvGeometry, copy::Copy2d, elementwise::*, index::ScatterMode, matmul::MatmulGeometry, pool::*,
    random::Distribution, reduce::ReduceOp,
};
use crate::*;

impl UpsampleOps for CpuBackend {
    #[allow(unused_variables)]
    fn upsample_nearest1d(&self, x: &CpuStorage, l: &Layout, size: usize) -> Result<CpuStorage> {
        todo!()
    }
    #[allow(unused_variables)]
    fn upsample_nearest2d(&self, x: &CpuStorage, l: &Layout, size: [usize; 2]) -> Result<CpuStorage> {
        todo!()
    }
}
