//! softmax, log_softmax, layer_norm, rms_norm and batch_norm on wgpu (`shaders/nn.wgsl`).
//!
//! The first four walk lines: the elements along the op's dim (the last dim for the norms) at
//! each position of the other dims, read in place through the input's strides. A line of up to
//! `4 U T` elements (T lanes of U units) is read once into registers, reduced to its statistics
//! (online max and sum of exponentials for softmax, count/mean/M2 merged by Chan's formula for
//! layer_norm, a sum of squares for rms_norm), and written from the registers; longer lines are
//! read twice, tile by tile. Lines whose elements are closely spaced get consecutive lanes
//! (rows); lines whose neighbours are (a softmax over a leading dim) get strided lanes, so that
//! loads coalesce across lines (cols). Statistics combine through subgroup shuffles where the
//! adapter has subgroups (rows, f32), else through a tree in workgroup memory. f16 and bf16
//! compute in f32, f64 in f64. batch_norm is elementwise. The norms of a few rows (a decode
//! step's) take `rows.rs` instead, whose code a matrix-vector product's prologue shares.

mod code;
mod pointwise;
pub(crate) mod rows;

use super::kernel::Index;
use super::repr::{Compute, Repr, params};
use super::{WgpuBackend, WgpuStorage};
use crate::backend::{NnOps, Operand, Param};
use crate::spec::nn::NnOp;
use crate::{Layout, Result, Scalar};
pub(crate) use code::Variant;
pub use code::shader_variants;
use code::{COLS_LINES, LINES_WG, LONG_UNITS, MAX_LANES, SHORT_UNITS, Store, lines_spec};
pub(crate) use pointwise::PointKey;

/// The lines of `l` along `dim`: kept dims (size 1 dropped, neighbours merged, in order) as
/// (size, stride), the line length and stride, and the output stride of a line's elements.
struct Lines {
    offset: usize,
    kept: Vec<(usize, usize)>,
    n: usize,
    sr: usize,
    inner: usize,
}

impl Lines {
    fn new(l: &Layout, dim: usize) -> Lines {
        let mut kept: Vec<(usize, usize)> = vec![];
        for (d, (&n, &s)) in l.dims().iter().zip(l.strides()).enumerate() {
            if d == dim || n == 1 {
                continue;
            }
            match kept.last_mut() {
                Some((pn, ps)) if *ps == s * n => {
                    *pn *= n;
                    *ps = s;
                }
                _ => kept.push((n, s)),
            }
        }
        let inner = l.dims()[dim + 1..].iter().product();
        Lines { offset: l.offset(), kept, n: l.dims()[dim], sr: l.strides()[dim], inner }
    }

    fn count(&self) -> usize {
        self.kept.iter().map(|d| d.0).product()
    }

    /// Whether a line's elements are closer than neighbouring lines' (lanes along the line).
    fn rows(&self) -> bool {
        match self.kept.last() {
            None => true,
            Some(&(_, sk)) => self.n == 1 || self.sr == 1 || (sk != 1 && self.sr <= sk),
        }
    }

    /// Whether every line starts on a multiple of 4 and is contiguous.
    fn aligned(&self) -> bool {
        self.sr == 1 && self.offset.is_multiple_of(4) && self.kept.iter().all(|d| d.1.is_multiple_of(4))
    }
}

/// How lanes take lines: the kernel's workgroup size, units per lane, lanes per line (`lines`),
/// whether neighbouring lines share a workgroup (cols), lines per workgroup, and workgroups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Plan {
    subgroup: bool,
    wg: u32,
    units: u32,
    lanes: u32,
    cols: bool,
    per: u32,
    groups: u64,
}

/// Bytes of one line state in workgroup memory.
fn state_bytes(op: NnOp, c: Compute) -> u32 {
    let fields = match op {
        NnOp::Softmax | NnOp::LogSoftmax => 2,
        NnOp::LayerNorm => 3,
        _ => 1,
    };
    fields * if c == Compute::F64 { 8 } else { 4 }
}

/// The largest power of two at most `v` (`v >= 1`).
fn floor_pow2(v: u32) -> u32 {
    1 << (31 - v.max(1).leading_zeros())
}

