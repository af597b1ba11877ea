//! Collectives on native devices through NCCL (cuda) and RCCL (rocm): one C API (`nccl.h`,
//! which RCCL keeps), so one entry-point table and one group type serve both, loaded at run time
//! like the other vendor libraries. See ARCHITECTURE.md, "Several devices".

use super::dylib::{self, dylib};
use super::{DevicePtr, NativeBackend, NativeStorage, Runtime};
use crate::{BackendKind, DType, Error, Result};
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

/// `ncclComm_t`.
type Comm = *mut c_void;
/// `ncclResult_t`: 0 is success.
type NcclResult = c_int;
/// `cudaStream_t` / `hipStream_t`.
type Stream = *mut c_void;

/// `ncclUniqueId`: 128 opaque bytes, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct RawId {
    internal: [c_char; 128],
}

dylib! {
    /// The calls we make, as `nccl.h` declares them (RCCL's `rccl.h` is the same).
    pub(crate) struct NcclFns {
        fn ncclGetVersion(version: *mut c_int) -> NcclResult;
        fn ncclGetErrorString(result: NcclResult) -> *const c_char;
        fn ncclGetUniqueId(id: *mut RawId) -> NcclResult;
        fn ncclCommInitAll(comms: *mut Comm, ndev: c_int, devlist: *const c_int) -> NcclResult;
        fn ncclCommInitRank(comm: *mut Comm, nranks: c_int, id: RawId, rank: c_int) -> NcclResult;
        fn ncclCommDestroy(comm: Comm) -> NcclResult;
        fn ncclGroupStart() -> NcclResult;
        fn ncclGroupEnd() -> NcclResult;
        fn ncclAllReduce(
            send: *const c_void,
            recv: *mut c_void,
            count: usize,
            dtype: c_int,
            op: c_int,
            comm: Comm,
            stream: Stream,
        ) -> NcclResult;
        fn ncclAllGather(send: *const c_void, recv: *mut c_void, count: usize, dtype: c_int, comm: Comm, stream: Stream)
        -> NcclResult;
        fn ncclReduceScatter(
            send: *const c_void,
            recv: *mut c_void,
            count: usize,
            dtype: c_int,
            op: c_int,
            comm: Comm,
            stream: Stream,
        ) -> NcclResult;
        fn ncclBroadcast(
            send: *const c_void,
            recv: *mut c_void,
            count: usize,
            dtype: c_int,
            root: c_int,
            comm: Comm,
            stream: Stream,
        ) -> NcclResult;
        fn ncclSend(send: *const c_void, count: usize, dtype: c_int, peer: c_int, comm: Comm, stream: Stream) -> NcclResult;
        fn ncclRecv(recv: *mut c_void, count: usize, dtype: c_int, peer: c_int, comm: Comm, stream: Stream) -> NcclResult;
    }
}

/// A loaded NCCL or RCCL.
pub(crate) struct Nccl {
    fns: NcclFns,
    /// E.g. `NCCL 2.27.3 (libnccl.so.2)`.
    pub describe: String,
    kind: BackendKind,
}

impl Nccl {
    fn check(&self, what: &str, r: NcclResult) -> Result<()> {
        if r == 0 {
            return Ok(());
        }
        // SAFETY: the library returns a static NUL-terminated text for every result.
        let text = unsafe { CStr::from_ptr((self.fns.ncclGetErrorString)(r)) }.to_string_lossy();
        Err(Error::Backend { backend: self.kind, msg: format!("{what}: {text} ({r}; {})", self.describe) })
    }

    /// A new id for [`Comms::join`], made on rank 0's host and given to every other rank.
    pub(crate) fn unique_id(&self) -> Result<[u8; 128]> {
        let mut id = RawId { internal: [0; 128] };
        // SAFETY: writes one id.
        self.check("ncclGetUniqueId", unsafe { (self.fns.ncclGetUniqueId)(&mut id) })?;
        Ok(id.internal.map(|c| c as u8))
    }
}

fn load(kind: BackendKind) -> std::result::Result<Nccl, String> {
    let (what, opened) = match kind {
        #[cfg(feature = "rocm")]
        BackendKind::Rocm => {
            let names = ["librccl.so.1".to_string(), "librccl.so".to_string()];
            ("RCCL", super::hip_api::library()?.open_library("RCCL (librccl)", "RWO_NCCL_LIB", &names)?)
        }
        _ => {
            let names = ["libnccl.so.2".to_string(), "libnccl.so".to_string()];
            ("NCCL", dylib::open("NCCL (libnccl)", "RWO_NCCL_LIB", &names)?)
        }
    };
    let fns = NcclFns::resolve(&opened.lib).map_err(|e| format!("{}: {e}", opened.name))?;
    let mut v: c_int = 0;
    // SAFETY: writes one int.
    let version = match unsafe { (fns.ncclGetVersion)(&mut v) } {
        0 if v >= 10000 => format!("{}.{}.{}", v / 10000, v / 100 % 100, v % 100),
        0 => format!("{}.{}.{}", v / 1000, v / 100 % 10, v % 100),
        r => return Err(format!("{}: ncclGetVersion failed ({r})", opened.name)),
    };
    Ok(Nccl { fns, describe: format!("{what} {version} ({})", opened.name), kind })
}

