//! TEMPORARY: via cpu until the WGSL kernels land.

use super::{WgpuBackend, WgpuStorage};
use crate::backend::*;
use crate::cpu::CpuBackend;
use crate::spec::reduce::ReduceOp;
use crate::{Layout, Result};

impl ReduceOps for WgpuBackend {
    fn reduce(&self, x: &WgpuStorage, l: &Layout, op: ReduceOp, dims: &[usize]) -> Result<WgpuStorage> {
        self.upload(&CpuBackend.reduce(&self.download(x)?, l, op, dims)?)
    }
}
