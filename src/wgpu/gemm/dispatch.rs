//! Recording a GEMM: the plan its table makes for it, the kernel's pipeline (generated and built
//! once per kernel and variant, then found by that key), the dispatch, and split-K's sum.

use super::codegen::{ConvGather, EPILOGUE_INPUTS, Epilogue, Stage, Variant};
use super::hooks;
use super::problem::{Gemm, sum_meta};
use super::source::spec;
use super::table::{Plan, Room, Table};
use super::tiles::{CoopTiles, Kernel, Load, MATVEC_MAX_M, tile_elem_size};
use crate::backend::RowNormArgs;
use crate::expr::program::Program;
use crate::spec::matmul::MatmulOp;
use crate::wgpu::kernel::Index;
use crate::wgpu::nn::rows::{RowNorm, param_words};
use crate::wgpu::repr::Repr;
use crate::wgpu::{KernelKey, WgpuBackend, WgpuStorage};
use crate::{BackendKind, DType, Error, Layout, Result};

/// A program a GEMM computes over its product where it stores C (see [`Epilogue`]), and the
/// program's inputs after the product, each in C's shape.
pub(crate) struct EpilogueArgs<'a> {
    pub program: &'a Program,
    pub inputs: &'a [(&'a WgpuStorage, &'a Layout)],
}

impl EpilogueArgs<'_> {
    /// Whether the GEMM kernels can take it: as many inputs as they have bindings left, a
    /// result of C's dtype, and no scalar parameters (their words would be the GEMM's).
    pub(crate) fn fits(&self, dtype: DType) -> bool {
        let p = self.program;
        self.inputs.len() <= EPILOGUE_INPUTS.len() && p.dtype() == dtype && p.params() == 0
    }

    /// The epilogue as a kernel's source sees it (its inputs' index maps, not their data).
    pub(crate) fn key(&self) -> Epilogue {
        Epilogue { program: self.program.clone(), index: self.inputs.iter().map(|(_, l)| Index::of(l)).collect() }
    }
}

/// A norm of A's rows that a GEMM computes first (the columns matrix-vector kernel's prologue:
/// `nn::rows`): which norm, its weight and bias, and its words (their offsets and strides, eps).
pub(crate) struct Prologue<'a> {
    pub norm: RowNorm,
    pub w: Option<&'a WgpuStorage>,
    pub b: Option<&'a WgpuStorage>,
    pub words: [u32; 5],
}

impl<'a> Prologue<'a> {
    /// The tensors it binds besides the kernel's own (its weight and bias).
    pub(crate) fn tensors(&self) -> usize {
        self.w.is_some() as usize + self.b.is_some() as usize
    }

    /// The prologue computing `n` (its input is the product's x or A, bound by the caller).
    pub(crate) fn of(n: &RowNormArgs<'a, WgpuStorage>) -> Prologue<'a> {
        Prologue {
            norm: RowNorm::of(n.op, n.w.is_some(), n.b.is_some()),
            w: n.w.map(|w| w.0),
            b: n.b.map(|b| b.0),
            words: param_words(n.w.map(|w| w.1), n.b.map(|b| b.1), n.eps),
        }
    }
}

impl WgpuBackend {
    /// Records `g` (A in `a`; B in `b`, read through a convolution's `gather` where given) into a new contiguous `(batch.., m, n)` storage, on the
    /// kernel and parts of K that `table` plans for it here; with `epilogue`, its program's
    /// values instead of the product's (the caller checked it [`EpilogueArgs::fits`]).
    pub(crate) fn run_gemm(
        &self,
        table: &Table,
        g: Gemm,
        gather: Option<ConvGather>,
        (a, b): (&WgpuStorage, &WgpuStorage),
        epilogue: Option<&EpilogueArgs>,
    ) -> Result<WgpuStorage> {
        let room = self.room();
        let Plan { kernel, gemm, split } = table.plan(g, a.dtype, room, hooks::forced());
        hooks::record(kernel, split.0);
        // The transposed problem multiplies the operands the other way round.
        let (a, b) = if gemm.c_transposed { (b, a) } else { (a, b) };
        self.gemm(&kernel, split, &gemm, gather, (a, b), (epilogue, None))
    }

