//! cuDNN's graph API (ARCHITECTURE.md, the native backend's DNN): a computation as a graph of
//! operations, engine configs ranked by cuDNN's instant heuristics, and the first whose
//! execution plan finalizes kept as a [`Plan`]; a call is a variant pack (the tensors'
//! addresses and the workspace) executed on the plan. Every descriptor is the backend API's, set
//! attribute by attribute and destroyed on drop. Here: the pieces and one convolution; `sdpa.rs`
//! builds attention from them.

use super::super::{ConvBuffers, ConvDesc, ConvDir, Tensor4, WORKSPACE_LIMIT, Workspace};
use super::{check, data_type, dev, refused};
use crate::{DType, Error, Result};
use cudarc::cudnn::sys::{
    self, cudnnBackendAttributeName_t as Name, cudnnBackendAttributeType_t as Type,
    cudnnBackendDescriptorType_t as Kind, cudnnBackendNumericalNote_t as Note, cudnnDataType_t, cudnnStatus_t,
};
use std::ffi::c_void;

/// The tensors' unique ids, in the graph and in the variant pack: the forward conv's input,
/// the filter, its output (dx, w and dy for backward data).
const IDS: [i64; 3] = [1, 2, 3];

/// Why building stopped: cuDNN does not take the case, or a call failed.
pub(super) enum Stop {
    Refused,
    Failed(Error),
}

pub(super) type Step<T> = std::result::Result<T, Stop>;

impl From<Error> for Stop {
    fn from(e: Error) -> Stop {
        Stop::Failed(e)
    }
}

fn step(what: &str, status: cudnnStatus_t) -> Step<()> {
    if refused(status) {
        return Err(Stop::Refused);
    }
    Ok(check(what, status)?)
}

/// One backend descriptor, destroyed on drop.
pub(super) struct Desc(sys::cudnnBackendDescriptor_t);

impl Drop for Desc {
    fn drop(&mut self) {
        // SAFETY: created by cudnnBackendCreateDescriptor, destroyed once.
        let _ = unsafe { sys::cudnnBackendDestroyDescriptor(self.0) };
    }
}

impl Desc {
    pub(super) fn new(kind: Kind) -> Result<Desc> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: writes one descriptor handle.
        check("cudnnBackendCreateDescriptor", unsafe { sys::cudnnBackendCreateDescriptor(kind, &mut raw) })?;
        Ok(Desc(raw))
    }

    /// Sets attribute `name` to `values`, whose C type is the backend type `ty`.
    pub(super) fn set<V>(&self, name: Name, ty: Type, values: &[V]) -> Step<&Desc> {
        // SAFETY: the descriptor is live; `values` holds `len` elements of the C type `ty`
        // names (every caller pairs them so), read during the call.
        let st = unsafe {
            sys::cudnnBackendSetAttribute(self.0, name, ty, values.len() as i64, values.as_ptr() as *const c_void)
        };
        step(&format!("cudnnBackendSetAttribute({name:?})"), st).map(|_| self)
    }

    pub(super) fn set_i64(&self, name: Name, values: &[i64]) -> Step<&Desc> {
        self.set(name, Type::CUDNN_TYPE_INT64, values)
    }

    pub(super) fn set_descs(&self, name: Name, descs: &[&Desc]) -> Step<&Desc> {
        let raw: Vec<sys::cudnnBackendDescriptor_t> = descs.iter().map(|d| d.0).collect();
        self.set(name, Type::CUDNN_TYPE_BACKEND_DESCRIPTOR, &raw)
    }

    pub(super) fn finalize(self) -> Step<Desc> {
        // SAFETY: the descriptor is live.
        step("cudnnBackendFinalize", unsafe { sys::cudnnBackendFinalize(self.0) })?;
        Ok(self)
    }

    /// Reads up to `out.len()` elements of attribute `name` into `out`; how many it holds.
    ///
    /// # Safety
    /// `V` is the C type of `ty`; for descriptors, `out` holds live descriptors of the kind the
    /// attribute has (cuDNN fills them in).
    unsafe fn get<V>(&self, name: Name, ty: Type, out: &mut [V]) -> Step<usize> {
        let mut count = 0i64;
        // No room: a null array, for cuDNN to say how many it holds (it counts what it copies
        // into an array it is given).
        let array = if out.is_empty() { std::ptr::null_mut() } else { out.as_mut_ptr() as *mut c_void };
        // SAFETY: the caller's contract; `array` has room for `out.len()` elements.
        let st = unsafe { sys::cudnnBackendGetAttribute(self.0, name, ty, out.len() as i64, &mut count, array) };
        step(&format!("cudnnBackendGetAttribute({name:?})"), st)?;
        Ok(count.max(0) as usize)
    }
}

