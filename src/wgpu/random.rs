//! TEMPORARY: via cpu until the WGSL kernels land.

use super::{WgpuBackend, WgpuStorage};
use crate::DType;
use crate::Result;
use crate::backend::*;
use crate::cpu::CpuBackend;
use crate::spec::random::Distribution;

impl RandomOps for WgpuBackend {
    fn random(&self, dtype: DType, len: usize, dist: Distribution, seed: u64, offset: u64) -> Result<WgpuStorage> {
        self.upload(&CpuBackend.random(dtype, len, dist, seed, offset)?)
    }
}
