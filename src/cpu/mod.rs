//! The cpu reference backend: every op of the spec in plain Rust, for every dtype, on any
//! strided layout. It is the oracle of every test, so it favours being obviously right;
//! floats accumulate in f64.

mod conv;
mod copy;
mod elementwise;
mod index;
mod matmul;
mod nn;
mod pool;
mod random;
mod reduce;
mod sort;
mod upsample;

use crate::backend::{BackendStorage, Memory, Readback};
use crate::layout::StridedBlocks;
use crate::{BackendKind, DType, Layout, Result, WithDType};
use half::{bf16, f16};

/// Host memory: a vector of one dtype. Also the crate's host buffer for uploads and downloads.
#[derive(Clone, Debug, PartialEq)]
pub enum CpuStorage {
    U8(Vec<u8>),
    U32(Vec<u32>),
    I64(Vec<i64>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    F32(Vec<f32>),
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

    /// A buffer of `dtype` from raw little-endian bytes (`bytes.len()` a multiple of the size).
    pub fn from_bytes(dtype: DType, bytes: &[u8]) -> Result<CpuStorage> {
        let mut s = CpuStorage::zeros(dtype, bytes.len() / dtype.size_in_bytes())?;
        with_storage!(&mut s, v => bytemuck::cast_slice_mut(v).copy_from_slice(bytes));
        Ok(s)
    }
}

impl BackendStorage for CpuStorage {
    fn dtype(&self) -> DType {
        with_storage!(self, v => elem_dtype(v))
    }

    fn len(&self) -> usize {
        with_storage!(self, v => v.len())
    }
}

fn elem_dtype<T: WithDType>(_: &[T]) -> DType {
    T::DTYPE
}

/// The cpu reference backend.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuBackend;

impl Memory for CpuBackend {
    type Storage = CpuStorage;

    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn info(&self) -> Vec<(&'static str, String)> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        vec![("name", "cpu reference (single-threaded)".into()), ("host threads", threads.to_string())]
    }

    fn unsupported(&self, _: &crate::spec::OpInfo, _: DType) -> Option<String> {
        None
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<CpuStorage> {
        CpuStorage::zeros(dtype, len)
    }

    fn upload(&self, data: &CpuStorage) -> Result<CpuStorage> {
        Ok(data.clone())
    }

    fn download(&self, s: &CpuStorage) -> Readback<CpuStorage> {
        Readback::done(Ok(s.clone()))
    }

    fn synchronize(&self) -> Readback<()> {
        Readback::done(Ok(()))
    }

    fn new_flag(&self) -> Result<CpuStorage> {
        Ok(CpuStorage::U32(vec![]))
    }

    fn read_flags(&self, flags: &[&CpuStorage]) -> Readback<Vec<Result<()>>> {
        Readback::done(Ok(flags.iter().map(|_| Ok(())).collect()))
    }
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

/// The error for two storages whose dtypes should match and do not (the spec rules this out
/// before a backend is reached; this keeps a broken invariant from becoming a panic).
pub(crate) fn dtype_mismatch(op: &'static str, a: &CpuStorage, b: &CpuStorage) -> crate::Error {
    crate::Error::DTypeMismatch { op, lhs: a.dtype(), rhs: b.dtype() }
}

/// The error for a dtype an op does not take, reached past the spec.
pub(crate) fn wrong_dtype(op: &'static str, s: &CpuStorage, allowed: &[DType]) -> crate::Error {
    let expected = allowed.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ");
    crate::Error::WrongDType { op, dtype: s.dtype(), expected }
}

/// The elements of `(data, l)` in row-major order.
pub(crate) fn strided<T: Copy>(data: &[T], l: &Layout) -> Vec<T> {
    map_strided(data, l, |x| x)
}

/// `f` of every element of `(data, l)`, in row-major order.
pub(crate) fn map_strided<T: Copy, U>(data: &[T], l: &Layout, f: impl Fn(T) -> U) -> Vec<U> {
    let mut out = Vec::with_capacity(l.elem_count());
    match l.strided_blocks() {
        StridedBlocks::Single { start, len } => out.extend(data[start..start + len].iter().map(|&x| f(x))),
        StridedBlocks::Multi { starts, len } => {
            for s in starts {
                out.extend(data[s..s + len].iter().map(|&x| f(x)));
            }
        }
    }
    out
}

/// `f` of the pairs of elements of two layouts of one shape, in row-major order.
pub(crate) fn zip_strided<A: Copy, B: Copy, U>(
    a: &[A],
    al: &Layout,
    b: &[B],
    bl: &Layout,
    f: impl Fn(A, B) -> U,
) -> Vec<U> {
    debug_assert_eq!(al.shape(), bl.shape());
    match (al.contiguous_range(), bl.contiguous_range()) {
        (Some((a0, a1)), Some((b0, b1))) => a[a0..a1].iter().zip(&b[b0..b1]).map(|(&x, &y)| f(x, y)).collect(),
        _ => al.strided_index().zip(bl.strided_index()).map(|(i, j)| f(a[i], b[j])).collect(),
    }
}

/// Host element types with a [`CpuStorage`] variant.
pub trait StorageElem: Sized {
    fn into_storage(v: Vec<Self>) -> CpuStorage;
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
