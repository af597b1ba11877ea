//! The GEMM kernels ([`Kernel`]: tiled, matrix-vector, cooperative matrix) and their
//! configurations as plain structs ([`Tiles`], [`MatVec`], [`CoopTiles`]), with what each needs
//! of an adapter (workgroup memory, invocations), and how a kernel loads an operand ([`Load`]).

use super::problem::Operand;
use crate::wgpu::repr::Repr;
use crate::{DType, Error, Result};

/// How a kernel loads an operand's tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Load {
    /// Vectors of `w` elements along K: K stride 1, every row starting on a multiple of `w`.
    KVec,
    /// Vectors along the outer dim: outer stride 1, every K row starting on a multiple of `w`.
    OVec,
    /// Element by element (any strides, or a convolution's gather).
    Gather,
}

impl Load {
    /// The load of `op` for vectors of `w` elements of `r` (`None`: element by element).
    pub fn of(op: &Operand, r: Repr, w: usize) -> Load {
        if matches!(r, Repr::F64) {
            return Load::Gather;
        }
        let aligned = |s: usize| s.is_multiple_of(w);
        let rest = aligned(op.offset) && op.batch.iter().all(|&s| aligned(s));
        if op.k == 1 && rest && aligned(op.outer) {
            Load::KVec
        } else if op.outer == 1 && rest && aligned(op.k) {
            Load::OVec
        } else {
            Load::Gather
        }
    }

    pub(super) fn section(self, body: &str) -> String {
        let name = match self {
            Load::KVec => "kvec",
            Load::OVec => "ovec",
            Load::Gather => "gather",
        };
        format!("{body}_{name}")
    }
}

/// One configuration of the tiled GEMM: a `bm x bn` tile of C per workgroup, `tm x tn` of it
/// per invocation, K in steps of `bk`; workgroup rows padded by `pad` elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tiles {
    /// Rows of C per workgroup.
    pub bm: u32,
    /// Columns of C per workgroup.
    pub bn: u32,
    /// K per step.
    pub bk: u32,
    /// Rows of C per invocation.
    pub tm: u32,
    /// Columns of C per invocation.
    pub tn: u32,
    /// Elements added to each workgroup row.
    pub pad: u32,
}

impl Tiles {
    /// Invocations per workgroup.
    pub fn workgroup(&self) -> u32 {
        (self.bm / self.tm) * (self.bn / self.tn)
    }

    /// Elements of one workgroup buffer of an operand of `ot` outer rows and its row stride, in
    /// vectors of four: held along K (`k_major`: `ot` rows of `bk / 4` vectors) or along the
    /// outer dim (`bk` rows of `ot / 4`), rows padded by `pad` elements.
    pub(super) fn layout(&self, ot: u32, k_major: bool) -> (u32, u32) {
        let row = if k_major { self.bk / 4 } else { ot / 4 } + self.pad / 4;
        (if k_major { ot * row } else { self.bk * row }, row)
    }

    /// Bytes of workgroup memory at most for elements of `size` bytes (two buffers of each
    /// operand, whichever way each is held).
    pub fn workgroup_bytes(&self, size: u32) -> u32 {
        let most = |ot| self.layout(ot, true).0.max(self.layout(ot, false).0);
        2 * 4 * size * (most(self.bm) + most(self.bn))
    }

    /// Whether every loader divides its tile evenly among the invocations.
    pub fn is_valid(&self) -> bool {
        let wg = self.workgroup();
        let even = |ot: u32| ot.is_multiple_of(4) && wg.is_multiple_of(ot / 4) && (ot * self.bk).is_multiple_of(4 * wg);
        [self.tm, self.tn, self.bk, self.pad].iter().all(|v| v.is_multiple_of(4))
            && self.tm > 0
            && self.tn > 0
            && wg <= 1024
            && even(self.bm)
            && even(self.bn)
    }
}

