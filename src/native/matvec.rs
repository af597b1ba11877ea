//! Matrix-vector products on the native backend (`hip/matvec.h`; ARCHITECTURE.md, the native
//! backend): a product of 1 to 4 rows of x against a weight read as 16-byte words takes our
//! kernel instead of the BLAS, with an elementwise program over its result (a bias, an
//! activation, a residual) computed where the kernel stores it. Which products take it is a
//! function of their geometry and layouts alone, so a product has the same bits with and
//! without a program after it.

use super::fused::{lambda, param_dtypes, param_list};
use super::kernel::{self, Arg, Args, BLOCK};
use super::ptr::DevicePtr;
use super::{NativeBackend, NativeStorage, Runtime};
use crate::expr::program::{Op, Program};
use crate::spec::matmul::MatmulGeometry;
use crate::{DType, Layout, Result, Scalar};
use bytemuck::{Pod, Zeroable};
use std::fmt::Write;
use std::sync::OnceLock;

/// The kernels' template (`hip/matvec.h`), compiled with each generated entry.
const MATVEC_H: &str = include_str!("../../hip/matvec.h");

/// The most rows of x a product may have to take these kernels.
pub(crate) const MAX_ROWS: usize = 4;
/// Weight rows a warp takes in the rows layout (`MV_ROWS`).
const WARP_ROWS: u64 = 2;
/// Rows of K a thread of the columns walk loads at once (`U` of `matvec_cols`), and the most rows
/// of a block's step, U times its slices (`MV_STEP_ROWS`: x's values of a step in shared memory).
const UNROLLS: [u64; 3] = [8, 16, 24];
const STEP_ROWS: u64 = 1024;
/// Column words a block of the columns walk takes at most (`MV_MAX_CG`).
const MAX_CG: u64 = 8;

/// How the weight lies: `[K, N]` with N contiguous (`matvec_cols`) or `[N, K]` with K
/// contiguous, a transposed weight (`matvec_rows`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Walk {
    Cols,
    Rows,
}

/// A kernel: the walk, the rows of x, the dtype and (columns walk) the rows of K a thread loads
/// at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Kernel {
    pub walk: Walk,
    pub rows: u32,
    pub dtype: DType,
    pub unroll: u32,
}

/// `struct MvArgs` of `hip/matvec.h`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub(crate) struct MvArgs {
    k: u64,
    n: u64,
    x_off: u64,
    x_row: u64,
    x_k: u64,
    w_off: u64,
    w_ld: u64,
    cg: u64,
    kc: u64,
}

/// A product planned on these kernels: which one, its arguments and its grid (blocks along N,
/// chunks of K).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    pub kernel: Kernel,
    pub args: MvArgs,
    pub grid: [u32; 2],
}

/// Whether `RWO_NATIVE_MATVEC=0` sends every product to the BLAS (A/B measurements).
pub(crate) fn off() -> bool {
    static OFF: OnceLock<bool> = OnceLock::new();
    *OFF.get_or_init(|| std::env::var("RWO_NATIVE_MATVEC").is_ok_and(|v| v.trim() == "0"))
}

