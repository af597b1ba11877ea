//! Which GEMM kernel runs: the tile tables of matmul ([`TABLE`]) and the convolutions
//! ([`CONV`]), each entry with the measurement that chose it, and the choice for a problem
//! ([`Table::plan`]: the matrix-vector form, the tiled or cooperative kernel, split-K).

use super::problem::{Gemm, split_k};
use super::tiles::{CoopTiles, Kernel, MATVEC_MAX_M, MatVec, MvTiles, Tiles, tile_elem_size};
use crate::DType;

/// The kernel choices of the GEMM family by shape, and where each figure came from.
#[derive(Clone, Copy)]
pub(crate) struct Table {
    /// f32 problems of at least `big_from` tiles of `big`.
    pub big: Tiles,
    /// The same for f16 and bf16 (unpacking 2-byte elements shifts the balance).
    pub big16: Tiles,
    /// Smaller problems (more workgroups for the same work).
    pub small: Tiles,
    pub big_from: usize,
    /// Problems of fewer than `small_from` tiles (too few workgroups of `small` to fill the
    /// GPU).
    pub tiny: Tiles,
    pub small_from: usize,
    /// f64 (8-byte elements: half the tile for the same workgroup memory).
    pub f64: Tiles,
    /// f16 problems of at least `small_from` tiles where the adapter has 16x16x16 f16->f32
    /// cooperative matrices.
    pub coop: CoopTiles,
    /// Smaller f16 problems there.
    pub coop_small: CoopTiles,
    /// The matrix-vector kernel reading B across its rows (groups of four columns) and down
    /// its columns.
    pub matvec: MvTiles,
    pub matvec_rows: MvTiles,
    /// Problems of at most this many rows (or columns) take the matrix-vector kernels (`None`:
    /// none does).
    pub matvec_up_to: Option<usize>,
    /// Split-K for problems of too few workgroups (`None`: never split).
    pub split: Option<Split>,
    /// Tiles by the rows of C (M), in increasing `rows`: a problem takes the first band of at
    /// least its rows, where one is (empty: the tiles above by tile count alone).
    pub bands: &'static [Band],
}

/// Problems of at most `rows` rows of C take the tiles `tiled` (every float type but f64) or,
/// for f16 on cooperative matrices, `coop`: a convolution's filters are its rows, few on a wide
/// image and many on a small one, where one tile size leaves tiles half empty or too few.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Band {
    pub rows: usize,
    pub tiled: Tiles,
    pub coop: CoopTiles,
}

/// Split-K: a tiled GEMM of fewer than `tiled` workgroups (a cooperative one: `coop`) and K of
/// at least `from_k` runs K in parts (each part's products to its own f32 slice, then one sum
/// into C), as many as bring it to that many workgroups, each part at least `min_k` of K, at
/// most `most` parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Split {
    pub tiled: usize,
    pub coop: usize,
    pub from_k: usize,
    pub min_k: usize,
    pub most: usize,
}

impl Split {
    /// The parts of K for kernel `kernel` of `groups` workgroups and depth `k`.
    pub fn parts(&self, kernel: &Kernel, groups: usize, k: usize) -> usize {
        let below = match kernel {
            Kernel::Tiled(_) => self.tiled,
            Kernel::Coop(_) => self.coop,
            Kernel::MatVec(_) => return 1,
        };
        if groups == 0 || groups >= below || k < self.from_k {
            return 1;
        }
        below.div_ceil(groups).min(k / self.min_k).clamp(1, self.most)
    }
}