impl std::fmt::Display for Tiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Tiles { bm, bn, bk, tm, tn, pad } = self;
        write!(f, "{bm}x{bn}x{bk}/{tm}x{tn}/p{pad}")
    }
}

/// The matrix-vector kernels: `m` rows of C (at most `MATVEC_MAX_M`), B read down its
/// columns (`rows`: B's K stride is 1) or across its rows, with the tuning `tiles`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MatVec {
    /// Rows of C.
    pub m: u32,
    /// Whether B's K stride is 1 (read along its rows).
    pub rows: bool,
    /// How the work is split.
    pub tiles: MvTiles,
}

/// The split of a matrix-vector kernel: `ks` invocations share K for each group of four
/// columns (columns kernel) or each column (rows kernel), `lanes` such groups or columns per
/// workgroup, each invocation `unroll` loads of B in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MvTiles {
    /// Invocations splitting K (a power of two).
    pub ks: u32,
    /// Column groups (or columns) per workgroup.
    pub lanes: u32,
    /// Loads of B issued before their sums.
    pub unroll: u32,
}

impl MatVec {
    /// Workgroup bytes of the partial sums: MV_M rows of a vector of four (columns kernel) or
    /// one value (rows kernel) of the compute type per invocation.
    pub fn workgroup_bytes(&self, dtype: DType) -> u32 {
        let per = if self.rows { 1 } else { 4 };
        self.tiles.ks * self.tiles.lanes * self.m * per * tile_elem_size(dtype)
    }

    /// The columns kernel with K split deeper where its grid is small: while it has fewer than
    /// [`MV_GRID`] workgroups and each invocation would keep at least [`MV_MIN_STEPS`] steps of
    /// K, twice the invocations on K and half the column groups a workgroup (the invocations,
    /// and so the partial sums' bytes, unchanged). H200 (Vulkan, session 35; f16, us, two
    /// rounds): GPT-2's decode products `[1,3072] x [3072,768]` 32x16x4 18.3-19.2, 64x8x4
    /// 12.1-12.7, 128x4x4 8.8-10.2, 256x2x4 8.3-9.6, 256x1x4 10.1-10.8; `[1,768] x [768,2304]`
    /// 32x16x4 8.2-8.3, 64x8x4 6.5-7.1, 128x4x4 7.3-9.5; `[1,768] x [768,3072]` 32x16x4 8.8,
    /// 64x8x4 7.5, 128x4x4 7.7-8.0 (a dispatch's floor there is about 7 us).
    pub fn deepened(mut self, batches: usize, n: usize, k: usize) -> MatVec {
        if self.rows {
            return self;
        }
        let grid = |t: &MvTiles| batches * n.div_ceil(4 * t.lanes as usize);
        while self.tiles.lanes > 1
            && self.tiles.ks < MV_MAX_KS
            && grid(&self.tiles) < MV_GRID
            && k / (2 * self.tiles.ks as usize) >= MV_MIN_STEPS
        {
            self.tiles.ks *= 2;
            self.tiles.lanes /= 2;
        }
        self
    }

    /// The same with its lanes halved until its partial sums fit `bytes` (f64 holds twice
    /// f32's) and its workgroup `invocations` (WebGPU's least is 256: SwiftShader's).
    pub fn fitted(mut self, dtype: DType, bytes: u32, invocations: u32) -> MatVec {
        while self.tiles.lanes > 1
            && (self.workgroup_bytes(dtype) > bytes || self.tiles.ks * self.tiles.lanes > invocations)
        {
            self.tiles.lanes /= 2;
        }
        self
    }
}

impl MvTiles {
    pub(super) fn is_valid(&self) -> bool {
        self.ks.is_power_of_two() && self.lanes > 0 && self.ks * self.lanes <= 1024 && (1..=16).contains(&self.unroll)
    }
}

impl std::fmt::Display for MvTiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let MvTiles { ks, lanes, unroll } = self;
        write!(f, "{ks}x{lanes}x{unroll}")
    }
}

