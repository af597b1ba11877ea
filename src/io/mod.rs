//! Model files: GGUF (v2 and v3) and safetensors, read into tensors on any device and written
//! from them.
//!
//! Both readers parse a file from its bytes (`&[u8]`: what a browser has) and, natively, from a
//! path through a memory map ([`GgufFile`], [`SafetensorsFile`]). A tensor's bytes go to the
//! device as they are in the file: a dtype the crate has is uploaded without conversion, ggml
//! blocks become a [`QTensor`]. Malformed files are errors, never panics, and no count read from
//! a file is allocated for before it is checked against the bytes left.

pub mod gguf;
pub mod safetensors;
mod value;

#[cfg(not(target_family = "wasm"))]
pub use gguf::GgufFile;
pub use gguf::{Gguf, GgufArray, GgufTensorInfo, GgufType, GgufValue, GgufWriter};
pub use safetensors::Safetensors;
#[cfg(not(target_family = "wasm"))]
pub use safetensors::SafetensorsFile;

use crate::{CpuStorage, Error, QTensor, Result, Shape, Tensor};

/// A tensor read from a model file: plain elements, or ggml blocks.
#[derive(Clone)]
pub enum ModelTensor {
    /// Elements of one of the crate's dtypes.
    Plain(Tensor),
    /// ggml blocks.
    Quantized(QTensor),
}

impl ModelTensor {
    /// The logical shape (of the values, also for blocks).
    pub fn shape(&self) -> &Shape {
        match self {
            ModelTensor::Plain(t) => t.shape(),
            ModelTensor::Quantized(q) => q.shape(),
        }
    }

    /// Its type in GGUF's terms.
    pub fn ty(&self) -> GgufType {
        match self {
            ModelTensor::Plain(t) => GgufType::DType(t.dtype()),
            ModelTensor::Quantized(q) => GgufType::Block(q.ty()),
        }
    }

    /// The plain tensor; `Error::Operand` for blocks (dequantize them with
    /// [`QTensor::dequantize`]).
    pub fn plain(self) -> Result<Tensor> {
        match self {
            ModelTensor::Plain(t) => Ok(t),
            ModelTensor::Quantized(q) => {
                let msg = format!("holds {} blocks, not plain elements", q.ty());
                Err(Error::Operand { op: "plain", operand: "tensor", msg })
            }
        }
    }

    /// The quantized tensor; `Error::Operand` for plain elements.
    pub fn quantized(self) -> Result<QTensor> {
        match self {
            ModelTensor::Quantized(q) => Ok(q),
            ModelTensor::Plain(t) => {
                let msg = format!("holds {} elements, not blocks", t.dtype());
                Err(Error::Operand { op: "quantized", operand: "tensor", msg })
            }
        }
    }

    /// Its bytes as a file stores them (row-major elements, little-endian; or the blocks).
    pub async fn to_bytes_async(&self) -> Result<Vec<u8>> {
        match self {
            ModelTensor::Plain(t) => Ok(host_bytes(t.to_cpu_storage_async().await?)),
            ModelTensor::Quantized(q) => q.to_bytes_async().await,
        }
    }
}

/// The bytes of host data, without a copy where it is already bytes.
fn host_bytes(s: CpuStorage) -> Vec<u8> {
    match s {
        CpuStorage::U8(v) => v,
        other => other.as_bytes().to_vec(),
    }
}

/// Maps the file at `path` read-only.
///
/// # Safety
/// The file must not change while the map lives (see [`GgufFile::open`]).
#[cfg(not(target_family = "wasm"))]
unsafe fn map(path: &std::path::Path) -> Result<memmap2::Mmap> {
    let io = |e: std::io::Error| Error::Io { path: path.display().to_string(), msg: e.to_string() };
    let file = std::fs::File::open(path).map_err(io)?;
    // SAFETY: the caller keeps the file unchanged while the map lives (this fn's contract).
    unsafe { memmap2::Mmap::map(&file) }.map_err(io)
}
