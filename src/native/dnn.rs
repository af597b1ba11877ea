//! What the native backend needs from a DNN library (convolution forward and backward-data,
//! batch norm inference), and the logic above it, written once for every vendor:
//! descriptor geometry (a 1-D conv is 2-D with a height of 1; conv_transpose is the backward
//! data of the forward conv it inverts), when a case goes to the library at all, the algorithm
//! cache and the workspace policy. The vendor sides are only the calls: `cuda.rs` (cuDNN,
//! feature `cuda`) and `rocm.rs` (MIOpen, feature `rocm`).
//!
//! - **What the library takes**: a case the shared logic can describe (sizes within the
//!   library's `int`, positive strides, a conv_transpose whose output_padding keeps it the
//!   inverse of a forward conv) and the library then accepts (its algorithm search returns a
//!   usable algorithm; a batch norm call does not answer "not supported"). Everything else runs
//!   in our HIP kernels (`hip/conv.hip`, `hip/nn.hip`), never as an error.
//! - **Softmax stays in our kernels**: measured on an H100 (cuDNN 9.14, 4096 x 16384 f32),
//!   cuDNN's softmax ran at 1087 GB/s (torch: 2359), 40 GB/s over a leading dim, and its log
//!   mode missed our f32 tolerance by 20x and gave wrong f16 values for a strided input.
//! - **Algorithms**: searched once per (direction, descriptor) -- shapes, strides, dtype and
//!   parameters -- and cached in the backend with their workspace sizes, best first; a case the
//!   library refused is cached as refused.
//! - **Workspace**: from the backend's caching allocator, at most [`WORKSPACE_LIMIT`]; when the
//!   chosen algorithm's workspace cannot be had, the best algorithm that needs none runs.

#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "rocm")]
pub mod rocm;

use super::ptr::DevicePtr;
use super::usage::Path;
use super::{NativeBackend, NativeStorage, Runtime};
use crate::spec::conv::Conv2;
use crate::{DType, Layout, Result};
use std::collections::HashMap;
use std::sync::Mutex;

/// The most workspace one convolution takes from the allocator: past it, the best algorithm
/// that fits runs instead (cuDNN's FFT algorithms can ask for gigabytes). A policy, not a
/// measurement: 1 GiB is a small share of a datacenter GPU's memory.
pub const WORKSPACE_LIMIT: usize = 1 << 30;

/// The largest size or stride a DNN descriptor takes (its C `int`).
pub const LIMIT: usize = i32::MAX as usize;

/// A 4-D `(N, C, H, W)` tensor as a library descriptor sees it, strides in elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tensor4 {
    /// `(N, C, H, W)`.
    pub dims: [usize; 4],
    /// The stride of each dim, in elements.
    pub strides: [usize; 4],
}

impl Tensor4 {
    /// A contiguous tensor.
    pub fn packed(dims: [usize; 4]) -> Tensor4 {
        let mut strides = [1; 4];
        for i in (0..3).rev() {
            strides[i] = strides[i + 1] * dims[i + 1].max(1);
        }
        Tensor4 { dims, strides }
    }

    /// A strided tensor, if a descriptor can state it: every size, stride and the element
    /// count within [`LIMIT`], and every dim of more than one element with a positive stride.
    /// Dims of size 1 get the stride a packed tensor would have (their own is never used).
    pub fn strided(dims: [usize; 4], strides: [usize; 4]) -> Option<Tensor4> {
        let packed = Tensor4::packed(dims);
        let mut s = strides;
        for i in 0..4 {
            if dims[i] == 1 {
                s[i] = packed.strides[i];
            } else if s[i] == 0 {
                return None;
            }
        }
        let count = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
        let fits = count <= LIMIT && dims.iter().chain(&s).all(|&v| v <= LIMIT);
        fits.then_some(Tensor4 { dims, strides: s })
    }

    /// A contiguous tensor, if a descriptor can state it.
    pub fn packed_checked(dims: [usize; 4]) -> Option<Tensor4> {
        Tensor4::strided(dims, Tensor4::packed(dims).strides)
    }
}

/// Which direction of a convolution runs: conv is `Forward` (y from x), conv_transpose is
/// `BackwardData` (dx from dy) of the forward conv it inverts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvDir {
    /// y from x: conv.
    Forward,
    /// dx from dy: conv_transpose.
    BackwardData,
}