/// [`MatVec::deepened`]'s bounds: the workgroups it stops at (two a multiprocessor of a
/// 132-SM GPU), the fewest steps of K an invocation keeps, the deepest split.
const MV_GRID: usize = 264;
const MV_MIN_STEPS: usize = 12;
const MV_MAX_KS: u32 = 256;

/// The most rows of C the matrix-vector kernels take.
pub const MATVEC_MAX_M: usize = 4;

/// A kernel for a GEMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// The tiled GEMM with workgroup-memory tiles.
    Tiled(Tiles),
    /// The matrix-vector kernel, for m or n at most `MATVEC_MAX_M`.
    MatVec(MatVec),
    /// The cooperative-matrix kernel (f16 inputs, f32 accumulation).
    Coop(CoopTiles),
}

impl Kernel {
    /// Invocations per workgroup.
    pub fn invocations(&self) -> u32 {
        match self {
            Kernel::Tiled(t) => t.workgroup(),
            Kernel::MatVec(v) => v.tiles.ks * v.tiles.lanes,
            Kernel::Coop(t) => t.workgroup(),
        }
    }

    /// Its name as `Device::info()` and the kernel record say it.
    pub fn family_name(&self) -> &'static str {
        match self {
            Kernel::Tiled(_) => "tiled",
            Kernel::MatVec(_) => "matrix-vector",
            Kernel::Coop(_) => "cooperative matrix",
        }
    }
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kernel::Tiled(t) => write!(f, "tiled:{t}"),
            Kernel::MatVec(v) => write!(f, "matvec:{}{}/{}", v.m, if v.rows { "r" } else { "c" }, v.tiles),
            Kernel::Coop(t) => write!(f, "coop:{t}"),
        }
    }
}

impl std::str::FromStr for Kernel {
    type Err = Error;
    /// `tiled:BMxBNxBK/TMxTN/pPAD` or `coop:BMxBNxBK/WMxWN/pPAD/fPIPE` (what `Display` writes;
    /// without `/fPIPE`, 2), or `matvec:KSxLANESxUNROLL` (a split for whichever matrix-vector
    /// kernel a problem takes).
    fn from_str(s: &str) -> Result<Kernel> {
        let bad = || Error::InvalidParam { op: "matmul", msg: format!("kernel {s:?}") };
        let nums: Vec<u32> = s
            .split(|c: char| !c.is_ascii_digit())
            .filter(|t| !t.is_empty())
            .map(|t| t.parse().map_err(|_| bad()))
            .collect::<Result<_>>()?;
        if let (Some("matvec"), &[.., ks, lanes, unroll]) = (s.split(':').next(), nums.as_slice()) {
            // The split alone (after `Mc/` or `Mr/` as `Display` writes it): rows and direction
            // come from the problem.
            let tiles = MvTiles { ks, lanes, unroll };
            return if tiles.is_valid() { Ok(Kernel::MatVec(MatVec { m: 1, rows: false, tiles })) } else { Err(bad()) };
        }
        let (&[bm, bn, bk, x, y, pad], rest) = nums.split_at_checked(6).ok_or_else(bad)? else { return Err(bad()) };
        match (s.split(':').next(), rest) {
            (Some("tiled"), []) => {
                let t = Tiles { bm, bn, bk, tm: x, tn: y, pad };
                if t.is_valid() { Ok(Kernel::Tiled(t)) } else { Err(bad()) }
            }
            (Some("coop"), [] | [_]) => {
                let t = CoopTiles { bm, bn, bk, wm: x, wn: y, pad, pipe: rest.first().copied().unwrap_or(2) };
                if t.is_valid() { Ok(Kernel::Coop(t)) } else { Err(bad()) }
            }
            _ => Err(bad()),
        }
    }
}

/// Invocations of a subgroup the kernel is laid out for (the coop path is taken only where
/// the adapter's subgroups are exactly this wide).
pub const SUBGROUP: u32 = 32;

