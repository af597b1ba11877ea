//! What every native launch shares, whatever the vendor: the strided-walk metadata the kernels
//! read (`Dims`, `View` in `hip/common.h`), the plan that splits a walk into launches the
//! kernels can index, kernel argument packing, and grid sizing.

use super::runtime::DevicePtr;
use crate::{DType, Scalar};
use bytemuck::{Pod, Zeroable};
use std::ffi::c_void;

/// The largest rank a kernel indexes (`RWO_MAX_DIMS` in `hip/common.h`).
pub(crate) const MAX_DIMS: usize = 8;
/// The most elements one launch walks: kernels index elements with u32.
pub(crate) const MAX_ELEMS: u64 = u32::MAX as u64;
/// Threads per block: a multiple of every warp size (32 on NVIDIA, 32 or 64 on AMD).
pub(crate) const BLOCK: u32 = 256;

/// `struct Dims` of `hip/common.h`: the row-major shape a kernel walks and its element count.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub(crate) struct Dims {
    pub rank: u64,
    pub n: u64,
    pub d: [u64; MAX_DIMS],
}

/// `struct View` of `hip/common.h`: one operand's offset and strides, in elements.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub(crate) struct View {
    pub offset: u64,
    pub contiguous: u64,
    pub s: [u64; MAX_DIMS],
}

/// One launch of a strided kernel: its shape, one view per operand, and the index (in
/// elements) of its first element in the whole walk, which is where a contiguous output
/// starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Part {
    pub dims: Dims,
    pub views: Vec<View>,
    pub first: u64,
}

/// An operand as strides and offset over the shared shape.
pub(crate) type Strided<'a> = (&'a [usize], usize);

/// Splits the row-major walk of `shape` through each operand's strides into launches: dims of
/// size 1 dropped, neighbours merged where every operand allows, and the outer dims peeled on
/// the host until each launch has at most [`MAX_DIMS`] dims and [`MAX_ELEMS`] elements.
/// Empty when the shape holds no element.
pub(crate) fn plan(shape: &[usize], operands: &[Strided]) -> Vec<Part> {
    if shape.contains(&0) {
        return vec![];
    }
    let (dims, strides) = merge(shape, operands);
    let offsets: Vec<u64> = operands.iter().map(|o| o.1 as u64).collect();
    let mut parts = vec![];
    split(&dims, &strides, &offsets, 0, &mut parts);
    parts
}

/// Drops size-1 dims and merges dim `k` into `k + 1` where `s[k] == s[k + 1] * d[k + 1]` for
/// every operand. Returns the dims and each operand's strides.
fn merge(shape: &[usize], operands: &[Strided]) -> (Vec<u64>, Vec<Vec<u64>>) {
    let keep: Vec<usize> = (0..shape.len()).filter(|&k| shape[k] != 1).collect();
    let mut dims: Vec<u64> = vec![];
    let mut strides: Vec<Vec<u64>> = vec![vec![]; operands.len()];
    for &k in &keep {
        let d = shape[k] as u64;
        let mergeable = !dims.is_empty()
            && operands.iter().enumerate().all(|(o, op)| strides[o].last() == Some(&(op.0[k] as u64 * d)));
        if mergeable {
            if let Some(last) = dims.last_mut() {
                *last *= d;
            }
            for (o, op) in operands.iter().enumerate() {
                if let Some(last) = strides[o].last_mut() {
                    *last = op.0[k] as u64;
                }
            }
        } else {
            dims.push(d);
            for (o, op) in operands.iter().enumerate() {
                strides[o].push(op.0[k] as u64);
            }
        }
    }
    (dims, strides)
}

fn split(dims: &[u64], strides: &[Vec<u64>], offsets: &[u64], first: u64, out: &mut Vec<Part>) {
    let n: u64 = dims.iter().product();
    if dims.len() <= MAX_DIMS && n <= MAX_ELEMS {
        out.push(part(dims, strides, offsets, first));
        return;
    }
    let inner: u64 = dims[1..].iter().product();
    if dims.len() <= MAX_DIMS && inner <= MAX_ELEMS {
        // Runs of whole rows of dim 0, each small enough for one launch.
        let rows = (MAX_ELEMS / inner).max(1);
        let mut start = 0;
        while start < dims[0] {
            let len = rows.min(dims[0] - start);
            let mut d = dims.to_vec();
            d[0] = len;
            let offs: Vec<u64> = offsets.iter().zip(strides).map(|(o, s)| o + start * s[0]).collect();
            out.push(part(&d, strides, &offs, first + start * inner));
            start += len;
        }
        return;
    }
    let rest: Vec<Vec<u64>> = strides.iter().map(|s| s[1..].to_vec()).collect();
    for i in 0..dims[0] {
        let offs: Vec<u64> = offsets.iter().zip(strides).map(|(o, s)| o + i * s[0]).collect();
        split(&dims[1..], &rest, &offs, first + i * inner, out);
    }
}