/// The plan of the product `ll` x `rl` (dtype `dtype`, geometry `g`) on a device of
/// `multiprocessors` and warps of `warp` threads, or `None` where the BLAS takes it: one batch,
/// at most [`MAX_ROWS`] rows, f16, bf16 or f32, and a weight whose rows along its contiguous dim
/// are whole aligned 16-byte words.
pub(crate) fn plan(
    dtype: DType,
    ll: &Layout,
    rl: &Layout,
    g: &MatmulGeometry,
    multiprocessors: u32,
    warp: u32,
) -> Option<Plan> {
    let (m, n, k) = (g.m, g.n, g.k);
    let size = match dtype {
        DType::F16 | DType::BF16 => 2,
        DType::F32 => 4,
        _ => return None,
    };
    if g.batch.elem_count() != 1 || !(1..=MAX_ROWS).contains(&m) || n == 0 || k == 0 || m * n > u32::MAX as usize {
        return None;
    }
    let v = 16 / size;
    let nb = g.batch.rank();
    let (ls, rs) = (ll.strides(), rl.strides());
    let (w_k, w_n, w_off) = (rs[nb], rs[nb + 1], rl.offset());
    let words = |len: usize, ld: usize, lines: usize| len.is_multiple_of(v) && (lines == 1 || ld.is_multiple_of(v));
    let walk = if w_n == 1 && words(n, w_k, k) {
        Walk::Cols
    } else if w_k == 1 && words(k, w_n, n) {
        Walk::Rows
    } else {
        return None;
    };
    if !w_off.is_multiple_of(v) {
        return None;
    }
    let u = |x: usize| x as u64;
    let mut args = MvArgs {
        k: u(k),
        n: u(n),
        x_off: u(ll.offset()),
        x_row: u(ls[nb]),
        x_k: u(ls[nb + 1]),
        w_off: u(w_off),
        w_ld: u(if walk == Walk::Cols { w_k } else { w_n }),
        cg: 0,
        kc: u(k),
    };
    let target = 2 * u64::from(multiprocessors.max(1));
    let mut unroll = 0;
    let grid = match walk {
        Walk::Cols => {
            // Eight column words a block (128 bytes of each row: whole DRAM lines) where N has
            // them; each thread's rows of K loaded at once (up to 24); where that leaves a
            // thread more rows and the grid under two blocks a multiprocessor, K in chunks
            // of at most that many rows a thread.
            let words = u(n / v);
            let cg = [MAX_CG, 4, 2].into_iter().find(|&c| c <= u64::from(warp) && words >= c).unwrap_or(2);
            let blocks = words.div_ceil(cg);
            let slices = u64::from(BLOCK) / cg;
            let most = UNROLLS.into_iter().filter(|&x| x * slices <= STEP_ROWS).max().unwrap_or(UNROLLS[0]);
            let per = u(k).div_ceil(slices);
            let want = match per <= most || blocks as usize > super::COUNTERS {
                true => 1,
                false => target.div_ceil(blocks).min(per.div_ceil(most)),
            };
            args.cg = cg;
            args.kc = u(k).div_ceil(want).div_ceil(slices) * slices;
            let rows = (args.kc / slices).min(most);
            let chunks = u(k).div_ceil(args.kc);
            // A grid of more than two blocks a multiprocessor streams: eight rows a step keep
            // its registers for more blocks (24 took a large product 1.5x as long).
            let wide = blocks * chunks > target;
            unroll = if wide { UNROLLS[0] } else { UNROLLS.into_iter().find(|&x| x >= rows).unwrap_or(most) } as u32;
            [blocks, chunks]
        }
        Walk::Rows => [u(n).div_ceil(WARP_ROWS * u64::from(BLOCK / warp.max(1))), 1],
    };
    let blocks = u32::try_from(grid[0]).ok().filter(|&b| u64::from(b) <= kernel::max_blocks(BLOCK))?;
    let grid = [blocks, u32::try_from(grid[1]).ok()?];
    Some(Plan { kernel: Kernel { walk, rows: m as u32, dtype, unroll }, args, grid })
}

/// The source of the kernel `matvec` of `kernel` with `p` (over the product, its input 0, and
/// tensors seen through `View`s of the output's walk) as its epilogue: parameters `(MvArgs, x,
/// w, y, Dims, View per tensor, tensor pointers, scalar parameters)`.
pub(crate) fn source(kernel: Kernel, p: &Program, params: &[DType]) -> String {
    let t = kernel.dtype;
    let tensors = 1..p.inputs.len();
    let out = if p.steps.is_empty() { t } else { p.dtype() };
    let mut sig = format!("MvArgs a, const {t}* x, const {t}* w, {out}* y, float* parts, u32* counts, Dims d");
    for i in tensors.clone() {
        let _ = write!(sig, ", View v{i}");
    }
    for i in tensors.clone() {
        let _ = write!(sig, ", const {}* x{i}", p.inputs[i]);
    }
    sig += &param_list(params);
    // The epilogue's operands at an output (loaded early), and the store through the program.
    let mut fields: String = tensors.clone().map(|i| format!(" {} r{i};", p.inputs[i])).collect();
    if fields.is_empty() {
        // (No empty struct: C and C++ differ on its size, and hipcc warns.)
        fields = " u32 none;".into();
    }
    let loads: Vec<String> = tensors.clone().map(|i| format!("x{i}[at(v{i}, d, i)]")).collect();
    let fetch = format!(
        "  struct Pre {{{fields} }};\n  auto fetch = [&](u32 i) {{\n    (void)i;\n    return Pre{{{}}};\n  }};\n",
        loads.join(", ")
    );
    let put = if p.steps.is_empty() {
        format!("  auto put = [&]({t} v, u32 i, const Pre&) {{ y[i] = v; }};\n")
    } else {
        let args: String = tensors.map(|i| format!(", pre.r{i}")).collect();
        format!("  auto f = {};\n  auto put = [&]({t} v, u32 i, const Pre& pre) {{ y[i] = f(v{args}); }};\n", lambda(p))
    };
    let (walk, split) = match kernel.walk {
        Walk::Cols => (format!("matvec_cols<{t}, {}, {}>", kernel.rows, kernel.unroll), "parts, counts, "),
        Walk::Rows => (format!("matvec_rows<{t}, {}>", kernel.rows), ""),
    };
    format!(
        "#include \"common.h\"\n\n{MATVEC_H}\nRWO_KERNEL matvec({sig}) {{\n  (void)d;\n  (void)parts;\n  (void)counts;\n{fetch}{put}  {walk}(a, x, w, {split}fetch, put);\n}}\n"
    )
}

