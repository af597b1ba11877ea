//! Placeholder

use crate::backend::*;
use crate::cpu::{CpuBackend, CpuStorage};
#[allow(unused_imports)]
use crate::spec::{
    conv::ConvGeometry, copy::Copy2d, elementwise::*, index::ScatterMode, matmul::MatmulGeometry, pool::*,
    random::Distribution, reduce::ReduceOp,
};
use crate::*;

impl NnOps for CpuBackend {
    #[allow(unused_variables)]
    fn softmax(&self, x: &CpuStorage, l: &Layout, dim: usize, log: bool) -> Result<CpuStorage> {
        todo!()
    }
    #[allow(unused_variables)]
    fn layer_norm(
        &self,
        x: &CpuStorage,
        l: &Layout,
        w: Param<CpuStorage>,
        b: Param<CpuStorage>,
        eps: f64,
    ) -> Result<CpuStorage> {
        todo!()
    }
    #[allow(unused_variables)]
    fn rms_norm(&self, x: &CpuStorage, l: &Layout, w: Param<CpuStorage>, eps: f64) -> Result<CpuStorage> {
        todo!()
    }
    #[allow(unused_variables)]
    fn batch_norm(
        &self,
        x: &CpuStorage,
        l: &Layout,
        mean: (&CpuStorage, &Layout),
        var: (&CpuStorage, &Layout),
        w: Param<CpuStorage>,
        b: Param<CpuStorage>,
        eps: f64,
    ) -> Result<CpuStorage> {
        todo!()
    }
}
