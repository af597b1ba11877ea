//! GGUF, ggml's model file (versions 2 and 3, little-endian), read and written.
//!
//! A file is a header (magic `GGUF`, version, u64 tensor and metadata counts), the metadata
//! (key, value type, value), one info per tensor (name, rank, dims innermost first, ggml type,
//! offset in the data section), padding to `general.alignment` (32 unless set), then the data
//! section: each tensor at an aligned offset. ggml lists dims innermost first (`ne[0]` is the
//! fastest); a [`Shape`] is row-major, so a file's dims are reversed on the way in and out.

use super::ModelTensor;
use super::value::{Cursor, put_string, put_value};
use crate::spec::quant::{GgmlType, quantized_bytes};
use crate::{CpuStorage, DType, Device, Error, QTensor, Result, Shape, Tensor};
use std::collections::HashSet;
use std::io::Read as _;

pub use super::value::{GgufArray, GgufValue};

const FORMAT: &str = "gguf";
const MAGIC: &[u8; 4] = b"GGUF";
/// ggml's `GGUF_DEFAULT_ALIGNMENT`.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// The metadata key of the data section's alignment (a u32).
pub const ALIGNMENT_KEY: &str = "general.alignment";
/// ggml's `GGML_MAX_DIMS`: ggml reads no tensor of higher rank.
const MAX_RANK: usize = 4;

/// What a GGUF tensor holds in the crate's terms: elements of a dtype, or ggml blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GgufType {
    /// Plain elements: f32 (ggml id 0), f16 (1), i64 (27), f64 (28) or bf16 (30).
    DType(DType),
    /// Blocks of a quantized type.
    Block(GgmlType),
}

impl GgufType {
    /// The ggml type id (`enum ggml_type`); `None` for a dtype ggml has no type for (u8, u32).
    pub fn id(self) -> Option<u32> {
        match self {
            GgufType::DType(DType::F32) => Some(0),
            GgufType::DType(DType::F16) => Some(1),
            GgufType::DType(DType::I64) => Some(27),
            GgufType::DType(DType::F64) => Some(28),
            GgufType::DType(DType::BF16) => Some(30),
            GgufType::DType(_) => None,
            GgufType::Block(b) => Some(b.id()),
        }
    }

    /// The type of ggml id `id`, for the tensor `tensor`: `Error::UnsupportedFileType` for
    /// ggml's i8, i16 and i32 (the crate has no such dtype), `Error::UnknownBlockType` for a
    /// block type the crate does not read and for ids ggml does not have.
    pub fn from_id(id: u32, tensor: &str) -> Result<GgufType> {
        let lacking = |ty: &str| Error::UnsupportedFileType { format: FORMAT, tensor: tensor.into(), ty: ty.into() };
        Ok(GgufType::DType(match id {
            0 => DType::F32,
            1 => DType::F16,
            24 => return Err(lacking("i8")),
            25 => return Err(lacking("i16")),
            26 => return Err(lacking("i32")),
            27 => DType::I64,
            28 => DType::F64,
            30 => DType::BF16,
            _ => return GgmlType::from_id(id).map(GgufType::Block),
        }))
    }

    /// The bytes of a tensor of `shape` in this type.
    pub fn byte_len(self, shape: &Shape) -> Result<usize> {
        match self {
            GgufType::Block(b) => quantized_bytes(b, shape),
            GgufType::DType(d) => {
                let n = shape.dims().iter().try_fold(d.size_in_bytes(), |a, &x| a.checked_mul(x));
                n.filter(|&n| n <= isize::MAX as usize).ok_or_else(|| Error::ShapeTooLarge {
                    op: "gguf",
                    shape: shape.clone(),
                    dtype: d,
                })
            }
        }
    }
}

/// A tensor's entry in a GGUF file: where its data is and what it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct GgufTensorInfo {
    /// The tensor's name.
    pub name: String,
    /// Its shape, row-major (the file's dims reversed).
    pub shape: Shape,
    /// Its ggml type id (see [`GgufType::from_id`]).
    pub type_id: u32,
    /// The offset of its data from the start of the data section.
    pub offset: u64,
}

impl GgufTensorInfo {
    /// What the tensor holds (an error for a type the crate lacks).
    pub fn ty(&self) -> Result<GgufType> {
        GgufType::from_id(self.type_id, &self.name)
    }

