//! safetensors (Hugging Face's tensor file: a u64 header length, a JSON header naming each
//! tensor's dtype, shape and byte range, then the data), read and written through the
//! `safetensors` crate.

use super::host_bytes;
use crate::{CpuStorage, DType, Device, Error, Result, Shape, Tensor};
use ::safetensors::tensor::Metadata;
use ::safetensors::{SafeTensorError, SafeTensors, View};

/// The `safetensors` crate's dtype (a file's dtype names), so it can be named without adding it.
pub use ::safetensors::Dtype;
use std::borrow::Cow;
use std::collections::HashMap;

const FORMAT: &str = "safetensors";

/// The crate's dtype of a safetensors dtype; `None` where the crate has none (bool, i8, i16,
/// u16, i32, u64, the fp8/fp6/fp4 types, c64).
pub fn dtype_of(d: Dtype) -> Option<DType> {
    Some(match d {
        Dtype::U8 => DType::U8,
        Dtype::U32 => DType::U32,
        Dtype::I64 => DType::I64,
        Dtype::F16 => DType::F16,
        Dtype::BF16 => DType::BF16,
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        _ => return None,
    })
}

/// The safetensors dtype of one of the crate's dtypes (every one has its own).
pub fn file_dtype(d: DType) -> Dtype {
    match d {
        DType::U8 => Dtype::U8,
        DType::U32 => Dtype::U32,
        DType::I64 => Dtype::I64,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
    }
}

/// A parsed safetensors file: its header (tensor names, dtypes, shapes, byte ranges, and the
/// free-form `__metadata__`), not its data, which stays in the bytes it was parsed from.
///
/// ```
/// use rocm_wgpu_ops::io::{Safetensors, safetensors};
/// use rocm_wgpu_ops::{Device, Tensor};
///
/// let dev = Device::cpu();
/// let a = Tensor::from_vec(vec![1f32, 2., 3., 4.], [2, 2], &dev)?;
/// let ids = Tensor::from_vec(vec![7u32, 8], [2], &dev)?;
/// let bytes = safetensors::write(&[("a", &a), ("ids", &ids)], None)?;
///
/// let file = Safetensors::read(&bytes)?;
/// assert_eq!(file.names(), ["a", "ids"]);
/// assert_eq!(file.tensor(&bytes, "ids", &dev)?.to_vec::<u32>()?, [7, 8]);
/// # Ok::<(), rocm_wgpu_ops::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Safetensors {
    meta: Metadata,
    /// Where the data section starts in the file.
    start: usize,
}

impl Safetensors {
    /// Parses a safetensors file's header and checks that the data section holds exactly its
    /// tensors: `Truncated`, `BadCount` (a header length past the crate's 100 MB limit),
    /// `NotUtf8`, `TensorBytes` (a byte range that is not its shape times its dtype),
    /// `BadFile` (bad JSON, ranges out of order, bytes after the last tensor).
    pub fn read(file: &[u8]) -> Result<Safetensors> {
        let (n, meta) = SafeTensors::read_metadata(file).map_err(|e| error(file, e))?;
        Ok(Safetensors { meta, start: 8 + n })
    }

    /// The tensor names, in the order of their data in the file.
    pub fn names(&self) -> Vec<String> {
        self.meta.offset_keys()
    }

    /// The free-form string metadata (`__metadata__`), if the file has any.
    pub fn metadata(&self) -> Option<&HashMap<String, String>> {
        self.meta.metadata().as_ref()
    }

    /// The dtype (in the file's terms) and shape of tensor `name`.
    pub fn info(&self, name: &str) -> Result<(Dtype, Shape)> {
        let info = self.meta.info(name).ok_or_else(|| Error::MissingTensor { format: FORMAT, name: name.into() })?;
        Ok((info.dtype, Shape::new(info.shape.clone())))
    }