/// A convolution as the libraries describe it, always in forward terms: `x (N, C, H, W)`
/// cross-correlated with the packed filter `w (K, C / groups, R, S)` gives `y (N, K, P, Q)`.
/// For `BackwardData`, `x` is the op's output (dx) and `y` its input (dy). Also the key of the
/// algorithm cache, with the direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConvDesc {
    /// The data's dtype.
    pub dtype: DType,
    /// The input of the forward conv.
    pub x: Tensor4,
    /// The packed filter's dims `(K, C / groups, R, S)`.
    pub w: [usize; 4],
    /// The output of the forward conv.
    pub y: Tensor4,
    /// Zero padding per spatial dim.
    pub padding: [usize; 2],
    /// Stride per spatial dim.
    pub stride: [usize; 2],
    /// Dilation per spatial dim.
    pub dilation: [usize; 2],
    /// Channel groups.
    pub groups: usize,
}

impl ConvDesc {
    /// The descriptor of conv (`BackwardData`: conv_transpose) `g` whose input has layout `xl`
    /// (read in place), or `None` when a library cannot state it: sizes or strides past its
    /// `int`, a stride-0 input, or a conv_transpose that is not the backward data of a forward
    /// conv (an output_padding at or past the stride, which the spec allows with dilation).
    pub fn of(dir: ConvDir, g: &Conv2, xl: &Layout, dtype: DType) -> Option<ConvDesc> {
        let (padding, stride, dilation) = (g.padding, g.stride, g.dilation);
        let (input, output, kernel) = (g.input, g.output, g.kernel);
        let (d, s) = (xl.dims(), xl.strides());
        let input_t = Tensor4::strided([d[0], d[1], d[2], d[3]], [s[0], s[1], s[2], s[3]])?;
        let output_t = Tensor4::packed_checked([g.batch, g.c_out, output[0], output[1]])?;
        let (x, y, w) = match dir {
            ConvDir::Forward => (input_t, output_t, [g.c_out, g.c_in / g.groups, kernel[0], kernel[1]]),
            ConvDir::BackwardData => {
                // The forward conv from the op's output must give back exactly the op's input.
                for i in 0..2 {
                    let span = dilation[i] * (kernel[i] - 1) + 1;
                    if (output[i] + 2 * padding[i]).checked_sub(span)? / stride[i] + 1 != input[i] {
                        return None;
                    }
                }
                (output_t, input_t, [g.c_in, g.c_out / g.groups, kernel[0], kernel[1]])
            }
        };
        let fits = w.iter().chain(&padding).chain(&stride).chain(&dilation).all(|&v| v <= LIMIT);
        let w_count = w.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
        (fits && w_count <= LIMIT && g.groups <= LIMIT).then_some(ConvDesc {
            dtype,
            x,
            w,
            y,
            padding,
            stride,
            dilation,
            groups: g.groups,
        })
    }
}

/// One algorithm of a library for a convolution: its id, the math mode it runs in (cuDNN's
/// tensor-op or FMA choice; 0 where the library has none) and the workspace it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Algo {
    /// The library's algorithm id.
    pub id: u32,
    /// The math mode (0 where the library has none).
    pub math: u32,
    /// Workspace bytes it needs.
    pub workspace: usize,
}

/// The cached choice for one convolution: the best algorithm within [`WORKSPACE_LIMIT`], and
/// the best that needs no workspace, for when the first's cannot be had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The best algorithm within [`WORKSPACE_LIMIT`].
    pub best: Algo,
    /// The best that needs no workspace.
    pub no_workspace: Option<Algo>,
}

impl Choice {
    /// From candidates ranked best first; `None` when none fits the limit.
    pub fn pick(ranked: &[Algo]) -> Option<Choice> {
        let best = *ranked.iter().find(|a| a.workspace <= WORKSPACE_LIMIT)?;
        let no_workspace = ranked.iter().find(|a| a.workspace == 0).copied();
        Some(Choice { best, no_workspace })
    }
}

/// Device buffers of one convolution, as the descriptor names them (`x`, `w`, `y`).
#[derive(Clone, Copy, Debug)]
pub struct ConvBuffers {
    /// The forward conv's input.
    pub x: DevicePtr,
    /// The filter.
    pub w: DevicePtr,
    /// The forward conv's output.
    pub y: DevicePtr,
}

impl ConvBuffers {
    /// The byte alignment the three buffers share, up to 16 (a power of two): a library's
    /// kernels may assume the alignment they were chosen for, and an input read in place at an
    /// offset may have less than a fresh buffer.
    pub fn align(&self) -> usize {
        let bits = self.x.0 | self.w.0 | self.y.0 | 16;
        1 << bits.trailing_zeros()
    }
}