    /// [`WgpuBackend::run_gemm`] of `table`'s plain GEMMs with A the input of `prologue`'s norm,
    /// normed in the kernel: where the table plans the columns matrix-vector kernel for `g`
    /// (one batch, K whole, a workgroup of whole groups of the norm's lanes) and its bindings
    /// hold the norm's and the epilogue's tensors; `None` elsewhere (the caller norms first).
    pub(crate) fn run_gemm_normed(
        &self,
        g: Gemm,
        (a, b): (&WgpuStorage, &WgpuStorage),
        epilogue: Option<&EpilogueArgs>,
        prologue: &Prologue,
    ) -> Result<Option<WgpuStorage>> {
        let room = self.room();
        let Plan { kernel, gemm, split } = super::TABLE.plan(g, a.dtype, room, hooks::forced());
        let lanes = crate::wgpu::nn::rows::LANES;
        let bindings = prologue.tensors() + epilogue.map_or(0, |e| e.inputs.len());
        let fits = matches!(kernel, Kernel::MatVec(v) if !v.rows)
            && !gemm.c_transposed
            && split.0 == 1
            && gemm.batches() == 1
            && kernel.invocations().is_multiple_of(lanes)
            && bindings <= EPILOGUE_INPUTS.len();
        if !fits {
            return Ok(None);
        }
        hooks::record(kernel, split.0);
        self.gemm(&kernel, split, &gemm, None, (a, b), (epilogue, Some(prologue))).map(Some)
    }

    /// Runs `g` with kernel `k` into a new contiguous `(batch.., m, n)` storage, K in `split.0`
    /// parts of `split.1` (split-K: a tiled or cooperative `k`; see [`super::problem::split_k`]),
    /// with the epilogue and the prologue (a norm of A's rows) given.
    fn gemm(
        &self,
        k: &Kernel,
        split: (usize, usize),
        g: &Gemm,
        gather: Option<ConvGather>,
        (a, b): (&WgpuStorage, &WgpuStorage),
        (epilogue, prologue): (Option<&EpilogueArgs>, Option<&Prologue>),
    ) -> Result<WgpuStorage> {
        let dtype = a.dtype;
        // The table picks within the adapter's workgroup memory and invocations; a kernel forced
        // past them (a sweep, the suite's forced tiles on a small adapter) is refused here, not
        // by wgpu.
        let needed = match k {
            Kernel::Tiled(t) => t.workgroup_bytes(tile_elem_size(dtype)),
            Kernel::Coop(t) => t.workgroup_bytes(),
            Kernel::MatVec(v) => v.workgroup_bytes(dtype),
        };
        let (bytes, invocations) = (self.gemm_workgroup_bytes(), self.gemm_invocations());
        if needed > bytes || k.invocations() > invocations {
            let (what, needed, limit) = if needed > bytes {
                ("workgroup memory", needed, bytes)
            } else {
                ("invocations per workgroup", k.invocations(), invocations)
            };
            return Err(Error::LimitExceeded {
                backend: BackendKind::Wgpu,
                what: format!("{what} of the GEMM kernel {k} for {dtype}"),
                needed: needed as u64,
                limit: limit as u64,
            });
        }
        let total = g.batches() * g.m * g.n;
        let c = self.storage(dtype, total)?;
        if total == 0 {
            return Ok(c);
        }
        let r = Repr::of(dtype, self.caps(), MatmulOp::Matmul.name())?;
        let vec = match (k, &gather) {
            (Kernel::Coop(_), _) => CoopTiles::VEC,
            _ => 4,
        };
        let shape = Variant {
            dtype,
            a: Load::of(&g.a, r, vec),
            b: if gather.is_some() { Load::Gather } else { Load::of(&g.b, r, vec) },
            // Whole runs of four outputs per store, which the rows kernel (one output per
            // invocation) does not write: there, packed outputs take the atomic word update.
            c_vec: !matches!(k, Kernel::MatVec(v) if v.rows) && g.n.is_multiple_of(4) && (!g.c_transposed || g.m == 1),
            gather,
            split: split.0 > 1,
            // Split-K's sum takes it.
            epilogue: epilogue.filter(|_| split.0 == 1).map(EpilogueArgs::key),
            prologue: prologue.map(|p| p.norm),
        };
        let c_vec = shape.c_vec;
        let (spec, pipeline) = self.gemm_pipeline(Stage::Gemm(*k), shape)?;
        let tiles = match k {
            Kernel::Tiled(t) => (g.m.div_ceil(t.bm as usize), g.n.div_ceil(t.bn as usize)),
            Kernel::Coop(t) => (g.m.div_ceil(t.bm as usize), g.n.div_ceil(t.bn as usize)),
            Kernel::MatVec(v) => (1, g.n.div_ceil(if v.rows { v.tiles.lanes } else { 4 * v.tiles.lanes } as usize)),
        };
        let groups = (tiles.0 * tiles.1 * g.batches() * split.0) as u64;
        let (layouts, inputs): (Vec<&Layout>, Vec<&wgpu::Buffer>) =
            epilogue.map_or(&[][..], |e| e.inputs).iter().map(|(s, l)| (*l, s.buffer())).unzip();
        let threads = groups * spec.workgroup as u64;
        if split.0 == 1 {
            let mut words = g.meta(tiles, split);
            let mut norm = vec![];
            if let Some(p) = prologue {
                let at = super::slots::PRO_PARAMS.at;
                words[at..at + 4].copy_from_slice(&p.words[..4]);
                words[super::slots::PRO_EPS.at] = p.words[4];
                norm.extend([p.w, p.b].into_iter().flatten().map(|s| s.buffer()));
            }
            let meta = spec.meta(0, &layouts, &words);
            let buffers = [&[a.buffer(), b.buffer(), c.buffer()][..], &norm, &inputs].concat();
            self.run(&spec, &pipeline, &buffers, &meta, threads)?;
            return Ok(c);
        }
        let meta = spec.meta(0, &[], &g.meta(tiles, split));
        let p = self.storage(DType::F32, split.0 * total)?;
        self.run(&spec, &pipeline, &[a.buffer(), b.buffer(), p.buffer()], &meta, threads)?;
        // The sum's source depends on C alone.
        let epilogue = epilogue.map(EpilogueArgs::key);
        let sum = Variant::sum(dtype, c_vec, epilogue);
        let (spec, pipeline) = self.gemm_pipeline(Stage::Sum, sum)?;
        let meta = spec.meta(0, &layouts, &sum_meta(total, split.0));
        let buffers = [&[p.buffer(), c.buffer()][..], &inputs].concat();
        self.run(&spec, &pipeline, &buffers, &meta, total.div_ceil(4) as u64)?;
        Ok(c)
    }

