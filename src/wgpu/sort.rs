//! TEMPORARY: via cpu until the WGSL kernels land.

use super::{WgpuBackend, WgpuStorage};
use crate::backend::*;
use crate::cpu::CpuBackend;
use crate::{Layout, Result};

impl SortOps for WgpuBackend {
    fn argsort(&self, x: &WgpuStorage, l: &Layout, descending: bool) -> Result<WgpuStorage> {
        self.upload(&CpuBackend.argsort(&self.download(x)?, l, descending)?)
    }
}
