//! Placeholder

use crate::backend::*;
use crate::cpu::{CpuBackend, CpuStorage};
#[allow(unused_imports)]
use crate::spec::{
    conv::ConvGeometry, copy::Copy2d, elementwise::*, index::ScatterMode, matmul::MatmulGeometry, pool::*,
    random::Distribution, reduce::ReduceOp,
};
use crate::*;

impl ConvOps for CpuBackend {
    #[allow(unused_variables)]
    fn conv1d(
        &self,
        x: &CpuStorage,
        xl: &Layout,
        k: &CpuStorage,
        kl: &Layout,
        g: &ConvGeometry<1>,
    ) -> Result<CpuStorage> {
        todo!()
    }
    #[allow(unused_variables)]
    fn conv2d(
        &self,
        x: &CpuStorage,
        xl: &Layout,
        k: &CpuStorage,
        kl: &Layout,
        g: &ConvGeometry<2>,
    ) -> Result<CpuStorage> {
        todo!()
    }
    #[allow(unused_variables)]
    fn conv_transpose1d(
        &self,
        x: &CpuStorage,
        xl: &Layout,
        k: &CpuStorage,
        kl: &Layout,
        g: &ConvGeometry<1>,
    ) -> Result<CpuStorage> {
        todo!()
    }
    #[allow(unused_variables)]
    fn conv_transpose2d(
        &self,
        x: &CpuStorage,
        xl: &Layout,
        k: &CpuStorage,
        kl: &Layout,
        g: &ConvGeometry<2>,
    ) -> Result<CpuStorage> {
        todo!()
    }
}
