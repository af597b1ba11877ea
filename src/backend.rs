//! The contract every backend implements: memory, plus one trait per op family.
//!
//! Inputs arrive validated by the spec: dtypes allowed, shapes consistent, multi-input
//! layouts already broadcast to one shape. A backend only checks what lives in device data
//! (index ids). Outputs are new contiguous storages unless the method writes into `dst`.

use crate::expr::program::{Op, Program, Value};
use crate::spec::Family;
use crate::spec::attention::{AttentionOp, Sdpa};
use crate::spec::conv::{Conv2, ConvOp};
use crate::spec::copy::Copy2d;
use crate::spec::elementwise::{BinaryOp, CmpOp, ScalarOp, UnaryOp};
use crate::spec::index::ScatterMode;
use crate::spec::matmul::MatmulGeometry;
use crate::spec::nn::NnOp;
use crate::spec::pool::{Pool2dParams, PoolOp};
use crate::spec::random::Distribution;
use crate::spec::reduce::ReduceOp;
use crate::{CpuStorage, DType, Error, Layout, Result, Scalar};
use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// The kinds of backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BackendKind {
    /// The cpu reference backend (always there).
    Cpu,
    /// WGSL compute shaders on wgpu (Vulkan, Metal, DX12, GL).
    Wgpu,
    /// The native backend on AMD GPUs (HIP, rocBLAS, MIOpen; feature `rocm`).
    Rocm,
    /// The native backend on NVIDIA GPUs (NVRTC, cuBLAS, cuDNN; feature `cuda`).
    Cuda,
}

impl BackendKind {
    /// In the order [`Device::auto`](crate::Device::auto) prefers them.
    pub const PREFERENCE: &'static [BackendKind] =
        &[BackendKind::Rocm, BackendKind::Cuda, BackendKind::Wgpu, BackendKind::Cpu];

