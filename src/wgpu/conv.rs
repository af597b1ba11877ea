//! Convolutions on wgpu as implicit GEMM (`shaders/conv.wgsl` on the kernels of
//! `shaders/matmul.wgsl`): per image and group, `C = W x`, the weight as A (contiguous
//! `(groups, C_out / groups, C_in / groups · taps)`, copied into that order only where its
//! layout is not already it) and the image's windows as B, gathered while the tiles load. A
//! 1x1 convolution of stride 1 without padding is a plain GEMM on the image as it lies.

use super::gemm::slots as md;
use super::gemm::{CONV, ConvGather, Gemm, Operand, too_large, variants};
use super::kernel::Spec;
use super::repr::{Caps, Repr};
use super::{WgpuBackend, WgpuStorage};
use crate::backend::{ConvOps, CopyOps};
use crate::spec::conv::{Conv2, ConvOp};
use crate::{Layout, Result};

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
            let ([ih, iw], [kh, kw], ow) = (self.input, self.kernel, self.output[1]);
            let ([sh, sw], [ph, pw], [dh, dw]) = (self.stride, self.padding, self.dilation);
            [
                (md::CONV_IH, ih),
                (md::CONV_IW, iw),
                (md::CONV_OW, ow),
                (md::CONV_KH, kh),
                (md::CONV_KW, kw),
                (md::CONV_SH, sh),
                (md::CONV_SW, sw),
                (md::CONV_PH, ph),
                (md::CONV_PW, pw),
                (md::CONV_DH, dh),
                (md::CONV_DW, dw),
                (md::CONV_CS, xs[1]),
                (md::CONV_HS, xs[2]),
                (md::CONV_WS, xs[3]),
            ]
            .map(|(s, w)| (s, w as u32))
            .to_vec()
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
        let gather = (!gemm.gather.is_empty()).then_some(ConvGather {
            transposed,
            kernel: c.kernel,
            stride: c.stride,
            dilation: c.dilation,
        });
        self.run_gemm(&CONV, gemm, gather, (w, x), None)
    }
}

/// Every convolution kernel for `caps` ([`variants::conv`]), each op's gather for a 3x3 window
/// of stride 2 (every division of the gather kept).
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    let mut v = vec![];
    for &op in ConvOp::ALL {
        let gather = ConvGather { transposed: op.is_transposed(), kernel: [3, 3], stride: [2, 2], dilation: [1, 1] };
        v.extend(variants::conv(caps, op.name(), op.dtypes(), op.spatial_dims() == 1, gather));
    }
    v
}