fn i64s<const N: usize>(v: &[usize; N]) -> [i64; N] {
    // Sizes and strides a `Tensor4` states, within the descriptors' `int` already.
    v.map(|x| x as i64)
}

/// What a graph tensor is besides its shape: read and written in memory, virtual (inside the
/// graph only), or a scalar passed by value (its variant-pack pointer is host memory).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Held {
    Memory,
    Virtual,
    ByValue,
}

/// A tensor of the graph: dtype, unique id, 4-D dims and strides in elements.
pub(super) fn tensor(dtype: cudnnDataType_t, id: i64, t: &Tensor4, align: usize, held: Held) -> Step<Desc> {
    let d = Desc::new(Kind::CUDNN_BACKEND_TENSOR_DESCRIPTOR)?;
    d.set(Name::CUDNN_ATTR_TENSOR_DATA_TYPE, Type::CUDNN_TYPE_DATA_TYPE, &[dtype])?
        .set_i64(Name::CUDNN_ATTR_TENSOR_DIMENSIONS, &i64s(&t.dims))?
        .set_i64(Name::CUDNN_ATTR_TENSOR_STRIDES, &i64s(&t.strides))?
        .set_i64(Name::CUDNN_ATTR_TENSOR_UNIQUE_ID, &[id])?
        .set_i64(Name::CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, &[align as i64])?;
    match held {
        Held::Memory => {}
        Held::Virtual => _ = d.set(Name::CUDNN_ATTR_TENSOR_IS_VIRTUAL, Type::CUDNN_TYPE_BOOLEAN, &[true])?,
        Held::ByValue => _ = d.set(Name::CUDNN_ATTR_TENSOR_IS_BY_VALUE, Type::CUDNN_TYPE_BOOLEAN, &[true])?,
    }
    d.finalize()
}

/// Whether an engine config may run data of `dtype`: deterministic, inputs not down-converted,
/// sums not in reduced precision, and no tensor cores (TF32) for f32 and f64.
fn allowed(cfg: &Desc, dtype: DType) -> Step<bool> {
    let engine = Desc::new(Kind::CUDNN_BACKEND_ENGINE_DESCRIPTOR)?;
    let mut raw = [engine.0];
    // SAFETY: the attribute is one engine descriptor; `raw` holds a live one for cuDNN to fill.
    unsafe { cfg.get(Name::CUDNN_ATTR_ENGINECFG_ENGINE, Type::CUDNN_TYPE_BACKEND_DESCRIPTOR, &mut raw)? };
    // Read as plain numbers: a note newer than these bindings is not a value of `Note`.
    let mut notes = [0u32; 32];
    // SAFETY: the notes are 4-byte enums; `notes` has room for 32.
    let n = unsafe { engine.get(Name::CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, Type::CUDNN_TYPE_NUMERICAL_NOTE, &mut notes)? };
    let full = matches!(dtype, DType::F32 | DType::F64);
    let barred = |note: u32| {
        note == Note::CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC as u32
            || note == Note::CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS as u32
            || note == Note::CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION as u32
            || (full && note == Note::CUDNN_NUMERICAL_NOTE_TENSOR_CORE as u32)
    };
    Ok(!notes[..n.min(notes.len())].iter().any(|&note| barred(note)))
}

/// An execution plan and the workspace it needs.
pub struct Plan {
    plan: Desc,
    /// Workspace bytes.
    pub workspace: usize,
}

