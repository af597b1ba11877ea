//! What every native launch shares, whatever the vendor: the strided-walk metadata the kernels
//! read (`Dims`, `View` in `hip/common.h`), the plan that splits a walk into launches the
//! kernels can index, kernel argument packing, and grid sizing.

use super::ptr::DevicePtr;
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
    let each: Vec<&[usize]> = operands.iter().map(|o| o.0).collect();
    let (dims, strides) = crate::layout::coalesce(shape, &each);
    let dims: Vec<u64> = dims.iter().map(|&d| d as u64).collect();
    let strides: Vec<Vec<u64>> = strides.iter().map(|s| s.iter().map(|&v| v as u64).collect()).collect();
    let offsets: Vec<u64> = operands.iter().map(|o| o.1 as u64).collect();
    let mut parts = vec![];
    split(&dims, &strides, &offsets, 0, &mut parts);
    parts
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

/// The launch of the walk `dims` through operands of `strides` from `offsets`, its first element
/// `first` of the whole walk.
pub(crate) fn part(dims: &[u64], strides: &[Vec<u64>], offsets: &[u64], first: u64) -> Part {
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

/// The most blocks of `block` threads one launch takes on every vendor: CUDA's `gridDim.x` is at
/// most 2^31 - 1, and HIP also refuses `gridDim.x * blockDim.x` past `u32::MAX`
/// (`hipErrorInvalidConfiguration`: `hipModuleLaunchKernel`, src/hip_module.cpp at hipamd
/// rocm-5.2.3 and hipamd/src/hip_module.cpp at clr rocm-6.2.2).
pub(crate) fn max_blocks(block: u32) -> u64 {
    (u64::from(u32::MAX) / u64::from(block.max(1))).min(i32::MAX as u64)
}

/// Why a launch of `grid` blocks of `block` threads would be refused (see [`max_blocks`]; CUDA
/// takes at most 65535 blocks along y and z), or `None`.
pub(crate) fn grid_limit(grid: [u32; 3], block: u32) -> Option<String> {
    let [x, y, z] = grid;
    let fits = u64::from(x) <= max_blocks(block) && y <= u16::MAX.into() && z <= u16::MAX.into();
    (!fits).then(|| format!("a grid of {x}x{y}x{z} blocks of {block} threads is past the launch limits"))
}

/// Grid and block for `n` threads' worth of work over a grid-stride loop: enough blocks to
/// fill `multiprocessors` many times over, never more than the work needs.
pub(crate) fn grid(n: u64, multiprocessors: u32) -> ([u32; 3], [u32; 3]) {
    let cap = u64::from(multiprocessors.max(1)) * 32;
    let blocks = n.div_ceil(u64::from(BLOCK)).clamp(1, cap.min(max_blocks(BLOCK)));
    ([blocks as u32, 1, 1], [BLOCK, 1, 1])
}

/// The launches of a kernel whose blocks of `block` threads each take `per_block` items, from
/// item `first` of the launch on, with no grid-stride loop: (first, items, blocks) covering
/// `count` items once, each launch within [`max_blocks`].
pub(crate) fn launches(count: u64, per_block: u64, block: u32) -> impl Iterator<Item = (u64, u64, u32)> {
    let per_block = per_block.max(1);
    let step = max_blocks(block) * per_block;
    let starts = std::iter::successors((count > 0).then_some(0), move |&at: &u64| Some(at + step));
    starts.take_while(move |&at| at < count).map(move |at| {
        let n = step.min(count - at);
        (at, n, n.div_ceil(per_block) as u32)
    })
}

/// Bytes of the widest operand in one chunk of a `_vec` kernel (`RWO_VEC_BYTES`).
pub(crate) const VEC_BYTES: u64 = 16;
/// Chunks each thread of a `_vec` kernel takes (`RWO_VEC_UNROLL`).
pub(crate) const VEC_UNROLL: u64 = 2;
/// The largest rank a `_vec` kernel walks (`RWO_VEC_MAX_RANK`).
pub(crate) const VEC_MAX_RANK: u64 = 3;
/// The side of a `_tiled` kernel's square tile (`RWO_TILE`).
pub(crate) const TILE: u64 = 32;
/// Threads of a `_tiled` block (`RWO_TILE * RWO_TILE_ROWS`).
pub(crate) const TILE_THREADS: u32 = 128;
/// Rows and columns a walk needs at least for tiles to pay.
const TILE_MIN: u64 = 16;

/// Which kernel of an op runs one part of a walk (`hip/common.h`): `{name}` (any strides,
/// grid-stride), `{name}_vec` (16-byte chunks) or `{name}_tiled` (transposed inputs through
/// shared memory), with the block count the last two need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    Strided,
    Vec { blocks: u32 },
    Tiled { blocks: u32 },
}