    /// `cpu`, `wgpu`, `rocm` or `cuda`.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Wgpu => "wgpu",
            BackendKind::Rocm => "rocm",
            BackendKind::Cuda => "cuda",
        }
    }

    /// Parses a name as `RWO_BACKEND` and `RWO_REQUIRE` spell it.
    pub fn parse(name: &str) -> Result<BackendKind> {
        Self::PREFERENCE.iter().copied().find(|k| k.name() == name.trim()).ok_or_else(|| Error::BackendUnavailable {
            kind: name.to_string(),
            reason: "unknown backend name; expected one of cpu, wgpu, rocm, cuda".into(),
        })
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How [`crate::Device::auto`] opens a backend: as the environment asks (`RWO_ADAPTER`,
/// `RWO_ROCM_DEVICE`, ...), or why it cannot run here.
pub(crate) trait Open: Memory + Sized {
    async fn open_default() -> std::result::Result<Self, String>;
}

/// A backend's buffer of elements of one dtype.
pub trait BackendStorage: Send + Sync + Sized {
    /// The dtype of the elements.
    fn dtype(&self) -> DType;
    /// Length in elements.
    fn len(&self) -> usize;
    /// Whether it holds no element.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An optional per-channel parameter (weight, bias).
pub type Param<'a, S> = Option<(&'a S, &'a Layout)>;

/// Memory and synchronisation.
pub trait Memory: Clone + Send + Sync + 'static {
    /// The backend's buffer type.
    type Storage: BackendStorage;
    /// Which backend this is.
    fn kind(&self) -> BackendKind;
    /// A one-line label: the backend and its device.
    fn describe(&self) -> String;
    /// Whether `other` is this same device: tensors of both may meet in one op.
    fn same(&self, other: &Self) -> bool;
    /// Whether ops of `family` compute on the host here (the cpu, or a family a native backend
    /// runs on the cpu reference where its vendor library is absent).
    fn on_host(&self, _family: Family) -> bool {
        false
    }
    /// Kernels this backend has launched so far (wgpu dispatches; native launches and vendor
    /// library calls); 0 on the cpu.
    fn launches(&self) -> u64 {
        0
    }
    /// Whether this backend runs elementwise programs over these dtypes as one kernel
    /// ([`ElementwiseOps::fused`]), so that results are worth deferring (not the cpu).
    fn fuses(&self, _dtypes: &[DType]) -> bool {
        false
    }
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
    /// The most bytes one buffer may hold here (a device's memory, or its largest buffer).
    fn max_bytes(&self) -> u64 {
        u64::MAX
    }
    /// Whether a tensor past [`Memory::max_bytes`] is stored in parts here (several buffers, as
    /// on wgpu, where one binding is smaller than the adapter's memory); elsewhere one buffer
    /// may be as large as the device's memory, and what is larger cannot be held at all.
    fn holds_parts(&self) -> bool {
        false
    }
    /// A buffer of `len` elements; its contents are unspecified until written.
    fn alloc(&self, dtype: DType, len: usize) -> Result<Self::Storage>;
    /// A new buffer holding a copy of `data`.
    fn upload(&self, data: &CpuStorage) -> Result<Self::Storage>;
    /// The whole buffer, after every op recorded on it has finished: starts the copy (see
    /// [`Readback`]).
    fn download(&self, s: &Self::Storage) -> Readback<CpuStorage>;
    /// Done when all recorded work is.
    fn synchronize(&self) -> Readback<()>;
    /// Starts recording this device's work into a graph instead of running it (see
    /// [`crate::Device::capture`]); the cpu records none (its plans run their closure again).
    fn begin_capture(&self) -> Result<()> {
        Err(Error::Capture { msg: format!("the {} backend records no graphs", self.kind()) })
    }
    /// The work recorded since `begin_capture`, ready to run again; it keeps every block that
    /// work may touch out of reuse while it lives.
    fn end_capture(&self) -> Result<crate::backend::Graph> {
        Err(Error::Capture { msg: format!("the {} backend records no graphs", self.kind()) })
    }
    /// Abandons a capture under way (its closure failed): nothing recorded runs.
    fn abort_capture(&self) {}
    /// Queues graph `g` of `end_capture` after the work recorded so far.
    fn replay(&self, _g: &crate::backend::Graph) -> Result<()> {
        Err(Error::Capture { msg: format!("the {} backend records no graphs", self.kind()) })
    }
    /// A zeroed flag for one op's kernels to record a failure found in device data in (a bad
    /// id); empty where ops report such failures at once (cpu). See `src/tensor/status.rs`.
    fn new_flag(&self) -> Result<Self::Storage>;
    /// What each flag recorded, once every op recorded before has run: `Ok` or the failure.
    fn read_flags(&self, flags: &[&Self::Storage]) -> Readback<Vec<Result<()>>>;
    /// A new flag holding what `f` will hold once the work recorded so far has run (a plan's
    /// outputs keep their run's flags while the next run rewrites the plan's own).
    fn copy_flag(&self, f: &Self::Storage) -> Result<Self::Storage>;
}

/// A backend's recorded work (a CUDA or HIP graph, wgpu's kept dispatches) behind a plan
/// ([`crate::Device::capture`]); dropping it lets the blocks it pinned be reused.
pub struct Graph(Box<dyn std::any::Any + Send + Sync>);

impl Graph {
    pub(crate) fn new(g: impl std::any::Any + Send + Sync) -> Graph {
        Graph(Box::new(g))
    }

    /// The backend's own graph type.
    pub(crate) fn get<T: 'static>(&self) -> Result<&T> {
        self.0.downcast_ref().ok_or_else(|| Error::Capture { msg: "a plan of another backend".into() })
    }
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Graph")
    }
}

/// Host data on its way back from a device. [`Memory::download`], [`Memory::read_flags`] and
/// [`Memory::synchronize`] start the copy (submitting the work it waits for) and return at
/// once; [`Readback::wait`] delivers the data. The sync API blocks on it, the async API
/// awaits it: one readback path on every target.
pub struct Readback<T>(Pending<T>);

