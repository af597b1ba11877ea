//! Placeholder

use crate::backend::*;
use crate::cpu::{CpuBackend, CpuStorage};
#[allow(unused_imports)]
use crate::spec::{
    conv::ConvGeometry, copy::Copy2d, elementwise::*, index::ScatterMode, matmul::MatmulGeometry, pool::*,
    random::Distribution, reduce::ReduceOp,
};
use crate::*;

impl SortOps for CpuBackend {
    #[allow(unused_variables)]
    fn argsort(&self, x: &CpuStorage, l: &Layout, descending: bool) -> Result<CpuStorage> {
        todo!()
    }
}