impl Path {
    /// The kernel name's suffix.
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            Path::Strided => "",
            Path::Vec { .. } => "_vec",
            Path::Tiled { .. } => "_tiled",
        }
    }
}

/// The `_vec` launch of `part`, if it allows one. `views` gives, for each view of the part in
/// order, the device address of its storage's element 0 and its element size; `dense` the
/// address of the contiguous output's first element of this part and its element size (`None`:
/// the views are written, as by fill). Needs rank 1 to [`VEC_MAX_RANK`]; every view of inner
/// stride 1, or 0 where read (a broadcast along the inner dim); at rank > 1 an inner dim of
/// whole chunks; and every chunk aligned to its size: views of inner stride 1 start aligned and
/// keep outer strides that are multiples of the chunk. Each thread takes [`VEC_UNROLL`] chunks.
pub(crate) fn vec_path(part: &Part, views: &[(u64, usize)], dense: Option<(u64, usize)>) -> Option<Path> {
    vec_path_unrolled(part, views, dense, VEC_UNROLL)
}

/// [`vec_path`] for a kernel whose threads take `unroll` chunks each (`map_vec<U>`).
pub(crate) fn vec_path_unrolled(
    part: &Part,
    views: &[(u64, usize)],
    dense: Option<(u64, usize)>,
    unroll: u64,
) -> Option<Path> {
    let rank = part.dims.rank as usize;
    if rank == 0 || rank as u64 > VEC_MAX_RANK {
        return None;
    }
    let widest = views.iter().chain(&dense).map(|v| v.1).max()?;
    let w = VEC_BYTES / widest as u64;
    if rank > 1 && !part.dims.d[rank - 1].is_multiple_of(w) {
        return None;
    }
    for (v, &(addr, size)) in part.views.iter().zip(views) {
        match v.s[rank - 1] {
            0 if dense.is_some() => continue,
            1 => {}
            _ => return None,
        }
        let chunk = w * size as u64;
        if !(addr + v.offset * size as u64).is_multiple_of(chunk) || v.s[..rank - 1].iter().any(|s| s % w != 0) {
            return None;
        }
    }
    if dense.is_some_and(|(addr, size)| addr % (w * size as u64) != 0) {
        return None;
    }
    let chunks = part.dims.n / w;
    let blocks = chunks.div_ceil(u64::from(BLOCK) * unroll).max(1);
    // Each block takes its own chunks (no grid-stride loop): a part too large stays strided.
    (blocks <= max_blocks(BLOCK)).then_some(Path::Vec { blocks: blocks as u32 })
}

/// Whether a `_tiled` kernel stages a view of row stride `sr` and column stride `sc` through
/// shared memory (`TileIn::staged` in `hip/common.h`): its rows are the denser dim.
fn staged(sr: u64, sc: u64) -> bool {
    sc > 1 && sr < sc
}