fn part(dims: &[u64], strides: &[Vec<u64>], offsets: &[u64], first: u64) -> Part {
    let mut d = Dims { rank: dims.len() as u64, n: dims.iter().product(), d: [0; MAX_DIMS] };
    d.d[..dims.len()].copy_from_slice(dims);
    let views = strides
        .iter()
        .zip(offsets)
        .map(|(s, &offset)| {
            let mut acc = 1;
            let mut contiguous = true;
            for (&dk, &sk) in dims.iter().zip(s).rev() {
                contiguous &= sk == acc;
                acc *= dk;
            }
            let mut v = View { offset, contiguous: contiguous as u64, s: [0; MAX_DIMS] };
            v.s[..s.len()].copy_from_slice(s);
            v
        })
        .collect();
    Part { dims: d, views, first }
}

/// One kernel argument, stored as the kernel's parameter type is laid out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Arg {
    U8(u8),
    /// The bits of an f16 or bf16 (`struct f16`/`struct bf16` of `hip/common.h`).
    U16(u16),
    U32(u32),
    I64(i64),
    F32(f32),
    F64(f64),
}

impl Arg {
    /// A scalar in the compute type of `dtype` (`num<T>::C` in `hip/common.h`): f32 for f16,
    /// bf16 and f32; f64; u32 for u8 and u32; i64.
    pub(crate) fn compute(dtype: DType, v: Scalar) -> Arg {
        match dtype {
            DType::F16 | DType::BF16 | DType::F32 => Arg::F32(v.to()),
            DType::F64 => Arg::F64(v.to()),
            DType::U8 | DType::U32 => Arg::U32(v.to()),
            DType::I64 => Arg::I64(v.to()),
        }
    }

    /// A value of `dtype` itself (cast with the crate's rules first).
    pub(crate) fn element(dtype: DType, v: Scalar) -> Arg {
        match v.to_dtype(dtype) {
            Scalar::U8(x) => Arg::U8(x),
            Scalar::U32(x) => Arg::U32(x),
            Scalar::I64(x) => Arg::I64(x),
            Scalar::F16(x) => Arg::U16(x.to_bits()),
            Scalar::BF16(x) => Arg::U16(x.to_bits()),
            Scalar::F32(x) => Arg::F32(x),
            Scalar::F64(x) => Arg::F64(x),
        }
    }
}

/// Kernel arguments: each value in its own 8-byte-aligned slot, little-endian, so that a
/// parameter of any size up to the slot reads its own bytes. The runtimes take one pointer
/// per parameter.
#[derive(Default)]
pub(crate) struct Args {
    slots: Vec<Box<[u64]>>,
}

impl Args {
    /// Appends a plain-old-data value (a scalar or a `Dims`/`View` struct).
    pub(crate) fn pod<T: Pod>(&mut self, v: &T) -> &mut Self {
        let bytes = bytemuck::bytes_of(v);
        let mut slot = vec![0u64; bytes.len().div_ceil(8).max(1)].into_boxed_slice();
        bytemuck::cast_slice_mut::<u64, u8>(&mut slot)[..bytes.len()].copy_from_slice(bytes);
        self.slots.push(slot);
        self
    }

    pub(crate) fn arg(&mut self, a: Arg) -> &mut Self {
        match a {
            Arg::U8(v) => self.pod(&v),
            Arg::U16(v) => self.pod(&v),
            Arg::U32(v) => self.pod(&v),
            Arg::I64(v) => self.pod(&v),
            Arg::F32(v) => self.pod(&v),
            Arg::F64(v) => self.pod(&v),
        }
    }

    pub(crate) fn ptr(&mut self, p: DevicePtr) -> &mut Self {
        self.pod(&p.0)
    }

    pub(crate) fn u64(&mut self, v: u64) -> &mut Self {
        self.pod(&v)
    }

    /// One pointer per argument, valid while `self` is neither moved from nor changed (each
    /// slot is its own heap allocation).
    pub(crate) fn pointers(&mut self) -> Vec<*mut c_void> {
        self.slots.iter_mut().map(|s| s.as_mut_ptr() as *mut c_void).collect()
    }
}

