//! Placeholder

use crate::backend::*;
use crate::cpu::{CpuBackend, CpuStorage};
#[allow(unused_imports)]
use crate::spec::{
    conv::ConvGeometry, copy::Copy2d, elementwise::*, index::ScatterMode, matmul::MatmulGeometry, pool::*,
    random::Distribution, reduce::ReduceOp,
};
use crate::*;

impl IndexOps for CpuBackend {
    #[allow(unused_variables)]
    fn index_select(
        &self,
        x: &CpuStorage,
        xl: &Layout,
        ids: &CpuStorage,
        il: &Layout,
        dim: usize,
    ) -> Result<CpuStorage> {
        todo!()
    }
    #[allow(unused_variables)]
    fn gather(&self, x: &CpuStorage, xl: &Layout, ids: &CpuStorage, il: &Layout, dim: usize) -> Result<CpuStorage> {
        todo!()
    }
    #[allow(unused_variables)]
    fn scatter(
        &self,
        dst: &CpuStorage,
        dl: &Layout,
        ids: &CpuStorage,
        il: &Layout,
        src: &CpuStorage,
        sl: &Layout,
        dim: usize,
        mode: ScatterMode,
    ) -> Result<CpuStorage> {
        todo!()
    }
    #[allow(unused_variables)]
    fn index_add(
        &self,
        dst: &CpuStorage,
        dl: &Layout,
        ids: &CpuStorage,
        il: &Layout,
        src: &CpuStorage,
        sl: &Layout,
        dim: usize,
    ) -> Result<CpuStorage> {
        todo!()
    }
}
