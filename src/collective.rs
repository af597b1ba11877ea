//! Collectives over a group of devices: NCCL on CUDA devices, RCCL on ROCm devices (loaded at
//! run time), the host everywhere else. See ARCHITECTURE.md, "Several devices".
//!
//! ```
//! use rocm_wgpu_ops::{Device, Group, ReduceOp, Tensor};
//! let (a, b) = (Device::cpu(), Device::cpu());
//! let group = Group::new(&[a.clone(), b.clone()])?;
//! let xs = [Tensor::from_vec(vec![1f32, 2.], [2], &a)?, Tensor::from_vec(vec![10f32, 20.], [2], &b)?];
//! let sums = group.all_reduce(&xs, ReduceOp::Sum)?;
//! assert_eq!(sums[1].to_vec::<f32>()?, [11., 22.]);
//! # Ok::<(), rocm_wgpu_ops::Error>(())
//! ```

#![cfg_attr(
    not(any(feature = "cuda", feature = "rocm")),
    allow(
        unreachable_code,
        unused_variables,
        irrefutable_let_patterns,
        reason = "without a native backend every group is a host group"
    )
)]

use crate::device::Storage;
#[cfg(any(feature = "cuda", feature = "rocm"))]
use crate::device::{AnyBackend, BackendOf};
#[cfg(any(feature = "cuda", feature = "rocm"))]
use crate::native::nccl::{self, Comms};
use crate::{BackendKind, DType, Device, Error, Result, Shape, Tensor};
use std::sync::Mutex;

/// How [`Group::all_reduce`] and [`Group::reduce_scatter`] combine the ranks' elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// The sum (integers wrap).
    Sum,
    /// The product (integers wrap).
    Prod,
    /// The largest.
    Max,
    /// The smallest.
    Min,
    /// The mean of the float dtypes (NCCL scales each rank's value by 1/n and sums).
    Avg,
}

/// The 128 bytes that let ranks in several processes find each other ([`Group::join`]): made
/// once, by one process, and given to every other by the caller's own means.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct UniqueId(pub [u8; 128]);

impl std::fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UniqueId(..)")
    }
}

impl UniqueId {
    /// A new id from the collectives library of `kind` (`Cuda`: NCCL, `Rocm`: RCCL).
    pub fn new(kind: BackendKind) -> Result<UniqueId> {
        match kind {
            #[cfg(any(feature = "cuda", feature = "rocm"))]
            BackendKind::Cuda | BackendKind::Rocm => {
                let lib = nccl::library(kind)
                    .map_err(|reason| Error::BackendUnavailable { kind: format!("{kind} collectives"), reason })?;
                lib.unique_id().map(UniqueId)
            }
            _ => Err(across_processes(kind)),
        }
    }
}

fn across_processes(kind: BackendKind) -> Error {
    let msg =
        format!("{kind} devices have no collectives library: a group of them stages through the host, in one process");
    Error::InvalidParam { op: "Group::join", msg }
}

/// What runs a group's collectives.
enum Engine {
    Host,
    #[cfg(feature = "cuda")]
    Cuda(Comms<crate::native::cuda::Cuda>),
    #[cfg(feature = "rocm")]
    Rocm(Comms<crate::native::rocm::Hip>),
}

/// `$native` with `$c` the native engine's communicators and `$b` their backend (whose
/// `BackendOf` maps storages), once per native runtime compiled in; `$host` for the host engine.
macro_rules! on_engine {
    ($engine:expr, |$c:ident, $b:ident| $native:expr, $host:expr) => {
        match $engine {
            Engine::Host => $host,
            #[cfg(feature = "cuda")]
            Engine::Cuda($c) => {
                let $b = $c.backend();
                $native
            }
            #[cfg(feature = "rocm")]
            Engine::Rocm($c) => {
                let $b = $c.backend();
                $native
            }
        }
    };
}

/// One collective, as the engines take it.
#[derive(Clone, Copy, Debug)]
enum Call {
    AllReduce(ReduceOp),
    AllGather,
    ReduceScatter(ReduceOp),
    Broadcast(usize),
}

