//! The contract every backend implements: memory, plus one trait per op family.
//!
//! Inputs arrive validated by the spec: dtypes allowed, shapes consistent, multi-input
//! layouts already broadcast to one shape. A backend only checks what lives in device data
//! (index ids). Outputs are new contiguous storages unless the method writes into `dst`.

use crate::spec::conv::ConvGeometry;
use crate::spec::copy::Copy2d;
use crate::spec::elementwise::{BinaryOp, CmpOp, UnaryOp};
use crate::spec::index::ScatterMode;
use crate::spec::matmul::MatmulGeometry;
use crate::spec::pool::{Pool2dParams, PoolOp};
use crate::spec::random::Distribution;
use crate::spec::reduce::ReduceOp;
use crate::{BackendKind, CpuStorage, DType, Layout, Result, Scalar};

/// A backend's buffer of elements of one dtype.
pub trait BackendStorage: Send + Sync + Sized {
    fn dtype(&self) -> DType;
    /// Length in elements.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An optional per-channel parameter (weight, bias).
pub type Param<'a, S> = Option<(&'a S, &'a Layout)>;

/// Memory and synchronisation.
pub trait Memory: Clone + Send + Sync + 'static {
    type Storage: BackendStorage;
    fn kind(&self) -> BackendKind;
    /// The device's name, features and limits worth printing, as `(key, value)` pairs.
    fn info(&self) -> Vec<(&'static str, String)>;
    /// Why this backend cannot run `op` in `dtype` (a dtype the spec allows for it), or `None`
    /// when it can: the one statement of what it truly cannot do, behind
    /// [`crate::Device::supports`]. Ops it names fail with `Error::UnsupportedDType`.
    fn unsupported(&self, op: &crate::spec::OpInfo, dtype: DType) -> Option<String>;
    /// The most elements an operand (a view included) or an output of one op may have here.
    fn max_elements(&self) -> usize {
        usize::MAX
    }
    /// A buffer of `len` elements; its contents are unspecified until written.
    fn alloc(&self, dtype: DType, len: usize) -> Result<Self::Storage>;
    fn upload(&self, data: &CpuStorage) -> Result<Self::Storage>;
    /// The whole buffer, after every op recorded on it has finished: starts the copy (see
    /// [`Readback`]).
    fn download(&self, s: &Self::Storage) -> Readback<CpuStorage>;
    /// Done when all recorded work is.
    fn synchronize(&self) -> Readback<()>;
    /// A zeroed flag for one op's kernels to record a failure found in device data in (a bad
    /// id); empty where ops report such failures at once (cpu). See `src/tensor/status.rs`.
    fn new_flag(&self) -> Result<Self::Storage>;
    /// What each flag recorded, once every op recorded before has run: `Ok` or the failure.
    fn read_flags(&self, flags: &[&Self::Storage]) -> Readback<Vec<Result<()>>>;
}

/// Host data on its way back from a device. [`Memory::download`], [`Memory::read_flags`] and
/// [`Memory::synchronize`] start the copy (submitting the work it waits for) and return at
/// once; [`Readback::wait`] delivers the data. The sync API blocks on it, the async API
/// awaits it: one readback path on every target.
pub struct Readback<T>(Pending<T>);

enum Pending<T> {
    Done(Result<T>),
    /// A wgpu staging buffer being mapped, and how to decode its bytes.
    Wgpu(crate::wgpu::Mapping, Box<dyn FnOnce(Vec<u8>) -> Result<T> + Send>),
}

impl<T> Readback<T> {
    /// Data already on the host (or the failure that stopped the copy).
    pub fn done(r: Result<T>) -> Readback<T> {
        Readback(Pending::Done(r))
    }

    pub(crate) fn mapping(m: crate::wgpu::Mapping, decode: impl FnOnce(Vec<u8>) -> Result<T> + Send + 'static) -> Self {
        Readback(Pending::Wgpu(m, Box::new(decode)))
    }