    /// The bytes of its data.
    pub fn byte_len(&self) -> Result<usize> {
        self.ty()?.byte_len(&self.shape)
    }
}

/// A parsed GGUF file: its version, metadata and tensor infos (not its data, which stays in the
/// bytes it was parsed from: [`Gguf::tensor`] reads a tensor from them).
///
/// ```
/// use rocm_wgpu_ops::io::{Gguf, GgufValue, GgufWriter};
/// use rocm_wgpu_ops::{Device, QTensor, Tensor, spec::quant::GgmlType};
///
/// let dev = Device::cpu();
/// let w = Tensor::from_vec((0..64).map(|i| i as f32).collect::<Vec<_>>(), [2, 32], &dev)?;
/// let mut writer = GgufWriter::new();
/// writer.metadata("general.name", "tiny".into());
/// writer.tensor("w", &w)?.qtensor("q", &QTensor::quantize(&w, GgmlType::Q8_0)?)?;
/// let bytes = writer.to_bytes()?;
///
/// let file = Gguf::read(&bytes)?;
/// assert_eq!(file.get("general.name").and_then(GgufValue::as_str), Some("tiny"));
/// let back = file.tensor(&bytes, "w", &dev)?.plain()?;
/// assert_eq!(back.to_vec2::<f32>()?, w.to_vec2::<f32>()?);
/// let q = file.tensor(&bytes, "q", &dev)?.quantized()?;
/// assert_eq!((q.ty(), q.dims()), (GgmlType::Q8_0, &[2, 32][..]));
/// # Ok::<(), rocm_wgpu_ops::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Gguf {
    version: u32,
    metadata: Vec<(String, GgufValue)>,
    tensors: Vec<GgufTensorInfo>,
    alignment: u64,
    data_offset: u64,
    data_len: u64,
}

fn bad(msg: String) -> Error {
    Error::BadFile { format: FORMAT, msg }
}

/// `n` rounded up to a multiple of `align` (a power of two), or `None` past u64.
fn pad(n: u64, align: u64) -> Option<u64> {
    n.checked_add(align - 1).map(|x| x & !(align - 1))
}

/// The alignment a metadata list sets: `general.alignment` as a u32 power of two, else 32.
fn alignment_of(metadata: &[(String, GgufValue)]) -> Result<u64> {
    match metadata.iter().find(|(k, _)| k == ALIGNMENT_KEY).map(|(_, v)| v) {
        None => Ok(DEFAULT_ALIGNMENT),
        Some(&GgufValue::U32(a)) if a.is_power_of_two() => Ok(a.into()),
        Some(v) => Err(bad(format!("{ALIGNMENT_KEY} must be a u32 power of two, got {v:?}"))),
    }
}