/// NCCL (for `Cuda`) or RCCL (for `Rocm`), loaded at the first call (a group's creation or
/// `Device::info`); or why it cannot be.
pub(crate) fn library(kind: BackendKind) -> std::result::Result<&'static Nccl, String> {
    static NCCL: OnceLock<std::result::Result<Nccl, String>> = OnceLock::new();
    static RCCL: OnceLock<std::result::Result<Nccl, String>> = OnceLock::new();
    let cell = if kind == BackendKind::Rocm { &RCCL } else { &NCCL };
    cell.get_or_init(|| load(kind)).as_ref().map_err(Clone::clone)
}

/// `ncclDataType_t` of a dtype (every dtype of the crate has one).
fn nccl_dtype(dtype: DType) -> c_int {
    match dtype {
        DType::U8 => 1,
        DType::U32 => 3,
        DType::I64 => 4,
        DType::F16 => 6,
        DType::F32 => 7,
        DType::F64 => 8,
        DType::BF16 => 9,
    }
}

/// A reduction, as `ncclRedOp_t` numbers them.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RedOp {
    Sum = 0,
    Prod = 1,
    Max = 2,
    Min = 3,
    Avg = 4,
}

/// One collective over every local rank of a group.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Call {
    AllReduce(RedOp),
    AllGather,
    ReduceScatter(RedOp),
    Broadcast(usize),
}

/// The communicators of this process's ranks of one group, each with its device's backend.
pub(crate) struct Comms<R: Runtime> {
    nccl: &'static Nccl,
    comms: Vec<Comm>,
    backends: Vec<NativeBackend<R>>,
    size: usize,
}

// SAFETY: NCCL communicators may be used from any thread, one call at a time per communicator;
// every use here is `&self` inside one NCCL group call made by one thread at a time (the
// `Group` wrapper holds a lock around each collective).
unsafe impl<R: Runtime> Send for Comms<R> {}
// SAFETY: as for Send.
unsafe impl<R: Runtime> Sync for Comms<R> {}

impl<R: Runtime> Drop for Comms<R> {
    fn drop(&mut self) {
        for b in &self.backends {
            let _ = b.runtime().synchronize();
        }
        for &c in &self.comms {
            // SAFETY: each communicator was made by `new`/`join` and is destroyed once.
            let _ = unsafe { (self.nccl.fns.ncclCommDestroy)(c) };
        }
    }
}

impl<R: Runtime> Comms<R> {
    /// One communicator per backend, ranks in order (`ncclCommInitAll`): devices must differ.
    pub(crate) fn new(backends: Vec<NativeBackend<R>>) -> Result<Self> {
        let ordinals: Vec<c_int> = backends.iter().map(|b| b.runtime().ordinal() as c_int).collect();
        if let Some(o) = ordinals.iter().enumerate().find_map(|(i, o)| ordinals[..i].contains(o).then_some(o)) {
            let msg = format!("{} device {o} appears twice: NCCL and RCCL run one rank per GPU", R::KIND);
            return Err(Error::InvalidParam { op: "Group::new", msg });
        }
        let nccl = library(R::KIND).map_err(|reason| unavailable(R::KIND, reason))?;
        let mut comms: Vec<Comm> = vec![std::ptr::null_mut(); backends.len()];
        // SAFETY: `comms` has room for one communicator per listed device.
        let made = unsafe { (nccl.fns.ncclCommInitAll)(comms.as_mut_ptr(), comms.len() as c_int, ordinals.as_ptr()) };
        nccl.check("ncclCommInitAll", made)?;
        let size = backends.len();
        Ok(Comms { nccl, comms, backends, size })
    }

    /// This process's rank `rank` of `size` (`ncclCommInitRank`), every rank calling with the
    /// same `id`; blocks until all have joined.
    pub(crate) fn join(backend: NativeBackend<R>, id: &[u8; 128], size: usize, rank: usize) -> Result<Self> {
        let nccl = library(R::KIND).map_err(|reason| unavailable(R::KIND, reason))?;
        let raw = RawId { internal: id.map(|b| b as c_char) };
        let mut comm: Comm = std::ptr::null_mut();
        // SAFETY: writes one communicator, on the device current during the call.
        let made = backend
            .runtime()
            .on_device(|| unsafe { (nccl.fns.ncclCommInitRank)(&mut comm, size as c_int, raw, rank as c_int) })?;
        nccl.check("ncclCommInitRank", made)?;
        Ok(Comms { nccl, comms: vec![comm], backends: vec![backend], size })
    }

