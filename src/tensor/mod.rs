//! The tensor an app uses: a shared storage on a device, seen through a strided layout.
//! Views (transpose, narrow, broadcast...) share storage and never copy.

mod arith;
mod attention;
mod dims;
mod display;
mod dropout;
mod fuse;
mod indexing;
mod literals;
mod nn;
mod ops;
pub(crate) mod parts;
mod plan;
mod quant;
mod recurrent;
mod run;
mod shape_ops;
mod status;
mod sugar;

pub use arith::TensorOrScalar;
pub use dims::{Dims, ShapeWithOneHole};
pub use indexing::{IndexOp, TensorIndexer};
pub use literals::HostElement;
pub use plan::Plan;
pub use quant::QTensor;
pub use recurrent::{RnnOptions, RnnWeights};

use crate::backend::{CopyOps, Memory, RandomOps};
use crate::device::{BackendOf, Storage, dispatch};
use crate::spec::{self, Family, Out, random::Distribution};
use crate::{CpuStorage, DType, Device, Dim, Error, Layout, Result, Scalar, Shape, WithDType};
use status::Status;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// An n-dimensional array on a [`Device`]. Cloning is cheap and shares the data.
///
/// Views (transpose, narrow, broadcast, reshape of a contiguous tensor) are new strides over the
/// same storage; every op validates its inputs first and returns an [`Error`](crate::Error)
/// instead of panicking; a readback waits for the device.
///
/// ```
/// use rocm_wgpu_ops::{D, DType, Device, Tensor};
///
/// let dev = Device::cpu();
/// let x = Tensor::from_vec(vec![1f32, 2., 3., 4., 5., 6.], [2, 3], &dev)?;
/// let xt = x.t()?;
/// assert_eq!((xt.dims(), xt.is_contiguous()), (&[3, 2][..], false));
/// assert_eq!(xt.to_vec2::<f32>()?, [[1., 4.], [2., 5.], [3., 6.]]);
///
/// let rows = x.sum(&[1])?.to_vec::<f32>()?;
/// assert_eq!(rows, [6., 15.]);
/// let p = x.softmax(D::Minus1)?.to_dtype(DType::F64)?.to_vec2::<f64>()?;
/// assert!((p[0][2] - 1. / (1. + (-1f64).exp() + (-2f64).exp())).abs() < 1e-6);
///
/// // Bad input is an error, and leaves every tensor intact.
/// assert!(x.matmul(&x).is_err());
/// assert_eq!(x.to_vec::<f32>()?, [1., 2., 3., 4., 5., 6.]);
/// # Ok::<(), rocm_wgpu_ops::Error>(())
/// ```
#[derive(Clone)]
pub struct Tensor {
    storage: Arc<Cell>,
    layout: Layout,
    dtype: DType,
    device: Device,
}

/// A storage shared by a tensor and its views, with the failures its data may carry; or, until
/// it runs, the deferred program whose result it is (`fuse.rs`).
pub(crate) struct Cell {
    data: RwLock<Storage>,
    deferred: Mutex<Option<fuse::Deferred>>,
    /// Whether `deferred` holds a program (read without the lock on every access).
    is_deferred: AtomicBool,
    /// Whether `data` is stored in parts (`parts.rs`; a deferred result never is).
    parts: bool,
    status: Status,
}

impl crate::device::Pending for Cell {
    fn run(&self) -> Result<()> {
        self.materialize()
    }

    fn can_wait(&self, written: *const ()) -> bool {
        let slot = self.deferred.lock().unwrap_or_else(|e| e.into_inner());
        slot.as_ref().is_some_and(|d| d.can_wait(written))
    }
}

impl Cell {
    fn new(data: Storage, deferred: Option<fuse::Deferred>, status: Status) -> Cell {
        let is_deferred = AtomicBool::new(deferred.is_some());
        let parts = matches!(data, Storage::Parts(_));
        Cell { data: RwLock::new(data), deferred: Mutex::new(deferred), is_deferred, parts, status }
    }