/// Some kernels as the runtimes compile them, named `matvec.{walk}.{dtype}.r{rows}[.epilogue]`:
/// both walks in each dtype, with and without a program after the product (for the suite's
/// compile checks: NVRTC and hiprtc need no GPU).
pub fn matvec_samples() -> Vec<super::Unit> {
    use crate::expr::program::{Step, Value};
    use crate::spec::elementwise::{BinaryOp, ScalarOp, UnaryOp};
    let plain = |dtype| Program { inputs: vec![dtype], steps: vec![] };
    // (product + bias) as an affine map of a GELU, as a layer's epilogue; a residual add in bf16.
    let h = DType::F16;
    let bias_gelu = Program {
        inputs: vec![h, h],
        steps: vec![
            Step { op: Op::Binary(BinaryOp::Add), args: vec![(Value::Input(0), h), (Value::Input(1), h)], dtype: h },
            Step { op: Op::Unary(UnaryOp::Gelu), args: vec![(Value::Step(0), h)], dtype: h },
            Step { op: Op::Scalar(ScalarOp::Affine, 0), args: vec![(Value::Step(1), h)], dtype: h },
        ],
    };
    let b = DType::BF16;
    let residual = Program {
        inputs: vec![b, b],
        steps: vec![Step {
            op: Op::Binary(BinaryOp::Add),
            args: vec![(Value::Input(0), b), (Value::Input(1), b)],
            dtype: b,
        }],
    };
    let cases = [
        (Walk::Cols, 1, h, 24, plain(h)),
        (Walk::Rows, 1, h, 0, plain(h)),
        (Walk::Cols, 2, b, 16, plain(b)),
        (Walk::Rows, 4, DType::F32, 0, plain(DType::F32)),
        (Walk::Cols, 4, DType::F32, 24, plain(DType::F32)),
        (Walk::Cols, 1, h, 8, bias_gelu),
        (Walk::Rows, 3, b, 0, residual),
    ];
    cases
        .into_iter()
        .map(|(walk, rows, dtype, unroll, p)| {
            let kernel = Kernel { walk, rows, dtype, unroll };
            let tail = if p.steps.is_empty() { "" } else { ".epilogue" };
            let name = format!("matvec.{}.{dtype}.r{rows}.u{unroll}{tail}", format!("{walk:?}").to_lowercase());
            (name, source(kernel, &p, &param_dtypes(&p, p.params())))
        })
        .collect()
}

impl<R: Runtime> NativeBackend<R> {
    /// The plan of a product on the matrix-vector kernels here, or `None`: the BLAS takes it
    /// (or, where the runtime has none, the cpu, as every product there).
    pub(crate) fn matvec_plan(&self, dtype: DType, ll: &Layout, rl: &Layout, g: &MatmulGeometry) -> Option<Plan> {
        let i = self.0.rt.info();
        let here = !off() && self.0.rt.blas().is_ok();
        here.then(|| plan(dtype, ll, rl, g, i.multiprocessors, i.warp_size)).flatten()
    }