    /// The data, once the device has delivered it. Natively wgpu delivers it inside a wait on
    /// the device (this call blocks there); in a browser the wait is the event loop's.
    pub async fn wait(self) -> Result<T> {
        match self.0 {
            Pending::Done(r) => r,
            Pending::Wgpu(m, decode) => decode(m.bytes().await?),
        }
    }
}

pub trait ElementwiseOps: Memory {
    fn unary(&self, x: &Self::Storage, l: &Layout, op: UnaryOp) -> Result<Self::Storage>;
    fn affine(&self, x: &Self::Storage, l: &Layout, mul: f64, add: f64) -> Result<Self::Storage>;
    fn powf(&self, x: &Self::Storage, l: &Layout, e: f64) -> Result<Self::Storage>;
    fn elu(&self, x: &Self::Storage, l: &Layout, alpha: f64) -> Result<Self::Storage>;
    /// Bounds already cast to the dtype of `x`, `min <= max`.
    fn clamp(&self, x: &Self::Storage, l: &Layout, min: Scalar, max: Scalar) -> Result<Self::Storage>;
    /// `ll` and `rl` have the same shape (broadcast already applied through strides).
    fn binary(
        &self,
        lhs: &Self::Storage,
        ll: &Layout,
        rhs: &Self::Storage,
        rl: &Layout,
        op: BinaryOp,
    ) -> Result<Self::Storage>;
    fn cmp(
        &self,
        lhs: &Self::Storage,
        ll: &Layout,
        rhs: &Self::Storage,
        rl: &Layout,
        op: CmpOp,
    ) -> Result<Self::Storage>;
    #[allow(clippy::too_many_arguments)]
    fn where_cond(
        &self,
        cond: &Self::Storage,
        cl: &Layout,
        on_true: &Self::Storage,
        tl: &Layout,
        on_false: &Self::Storage,
        fl: &Layout,
    ) -> Result<Self::Storage>;
    fn cast(&self, x: &Self::Storage, l: &Layout, to: DType) -> Result<Self::Storage>;
}

pub trait ReduceOps: Memory {
    /// Output: contiguous, with the shape of `l` and every dim of `dims` (sorted, distinct)
    /// set to 1.
    fn reduce(&self, x: &Self::Storage, l: &Layout, op: ReduceOp, dims: &[usize]) -> Result<Self::Storage>;
}

/// A bad id (outside `0..size` of the indexed dim) is an `IndexOutOfRange`: returned at once,
/// or recorded in `flag` by the kernels (see [`Memory::new_flag`]); never clamped or wrapped.
pub trait IndexOps: Memory {
    fn index_select(
        &self,
        x: &Self::Storage,
        xl: &Layout,
        ids: &Self::Storage,
        il: &Layout,
        dim: usize,
        flag: &Self::Storage,
    ) -> Result<Self::Storage>;
    fn gather(
        &self,
        x: &Self::Storage,
        xl: &Layout,
        ids: &Self::Storage,
        il: &Layout,
        dim: usize,
        flag: &Self::Storage,
    ) -> Result<Self::Storage>;
    /// A copy of `dst` with `src` scattered into it.
    #[allow(clippy::too_many_arguments)]
    fn scatter(
        &self,
        dst: &Self::Storage,
        dl: &Layout,
        ids: &Self::Storage,
        il: &Layout,
        src: &Self::Storage,
        sl: &Layout,
        dim: usize,
        mode: ScatterMode,
        flag: &Self::Storage,
    ) -> Result<Self::Storage>;
    /// A copy of `dst` with the slices of `src` added at `ids` along `dim`.
    #[allow(clippy::too_many_arguments)]
    fn index_add(
        &self,
        dst: &Self::Storage,
        dl: &Layout,
        ids: &Self::Storage,
        il: &Layout,
        src: &Self::Storage,
        sl: &Layout,
        dim: usize,
        flag: &Self::Storage,
    ) -> Result<Self::Storage>;
}

pub trait ConvOps: Memory {
    fn conv1d(
        &self,
        x: &Self::Storage,
        xl: &Layout,
        k: &Self::Storage,
        kl: &Layout,
        g: &ConvGeometry<1>,
    ) -> Result<Self::Storage>;
    fn conv2d(
        &self,
        x: &Self::Storage,
        xl: &Layout,
        k: &Self::Storage,
        kl: &Layout,
        g: &ConvGeometry<2>,
    ) -> Result<Self::Storage>;
    fn conv_transpose1d(
        &self,
        x: &Self::Storage,
        xl: &Layout,
        k: &Self::Storage,
        kl: &Layout,
        g: &ConvGeometry<1>,
    ) -> Result<Self::Storage>;
    fn conv_transpose2d(
        &self,
        x: &Self::Storage,
        xl: &Layout,
        k: &Self::Storage,
        kl: &Layout,
        g: &ConvGeometry<2>,
    ) -> Result<Self::Storage>;
}

pub trait PoolOps: Memory {
    fn pool2d(&self, x: &Self::Storage, l: &Layout, op: PoolOp, p: &Pool2dParams) -> Result<Self::Storage>;
}

pub trait UpsampleOps: Memory {
    fn upsample_nearest1d(&self, x: &Self::Storage, l: &Layout, size: usize) -> Result<Self::Storage>;
    fn upsample_nearest2d(&self, x: &Self::Storage, l: &Layout, size: [usize; 2]) -> Result<Self::Storage>;
}

pub trait CopyOps: Memory {
    /// Writes the elements of `(src, sl)` in row-major order to `dst` from `dst_offset` on.
    fn copy_strided(&self, src: &Self::Storage, sl: &Layout, dst: &mut Self::Storage, dst_offset: usize) -> Result<()>;
    /// `src` and `dst` are distinct buffers.
    fn copy2d(&self, src: &Self::Storage, dst: &mut Self::Storage, p: &Copy2d) -> Result<()>;
    /// Writes `value` (of the storage's dtype) to every element of `l`.
    fn fill(&self, dst: &mut Self::Storage, l: &Layout, value: Scalar) -> Result<()>;
    /// `start + i * step` for `i < len`; both scalars of `dtype`.
    fn arange(&self, dtype: DType, start: Scalar, step: Scalar, len: usize) -> Result<Self::Storage>;
}

pub trait MatmulOps: Memory {
    /// `ll` has shape `g.lhs_shape()` and `rl` `g.rhs_shape()` (batch dims broadcast already).
    fn matmul(
        &self,
        lhs: &Self::Storage,
        ll: &Layout,
        rhs: &Self::Storage,
        rl: &Layout,
        g: &MatmulGeometry,
    ) -> Result<Self::Storage>;
}

pub trait NnOps: Memory {
    /// softmax along `dim`; its log when `log`.
    fn softmax(&self, x: &Self::Storage, l: &Layout, dim: usize, log: bool) -> Result<Self::Storage>;
    fn layer_norm(
        &self,
        x: &Self::Storage,
        l: &Layout,
        w: Param<Self::Storage>,
        b: Param<Self::Storage>,
        eps: f64,
    ) -> Result<Self::Storage>;
    fn rms_norm(&self, x: &Self::Storage, l: &Layout, w: Param<Self::Storage>, eps: f64) -> Result<Self::Storage>;
    #[allow(clippy::too_many_arguments)]
    fn batch_norm(
        &self,
        x: &Self::Storage,
        l: &Layout,
        mean: (&Self::Storage, &Layout),
        var: (&Self::Storage, &Layout),
        w: Param<Self::Storage>,
        b: Param<Self::Storage>,
        eps: f64,
    ) -> Result<Self::Storage>;
}

pub trait RandomOps: Memory {
    /// `len` values of the stream `(seed, offset)`, as [`crate::spec::random`] defines it.
    fn random(&self, dtype: DType, len: usize, dist: Distribution, seed: u64, offset: u64) -> Result<Self::Storage>;
}

pub trait SortOps: Memory {
    /// u32 indices that sort each row along the last dim, stable.
    fn argsort(&self, x: &Self::Storage, l: &Layout, descending: bool) -> Result<Self::Storage>;
}

/// A complete backend: memory and every op family.
pub trait Backend:
    Memory
    + ElementwiseOps
    + ReduceOps
    + IndexOps
    + ConvOps
    + PoolOps
    + UpsampleOps
    + CopyOps
    + MatmulOps
    + NnOps
    + RandomOps
    + SortOps
{
}

impl<B> Backend for B where
    B: Memory
        + ElementwiseOps
        + ReduceOps
        + IndexOps
        + ConvOps
        + PoolOps
        + UpsampleOps
        + CopyOps
        + MatmulOps
        + NnOps
        + RandomOps
        + SortOps
{
}