impl Plan {
    /// The first plan cuDNN's instant heuristics rank for `c` on buffers aligned to `align`
    /// bytes that finalizes within [`WORKSPACE_LIMIT`] and runs as [`allowed`] says, or `None`
    /// when cuDNN does not take the case.
    pub fn conv(handle: sys::cudnnHandle_t, dir: ConvDir, c: &ConvDesc, align: usize) -> Result<Option<Plan>> {
        finish(conv(handle, dir, c, align))
    }

    /// Queues the convolution on the handle's stream.
    ///
    /// # Safety
    /// The buffers hold what the plan's descriptor states, aligned as it was built for; the
    /// workspace holds at least [`Plan::workspace`] bytes.
    pub unsafe fn run_conv(&self, handle: sys::cudnnHandle_t, io: &ConvBuffers, workspace: Workspace) -> Result<()> {
        let pointers = [dev(io.x), dev(io.w), dev(io.y)];
        // SAFETY: the caller's contract, the conv graph's ids in order.
        unsafe { self.run(handle, &IDS, &pointers, workspace) }
    }

    /// Executes the plan with `pointers` for the tensors of `ids`.
    ///
    /// # Safety
    /// Each pointer holds what its tensor states (device memory, or host memory for a
    /// by-value tensor, live through the call); the workspace holds [`Plan::workspace`] bytes.
    pub(super) unsafe fn run(
        &self,
        handle: sys::cudnnHandle_t,
        ids: &[i64],
        pointers: &[*mut c_void],
        workspace: Workspace,
    ) -> Result<()> {
        let failed = |stop| match stop {
            Stop::Failed(e) => e,
            Stop::Refused => Error::Backend {
                backend: crate::BackendKind::Cuda,
                msg: "cuDNN refused a variant pack for a plan it built".into(),
            },
        };
        let pack = Desc::new(Kind::CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)?;
        (|| {
            pack.set_i64(Name::CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, ids)?
                .set(Name::CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, Type::CUDNN_TYPE_VOID_PTR, pointers)?
                .set(Name::CUDNN_ATTR_VARIANT_PACK_WORKSPACE, Type::CUDNN_TYPE_VOID_PTR, &[dev(workspace.0)])?;
            Ok(())
        })()
        .map_err(failed)?;
        let pack = pack.finalize().map_err(failed)?;
        // SAFETY: the caller's contract; plan and pack are live through the call.
        check("cudnnBackendExecute", unsafe { sys::cudnnBackendExecute(handle, self.plan.0, pack.0) })
    }
}

/// A build's outcome as the callers take it: a refusal is `None`.
pub(super) fn finish(built: Step<Option<Plan>>) -> Result<Option<Plan>> {
    match built {
        Ok(plan) => Ok(plan),
        Err(Stop::Refused) => Ok(None),
        Err(Stop::Failed(e)) => Err(e),
    }
}