/// Matmul's choices. Provenance: H100 (Vulkan, driver 580.159.04), 2026-11-24. f32 4096^3:
/// 128x128x16/8x8 27.2 TFLOP/s (pad 0: 27.3, within noise), 128x128x16/8x4 23.5, 64x64x16/4x4
/// 18.7, 128x128x8/8x8 19.3. bf16 (f16 alike) 4096^3: 128x128x16/8x4 24.2, 8x8 20.1. f32
/// 1024^3 (64 large tiles): 64x64 20.9, 128x128 14.2. f16 4096^3 cooperative (two sweeps the
/// same day, each variant checked against the tiled kernel): 128x256x32/4x2 (16 subgroups)
/// fetched a step ahead into registers, one buffer (f1) 108.6-111.1 TFLOP/s, no prefetch (f0)
/// 102.4-104.2, two buffers (f2) too large; 256x128x32/2x4 f1 105.6-106.1; 128x128x16/4x2 f1
/// 97.8, f0 92.7-96.7; 128x128x32/4x2 (the old choice) f2 59.1-60.6, f0 56.6, f1 57.6;
/// 128x128x32/2x2 f1 81.9-83.3; 128x256x32/4x4 76.3; 256x256x16/4x4 48.5; unpadded 42.1;
/// staged from `vec4<f16>` bindings instead of raw words (a third run, not kept) 82.4-84.9.
/// `big_from` (two large tiles per multiprocessor of a 132-SM GPU) lies between the sizes
/// measured; f32 tiles 128x256x16/8x16 27.8 and 256x128x8/16x8 26.2 against 27.5 (noise).
///
/// Small problems (superseded by the split-K sweep below: these figures carried a fixed CPU
/// cost of ~100 us per GEMM): the GPT-2-small GEMMs (M = 128), the same GPU 2026-11-24, one sweep, us per
/// GEMM for QKV [128,768]x[768,2304] / q.k^T [12,128,64]x[12,64,128] / att.v / projection /
/// MLP up / down. f32: 64x64x16/4x4 141/132/107/145/137/218, 32x64x16/4x4 130/94/127/105/103/
/// 179, 32x32x16 112/88/105/107/157/143, 32x32x32 138/97/80/93/135/157, 16x64x16 120/58/100/
/// 135/117/179 (the small ones within 6% of each other in all, 16% under 64x64). f16 tiled
/// 32x64x16 118/122/100/169/129/214; every cooperative configuration 218-373 (the big one
/// 261/316/349/365/223/278; 128x128, 128x64, 64x128, 64x64 and 32x32 tiles, f0 to f2 alike):
/// they pay only on large problems (logits [128,768]x[768,50257], 393 tiles: cooperative
/// 313-386, tiled 972-1143). `small_from` lies between 24 tiles (MLP up, faster tiled) and 64
/// (f32 1024^3, best on 64x64; f16 from there on cooperative matrices as before, unmeasured
/// between 24 and 393 tiles).
///
/// Matrix-vector (columns kernel), f32 [1,4096]x[4096,16384], us, 2026-11-26, splits as
/// KSxLANESxUNROLL: H200 16x16x4 88.4, 32x16x4 71.5, 32x8x8 71.8, 16x32x4 87.8, 8x16x8 146,
/// 64x4x4 100.2 (torch 65.5); H100 (one run) 16x16x4 109.3, 32x16x4 98.3, 64x16x4 98.7,
/// 32x8x4 99.4, 32x16x8 99.2 (torch 90.6). The rows kernel keeps 16x4x4 (unmeasured).
/// Split-K and `coop_small`: the same GEMMs on the H100, 2026-11-27, one sweep after GEMM
/// kernels were kept by key (the fixed cost gone: q.k^T 100 -> 11 us), us at 1/2/4/8/16 parts
/// asked (fewer taken where K is short), QKV / projection / MLP up / down. f16 cooperative
/// 64x128x32/2x2 31.8/24.4/22.5/21.8/30.2, 33.0/25.0/23.4/22.0/17.8, 32.2/24.9/22.9/29.2/37.2,
/// 105.8/61.1/36.5/24.5/24.0 (64x64 and 128x128 tiles within 10% or slower; f16 tiled 32x64
/// at its best part count 43.1/22.9/46.6/45.6: so small f16 problems now take cooperative
/// matrices too); f32 tiled 32x64x16/4x4 47.3/36.2/35.4/34.7/37.6, 34.6/25.4/23.4/23.0/23.4,
/// 47.7/36.9/37.5/40.8/46.9, 122.0/67.6/51.2/37.9/39.5 (64x64 alike or slower). The best part
/// counts bring the cooperative grids to ~192 workgroups and the tiled ones to ~384; with K of
/// 64 or 128 (q.k^T, att.v) a split only adds the sum's dispatch (att.v f32 10.3 unsplit, 12.3-
/// 17.3 in two parts); the logits (786 cooperative workgroups) lose from the first split
/// (212 -> 334).
///
/// The cooperative tiles after the loaders stopped waiting for memory at each fetch (H100,
/// 2026-11-27, two sweeps, f16 4096^3, TFLOP/s): 128x128x32/4x4 (four subgroups of 4x4
/// matrices) no prefetch (f0) 196.8, a step ahead into registers (f1) 182.9-188.3, two buffers
/// 153.8; 128x128x64/4x4 f1 179.9, f0 144.0; 256x128x32/4x4 162.0-169.7; 128x256x32/4x4
/// 168.0-170.1; the old 128x256x32/4x2 f1 148.9-149.9, f0 153.7-154.4; 128x128x32/2x2 105.0;
/// pad 16 114.2, pad 0 (128x256x32/4x2) 74.3. The logits [128,768]x[768,50257]: 128x128x32/4x4
/// f0 171.9 us, 128x128x64/4x4 f1 142.3, the old 189.5.
///
/// Cooperative tiles, 2026-11-26 on the H100 (f16 4096^3, TFLOP/s): the f1 choice 106-108
/// in every sweep; 2x4 subgroup tiles 108.0-108.9, 256x128 105.5-109.6, K steps of 16 (fewer
/// vectors than invocations) 101.8-103.2, 64x256 47.8, 128x128x32/2x2 88.2; staging into
/// `vec4<f16>` workgroup entries from `mat2x4<f16>` bindings (no conversion at all) 107.8 and
/// from words 107.0 (H200): the staging's stores and conversions are not what limits it (not
/// kept).
pub(crate) const TABLE: Table = Table {
    big: Tiles { bm: 128, bn: 128, bk: 16, tm: 8, tn: 8, pad: 4 },
    big16: Tiles { bm: 128, bn: 128, bk: 16, tm: 8, tn: 4, pad: 4 },
    small: Tiles { bm: 64, bn: 64, bk: 16, tm: 4, tn: 4, pad: 4 },
    // Two 128x128 tiles per multiprocessor of a 132-SM GPU.
    big_from: 264,
    tiny: Tiles { bm: 32, bn: 64, bk: 16, tm: 4, tn: 4, pad: 4 },
    // One 64x64 tile per multiprocessor of a 132-SM GPU.
    small_from: 33,
    f64: Tiles { bm: 64, bn: 64, bk: 8, tm: 8, tn: 4, pad: 0 },
    coop: CoopTiles { bm: 128, bn: 128, bk: 32, wm: 4, wn: 4, pad: 8, pipe: 0 },
    coop_small: CoopTiles { bm: 64, bn: 128, bk: 32, wm: 2, wn: 2, pad: 8, pipe: 1 },
    matvec: MvTiles { ks: 32, lanes: 16, unroll: 4 },
    matvec_rows: MvTiles { ks: 16, lanes: 4, unroll: 4 },
    matvec_up_to: Some(MATVEC_MAX_M),
    split: Some(Split { tiled: 384, coop: 192, from_k: 256, min_k: 64, most: 16 }),
    bands: &[],
};