enum Pending<T> {
    Done(Result<T>),
    /// A copy the device delivers later (a wgpu staging buffer being mapped).
    Later(Pin<Box<dyn Future<Output = Result<T>> + Send>>),
}

impl<T> Readback<T> {
    /// Data already on the host (or the failure that stopped the copy).
    pub fn done(r: Result<T>) -> Readback<T> {
        Readback(Pending::Done(r))
    }

    /// Data the device delivers when `f` completes (natively, a future that may block inside
    /// its first poll: wgpu delivers mapped buffers inside a wait on the device).
    pub(crate) fn later(f: impl Future<Output = Result<T>> + Send + 'static) -> Self {
        Readback(Pending::Later(Box::pin(f)))
    }

    /// The data, once the device has delivered it. Natively wgpu delivers it inside a wait on
    /// the device (this call blocks there); in a browser the wait is the event loop's.
    pub async fn wait(self) -> Result<T> {
        match self.0 {
            Pending::Done(r) => r,
            Pending::Later(f) => f.await,
        }
    }
}

/// Elementwise maps, binary ops, comparisons, `where_cond` and casts.
pub trait ElementwiseOps: Memory {
    /// `op` on every element.
    fn unary(&self, x: &Self::Storage, l: &Layout, op: UnaryOp) -> Result<Self::Storage>;
    /// `op` with its parameters as [`crate::spec::elementwise::scalar_map`] puts them (f64 for
    /// the float maps, clamp's bounds in the dtype of `x`).
    fn scalar_map(&self, x: &Self::Storage, l: &Layout, op: ScalarOp, params: &[Scalar]) -> Result<Self::Storage>;
    /// `ll` and `rl` have the same shape (broadcast already applied through strides).
    fn binary(
        &self,
        lhs: &Self::Storage,
        ll: &Layout,
        rhs: &Self::Storage,
        rl: &Layout,
        op: BinaryOp,
    ) -> Result<Self::Storage>;
    /// Comparison of two same-shape operands, giving u8 (1 true, 0 false).
    fn cmp(
        &self,
        lhs: &Self::Storage,
        ll: &Layout,
        rhs: &Self::Storage,
        rl: &Layout,
        op: CmpOp,
    ) -> Result<Self::Storage>;
    /// `on_true` where `cond` is non-zero, else `on_false`; all three of one shape.
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
    /// Each element converted to `to` (Rust `as` semantics; see [`crate::spec::elementwise`]).
    fn cast(&self, x: &Self::Storage, l: &Layout, to: DType) -> Result<Self::Storage>;
    /// Program `p` over `inputs` (one shape, broadcast already; of `p.inputs`' dtypes), with
    /// scalar parameters `params` (each in its step's form, as `scalar_map` takes them): the
    /// bits the steps give one op at a time, in one pass where the backend can. By default, one
    /// op at a time (the cpu reference; the oracle of the fused kernels).
    fn fused(&self, p: &Program, inputs: &[(&Self::Storage, &Layout)], params: &[Scalar]) -> Result<Self::Storage> {
        one_at_a_time(self, p, inputs, params)
    }
}

