//! Convolutions and their transposes on the cpu: one core for all four ops, 1-D run as 2-D
//! with a height of 1. Inputs are first copied to contiguous f64 planes so the inner loops run
//! over contiguous rows; every product accumulates in f64 and rounds once to the dtype.

use super::{CpuBackend, CpuStorage, dtype_mismatch, map_strided, wrong_dtype};
use crate::backend::ConvOps;
use crate::spec::conv::{Conv2, ConvOp};
use crate::{DType, Layout, Result, WithDType, with_storage_pair};
use std::ops::Range;

/// The positions `o < n_o` whose partner `o * s + off` lies in `0..n_i`.
fn valid(n_o: usize, n_i: usize, s: usize, off: isize) -> Range<usize> {
    let lo = if off < 0 { off.unsigned_abs().div_ceil(s) } else { 0 };
    let hi = if n_i as isize - off <= 0 { 0 } else { ((n_i as isize - off - 1) as usize / s + 1).min(n_o) };
    lo..hi.max(lo)
}

/// The whole convolution on contiguous f64 data; the result is contiguous `(N, C_out, OH, OW)`.
fn conv_f64(x: &[f64], k: &[f64], g: &Conv2, transposed: bool) -> Vec<f64> {
    let (cig, cog) = (g.cig(), g.cog());
    let in_plane = g.input[0] * g.input[1];
    let out_plane = g.output[0] * g.output[1];
    let k_plane = g.kernel[0] * g.kernel[1];
    let mut out = vec![0f64; g.batch * g.c_out * out_plane];
    for n in 0..g.batch {
        for grp in 0..g.groups {
            for co in (grp * cog)..(grp + 1) * cog {
                let dst = &mut out[(n * g.c_out + co) * out_plane..][..out_plane];
                for ci in (grp * cig)..(grp + 1) * cig {
                    let src = &x[(n * g.c_in + ci) * in_plane..][..in_plane];
                    // Kernel `(C_out, C_in / groups, ..)` for conv, `(C_in, C_out / groups, ..)` transposed.
                    let kp = if transposed { ci * cog + co - grp * cog } else { co * cig + ci - grp * cig };
                    plane(dst, src, &k[kp * k_plane..][..k_plane], g, transposed);
                }
            }
        }
    }
    out
}

/// Adds one input plane convolved with one kernel plane to one output plane.
///
/// Conv: `out[o] += w * x[o * s + k * d - p]`; conv_transpose: `out[i * s + k * d - p] += w * x[i]`.
/// Both walk the strided side (`o`, resp. `i`) and meet the other side at `pos * s + off`.
fn plane(out: &mut [f64], x: &[f64], k: &[f64], g: &Conv2, transposed: bool) {
    let (iw, ow, kw) = (g.input[1], g.output[1], g.kernel[1]);
    let (strided, other) = if transposed { (g.input, g.output) } else { (g.output, g.input) };
    let [sh, sw] = g.stride;
    for a in 0..g.kernel[0] {
        let off_h = (a * g.dilation[0]) as isize - g.padding[0] as isize;
        let rows = valid(strided[0], other[0], sh, off_h);
        for b in 0..kw {
            let off_w = (b * g.dilation[1]) as isize - g.padding[1] as isize;
            let cols = valid(strided[1], other[1], sw, off_w);
            if cols.is_empty() {
                continue;
            }
            let (w, c0, len) = (k[a * kw + b], cols.start, cols.len());
            // In range (and so non-negative) by construction of `rows` and `cols`.
            let p2 = ((c0 * sw) as isize + off_w) as usize;
            for r in rows.clone() {
                let r2 = ((r * sh) as isize + off_h) as usize;
                if transposed {
                    axpy(&mut out[r2 * ow + p2..], sw, &x[r * iw + c0..][..len], 1, w);
                } else {
                    axpy(&mut out[r * ow + c0..][..len], 1, &x[r2 * iw + p2..], sw, w);
                }
            }
        }
    }
}

/// `dst[j * dst_step] += w * src[j * src_step]` while both last; unit steps get a plain
/// zip of slices, which the compiler vectorises (a `step_by(1)` walk it does not).
#[inline]
fn axpy(dst: &mut [f64], dst_step: usize, src: &[f64], src_step: usize, w: f64) {
    match (dst_step, src_step) {
        (1, 1) => dst.iter_mut().zip(src).for_each(|(d, &v)| *d += w * v),
        (1, s) => dst.iter_mut().zip(src.iter().step_by(s)).for_each(|(d, &v)| *d += w * v),
        (s, _) => dst.iter_mut().step_by(s).zip(src.iter().step_by(src_step)).for_each(|(d, &v)| *d += w * v),
    }
}

fn run(x: &CpuStorage, xl: &Layout, k: &CpuStorage, kl: &Layout, g: &Conv2, op: ConvOp) -> Result<CpuStorage> {
    if !x.dtype().is_float() {
        return Err(wrong_dtype(op.name(), x, DType::FLOAT));
    }
    let mismatch = dtype_mismatch(op.name(), x, k);
    with_storage_pair!(x, k, (xv, kv) => Ok(typed(xv, xl, kv, kl, g, op.is_transposed())), Err(mismatch))
}

fn typed<T: WithDType>(x: &[T], xl: &Layout, k: &[T], kl: &Layout, g: &Conv2, transposed: bool) -> CpuStorage {
    let xs = map_strided(x, xl, |v| v.to_f64());
    let ks = map_strided(k, kl, |v| v.to_f64());
    let out = conv_f64(&xs, &ks, g, transposed);
    CpuStorage::from_vec(out.into_iter().map(T::from_f64).collect::<Vec<T>>())
}

impl ConvOps for CpuBackend {
    fn conv(
        &self,
        op: ConvOp,
        x: &CpuStorage,
        xl: &Layout,
        k: &CpuStorage,
        kl: &Layout,
        g: &Conv2,
    ) -> Result<CpuStorage> {
        run(x, xl, k, kl, g, op)
    }
}
