//! Convolutions (cross-correlation, as in PyTorch) and their transposes, 1-D and 2-D.
//!
//! Input `(N, C_in, *S)`. Kernel `(C_out, C_in / groups, *K)` for conv,
//! `(C_in, C_out / groups, *K)` for conv_transpose. Output `(N, C_out, *S_out)` with, per
//! spatial dim, `S_out = (S + 2p - d (K - 1) - 1) / s + 1` for conv and
//! `S_out = (S - 1) s - 2p + d (K - 1) + output_padding + 1` for conv_transpose. No bias.
//!
//! Non-finite kernels: a position of zero padding, or a hole of a transposed convolution (an
//! output no input pixel reaches through some tap), may meet the kernel in a product of zero or
//! be skipped, by backend (the GEMM kernels gather a zero; the cpu skips it; cuDNN and MIOpen
//! choose by algorithm). With an infinite or NaN kernel value, an output whose window reaches
//! such a position is NaN on some backends and the sum of the other products on others.

use super::{Out, check_dtype, check_same_dtype, invalid, spec_enum};
use crate::{DType, Error, Layout, Result};

spec_enum! {
    /// Convolutions (cross-correlations, as in PyTorch) and their transposes.
    pub enum ConvOp in Conv {
        Conv1d = conv1d: DType::FLOAT,
        Conv2d = conv2d: DType::FLOAT,
        ConvTranspose1d = conv_transpose1d: DType::FLOAT,
        ConvTranspose2d = conv_transpose2d: DType::FLOAT,
    }
}

impl ConvOp {
    /// conv_transpose1d or conv_transpose2d.
    pub fn is_transposed(self) -> bool {
        matches!(self, ConvOp::ConvTranspose1d | ConvOp::ConvTranspose2d)
    }

    /// 1 or 2.
    pub fn spatial_dims(self) -> usize {
        match self {
            ConvOp::Conv1d | ConvOp::ConvTranspose1d => 1,
            ConvOp::Conv2d | ConvOp::ConvTranspose2d => 2,
        }
    }
}

/// Parameters per spatial dim (`D` of them). `output_padding` is for transposed convs only.
///
/// ```
/// use rocm_wgpu_ops::spec::conv::ConvParams;
/// use rocm_wgpu_ops::{DType, Device, Tensor};
///
/// let dev = Device::cpu();
/// let x = Tensor::ones([1, 2, 5, 5], DType::F32, &dev)?;
/// let k = Tensor::ones([4, 1, 3, 3], DType::F32, &dev)?;
/// // Two groups of one input channel each; stride 2 over the padded 7 x 7 input.
/// let p = ConvParams::<2>::default().padding(1).stride(2).groups(2);
/// let y = x.conv2d(&k, &p)?;
/// assert_eq!(y.dims(), &[1, 4, 3, 3]);
/// // A corner window holds 4 ones of the input, a middle one 9.
/// assert_eq!(y.to_vec::<f32>()?[..3], [4., 6., 4.]);
/// # Ok::<(), rocm_wgpu_ops::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConvParams<const D: usize> {
    /// Zero padding on both sides of each spatial dim (for a transposed conv: of the forward conv
    /// it inverts).
    pub padding: [usize; D],
    /// Step between windows (a transposed conv: between input pixels on the output).
    pub stride: [usize; D],
    /// Spacing between a kernel's taps.
    pub dilation: [usize; D],
    /// Extra output cells at the end of each spatial dim (transposed convs only; less than stride
    /// or dilation).
    pub output_padding: [usize; D],
    /// Channel groups: the input and output channels are split in `groups` independent parts.
    pub groups: usize,
}

impl<const D: usize> Default for ConvParams<D> {
    fn default() -> Self {
        ConvParams { padding: [0; D], stride: [1; D], dilation: [1; D], output_padding: [0; D], groups: 1 }
    }
}

