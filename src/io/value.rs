//! GGUF's metadata values, and the little-endian cursor every GGUF read goes through: each
//! read is checked against the bytes left, and each count against what the rest of the file
//! can hold before anything is allocated for it.

use crate::{Error, Result};

const FORMAT: &str = "gguf";

/// Arrays nest at most this deep: each level costs 12 bytes of file and a frame of stack, so a
/// small file could otherwise overflow the stack.
pub(super) const MAX_DEPTH: usize = 8;

/// A GGUF metadata value, of any of the format's 13 value types.
///
/// ```
/// use rocm_wgpu_ops::io::{GgufArray, GgufValue};
///
/// let v = GgufValue::Array(GgufArray::String(vec!["a".into(), "b".into()]));
/// assert_eq!(v.type_id(), 9);
/// assert_eq!(GgufValue::U32(32).to_u64(), Some(32));
/// assert_eq!(GgufValue::from("llama").as_str(), Some("llama"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum GgufValue {
    /// `GGUF_TYPE_UINT8` (0).
    U8(u8),
    /// `GGUF_TYPE_INT8` (1).
    I8(i8),
    /// `GGUF_TYPE_UINT16` (2).
    U16(u16),
    /// `GGUF_TYPE_INT16` (3).
    I16(i16),
    /// `GGUF_TYPE_UINT32` (4).
    U32(u32),
    /// `GGUF_TYPE_INT32` (5).
    I32(i32),
    /// `GGUF_TYPE_FLOAT32` (6).
    F32(f32),
    /// `GGUF_TYPE_BOOL` (7): one byte, 0 or 1.
    Bool(bool),
    /// `GGUF_TYPE_STRING` (8): a u64 length and UTF-8 bytes.
    String(String),
    /// `GGUF_TYPE_ARRAY` (9): an item type, a u64 count and the items (arrays may nest).
    Array(GgufArray),
    /// `GGUF_TYPE_UINT64` (10).
    U64(u64),
    /// `GGUF_TYPE_INT64` (11).
    I64(i64),
    /// `GGUF_TYPE_FLOAT64` (12).
    F64(f64),
}

/// The items of a GGUF array, all of one value type (kept even when the array is empty).
#[derive(Clone, Debug, PartialEq)]
pub enum GgufArray {
    /// u8 items.
    U8(Vec<u8>),
    /// i8 items.
    I8(Vec<i8>),
    /// u16 items.
    U16(Vec<u16>),
    /// i16 items.
    I16(Vec<i16>),
    /// u32 items.
    U32(Vec<u32>),
    /// i32 items.
    I32(Vec<i32>),
    /// f32 items.
    F32(Vec<f32>),
    /// bool items.
    Bool(Vec<bool>),
    /// String items.
    String(Vec<String>),
    /// Arrays of arrays.
    Array(Vec<GgufArray>),
    /// u64 items.
    U64(Vec<u64>),
    /// i64 items.
    I64(Vec<i64>),
    /// f64 items.
    F64(Vec<f64>),
}

impl GgufValue {
    /// The value type's id in the file (`enum gguf_type`).
    pub fn type_id(&self) -> u32 {
        match self {
            GgufValue::U8(_) => 0,
            GgufValue::I8(_) => 1,
            GgufValue::U16(_) => 2,
            GgufValue::I16(_) => 3,
            GgufValue::U32(_) => 4,
            GgufValue::I32(_) => 5,
            GgufValue::F32(_) => 6,
            GgufValue::Bool(_) => 7,
            GgufValue::String(_) => 8,
            GgufValue::Array(_) => 9,
            GgufValue::U64(_) => 10,
            GgufValue::I64(_) => 11,
            GgufValue::F64(_) => 12,
        }
    }

    /// The text of a string value.
    pub fn as_str(&self) -> Option<&str> {
        if let GgufValue::String(s) = self { Some(s) } else { None }
    }