    /// Runs the deferred program, if any, into `data`; a failure leaves it deferred (and is
    /// returned again by the next access).
    pub(crate) fn materialize(&self) -> Result<()> {
        if !self.is_deferred.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut slot = self.deferred.lock().unwrap_or_else(|e| e.into_inner());
        let Some(d) = slot.as_ref() else { return Ok(()) };
        let storage = d.run()?;
        *self.data.write().unwrap_or_else(|e| e.into_inner()) = storage;
        *slot = None;
        self.is_deferred.store(false, Ordering::Release);
        Ok(())
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tensor[{}, {}, {}]", self.shape(), self.dtype, self.device)
    }
}

impl Tensor {
    pub(crate) fn from_storage(storage: Storage, shape: impl Into<Shape>, device: &Device) -> Tensor {
        Self::from_parts(storage, shape.into(), Status::default(), device)
    }

    fn from_parts(storage: Storage, shape: Shape, status: Status, device: &Device) -> Tensor {
        let dtype = storage.dtype();
        let cell = Cell::new(storage, None, status);
        Tensor { storage: Arc::new(cell), layout: Layout::contiguous(shape), dtype, device: device.clone() }
    }

    /// The deferred result `d` (of `out`), registered with its device (which runs it before an
    /// in-place write or a synchronize).
    fn deferred(d: fuse::Deferred, out: &Out, status: Status, device: &Device) -> Tensor {
        // Nothing reads the placeholder: every access runs the program first.
        let placeholder = Storage::Cpu(CpuStorage::U8(vec![]));
        let cell = Arc::new(Cell::new(placeholder, Some(d), status));
        device.defer(&cell);
        Tensor {
            storage: cell,
            layout: Layout::contiguous(out.shape.clone()),
            dtype: out.dtype,
            device: device.clone(),
        }
    }

    /// `f` of this tensor's deferred program, if it has one.
    fn with_deferred<R>(&self, f: impl FnOnce(&fuse::Deferred) -> Option<R>) -> Option<R> {
        if !self.storage.is_deferred.load(Ordering::Acquire) {
            return None;
        }
        self.storage.deferred.lock().unwrap_or_else(|e| e.into_inner()).as_ref().and_then(f)
    }

    /// Runs this tensor's deferred program, if any.
    fn materialize(&self) -> Result<()> {
        self.storage.materialize()
    }

    fn status(&self) -> &Status {
        &self.storage.status
    }

    fn view(&self, layout: Layout) -> Tensor {
        Tensor { storage: self.storage.clone(), layout, dtype: self.dtype, device: self.device.clone() }
    }

    // A panic while a lock is held cannot leave a buffer half-described, so poison is ignored.
    /// The storage, read-locked, after its deferred program (if any) has run.
    pub(crate) fn read(&self) -> Result<RwLockReadGuard<'_, Storage>> {
        self.materialize()?;
        Ok(self.storage.data.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// The storage, write-locked, after every deferred program of the device has run (any may
    /// read what is about to be written; a deferred norm that reads none of it waits).
    pub(crate) fn write(&self) -> Result<RwLockWriteGuard<'_, Storage>> {
        self.device.run_deferred_before(Some(Arc::as_ptr(&self.storage).cast()))?;
        self.materialize()?;
        Ok(self.storage.data.write().unwrap_or_else(|e| e.into_inner()))
    }