impl WgpuBackend {
    fn plan(&self, lines: &Lines, op: NnOp, c: Compute) -> Plan {
        let limits = &self.0.gpu.limits;
        let info = &self.0.gpu.info;
        let fit = limits.max_compute_workgroup_storage_size / state_bytes(op, c);
        let max_wg = floor_pow2(
            MAX_LANES
                .min(limits.max_compute_invocations_per_workgroup)
                .min(limits.max_compute_workgroup_size_x)
                .min(fit),
        );
        let few_wg = LINES_WG.min(max_wg);
        let count = lines.count() as u64;
        let u = (lines.n as u64).div_ceil(4);
        // A browser's software fallback adapter (Chromium's SwiftShader) takes long lines in
        // short units too: compiling log_softmax bf16 with 16 units unrolled grew its GPU process
        // past 11 GB for minutes without finishing (issue 12).
        let long = lines.rows() && u > SHORT_UNITS as u64 * 64 && !self.browser_fallback();
        let units = if long { LONG_UNITS } else { SHORT_UNITS };
        let want = u.div_ceil(units as u64).next_power_of_two().min(max_wg as u64) as u32;
        let (sg_min, sg_max) = (info.subgroup_min_size.max(1), info.subgroup_max_size.max(1));
        let plan = |subgroup, wg, lanes, cols, per: u32| Plan {
            subgroup,
            wg,
            units,
            lanes,
            cols,
            per,
            groups: count.div_ceil(per as u64),
        };
        if !lines.rows() {
            let x = count.next_power_of_two().min(COLS_LINES) as u32;
            let lanes = want.min(few_wg / x).max(1);
            return plan(false, few_wg, lanes, true, few_wg / lanes);
        }
        // Subgroups need whole ones: a workgroup of at least the largest.
        if self.caps().subgroup && c == Compute::F32 && sg_max <= few_wg {
            if want <= sg_min {
                return plan(true, few_wg, sg_min, false, few_wg / sg_min);
            }
            return plan(true, want.max(sg_max).min(max_wg), want, false, 1);
        }
        if want >= few_wg {
            return plan(false, want, want, false, 1);
        }
        plan(false, few_wg, want, false, few_wg / want)
    }

    fn lines_op(
        &self,
        op: NnOp,
        (x, l): (&WgpuStorage, &Layout),
        dim: usize,
        w: Param<WgpuStorage>,
        b: Param<WgpuStorage>,
        eps: f64,
    ) -> Result<WgpuStorage> {
        let y = self.storage(x.dtype, l.elem_count())?;
        let lines = Lines::new(l, dim);
        let count = lines.count();
        if count == 0 || lines.n == 0 {
            return Ok(y);
        }
        let caps = self.caps();
        let r = Repr::of(x.dtype, caps, op.name())?;
        let c = r.compute();
        let plan = self.plan(&lines, op, c);
        let n = lines.n;
        let vec = r.vectorizes() && n.is_multiple_of(4);
        let x_vec = vec && lines.aligned();
        let p_vec = vec && [w, b].iter().flatten().all(|(_, pl)| pl.offset().is_multiple_of(4) && pl.strides()[0] == 1);
        let store = if vec && lines.inner == 1 {
            Store::Vec
        } else if r.per_word() == 1 || (lines.inner == 1 && n.is_multiple_of(2)) {
            Store::Words
        } else {
            Store::Atomic
        };
        let v = Variant {
            op,
            subgroup: plan.subgroup,
            whole: plan.subgroup && plan.per == 1,
            wg: plan.wg,
            units: plan.units,
            x_vec,
            p_vec,
            store,
            weight: w.is_some(),
            bias: b.is_some(),
        };
        let (spec, pipeline) = self.keyed(super::KernelKey::Lines(x.dtype, v), || lines_spec(caps, x.dtype, v))?;
        let param = |p: Param<WgpuStorage>| p.map_or([0, 0], |(_, pl)| [pl.offset(), pl.strides()[0]]);
        let mut extra = params::encode(c, &[Scalar::from(eps)]);
        let words = [count, n, lines.sr, lines.inner, plan.lanes as usize, plan.cols as usize, plan.per as usize];
        extra.extend(words.iter().chain(&param(w)).chain(&param(b)).map(|&v| v as u32));
        extra.extend([lines.offset as u32, lines.kept.len() as u32]);
        extra.extend(lines.kept.iter().map(|d| d.0 as u32));
        extra.extend(lines.kept.iter().map(|d| d.1 as u32));
        let meta = spec.meta(l.elem_count() as u32, &[], &extra);
        let bufs: Vec<&wgpu::Buffer> =
            [Some(x), w.map(|p| p.0), b.map(|p| p.0), Some(&y)].into_iter().flatten().map(|s| s.buffer()).collect();
        self.run(&spec, &pipeline, &bufs, &meta, plan.groups * plan.wg as u64)?;
        Ok(y)
    }
}