/// The kernel choices of the convolutions (`shaders/conv.wgsl`): one tile size (their GEMMs have short K and many
/// columns). Provenance: H100 (Vulkan, driver 580.159.04), 2026-11-24, conv2d [32,64,56,56]
/// 64x3x3 pad 1, window and stride as constants: f32 64x64x16/4x4 20.2 TFLOP/s,
/// 64x64x16/4x8 15.6, 64x128x16/4x8 14.6, 64x64x32/4x4 14.8, 128x128x16/8x8 10.8
/// (conv_transpose2d alike: 19.8-20.0); f16 cooperative 64x64x16/2x2 two buffers 28.8-28.9
/// (18.6 once, first of a sweep), one 27.6, 64x64x32/2x2 f0 28.1, f2 19.9-21.9, 64x128x32/2x2
/// f0 27.9, 128x128x32/4x2 19.6. After the loaders stopped waiting for memory at each fetch
/// (2026-11-27, two sweeps, us): f32 64x64x16/4x4 pad 0 305-321 against pad 4 366-370 (32x64
/// 353, 64x32 378, 64x64x16/4x8 336, 64x64x32 451); conv_transpose2d pad 0 320-324 against
/// 372-385; f16 tiled pad 0 312-320; f16 cooperative 64x64x32/2x2 f0 150.3-151.4, f1 152.3, pad
/// 16 156.1, 64x128x32/2x2 f0 154.4, 64x64x64 183.0, the old 64x64x16/2x2 f2 165.8.
///
/// Bands of rows (H200, 2026-12-03, one sweep each, us; `bands`): conv2d [8,32,256,256] 32x3x3 pad 1
/// (the U-Net example's first level: 32 filters, so 32 rows of C) f32 64x64x16/4x4 763,
/// 64x128x16/4x8 742, 32x128x16/4x8 643, 32x64x16/4x4 465 (torch 354); f16 cooperative
/// 64x64x32/2x2 f0 389, 64x128x32/2x2 337, 32x64x32/2x2 351, 32x128x32/1x4 311, 32x128x32/2x2
/// 308, 32x256x32/2x4 493 (torch 130). The 64-filter case above, re-swept there: f16
/// 64x64x32/2x2 f0 147.3 (f1 149.7, 64x128x32/2x2 156.0, 64x128x32/1x4 162.1, 64x64x64 185.9,
/// f2 189.4), f32 64x64x16/4x4 306 (8x4 318.5, 64x128x16 340-342); its GEMM on a stored B
/// (`[32,64,576] x [32,576,3136]`) 93.6-97.2 with 64-row tiles: the gather is a third of it.
/// The U-Net's other levels, f16 / f32 (torch 66.0, 45.6, 34.0 / 239, 233, 331):
/// [8,64,128,128] 64 filters: 64x64x32/2x2 196.6 (f1 199.8), 64x128x32/2x2 178.0, 128x128x32/4x4
/// 210.7, 128x64x32/2x2 241.4 / 64x64x16/4x4 399.6, 64x128x16/4x8 379.4, 32x64 459.9, 128x128x16/8x8
/// 734.4; [8,128,64,64] 128 filters: 64x64 190.2, 64x128 175.3, 128x64/2x2 128.5, 128x64/4x2 148.0,
/// 128x128/2x2 125.2, 128x128/4x4 106.8 / 64x64 383.1, 128x64x16/8x4 362.2, 128x128x16/8x8 362.7;
/// [8,256,32,32] 256 filters: 64x64 217.8, 64x128 172.4, 128x64/2x2 126.2, 128x128/2x2 121.2,
/// 128x128/4x4 155.2 (two tiles a multiprocessor) / 64x64 466.0, 128x128x16/8x8 354.2. So 64
/// filters keep the 64x64 tiles (the 64-filter case above is the issue's), more take 128x128
/// (in bf16 too, unmeasured).
pub(crate) const CONV: Table = Table {
    big: CONV_TILES,
    big16: CONV_TILES,
    small: CONV_TILES,
    big_from: 0,
    small_from: 0,
    coop: CONV_COOP,
    // Their B is gathered (no matrix-vector kernel gathers), and they are not split yet.
    matvec_up_to: None,
    split: None,
    bands: &[
        Band {
            rows: 32,
            tiled: Tiles { bm: 32, bn: 64, bk: 16, tm: 4, tn: 4, pad: 0 },
            coop: CoopTiles { bm: 32, bn: 128, bk: 32, wm: 2, wn: 2, pad: 8, pipe: 0 },
        },
        Band { rows: 64, tiled: CONV_TILES, coop: CONV_COOP },
        Band {
            rows: usize::MAX,
            tiled: TABLE.big,
            coop: CoopTiles { bm: 128, bn: 128, bk: 32, wm: 2, wn: 2, pad: 8, pipe: 0 },
        },
    ],
    ..TABLE
};
const CONV_TILES: Tiles = Tiles { bm: 64, bn: 64, bk: 16, tm: 4, tn: 4, pad: 0 };
const CONV_COOP: CoopTiles = CoopTiles { bm: 64, bn: 64, bk: 32, wm: 2, wn: 2, pad: 8, pipe: 0 };