impl Gguf {
    /// Parses a GGUF file of version 2 or 3 from its bytes (all of them: the data section is
    /// checked to hold every tensor). Every malformed input is an error, never a panic:
    /// `Truncated`, `BadMagic`, `UnsupportedVersion`, `BadCount`, `NotUtf8`, `DataOutOfRange`,
    /// `TensorBytes`, `BadFile`, or the errors of a tensor type the crate lacks.
    pub fn read(file: &[u8]) -> Result<Gguf> {
        let mut c = Cursor::new(file);
        if file.len() < 4 || &file[..4] != MAGIC {
            return Err(Error::BadMagic { format: FORMAT, found: file[..file.len().min(4)].to_vec() });
        }
        c.take(4, "the magic")?;
        let version = c.u32("the version")?;
        if !(2..=3).contains(&version) {
            return Err(Error::UnsupportedVersion { format: FORMAT, version, supported: "2 and 3, little-endian" });
        }
        // A tensor info takes at least 24 bytes (empty name, rank 0), a key-value 13.
        let (n_tensors_at, n_tensors) = (c.pos, c.u64("the tensor count")?);
        let n_kv = c.count("metadata values", 13)?;
        let mut metadata = Vec::with_capacity(n_kv);
        let mut keys = HashSet::with_capacity(n_kv);
        for i in 0..n_kv {
            let key = c.string(&format!("the key of metadata value {i}"))?;
            let ty = c.u32(&format!("the type of {key}"))?;
            let value = c.value(ty, &key, 0)?;
            if !keys.insert(key.clone()) {
                return Err(bad(format!("metadata key {key:?} given twice")));
            }
            metadata.push((key, value));
        }
        let remaining = c.remaining();
        if n_tensors.checked_mul(24).is_none_or(|b| b > remaining) {
            let what = "tensor infos".to_string();
            return Err(Error::BadCount {
                format: FORMAT,
                what,
                count: n_tensors,
                offset: n_tensors_at as u64,
                remaining,
            });
        }
        let alignment = alignment_of(&metadata)?;
        let mut tensors = Vec::with_capacity(n_tensors as usize);
        let mut names = HashSet::with_capacity(n_tensors as usize);
        for i in 0..n_tensors {
            let name = c.string(&format!("the name of tensor {i}"))?;
            let (rank_at, rank) = (c.pos as u64, c.u32(&format!("the rank of {name}"))?);
            if rank as usize > MAX_RANK {
                let (what, remaining) = (format!("dims of {name} (ggml reads at most {MAX_RANK})"), c.remaining());
                return Err(Error::BadCount { format: FORMAT, what, count: rank.into(), offset: rank_at, remaining });
            }
            let mut dims = Vec::with_capacity(rank as usize);
            for _ in 0..rank {
                let d = c.u64(&format!("the dims of {name}"))?;
                dims.push(usize::try_from(d).map_err(|_| bad(format!("tensor {name}: dim {d} past usize")))?);
            }
            dims.reverse();
            let type_id = c.u32(&format!("the type of {name}"))?;
            let offset = c.u64(&format!("the offset of {name}"))?;
            if !offset.is_multiple_of(alignment) {
                return Err(bad(format!(
                    "tensor {name}: offset {offset} is not a multiple of the alignment {alignment}"
                )));
            }
            if !names.insert(name.clone()) {
                return Err(bad(format!("tensor name {name:?} given twice")));
            }
            tensors.push(GgufTensorInfo { name, shape: Shape::new(dims), type_id, offset });
        }
        let data_offset = pad(c.pos as u64, alignment).unwrap_or(u64::MAX);
        // Writers pad to the data section even with no tensor; a file that ends first is cut.
        if data_offset > file.len() as u64 {
            let (what, offset) = ("the padding before the data section".to_string(), c.pos as u64);
            let (needed, len) = (data_offset - offset, file.len() as u64);
            return Err(Error::Truncated { format: FORMAT, what, offset, needed, len });
        }
        let data_len = (file.len() as u64).saturating_sub(data_offset);
        let gguf = Gguf { version, metadata, tensors, alignment, data_offset, data_len };
        gguf.check_ranges()?;
        Ok(gguf)
    }

    /// Every tensor of a type the crate reads lies inside the data section and leaves room to
    /// the next one.
    fn check_ranges(&self) -> Result<()> {
        let mut spans = Vec::with_capacity(self.tensors.len());
        for t in &self.tensors {
            let Ok(ty) = t.ty() else { continue };
            let len = ty.byte_len(&t.shape)? as u64;
            let end = t.offset.saturating_add(len);
            if end > self.data_len {
                let name = t.name.clone();
                return Err(Error::DataOutOfRange {
                    format: FORMAT,
                    tensor: name,
                    start: t.offset,
                    end,
                    len: self.data_len,
                });
            }
            spans.push((t.offset, len, &t.name));
        }
        spans.sort();
        for w in spans.windows(2) {
            let ((start, len, name), (next, _, _)) = (w[0], w[1]);
            if start + len > next {
                let (expected, got) = (len, next - start);
                return Err(Error::TensorBytes { format: FORMAT, tensor: name.clone(), expected, got });
            }
        }
        Ok(())
    }

    /// The format version (2 or 3).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The metadata, in file order.
    pub fn metadata(&self) -> &[(String, GgufValue)] {
        &self.metadata
    }

    /// The value of metadata `key`.
    pub fn get(&self, key: &str) -> Option<&GgufValue> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The tensor infos, in file order.
    pub fn tensors(&self) -> &[GgufTensorInfo] {
        &self.tensors
    }