    pub(crate) fn shares_storage(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage)
    }

    /// Host data in `shape` on `device` (`i32` elements, Rust's default integer literal, are
    /// stored as i64: [`HostElement`]).
    pub fn from_vec<T: HostElement>(data: Vec<T>, shape: impl Into<Shape>, device: &Device) -> Result<Tensor> {
        Self::from_cpu(T::into_cpu_storage(data)?, shape, device)
    }

    /// A tensor of `shape` on `device` holding a copy of `data` (`data.len()` must be the shape's
    /// element count).
    pub fn from_slice<T: HostElement>(data: &[T], shape: impl Into<Shape>, device: &Device) -> Result<Tensor> {
        Self::from_vec(data.to_vec(), shape, device)
    }

    /// Host data of any dtype in `shape` on `device`.
    pub fn from_cpu(data: CpuStorage, shape: impl Into<Shape>, device: &Device) -> Result<Tensor> {
        let shape = shape.into();
        run::admit(device, Family::Copy, "from_vec", &Out::new(shape.clone(), data.dtype()))?;
        if shape.elem_count() != data.len() {
            return Err(Error::ElementCount { op: "from_vec", expected: shape.elem_count(), got: data.len(), shape });
        }
        let part = |lo: usize, hi: usize| {
            let piece = crate::with_storage!(&data, v => CpuStorage::from_vec(v[lo..hi].to_vec()));
            dispatch!(device, |b| Ok(b.wrap(b.upload(&piece)?)))
        };
        if let Some(t) = Tensor::make_parts(&shape, data.dtype(), device, part)? {
            return Ok(t);
        }
        let storage = dispatch!(device, |b| b.wrap(b.upload(&data)?));
        Ok(Self::from_storage(storage, shape, device))
    }

    /// A tensor with every element `value` (cast to `dtype`).
    pub fn full(value: impl Into<Scalar>, shape: impl Into<Shape>, dtype: DType, device: &Device) -> Result<Tensor> {
        let shape = shape.into();
        run::admit(device, Family::Copy, "full", &Out::new(shape.clone(), dtype))?;
        let layout = Layout::contiguous(shape.clone());
        let value = value.into().to_dtype(dtype);
        let part = |lo: usize, hi: usize| {
            dispatch!(device, |b| {
                let mut s = b.alloc(dtype, hi - lo)?;
                b.fill(&mut s, &Layout::contiguous([hi - lo]), value)?;
                Ok(b.wrap(s))
            })
        };
        if let Some(t) = Tensor::make_parts(&shape, dtype, device, part)? {
            return Ok(t);
        }
        let storage = dispatch!(device, |b| {
            let mut s = b.alloc(dtype, shape.elem_count())?;
            b.fill(&mut s, &layout, value)?;
            b.wrap(s)
        });
        Ok(Self::from_storage(storage, shape, device))
    }

    /// A new tensor whose every element the caller writes before any is read (`cat`'s output):
    /// no fill.
    pub(super) fn unfilled(shape: Shape, dtype: DType, device: &Device, op: &'static str) -> Result<Tensor> {
        run::admit(device, Family::Copy, op, &Out::new(shape.clone(), dtype))?;
        let part = |lo: usize, hi: usize| dispatch!(device, |b| Ok(b.wrap(b.alloc(dtype, hi - lo)?)));
        if let Some(t) = Tensor::make_parts(&shape, dtype, device, part)? {
            return Ok(t);
        }
        let storage = dispatch!(device, |b| b.wrap(b.alloc(dtype, shape.elem_count())?));
        Ok(Self::from_storage(storage, shape, device))
    }

    /// A tensor of zeros.
    pub fn zeros(shape: impl Into<Shape>, dtype: DType, device: &Device) -> Result<Tensor> {
        Self::full(0u8, shape, dtype, device)
    }

    /// A tensor of ones.
    pub fn ones(shape: impl Into<Shape>, dtype: DType, device: &Device) -> Result<Tensor> {
        Self::full(1u8, shape, dtype, device)
    }

    /// Zeros of this tensor's shape and dtype, on its device.
    pub fn zeros_like(&self) -> Result<Tensor> {
        Self::zeros(self.shape().clone(), self.dtype, &self.device)
    }

    /// `start, start + step, ...` up to `end` (excluded), 1-D, of `T`'s dtype (i64 for `i32`,
    /// Rust's default integer literal).
    pub fn arange_step<T: Into<Scalar>>(start: T, end: T, step: T, device: &Device) -> Result<Tensor> {
        let (start, end, step) = (start.into(), end.into(), step.into());
        let len = spec::copy::arange(start, end, step)?;
        run::admit(device, Family::Copy, "arange", &Out::new([len], start.dtype()))?;
        let dtype = start.dtype();
        // A part from `lo` starts at its own value: exact for integers, one rounding for floats.
        let part = |lo: usize, hi: usize| {
            let first = if dtype.is_int() {
                Scalar::I64(start.to::<i64>().wrapping_add((lo as i64).wrapping_mul(step.to::<i64>())))
            } else {
                Scalar::F64(start.to_f64() + lo as f64 * step.to_f64())
            };
            dispatch!(device, |b| Ok(b.wrap(b.arange(dtype, first.to_dtype(dtype), step, hi - lo)?)))
        };
        if let Some(t) = Tensor::make_parts(&Shape::new([len]), dtype, device, part)? {
            return Ok(t);
        }
        let storage = dispatch!(device, |b| b.wrap(b.arange(start.dtype(), start, step, len)?));
        Ok(Self::from_storage(storage, [len], device))
    }

    /// `start, start + 1, ...` up to `end` (excluded), of `T`'s dtype (i64 for `i32`: `arange(0,
    /// 12, &dev)`).
    pub fn arange<T: Into<Scalar>>(start: T, end: T, device: &Device) -> Result<Tensor> {
        let start = start.into();
        Self::arange_step(start, end.into(), Scalar::I64(1).to_dtype(start.dtype()), device)
    }

    /// Draws from `dist` at stream position `(seed, offset)`: the same numbers on every backend.
    pub fn random(
        shape: impl Into<Shape>,
        dtype: DType,
        dist: Distribution,
        seed: u64,
        offset: u64,
        device: &Device,
    ) -> Result<Tensor> {
        let shape = shape.into();
        spec::random::random(&shape, dtype, dist)?;
        run::admit(device, Family::Random, "random", &Out::new(shape.clone(), dtype))?;
        // Each element depends on its stream position alone: a part starts where it lies.
        let part = |lo: usize, hi: usize| {
            let at = offset.wrapping_add(lo as u64);
            dispatch!(device, |b| Ok(b.wrap(b.random(dtype, hi - lo, dist, seed, at)?)))
        };
        if let Some(t) = Tensor::make_parts(&shape, dtype, device, part)? {
            return Ok(t);
        }
        let len = shape.elem_count();
        let storage = dispatch!(device, |b| b.wrap(b.random(dtype, len, dist, seed, offset)?));
        Ok(Self::from_storage(storage, shape, device))
    }

    /// Uniform in `[low, high)` from the device's own stream (see [`Device::set_seed`]).
    pub fn rand(low: f64, high: f64, shape: impl Into<Shape>, dtype: DType, device: &Device) -> Result<Tensor> {
        let shape = shape.into();
        let (seed, offset) = device.next_random(shape.elem_count());
        Self::random(shape, dtype, Distribution::Uniform { low, high }, seed, offset, device)
    }

    /// Normal with `mean` and `std` from the device's own stream.
    pub fn randn(mean: f64, std: f64, shape: impl Into<Shape>, dtype: DType, device: &Device) -> Result<Tensor> {
        let shape = shape.into();
        let (seed, offset) = device.next_random(shape.elem_count());
        Self::random(shape, dtype, Distribution::Normal { mean, std }, seed, offset, device)
    }

    /// The tensor's shape.
    pub fn shape(&self) -> &Shape {
        self.layout.shape()
    }

    /// The size of each dim.
    pub fn dims(&self) -> &[usize] {
        self.layout.dims()
    }

    /// The number of dims.
    pub fn rank(&self) -> usize {
        self.layout.rank()
    }

    /// The number of elements.
    pub fn elem_count(&self) -> usize {
        self.layout.elem_count()
    }

    /// The dtype of the elements.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The device the data lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// How the tensor views its storage (shape, strides, offset).
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Whether the elements lie row-major, without gaps, in the storage.
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }

    /// The elements, row-major, as host data (any layout). Blocks until the GPU is done; in a
    /// browser use [`Tensor::to_cpu_storage_async`] (on WebGPU this returns
    /// [`Error::WouldBlock`] there; on the cpu backend it works everywhere).
    pub fn to_cpu_storage(&self) -> Result<CpuStorage> {
        crate::block::block_on_result("to_cpu_storage", self.to_cpu_storage_async())
    }

    /// The elements, row-major, as host data (any layout), without blocking: the readback of
    /// every other form. A failure the device found in this tensor's data (see
    /// [`Error::IndexOutOfRange`]) is returned here.
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    /// # pollster::block_on(async {
    /// let dev = Device::auto_async().await?;
    /// let t = Tensor::arange(0u32, 4, &dev)?;
    /// assert_eq!(t.to_cpu_storage_async().await?.to_f64_vec(), [0., 1., 2., 3.]);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn to_cpu_storage_async(&self) -> Result<CpuStorage> {
        let t = self.contiguous()?;
        t.status().resolve(&t.device).await?;
        if let Some(pending) = t.download_parts()? {
            return pending.wait().await;
        }
        // Started under the read lock, awaited without it.
        let pending = dispatch!(t.device, |b| b.download(b.get(&*t.read()?)?));
        let all = pending.wait().await?;
        let (start, end) = (t.layout.offset(), t.layout.offset() + t.elem_count());
        if start == 0 && end == crate::backend::BackendStorage::len(&all) {
            return Ok(all);
        }
        Ok(crate::with_storage!(all, v => CpuStorage::from_vec(v[start..end].to_vec())))
    }

    /// The elements, row-major, as a `Vec<T>`; `T` must be the tensor's dtype. Blocks until the
    /// GPU is done; in a browser use [`Tensor::to_vec_async`].
    pub fn to_vec<T: WithDType>(&self) -> Result<Vec<T>> {
        crate::block::block_on_result("to_vec", self.to_vec_async())
    }

    /// [`Tensor::to_vec`] without blocking: the form that works in a browser.
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    /// # pollster::block_on(async {
    /// let dev = Device::auto_async().await?;
    /// let t = Tensor::from_vec(vec![1f32, 2., 3.], [3], &dev)?.exp()?;
    /// let v = t.to_vec_async::<f32>().await?;
    /// assert!((v[0] - 1f32.exp()).abs() < 1e-5);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn to_vec_async<T: WithDType>(&self) -> Result<Vec<T>> {
        let data = self.to_cpu_storage_async().await?;
        data.as_slice::<T>().map(|s| s.to_vec()).ok_or(Error::HostDType { expected: T::DTYPE, got: self.dtype })
    }

    /// The rows of a rank-2 tensor. Blocks until the GPU is done; in a browser use
    /// [`Tensor::to_vec2_async`].
    pub fn to_vec2<T: WithDType>(&self) -> Result<Vec<Vec<T>>> {
        crate::block::block_on_result("to_vec2", self.to_vec2_async())
    }

    /// [`Tensor::to_vec2`] without blocking: the form that works in a browser.
    pub async fn to_vec2_async<T: WithDType>(&self) -> Result<Vec<Vec<T>>> {
        let [rows, cols] = *self.dims() else {
            return Err(Error::Rank { op: "to_vec2", expected: "2", shape: self.shape().clone() });
        };
        let v = self.to_vec_async::<T>().await?;
        Ok((0..rows).map(|r| v[r * cols..(r + 1) * cols].to_vec()).collect())
    }

    /// The one element of a tensor with one element. Blocks until the GPU is done; in a
    /// browser use [`Tensor::to_scalar_async`].
    pub fn to_scalar<T: WithDType>(&self) -> Result<T> {
        crate::block::block_on_result("to_scalar", self.to_scalar_async())
    }

    /// [`Tensor::to_scalar`] without blocking: the form that works in a browser.
    pub async fn to_scalar_async<T: WithDType>(&self) -> Result<T> {
        match self.to_vec_async::<T>().await?.as_slice() {
            [x] => Ok(*x),
            _ => Err(Error::Rank { op: "to_scalar", expected: "0 (or one element)", shape: self.shape().clone() }),
        }
    }

    /// A copy on `device` (contiguous). Blocks until the GPU is done; in a browser use
    /// [`Tensor::to_device_async`].
    pub fn to_device(&self, device: &Device) -> Result<Tensor> {
        crate::block::block_on_result("to_device", self.to_device_async(device))
    }

    /// This tensor contiguous, with the errors its kernels may have flagged checked: what code
    /// that hands its memory to a vendor library (a peer copy, a collective) reads.
    pub(crate) async fn resolved(&self) -> Result<Tensor> {
        let t = self.contiguous()?;
        t.status().resolve(&t.device).await?;
        Ok(t)
    }

    /// The element of its storage this tensor starts at.
    pub(crate) fn offset(&self) -> usize {
        self.layout.offset()
    }

    /// [`Tensor::to_device`] without blocking: the form that works in a browser. Between two
    /// devices of one native backend the driver copies peer to peer; anything else goes
    /// through the host.
    pub async fn to_device_async(&self, device: &Device) -> Result<Tensor> {
        let t = self.resolved().await?;
        let peer = crate::devices::peer_copy(&t.device, device, &*t.read()?, t.offset(), t.elem_count());
        match peer {
            Some(s) => Ok(Tensor::from_storage(s?, self.shape().clone(), device)),
            None => Tensor::from_cpu(t.to_cpu_storage_async().await?, self.shape().clone(), device),
        }
    }

    /// This tensor if contiguous, else a contiguous copy.
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        self.copy()
    }

    /// Swaps two dims (a view).
    pub fn transpose(&self, a: impl Dim, b: impl Dim) -> Result<Tensor> {
        let a = a.to_index(self.rank(), "transpose")?;
        let b = b.to_index(self.rank(), "transpose")?;
        Ok(self.view(self.layout.transpose(a, b)?))
    }

    /// Swaps the last two dims (a view).
    pub fn t(&self) -> Result<Tensor> {
        if self.rank() < 2 {
            return Err(Error::Rank { op: "t", expected: "at least 2", shape: self.shape().clone() });
        }
        self.transpose(self.rank() - 2, self.rank() - 1)
    }

    /// Reorders dims: dim `i` of the result is dim `perm[i]` of `self` (a view).
    pub fn permute(&self, perm: impl Dims) -> Result<Tensor> {
        Ok(self.view(self.layout.permute(&perm.to_indexes(self.rank(), "permute")?)?))
    }

    /// `len` entries of `dim` from `start` (a view).
    pub fn narrow(&self, dim: impl Dim, start: usize, len: usize) -> Result<Tensor> {
        let dim = dim.to_index(self.rank(), "narrow")?;
        Ok(self.view(self.layout.narrow(dim, start, len)?))
    }

    /// Stretches size-1 dims to `shape` (a view with stride 0).
    pub fn broadcast_as(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        let shape = shape.into();
        shape.check("broadcast_as", self.dtype)?;
        Ok(self.view(self.layout.broadcast_as(&shape)?))
    }

    /// The same elements in a new shape: a view where the strides allow it (as PyTorch's
    /// `view`: a contiguous tensor, or dims split and merged within runs of chaining strides,
    /// such as the heads of a column block), else a copy. One dim may be left for it to infer,
    /// as `()`: `reshape(((), 3))` ([`ShapeWithOneHole`]).
    pub fn reshape(&self, shape: impl ShapeWithOneHole) -> Result<Tensor> {
        let shape = shape.into_shape(self.elem_count())?;
        shape.check("reshape", self.dtype)?;
        match self.layout.reshape(&shape)? {
            Some(l) => Ok(self.view(l)),
            None => self.contiguous()?.reshape(shape),
        }
    }

    /// Adds a dim of size 1 at `dim`, `0..=rank` (`D::Minus1`: after the last) (a view).
    pub fn unsqueeze(&self, dim: impl Dim) -> Result<Tensor> {
        Ok(self.view(self.layout.unsqueeze(dims::insert_index(dim, self.rank(), "unsqueeze")?)?))
    }

    /// Removes a dim of size 1 (a view).
    pub fn squeeze(&self, dim: impl Dim) -> Result<Tensor> {
        let dim = dim.to_index(self.rank(), "squeeze")?;
        Ok(self.view(self.layout.squeeze(dim)?))
    }

    /// The same elements as one dim.
    pub fn flatten_all(&self) -> Result<Tensor> {
        self.reshape([self.elem_count()])
    }

    pub(crate) fn check_same_device(&self, op: &'static str, other: &Tensor) -> Result<()> {
        self.check_device(op, &other.device)
    }

    /// `DeviceMismatch` naming both devices unless this tensor lives on `device`.
    pub(crate) fn check_device(&self, op: &'static str, device: &Device) -> Result<()> {
        if self.device.same_device(device) {
            Ok(())
        } else {
            let name = |d: &Device| dispatch!(d, |b| b.describe());
            let (lhs, mut rhs) = (name(&self.device), name(device));
            if lhs == rhs {
                rhs.push_str(" (another device of that name)");
            }
            Err(Error::DeviceMismatch { op, lhs, rhs })
        }
    }
}

impl AsRef<Tensor> for Tensor {
    fn as_ref(&self) -> &Tensor {
        self
    }
}