/// Program `p` run one op at a time through `b`'s own elementwise ops: the default
/// [`ElementwiseOps::fused`], and what a backend runs for a program of one step (its op's own
/// kernel, with every fast form it has).
pub fn one_at_a_time<B: ElementwiseOps>(
    b: &B,
    p: &Program,
    inputs: &[(&B::Storage, &Layout)],
    params: &[Scalar],
) -> Result<B::Storage> {
    let shape = inputs.first().map_or_else(|| crate::Shape::from(()), |(_, l)| l.shape().clone());
    let dense = Layout::contiguous(shape);
    let mut steps: Vec<B::Storage> = Vec::with_capacity(p.steps.len());
    for step in &p.steps {
        let arg = |i: usize| match step.args[i].0 {
            Value::Input(k) => (inputs[k as usize].0, inputs[k as usize].1),
            Value::Step(k) => (&steps[k as usize], &dense),
        };
        let out = match step.op {
            Op::Unary(op) => b.unary(arg(0).0, arg(0).1, op)?,
            Op::Binary(op) => b.binary(arg(0).0, arg(0).1, arg(1).0, arg(1).1, op)?,
            Op::Cmp(op) => b.cmp(arg(0).0, arg(0).1, arg(1).0, arg(1).1, op)?,
            Op::Scalar(op, first) => {
                let at = first as usize;
                b.scalar_map(arg(0).0, arg(0).1, op, &params[at..at + op.arity()])?
            }
            Op::Where => b.where_cond(arg(0).0, arg(0).1, arg(1).0, arg(1).1, arg(2).0, arg(2).1)?,
            Op::Cast => b.cast(arg(0).0, arg(0).1, step.dtype)?,
        };
        steps.push(out);
    }
    steps.pop().ok_or_else(|| Error::InvalidParam { op: "fused", msg: "a program of no step".into() })
}

/// Reductions over a set of dims.
pub trait ReduceOps: Memory {
    /// Output: contiguous, with the shape of `l` and every dim of `dims` (sorted, distinct)
    /// set to 1.
    fn reduce(&self, x: &Self::Storage, l: &Layout, op: ReduceOp, dims: &[usize]) -> Result<Self::Storage>;
}