    /// The info of the tensor `name`.
    pub fn tensor_info(&self, name: &str) -> Option<&GgufTensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// The data section's alignment (`general.alignment`, 32 unless set).
    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// Where the data section starts in the file.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// The bytes of tensor `name` in `file` (the bytes this was parsed from).
    pub fn tensor_bytes<'a>(&self, file: &'a [u8], name: &str) -> Result<&'a [u8]> {
        let t = self.tensor_info(name).ok_or_else(|| Error::MissingTensor { format: FORMAT, name: name.into() })?;
        let len = t.byte_len()? as u64;
        let data = usize::try_from(self.data_offset).ok().and_then(|d| file.get(d..)).unwrap_or_default();
        let range = usize::try_from(t.offset).ok().and_then(|s| Some(s..s.checked_add(len as usize)?));
        range.and_then(|r| data.get(r)).ok_or_else(|| Error::DataOutOfRange {
            format: FORMAT,
            tensor: name.into(),
            start: t.offset,
            end: t.offset.saturating_add(len),
            len: data.len() as u64,
        })
    }

    /// Tensor `name` of `file` (the bytes this was parsed from) on `device`: ggml blocks as a
    /// [`QTensor`], f32/f16/bf16/f64/i64 as a [`Tensor`] of that dtype (the bytes uploaded as
    /// they are, no conversion).
    pub fn tensor(&self, file: &[u8], name: &str, device: &Device) -> Result<ModelTensor> {
        let bytes = self.tensor_bytes(file, name)?;
        let t = self.tensor_info(name).ok_or_else(|| Error::MissingTensor { format: FORMAT, name: name.into() })?;
        Ok(match t.ty()? {
            GgufType::Block(b) => ModelTensor::Quantized(QTensor::from_bytes(b, t.shape.clone(), bytes, device)?),
            GgufType::DType(d) => {
                ModelTensor::Plain(Tensor::from_cpu(CpuStorage::from_bytes(d, bytes)?, t.shape.clone(), device)?)
            }
        })
    }

    /// Every tensor of `file` on `device`, in file order.
    pub fn all_tensors(&self, file: &[u8], device: &Device) -> Result<Vec<(String, ModelTensor)>> {
        self.tensors.iter().map(|t| Ok((t.name.clone(), self.tensor(file, &t.name, device)?))).collect()
    }
}

/// A tensor's data in a file being written: its length and the zeros after it.
type DataSpan = (usize, usize);

/// Builds a GGUF v3 file from metadata and named tensors: the metadata and tensors in the order
/// given, each tensor's data at the next multiple of the alignment (`general.alignment` if the
/// metadata sets it, else 32) and the file padded after the last, as gguf-py writes them.
#[derive(Clone, Default)]
pub struct GgufWriter {
    metadata: Vec<(String, GgufValue)>,
    tensors: Vec<(String, ModelTensor)>,
}