/// Attention as a DNN library states it: `q [B, Hq, Lq, D]`, `k [B, Hkv, Lk, D]` and
/// `v [B, Hkv, Lk, Dv]` into `y [B, Hq, Lq, Dv]`, each with its strides (grouped heads: `Hq` a
/// multiple of `Hkv`); also the key of a library's plan cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttnDesc {
    /// The data's dtype.
    pub dtype: DType,
    /// The queries.
    pub q: Tensor4,
    /// The keys.
    pub k: Tensor4,
    /// The values.
    pub v: Tensor4,
    /// The output.
    pub y: Tensor4,
    /// Causal from the top-left corner: query `i` sees keys `0..=i`.
    pub causal: bool,
    /// The factor of the dot products, as f32 bits (the library's by-value scalar).
    pub scale: u32,
    /// The byte alignment the four buffers share.
    pub align: usize,
}

/// Device addresses of one attention's tensors, each at its view's start.
#[derive(Clone, Copy, Debug)]
pub struct AttnBuffers {
    /// The queries.
    pub q: DevicePtr,
    /// The keys.
    pub k: DevicePtr,
    /// The values.
    pub v: DevicePtr,
    /// The output.
    pub y: DevicePtr,
}

/// A workspace: address and size in bytes (size 0: none).
pub type Workspace = (DevicePtr, usize);

/// Batch norm inference's per-channel operands, packed, each of `channels` elements of the
/// library's parameter dtype (f32 for half data, else the data's).
#[derive(Clone, Copy, Debug)]
pub struct BnParams {
    /// The parameters' dtype.
    pub dtype: DType,
    /// Per-channel mean.
    pub mean: DevicePtr,
    /// Per-channel variance.
    pub var: DevicePtr,
    /// Per-channel scale (the weight; ones where the op has none).
    pub scale: DevicePtr,
    /// Per-channel bias (zeros where the op has none).
    pub bias: DevicePtr,
    /// Added to the variance.
    pub eps: f64,
}

/// A vendor DNN library bound to the backend's device and stream. `Ok(None)` / `Ok(false)` say
/// "the library does not take this case" (the caller runs its own kernels); `Err` is a failure
/// with the library's own text.
pub trait Dnn: Send + Sync {
    /// The library's name and version, for `info()`.
    fn describe(&self) -> String;

    /// The workspace the algorithm search needs (MIOpen's Find runs the candidates; cuDNN's
    /// heuristics run nothing and need none).
    fn search_workspace(&self, dir: ConvDir, conv: &ConvDesc) -> Result<usize>;

    /// Algorithms for `conv`, best first (an empty list: the library does not take it).
    ///
    /// # Safety
    /// The buffers and the workspace hold what `conv` describes; `y` (dx for `BackwardData`)
    /// may be overwritten.
    unsafe fn conv_algorithms(
        &self,
        dir: ConvDir,
        conv: &ConvDesc,
        io: &ConvBuffers,
        workspace: Workspace,
    ) -> Result<Vec<Algo>>;

    /// Queues the convolution with `algo` on the stream, writing the output (y, or x for
    /// `BackwardData`).
    ///
    /// # Safety
    /// As [`Dnn::conv_algorithms`]; the workspace holds at least `algo.workspace` bytes.
    unsafe fn conv(
        &self,
        dir: ConvDir,
        conv: &ConvDesc,
        algo: Algo,
        io: &ConvBuffers,
        workspace: Workspace,
    ) -> Result<()>;

    /// The workspace attention `a` needs, or `None` when the library does not take it (the
    /// default: our kernels run it).
    fn attention_workspace(&self, a: &AttnDesc) -> Result<Option<usize>> {
        let _ = a;
        Ok(None)
    }

    /// Queues attention `a`, which [`Dnn::attention_workspace`] took, on the stream.
    ///
    /// # Safety
    /// The buffers hold what `a` states, aligned as it says, `y` not overlapping the others;
    /// the workspace holds what [`Dnn::attention_workspace`] asked for.
    unsafe fn attention(&self, a: &AttnDesc, io: &AttnBuffers, workspace: Workspace) -> Result<()> {
        let _ = (io, workspace);
        Err(crate::Error::Backend {
            backend: crate::BackendKind::Rocm,
            msg: format!("{} takes no attention ({a:?})", self.describe()),
        })
    }

    /// Batch norm inference over dim 1 (C) of `x` into `y`, or `false` when the library does
    /// not take it.
    ///
    /// # Safety
    /// Both tensors lie in live device memory, `y` not overlapping `x`; every parameter holds
    /// `x.dims[1]` elements.
    unsafe fn batch_norm(
        &self,
        dtype: DType,
        x: (&Tensor4, DevicePtr),
        y: (&Tensor4, DevicePtr),
        p: &BnParams,
    ) -> Result<bool>;
}

