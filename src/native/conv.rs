//! Convolutions on the native backend: the runtime's DNN library where it takes the case
//! (`dnn.rs`: forward for conv, backward data for conv_transpose), else `hip/conv.hip` (one
//! thread per output, any strides, every float dtype). 1-D runs as 2-D with a height of 1.

use super::dnn::{ConvBuffers, ConvDesc, ConvDir, Path};
use super::kernel::{Args, MAX_ELEMS};
use super::runtime::DevicePtr;
use super::{NativeBackend, NativeStorage, Runtime};
use crate::backend::ConvOps;
use crate::spec::conv::{ConvGeometry, ConvOp};
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

/// `a` for the last `D` dims (`D <= 2`), `fill` before them.
fn lift<const D: usize>(a: [usize; D], fill: usize) -> [u64; 2] {
    let mut r = [fill as u64; 2];
    r.iter_mut().rev().zip(a.iter().rev()).for_each(|(r, &v)| *r = v as u64);
    r
}

/// A `(N, C, *S)` layout as 4-D strides (a missing height gets stride 0: its index is 0).
fn view4<const D: usize>(l: &Layout) -> View4 {
    let s = l.strides();
    let sp: [usize; D] = std::array::from_fn(|i| s[2 + i]);
    let [h, w] = lift(sp, 0);
    View4 { offset: l.offset() as u64, s: [s[0] as u64, s[1] as u64, h, w] }
}

impl<R: Runtime> NativeBackend<R> {
    fn conv<const D: usize>(
        &self,
        op: ConvOp,
        x: &NativeStorage<R>,
        xl: &Layout,
        k: &NativeStorage<R>,
        kl: &Layout,
        g: &ConvGeometry<D>,
    ) -> Result<NativeStorage<R>> {
        let y = self.storage(x.dtype, g.out.shape.elem_count())?;
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
        let p = &g.params;
        let ([ih, iw], [kh, kw], [oh, ow]) = (lift(g.input, 1), lift(g.kernel, 1), lift(g.output, 1));
        let ([ph, pw], [sh, sw], [dh, dw]) = (lift(p.padding, 0), lift(p.stride, 1), lift(p.dilation, 1));
        let geo = KGeo {
            c_in: g.c_in as u64,
            c_out: g.c_out as u64,
            groups: g.groups as u64,
            size: [ih, iw, kh, kw, oh, ow],
            params: [ph, pw, sh, sw, dh, dw],
        };
        let per_n = g.out.shape.elem_count() / g.batch;
        if per_n as u64 > MAX_ELEMS {
            return Err(self.error(format!("{op}: {per_n} outputs per batch entry are past the kernel's 2^32")));
        }
        let name = kernel_name(op.name(), x.dtype);
        let (xv, kv) = (view4::<D>(xl), view4::<D>(kl));
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

impl<R: Runtime> ConvOps for NativeBackend<R> {
    fn conv1d(
        &self,
        x: &NativeStorage<R>,
        xl: &Layout,
        k: &NativeStorage<R>,
        kl: &Layout,
        g: &ConvGeometry<1>,
    ) -> Result<NativeStorage<R>> {
        self.conv(ConvOp::Conv1d, x, xl, k, kl, g)
    }

    fn conv2d(
        &self,
        x: &NativeStorage<R>,
        xl: &Layout,
        k: &NativeStorage<R>,
        kl: &Layout,
        g: &ConvGeometry<2>,
    ) -> Result<NativeStorage<R>> {
        self.conv(ConvOp::Conv2d, x, xl, k, kl, g)
    }

    fn conv_transpose1d(
        &self,
        x: &NativeStorage<R>,
        xl: &Layout,
        k: &NativeStorage<R>,
        kl: &Layout,
        g: &ConvGeometry<1>,
    ) -> Result<NativeStorage<R>> {
        self.conv(ConvOp::ConvTranspose1d, x, xl, k, kl, g)
    }

    fn conv_transpose2d(
        &self,
        x: &NativeStorage<R>,
        xl: &Layout,
        k: &NativeStorage<R>,
        kl: &Layout,
        g: &ConvGeometry<2>,
    ) -> Result<NativeStorage<R>> {
        self.conv(ConvOp::ConvTranspose2d, x, xl, k, kl, g)
    }
}