/// A bad id (outside `0..size` of the indexed dim) is an `IndexOutOfRange`: returned at once,
/// or recorded in `flag` by the kernels (see [`Memory::new_flag`]); never clamped or wrapped.
pub trait IndexOps: Memory {
    /// The slices of `x` at `ids` (1-D) along `dim`.
    fn index_select(
        &self,
        x: &Self::Storage,
        xl: &Layout,
        ids: &Self::Storage,
        il: &Layout,
        dim: usize,
        flag: &Self::Storage,
    ) -> Result<Self::Storage>;
    /// [`IndexOps::index_select`] along dim 0 of a tensor stored in parts, in one kernel: `parts`
    /// are the ones the view spans, part `i` holding the tensor's elements from `bounds[i]` to
    /// `bounds[i + 1]`; `xl` places the view in the whole tensor. `None` where this backend
    /// cannot (too many parts for one kernel's bindings; only wgpu stores tensors in parts),
    /// and the caller picks part by part.
    #[allow(clippy::too_many_arguments)]
    fn index_select_parts(
        &self,
        _parts: &[&Self::Storage],
        _bounds: &[usize],
        _xl: &Layout,
        _ids: &Self::Storage,
        _il: &Layout,
        _flag: &Self::Storage,
    ) -> Result<Option<Self::Storage>> {
        Ok(None)
    }
    /// `x` read at `ids` along `dim` (`ids` has the output's shape).
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
    /// `src` scattered into `dst` in place: `dl` is a view of `dst` in which no two positions
    /// share memory, and neither `ids` nor `src` share `dst`'s storage.
    #[allow(clippy::too_many_arguments)]
    fn scatter_set(
        &self,
        dst: &mut Self::Storage,
        dl: &Layout,
        ids: &Self::Storage,
        il: &Layout,
        src: &Self::Storage,
        sl: &Layout,
        dim: usize,
        mode: ScatterMode,
        flag: &Self::Storage,
    ) -> Result<()>;
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

/// Convolutions and transposed convolutions, 1-D and 2-D, through one 2-D core.
pub trait ConvOps: Memory {
    /// `op` of `x (N, C, H, W)` with `k` (`(K, C / groups, R, S)`; transposed:
    /// `(C, K / groups, R, S)`) as `g` says; a 1-D op arrives with `H = R = 1` (see
    /// [`crate::spec::conv::nchw`]).
    fn conv(
        &self,
        op: ConvOp,
        x: &Self::Storage,
        xl: &Layout,
        k: &Self::Storage,
        kl: &Layout,
        g: &Conv2,
    ) -> Result<Self::Storage>;
}

/// 2-D max and average pooling.
pub trait PoolOps: Memory {
    /// `op` over the windows `p` describes, on the last two dims of `x`.
    fn pool2d(&self, x: &Self::Storage, l: &Layout, op: PoolOp, p: &Pool2dParams) -> Result<Self::Storage>;
}

/// Nearest-neighbour upsampling.
pub trait UpsampleOps: Memory {
    /// The last dim resized to `size`, each output reading `floor(o * in / size)`.
    fn upsample_nearest1d(&self, x: &Self::Storage, l: &Layout, size: usize) -> Result<Self::Storage>;
    /// The last two dims resized to `size`, as `upsample_nearest1d` per dim.
    fn upsample_nearest2d(&self, x: &Self::Storage, l: &Layout, size: [usize; 2]) -> Result<Self::Storage>;
}

/// Copies, fills and ranges: what `contiguous`, `cat`, `slice_set` and `fill_` are made of.
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

/// Batched matrix products.
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
    /// Whether matmuls here compute an elementwise program over their product in their own
    /// kernel ([`MatmulOps::matmul_then`]), so that a product is worth deferring.
    fn epilogues(&self) -> bool {
        false
    }
    /// The product of `lhs` and `rhs` (as [`MatmulOps::matmul`]), then program `p` over it (its
    /// input 0) and `inputs` (its inputs 1 on, each in the product's shape) with `params`: the
    /// bits of the matmul and then the program, in one kernel where the backend can. By default
    /// the matmul, then the program ([`matmul_then_fused`]).
    #[allow(clippy::too_many_arguments)]
    fn matmul_then(
        &self,
        (lhs, ll): (&Self::Storage, &Layout),
        (rhs, rl): (&Self::Storage, &Layout),
        g: &MatmulGeometry,
        p: &Program,
        inputs: &[(&Self::Storage, &Layout)],
        params: &[Scalar],
    ) -> Result<Self::Storage>
    where
        Self: ElementwiseOps,
    {
        matmul_then_fused(self, (lhs, ll), (rhs, rl), g, p, inputs, params)
    }
    /// Whether a norm over the last dim of `x` (of `dtype`) would be computed inside the product
    /// that reads it ([`MatmulOps::matmul_norm_then`]), so that such a norm is worth deferring.
    fn norm_prologues(&self, _x: &Layout, _dtype: DType) -> bool {
        false
    }
    /// [`MatmulOps::matmul_then`] with the lhs the norm `n` of its rows: the bits of the norm
    /// stored, then the product and the program, in one kernel where the backend can. By
    /// default the norm, then `matmul_then` ([`norm_then_matmul`]).
    #[allow(clippy::too_many_arguments)]
    fn matmul_norm_then(
        &self,
        n: RowNormArgs<'_, Self::Storage>,
        rhs: (&Self::Storage, &Layout),
        g: &MatmulGeometry,
        p: &Program,
        inputs: &[(&Self::Storage, &Layout)],
        params: &[Scalar],
    ) -> Result<Self::Storage>
    where
        Self: ElementwiseOps + NnOps,
    {
        norm_then_matmul(self, n, rhs, g, p, inputs, params)
    }
}

/// A layer or rms norm (`op`) over the last dim of `x` with its weight and bias: a product's lhs
/// not stored yet ([`MatmulOps::matmul_norm_then`]).
pub struct RowNormArgs<'a, S> {
    /// `LayerNorm` or `RmsNorm`.
    pub op: NnOp,
    /// The rows normed: the product's lhs before the norm.
    pub x: (&'a S, &'a Layout),
    /// The weight, if any.
    pub w: Param<'a, S>,
    /// The bias (a layer norm's), if any.
    pub b: Param<'a, S>,
    /// Added to the variance (mean square).
    pub eps: f64,
}