/// What an adapter gives the GEMM kernels.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Room {
    /// Workgroup memory a kernel may use.
    pub bytes: u32,
    /// Invocations a workgroup may have.
    pub invocations: u32,
    /// Whether f16 runs on cooperative matrices.
    pub coop: bool,
    /// Whether small grids may split K (`Tune::gemm_split`): in parts, or deeper within a
    /// matrix-vector kernel's workgroup.
    pub split: bool,
}

/// How a problem runs: its kernel, the problem as the kernel takes it (a matrix-vector kernel
/// may take the transposed one), and K's parts as [`split_k`] gives them (count, K per part).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    pub kernel: Kernel,
    pub gemm: Gemm,
    pub split: (usize, usize),
}

impl Table {
    /// The tiled configurations (for sweeps and tests that force each in turn).
    pub fn tiled(&self) -> [Tiles; 5] {
        [self.big, self.big16, self.small, self.f64, self.tiny]
    }

    /// The cooperative-matrix configurations.
    pub fn cooperative(&self) -> [CoopTiles; 2] {
        [self.coop, self.coop_small]
    }

    /// The tiled or cooperative kernel for `tiles` 128x128 tiles of `dtype`, within `bytes` of
    /// workgroup memory and `invocations` per workgroup; `coop`: the adapter runs the
    /// cooperative kernel.
    pub fn pick(&self, dtype: DType, tiles: usize, bytes: u32, invocations: u32, coop: bool) -> Kernel {
        let fits = |k: Kernel, need: u32| need <= bytes && k.invocations() <= invocations;
        let t = if tiles >= self.small_from { self.coop } else { self.coop_small };
        if coop && dtype == DType::F16 && fits(Kernel::Coop(t), t.workgroup_bytes()) {
            return Kernel::Coop(t);
        }
        let size = dtype.size_in_bytes() as u32;
        let order = if dtype == DType::F64 {
            [self.f64, self.f64]
        } else if tiles >= self.big_from {
            [if size == 2 { self.big16 } else { self.big }, self.small]
        } else if tiles >= self.small_from {
            [self.small, self.small]
        } else {
            [self.tiny, self.small]
        };
        // The f64 tiles need 16 KiB and 128 invocations, within WebGPU's least.
        let elem = tile_elem_size(dtype);
        Kernel::Tiled(order.into_iter().find(|&t| fits(Kernel::Tiled(t), t.workgroup_bytes(elem))).unwrap_or(self.f64))
    }