    /// An integer value of any width that is not negative, as u64.
    pub fn to_u64(&self) -> Option<u64> {
        match *self {
            GgufValue::U8(v) => Some(v.into()),
            GgufValue::U16(v) => Some(v.into()),
            GgufValue::U32(v) => Some(v.into()),
            GgufValue::U64(v) => Some(v),
            GgufValue::I8(v) => u64::try_from(v).ok(),
            GgufValue::I16(v) => u64::try_from(v).ok(),
            GgufValue::I32(v) => u64::try_from(v).ok(),
            GgufValue::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// A float value (f32 widened exactly), as f64.
    pub fn to_f64(&self) -> Option<f64> {
        match *self {
            GgufValue::F32(v) => Some(v.into()),
            GgufValue::F64(v) => Some(v),
            _ => None,
        }
    }
}

impl From<&str> for GgufValue {
    fn from(s: &str) -> Self {
        GgufValue::String(s.to_string())
    }
}

impl GgufArray {
    /// The items' value type id (`enum gguf_type`).
    pub fn item_type_id(&self) -> u32 {
        match self {
            GgufArray::U8(_) => 0,
            GgufArray::I8(_) => 1,
            GgufArray::U16(_) => 2,
            GgufArray::I16(_) => 3,
            GgufArray::U32(_) => 4,
            GgufArray::I32(_) => 5,
            GgufArray::F32(_) => 6,
            GgufArray::Bool(_) => 7,
            GgufArray::String(_) => 8,
            GgufArray::Array(_) => 9,
            GgufArray::U64(_) => 10,
            GgufArray::I64(_) => 11,
            GgufArray::F64(_) => 12,
        }
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        match self {
            GgufArray::U8(v) => v.len(),
            GgufArray::I8(v) => v.len(),
            GgufArray::U16(v) => v.len(),
            GgufArray::I16(v) => v.len(),
            GgufArray::U32(v) => v.len(),
            GgufArray::I32(v) => v.len(),
            GgufArray::F32(v) => v.len(),
            GgufArray::Bool(v) => v.len(),
            GgufArray::String(v) => v.len(),
            GgufArray::Array(v) => v.len(),
            GgufArray::U64(v) => v.len(),
            GgufArray::I64(v) => v.len(),
            GgufArray::F64(v) => v.len(),
        }
    }

    /// Whether it holds no item.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The fewest bytes one value of type `ty` takes in a file; an unknown type is an error.
fn min_size(c: &Cursor, ty: u32, at: usize) -> Result<u64> {
    Ok(match ty {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        8 | 10..=12 => 8,
        9 => 12,
        _ => return Err(c.bad(format!("unknown value type {ty} at byte {at}"))),
    })
}

/// Reads little-endian GGUF fields from a byte slice; never reads past it.
pub(super) struct Cursor<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) pos: usize,
}

macro_rules! fixed {
    ($($name:ident: $t:ty),*) => {
        $(pub(super) fn $name(&mut self, what: &str) -> Result<$t> {
            let b = self.take(size_of::<$t>() as u64, what)?;
            Ok(<$t>::from_le_bytes(b.try_into().map_err(|_| self.bad(format!("{what}: short read")))?))
        })*
    };
}

impl<'a> Cursor<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, pos: 0 }
    }

    pub(super) fn remaining(&self) -> u64 {
        (self.bytes.len() - self.pos) as u64
    }

    pub(super) fn bad(&self, msg: String) -> Error {
        Error::BadFile { format: FORMAT, msg }
    }

    /// The next `n` bytes, or `Error::Truncated` naming `what`.
    pub(super) fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            let (offset, len) = (self.pos as u64, self.bytes.len() as u64);
            return Err(Error::Truncated { format: FORMAT, what: what.to_string(), offset, needed: n, len });
        }
        let start = self.pos;
        self.pos += n as usize;
        Ok(&self.bytes[start..self.pos])
    }

    fixed!(u8: u8, i8: i8, u16: u16, i16: i16, u32: u32, i32: i32, f32: f32, u64: u64, i64: i64, f64: f64);

    /// A u64 count of things at least `each` bytes long, checked against the bytes left.
    pub(super) fn count(&mut self, what: &str, each: u64) -> Result<usize> {
        let offset = self.pos as u64;
        let count = self.u64(what)?;
        let remaining = self.remaining();
        if count.checked_mul(each).is_none_or(|b| b > remaining) {
            return Err(Error::BadCount { format: FORMAT, what: what.to_string(), count, offset, remaining });
        }
        Ok(count as usize)
    }

    /// A string: a u64 byte length and UTF-8 bytes.
    pub(super) fn string(&mut self, what: &str) -> Result<String> {
        let len = self.u64(what)?;
        let offset = self.pos as u64;
        let bytes = self.take(len, what)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_string()),
            Err(_) => Err(Error::NotUtf8 { format: FORMAT, what: what.to_string(), offset }),
        }
    }

    fn bool(&mut self, what: &str) -> Result<bool> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(self.bad(format!("{what}: bool byte {b} at byte {} is neither 0 nor 1", self.pos - 1))),
        }
    }

    /// A value of type `ty` (its payload: the type id was read before it).
    pub(super) fn value(&mut self, ty: u32, what: &str, depth: usize) -> Result<GgufValue> {
        Ok(match ty {
            0 => GgufValue::U8(self.u8(what)?),
            1 => GgufValue::I8(self.i8(what)?),
            2 => GgufValue::U16(self.u16(what)?),
            3 => GgufValue::I16(self.i16(what)?),
            4 => GgufValue::U32(self.u32(what)?),
            5 => GgufValue::I32(self.i32(what)?),
            6 => GgufValue::F32(self.f32(what)?),
            7 => GgufValue::Bool(self.bool(what)?),
            8 => GgufValue::String(self.string(what)?),
            9 => GgufValue::Array(self.array(what, depth)?),
            10 => GgufValue::U64(self.u64(what)?),
            11 => GgufValue::I64(self.i64(what)?),
            12 => GgufValue::F64(self.f64(what)?),
            _ => return Err(self.bad(format!("{what}: unknown value type {ty} before byte {}", self.pos))),
        })
    }

    /// An array: the item type, a u64 count, the items.
    fn array(&mut self, what: &str, depth: usize) -> Result<GgufArray> {
        if depth >= MAX_DEPTH {
            return Err(self.bad(format!("{what}: arrays nested deeper than {MAX_DEPTH} at byte {}", self.pos)));
        }
        let at = self.pos;
        let ty = self.u32(what)?;
        let n = self.count(&format!("{what}: array items"), min_size(self, ty, at)?)?;
        macro_rules! items {
            ($v:ident, $read:ident) => {{
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    v.push(self.$read(what)?);
                }
                GgufArray::$v(v)
            }};
        }
        Ok(match ty {
            0 => items!(U8, u8),
            1 => items!(I8, i8),
            2 => items!(U16, u16),
            3 => items!(I16, i16),
            4 => items!(U32, u32),
            5 => items!(I32, i32),
            6 => items!(F32, f32),
            7 => items!(Bool, bool),
            8 => items!(String, string),
            10 => items!(U64, u64),
            11 => items!(I64, i64),
            12 => items!(F64, f64),
            _ => {
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    v.push(self.array(what, depth + 1)?);
                }
                GgufArray::Array(v)
            }
        })
    }
}