impl GgufWriter {
    /// A writer with no metadata and no tensor.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets metadata `key` (in place where it was set before, else after the others).
    pub fn metadata(&mut self, key: &str, value: GgufValue) -> &mut Self {
        match self.metadata.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value,
            None => self.metadata.push((key.to_string(), value)),
        }
        self
    }

    /// Adds a tensor of f32, f16, bf16, f64 or i64 (any layout: written row-major);
    /// `Error::UnsupportedFileType` for u8 and u32, which ggml has no type for.
    pub fn tensor(&mut self, name: &str, t: &Tensor) -> Result<&mut Self> {
        if GgufType::DType(t.dtype()).id().is_none() {
            return Err(Error::UnsupportedFileType { format: FORMAT, tensor: name.into(), ty: t.dtype().to_string() });
        }
        self.add(name, ModelTensor::Plain(t.clone()))
    }

    /// Adds a quantized tensor (its blocks are written as they are).
    pub fn qtensor(&mut self, name: &str, q: &QTensor) -> Result<&mut Self> {
        self.add(name, ModelTensor::Quantized(q.clone()))
    }

    fn add(&mut self, name: &str, t: ModelTensor) -> Result<&mut Self> {
        if self.tensors.iter().any(|(n, _)| n == name) {
            return Err(bad(format!("tensor name {name:?} given twice")));
        }
        if t.shape().rank() > MAX_RANK {
            return Err(bad(format!("tensor {name}: rank {} past ggml's {MAX_RANK}", t.shape().rank())));
        }
        self.tensors.push((name.to_string(), t));
        Ok(self)
    }

    /// The header, metadata and tensor infos, the padding after them; then, per tensor, its
    /// length and the padding after it.
    fn header(&self) -> Result<(Vec<u8>, u64, Vec<DataSpan>)> {
        let alignment = alignment_of(&self.metadata)?;
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&3u32.to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.metadata.len() as u64).to_le_bytes());
        for (key, value) in &self.metadata {
            put_string(&mut out, key);
            put_value(&mut out, value, 0)?;
        }
        let (mut offset, mut lens) = (0u64, Vec::with_capacity(self.tensors.len()));
        for (name, t) in &self.tensors {
            let ty = t.ty();
            let len = ty.byte_len(t.shape())?;
            put_string(&mut out, name);
            out.extend_from_slice(&(t.shape().rank() as u32).to_le_bytes());
            t.shape().dims().iter().rev().for_each(|&d| out.extend_from_slice(&(d as u64).to_le_bytes()));
            out.extend_from_slice(&ty.id().unwrap_or_default().to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
            let padded = pad(len as u64, alignment).ok_or_else(|| bad(format!("tensor {name} too large")))?;
            offset = offset.checked_add(padded).ok_or_else(|| bad("tensors too large".into()))?;
            lens.push((len, (padded - len as u64) as usize));
        }
        let padding = pad(out.len() as u64, alignment).unwrap_or_default() - out.len() as u64;
        Ok((out, padding, lens))
    }

    /// Writes the file to `w`, reading each tensor back as it goes. Blocks until the GPU is
    /// done; in a browser use [`GgufWriter::write_async`].
    pub fn write(&self, w: &mut impl std::io::Write) -> Result<()> {
        crate::block::block_on_result("write", self.write_async(w))
    }

    /// [`GgufWriter::write`] without blocking on the readbacks: the form that works in a browser.
    pub async fn write_async(&self, w: &mut impl std::io::Write) -> Result<()> {
        let io = |e: std::io::Error| Error::Io { path: "a GGUF writer".into(), msg: e.to_string() };
        // Padding is streamed, not allocated: an alignment may be as large as a u32 allows.
        let zeros = |n: u64, w: &mut _| std::io::copy(&mut std::io::repeat(0).take(n), w).map(drop);
        let (header, padding, lens) = self.header()?;
        w.write_all(&header).map_err(io)?;
        zeros(padding, w).map_err(io)?;
        for ((_, t), (len, padding)) in self.tensors.iter().zip(lens) {
            let bytes = t.to_bytes_async().await?;
            if bytes.len() != len {
                return Err(bad(format!("a tensor read back {} bytes, its header says {len}", bytes.len())));
            }
            w.write_all(&bytes).map_err(io)?;
            zeros(padding as u64, w).map_err(io)?;
        }
        Ok(())
    }

    /// The file's bytes. Blocks until the GPU is done; in a browser use
    /// [`GgufWriter::to_bytes_async`].
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        crate::block::block_on_result("to_bytes", self.to_bytes_async())
    }

    /// [`GgufWriter::to_bytes`] without blocking: the form that works in a browser.
    pub async fn to_bytes_async(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_async(&mut out).await?;
        Ok(out)
    }
}

/// A GGUF file memory-mapped from disk (natively): the parsed header and the bytes it was
/// parsed from, which tensors are read from without copying the file into memory.
#[cfg(not(target_family = "wasm"))]
pub struct GgufFile {
    map: memmap2::Mmap,
    gguf: Gguf,
}

#[cfg(not(target_family = "wasm"))]
impl GgufFile {
    /// Maps and parses the file at `path`.
    ///
    /// # Safety
    /// The file is mapped, not read: it must not be changed or truncated (by this or another
    /// process) while the returned value lives, or reads of it may see changing bytes or fault.
    pub unsafe fn open(path: impl AsRef<std::path::Path>) -> Result<GgufFile> {
        // SAFETY: the caller keeps the file unchanged while the map lives (this fn's contract).
        let map = unsafe { super::map(path.as_ref())? };
        let gguf = Gguf::read(&map)?;
        Ok(GgufFile { map, gguf })
    }

    /// The parsed header.
    pub fn gguf(&self) -> &Gguf {
        &self.gguf
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Tensor `name` on `device` (see [`Gguf::tensor`]).
    pub fn tensor(&self, name: &str, device: &Device) -> Result<ModelTensor> {
        self.gguf.tensor(&self.map, name, device)
    }
}
