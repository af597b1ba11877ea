//! Convolutions on wgpu as implicit GEMM (`shaders/conv.wgsl` on the kernels of
//! `shaders/matmul.wgsl`): per image and group, `C = W x`, the weight as A (contiguous
//! `(groups, C_out / groups, C_in / groups · taps)`, copied into that order only where its
//! layout is not already it) and the image's windows as B, gathered while the tiles load. A
//! 1x1 convolution of stride 1 without padding is a plain GEMM on the image as it lies.

use super::coop::CoopTiles;
use super::gemm::Tiles;
use super::gemm::{Gemm, Kernel, Load, Operand, Variant, gemm_spec, too_large};
use super::kernel::{Spec, family_source, section};
use super::matmul::{TABLE, Table, record};
use super::repr::{Caps, Repr};
use super::{WgpuBackend, WgpuStorage};
use crate::backend::{ConvOps, CopyOps};
use crate::spec::Family;
use crate::spec::conv::{Conv2, ConvOp};
use crate::{DType, Layout, Result};

/// The kernel choices of the convolutions: one tile size (their GEMMs have short K and many
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
const CONV: Table = Table {
    big: CONV_TILES,
    big16: CONV_TILES,
    small: CONV_TILES,
    big_from: 0,
    small_from: 0,
    coop: CoopTiles { bm: 64, bn: 64, bk: 32, wm: 2, wn: 2, pad: 8, pipe: 0 },
    ..TABLE
};
const CONV_TILES: Tiles = Tiles { bm: 64, bn: 64, bk: 16, tm: 4, tn: 4, pad: 0 };

/// The strides `(N, C, H, W)` of a rank-4 layout.
fn strides4(l: &Layout) -> [usize; 4] {
    let s = l.strides();
    [s[0], s[1], s[2], s[3]]
}

impl Conv2 {
    /// The weight as `(groups, C_out / groups, C_in / groups, KH, KW)`: a conv's weight is
    /// `(C_out, C_in / g, ..)`, a transposed conv's `(C_in, C_out / g, ..)`.
    fn weight_layout(&self, kl: &Layout, transposed: bool) -> Layout {
        let [s0, s1, sh, sw] = strides4(kl);
        let (cig, cog) = (self.cig(), self.cog());
        let strides = if transposed { vec![cig * s0, s1, s0, sh, sw] } else { vec![cog * s0, s0, s1, sh, sw] };
        let [kh, kw] = self.kernel;
        Layout::new([self.groups, cog, cig, kh, kw], strides, kl.offset())
    }

    /// Whether this is a GEMM on the image as it lies: one tap meeting one pixel, and every
    /// pixel's plane one run of the image's W stride.
    fn is_pointwise(&self, xs: [usize; 4]) -> bool {
        self.taps() == 1
            && self.stride == [1, 1]
            && self.padding == [0, 0]
            && self.output == self.input
            && (self.input[0] == 1 || xs[2] == self.input[1] * xs[3])
    }

    /// The GEMM of this convolution with the weight at `w_offset` (contiguous as
    /// [`Conv2::weight_layout`] orders it) and the image laid out as `xl`.
    fn problem(&self, w_offset: usize, xl: &Layout) -> Gemm {
        let xs = strides4(xl);
        let (cig, cog, taps) = (self.cig(), self.cog(), self.taps());
        let k = cig * taps;
        let a = Operand { offset: w_offset, outer: k, k: 1, batch: vec![0, cog * k] };
        let batch = vec![xs[0], cig * xs[1]];
        let pointwise = self.is_pointwise(xs);
        let b = if pointwise {
            Operand { offset: xl.offset(), outer: xs[3], k: xs[1], batch }
        } else {
            Operand { offset: xl.offset(), outer: 0, k: 0, batch }
        };
        let gather = if pointwise {
            vec![]
        } else {
            let [ih, iw] = self.input;
            let [kh, kw] = self.kernel;
            [ih, iw, self.output[1], kh, kw]
                .into_iter()
                .chain(self.stride)
                .chain(self.padding)
                .chain(self.dilation)
                .chain([xs[1], xs[2], xs[3]])
                .map(|w| w as u32)
                .collect()
        };
        Gemm {
            batch: vec![self.batch, self.groups],
            m: cog,
            n: self.output[0] * self.output[1],
            k,
            a,
            b,
            gather,
            c_transposed: false,
        }
        .simplified()
    }
}

