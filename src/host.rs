//! Host data: [`CpuStorage`], the crate's buffer of elements in host memory (the cpu backend's
//! storage, and what uploads take and readbacks give on every backend), and host allocation
//! that fails with an error instead of aborting.

use crate::{DType, Result, WithDType};
use half::{bf16, f16};

/// Host memory: a vector of one dtype. Also the crate's host buffer for uploads and downloads.
#[derive(Clone, Debug, PartialEq)]
pub enum CpuStorage {
    /// u8 elements.
    U8(Vec<u8>),
    /// u32 elements.
    U32(Vec<u32>),
    /// i64 elements.
    I64(Vec<i64>),
    /// f16 elements.
    F16(Vec<f16>),
    /// bf16 elements.
    BF16(Vec<bf16>),
    /// f32 elements.
    F32(Vec<f32>),
    /// f64 elements.
    F64(Vec<f64>),
}

/// Runs `$body` with `$v` bound to the vector inside a [`CpuStorage`] (by the binding mode of
/// `$s`), whatever its dtype; the body is generic code instantiated once per dtype.
#[macro_export]
#[doc(hidden)]
macro_rules! with_storage {
    ($s:expr, $v:ident => $body:expr) => {
        match $s {
            $crate::CpuStorage::U8($v) => $body,
            $crate::CpuStorage::U32($v) => $body,
            $crate::CpuStorage::I64($v) => $body,
            $crate::CpuStorage::F16($v) => $body,
            $crate::CpuStorage::BF16($v) => $body,
            $crate::CpuStorage::F32($v) => $body,
            $crate::CpuStorage::F64($v) => $body,
        }
    };
}

/// As [`with_storage!`], for the float dtypes only; other dtypes give `$err`.
#[macro_export]
#[doc(hidden)]
macro_rules! with_float_storage {
    ($s:expr, $v:ident => $body:expr, $err:expr) => {
        match $s {
            $crate::CpuStorage::F16($v) => $body,
            $crate::CpuStorage::BF16($v) => $body,
            $crate::CpuStorage::F32($v) => $body,
            $crate::CpuStorage::F64($v) => $body,
            _ => $err,
        }
    };
}

/// Runs `$body` with `$x` and `$y` bound to the vectors of two storages of one dtype;
/// storages of different dtypes give `$err`.
#[macro_export]
#[doc(hidden)]
macro_rules! with_storage_pair {
    ($a:expr, $b:expr, ($x:ident, $y:ident) => $body:expr, $err:expr) => {
        match ($a, $b) {
            ($crate::CpuStorage::U8($x), $crate::CpuStorage::U8($y)) => $body,
            ($crate::CpuStorage::U32($x), $crate::CpuStorage::U32($y)) => $body,
            ($crate::CpuStorage::I64($x), $crate::CpuStorage::I64($y)) => $body,
            ($crate::CpuStorage::F16($x), $crate::CpuStorage::F16($y)) => $body,
            ($crate::CpuStorage::BF16($x), $crate::CpuStorage::BF16($y)) => $body,
            ($crate::CpuStorage::F32($x), $crate::CpuStorage::F32($y)) => $body,
            ($crate::CpuStorage::F64($x), $crate::CpuStorage::F64($y)) => $body,
            _ => $err,
        }
    };
}

impl CpuStorage {
    /// A buffer of `len` zeros, or [`crate::Error::OutOfMemory`] where the host cannot hold it.
    pub fn zeros(dtype: DType, len: usize) -> Result<CpuStorage> {
        Ok(match dtype {
            DType::U8 => CpuStorage::U8(try_vec(len, 0)?),
            DType::U32 => CpuStorage::U32(try_vec(len, 0)?),
            DType::I64 => CpuStorage::I64(try_vec(len, 0)?),
            DType::F16 => CpuStorage::F16(try_vec(len, f16::ZERO)?),
            DType::BF16 => CpuStorage::BF16(try_vec(len, bf16::ZERO)?),
            DType::F32 => CpuStorage::F32(try_vec(len, 0.0)?),
            DType::F64 => CpuStorage::F64(try_vec(len, 0.0)?),
        })
    }

