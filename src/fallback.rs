//! The families whose GPU kernels come with later issues (conv, pool, upsample, matmul, nn)
//! run on the cpu reference on every GPU backend for now: inputs are read back, computed by
//! [`CpuBackend`], and the result uploaded. The answers are the reference's own; only the speed
//! is not the GPU's. Written once here for every backend that opts in with [`ViaCpu`].

use crate::backend::*;
use crate::cpu::CpuBackend;
use crate::spec::conv::ConvGeometry;
use crate::spec::matmul::MatmulGeometry;
use crate::spec::pool::{Pool2dParams, PoolOp};
use crate::{CpuStorage, Layout, Result};

/// Said by `info()` so that a user sees where these families run.
pub(crate) const FAMILIES: &str = "conv, pool, upsample, matmul, nn";

/// A GPU backend whose conv, pool, upsample, matmul and nn families go through the cpu.
pub(crate) trait ViaCpu: Memory {}

fn host_param<B: ViaCpu>(b: &B, p: Param<B::Storage>) -> Result<Option<(CpuStorage, Layout)>> {
    p.map(|(s, l)| Ok((b.download(s)?, l.clone()))).transpose()
}

fn as_param(p: &Option<(CpuStorage, Layout)>) -> Param<'_, CpuStorage> {
    p.as_ref().map(|(s, l)| (s, l))
}

impl<B: ViaCpu> ConvOps for B {
    fn conv1d(
        &self,
        x: &B::Storage,
        xl: &Layout,
        k: &B::Storage,
        kl: &Layout,
        g: &ConvGeometry<1>,
    ) -> Result<B::Storage> {
        self.upload(&CpuBackend.conv1d(&self.download(x)?, xl, &self.download(k)?, kl, g)?)
    }
    fn conv2d(
        &self,
        x: &B::Storage,
        xl: &Layout,
        k: &B::Storage,
        kl: &Layout,
        g: &ConvGeometry<2>,
    ) -> Result<B::Storage> {
        self.upload(&CpuBackend.conv2d(&self.download(x)?, xl, &self.download(k)?, kl, g)?)
    }
    fn conv_transpose1d(
        &self,
        x: &B::Storage,
        xl: &Layout,
        k: &B::Storage,
        kl: &Layout,
        g: &ConvGeometry<1>,
    ) -> Result<B::Storage> {
        self.upload(&CpuBackend.conv_transpose1d(&self.download(x)?, xl, &self.download(k)?, kl, g)?)
    }
    fn conv_transpose2d(
        &self,
        x: &B::Storage,
        xl: &Layout,
        k: &B::Storage,
        kl: &Layout,
        g: &ConvGeometry<2>,
    ) -> Result<B::Storage> {
        self.upload(&CpuBackend.conv_transpose2d(&self.download(x)?, xl, &self.download(k)?, kl, g)?)
    }
}

impl<B: ViaCpu> PoolOps for B {
    fn pool2d(&self, x: &B::Storage, l: &Layout, op: PoolOp, p: &Pool2dParams) -> Result<B::Storage> {
        self.upload(&CpuBackend.pool2d(&self.download(x)?, l, op, p)?)
    }
}

impl<B: ViaCpu> UpsampleOps for B {
    fn upsample_nearest1d(&self, x: &B::Storage, l: &Layout, size: usize) -> Result<B::Storage> {
        self.upload(&CpuBackend.upsample_nearest1d(&self.download(x)?, l, size)?)
    }
    fn upsample_nearest2d(&self, x: &B::Storage, l: &Layout, size: [usize; 2]) -> Result<B::Storage> {
        self.upload(&CpuBackend.upsample_nearest2d(&self.download(x)?, l, size)?)
    }
}

impl<B: ViaCpu> MatmulOps for B {
    fn matmul(
        &self,
        a: &B::Storage,
        al: &Layout,
        b: &B::Storage,
        bl: &Layout,
        g: &MatmulGeometry,
    ) -> Result<B::Storage> {
        self.upload(&CpuBackend.matmul(&self.download(a)?, al, &self.download(b)?, bl, g)?)
    }
}

impl<B: ViaCpu> NnOps for B {
    fn softmax(&self, x: &B::Storage, l: &Layout, dim: usize, log: bool) -> Result<B::Storage> {
        self.upload(&CpuBackend.softmax(&self.download(x)?, l, dim, log)?)
    }
    fn layer_norm(
        &self,
        x: &B::Storage,
        l: &Layout,
        w: Param<B::Storage>,
        b: Param<B::Storage>,
        eps: f64,
    ) -> Result<B::Storage> {
        let (w, b) = (host_param(self, w)?, host_param(self, b)?);
        self.upload(&CpuBackend.layer_norm(&self.download(x)?, l, as_param(&w), as_param(&b), eps)?)
    }
    fn rms_norm(&self, x: &B::Storage, l: &Layout, w: Param<B::Storage>, eps: f64) -> Result<B::Storage> {
        let w = host_param(self, w)?;
        self.upload(&CpuBackend.rms_norm(&self.download(x)?, l, as_param(&w), eps)?)
    }
    fn batch_norm(
        &self,
        x: &B::Storage,
        l: &Layout,
        mean: (&B::Storage, &Layout),
        var: (&B::Storage, &Layout),
        w: Param<B::Storage>,
        b: Param<B::Storage>,
        eps: f64,
    ) -> Result<B::Storage> {
        let (m, v) = (self.download(mean.0)?, self.download(var.0)?);
        let (w, b) = (host_param(self, w)?, host_param(self, b)?);
        let out =
            CpuBackend.batch_norm(&self.download(x)?, l, (&m, mean.1), (&v, var.1), as_param(&w), as_param(&b), eps)?;
        self.upload(&out)
    }
}