impl<const D: usize> ConvParams<D> {
    /// The same padding on every spatial dim.
    pub fn padding(mut self, p: usize) -> Self {
        self.padding = [p; D];
        self
    }
    /// The same stride on every spatial dim.
    pub fn stride(mut self, s: usize) -> Self {
        self.stride = [s; D];
        self
    }
    /// The same dilation on every spatial dim.
    pub fn dilation(mut self, d: usize) -> Self {
        self.dilation = [d; D];
        self
    }
    /// The same output padding on every spatial dim.
    pub fn output_padding(mut self, p: usize) -> Self {
        self.output_padding = [p; D];
        self
    }
    /// Channel groups.
    pub fn groups(mut self, g: usize) -> Self {
        self.groups = g;
        self
    }
}

/// A validated convolution, in plain numbers every backend can use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvGeometry<const D: usize> {
    /// Images in the batch (N).
    pub batch: usize,
    /// Input channels.
    pub c_in: usize,
    /// Output channels.
    pub c_out: usize,
    /// Channel groups.
    pub groups: usize,
    /// Input spatial sizes.
    pub input: [usize; D],
    /// Kernel spatial sizes.
    pub kernel: [usize; D],
    /// Output spatial sizes.
    pub output: [usize; D],
    /// The op's parameters.
    pub params: ConvParams<D>,
    /// The output's shape and dtype.
    pub out: Out,
}

/// A validated convolution in two spatial dims, what backends receive: a 1-D one has a
/// leading spatial dim of 1 (H = KH = 1), its operands' layouts lifted by [`nchw`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conv2 {
    /// Images in the batch (N).
    pub batch: usize,
    /// Input channels.
    pub c_in: usize,
    /// Output channels.
    pub c_out: usize,
    /// Channel groups.
    pub groups: usize,
    /// Input spatial sizes (H, W).
    pub input: [usize; 2],
    /// Kernel spatial sizes.
    pub kernel: [usize; 2],
    /// Output spatial sizes (output_padding included).
    pub output: [usize; 2],
    /// Zero padding per spatial dim.
    pub padding: [usize; 2],
    /// Step between windows per spatial dim.
    pub stride: [usize; 2],
    /// Spacing between taps per spatial dim.
    pub dilation: [usize; 2],
}

/// A rank-3 `(N, C, L)` layout as the rank-4 `(N, C, 1, L)` (the new dim's stride 0); a rank-4
/// one as it is.
pub fn nchw(l: &Layout) -> Layout {
    let (d, s) = (l.dims(), l.strides());
    if d.len() == 3 { Layout::new([d[0], d[1], 1, d[2]], vec![s[0], s[1], 0, s[2]], l.offset()) } else { l.clone() }
}

/// `a` for the last `D` dims (`D <= 2`), `fill` before them.
fn lift<const D: usize>(a: [usize; D], fill: usize) -> [usize; 2] {
    let mut r = [fill; 2];
    r.iter_mut().rev().zip(a.iter().rev()).for_each(|(r, &v)| *r = v);
    r
}

impl<const D: usize> From<&ConvGeometry<D>> for Conv2 {
    fn from(g: &ConvGeometry<D>) -> Self {
        let p = &g.params;
        Conv2 {
            batch: g.batch,
            c_in: g.c_in,
            c_out: g.c_out,
            groups: g.groups,
            input: lift(g.input, 1),
            kernel: lift(g.kernel, 1),
            output: lift(g.output, 1),
            padding: lift(p.padding, 0),
            stride: lift(p.stride, 1),
            dilation: lift(p.dilation, 1),
        }
    }
}

impl Conv2 {
    /// Input channels per group.
    pub fn cig(&self) -> usize {
        self.c_in / self.groups
    }

    /// Output channels per group.
    pub fn cog(&self) -> usize {
        self.c_out / self.groups
    }

    /// Taps of the window.
    pub fn taps(&self) -> usize {
        self.kernel[0] * self.kernel[1]
    }

    /// Elements of the output.
    pub fn out_elems(&self) -> usize {
        self.batch * self.c_out * self.output[0] * self.output[1]
    }
}

/// The bias of a convolution whose output is `out` (`(N, C_out, ..)`): 1-D, one value per
/// output channel, of the output's dtype.
pub fn bias(op: ConvOp, out: &Out, bias: (&Layout, DType)) -> Result<()> {
    let name = op.name();
    check_same_dtype(name, out.dtype, bias.1)?;
    let c_out = out.shape.dims().get(1).copied().unwrap_or(0);
    if bias.0.dims() != [c_out] {
        let msg = format!("has shape {}, expected [{c_out}]: one value per output channel", bias.0.shape());
        return Err(Error::Operand { op: name, operand: "bias", msg });
    }
    Ok(())
}