    /// The matrix-vector form of `g`, if it has one: few rows of C, or few columns (then the
    /// transposed problem `C^T = B^T A^T` is run, writing C through transposed strides); `forced`
    /// a matrix-vector kernel: its split instead of the table's.
    pub fn matvec(&self, g: &Gemm, forced: Option<Kernel>) -> Option<(MatVec, Gemm)> {
        let most = self.matvec_up_to?;
        let form = |g: Gemm| {
            let rows = g.b.k == 1 && g.b.outer != 1;
            let tiles = match forced {
                Some(Kernel::MatVec(v)) => v.tiles,
                _ if rows => self.matvec_rows,
                _ => self.matvec,
            };
            (MatVec { m: g.m as u32, rows, tiles }, g)
        };
        if g.m <= most {
            return Some(form(g.clone()));
        }
        if g.n <= most {
            let t = Gemm { m: g.n, n: g.m, a: g.b.clone(), b: g.a.clone(), c_transposed: true, ..g.clone() };
            return Some(form(t));
        }
        None
    }

    /// How `g` of `dtype` runs within `room`; `forced`: the kernel and parts of K that
    /// `gemm_hooks` force (a matrix-vector kernel: its split, on matrix-vector shapes).
    pub fn plan(&self, g: Gemm, dtype: DType, room: Room, forced: (Option<Kernel>, Option<usize>)) -> Plan {
        if let Some((v, t)) = self.matvec(&g, forced.0) {
            let v = v.fitted(dtype, room.bytes, room.invocations);
            let v = if forced.0.is_some() || !room.split { v } else { v.deepened(t.batches(), t.n, t.k) };
            return Plan { kernel: Kernel::MatVec(v), split: (1, t.k), gemm: t };
        }
        let tiles = g.batches() * g.m.div_ceil(128) * g.n.div_ceil(128);
        let table = match self.bands.iter().find(|b| g.m <= b.rows) {
            Some(b) if dtype != DType::F64 => {
                let t = b.tiled;
                Table { big: t, big16: t, small: t, tiny: t, coop: b.coop, coop_small: b.coop, ..*self }
            }
            _ => *self,
        };
        let kernel = match forced.0 {
            Some(k @ (Kernel::Tiled(_) | Kernel::Coop(_))) => k,
            _ => table.pick(dtype, tiles, room.bytes, room.invocations, room.coop),
        };
        // f64 sums in f64: no f32 parts.
        let parts = match (self.split, kernel) {
            (Some(split), Kernel::Tiled(Tiles { bm, bn, .. }) | Kernel::Coop(CoopTiles { bm, bn, .. }))
                if dtype != DType::F64 =>
            {
                let groups = g.batches() * g.m.div_ceil(bm as usize) * g.n.div_ceil(bn as usize);
                let table = || if room.split { split.parts(&kernel, groups, g.k) } else { 1 };
                forced.1.unwrap_or_else(table)
            }
            _ => 1,
        };
        Plan { kernel, split: split_k(g.k, parts), gemm: g }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wgpu::gemm::problem::Operand;

    /// Matmul's split-K entry.
    fn split() -> Split {
        TABLE.split.unwrap_or_else(|| panic!("matmul splits K"))
    }

    /// A contiguous `(m, k) x (k, n)` problem.
    fn square(m: usize, k: usize, n: usize) -> Gemm {
        Gemm {
            batch: vec![],
            m,
            n,
            k,
            a: Operand { offset: 0, outer: k, k: 1, batch: vec![] },
            b: Operand { offset: 0, outer: 1, k: n, batch: vec![] },
            gather: vec![],
            c_transposed: false,
        }
    }

    const ROOM: Room = Room { bytes: 49152, invocations: 1024, coop: false, split: true };

    #[test]
    fn small_grids_split_k() {
        let (tiny, coop) = (Kernel::Tiled(TABLE.tiny), Kernel::Coop(TABLE.coop_small));
        let groups = |m: usize, n: usize, bm: u32, bn: u32| m.div_ceil(bm as usize) * n.div_ceil(bn as usize);
        // The GPT-2 GEMMs (M = 128) of the provenance: (N, K) -> parts asked (tiled f32, coop f16).
        for (n, k, tiled, cooperative) in [(2304, 768, 3, 6), (768, 768, 8, 12), (3072, 768, 2, 4), (768, 3072, 8, 16)]
        {
            let t = split().parts(&tiny, groups(128, n, TABLE.tiny.bm, TABLE.tiny.bn), k);
            let c = split().parts(&coop, groups(128, n, TABLE.coop_small.bm, TABLE.coop_small.bn), k);
            assert_eq!((t, c), (tiled, cooperative), "[128,{k}]x[{k},{n}]");
        }
        // Short K, a grid that fills the GPU, and matrix-vector kernels are never split.
        assert_eq!(split().parts(&tiny, 48, 128), 1);
        assert_eq!(split().parts(&tiny, 393, 3072), 1);
        let mv = Kernel::MatVec(MatVec { m: 1, rows: false, tiles: TABLE.matvec });
        assert_eq!(split().parts(&mv, 1, 1 << 20), 1);
        // Parts of K: multiples of 64 but the last; fewer parts where K is short.
        assert_eq!(split_k(1023, 7), (6, 192));
        assert_eq!(split_k(768, 12), (12, 64));
        assert_eq!(split_k(64, 2), (1, 64));
        assert_eq!(split_k(0, 4), (1, 0));
    }

    #[test]
    fn plans_split_matmul_but_not_convolutions_f64_or_when_tuned_off() {
        // QKV of the provenance: [128,768]x[768,2304] on the tiny tiles, in 3 parts of 256.
        let plan = TABLE.plan(square(128, 768, 2304), DType::F32, ROOM, (None, None));
        assert_eq!((plan.kernel, plan.split), (Kernel::Tiled(TABLE.tiny), (3, 256)));
        let off = Room { split: false, ..ROOM };
        assert_eq!(TABLE.plan(square(128, 768, 2304), DType::F32, off, (None, None)).split, (1, 768));
        // Forced parts win over the setting, never over f64 or a table that does not split.
        assert_eq!(TABLE.plan(square(128, 768, 2304), DType::F32, off, (None, Some(7))).split, (6, 128));
        assert_eq!(TABLE.plan(square(128, 768, 2304), DType::F64, ROOM, (None, Some(7))).split, (1, 768));
        assert_eq!(CONV.plan(square(128, 768, 2304), DType::F32, ROOM, (None, Some(7))).split, (1, 768));
        // A forced tiled kernel replaces the pick, and a forced split the matrix-vector table's.
        let forced = Kernel::Tiled(TABLE.big);
        assert_eq!(TABLE.plan(square(128, 768, 2304), DType::F32, ROOM, (Some(forced), None)).kernel, forced);
        let split = MvTiles { ks: 8, lanes: 4, unroll: 2 };
        let mv = Kernel::MatVec(MatVec { m: 1, rows: false, tiles: split });
        let plan = TABLE.plan(square(1, 64, 300), DType::F32, ROOM, (Some(mv), Some(4)));
        assert_eq!((plan.kernel, plan.split), (mv, (1, 64)));
        // The convolutions take the tiled kernels whatever the shape, by their band of rows.
        let [narrow, mid, wide] = CONV.bands else { panic!("the convolutions' three bands of rows") };
        assert!(CONV.bands.iter().all(|b| b.tiled.is_valid() && b.coop.is_valid()));
        assert_eq!(
            CONV.plan(square(1, 64, 300), DType::F32, ROOM, (Some(mv), None)).kernel,
            Kernel::Tiled(narrow.tiled)
        );
        assert_eq!(CONV.plan(square(64, 64, 300), DType::F32, ROOM, (Some(mv), None)).kernel, Kernel::Tiled(CONV.big));
        for (m, dtype, want) in [
            (32, DType::F32, Kernel::Tiled(narrow.tiled)),
            (33, DType::F32, Kernel::Tiled(mid.tiled)),
            (3, DType::BF16, Kernel::Tiled(narrow.tiled)),
            (32, DType::F64, Kernel::Tiled(CONV.f64)),
            (32, DType::F16, Kernel::Coop(narrow.coop)),
            (64, DType::F16, Kernel::Coop(mid.coop)),
            (65, DType::F16, Kernel::Coop(wide.coop)),
            (256, DType::F32, Kernel::Tiled(wide.tiled)),
        ] {
            let room = Room { coop: true, ..ROOM };
            assert_eq!(CONV.plan(square(m, 288, 65536), dtype, room, (None, None)).kernel, want, "{m} rows of {dtype}");
        }
        assert!(TABLE.bands.is_empty());
    }

    #[test]
    fn the_table_fits_webgpu_workgroup_memory_where_it_must() {
        for t in TABLE.tiled() {
            assert!(t.is_valid(), "{t}");
        }
        assert!(TABLE.f64.workgroup_bytes(8) <= 16384);
        assert!(TABLE.coop.is_valid());
        assert_eq!(TABLE.pick(DType::F32, 1000, 16384, 1024, false), Kernel::Tiled(TABLE.f64));
        assert_eq!(TABLE.pick(DType::F32, 1000, 49152, 1024, false), Kernel::Tiled(TABLE.big));
        assert_eq!(TABLE.pick(DType::BF16, 1000, 49152, 1024, false), Kernel::Tiled(TABLE.big16));
        assert_eq!(TABLE.pick(DType::BF16, 100, 49152, 1024, true), Kernel::Tiled(TABLE.small));
        assert_eq!(TABLE.pick(DType::BF16, 10, 49152, 1024, true), Kernel::Tiled(TABLE.tiny));
        assert_eq!(TABLE.pick(DType::F16, 100, 49152, 1024, true), Kernel::Coop(TABLE.coop));
        assert_eq!(TABLE.pick(DType::F16, 1000, 49152, 1024, false), Kernel::Tiled(TABLE.big16));
        assert_eq!(TABLE.pick(DType::F16, 10, 49152, 1024, true), Kernel::Coop(TABLE.coop_small));
        assert!(TABLE.coop_small.is_valid());
        // 256 invocations, WebGPU's least (SwiftShader's): big16's 512 are too many.
        assert_eq!(TABLE.pick(DType::BF16, 1000, 49152, 256, false), Kernel::Tiled(TABLE.small));
        // SwiftShader's 32 KiB hold the f32 partial sums of 32x16 invocations, its 256
        // invocations do not: the invocations halve the lanes.
        let v = MatVec { m: MATVEC_MAX_M as u32, rows: false, tiles: TABLE.matvec };
        assert_eq!(v.fitted(DType::F32, 32768, 1024), v);
        assert_eq!(v.fitted(DType::F32, 32768, 256).tiles, MvTiles { lanes: 8, ..TABLE.matvec });
        // The matrix-vector partial sums fit the adapter's workgroup memory, f64's too (wgpu
        // does not check it: NVIDIA's driver lost the device on 64 KiB).
        for dt in [DType::F32, DType::F64] {
            for (rows, tiles) in [(false, TABLE.matvec), (true, TABLE.matvec_rows)] {
                let v = MatVec { m: MATVEC_MAX_M as u32, rows, tiles }.fitted(dt, 16384, 256);
                assert!(v.workgroup_bytes(dt) <= 16384 && v.tiles.lanes >= 1, "{dt} {v:?}");
                assert!(Kernel::MatVec(v).invocations() <= 256, "{dt} {v:?}");
            }
        }
        // Few columns split K deeper (GPT-2's decode products); many columns, a short K, the
        // rows kernel and an adapter's fitted lanes keep theirs.
        let cols = MatVec { m: 1, rows: false, tiles: TABLE.matvec };
        let deep = |ks, lanes| MatVec { tiles: MvTiles { ks, lanes, ..TABLE.matvec }, ..cols };
        assert_eq!(cols.deepened(1, 768, 3072), deep(256, 2));
        assert_eq!(cols.deepened(1, 2304, 768), deep(64, 8));
        assert_eq!(cols.deepened(1, 768, 768), deep(64, 8));
        assert_eq!(cols.deepened(1, 1024, 2816), deep(128, 4));
        assert_eq!(cols.deepened(1, 16384, 4096), deep(64, 8));
        assert_eq!(cols.deepened(8, 16384, 4096), cols);
        assert_eq!(cols.deepened(1, 768, 100), cols);
        let rows = MatVec { m: 1, rows: true, tiles: TABLE.matvec_rows };
        assert_eq!(rows.deepened(1, 768, 3072), rows);
        let fitted = MatVec { tiles: MvTiles { lanes: 1, ..TABLE.matvec }, ..cols };
        assert_eq!(fitted.deepened(1, 768, 3072), fitted);
        let probe = Kernel::Coop(CoopTiles { pipe: 1, ..TABLE.coop });
        for k in [Kernel::Tiled(TABLE.big), Kernel::Coop(TABLE.coop), probe] {
            assert_eq!(k.to_string().parse::<Kernel>().unwrap(), k);
        }
        let mv = Kernel::MatVec(MatVec { m: 1, rows: false, tiles: TABLE.matvec });
        assert_eq!(mv.to_string().parse::<Kernel>().unwrap(), mv);
        assert!("matvec:24x16x4".parse::<Kernel>().is_err(), "K split not a power of two");
    }
}