    /// The storage of the variant that holds `T`.
    pub fn from_vec<T: WithDType>(v: Vec<T>) -> CpuStorage {
        T::into_storage(v)
    }

    /// The elements as `T`, if that is the dtype held.
    pub fn as_slice<T: WithDType>(&self) -> Option<&[T]> {
        T::from_storage(self)
    }

    /// Every element converted to f64 (exact for all but i64 past 2^53).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        with_storage!(self, v => v.iter().map(|x| x.to_f64()).collect())
    }

    /// The raw bytes, little-endian as on every supported host.
    pub fn as_bytes(&self) -> &[u8] {
        with_storage!(self, v => bytemuck::cast_slice(v))
    }

    /// A buffer of `dtype` from raw little-endian bytes; a length that is not a multiple of
    /// the dtype's size is [`crate::Error::InvalidParam`].
    pub fn from_bytes(dtype: DType, bytes: &[u8]) -> Result<CpuStorage> {
        let size = dtype.size_in_bytes();
        if !bytes.len().is_multiple_of(size) {
            return Err(crate::Error::InvalidParam {
                op: "from_bytes",
                msg: format!("{} bytes are not a whole number of {dtype} elements ({size} bytes each)", bytes.len()),
            });
        }
        let mut s = CpuStorage::zeros(dtype, bytes.len() / size)?;
        with_storage!(&mut s, v => bytemuck::cast_slice_mut(v).copy_from_slice(bytes));
        Ok(s)
    }

    /// The dtype of the elements.
    pub fn dtype(&self) -> DType {
        with_storage!(self, v => elem_dtype(v))
    }

    /// Length in elements.
    pub fn len(&self) -> usize {
        with_storage!(self, v => v.len())
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn elem_dtype<T: WithDType>(_: &[T]) -> DType {
    T::DTYPE
}

/// `len` copies of `value`; [`crate::Error::OutOfMemory`] where the host cannot hold them
/// (a failed infallible allocation would abort the process).
pub(crate) fn try_vec<T: Clone>(len: usize, value: T) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| out_of_memory("a host buffer", len.saturating_mul(size_of::<T>())))?;
    v.resize(len, value);
    Ok(v)
}

/// Fails with [`crate::Error::OutOfMemory`] unless `bytes` of host memory can be reserved now:
/// the check before a cpu reference op, whose kernels allocate their outputs as they go.
pub(crate) fn reserve_host(what: &str, bytes: usize) -> Result<()> {
    Vec::<u8>::new().try_reserve_exact(bytes).map_err(|_| out_of_memory(what, bytes))
}

fn out_of_memory(what: &str, bytes: usize) -> crate::Error {
    crate::Error::OutOfMemory { what: what.to_string(), bytes: bytes as u64 }
}

/// Host element types with a [`CpuStorage`] variant.
pub trait StorageElem: Sized {
    /// The storage of the variant that holds `Self`.
    fn into_storage(v: Vec<Self>) -> CpuStorage;
    /// The elements, if `s` is the variant that holds `Self`.
    fn from_storage(s: &CpuStorage) -> Option<&[Self]>;
}

macro_rules! storage_elem {
    ($t:ty, $v:ident) => {
        impl StorageElem for $t {
            fn into_storage(v: Vec<Self>) -> CpuStorage {
                CpuStorage::$v(v)
            }
            fn from_storage(s: &CpuStorage) -> Option<&[Self]> {
                match s {
                    CpuStorage::$v(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}
storage_elem!(u8, U8);
storage_elem!(u32, U32);
storage_elem!(i64, I64);
storage_elem!(f16, F16);
storage_elem!(bf16, BF16);
storage_elem!(f32, F32);
storage_elem!(f64, F64);