/// The `_tiled` launch of `part`, if it has rank 2 or 3 (`[batch,] rows, cols`), at least
/// [`TILE_MIN`] rows and columns, and a view stored transposed to the walk.
pub(crate) fn tiled_path(part: &Part) -> Option<Path> {
    let rank = part.dims.rank as usize;
    if !(2..=3).contains(&rank) {
        return None;
    }
    let (rows, cols) = (part.dims.d[rank - 2], part.dims.d[rank - 1]);
    if rows < TILE_MIN || cols < TILE_MIN || !part.views.iter().any(|v| staged(v.s[rank - 2], v.s[rank - 1])) {
        return None;
    }
    let batch = if rank == 3 { part.dims.d[0] } else { 1 };
    let blocks = batch * rows.div_ceil(TILE) * cols.div_ceil(TILE);
    // One block per tile (no grid-stride loop): a part of too many tiles stays strided.
    (blocks <= max_blocks(TILE_THREADS)).then_some(Path::Tiled { blocks: blocks as u32 })
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
    fn the_hip_header_agrees_on_chunks_and_tiles() {
        let h = super::super::HIP_COMMON;
        for (name, v) in [
            ("RWO_VEC_BYTES", VEC_BYTES),
            ("RWO_VEC_UNROLL", VEC_UNROLL),
            ("RWO_VEC_MAX_RANK", VEC_MAX_RANK),
            ("RWO_TILE", TILE),
            ("RWO_TILE_ROWS", u64::from(TILE_THREADS) / TILE),
        ] {
            assert!(h.contains(&format!("#define {name} {v}\n")), "{name} is not {v} in common.h");
        }
    }

    fn one(shape: &[usize], operands: &[Strided]) -> Part {
        let parts = plan(shape, operands);
        assert_eq!(parts.len(), 1);
        parts[0].clone()
    }

    #[test]
    fn vec_launches_need_inner_strides_0_or_1_and_aligned_chunks() {
        let (c, at) = ([1usize], 0x1000u64);
        let flat = one(&[1000], &[(&c, 0), (&c, 8)]);
        // f32: 4 per chunk, 250 chunks, 512 chunks per block.
        assert_eq!(vec_path(&flat, &[(at, 4), (at, 4)], Some((at, 4))), Some(Path::Vec { blocks: 1 }));
        assert_eq!(vec_path(&flat, &[(at, 4), (at + 4, 4)], Some((at, 4))), None);
        assert_eq!(vec_path(&flat, &[(at, 4), (at, 4)], Some((at + 8, 4))), None);
        // 2-byte inputs, 8-byte output: chunks of 2; the second input's offset 8 stays aligned.
        assert!(vec_path(&flat, &[(at, 2), (at, 2)], Some((at, 8))).is_some());
        let big = one(&[1 << 20], &[(&c, 0)]);
        assert_eq!(vec_path(&big, &[(at, 1)], Some((at, 1))), Some(Path::Vec { blocks: 128 }));
        // A row vector and a column broadcast over [6, 8] (rows of 8: whole f32 chunks); rows
        // of 6 are not whole chunks.
        let (x, row, col) = ([8usize, 1], [0usize, 1], [1usize, 0]);
        let p = one(&[6, 8], &[(&x, 0), (&row, 0), (&col, 3)]);
        assert!(vec_path(&p, &[(at, 4); 3], Some((at, 4))).is_some());
        let p = one(&[8, 6], &[(&[6, 1], 0), (&row, 0)]);
        assert_eq!(vec_path(&p, &[(at, 4); 2], Some((at, 4))), None);
        // Row strides must keep chunks aligned; inner strides past 1 never vectorize.
        let p = one(&[4, 8], &[(&[9, 1], 0)]);
        assert_eq!(vec_path(&p, &[(at, 4)], Some((at, 4))), None);
        let p = one(&[4, 8], &[(&[12, 1], 4)]);
        assert!(vec_path(&p, &[(at, 4)], Some((at, 4))).is_some());
        let p = one(&[4, 8], &[(&[1, 4], 0)]);
        assert_eq!(vec_path(&p, &[(at, 4)], Some((at, 4))), None);
        // Written views (fill) need inner stride 1; rank past VEC_MAX_RANK is left strided.
        let p = one(&[4, 8], &[(&[1, 0], 0)]);
        assert_eq!(vec_path(&p, &[(at, 4)], None), None);
        assert!(vec_path(&p, &[(at, 4)], Some((at, 4))).is_some());
        let p = one(&[2, 2, 2, 8], &[(&[100, 40, 16, 1], 0)]);
        assert_eq!(vec_path(&p, &[(at, 4)], Some((at, 4))), None);
        assert_eq!(vec_path(&one(&[], &[(&[], 0)]), &[(at, 4)], Some((at, 4))), None);
    }

    #[test]
    fn tiled_launches_need_a_transposed_view_and_room_for_tiles() {
        let t = one(&[64, 40], &[(&[1, 64], 0), (&[40, 1], 0)]);
        assert_eq!(tiled_path(&t), Some(Path::Tiled { blocks: 4 }));
        let b = one(&[3, 64, 40], &[(&[2560, 1, 64], 0)]);
        assert_eq!(tiled_path(&b), Some(Path::Tiled { blocks: 12 }));
        assert_eq!(tiled_path(&one(&[64, 40], &[(&[40, 1], 0), (&[0, 1], 0)])), None);
        assert_eq!(tiled_path(&one(&[8, 40], &[(&[1, 8], 0)])), None);
        assert_eq!(tiled_path(&one(&[4, 8, 40], &[(&[1, 4, 32], 0)])), None);
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

    #[test]
    fn grids_stay_within_hips_limit_of_threads_along_x() {
        // HIP refuses gridDim.x * blockDim.x past u32::MAX, CUDA gridDim.x past 2^31 - 1.
        assert_eq!(max_blocks(512), 8_388_607);
        assert_eq!(max_blocks(256), 16_777_215);
        assert_eq!(max_blocks(1), i32::MAX as u64);
        assert_eq!(grid_limit([8_388_607, 1, 1], 512), None);
        assert!(grid_limit([8_388_608, 1, 1], 512).is_some());
        assert!(grid_limit([1, 65_536, 1], 256).is_some());
        assert_eq!(grid_limit([16, 65_535, 1], 256), None);
        // A grid-stride launch on a device of 2^20 multiprocessors is capped by the limit.
        let (g, b) = grid(1 << 40, 1 << 20);
        assert_eq!(grid_limit(g, b[0]), None);
        assert_eq!(u64::from(g[0]), max_blocks(BLOCK));
    }

    #[test]
    fn launches_split_so_that_every_grid_is_accepted_and_items_are_covered_once() {
        // softmax across memory over 2^28 lines: 32 lines per block of 512 threads. One launch
        // of 2^23 blocks would be 2^32 threads, one past what HIP takes.
        let all: Vec<(u64, u64, u32)> = launches(1 << 28, 32, 512).collect();
        assert_eq!(all.len(), 2);
        for (i, &(first, n, blocks)) in all.iter().enumerate() {
            assert_eq!(grid_limit([blocks, 1, 1], 512), None, "launch {i}");
            assert_eq!(u64::from(blocks), n.div_ceil(32));
            let next = all.get(i + 1).map_or(1 << 28, |l| l.0);
            assert_eq!(first + n, next, "launch {i} ends where the next starts");
        }
        assert_eq!(all[0], (0, 8_388_607 * 32, 8_388_607));
        assert_eq!(launches(100, 8, 256).collect::<Vec<_>>(), [(0, 100, 13)]);
        assert_eq!(launches(0, 8, 256).count(), 0);
        // Launches of tiny blocks hit CUDA's 2^31 - 1 instead.
        let big: Vec<_> = launches(1 << 32, 1, 1).collect();
        assert_eq!(big.iter().map(|l| l.2 as u64).max(), Some(i32::MAX as u64));
        assert_eq!(big.iter().map(|l| l.1).sum::<u64>(), 1 << 32);
    }

    #[test]
    fn fast_paths_too_large_for_one_grid_stay_strided() {
        // Parts are at most MAX_ELEMS elements, so neither fast path reaches the limit today;
        // the check keeps it so if the block sizes change.
        let (c, at) = ([1usize], 0x1000u64);
        let most = one(&[MAX_ELEMS as usize], &[(&c, 0)]);
        let Some(Path::Vec { blocks }) = vec_path(&most, &[(at, 1)], Some((at, 1))) else {
            panic!("a contiguous u8 walk of 2^32 - 1 elements moves in chunks")
        };
        assert_eq!(grid_limit([blocks, 1, 1], BLOCK), None);
        let t = one(&[1 << 16, (1 << 16) - 1], &[(&[1, 1 << 16], 0)]);
        let Some(Path::Tiled { blocks }) = tiled_path(&t) else { panic!("a transposed walk is tiled") };
        assert_eq!(grid_limit([blocks, 1, 1], TILE_THREADS), None);
    }
}
