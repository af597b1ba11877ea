//! The cpu reference backend: every op of the spec in plain Rust, for every dtype, on any
//! strided layout. It is the oracle of every test, so it favours being obviously right;
//! floats accumulate in f64.

mod attention;
mod conv;
mod copy;
mod elementwise;
mod index;
mod kquant;
mod matmul;
mod nn;
mod pool;
pub(crate) mod quant;
mod random;
mod reduce;
mod sort;
mod upsample;

pub use crate::host::CpuStorage;

use crate::backend::{BackendKind, BackendStorage, Memory, Readback};
use crate::layout::StridedBlocks;
use crate::{DType, Layout, Result};

impl BackendStorage for CpuStorage {
    fn dtype(&self) -> DType {
        CpuStorage::dtype(self)
    }

    fn len(&self) -> usize {
        CpuStorage::len(self)
    }
}

/// The cpu reference backend.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuBackend;

impl crate::backend::Open for CpuBackend {
    async fn open_default() -> std::result::Result<Self, String> {
        Ok(CpuBackend)
    }
}

impl Memory for CpuBackend {
    type Storage = CpuStorage;

    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn describe(&self) -> String {
        "cpu: reference backend".into()
    }

    fn same(&self, _: &Self) -> bool {
        true
    }

    fn on_host(&self, _: crate::spec::Family) -> bool {
        true
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

    fn copy_flag(&self, f: &CpuStorage) -> Result<CpuStorage> {
        Ok(f.clone())
    }
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