/// An ordered group of ranks, each a device; this process drives its *local* ranks (all of
/// them for [`Group::new`], one for [`Group::join`]). Every collective takes one tensor per
/// local rank, in order, each on its rank's device, all of one shape and dtype, and returns new
/// tensors on the same devices; inputs are never written.
pub struct Group {
    devices: Vec<Device>,
    ranks: Vec<usize>,
    size: usize,
    engine: Engine,
    /// One collective at a time: NCCL's calls of one group must not interleave with another's.
    busy: Mutex<()>,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Group[{} of {} ranks, {}]", self.ranks.len(), self.size, self.describe())
    }
}

impl Group {
    /// A group of `devices`, ranks in order, all driven by this process: through NCCL when they
    /// are all CUDA devices, RCCL when all ROCm (each device once; the library missing is
    /// `BackendUnavailable`), else through the host.
    pub fn new(devices: &[Device]) -> Result<Group> {
        if devices.is_empty() {
            return Err(Error::InvalidParam { op: "Group::new", msg: "a group needs at least one device".into() });
        }
        let kinds: Vec<BackendKind> = devices.iter().map(Device::kind).collect();
        let all = |k| kinds.iter().all(|&x| x == k);
        let native = |k| all(k) && matches!(k, BackendKind::Cuda | BackendKind::Rocm);
        match kinds[0] {
            k if native(k) => Self::native(devices),
            _ => Self::via_host(devices),
        }
    }

    /// A group of `devices` whose collectives stage through the host whatever the devices are:
    /// each input read back, combined on the cpu in rank order, and uploaded (correct and slow).
    pub fn via_host(devices: &[Device]) -> Result<Group> {
        if devices.is_empty() {
            return Err(Error::InvalidParam { op: "Group::via_host", msg: "a group needs at least one device".into() });
        }
        let n = devices.len();
        Ok(Group {
            devices: devices.to_vec(),
            ranks: (0..n).collect(),
            size: n,
            engine: Engine::Host,
            busy: Mutex::new(()),
        })
    }

    #[cfg(any(feature = "cuda", feature = "rocm"))]
    fn native(devices: &[Device]) -> Result<Group> {
        let engine = match devices[0].backend() {
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(_) => Engine::Cuda(Comms::new(cuda_backends(devices))?),
            #[cfg(feature = "rocm")]
            AnyBackend::Rocm(_) => Engine::Rocm(Comms::new(rocm_backends(devices))?),
            _ => Engine::Host,
        };
        let n = devices.len();
        Ok(Group { devices: devices.to_vec(), ranks: (0..n).collect(), size: n, engine, busy: Mutex::new(()) })
    }

    #[cfg(not(any(feature = "cuda", feature = "rocm")))]
    fn native(devices: &[Device]) -> Result<Group> {
        Self::via_host(devices)
    }

    /// Rank `rank` of a group of `size` ranks spread over processes (or nodes), on `device`:
    /// every rank calls this with the same `id` (from [`UniqueId::new`] in one of them), and it
    /// returns once all have joined. CUDA and ROCm devices only.
    pub fn join(device: &Device, id: &UniqueId, size: usize, rank: usize) -> Result<Group> {
        if rank >= size {
            let msg = format!("rank {rank} of a group of {size}");
            return Err(Error::InvalidParam { op: "Group::join", msg });
        }
        let engine = join_engine(device, id, size, rank)?;
        Ok(Group { devices: vec![device.clone()], ranks: vec![rank], size, engine, busy: Mutex::new(()) })
    }

    /// Ranks in the whole group.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The devices of this process's ranks, in order.
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    /// The ranks this process drives, in order (those of [`Group::devices`]).
    pub fn ranks(&self) -> &[usize] {
        &self.ranks
    }

    /// What runs the collectives: the library and its version, or the host.
    pub fn describe(&self) -> String {
        match &self.engine {
            Engine::Host => "staged through the host".into(),
            #[cfg(feature = "cuda")]
            Engine::Cuda(c) => c.describe().into(),
            #[cfg(feature = "rocm")]
            Engine::Rocm(c) => c.describe().into(),
        }
    }

    /// Every rank gets `op` of all ranks' `xs`, element by element. Blocks on the host path;
    /// in a browser use [`Group::all_reduce_async`].
    pub fn all_reduce(&self, xs: &[Tensor], op: ReduceOp) -> Result<Vec<Tensor>> {
        crate::block::block_on_result("all_reduce", self.all_reduce_async(xs, op))
    }

    /// [`Group::all_reduce`] without blocking.
    pub async fn all_reduce_async(&self, xs: &[Tensor], op: ReduceOp) -> Result<Vec<Tensor>> {
        self.collective("all_reduce", Call::AllReduce(op), xs).await
    }