/// The WGSL of the image's gather for a convolution (`transposed`: its transpose) with
/// `kernel` taps, `stride` and `dilation`: constants, so that the tap and stride divisions of
/// every gathered element compile to multiplies (or vanish at stride 1).
fn gather_code(transposed: bool, kernel: [usize; 2], stride: [usize; 2], dilation: [usize; 2]) -> String {
    let consts = [
        ("CONV_KW", kernel[1]),
        ("CONV_TAPS", kernel[0] * kernel[1]),
        ("CONV_SH", stride[0]),
        ("CONV_SW", stride[1]),
        ("CONV_DH", dilation[0]),
        ("CONV_DW", dilation[1]),
    ];
    let mut s = format!("const CONV_T: bool = {transposed};\n");
    for (name, v) in consts {
        s += &format!("const {name}: i32 = {v};\n");
    }
    s + section(family_source(Family::Conv), "gather")
}

impl ConvOps for WgpuBackend {
    fn conv(
        &self,
        op: ConvOp,
        x: &WgpuStorage,
        xl: &Layout,
        w: &WgpuStorage,
        wl: &Layout,
        c: &Conv2,
    ) -> Result<WgpuStorage> {
        // Refused under the op's own name, not the GEMM's.
        Repr::of(x.dtype, self.caps(), op.name())?;
        let out = c.out_elems();
        if out as u64 > u32::MAX as u64 {
            return Err(too_large(format!("{} output of {out} elements", op.name()), out as u64, x.dtype));
        }
        let transposed = op.is_transposed();
        let order = c.weight_layout(wl, transposed);
        // The weight is small: where its layout is not the GEMM's A, a copy puts it in order.
        let copied;
        let (w, w_offset) = if order.is_contiguous() {
            (w, order.offset())
        } else {
            let mut dst = self.storage(w.dtype, order.elem_count())?;
            self.copy_strided(w, &order, &mut dst, 0)?;
            copied = dst;
            (&copied, 0)
        };
        let gemm = c.problem(w_offset, xl);
        let tiles = gemm.batches() * gemm.m.div_ceil(128) * gemm.n.div_ceil(128);
        let kernel = CONV.pick(x.dtype, tiles, self.gemm_workgroup_bytes(), self.gemm_invocations(), self.coop());
        record(kernel);
        let gather =
            (!gemm.gather.is_empty()).then(|| (Family::Conv, gather_code(transposed, c.kernel, c.stride, c.dilation)));
        self.gemm(&kernel, 1, &gemm, gather, w, x)
    }
}

/// Every convolution kernel for `caps`, named `{op}_{dtype}` (weight loaded along K, the
/// image gathered, through [`CONV`]'s tiles), then `_{kernel}_{a load}`: those and matmul's
/// large tiles (which a sweep may force) with the weight strided or along K, and the
/// cooperative kernels for f16 (the 1-D ops run the 2-D kernels: they get their first only).
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    use crate::spec::kernel_name;
    let mut v = vec![];
    for &op in ConvOp::ALL {
        let transposed = op.is_transposed();
        for dt in caps.dtypes().into_iter().filter(|d| op.dtypes().contains(d)) {
            let mut kernels = if dt == DType::F64 {
                vec![Kernel::Tiled(TABLE.f64)]
            } else {
                vec![
                    Kernel::Tiled(CONV.big),
                    Kernel::Tiled(TABLE.big),
                    Kernel::Tiled(TABLE.big16),
                    Kernel::Tiled(TABLE.f64),
                ]
            };
            if dt == DType::F16 && caps.f16 {
                kernels.extend([Kernel::Coop(CONV.coop), Kernel::Coop(TABLE.coop)]);
            }
            let base = kernel_name(op.name(), dt);
            let mut first = true;
            // The weight along K with whole runs of C, and strided with ragged ones (f64: strided).
            let loads: &[(Load, bool)] =
                if dt == DType::F64 { &[(Load::Gather, false)] } else { &[(Load::KVec, true), (Load::Gather, false)] };
            for k in kernels {
                for &(a, c_vec) in loads {
                    if !first && op.spatial_dims() == 1 {
                        break;
                    }
                    let name = if first { base.clone() } else { format!("{base}_{k}_{a:?}") };
                    first = false;
                    // A 3x3 window of stride 2: every division of the gather kept.
                    let gather = Some((Family::Conv, gather_code(transposed, [3, 3], [2, 2], [1, 1])));
                    let variant = Variant { dtype: dt, a, b: Load::Gather, c_vec, gather, split: false };
                    v.push((name, gemm_spec(caps, &k, &variant)));
                }
            }
        }
    }
    v
}