/// Appends a string: its u64 byte length and its bytes.
pub(super) fn put_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Appends a value: its type id and its payload.
pub(super) fn put_value(out: &mut Vec<u8>, v: &GgufValue, depth: usize) -> Result<()> {
    out.extend_from_slice(&v.type_id().to_le_bytes());
    match v {
        GgufValue::U8(x) => out.push(*x),
        GgufValue::I8(x) => out.extend_from_slice(&x.to_le_bytes()),
        GgufValue::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
        GgufValue::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
        GgufValue::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
        GgufValue::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
        GgufValue::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        GgufValue::Bool(x) => out.push(u8::from(*x)),
        GgufValue::String(s) => put_string(out, s),
        GgufValue::Array(a) => put_array(out, a, depth)?,
        GgufValue::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        GgufValue::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        GgufValue::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
    }
    Ok(())
}

/// Appends an array: the item type, the count, the items (refusing nesting the reader refuses).
fn put_array(out: &mut Vec<u8>, a: &GgufArray, depth: usize) -> Result<()> {
    if depth >= MAX_DEPTH {
        return Err(Error::BadFile { format: FORMAT, msg: format!("arrays nested deeper than {MAX_DEPTH}") });
    }
    out.extend_from_slice(&a.item_type_id().to_le_bytes());
    out.extend_from_slice(&(a.len() as u64).to_le_bytes());
    macro_rules! les {
        ($v:expr) => {
            $v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()))
        };
    }
    match a {
        GgufArray::U8(v) => out.extend_from_slice(v),
        GgufArray::I8(v) => les!(v),
        GgufArray::U16(v) => les!(v),
        GgufArray::I16(v) => les!(v),
        GgufArray::U32(v) => les!(v),
        GgufArray::I32(v) => les!(v),
        GgufArray::F32(v) => les!(v),
        GgufArray::Bool(v) => out.extend(v.iter().map(|&b| u8::from(b))),
        GgufArray::String(v) => v.iter().for_each(|s| put_string(out, s)),
        GgufArray::Array(v) => {
            for inner in v {
                put_array(out, inner, depth + 1)?;
            }
        }
        GgufArray::U64(v) => les!(v),
        GgufArray::I64(v) => les!(v),
        GgufArray::F64(v) => les!(v),
    }
    Ok(())
}