    /// The bytes of tensor `name` in `file` (the bytes this was parsed from).
    pub fn tensor_bytes<'a>(&self, file: &'a [u8], name: &str) -> Result<&'a [u8]> {
        let info = self.meta.info(name).ok_or_else(|| Error::MissingTensor { format: FORMAT, name: name.into() })?;
        let (s, e) = info.data_offsets;
        let data = file.get(self.start..).unwrap_or_default();
        data.get(s..e).ok_or_else(|| Error::DataOutOfRange {
            format: FORMAT,
            tensor: name.into(),
            start: s as u64,
            end: e as u64,
            len: data.len() as u64,
        })
    }

    /// Tensor `name` of `file` on `device`, in its own dtype (the bytes uploaded as they are);
    /// `Error::UnsupportedFileType` for a dtype the crate lacks.
    pub fn tensor(&self, file: &[u8], name: &str, device: &Device) -> Result<Tensor> {
        let (dtype, shape) = self.info(name)?;
        let Some(d) = dtype_of(dtype) else {
            return Err(Error::UnsupportedFileType { format: FORMAT, tensor: name.into(), ty: format!("{dtype:?}") });
        };
        Tensor::from_cpu(CpuStorage::from_bytes(d, self.tensor_bytes(file, name)?)?, shape, device)
    }

    /// Every tensor of `file` on `device`, in file order.
    pub fn all_tensors(&self, file: &[u8], device: &Device) -> Result<Vec<(String, Tensor)>> {
        self.names().into_iter().map(|n| Ok((n.clone(), self.tensor(file, &n, device)?))).collect()
    }
}

/// The crate's error for the `safetensors` crate's, with what the header says where the
/// crate's error does not (which tensor, how many bytes).
fn error(file: &[u8], e: SafeTensorError) -> Error {
    let len = file.len() as u64;
    let header_len = file.get(..8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()));
    let bad = |msg: String| Error::BadFile { format: FORMAT, msg };
    match e {
        SafeTensorError::HeaderTooSmall => {
            Error::Truncated { format: FORMAT, what: "the header length".into(), offset: 0, needed: 8, len }
        }
        SafeTensorError::InvalidHeaderLength => {
            let needed = header_len.unwrap_or_default();
            Error::Truncated { format: FORMAT, what: "the JSON header".into(), offset: 8, needed, len }
        }
        SafeTensorError::HeaderTooLarge => Error::BadCount {
            format: FORMAT,
            what: "header bytes (at most 100000000)".into(),
            count: header_len.unwrap_or_default(),
            offset: 0,
            remaining: len.saturating_sub(8),
        },
        SafeTensorError::InvalidHeader(_) => {
            Error::NotUtf8 { format: FORMAT, what: "the JSON header".into(), offset: 8 }
        }
        SafeTensorError::TensorInvalidInfo => match mismatch(file) {
            Some((tensor, expected, got)) => Error::TensorBytes { format: FORMAT, tensor, expected, got },
            None => bad(e.to_string()),
        },
        SafeTensorError::MetadataIncompleteBuffer => {
            let start = 8u64.saturating_add(header_len.unwrap_or_default());
            match data_end(file) {
                Some(needed) if start.saturating_add(needed) > len => {
                    let what = "the data section".into();
                    Error::Truncated { format: FORMAT, what, offset: start, needed, len }
                }
                Some(end) => bad(format!("{} bytes follow the last tensor's data", len - start - end)),
                None => bad(e.to_string()),
            }
        }
        e => bad(e.to_string()),
    }
}

/// The header as JSON (where the `safetensors` crate found fault with it, to say what).
fn header_json(file: &[u8]) -> Option<serde_json::Map<String, serde_json::Value>> {
    let n = usize::try_from(u64::from_le_bytes(file.get(..8)?.try_into().ok()?)).ok()?;
    let text = std::str::from_utf8(file.get(8..8usize.checked_add(n)?)?).ok()?;
    match serde_json::from_str(text).ok()? {
        serde_json::Value::Object(m) => Some(m),
        _ => None,
    }
}

/// A tensor as the JSON header states it: name, dtype, shape, (start, end) of its data.
type Entry = (String, Dtype, Vec<usize>, (usize, usize));

/// The tensors the JSON header states.
fn header_tensors(file: &[u8]) -> Vec<Entry> {
    let Some(map) = header_json(file) else { return vec![] };
    let parse = |v: serde_json::Value| -> Option<(Dtype, Vec<usize>, (usize, usize))> {
        let v = v.as_object()?;
        let dtype = serde_json::from_value(v.get("dtype")?.clone()).ok()?;
        let shape = serde_json::from_value(v.get("shape")?.clone()).ok()?;
        Some((dtype, shape, serde_json::from_value(v.get("data_offsets")?.clone()).ok()?))
    };
    let tensors = map.into_iter().filter(|(k, _)| k != "__metadata__");
    tensors.filter_map(|(k, v)| parse(v).map(|(d, s, o)| (k, d, s, o))).collect()
}

