//! Placeholder

use crate::backend::*;
use crate::cpu::{CpuBackend, CpuStorage};
#[allow(unused_imports)]
use crate::spec::{
    conv::ConvGeometry, copy::Copy2d, elementwise::*, index::ScatterMode, matmul::MatmulGeometry, pool::*,
    random::Distribution, reduce::ReduceOp,
};
use crate::*;

impl MatmulOps for CpuBackend {
    #[allow(unused_variables)]
    fn matmul(
        &self,
        lhs: &CpuStorage,
        ll: &Layout,
        rhs: &CpuStorage,
        rl: &Layout,
        g: &MatmulGeometry,
    ) -> Result<CpuStorage> {
        todo!()
    }
}