/// The first plan for the graph of `ops` that the instant heuristics rank, [`allowed`] for
/// data of `dtype`, finalizes and fits [`WORKSPACE_LIMIT`]; `None` when there is none.
pub(super) fn plan(handle: sys::cudnnHandle_t, ops: &[&Desc], dtype: DType) -> Step<Option<Plan>> {
    let graph = Desc::new(Kind::CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)?;
    graph
        .set(Name::CUDNN_ATTR_OPERATIONGRAPH_HANDLE, Type::CUDNN_TYPE_HANDLE, &[handle])?
        .set_descs(Name::CUDNN_ATTR_OPERATIONGRAPH_OPS, ops)?;
    let graph = graph.finalize()?;
    let heur = Desc::new(Kind::CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR)?;
    let instant = sys::cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_INSTANT;
    heur.set_descs(Name::CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, &[&graph])?.set(
        Name::CUDNN_ATTR_ENGINEHEUR_MODE,
        Type::CUDNN_TYPE_HEUR_MODE,
        &[instant],
    )?;
    let heur = heur.finalize()?;
    let results = Type::CUDNN_TYPE_BACKEND_DESCRIPTOR;
    // SAFETY: asks for the count only (no element written).
    let count =
        unsafe { heur.get::<sys::cudnnBackendDescriptor_t>(Name::CUDNN_ATTR_ENGINEHEUR_RESULTS, results, &mut [])? };
    let cfgs = (0..count).map(|_| Desc::new(Kind::CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)).collect::<Result<Vec<_>>>()?;
    let mut raw: Vec<_> = cfgs.iter().map(|d| d.0).collect();
    // SAFETY: `raw` holds `count` live engine-config descriptors for cuDNN to fill.
    let got = unsafe { heur.get(Name::CUDNN_ATTR_ENGINEHEUR_RESULTS, results, &mut raw)? };
    for cfg in cfgs.iter().take(got) {
        if !allowed(cfg, dtype)? {
            continue;
        }
        let plan = Desc::new(Kind::CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)?;
        plan.set(Name::CUDNN_ATTR_EXECUTION_PLAN_HANDLE, Type::CUDNN_TYPE_HANDLE, &[handle])?
            .set_descs(Name::CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, &[cfg])?;
        // A config the heuristics ranked may still fail to build here (as torch, try the next).
        let Ok(plan) = plan.finalize() else { continue };
        let mut ws = [0i64];
        // SAFETY: the attribute is one int64.
        unsafe { plan.get(Name::CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, Type::CUDNN_TYPE_INT64, &mut ws)? };
        let workspace = ws[0].max(0) as usize;
        if workspace <= WORKSPACE_LIMIT {
            return Ok(Some(Plan { plan, workspace }));
        }
    }
    Ok(None)
}

fn conv(handle: sys::cudnnHandle_t, dir: ConvDir, c: &ConvDesc, align: usize) -> Step<Option<Plan>> {
    let Some(dtype) = data_type(c.dtype) else { return Err(Stop::Refused) };
    let double = c.dtype == DType::F64;
    let compute = if double { cudnnDataType_t::CUDNN_DATA_DOUBLE } else { cudnnDataType_t::CUDNN_DATA_FLOAT };
    let x = tensor(dtype, IDS[0], &c.x, align, Held::Memory)?;
    let w = tensor(dtype, IDS[1], &Tensor4::packed(c.w), align, Held::Memory)?;
    let y = tensor(dtype, IDS[2], &c.y, align, Held::Memory)?;
    let conv = Desc::new(Kind::CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR)?;
    let mode = sys::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION;
    conv.set(Name::CUDNN_ATTR_CONVOLUTION_COMP_TYPE, Type::CUDNN_TYPE_DATA_TYPE, &[compute])?
        .set(Name::CUDNN_ATTR_CONVOLUTION_CONV_MODE, Type::CUDNN_TYPE_CONVOLUTION_MODE, &[mode])?
        .set_i64(Name::CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, &[2])?
        .set_i64(Name::CUDNN_ATTR_CONVOLUTION_DILATIONS, &i64s(&c.dilation))?
        .set_i64(Name::CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, &i64s(&c.stride))?
        .set_i64(Name::CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, &i64s(&c.padding))?
        .set_i64(Name::CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, &i64s(&c.padding))?;
    let conv = conv.finalize()?;
    // Groups are the filter's `C / groups` against the input's C.
    let (kind, names) = match dir {
        ConvDir::Forward => (
            Kind::CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
            [
                Name::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                Name::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                Name::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                Name::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                Name::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                Name::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
            ],
        ),
        ConvDir::BackwardData => (
            Kind::CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
            [
                Name::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                Name::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                Name::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                Name::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                Name::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                Name::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
            ],
        ),
    };
    let op = Desc::new(kind)?;
    if double {
        op.set(names[0], Type::CUDNN_TYPE_DOUBLE, &[1.0f64])?.set(names[1], Type::CUDNN_TYPE_DOUBLE, &[0.0f64])?;
    } else {
        op.set(names[0], Type::CUDNN_TYPE_FLOAT, &[1.0f32])?.set(names[1], Type::CUDNN_TYPE_FLOAT, &[0.0f32])?;
    }
    op.set_descs(names[2], &[&conv])?
        .set_descs(names[3], &[&x])?
        .set_descs(names[4], &[&w])?
        .set_descs(names[5], &[&y])?;
    let op = op.finalize()?;
    plan(handle, &[&op], c.dtype)
}