impl<S> RowNormArgs<'_, S> {
    /// The norm alone, on `b`: its result, contiguous.
    pub fn run<B: NnOps<Storage = S>>(&self, b: &B) -> Result<S> {
        let (x, xl) = self.x;
        match self.op {
            NnOp::LayerNorm => b.layer_norm(x, xl, self.w, self.b, self.eps),
            _ => b.rms_norm(x, xl, self.w, self.eps),
        }
    }
}

/// [`MatmulOps::matmul_norm_then`] in two steps: the norm, then `matmul_then` on it.
pub fn norm_then_matmul<B: MatmulOps + ElementwiseOps + NnOps>(
    b: &B,
    n: RowNormArgs<'_, B::Storage>,
    rhs: (&B::Storage, &Layout),
    g: &MatmulGeometry,
    p: &Program,
    inputs: &[(&B::Storage, &Layout)],
    params: &[Scalar],
) -> Result<B::Storage> {
    let y = n.run(b)?;
    let yl = Layout::contiguous(n.x.1.shape().clone());
    b.matmul_then((&y, &yl), rhs, g, p, inputs, params)
}

/// [`MatmulOps::matmul_then`] in two kernels: the matmul, then program `p` over its product (a
/// program of no steps: the product itself).
pub fn matmul_then_fused<B: MatmulOps + ElementwiseOps>(
    b: &B,
    (lhs, ll): (&B::Storage, &Layout),
    (rhs, rl): (&B::Storage, &Layout),
    g: &MatmulGeometry,
    p: &Program,
    inputs: &[(&B::Storage, &Layout)],
    params: &[Scalar],
) -> Result<B::Storage> {
    let y = b.matmul(lhs, ll, rhs, rl, g)?;
    if p.steps.is_empty() {
        return Ok(y);
    }
    let dense = Layout::contiguous(g.out.shape.clone());
    let all: Vec<(&B::Storage, &Layout)> = [(&y, &dense)].into_iter().chain(inputs.iter().copied()).collect();
    b.fused(p, &all, params)
}

/// [`QuantOps::qmatvec_then`] in two kernels: the product (its norm first, by
/// [`QuantOps::qmatvec_norm`]), then program `p` over it (a program of no steps: the product).
pub fn qmatvec_then_fused<B: QuantOps + NnOps + ElementwiseOps>(
    b: &B,
    q: &B::Storage,
    (offset, ty, n): (usize, crate::spec::quant::GgmlType, usize),
    x: QmvInput<'_, B::Storage>,
    p: &Program,
    inputs: &[(&B::Storage, &Layout)],
    params: &[Scalar],
) -> Result<B::Storage> {
    // The product's shape: x's with n for K.
    let mut dims = x.rows().dims().to_vec();
    if let Some(k) = dims.last_mut() {
        *k = n;
    }
    let y = match x {
        QmvInput::Rows(x) => b.qmatvec(q, offset, ty, n, x)?,
        QmvInput::Norm(norm) => b.qmatvec_norm(q, offset, ty, n, norm)?,
    };
    if p.steps.is_empty() {
        return Ok(y);
    }
    let dense = Layout::contiguous(dims);
    let all: Vec<(&B::Storage, &Layout)> = [(&y, &dense)].into_iter().chain(inputs.iter().copied()).collect();
    b.fused(p, &all, params)
}

