//! Norms of a few rows (`shaders/nn.wgsl`, `row_norm` and `norm_rows`): what a decode step
//! normalises before each matrix-vector product. Formed by code that a product's prologue shares
//! (`gemm::codegen`), so that a norm computed inside the product that reads it is the same bits
//! as the norm stored and read back (ARCHITECTURE.md, fusion: norms in a product's prologue).

use crate::expr::Dialect;
use crate::spec::Family;
use crate::spec::nn::NnOp;
use crate::wgpu::kernel::{Index, Spec, family_source, section};
use crate::wgpu::render::Wgsl;
use crate::wgpu::repr::{Access, Caps, Compute, Repr};
use crate::wgpu::{WgpuBackend, WgpuStorage};
use crate::{DType, Layout, Result};
use std::fmt::Write;

/// Rows a few-rows norm takes at most: the matrix-vector kernels' (`MATVEC_MAX_M`).
const MAX_ROWS: usize = crate::wgpu::gemm::MATVEC_MAX_M;

/// The longest row: 64 lanes then hold 256 units each.
const MAX_N: usize = 1 << 16;

/// Lanes a row (`RN_T` in the WGSL).
pub(crate) const LANES: u32 = 64;

/// Which norm, with which parameters: all a few-rows norm's code depends on besides the dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RowNorm {
    /// A layer norm (the mean taken out); else an rms norm.
    pub center: bool,
    pub weight: bool,
    pub bias: bool,
}

impl RowNorm {
    pub(crate) fn of(op: NnOp, weight: bool, bias: bool) -> RowNorm {
        RowNorm { center: op == NnOp::LayerNorm, weight, bias }
    }

    /// `rn_w` and `rn_b` from bindings `nw` and `nb`, whose offsets and strides are the four
    /// words from `md[base]` (both functions even where RN_W or RN_B is false: WGSL wants them).
    pub(crate) fn params_code(self, base: &str) -> String {
        let f = |name: &str, on: bool, j: u32| {
            let v = if on {
                format!("n{name}_load(md[{base} + {j}u] + e * md[{base} + {}u])", j + 1)
            } else {
                "0.0".into()
            };
            format!("fn rn_{name}(e: u32) -> f32 {{ return {v}; }}\n")
        };
        f("w", self.weight, 0) + &f("b", self.bias, 2)
    }

    /// The shared section's constants and `rn_round` for `dtype`, then the section: the kernel
    /// adds `rn_x`, `rn_w`, `rn_b`, `rn_n` and `rn_eps`.
    pub(crate) fn code(self, caps: Caps, dtype: DType) -> Result<String> {
        let w = Wgsl { caps, names: &[] };
        let mut s = String::new();
        for (name, on) in [("RN_CENTER", self.center), ("RN_W", self.weight), ("RN_B", self.bias)] {
            let _ = writeln!(s, "const {name}: bool = {on};");
        }
        Repr::of(dtype, caps, NnOp::LayerNorm.name())?;
        let _ = writeln!(s, "fn rn_round(v: f32) -> f32 {{ return {}; }}", w.stored("v".into(), dtype));
        Ok(s + section(family_source(Family::Nn), "row_norm"))
    }
}

/// Whether a norm over the last dim of `l` in `dtype` is one of a few rows: contiguous, at most
/// [`MAX_ROWS`] rows of whole units of four (at most [`MAX_N`] elements), computed in f32.
pub(crate) fn few_rows(l: &Layout, dtype: DType, caps: Caps) -> bool {
    let n = l.dims().last().copied().unwrap_or(0);
    let f32 = Repr::of(dtype, caps, NnOp::LayerNorm.name()).is_ok_and(|r| r.compute() == Compute::F32);
    f32 && l.is_contiguous()
        && (4..=MAX_N).contains(&n)
        && n.is_multiple_of(4)
        && (1..=MAX_ROWS).contains(&(l.elem_count() / n))
}

/// The `norm_rows` kernel of `v` for `dtype`.
pub(crate) fn norm_rows_spec(caps: Caps, dtype: DType, v: RowNorm) -> Result<Spec> {
    let r = Repr::of(dtype, caps, NnOp::LayerNorm.name())?;
    let mut spec = Spec::new(Family::Nn, "norm_rows", caps).bind("x", r, Access::Read, Index::None);
    if v.weight {
        spec = spec.bind("nw", r, Access::Read, Index::None);
    }
    if v.bias {
        spec = spec.bind("nb", r, Access::Read, Index::None);
    }
    spec = spec.bind("y", r, Access::Write, Index::None);
    spec.workgroup = LANES;
    let mut io = String::from(
        "fn rn_n() -> u32 { return md[EXTRA]; }\n\
         fn rn_x(row: u32, e: u32) -> f32 { return x_load(md[EXTRA + 1u] + row * md[EXTRA] + e); }\n\
         fn rn_eps() -> f32 { return bitcast<f32>(md[EXTRA + 6u]); }\n",
    );
    io += &v.params_code("EXTRA + 2u");
    Ok(spec.code(io).code(v.code(caps, dtype)?))
}

/// Where the weight and bias start and their strides, eps's f32 bits: the words a few-rows norm
/// reads after N and x's offset (and a product's prologue in its own slots).
pub(crate) fn param_words(w: Option<&Layout>, b: Option<&Layout>, eps: f64) -> [u32; 5] {
    let p = |l: Option<&Layout>| l.map_or([0, 0], |l| [l.offset() as u32, l.strides()[0] as u32]);
    let ([wo, ws], [bo, bs]) = (p(w), p(b));
    [wo, ws, bo, bs, (eps as f32).to_bits()]
}

impl WgpuBackend {
    /// `op` (layer_norm or rms_norm) of the few rows of `(x, l)` ([`few_rows`]).
    pub(super) fn norm_rows(
        &self,
        op: NnOp,
        (x, l): (&WgpuStorage, &Layout),
        w: Option<(&WgpuStorage, &Layout)>,
        b: Option<(&WgpuStorage, &Layout)>,
        eps: f64,
    ) -> Result<WgpuStorage> {
        let y = self.storage(x.dtype, l.elem_count())?;
        let n = l.dims()[l.rank() - 1];
        let v = RowNorm::of(op, w.is_some(), b.is_some());
        let (spec, pipeline) =
            self.keyed(crate::wgpu::KernelKey::NormRows(x.dtype, v), || norm_rows_spec(self.caps(), x.dtype, v))?;
        let mut extra = vec![n as u32, l.offset() as u32];
        extra.extend(param_words(w.map(|p| p.1), b.map(|p| p.1), eps));
        let meta = spec.meta(l.elem_count() as u32, &[], &extra);
        let bufs: Vec<&wgpu::Buffer> =
            [Some(x), w.map(|p| p.0), b.map(|p| p.0), Some(&y)].into_iter().flatten().map(|s| s.buffer()).collect();
        let rows = (l.elem_count() / n) as u64;
        self.run(&spec, &pipeline, &bufs, &meta, rows * LANES as u64)?;
        Ok(y)
    }
}