    /// Every rank gets all ranks' `xs` concatenated along dim 0, in rank order.
    pub fn all_gather(&self, xs: &[Tensor]) -> Result<Vec<Tensor>> {
        crate::block::block_on_result("all_gather", self.all_gather_async(xs))
    }

    /// [`Group::all_gather`] without blocking.
    pub async fn all_gather_async(&self, xs: &[Tensor]) -> Result<Vec<Tensor>> {
        self.collective("all_gather", Call::AllGather, xs).await
    }

    /// `op` of all ranks' `xs`, split along dim 0 (a multiple of the group's size) in rank
    /// order: rank `r` gets the `r`-th part.
    pub fn reduce_scatter(&self, xs: &[Tensor], op: ReduceOp) -> Result<Vec<Tensor>> {
        crate::block::block_on_result("reduce_scatter", self.reduce_scatter_async(xs, op))
    }

    /// [`Group::reduce_scatter`] without blocking.
    pub async fn reduce_scatter_async(&self, xs: &[Tensor], op: ReduceOp) -> Result<Vec<Tensor>> {
        self.collective("reduce_scatter", Call::ReduceScatter(op), xs).await
    }

    /// Every rank gets rank `root`'s tensor (the other ranks' tensors give only shape and dtype).
    pub fn broadcast(&self, xs: &[Tensor], root: usize) -> Result<Vec<Tensor>> {
        crate::block::block_on_result("broadcast", self.broadcast_async(xs, root))
    }

    /// [`Group::broadcast`] without blocking.
    pub async fn broadcast_async(&self, xs: &[Tensor], root: usize) -> Result<Vec<Tensor>> {
        self.collective("broadcast", Call::Broadcast(root), xs).await
    }

    /// `x`, on local rank `from`'s device, sent to local rank `to`: the copy on `to`'s device.
    pub fn send_recv(&self, x: &Tensor, from: usize, to: usize) -> Result<Tensor> {
        crate::block::block_on_result("send_recv", self.send_recv_async(x, from, to))
    }

    /// [`Group::send_recv`] without blocking.
    pub async fn send_recv_async(&self, x: &Tensor, from: usize, to: usize) -> Result<Tensor> {
        let (i, j) = (self.local("send_recv", from)?, self.local("send_recv", to)?);
        x.check_device("send_recv", &self.devices[i])?;
        let x = x.resolved().await?;
        let dev = &self.devices[j];
        let busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        let out = on_engine!(
            &self.engine,
            |c, b| {
                let held = x.read()?;
                let sent = [(i, to, b.get(&held)?, x.offset())];
                let got = c.exchange(&sent, &[(j, from)], x.elem_count(), x.dtype())?;
                Some(b.wrap(got.into_iter().next().ok_or_else(|| lost("send_recv"))?))
            },
            None
        );
        drop(busy);
        match out {
            Some(s) => Ok(Tensor::from_storage(s, x.shape().clone(), dev)),
            None => x.to_device_async(dev).await,
        }
    }

    /// Sends `x` (on this process's rank's device) to rank `to` of another process, which calls
    /// [`Group::recv`]; returns once the library has taken it (the GPU may still be sending).
    pub fn send(&self, x: &Tensor, to: usize) -> Result<()> {
        let i = self.point_to_point("send", to)?;
        x.check_device("send", &self.devices[i])?;
        let x = crate::block::block_on_result("send", x.resolved())?;
        let _busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        on_engine!(
            &self.engine,
            |c, b| c.exchange(&[(i, to, b.get(&*x.read()?)?, x.offset())], &[], x.elem_count(), x.dtype()).map(drop),
            Err(across_processes(x.device().kind()))
        )
    }

    /// The tensor of `shape` and `dtype` that rank `from` of another process sends with
    /// [`Group::send`], on this process's rank's device.
    pub fn recv(&self, from: usize, shape: impl Into<Shape>, dtype: DType) -> Result<Tensor> {
        let i = self.point_to_point("recv", from)?;
        let shape = shape.into();
        shape.check("recv", dtype)?;
        let _busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        let n = shape.elem_count();
        let got: Option<Storage> = on_engine!(
            &self.engine,
            |c, b| c.exchange(&[], &[(i, from)], n, dtype)?.into_iter().next().map(|s| b.wrap(s)),
            return Err(across_processes(self.devices[i].kind()))
        );
        Ok(Tensor::from_storage(got.ok_or_else(|| lost("recv"))?, shape, &self.devices[i]))
    }