/// Grid and block for `n` threads' worth of work over a grid-stride loop: enough blocks to
/// fill `multiprocessors` many times over, never more than the work needs.
pub(crate) fn grid(n: u64, multiprocessors: u32) -> ([u32; 3], [u32; 3]) {
    let cap = u64::from(multiprocessors.max(1)) * 32;
    let blocks = n.div_ceil(u64::from(BLOCK)).clamp(1, cap.min(u64::from(u32::MAX)));
    ([blocks as u32, 1, 1], [BLOCK, 1, 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strides(l: &crate::Layout) -> (Vec<usize>, usize) {
        (l.strides().to_vec(), l.offset())
    }

    #[test]
    fn contiguous_operands_merge_into_one_dim() {
        let a = crate::Layout::contiguous([2, 3, 4]);
        let (s, o) = strides(&a);
        let parts = plan(a.dims(), &[(&s, o), (&s, 5)]);
        assert_eq!(parts.len(), 1);
        let p = &parts[0];
        assert_eq!((p.dims.rank, p.dims.n, p.dims.d[0]), (1, 24, 24));
        assert!(p.views.iter().all(|v| v.contiguous == 1 && v.s[0] == 1));
        assert_eq!(p.views[1].offset, 5);
    }

    #[test]
    fn broadcast_and_transposed_operands_keep_their_dims() {
        let t = crate::Layout::contiguous([4, 3]).transpose(0, 1).unwrap(); // (3, 4), strides (1, 3)
        let b = crate::Layout::contiguous([1, 4]).broadcast_as(&crate::Shape::new([3, 4])).unwrap();
        let (ts, to) = strides(&t);
        let (bs, bo) = strides(&b);
        let p = &plan(t.dims(), &[(&ts, to), (&bs, bo)])[0];
        assert_eq!((p.dims.rank, &p.dims.d[..2]), (2, &[3, 4][..]));
        assert_eq!((&p.views[0].s[..2], p.views[0].contiguous), (&[1, 3][..], 0));
        assert_eq!((&p.views[1].s[..2], p.views[1].contiguous), (&[0, 1][..], 0));
        assert!(plan(&[3, 0, 2], &[(&[0, 2, 1], 0)]).is_empty());
        let scalar = plan(&[], &[(&[], 7)]);
        assert_eq!((scalar[0].dims.rank, scalar[0].dims.n, scalar[0].views[0].offset), (0, 1, 7));
    }

    #[test]
    fn large_walks_split_into_launches_that_cover_them_once() {
        // 2^33 elements along two dims: runs of whole rows.
        let shape = [1 << 17, 1 << 16];
        let s = [1 << 18, 2]; // a column stride that keeps the dims apart
        let parts = plan(&shape, &[(&s, 0)]);
        assert!(parts.iter().all(|p| p.dims.n <= MAX_ELEMS));
        assert_eq!(parts.iter().map(|p| p.dims.n).sum::<u64>(), 1 << 33);
        assert_eq!(parts[1].first, parts[0].dims.n);
        assert_eq!(parts[1].views[0].offset, parts[0].dims.d[0] << 18);
        // Rank past MAX_DIMS: the outer dims are peeled on the host.
        let shape = [2; 10];
        let s: Vec<usize> = (0..10).map(|k| 3usize.pow(k as u32)).collect();
        let parts = plan(&shape, &[(&s, 0)]);
        assert_eq!(parts.len(), 4);
        assert!(parts.iter().all(|p| p.dims.rank == MAX_DIMS as u64 && p.dims.n == 256));
        assert_eq!(parts.iter().map(|p| p.first).collect::<Vec<_>>(), [0, 256, 512, 768]);
        assert_eq!(parts[3].views[0].offset, 1 + 3);
    }

    #[test]
    fn the_hip_header_agrees_on_the_rank_limit() {
        assert!(super::super::HIP_COMMON.contains(&format!("#define RWO_MAX_DIMS {MAX_DIMS}\n")));
    }

    #[test]
    fn args_keep_each_value_in_its_own_slot() {
        let mut a = Args::default();
        a.arg(Arg::U16(0xabcd)).arg(Arg::F64(1.5)).pod(&Dims { rank: 1, n: 2, d: [0; MAX_DIMS] });
        let p = a.pointers();
        assert_eq!(p.len(), 3);
        // SAFETY: the pointers point into `a`'s live slots of at least the sizes read.
        unsafe {
            assert_eq!(*(p[0] as *const u16), 0xabcd);
            assert_eq!(*(p[1] as *const f64), 1.5);
            assert_eq!(*(p[2] as *const u64).add(1), 2);
        }
        assert_eq!(grid(10, 132), ([1, 1, 1], [BLOCK, 1, 1]));
        assert_eq!(grid(1 << 40, 2).0[0], 64);
    }
}
