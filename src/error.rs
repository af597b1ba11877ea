//! One error type for the whole crate. Vendor statuses (wgpu, HIP, rocBLAS, MIOpen, CUDA) are
//! folded into [`Error::Backend`] with their own text.

use crate::backend::BackendKind;
use crate::{DType, Shape};

/// Every failure the crate reports. Bad input never panics; it comes back as one of these.
#[derive(thiserror::Error, Debug, Clone, PartialEq)]
pub enum Error {
    /// Two inputs must have the same shape (or one a given shape) and do not.
    #[error("{op}: shape mismatch: {lhs} vs {rhs}")]
    ShapeMismatch {
        /// The op that failed.
        op: &'static str,
        /// The first shape.
        lhs: Shape,
        /// The second shape.
        rhs: Shape,
    },

    /// Shapes that cannot be broadcast together.
    #[error("{op}: cannot broadcast {lhs} with {rhs}")]
    Broadcast {
        /// The op that failed.
        op: &'static str,
        /// The first shape.
        lhs: Shape,
        /// The second shape.
        rhs: Shape,
    },

    /// A shape that does not hold the number of elements given.
    #[error("{op}: shape {shape} holds {expected} elements, got {got}")]
    ElementCount {
        /// The op that failed.
        op: &'static str,
        /// The shape in question.
        shape: Shape,
        /// Elements the shape holds.
        expected: usize,
        /// Elements given.
        got: usize,
    },

    /// An input of a rank the op does not take.
    #[error("{op}: expected rank {expected}, got shape {shape}")]
    Rank {
        /// The op that failed.
        op: &'static str,
        /// The ranks the op takes.
        expected: &'static str,
        /// The shape in question.
        shape: Shape,
    },

    /// A dimension index past the rank of the tensor.
    #[error("{op}: dim {dim} out of range for rank {rank}")]
    DimOutOfRange {
        /// The op that failed.
        op: &'static str,
        /// The dim as given (negative: from the back).
        dim: isize,
        /// The rank of the tensor.
        rank: usize,
    },

    /// The same dimension named twice in a list of dims.
    #[error("{op}: dim {dim} given twice")]
    DuplicateDim {
        /// The op that failed.
        op: &'static str,
        /// The dim as given.
        dim: usize,
    },

    /// A dtype the op does not take (`expected` lists those it does).
    #[error("{op}: dtype {dtype} not supported, expected one of {expected}")]
    WrongDType {
        /// The op that failed.
        op: &'static str,
        /// The dtype in question.
        dtype: DType,
        /// The dtypes the op takes.
        expected: String,
    },

    /// Inputs that must share a dtype and do not.
    #[error("{op}: dtype mismatch: {lhs} vs {rhs}")]
    DTypeMismatch {
        /// The op that failed.
        op: &'static str,
        /// The first dtype.
        lhs: DType,
        /// The second dtype.
        rhs: DType,
    },

    /// A dtype that the spec allows but this backend (or adapter) truly cannot run.
    #[error("{backend} backend: {op} does not support dtype {dtype} here: {reason}")]
    UnsupportedDType {
        /// The backend that reports it.
        backend: BackendKind,
        /// The op refused.
        op: &'static str,
        /// The dtype in question.
        dtype: DType,
        /// Why, in words.
        reason: String,
    },

    /// An index id outside `0..size`, found in the data (reported, never clamped or wrapped).
    #[error("{op}: index {index} out of range for size {size}")]
    IndexOutOfRange {
        /// The op whose ids are out of range.
        op: &'static str,
        /// The id found in the data.
        index: i64,
        /// The size of the indexed dim.
        size: usize,
    },

    /// A view (narrow, transpose, reshape...) that does not fit the tensor.
    #[error("{op}: {msg}")]
    InvalidView {
        /// The op that failed.
        op: &'static str,
        /// What is wrong, in words.
        msg: String,
    },

    /// Op parameters out of their domain: zero stride, kernel larger than the padded input...
    #[error("{op}: invalid parameter: {msg}")]
    InvalidParam {
        /// The op that failed.
        op: &'static str,
        /// What is wrong, in words.
        msg: String,
    },

    /// A GGML block type id the crate does not know (in a file, or given by a caller).
    #[error("unknown GGML block type id {id}")]
    UnknownBlockType {
        /// The id found.
        id: u32,
    },