    /// The local index of rank `rank`.
    fn local(&self, op: &'static str, rank: usize) -> Result<usize> {
        self.ranks.iter().position(|&r| r == rank).ok_or_else(|| {
            let msg =
                format!("rank {rank} is not driven by this process (its ranks: {:?} of {})", self.ranks, self.size);
            Error::InvalidParam { op, msg }
        })
    }

    /// This process's one rank, for a send to or a receive from `peer` in another process.
    fn point_to_point(&self, op: &'static str, peer: usize) -> Result<usize> {
        if peer >= self.size || self.ranks.contains(&peer) {
            let msg = format!(
                "peer {peer}: must be a rank of another process (group of {}, this process has {:?}; send_recv moves \
                 between ranks of one process)",
                self.size, self.ranks
            );
            return Err(Error::InvalidParam { op, msg });
        }
        Ok(0)
    }

    /// Checks `xs` against the group and `call`.
    fn check(&self, op: &'static str, call: Call, xs: &[Tensor]) -> Result<()> {
        if xs.len() != self.devices.len() {
            let msg = format!("{} tensors for the {} ranks this process drives", xs.len(), self.devices.len());
            return Err(Error::InvalidParam { op, msg });
        }
        let first = &xs[0];
        for (x, dev) in xs.iter().zip(&self.devices) {
            x.check_device(op, dev)?;
            if x.shape() != first.shape() {
                return Err(Error::ShapeMismatch { op, lhs: first.shape().clone(), rhs: x.shape().clone() });
            }
            if x.dtype() != first.dtype() {
                return Err(Error::DTypeMismatch { op, lhs: first.dtype(), rhs: x.dtype() });
            }
        }
        let rows = first.shape().dims().first().copied();
        match call {
            Call::AllReduce(ReduceOp::Avg) | Call::ReduceScatter(ReduceOp::Avg) if !first.dtype().is_float() => {
                Err(Error::WrongDType { op, dtype: first.dtype(), expected: "a float dtype for ReduceOp::Avg".into() })
            }
            Call::AllGather | Call::ReduceScatter(_) if rows.is_none() => Err(Error::Rank {
                op,
                expected: "at least 1 (the ranks' parts go along dim 0)",
                shape: first.shape().clone(),
            }),
            Call::ReduceScatter(_) if !rows.unwrap_or(0).is_multiple_of(self.size) => Err(Error::InvalidParam {
                op,
                msg: format!("dim 0 of {} does not split into {} equal parts", first.shape(), self.size),
            }),
            Call::Broadcast(root) if root >= self.size => {
                Err(Error::InvalidParam { op, msg: format!("root {root} of a group of {}", self.size) })
            }
            _ => Ok(()),
        }
    }

    async fn collective(&self, op: &'static str, call: Call, xs: &[Tensor]) -> Result<Vec<Tensor>> {
        self.check(op, call, xs)?;
        let mut ready = Vec::with_capacity(xs.len());
        for x in xs {
            ready.push(x.resolved().await?);
        }
        if let Engine::Host = self.engine {
            return self.host(call, &ready).await;
        }
        let shape = out_shape(call, xs[0].shape(), self.size);
        let _busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        let outs: Vec<Storage> = on_engine!(
            &self.engine,
            |c, b| {
                let guards = ready.iter().map(|x| x.read()).collect::<Result<Vec<_>>>()?;
                let ins =
                    guards.iter().zip(&ready).map(|(g, x)| Ok((b.get(g)?, x.offset()))).collect::<Result<Vec<_>>>()?;
                let outs = c.run(nccl_call(call), &ins, ready[0].elem_count(), ready[0].dtype())?;
                outs.into_iter().map(|s| b.wrap(s)).collect()
            },
            vec![]
        );
        Ok(outs.into_iter().zip(&self.devices).map(|(s, d)| Tensor::from_storage(s, shape.clone(), d)).collect())
    }