/// The first tensor whose byte range is not its shape times its dtype: (name, expected, got).
fn mismatch(file: &[u8]) -> Option<(String, u64, u64)> {
    header_tensors(file).into_iter().find_map(|(name, dtype, shape, (s, e))| {
        let bits = shape.iter().try_fold(dtype.bitsize() as u128, |a, &d| a.checked_mul(d as u128))?;
        let got = e.checked_sub(s)? as u128;
        (bits / 8 != got).then(|| (name, u64::try_from(bits / 8).unwrap_or(u64::MAX), got as u64))
    })
}

/// Bytes of data the header declares (the end of its last range).
fn data_end(file: &[u8]) -> Option<u64> {
    header_tensors(file).iter().map(|(_, _, _, (_, e))| *e as u64).max()
}

/// A tensor's host bytes as the `safetensors` crate's writer takes them.
struct HostTensor {
    dtype: Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl View for &HostTensor {
    fn dtype(&self) -> Dtype {
        self.dtype
    }

    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.data)
    }

    fn data_len(&self) -> usize {
        self.data.len()
    }
}

/// A safetensors file of the named tensors (any device, any layout: written row-major) and
/// the string `metadata`. Blocks until the GPU is done; in a browser use [`write_async()`].
pub fn write(tensors: &[(&str, &Tensor)], metadata: Option<HashMap<String, String>>) -> Result<Vec<u8>> {
    crate::block::block_on_result("write", write_async(tensors, metadata))
}

/// [`write()`] without blocking on the readbacks: the form that works in a browser.
pub async fn write_async(tensors: &[(&str, &Tensor)], metadata: Option<HashMap<String, String>>) -> Result<Vec<u8>> {
    let mut host = Vec::with_capacity(tensors.len());
    for (i, &(name, t)) in tensors.iter().enumerate() {
        if tensors[..i].iter().any(|(n, _)| *n == name) {
            return Err(Error::BadFile { format: FORMAT, msg: format!("tensor name {name:?} given twice") });
        }
        let data = host_bytes(t.to_cpu_storage_async().await?);
        host.push((name, HostTensor { dtype: file_dtype(t.dtype()), shape: t.dims().to_vec(), data }));
    }
    ::safetensors::serialize(host.iter().map(|(n, t)| (*n, t)), metadata)
        .map_err(|e| Error::BadFile { format: FORMAT, msg: e.to_string() })
}

/// A safetensors file memory-mapped from disk (natively): the parsed header and the bytes it
/// was parsed from, which tensors are read from without copying the file into memory.
#[cfg(not(target_family = "wasm"))]
pub struct SafetensorsFile {
    map: memmap2::Mmap,
    header: Safetensors,
}

#[cfg(not(target_family = "wasm"))]
impl SafetensorsFile {
    /// Maps and parses the file at `path`.
    ///
    /// # Safety
    /// The file is mapped, not read: it must not be changed or truncated (by this or another
    /// process) while the returned value lives, or reads of it may see changing bytes or fault.
    pub unsafe fn open(path: impl AsRef<std::path::Path>) -> Result<SafetensorsFile> {
        // SAFETY: the caller keeps the file unchanged while the map lives (this fn's contract).
        let map = unsafe { super::map(path.as_ref())? };
        let header = Safetensors::read(&map)?;
        Ok(SafetensorsFile { map, header })
    }

    /// The parsed header.
    pub fn header(&self) -> &Safetensors {
        &self.header
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Tensor `name` on `device` (see [`Safetensors::tensor`]).
    pub fn tensor(&self, name: &str, device: &Device) -> Result<Tensor> {
        self.header.tensor(&self.map, name, device)
    }
}

/// Writes a safetensors file of the named tensors to `path` (see [`write()`]).
#[cfg(not(target_family = "wasm"))]
pub fn write_file(
    path: impl AsRef<std::path::Path>,
    tensors: &[(&str, &Tensor)],
    metadata: Option<HashMap<String, String>>,
) -> Result<()> {
    let bytes = write(tensors, metadata)?;
    std::fs::write(path.as_ref(), bytes)
        .map_err(|e| Error::Io { path: path.as_ref().display().to_string(), msg: e.to_string() })
}
