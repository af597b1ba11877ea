//! One error type for the whole crate. Vendor statuses (wgpu, HIP, rocBLAS, MIOpen, CUDA) are
//! folded into [`Error::Backend`] with their own text.

use crate::{BackendKind, DType, Shape};

/// Every failure the crate reports. Bad input never panics; it comes back as one of these.
#[derive(thiserror::Error, Debug, Clone, PartialEq)]
pub enum Error {
    /// Two inputs must have the same shape (or one a given shape) and do not.
    #[error("{op}: shape mismatch: {lhs} vs {rhs}")]
    ShapeMismatch { op: &'static str, lhs: Shape, rhs: Shape },

    /// Shapes that cannot be broadcast together.
    #[error("{op}: cannot broadcast {lhs} with {rhs}")]
    Broadcast { op: &'static str, lhs: Shape, rhs: Shape },

    /// A shape that does not hold the number of elements given.
    #[error("{op}: shape {shape} holds {expected} elements, got {got}")]
    ElementCount { op: &'static str, shape: Shape, expected: usize, got: usize },

    /// An input of a rank the op does not take.
    #[error("{op}: expected rank {expected}, got shape {shape}")]
    Rank { op: &'static str, expected: &'static str, shape: Shape },

    /// A dimension index past the rank of the tensor.
    #[error("{op}: dim {dim} out of range for rank {rank}")]
    DimOutOfRange { op: &'static str, dim: isize, rank: usize },

    /// The same dimension named twice in a list of dims.
    #[error("{op}: dim {dim} given twice")]
    DuplicateDim { op: &'static str, dim: usize },

    /// A dtype the op does not take (`expected` lists those it does).
    #[error("{op}: dtype {dtype} not supported, expected one of {expected}")]
    WrongDType { op: &'static str, dtype: DType, expected: String },

    /// Inputs that must share a dtype and do not.
    #[error("{op}: dtype mismatch: {lhs} vs {rhs}")]
    DTypeMismatch { op: &'static str, lhs: DType, rhs: DType },

    /// A dtype that the spec allows but this backend (or adapter) truly cannot run.
    #[error("{backend} backend: {op} does not support dtype {dtype} here: {reason}")]
    UnsupportedDType { backend: BackendKind, op: &'static str, dtype: DType, reason: String },

    /// An index id outside `0..size`, found in the data (reported, never clamped or wrapped).
    #[error("{op}: index {index} out of range for size {size}")]
    IndexOutOfRange { op: &'static str, index: i64, size: usize },

    /// A view (narrow, transpose, reshape...) that does not fit the tensor.
    #[error("{op}: {msg}")]
    InvalidView { op: &'static str, msg: String },

    /// Op parameters out of their domain: zero stride, kernel larger than the padded input...
    #[error("{op}: invalid parameter: {msg}")]
    InvalidParam { op: &'static str, msg: String },

    /// Matmul operands whose inner dims or batch dims do not line up.
    #[error("matmul: {msg}: lhs {lhs}, rhs {rhs}")]
    MatmulShape { msg: &'static str, lhs: Shape, rhs: Shape },

    /// A reduction with no identity (min, max, argmin, argmax) over zero elements.
    #[error("{op}: cannot reduce over an empty extent (shape {shape}, dims {dims:?})")]
    EmptyReduction { op: &'static str, shape: Shape, dims: Vec<usize> },

    /// Tensors of two different devices in one op.
    #[error("{op}: tensors live on different devices: {lhs} and {rhs}")]
    DeviceMismatch { op: &'static str, lhs: String, rhs: String },

    /// Host data of a dtype other than the one asked for.
    #[error("to_vec: tensor holds {got}, asked for {expected}")]
    HostDType { expected: DType, got: DType },

    /// A backend that was asked for (by `RWO_BACKEND`, `RWO_REQUIRE` or by name) and is absent.
    #[error("backend {kind} is not available: {reason}")]
    BackendUnavailable { kind: String, reason: String },

    /// A tensor or buffer past a device limit (e.g. the largest storage binding).
    #[error("{backend} backend: {what} needs {needed} bytes, past the device limit {limit}")]
    LimitExceeded { backend: BackendKind, what: String, needed: u64, limit: u64 },

    /// A shape whose element count or size in bytes no memory can hold (it overflows `isize`).
    #[error("{op}: shape {shape} of {dtype} has more elements or bytes than any memory can address")]
    ShapeTooLarge { op: &'static str, shape: Shape, dtype: DType },

    /// Host memory that could not be had.
    #[error("{what}: out of host memory ({bytes} bytes)")]
    OutOfMemory { what: String, bytes: u64 },

    /// A blocking call (a sync readback, device creation or synchronisation) where nothing may
    /// block: in a browser, on WebGPU. The `_async` form of the same call works there.
    #[error("{op} would block, which a browser does not allow: use {op}_async")]
    WouldBlock { op: &'static str },

    /// A failure reported by a driver or vendor library, with its own text.
    #[error("{backend} backend: {msg}")]
    Backend { backend: BackendKind, msg: String },
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;