    /// Runs `plan` on `x` and `w`, then program `p` over the product (its input 0) and `inputs`
    /// (its inputs 1 on, each in the product's shape `g.out`) with `params`, into a new storage.
    pub(crate) fn run_matvec(
        &self,
        plan: &Plan,
        (x, w): (&NativeStorage<R>, &NativeStorage<R>),
        g: &MatmulGeometry,
        p: &Program,
        inputs: &[(&NativeStorage<R>, &Layout)],
        params: &[Scalar],
    ) -> Result<NativeStorage<R>> {
        self.0.library_use.count(super::usage::Path::GemmKernels);
        let out = if p.steps.is_empty() { plan.kernel.dtype } else { p.dtype() };
        let y = self.storage(out, g.m * g.n)?;
        let strided: Vec<kernel::Strided> = inputs.iter().map(|(_, l)| (l.strides(), l.offset())).collect();
        // At most MAX_ROWS x N < 2^32 elements: one part.
        let part = kernel::plan(g.out.shape.dims(), &strided).pop().expect("a product of elements walks once");
        let types = param_dtypes(p, params.len());
        let f = self.matvec_function(plan.kernel, p, || source(plan.kernel, p, &types))?;
        // K in chunks: their sums, and the counters the last chunk of each column run finds.
        let (parts, counts) = match plan.grid[1] {
            1 => (None, DevicePtr(0)),
            chunks => (Some(self.storage(DType::F32, chunks as usize * g.m * g.n)?), self.counters()?),
        };
        let mut args = Args::default();
        args.pod(&plan.args).ptr(x.ptr).ptr(w.ptr).ptr(y.ptr);
        args.ptr(parts.as_ref().map_or(DevicePtr(0), |p| p.ptr)).ptr(counts).pod(&part.dims);
        for v in &part.views {
            args.pod(v);
        }
        for (s, _) in inputs {
            args.ptr(s.ptr);
        }
        for (&v, &dt) in params.iter().zip(&types) {
            args.arg(Arg::compute(dt, v));
        }
        // SAFETY: `source` declares (MvArgs, x, w, y, Dims, a View per tensor, the tensor
        // pointers, each parameter in its compute type), as appended here. `plan` read the
        // operands' offsets and strides from their layouts (validated by the spec to lie inside
        // their storages) and sized the grid to N and K; `y` holds the m x n results, `parts`
        // a chunk's, and the counters one a column run (fewer than COUNTERS where K is split).
        unsafe { self.launch_function_grid(f, [plan.grid[0], plan.grid[1], 1], BLOCK, &mut args)? };
        Ok(y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shape;

    fn geometry(l: &Layout, r: &Layout) -> MatmulGeometry {
        crate::spec::matmul::matmul((l, DType::F16), (r, DType::F16)).unwrap()
    }

    fn planned(l: &Layout, r: &Layout, dtype: DType) -> Option<Plan> {
        plan(dtype, l, r, &geometry(l, r), 132, 32)
    }

    #[test]
    fn few_rows_against_whole_words_take_the_kernels() {
        let x = Layout::contiguous([1, 768]);
        let w = Layout::contiguous([768, 2304]);
        let p = planned(&x, &w, DType::F16).unwrap();
        // 288 words, eight a block: 36 blocks of 32 slices, 24 rows a thread loaded at once.
        let p = (p.kernel.walk, p.args.cg, p.grid, p.args.w_ld, p.kernel.unroll);
        assert_eq!(p, (Walk::Cols, 8, [36, 1], 2304, 24));
        // Enough blocks: K whole, in steps of 8 rows a thread.
        let big = Layout::contiguous([4096, 16384]);
        let p = planned(&Layout::contiguous([4, 4096]), &big, DType::F32).unwrap();
        assert_eq!((p.kernel.rows, p.args.cg, p.grid, p.kernel.unroll), (4, 8, [512, 1], 8));
        // 12 blocks of N = 768: K = 3072 in four chunks of 768 rows (24 a thread).
        let p = planned(&Layout::contiguous([1, 3072]), &Layout::contiguous([3072, 768]), DType::F16).unwrap();
        assert_eq!((p.args.cg, p.grid, p.args.kc, p.kernel.unroll), (8, [12, 4], 768, 24));
        // 16 rows a thread: a step of 16.
        let p = planned(&Layout::contiguous([1, 512]), &Layout::contiguous([512, 4096]), DType::F16).unwrap();
        assert_eq!((p.grid, p.kernel.unroll), ([64, 1], 16));
        // A transposed weight (tied embeddings): rows of K, two a warp, eight warps a block.
        let wt = Layout::contiguous([50257, 768]).transpose(0, 1).unwrap();
        let p = planned(&x, &wt, DType::F16).unwrap();
        assert_eq!((p.kernel.walk, p.grid, p.args.w_ld), (Walk::Rows, [50257usize.div_ceil(16) as u32, 1], 768));
    }

    #[test]
    fn the_blas_keeps_what_the_kernels_cannot_read_as_words() {
        let x = Layout::contiguous([1, 768]);
        // Five rows; a batch; N not whole words; columns from off a word; f64.
        assert!(planned(&Layout::contiguous([5, 768]), &Layout::contiguous([768, 64]), DType::F16).is_none());
        let xb = Layout::contiguous([2, 1, 768]);
        let wb = Layout::contiguous([768, 64]).broadcast_as(&Shape::new([2, 768, 64])).unwrap();
        assert!(plan(DType::F16, &xb, &wb, &geometry(&xb, &wb), 132, 32).is_none());
        assert!(planned(&x, &Layout::contiguous([768, 100]), DType::F16).is_none());
        let off = Layout::contiguous([768, 72]).narrow(1, 4, 64).unwrap();
        assert!(planned(&x, &off, DType::F16).is_none());
        assert!(planned(&x, &Layout::contiguous([768, 64]), DType::F64).is_none());
        // A strided x is read element by element: still the kernel.
        let xs = Layout::contiguous([768, 2]).transpose(0, 1).unwrap().narrow(0, 0, 1).unwrap();
        assert!(planned(&xs, &Layout::contiguous([768, 64]), DType::F16).is_some());
    }
}