impl NnOps for WgpuBackend {
    fn softmax(&self, x: &WgpuStorage, l: &Layout, op: NnOp, dim: usize) -> Result<WgpuStorage> {
        self.lines_op(op, (x, l), dim, None, None, 0.0)
    }

    fn layer_norm(
        &self,
        x: &WgpuStorage,
        l: &Layout,
        w: Param<WgpuStorage>,
        b: Param<WgpuStorage>,
        eps: f64,
    ) -> Result<WgpuStorage> {
        if rows::few_rows(l, x.dtype, self.caps()) {
            return self.norm_rows(NnOp::LayerNorm, (x, l), w, b, eps);
        }
        self.lines_op(NnOp::LayerNorm, (x, l), l.rank() - 1, w, b, eps)
    }

    fn rms_norm(&self, x: &WgpuStorage, l: &Layout, w: Param<WgpuStorage>, eps: f64) -> Result<WgpuStorage> {
        if rows::few_rows(l, x.dtype, self.caps()) {
            return self.norm_rows(NnOp::RmsNorm, (x, l), w, None, eps);
        }
        self.lines_op(NnOp::RmsNorm, (x, l), l.rank() - 1, w, None, eps)
    }

    fn batch_norm(
        &self,
        x: &WgpuStorage,
        l: &Layout,
        mean: (&WgpuStorage, &Layout),
        var: (&WgpuStorage, &Layout),
        w: Param<WgpuStorage>,
        b: Param<WgpuStorage>,
        eps: f64,
    ) -> Result<WgpuStorage> {
        let n = l.elem_count();
        let y = self.storage(x.dtype, n)?;
        if n == 0 {
            return Ok(y);
        }
        let key = pointwise::PointKey::BatchNorm(x.dtype, Index::of(l), w.is_some(), b.is_some());
        let (spec, pipeline) = self.point_kernel(key)?;
        let r = spec.bindings[0].repr;
        let inner: usize = l.dims()[2..].iter().product();
        let mut extra = params::encode(r.compute(), &[Scalar::from(eps)]);
        extra.extend([l.dims()[1], inner].map(|v| v as u32));
        for p in [Some(mean), Some(var), w, b] {
            let [off, stride] = p.map_or([0, 0], |(_, pl)| [pl.offset(), pl.strides()[0]]);
            extra.extend([off as u32, stride as u32]);
        }
        let meta = spec.meta(n as u32, &[l], &extra);
        let bufs: Vec<&wgpu::Buffer> = [Some(x), Some(mean.0), Some(var.0), w.map(|p| p.0), b.map(|p| p.0), Some(&y)]
            .into_iter()
            .flatten()
            .map(|s| s.buffer())
            .collect();
        self.run(&spec, &pipeline, &bufs, &meta, n.div_ceil(r.per_word() as usize) as u64)?;
        Ok(y)
    }

    fn local_response_norm(
        &self,
        x: &WgpuStorage,
        l: &Layout,
        size: usize,
        alpha: f64,
        beta: f64,
        k: f64,
    ) -> Result<WgpuStorage> {
        self.lrn(x, l, size, alpha, beta, k)
    }

    fn rnn_cell(
        &self,
        op: NnOp,
        gx: Operand<WgpuStorage>,
        gh: Operand<WgpuStorage>,
        bias: Param<WgpuStorage>,
        state: Operand<WgpuStorage>,
    ) -> Result<WgpuStorage> {
        self.cell(op, gx, gh, bias, state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_see_kept_dims_in_order_and_pick_their_mapping() {
        let l = Layout::contiguous([4, 5, 6]);
        let last = Lines::new(&l, 2);
        assert_eq!((last.kept.clone(), last.n, last.sr, last.inner), (vec![(20, 6)], 6, 1, 1));
        assert!(last.rows() && !last.aligned());
        let first = Lines::new(&l, 0);
        assert_eq!((first.kept.clone(), first.n, first.sr, first.inner), (vec![(30, 1)], 4, 30, 30));
        assert!(!first.rows());
        // Dim 0 of a transposed matrix is contiguous in storage: rows, though not the last dim.
        let t = Layout::contiguous([8, 3]).transpose(0, 1).unwrap_or_else(|e| panic!("{e}"));
        let l0 = Lines::new(&t, 1);
        assert_eq!((l0.kept.clone(), l0.sr, l0.inner), (vec![(3, 1)], 3, 1));
        assert!(!l0.rows());
        assert!(Lines::new(&t, 0).rows());
        assert!(Lines::new(&Layout::contiguous([16, 8]), 1).aligned());
    }
}
