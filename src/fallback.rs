//! The families whose GPU kernels come with later issues (conv, pool, upsample, matmul, nn)
//! run on the cpu reference on every GPU backend for now: inputs are read back, computed by
//! [`CpuBackend`], and the result uploaded. The answers are the reference's own; only the speed
//! is not the GPU's. Written once here; a backend opts in per family with [`via_cpu!`], so a
//! family leaves the fallback on one backend by dropping its name there.

use crate::backend::*;
use crate::cpu::CpuBackend;
use crate::spec::conv::ConvGeometry;
use crate::spec::matmul::MatmulGeometry;
use crate::spec::pool::{Pool2dParams, PoolOp};
use crate::{CpuStorage, Layout, Result};

/// A backend whose conv family goes through the cpu.
pub(crate) trait ConvViaCpu: Memory {}
/// A backend whose pool family goes through the cpu.
pub(crate) trait PoolViaCpu: Memory {}
/// A backend whose upsample family goes through the cpu.
pub(crate) trait UpsampleViaCpu: Memory {}
/// A backend whose matmul family goes through the cpu.
pub(crate) trait MatmulViaCpu: Memory {}
/// A backend whose nn family goes through the cpu.
pub(crate) trait NnViaCpu: Memory {}

/// `via_cpu!(Backend<generics>: conv, pool, ...)` opts a backend's families into the fallback
/// and defines `ON_CPU`, the names `info()` shows, so a user sees where these families run.
macro_rules! via_cpu {
    ($g:tt $backend:ty: $($family:ident),* $(,)?) => {
        $(crate::fallback::via_cpu!(@one $g $backend, $family);)*
        /// The families this backend runs on the cpu reference.
        pub(crate) const ON_CPU: &[&str] = &[$(stringify!($family)),*];
    };
    (@one [$($g:tt)*] $backend:ty, conv) => { impl<$($g)*> crate::fallback::ConvViaCpu for $backend {} };
    (@one [$($g:tt)*] $backend:ty, pool) => { impl<$($g)*> crate::fallback::PoolViaCpu for $backend {} };
    (@one [$($g:tt)*] $backend:ty, upsample) => { impl<$($g)*> crate::fallback::UpsampleViaCpu for $backend {} };
    (@one [$($g:tt)*] $backend:ty, matmul) => { impl<$($g)*> crate::fallback::MatmulViaCpu for $backend {} };
    (@one [$($g:tt)*] $backend:ty, nn) => { impl<$($g)*> crate::fallback::NnViaCpu for $backend {} };
}
pub(crate) use via_cpu;

/// What `info()` prints for `ON_CPU`.
pub(crate) fn describe(on_cpu: &[&str]) -> String {
    if on_cpu.is_empty() { "none".into() } else { on_cpu.join(", ") }
}

fn host_param<B: Memory>(b: &B, p: Param<B::Storage>) -> Result<Option<(CpuStorage, Layout)>> {
    p.map(|(s, l)| Ok((b.download(s)?, l.clone()))).transpose()
}

fn as_param(p: &Option<(CpuStorage, Layout)>) -> Param<'_, CpuStorage> {
    p.as_ref().map(|(s, l)| (s, l))
}

impl<B: ConvViaCpu> ConvOps for B {
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

impl<B: PoolViaCpu> PoolOps for B {
    fn pool2d(&self, x: &B::Storage, l: &Layout, op: PoolOp, p: &Pool2dParams) -> Result<B::Storage> {
        self.upload(&CpuBackend.pool2d(&self.download(x)?, l, op, p)?)
    }
}

impl<B: UpsampleViaCpu> UpsampleOps for B {
    fn upsample_nearest1d(&self, x: &B::Storage, l: &Layout, size: usize) -> Result<B::Storage> {
        self.upload(&CpuBackend.upsample_nearest1d(&self.download(x)?, l, size)?)
    }
    fn upsample_nearest2d(&self, x: &B::Storage, l: &Layout, size: [usize; 2]) -> Result<B::Storage> {
        self.upload(&CpuBackend.upsample_nearest2d(&self.download(x)?, l, size)?)
    }
}

impl<B: MatmulViaCpu> MatmulOps for B {
    fn matmul(
        &self,
        a: &B::Storage,
        al: &Layout,
        b: &B::Storage,
        bl: &Layout,
        g: &MatmulGeometry,
    ) -> Result<B::Storage> {
        matmul(self, a, al, b, bl, g)
    }
}

/// Matmul through the cpu, for a backend that decides per call (the native one, when its
/// runtime has no BLAS).
pub(crate) fn matmul<B: Memory>(
    dev: &B,
    a: &B::Storage,
    al: &Layout,
    b: &B::Storage,
    bl: &Layout,
    g: &MatmulGeometry,
) -> Result<B::Storage> {
    dev.upload(&CpuBackend.matmul(&dev.download(a)?, al, &dev.download(b)?, bl, g)?)
}

impl<B: NnViaCpu> NnOps for B {
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