    /// A quantized tensor whose last dim is not a whole number of blocks.
    #[error("{ty}: shape {shape} is not made of blocks: its last dim must be a multiple of {block}")]
    BlockShape {
        /// The block type.
        ty: &'static str,
        /// The shape in question.
        shape: Shape,
        /// Values per block.
        block: usize,
    },

    /// Quantized bytes that do not hold the blocks of their shape (truncated, or too long).
    #[error("{ty}: shape {shape} takes {expected} bytes of blocks, got {got}")]
    QuantBytes {
        /// The block type.
        ty: &'static str,
        /// The shape in question.
        shape: Shape,
        /// Bytes the shape takes.
        expected: usize,
        /// Bytes given.
        got: usize,
    },

    /// Matmul operands whose inner dims or batch dims do not line up.
    #[error("matmul: {msg}: lhs {lhs}, rhs {rhs}")]
    MatmulShape {
        /// Which dims do not line up.
        msg: &'static str,
        /// The left operand's shape.
        lhs: Shape,
        /// The right operand's shape.
        rhs: Shape,
    },

    /// A reduction with no identity (min, max, argmin, argmax) over zero elements.
    #[error("{op}: cannot reduce over an empty extent (shape {shape}, dims {dims:?})")]
    EmptyReduction {
        /// The op that failed.
        op: &'static str,
        /// The shape in question.
        shape: Shape,
        /// The dims reduced over.
        dims: Vec<usize>,
    },

    /// Tensors of two different devices in one op.
    #[error("{op}: operands on different devices: {lhs} vs {rhs} (Tensor::to_device moves one)")]
    DeviceMismatch {
        /// The op that failed.
        op: &'static str,
        /// The first tensor's device, by its name.
        lhs: String,
        /// The second tensor's device, by its name.
        rhs: String,
    },

    /// One operand does not fit the op: `operand` names it (`ids`, `kernel`, `bias`...), `msg`
    /// says what it has and what the op expected.
    #[error("{op}: {operand} {msg}")]
    Operand {
        /// The op that failed.
        op: &'static str,
        /// Which operand.
        operand: &'static str,
        /// What it has and what was expected, in words.
        msg: String,
    },

    /// Host data of a dtype other than the one asked for.
    #[error("to_vec: tensor holds {got}, asked for {expected}")]
    HostDType {
        /// The dtype asked for.
        expected: DType,
        /// The dtype the tensor holds.
        got: DType,
    },

    /// A backend that was asked for (by `RWO_BACKEND`, `RWO_REQUIRE` or by name) and is absent.
    #[error("backend {kind} is not available: {reason}")]
    BackendUnavailable {
        /// The backend asked for.
        kind: String,
        /// Why, in words.
        reason: String,
    },

    /// A tensor or buffer past a device limit (e.g. the largest storage binding).
    #[error("{backend} backend: {what} needs {needed} bytes, past the device limit {limit}")]
    LimitExceeded {
        /// The backend that reports it.
        backend: BackendKind,
        /// What is too large.
        what: String,
        /// Bytes needed.
        needed: u64,
        /// Bytes the device allows.
        limit: u64,
    },

    /// A shape whose element count or size in bytes no memory can hold (it overflows `isize`).
    #[error("{op}: shape {shape} of {dtype} has more elements or bytes than any memory can address")]
    ShapeTooLarge {
        /// The op that would make the shape.
        op: &'static str,
        /// The shape in question.
        shape: Shape,
        /// The dtype in question.
        dtype: DType,
    },

    /// Host memory that could not be had.
    #[error("{what}: out of host memory ({bytes} bytes)")]
    OutOfMemory {
        /// What needed the memory.
        what: String,
        /// Bytes asked for.
        bytes: u64,
    },

    /// A blocking call (a sync readback, device creation or synchronisation) where nothing may
    /// block: in a browser, on WebGPU. The `_async` form of the same call works there.
    #[error("{op} would block, which a browser does not allow: use {op}_async")]
    WouldBlock {
        /// The blocking call.
        op: &'static str,
    },

    /// What a capture cannot record ([`crate::Device::capture`]): a readback, a wait or a
    /// second capture while one is under way; or a plan run with inputs unlike the captured ones.
    #[error("capture: {msg}")]
    Capture {
        /// What was asked and why it cannot be recorded or replayed.
        msg: String,
    },