/// Softmax and the normalisations.
pub trait NnOps: Memory {
    /// `op` (softmax or log_softmax) along `dim`.
    fn softmax(&self, x: &Self::Storage, l: &Layout, op: NnOp, dim: usize) -> Result<Self::Storage>;
    /// Normalised along the last dim (mean 0, variance 1, `eps` added to the variance), then `w`
    /// and `b` applied.
    fn layer_norm(
        &self,
        x: &Self::Storage,
        l: &Layout,
        w: Param<Self::Storage>,
        b: Param<Self::Storage>,
        eps: f64,
    ) -> Result<Self::Storage>;
    /// Divided by the root mean square along the last dim (`eps` added to the mean square), then
    /// `w` applied.
    fn rms_norm(&self, x: &Self::Storage, l: &Layout, w: Param<Self::Storage>, eps: f64) -> Result<Self::Storage>;
    /// Inference batch norm over dim 1: `(x - mean) / sqrt(var + eps)`, then `w` and `b` applied.
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
    /// `x / (k + alpha / size * s)^beta` with `s` the sum of squares over a window of `size`
    /// channels (dim 1) around each element.
    fn local_response_norm(
        &self,
        x: &Self::Storage,
        l: &Layout,
        size: usize,
        alpha: f64,
        beta: f64,
        k: f64,
    ) -> Result<Self::Storage>;
    /// One step of a recurrent cell (`op` lstm_cell or gru_cell) from the gate inputs `gx` and `gh`
    /// (`[B, G H]`), the optional bias of `gh` and the state (`c` or `h`, `[B, H]`).
    fn rnn_cell(
        &self,
        op: NnOp,
        gx: Operand<Self::Storage>,
        gh: Operand<Self::Storage>,
        bias: Param<Self::Storage>,
        state: Operand<Self::Storage>,
    ) -> Result<Self::Storage>;
}

/// An operand of a multi-input op: its storage and its layout.
pub type Operand<'a, S> = (&'a S, &'a Layout);

/// What a quantized product ([`QuantOps::qmatvec_then`]) multiplies: x's rows, or the norm of
/// x's rows, computed first.
pub enum QmvInput<'a, S> {
    /// x.
    Rows(Operand<'a, S>),
    /// The norm of x's rows.
    Norm(RowNormArgs<'a, S>),
}

impl<S> QmvInput<'_, S> {
    /// The layout of x (the norm's input).
    pub fn rows(&self) -> &Layout {
        match self {
            QmvInput::Rows(x) => x.1,
            QmvInput::Norm(n) => n.x.1,
        }
    }
}

/// Attention and the rotary embeddings ([`crate::spec::attention`]).
pub trait AttentionOps: Memory {
    /// `[B, Hq, Lq, Dv]` attention of `q` over `k` and `v` (any strides); `mask` (of kind
    /// `p.mask`) laid out as `[B, Hq, Lq, Lk]` (stride 0 where it broadcasts).
    fn sdpa(
        &self,
        q: Operand<Self::Storage>,
        k: Operand<Self::Storage>,
        v: Operand<Self::Storage>,
        mask: Option<Operand<Self::Storage>>,
        p: &Sdpa,
    ) -> Result<Self::Storage>;
    /// `op` (rope or rope_i) of `x [B, H, T, D]` with `cos` and `sin` laid out as `[B, T, D/2]`.
    fn rope(
        &self,
        op: AttentionOp,
        x: Operand<Self::Storage>,
        cos: Operand<Self::Storage>,
        sin: Operand<Self::Storage>,
    ) -> Result<Self::Storage>;
}

/// Random draws (Philox 4x32-10).
pub trait RandomOps: Memory {
    /// `len` values of the stream `(seed, offset)`, as [`crate::spec::random`] defines it.
    fn random(&self, dtype: DType, len: usize, dist: Distribution, seed: u64, offset: u64) -> Result<Self::Storage>;
    /// Dropout of `x` at stream position `(seed, offset)` ([`crate::spec::random`]): `p` and
    /// `scale` already rounded to the compute type ([`crate::spec::random::dropout`]).
    fn dropout(
        &self,
        x: &Self::Storage,
        l: &Layout,
        p: f64,
        scale: f64,
        seed: u64,
        offset: u64,
    ) -> Result<Self::Storage>;
}

/// Sorting.
pub trait SortOps: Memory {
    /// u32 indices that sort each row along the last dim, stable.
    fn argsort(&self, x: &Self::Storage, l: &Layout, descending: bool) -> Result<Self::Storage>;
}