/// Checks ranks, channels, groups and parameters, and computes the output shape.
pub fn conv<const D: usize>(
    op: ConvOp,
    x: (&Layout, DType),
    k: (&Layout, DType),
    p: &ConvParams<D>,
) -> Result<ConvGeometry<D>> {
    let name = op.name();
    debug_assert_eq!(op.spatial_dims(), D);
    check_dtype(name, x.1, op.dtypes())?;
    check_same_dtype(name, x.1, k.1)?;
    let rank_msg = if D == 1 { "3 (N, C, L)" } else { "4 (N, C, H, W)" };
    super::check_rank(name, x.0.shape(), D + 2, rank_msg)?;
    super::check_rank(name, k.0.shape(), D + 2, rank_msg)?;
    let (xd, kd) = (x.0.dims(), k.0.dims());
    let g = p.groups;
    if g == 0 {
        return Err(invalid(name, "groups must be at least 1"));
    }
    for i in 0..D {
        if p.stride[i] == 0 {
            return Err(invalid(name, format!("zero stride {:?}", p.stride)));
        }
        if p.dilation[i] == 0 {
            return Err(invalid(name, format!("zero dilation {:?}", p.dilation)));
        }
    }
    let (batch, c_in) = (xd[0], xd[1]);
    if c_in % g != 0 {
        return Err(invalid(name, format!("{c_in} input channels not divisible by {g} groups")));
    }
    let channels = |takes: usize, how: &str| {
        let (ks, xs) = (k.0.shape(), x.0.shape());
        let msg = format!("{ks} takes {takes} input channels ({how}), the input {xs} has {c_in}: the channels differ");
        Error::Operand { op: name, operand: "kernel", msg }
    };
    let c_out = if op.is_transposed() {
        if kd[0] != c_in {
            return Err(channels(kd[0], "its dim 0"));
        }
        kd[1] * g
    } else {
        if kd[1] * g != c_in {
            let groups = if g == 1 { "1 group".to_string() } else { format!("{g} groups") };
            return Err(channels(kd[1] * g, &format!("its dim 1 times {groups}")));
        }
        if kd[0] % g != 0 {
            return Err(invalid(name, format!("{} output channels not divisible by {g} groups", kd[0])));
        }
        kd[0]
    };
    let mut input = [0; D];
    let mut kernel = [0; D];
    let mut output = [0; D];
    for i in 0..D {
        let (s, kk) = (xd[2 + i], kd[2 + i]);
        let (pad, st, dil, op_) = (p.padding[i], p.stride[i], p.dilation[i], p.output_padding[i]);
        if kk == 0 {
            return Err(invalid(name, format!("empty kernel {}", k.0.shape())));
        }
        let span = dil * (kk - 1) + 1;
        output[i] = if op.is_transposed() {
            if op_ >= st.max(dil) {
                return Err(invalid(
                    name,
                    format!("output_padding {op_} must be smaller than stride {st} or dilation {dil}"),
                ));
            }
            let full = (s.max(1) - 1) * st + span + op_;
            if s == 0 {
                0
            } else if full <= 2 * pad {
                return Err(invalid(name, format!("padding {pad} leaves no output for input {s}")));
            } else {
                full - 2 * pad
            }
        } else {
            if op_ != 0 {
                return Err(invalid(name, "output_padding applies to transposed convolutions only"));
            }
            if span > s + 2 * pad {
                return Err(invalid(name, format!("kernel span {span} larger than padded input {}", s + 2 * pad)));
            }
            (s + 2 * pad - span) / st + 1
        };
        input[i] = s;
        kernel[i] = kk;
    }
    let mut shape = vec![batch, c_out];
    shape.extend_from_slice(&output);
    Ok(ConvGeometry { batch, c_in, c_out, groups: g, input, kernel, output, params: *p, out: Out::new(shape, x.1) })
}
