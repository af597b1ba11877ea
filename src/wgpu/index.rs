//! TEMPORARY: via cpu until the WGSL kernels land.

use super::{WgpuBackend, WgpuStorage};
use crate::backend::*;
use crate::cpu::CpuBackend;
use crate::spec::index::ScatterMode;
use crate::{Layout, Result};

impl IndexOps for WgpuBackend {
    fn index_select(
        &self,
        x: &WgpuStorage,
        xl: &Layout,
        ids: &WgpuStorage,
        il: &Layout,
        dim: usize,
    ) -> Result<WgpuStorage> {
        self.upload(&CpuBackend.index_select(&self.download(x)?, xl, &self.download(ids)?, il, dim)?)
    }
    fn gather(&self, x: &WgpuStorage, xl: &Layout, ids: &WgpuStorage, il: &Layout, dim: usize) -> Result<WgpuStorage> {
        self.upload(&CpuBackend.gather(&self.download(x)?, xl, &self.download(ids)?, il, dim)?)
    }
    fn scatter(
        &self,
        d: &WgpuStorage,
        dl: &Layout,
        ids: &WgpuStorage,
        il: &Layout,
        s: &WgpuStorage,
        sl: &Layout,
        dim: usize,
        mode: ScatterMode,
    ) -> Result<WgpuStorage> {
        self.upload(&CpuBackend.scatter(
            &self.download(d)?,
            dl,
            &self.download(ids)?,
            il,
            &self.download(s)?,
            sl,
            dim,
            mode,
        )?)
    }
    fn index_add(
        &self,
        d: &WgpuStorage,
        dl: &Layout,
        ids: &WgpuStorage,
        il: &Layout,
        s: &WgpuStorage,
        sl: &Layout,
        dim: usize,
    ) -> Result<WgpuStorage> {
        self.upload(&CpuBackend.index_add(
            &self.download(d)?,
            dl,
            &self.download(ids)?,
            il,
            &self.download(s)?,
            sl,
            dim,
        )?)
    }
}
