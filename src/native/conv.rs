//! Convolutions on the native backend: the runtime's DNN library where it takes the case
//! (`dnn.rs`: forward for conv, backward data for conv_transpose), else `hip/conv.hip` (one
//! thread per output, any strides, every float dtype). 1-D runs as 2-D with a height of 1.

use super::dnn::{ConvBuffers, ConvDesc, ConvDir};
use super::kernel::{Args, MAX_ELEMS};
use super::ptr::DevicePtr;
use super::usage::Path;
use super::{NativeBackend, NativeStorage, Runtime};
use crate::backend::ConvOps;
use crate::spec::conv::{Conv2, ConvOp};
use crate::spec::{Family, kernel_name};
use crate::{Layout, Result};
use bytemuck::{Pod, Zeroable};

/// `struct ConvGeo` of `hip/conv.hip`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct KGeo {
    c_in: u64,
    c_out: u64,
    groups: u64,
    size: [u64; 6],
    params: [u64; 6],
}

/// `struct View4` of `hip/conv.hip`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct View4 {
    offset: u64,
    s: [u64; 4],
}

/// Three (H, W) pairs as the six numbers of `ConvGeo`.
fn six(pairs: [[usize; 2]; 3]) -> [u64; 6] {
    std::array::from_fn(|i| pairs[i / 2][i % 2] as u64)
}

/// A rank-4 `(N, C, H, W)` layout as the kernel's view.
fn view4(l: &Layout) -> View4 {
    let s = l.strides();
    View4 { offset: l.offset() as u64, s: [s[0] as u64, s[1] as u64, s[2] as u64, s[3] as u64] }
}

impl<R: Runtime> ConvOps for NativeBackend<R> {
    fn conv(
        &self,
        op: ConvOp,
        x: &NativeStorage<R>,
        xl: &Layout,
        k: &NativeStorage<R>,
        kl: &Layout,
        g: &Conv2,
    ) -> Result<NativeStorage<R>> {
        let y = self.storage(x.dtype, g.out_elems())?;
        if y.len == 0 {
            return Ok(y);
        }
        if g.c_in == 0 {
            // Sums over no input channel: zeros (all-zero bytes in every float type).
            // SAFETY: `y` holds exactly these bytes.
            unsafe { self.0.rt.memset(y.ptr, 0, y.bytes())? };
            return Ok(y);
        }
        let dir = if op.is_transposed() { ConvDir::BackwardData } else { ConvDir::Forward };
        if let Ok(dnn) = self.0.rt.dnn()
            && let Some(desc) = ConvDesc::of(dir, g, xl, x.dtype)
        {
            let (input, w) = (x.at(xl.offset()), DevicePtr(0));
            let io = match dir {
                ConvDir::Forward => ConvBuffers { x: input, w, y: y.ptr },
                ConvDir::BackwardData => ConvBuffers { x: y.ptr, w, y: input },
            };
            // SAFETY: `desc` states the input through its layout (validated by the spec) and
            // the new contiguous output; the kernel is read through `kl`.
            if unsafe { self.dnn_conv(dnn, dir, &desc, (k, kl), io)? } {
                return Ok(y);
            }
        }
        self.0.library_use.count(Path::ConvKernels);
        let geo = KGeo {
            c_in: g.c_in as u64,
            c_out: g.c_out as u64,
            groups: g.groups as u64,
            size: six([g.input, g.kernel, g.output]),
            params: six([g.padding, g.stride, g.dilation]),
        };
        let per_n = g.out_elems() / g.batch;
        if per_n as u64 > MAX_ELEMS {
            return Err(self.error(format!("{op}: {per_n} outputs per batch entry are past the kernel's 2^32")));
        }
        let name = kernel_name(op.name(), x.dtype);
        let (xv, kv) = (view4(xl), view4(kl));
        let step = (MAX_ELEMS as usize / per_n).max(1);
        let mut n0 = 0;
        while n0 < g.batch {
            let n = step.min(g.batch - n0);
            let mut args = Args::default();
            args.u64(n0 as u64).u64((n * per_n) as u64).pod(&geo).pod(&xv).pod(&kv);
            args.ptr(x.ptr).ptr(k.ptr).ptr(y.at(n0 * per_n));
            // SAFETY: op_T(n0, count, ConvGeo, View4 x, View4 w, x, w, y) in order; it reads the
            // input and kernel through their views (validated by the spec) at cells inside
            // their sizes, and writes `count` outputs of `y` from batch entry `n0` on.
            unsafe { self.launch(Family::Conv, &name, (n * per_n) as u64, &mut args)? };
            n0 += n;
        }
        Ok(y)
    }
}