    /// The host engine (one process: local index = rank): read back, combine on the cpu in rank
    /// order, upload.
    async fn host(&self, call: Call, xs: &[Tensor]) -> Result<Vec<Tensor>> {
        let cpu = Device::cpu();
        let mut on_cpu = Vec::with_capacity(xs.len());
        for x in xs {
            on_cpu.push(x.to_device_async(&cpu).await?);
        }
        let n = self.size;
        let per_rank: Vec<Tensor> = match call {
            Call::AllReduce(op) => vec![reduce(&on_cpu, op)?; n],
            Call::AllGather => vec![Tensor::cat(&on_cpu, 0)?; n],
            Call::ReduceScatter(op) => {
                let all = reduce(&on_cpu, op)?;
                let part = all.shape().dims()[0] / n;
                (0..n).map(|r| all.narrow(0, r * part, part)).collect::<Result<_>>()?
            }
            Call::Broadcast(root) => vec![on_cpu[root].clone(); n],
        };
        let mut outs = Vec::with_capacity(n);
        for (t, dev) in per_rank.iter().zip(&self.devices) {
            outs.push(t.to_device_async(dev).await?);
        }
        Ok(outs)
    }
}

/// The communicator of rank `rank` on `device`.
#[cfg(any(feature = "cuda", feature = "rocm"))]
fn join_engine(device: &Device, id: &UniqueId, size: usize, rank: usize) -> Result<Engine> {
    match device.backend() {
        #[cfg(feature = "cuda")]
        AnyBackend::Cuda(b) => Ok(Engine::Cuda(Comms::join(b.clone(), &id.0, size, rank)?)),
        #[cfg(feature = "rocm")]
        AnyBackend::Rocm(b) => Ok(Engine::Rocm(Comms::join(b.clone(), &id.0, size, rank)?)),
        _ => Err(across_processes(device.kind())),
    }
}

/// Without a native backend no device has a collectives library.
#[cfg(not(any(feature = "cuda", feature = "rocm")))]
fn join_engine(device: &Device, _: &UniqueId, _: usize, _: usize) -> Result<Engine> {
    Err(across_processes(device.kind()))
}

/// The shape every rank gets.
fn out_shape(call: Call, shape: &Shape, size: usize) -> Shape {
    let mut dims = shape.dims().to_vec();
    match call {
        Call::AllGather => dims[0] *= size,
        Call::ReduceScatter(_) => dims[0] /= size,
        _ => {}
    }
    Shape::from(dims)
}

/// `op` of `xs` (on the cpu), folded in rank order.
fn reduce(xs: &[Tensor], op: ReduceOp) -> Result<Tensor> {
    let mut acc = xs[0].clone();
    for x in &xs[1..] {
        acc = match op {
            ReduceOp::Sum | ReduceOp::Avg => acc.add(x)?,
            ReduceOp::Prod => acc.mul(x)?,
            ReduceOp::Max => acc.maximum(x)?,
            ReduceOp::Min => acc.minimum(x)?,
        };
    }
    match op {
        ReduceOp::Avg => acc.affine(1.0 / xs.len() as f64, 0.0),
        _ => Ok(acc),
    }
}

#[cfg(any(feature = "cuda", feature = "rocm"))]
fn nccl_call(call: Call) -> nccl::Call {
    let op = |op| match op {
        ReduceOp::Sum => nccl::RedOp::Sum,
        ReduceOp::Prod => nccl::RedOp::Prod,
        ReduceOp::Max => nccl::RedOp::Max,
        ReduceOp::Min => nccl::RedOp::Min,
        ReduceOp::Avg => nccl::RedOp::Avg,
    };
    match call {
        Call::AllReduce(o) => nccl::Call::AllReduce(op(o)),
        Call::AllGather => nccl::Call::AllGather,
        Call::ReduceScatter(o) => nccl::Call::ReduceScatter(op(o)),
        Call::Broadcast(root) => nccl::Call::Broadcast(root),
    }
}

#[cfg(feature = "cuda")]
fn cuda_backends(devices: &[Device]) -> Vec<crate::native::cuda::CudaBackend> {
    devices.iter().filter_map(|d| if let AnyBackend::Cuda(b) = d.backend() { Some(b.clone()) } else { None }).collect()
}

#[cfg(feature = "rocm")]
fn rocm_backends(devices: &[Device]) -> Vec<crate::native::rocm::RocmBackend> {
    devices.iter().filter_map(|d| if let AnyBackend::Rocm(b) = d.backend() { Some(b.clone()) } else { None }).collect()
}

/// A storage that is not of its device's backend: cannot happen for tensors the group checked.
fn lost(op: &'static str) -> Error {
    Error::InvalidParam { op, msg: "a tensor's storage is not of its device's backend".into() }
}