/// Quantized tensors: GGML blocks (`spec::quant`) held in a u8 storage.
pub trait QuantOps: Memory {
    /// The `n` values (a whole number of blocks of `ty`) whose blocks start at byte `offset` of
    /// the u8 storage `q`, as a new storage of `dtype` (f32, f16 or bf16): ggml's values, rounded
    /// to nearest even for the halves.
    fn dequantize(
        &self,
        q: &Self::Storage,
        offset: usize,
        ty: crate::spec::quant::GgmlType,
        n: usize,
        dtype: DType,
    ) -> Result<Self::Storage>;

    /// `x [.., M, K]` (f32, f16 or bf16, any strides; 1 to `spec::quant::QMATVEC_MAX_ROWS` rows
    /// in all, K > 0) times the `n` rows of K values whose blocks of `ty` start at byte `offset`
    /// of `q`, transposed: a new contiguous `[rows, n]` storage of x's dtype, each element the
    /// products of x with ggml's values summed in f32 and rounded once.
    fn qmatvec(
        &self,
        q: &Self::Storage,
        offset: usize,
        ty: crate::spec::quant::GgmlType,
        n: usize,
        x: Operand<Self::Storage>,
    ) -> Result<Self::Storage>;

    /// [`QuantOps::qmatvec`] with x the norm `norm` of its rows: the bits of the norm stored,
    /// then the product, in one kernel where the backend can (a deferred norm,
    /// [`MatmulOps::norm_prologues`]). By default the norm, then `qmatvec`.
    fn qmatvec_norm(
        &self,
        q: &Self::Storage,
        offset: usize,
        ty: crate::spec::quant::GgmlType,
        n: usize,
        norm: RowNormArgs<'_, Self::Storage>,
    ) -> Result<Self::Storage>
    where
        Self: NnOps,
    {
        let x = norm.run(self)?;
        self.qmatvec(q, offset, ty, n, (&x, &Layout::contiguous(norm.x.1.dims())))
    }

    /// Whether [`QuantOps::qmatvec_then`] computes a program where the product is stored, so
    /// that a quantized product's consumers are worth deferring with it.
    fn qmatvec_epilogues(&self) -> bool {
        false
    }

    /// [`QuantOps::qmatvec`] (or [`QuantOps::qmatvec_norm`], x a norm of its rows), then program
    /// `p` over the product (its input 0, `[rows, n]`) and `inputs` (its inputs 1 on, each in the
    /// product's shape) with `params`: the bits of the product and then the program, in one
    /// kernel where the backend can. By default the product, then the program.
    #[allow(clippy::too_many_arguments)]
    fn qmatvec_then(
        &self,
        q: &Self::Storage,
        w: (usize, crate::spec::quant::GgmlType, usize),
        x: QmvInput<'_, Self::Storage>,
        p: &Program,
        inputs: &[(&Self::Storage, &Layout)],
        params: &[Scalar],
    ) -> Result<Self::Storage>
    where
        Self: NnOps + ElementwiseOps + Sized,
    {
        qmatvec_then_fused(self, q, w, x, p, inputs, params)
    }

    /// [`QuantOps::qmatvec`] of x's rows rounded to q8 activation blocks first (each run of
    /// `spec::quant::Q8_BLOCK` values along K to `spec::quant::q8_round` times its
    /// `spec::quant::q8_scale`; K is a multiple of the block): the products of those values with
    /// ggml's, summed in f32 and rounded once to x's dtype.
    fn qmatvec_q8(
        &self,
        q: &Self::Storage,
        offset: usize,
        ty: crate::spec::quant::GgmlType,
        n: usize,
        x: Operand<Self::Storage>,
    ) -> Result<Self::Storage>;
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
    + AttentionOps
    + QuantOps
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
        + AttentionOps
        + QuantOps
{
}
