//! The families whose WGSL kernels come with the second WGSL issue run on the cpu reference
//! for now: inputs are read back, computed by [`CpuBackend`], and the result uploaded. The
//! answers are the reference's own; only the speed is not the GPU's.

use super::{WgpuBackend, WgpuStorage};
use crate::backend::*;
use crate::cpu::CpuBackend;
use crate::spec::conv::ConvGeometry;
use crate::spec::matmul::MatmulGeometry;
use crate::spec::pool::{Pool2dParams, PoolOp};
use crate::{CpuStorage, Layout, Result};

/// Said by `info()` so that a user sees where these families run.
pub(crate) const FAMILIES: &str = "conv, pool, upsample, matmul, nn";

impl WgpuBackend {
    fn host(&self, s: &WgpuStorage) -> Result<CpuStorage> {
        self.download(s)
    }

    fn host_param(&self, p: Param<WgpuStorage>) -> Result<Option<(CpuStorage, Layout)>> {
        p.map(|(s, l)| Ok((self.host(s)?, l.clone()))).transpose()
    }
}

fn as_param(p: &Option<(CpuStorage, Layout)>) -> Param<'_, CpuStorage> {
    p.as_ref().map(|(s, l)| (s, l))
}

impl ConvOps for WgpuBackend {
    fn conv1d(
        &self,
        x: &WgpuStorage,
        xl: &Layout,
        k: &WgpuStorage,
        kl: &Layout,
        g: &ConvGeometry<1>,
    ) -> Result<WgpuStorage> {
        self.upload(&CpuBackend.conv1d(&self.host(x)?, xl, &self.host(k)?, kl, g)?)
    }
    fn conv2d(
        &self,
        x: &WgpuStorage,
        xl: &Layout,
        k: &WgpuStorage,
        kl: &Layout,
        g: &ConvGeometry<2>,
    ) -> Result<WgpuStorage> {
        self.upload(&CpuBackend.conv2d(&self.host(x)?, xl, &self.host(k)?, kl, g)?)
    }
    fn conv_transpose1d(
        &self,
        x: &WgpuStorage,
        xl: &Layout,
        k: &WgpuStorage,
        kl: &Layout,
        g: &ConvGeometry<1>,
    ) -> Result<WgpuStorage> {
        self.upload(&CpuBackend.conv_transpose1d(&self.host(x)?, xl, &self.host(k)?, kl, g)?)
    }
    fn conv_transpose2d(
        &self,
        x: &WgpuStorage,
        xl: &Layout,
        k: &WgpuStorage,
        kl: &Layout,
        g: &ConvGeometry<2>,
    ) -> Result<WgpuStorage> {
        self.upload(&CpuBackend.conv_transpose2d(&self.host(x)?, xl, &self.host(k)?, kl, g)?)
    }
}

impl PoolOps for WgpuBackend {
    fn pool2d(&self, x: &WgpuStorage, l: &Layout, op: PoolOp, p: &Pool2dParams) -> Result<WgpuStorage> {
        self.upload(&CpuBackend.pool2d(&self.host(x)?, l, op, p)?)
    }
}

impl UpsampleOps for WgpuBackend {
    fn upsample_nearest1d(&self, x: &WgpuStorage, l: &Layout, size: usize) -> Result<WgpuStorage> {
        self.upload(&CpuBackend.upsample_nearest1d(&self.host(x)?, l, size)?)
    }
    fn upsample_nearest2d(&self, x: &WgpuStorage, l: &Layout, size: [usize; 2]) -> Result<WgpuStorage> {
        self.upload(&CpuBackend.upsample_nearest2d(&self.host(x)?, l, size)?)
    }
}

impl MatmulOps for WgpuBackend {
    fn matmul(
        &self,
        a: &WgpuStorage,
        al: &Layout,
        b: &WgpuStorage,
        bl: &Layout,
        g: &MatmulGeometry,
    ) -> Result<WgpuStorage> {
        self.upload(&CpuBackend.matmul(&self.host(a)?, al, &self.host(b)?, bl, g)?)
    }
}

impl NnOps for WgpuBackend {
    fn softmax(&self, x: &WgpuStorage, l: &Layout, dim: usize, log: bool) -> Result<WgpuStorage> {
        self.upload(&CpuBackend.softmax(&self.host(x)?, l, dim, log)?)
    }
    fn layer_norm(
        &self,
        x: &WgpuStorage,
        l: &Layout,
        w: Param<WgpuStorage>,
        b: Param<WgpuStorage>,
        eps: f64,
    ) -> Result<WgpuStorage> {
        let (w, b) = (self.host_param(w)?, self.host_param(b)?);
        self.upload(&CpuBackend.layer_norm(&self.host(x)?, l, as_param(&w), as_param(&b), eps)?)
    }
    fn rms_norm(&self, x: &WgpuStorage, l: &Layout, w: Param<WgpuStorage>, eps: f64) -> Result<WgpuStorage> {
        let w = self.host_param(w)?;
        self.upload(&CpuBackend.rms_norm(&self.host(x)?, l, as_param(&w), eps)?)
    }
    fn batch_norm(
        &self,
        x: &WgpuStorage,
        l: &Layout,
        mean: (&WgpuStorage, &Layout),
        var: (&WgpuStorage, &Layout),
        w: Param<WgpuStorage>,
        b: Param<WgpuStorage>,
        eps: f64,
    ) -> Result<WgpuStorage> {
        let (m, v) = (self.host(mean.0)?, self.host(var.0)?);
        let (w, b) = (self.host_param(w)?, self.host_param(b)?);
        let out =
            CpuBackend.batch_norm(&self.host(x)?, l, (&m, mean.1), (&v, var.1), as_param(&w), as_param(&b), eps)?;
        self.upload(&out)
    }
}