/// The backend's algorithm cache: the choice per convolution and buffer alignment
/// ([`ConvBuffers::align`]), or `None` for one the library refused.
pub(crate) type AlgoCache = Mutex<HashMap<(ConvDir, ConvDesc, usize), Option<Choice>>>;

impl<R: Runtime> NativeBackend<R> {
    /// A workspace of `bytes` from the caching allocator, or `None` when it cannot be had.
    fn workspace(&self, bytes: usize) -> Option<NativeStorage<R>> {
        if bytes == 0 {
            return None;
        }
        self.storage(DType::U8, bytes).ok()
    }

    /// Runs the convolution on the DNN library if it takes it: `false` when it does not (the
    /// caller runs its own kernels). Reads `w` packed (a copy is made otherwise).
    ///
    /// # Safety
    /// `desc` describes the buffers: `x`/`y` as its tensors state (the op's input through its
    /// layout, the op's output new and contiguous), `w` through `wl` inside its storage.
    pub(crate) unsafe fn dnn_conv(
        &self,
        dnn: &dyn Dnn,
        dir: ConvDir,
        desc: &ConvDesc,
        (w, wl): (&NativeStorage<R>, &Layout),
        io: ConvBuffers,
    ) -> Result<bool> {
        // A filter view is copied to a new buffer, aligned as every new one: address 0 stands
        // for it in the key.
        let w_at = if wl.is_contiguous() { w.at(wl.offset()) } else { DevicePtr(0) };
        let key = (dir, *desc, ConvBuffers { w: w_at, ..io }.align());
        let cached = self.0.dnn_cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key).copied();
        if cached == Some(None) {
            return Ok(false);
        }
        let w_copy = if wl.is_contiguous() { None } else { Some(self.contiguous(w, wl)?) };
        let io = ConvBuffers { w: w_copy.as_ref().map_or(w_at, |c| c.ptr), ..io };
        let choice = match cached {
            Some(c) => c,
            None => {
                let want = dnn.search_workspace(dir, desc)?;
                let ws = self.workspace(want.min(WORKSPACE_LIMIT));
                let ws_arg = ws.as_ref().map_or((DevicePtr(0), 0), |s| (s.ptr, s.len));
                // SAFETY: the caller's contract; the workspace is ours for the call.
                let ranked = unsafe { dnn.conv_algorithms(dir, desc, &io, ws_arg)? };
                let c = Choice::pick(&ranked);
                self.0.dnn_cache.lock().unwrap_or_else(|e| e.into_inner()).insert(key, c);
                c
            }
        };
        let Some(choice) = choice else { return Ok(false) };
        let ws = self.workspace(choice.best.workspace);
        let (algo, ws_arg) = match (&ws, choice.no_workspace) {
            (Some(s), _) => (choice.best, (s.ptr, s.len)),
            (None, _) if choice.best.workspace == 0 => (choice.best, (DevicePtr(0), 0)),
            (None, Some(a)) => (a, (DevicePtr(0), 0)),
            (None, None) => return Ok(false),
        };
        // SAFETY: the caller's contract; the workspace holds `algo.workspace` bytes (or the
        // algorithm needs none), released to the cache after the call is queued (the stream
        // orders its reuse).
        unsafe { dnn.conv(dir, desc, algo, &io, ws_arg)? };
        self.0.library_use.count(Path::ConvLibrary);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::conv::{ConvOp, ConvParams, conv, nchw};

    fn geometry<const D: usize>(op: ConvOp, x: &[usize], k: &[usize], p: ConvParams<D>) -> Conv2 {
        let l = |d: &[usize]| Layout::contiguous(d.to_vec());
        Conv2::from(&conv(op, (&l(x), DType::F32), (&l(k), DType::F32), &p).unwrap())
    }

    #[test]
    fn tensors_state_their_strides_or_refuse() {
        assert_eq!(Tensor4::packed([2, 3, 4, 5]).strides, [60, 20, 5, 1]);
        let t = Tensor4::strided([2, 3, 1, 5], [1, 2, 0, 6]).unwrap();
        assert_eq!(t.strides, [1, 2, 5, 6]);
        // A broadcast dim cannot be stated; a size-1 one can.
        assert_eq!(Tensor4::strided([2, 3, 4, 5], [0, 20, 5, 1]), None);
        assert!(Tensor4::strided([1, 3, 4, 5], [0, 20, 5, 1]).is_some());
        assert_eq!(Tensor4::strided([1 << 16, 1 << 16, 1, 1], [1 << 16, 1, 1, 1]), None);
    }