    /// The GEMM-family kernel `stage` for problems of `shape`, and its pipeline: generated and
    /// built at first use, then found by `(stage, shape)` alone (generating a GEMM's WGSL and
    /// hashing it costs more CPU than recording an op).
    fn gemm_pipeline(&self, stage: Stage, shape: Variant) -> Result<crate::wgpu::Kernel> {
        let build = || spec(self.caps(), stage, &shape);
        self.keyed(KernelKey::Gemm(stage, shape.clone()), build)
    }

    /// What a table may plan for here: the workgroup memory and invocations, cooperative
    /// matrices, split-K.
    fn room(&self) -> Room {
        Room {
            bytes: self.gemm_workgroup_bytes(),
            invocations: self.gemm_invocations(),
            coop: self.coop(),
            split: self.tune().gemm_split != Some(false),
        }
    }

    /// Whether f16 GEMMs run on cooperative matrices here.
    pub(crate) fn coop(&self) -> bool {
        self.0.gpu.coop_missing().is_none()
    }

    /// What `info()` says of the GEMM kernels this adapter gets.
    pub(crate) fn gemm_info(&self) -> String {
        let coop = match self.0.gpu.coop_missing() {
            None => "cooperative matrix 16x16x16 f16->f32 (f16)".to_string(),
            Some(why) => format!("no cooperative matrix ({why})"),
        };
        format!(
            "tiled (f32, bf16, f64{}), matrix-vector (m or n <= {MATVEC_MAX_M}), {coop}",
            if self.coop() { "" } else { ", f16" }
        )
    }

    /// Workgroup memory a GEMM kernel may use.
    pub(crate) fn gemm_workgroup_bytes(&self) -> u32 {
        self.0.gpu.limits.max_compute_workgroup_storage_size
    }

    /// Invocations a GEMM workgroup may have (its kernels are one-dimensional).
    pub(crate) fn gemm_invocations(&self) -> u32 {
        let l = &self.0.gpu.limits;
        l.max_compute_invocations_per_workgroup.min(l.max_compute_workgroup_size_x)
    }
}