    /// A model file (GGUF, safetensors) that ends inside something it declares: a header, a
    /// value, a string, the data section.
    #[error("{format}: the file ends inside {what}: {needed} bytes at byte {offset}, the file has {len}")]
    Truncated {
        /// The file format.
        format: &'static str,
        /// What was being read.
        what: String,
        /// Where it starts in the file.
        offset: u64,
        /// Bytes it takes.
        needed: u64,
        /// Bytes in the file.
        len: u64,
    },

    /// A file that does not start with its format's magic bytes.
    #[error("{format}: not a {format} file: it starts with {found:02x?}")]
    BadMagic {
        /// The file format.
        format: &'static str,
        /// The first bytes found (up to 4).
        found: Vec<u8>,
    },

    /// A file format version the crate does not read.
    #[error("{format}: version {version} is not supported (the crate reads {supported})")]
    UnsupportedVersion {
        /// The file format.
        format: &'static str,
        /// The version found.
        version: u32,
        /// The versions the crate reads, in words.
        supported: &'static str,
    },

    /// A count in a file (of tensors, values, array items, dims) that the rest of the file
    /// cannot hold: refused before anything is allocated for it.
    #[error("{format}: {what}: count {count} at byte {offset} cannot fit in the {remaining} bytes left")]
    BadCount {
        /// The file format.
        format: &'static str,
        /// What is counted.
        what: String,
        /// The count found.
        count: u64,
        /// Where the count is in the file.
        offset: u64,
        /// Bytes left after it.
        remaining: u64,
    },

    /// Text in a file (a key, a name, a string value, a header) that is not UTF-8.
    #[error("{format}: {what} at byte {offset} is not UTF-8")]
    NotUtf8 {
        /// The file format.
        format: &'static str,
        /// What the text is.
        what: String,
        /// Where it starts in the file.
        offset: u64,
    },

    /// A tensor whose data lies (partly) past the end of the file's data section.
    #[error("{format}: tensor {tensor}: data at {start}..{end} lies past the end of the data section ({len} bytes)")]
    DataOutOfRange {
        /// The file format.
        format: &'static str,
        /// The tensor's name.
        tensor: String,
        /// Its first byte, from the start of the data section.
        start: u64,
        /// One past its last byte.
        end: u64,
        /// Bytes in the data section.
        len: u64,
    },

    /// A tensor whose shape and type take a number of bytes other than the room the file gives
    /// its data (it overlaps the next tensor, or its data offsets span another size).
    #[error("{format}: tensor {tensor}: its shape and type take {expected} bytes, the file gives it {got}")]
    TensorBytes {
        /// The file format.
        format: &'static str,
        /// The tensor's name.
        tensor: String,
        /// Bytes its shape and type take.
        expected: u64,
        /// Bytes the file gives it.
        got: u64,
    },

    /// A tensor type that a file format has and the crate has no dtype for (GGUF's i8, i16,
    /// i32; safetensors' bool, i8, i32, fp8 ...), or a dtype a format cannot store (u8 in GGUF).
    #[error("{format}: tensor {tensor}: type {ty} has no counterpart here")]
    UnsupportedFileType {
        /// The file format.
        format: &'static str,
        /// The tensor's name.
        tensor: String,
        /// The type, by its name in the format (or the crate's dtype name).
        ty: String,
    },

    /// A tensor name that a file does not hold.
    #[error("{format}: no tensor named {name:?}")]
    MissingTensor {
        /// The file format.
        format: &'static str,
        /// The name asked for.
        name: String,
    },

    /// Anything else malformed in a model file (an unknown value type, a misaligned tensor
    /// offset, a name given twice, a header the format's parser rejects), or metadata that
    /// cannot be written.
    #[error("{format}: {msg}")]
    BadFile {
        /// The file format.
        format: &'static str,
        /// What is wrong, in words.
        msg: String,
    },

    /// A file that could not be opened, mapped, read or written, with the system's text.
    #[error("{path}: {msg}")]
    Io {
        /// The file (or `a writer` for a stream).
        path: String,
        /// The system's text.
        msg: String,
    },

    /// A failure reported by a driver or vendor library, with its own text.
    #[error("{backend} backend: {msg}")]
    Backend {
        /// The backend that reports it.
        backend: BackendKind,
        /// The driver's or library's text.
        msg: String,
    },
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;