    #[test]
    fn conv1d_is_conv2d_with_height_one() {
        let p = ConvParams::<1>::default().padding(1).stride(2).dilation(3).groups(2);
        let g = geometry(ConvOp::Conv1d, &[2, 4, 9], &[6, 2, 3], p);
        let d = ConvDesc::of(ConvDir::Forward, &g, &nchw(&Layout::contiguous([2, 4, 9])), DType::F16).unwrap();
        assert_eq!(d.x, Tensor4 { dims: [2, 4, 1, 9], strides: [36, 9, 9, 1] });
        assert_eq!((d.w, d.y.dims), ([6, 2, 1, 3], [2, 6, 1, g.output[1]]));
        assert_eq!((d.padding, d.stride, d.dilation, d.groups), ([0, 1], [1, 2], [1, 3], 2));
    }

    #[test]
    fn conv_transpose_is_the_backward_data_of_its_forward_conv() {
        // Input (2, 4, 5, 6), kernel (C_in 4, C_out / g 3, 3, 2), 2 groups: output channels 6.
        let p =
            ConvParams::<2> { padding: [1, 0], stride: [2, 1], dilation: [1, 2], output_padding: [1, 0], groups: 2 };
        let g = geometry(ConvOp::ConvTranspose2d, &[2, 4, 5, 6], &[4, 3, 3, 2], p);
        let x = Layout::contiguous([2, 4, 5, 6]).transpose(2, 3).unwrap().transpose(2, 3).unwrap();
        let d = ConvDesc::of(ConvDir::BackwardData, &g, &x, DType::F32).unwrap();
        assert_eq!(d.x, Tensor4::packed([2, 6, g.output[0], g.output[1]]));
        assert_eq!((d.y.dims, d.w), ([2, 4, 5, 6], [4, 3, 3, 2]));
        // output_padding past the stride (allowed with dilation 2): not a backward data.
        let p = ConvParams::<1>::default().dilation(2).output_padding(1);
        let g = geometry(ConvOp::ConvTranspose1d, &[1, 2, 5], &[2, 2, 3], p);
        assert_eq!(ConvDesc::of(ConvDir::BackwardData, &g, &nchw(&Layout::contiguous([1, 2, 5])), DType::F32), None);
        // A broadcast batch cannot be stated either.
        let g = geometry(ConvOp::Conv1d, &[3, 2, 5], &[2, 2, 3], ConvParams::<1>::default());
        let b = Layout::new([3, 2, 5], vec![0, 5, 1], 0);
        assert_eq!(ConvDesc::of(ConvDir::Forward, &g, &nchw(&b), DType::F32), None);
    }

    #[test]
    fn cache_keys_tell_every_parameter_apart() {
        let key = |p: ConvParams<2>, dtype| {
            let g = geometry(ConvOp::Conv2d, &[1, 4, 8, 8], &[4, 4 / p.groups, 3, 3], p);
            ConvDesc::of(ConvDir::Forward, &g, &Layout::contiguous([1, 4, 8, 8]), dtype).unwrap()
        };
        let base = ConvParams::<2>::default();
        let keys = [
            key(base, DType::F32),
            key(base, DType::F16),
            key(base.padding(1), DType::F32),
            key(base.stride(2), DType::F32),
            key(base.dilation(2), DType::F32),
            key(base.groups(2), DType::F32),
        ];
        let set: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(set.len(), keys.len());
        assert_eq!(key(base, DType::F32), keys[0]);
    }

    #[test]
    fn buffers_share_the_alignment_of_the_least_aligned() {
        let io = |x, w, y| ConvBuffers { x: DevicePtr(x), w: DevicePtr(w), y: DevicePtr(y) };
        assert_eq!(io(0x1000, 0x2000, 0x3000).align(), 16);
        assert_eq!(io(0x1002, 0x2000, 0x3000).align(), 2);
        assert_eq!(io(0x1000, 0x2008, 0x3000).align(), 8);
        assert_eq!(io(0x1000, 0x2000, 0x3004).align(), 4);
    }

    #[test]
    fn choices_keep_a_no_workspace_algorithm_for_when_memory_is_short() {
        let a = |id, workspace| Algo { id, math: 0, workspace };
        let c = Choice::pick(&[a(1, 5 << 30), a(2, 1 << 20), a(3, 0)]).unwrap();
        assert_eq!((c.best.id, c.no_workspace.map(|a| a.id)), (2, Some(3)));
        assert_eq!(Choice::pick(&[a(4, 0)]).unwrap(), Choice { best: a(4, 0), no_workspace: Some(a(4, 0)) });
        assert_eq!(Choice::pick(&[a(1, 2 << 30)]), None);
        assert_eq!(Choice::pick(&[]), None);
    }
}