    /// The backend of this process's first rank (every rank's is of the same runtime).
    pub(crate) fn backend(&self) -> &NativeBackend<R> {
        &self.backends[0]
    }

    /// Which library runs the group.
    pub(crate) fn describe(&self) -> &str {
        &self.nccl.describe
    }

    /// Calls `each(local index, comm, stream)` for every local rank inside one NCCL group.
    fn grouped(&self, what: &str, mut each: impl FnMut(usize, Comm, Stream) -> NcclResult) -> Result<()> {
        let f = &self.nccl.fns;
        // SAFETY: opens a group, closed below whatever the calls inside return.
        self.nccl.check("ncclGroupStart", unsafe { (f.ncclGroupStart)() })?;
        let mut first_err = Ok(());
        for (i, (&c, b)) in self.comms.iter().zip(&self.backends).enumerate() {
            let r = each(i, c, b.runtime().raw_stream());
            if first_err.is_ok() {
                first_err = self.nccl.check(what, r);
            }
        }
        // SAFETY: closes the group opened above.
        let ended = self.nccl.check("ncclGroupEnd", unsafe { (f.ncclGroupEnd)() });
        first_err.and(ended)
    }

    /// `call` over `inputs` (per local rank: its storage and the element its tensor starts at,
    /// `count` elements each, contiguous), into new storages.
    pub(crate) fn run(
        &self,
        call: Call,
        inputs: &[(&NativeStorage<R>, usize)],
        count: usize,
        dtype: DType,
    ) -> Result<Vec<NativeStorage<R>>> {
        let out_count = match call {
            Call::AllGather => count * self.size,
            Call::ReduceScatter(_) => count / self.size,
            _ => count,
        };
        let outs = self.backends.iter().map(|b| b.storage(dtype, out_count)).collect::<Result<Vec<_>>>()?;
        if out_count == 0 {
            return Ok(outs);
        }
        let (f, t) = (&self.nccl.fns, nccl_dtype(dtype));
        let ptr = |p: DevicePtr| p.0 as usize as *mut c_void;
        self.grouped("collective", |i, comm, stream| {
            let (send, recv) = (ptr(inputs[i].0.at(inputs[i].1)), ptr(outs[i].at(0)));
            // SAFETY: `send` holds `count` elements and `recv` `out_count`, both on rank i's
            // device, alive until the collective has run (queued on that device's one stream,
            // which orders any later reuse of their blocks after it).
            unsafe {
                match call {
                    Call::AllReduce(op) => (f.ncclAllReduce)(send, recv, count, t, op as c_int, comm, stream),
                    Call::AllGather => (f.ncclAllGather)(send, recv, count, t, comm, stream),
                    Call::ReduceScatter(op) => {
                        (f.ncclReduceScatter)(send, recv, out_count, t, op as c_int, comm, stream)
                    }
                    Call::Broadcast(root) => (f.ncclBroadcast)(send, recv, count, t, root as c_int, comm, stream),
                }
            }
        })?;
        Ok(outs)
    }

    /// Point to point: every `(local rank, peer, send)` sends `count` elements from its storage
    /// to `peer`, every `(local rank, peer, recv)` receives as many from `peer`, all in one
    /// group; returns the received storages in the order of `recvs`.
    pub(crate) fn exchange(
        &self,
        sends: &[(usize, usize, &NativeStorage<R>, usize)],
        recvs: &[(usize, usize)],
        count: usize,
        dtype: DType,
    ) -> Result<Vec<NativeStorage<R>>> {
        let outs = recvs.iter().map(|&(i, _)| self.backends[i].storage(dtype, count)).collect::<Result<Vec<_>>>()?;
        if count == 0 {
            return Ok(outs);
        }
        let (f, t) = (&self.nccl.fns, nccl_dtype(dtype));
        let ptr = |p: DevicePtr| p.0 as usize as *mut c_void;
        self.grouped("send/recv", |i, comm, stream| {
            let mut r = 0;
            for &(_, peer, s, at) in sends.iter().filter(|s| s.0 == i) {
                // SAFETY: as in `run`: `count` elements on rank i's device, ordered on its stream.
                r = r.max(unsafe { (f.ncclSend)(ptr(s.at(at)), count, t, peer as c_int, comm, stream) });
            }
            for (k, &(_, peer)) in recvs.iter().enumerate().filter(|(_, r)| r.0 == i) {
                // SAFETY: as above, into the new storage `outs[k]` on rank i's device.
                r = r.max(unsafe { (f.ncclRecv)(ptr(outs[k].at(0)), count, t, peer as c_int, comm, stream) });
            }
            r
        })?;
        Ok(outs)
    }
}

fn unavailable(kind: BackendKind, reason: String) -> Error {
    Error::BackendUnavailable { kind: format!("{kind} collectives"), reason }
}