/// One configuration: a `bm x bn` tile of C per workgroup, `wm x wn` matrices of 16 x 16 per
/// subgroup, K in steps of `bk`; workgroup rows padded by `pad` halves. `pipe`: 0, each step
/// loaded then multiplied (the issue's probe); 1, the next step fetched into registers while
/// this one multiplies, one workgroup buffer (two barriers a step); 2, the same into two
/// workgroup buffers (one barrier a step, twice the workgroup memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CoopTiles {
    /// Rows of C per workgroup.
    pub bm: u32,
    /// Columns of C per workgroup.
    pub bn: u32,
    /// K per step.
    pub bk: u32,
    /// 16x16 tiles of C per subgroup, down.
    pub wm: u32,
    /// 16x16 tiles of C per subgroup, across.
    pub wn: u32,
    /// Halves added to each workgroup row (fewer bank conflicts).
    pub pad: u32,
    /// The fetch mode: 0, 1 or 2, as above.
    pub pipe: u32,
}

/// Rows (or columns) of a cooperative matrix.
pub(super) const TILE: u32 = 16;

impl CoopTiles {
    /// Halves per vector load (16 bytes).
    pub const VEC: usize = 8;

    pub(super) fn subgroups(&self) -> (u32, u32) {
        (self.bm / (TILE * self.wm), self.bn / (TILE * self.wn))
    }

    /// Invocations per workgroup (subgroups of the tile times the subgroup size).
    pub fn workgroup(&self) -> u32 {
        let (sm, sn) = self.subgroups();
        sm * sn * SUBGROUP
    }

    /// The row stride and size (halves) of one buffer of an operand of `ot` outer rows
    /// loaded as `load` (along K: outer rows of K; otherwise K rows of outer).
    pub(super) fn layout(&self, ot: u32, load: Load) -> (u32, u32) {
        if load == Load::KVec {
            (self.bk + self.pad, ot * (self.bk + self.pad))
        } else {
            (ot + self.pad, self.bk * (ot + self.pad))
        }
    }

    /// Workgroup buffers of each operand.
    pub(super) fn buffers(&self) -> u32 {
        if self.pipe == 2 { 2 } else { 1 }
    }

    /// Workgroup bytes at most, whichever way the operands are loaded.
    pub fn workgroup_bytes(&self) -> u32 {
        let most = |ot: u32| [Load::KVec, Load::OVec].map(|l| self.layout(ot, l).1).into_iter().max().unwrap_or(0);
        2 * self.buffers() * (most(self.bm) + most(self.bn)) + 4 * TILE * TILE * self.workgroup() / SUBGROUP
    }

    /// Whether the loaders divide the tile evenly and the subgroups cover it.
    pub fn is_valid(&self) -> bool {
        let wg = self.workgroup();
        // Vectors of eight and gathered groups of four both divide among the invocations.
        let even = |ot: u32| ot.is_multiple_of(8) && wg.is_multiple_of(ot / 4) && (ot * self.bk).is_multiple_of(8 * wg);
        self.wm > 0
            && self.wn > 0
            && self.bm.is_multiple_of(TILE * self.wm)
            && self.bn.is_multiple_of(TILE * self.wn)
            && self.bk.is_multiple_of(TILE)
            && self.pad.is_multiple_of(8)
            && self.pipe <= 2
            && wg > 0
            && wg <= 1024
            && even(self.bm)
            && even(self.bn)
    }
}

impl std::fmt::Display for CoopTiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let CoopTiles { bm, bn, bk, wm, wn, pad, pipe } = self;
        write!(f, "{bm}x{bn}x{bk}/{wm}x{wn}/p{pad}/f{pipe}")
    }
}

/// Bytes of one element of the tiled kernel's workgroup tiles for `dtype`: they hold the compute
/// type, f32 for f16, bf16 and f32 alike.
pub(crate) fn tile_elem_size(dtype: DType) -> u32 {
    if dtype == DType::F64 { 8 } else { 4 }
}
