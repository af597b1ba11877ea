//! The families whose HIP kernels come with later issues run on the cpu reference for now, as
//! on the wgpu backend: inputs are read back, computed by [`CpuBackend`], and the result
//! uploaded. The answers (index errors included) are the reference's own; only the speed is not
//! the GPU's.

use super::{NativeBackend, NativeStorage, Runtime};
use crate::backend::*;
use crate::cpu::CpuBackend;
use crate::spec::conv::ConvGeometry;
use crate::spec::matmul::MatmulGeometry;
use crate::spec::pool::{Pool2dParams, PoolOp};
use crate::{CpuStorage, Layout, Result};

/// Said by `info()` so that a user sees where these families run.
pub(crate) const FAMILIES: &str = "conv, pool, upsample, matmul, nn";

type S<R> = NativeStorage<R>;

impl<R: Runtime> NativeBackend<R> {
    fn host(&self, s: &S<R>) -> Result<CpuStorage> {
        self.download(s)
    }

    fn host_param(&self, p: Param<S<R>>) -> Result<Option<(CpuStorage, Layout)>> {
        p.map(|(s, l)| Ok((self.host(s)?, l.clone()))).transpose()
    }
}

fn as_param(p: &Option<(CpuStorage, Layout)>) -> Param<'_, CpuStorage> {
    p.as_ref().map(|(s, l)| (s, l))
}

impl<R: Runtime> ConvOps for NativeBackend<R> {
    fn conv1d(&self, x: &S<R>, xl: &Layout, k: &S<R>, kl: &Layout, g: &ConvGeometry<1>) -> Result<S<R>> {
        self.upload(&CpuBackend.conv1d(&self.host(x)?, xl, &self.host(k)?, kl, g)?)
    }
    fn conv2d(&self, x: &S<R>, xl: &Layout, k: &S<R>, kl: &Layout, g: &ConvGeometry<2>) -> Result<S<R>> {
        self.upload(&CpuBackend.conv2d(&self.host(x)?, xl, &self.host(k)?, kl, g)?)
    }
    fn conv_transpose1d(&self, x: &S<R>, xl: &Layout, k: &S<R>, kl: &Layout, g: &ConvGeometry<1>) -> Result<S<R>> {
        self.upload(&CpuBackend.conv_transpose1d(&self.host(x)?, xl, &self.host(k)?, kl, g)?)
    }
    fn conv_transpose2d(&self, x: &S<R>, xl: &Layout, k: &S<R>, kl: &Layout, g: &ConvGeometry<2>) -> Result<S<R>> {
        self.upload(&CpuBackend.conv_transpose2d(&self.host(x)?, xl, &self.host(k)?, kl, g)?)
    }
}

impl<R: Runtime> PoolOps for NativeBackend<R> {
    fn pool2d(&self, x: &S<R>, l: &Layout, op: PoolOp, p: &Pool2dParams) -> Result<S<R>> {
        self.upload(&CpuBackend.pool2d(&self.host(x)?, l, op, p)?)
    }
}

impl<R: Runtime> UpsampleOps for NativeBackend<R> {
    fn upsample_nearest1d(&self, x: &S<R>, l: &Layout, size: usize) -> Result<S<R>> {
        self.upload(&CpuBackend.upsample_nearest1d(&self.host(x)?, l, size)?)
    }
    fn upsample_nearest2d(&self, x: &S<R>, l: &Layout, size: [usize; 2]) -> Result<S<R>> {
        self.upload(&CpuBackend.upsample_nearest2d(&self.host(x)?, l, size)?)
    }
}

impl<R: Runtime> MatmulOps for NativeBackend<R> {
    fn matmul(&self, a: &S<R>, al: &Layout, b: &S<R>, bl: &Layout, g: &MatmulGeometry) -> Result<S<R>> {
        self.upload(&CpuBackend.matmul(&self.host(a)?, al, &self.host(b)?, bl, g)?)
    }
}

impl<R: Runtime> NnOps for NativeBackend<R> {
    fn softmax(&self, x: &S<R>, l: &Layout, dim: usize, log: bool) -> Result<S<R>> {
        self.upload(&CpuBackend.softmax(&self.host(x)?, l, dim, log)?)
    }
    fn layer_norm(&self, x: &S<R>, l: &Layout, w: Param<S<R>>, b: Param<S<R>>, eps: f64) -> Result<S<R>> {
        let (w, b) = (self.host_param(w)?, self.host_param(b)?);
        self.upload(&CpuBackend.layer_norm(&self.host(x)?, l, as_param(&w), as_param(&b), eps)?)
    }
    fn rms_norm(&self, x: &S<R>, l: &Layout, w: Param<S<R>>, eps: f64) -> Result<S<R>> {
        let w = self.host_param(w)?;
        self.upload(&CpuBackend.rms_norm(&self.host(x)?, l, as_param(&w), eps)?)
    }
    fn batch_norm(
        &self,
        x: &S<R>,
        l: &Layout,
        mean: (&S<R>, &Layout),
        var: (&S<R>, &Layout),
        w: Param<S<R>>,
        b: Param<S<R>>,
        eps: f64,
    ) -> Result<S<R>> {
        let (m, v) = (self.host(mean.0)?, self.host(var.0)?);
        let (w, b) = (self.host_param(w)?, self.host_param(b)?);
        let out =
            CpuBackend.batch_norm(&self.host(x)?, l, (&m, mean.1), (&v, var.1), as_param(&w), as_param(&b), eps)?;
        self.upload(&out)
    }
}
