//! 2-D pooling on the native backend (`hip/pool.hip`): one thread per output cell, every spec
//! parameter (ceil_mode, dilation, count_include_pad, padding), any input strides. Our kernel
//! rather than cuDNN's or MIOpen's pooling: neither states max_pool2d's dilation nor PyTorch's
//! `ceil_mode` windows, and the op is a memory-bound gather the kernel does at copy speed.

use super::kernel::MAX_ELEMS;
use super::{NativeBackend, NativeStorage, Runtime};
use crate::backend::PoolOps;
use crate::spec::pool::{Pool2dParams, PoolOp};
use crate::spec::{Family, kernel_name};
use crate::{Layout, Result};
use bytemuck::{Pod, Zeroable};

/// `struct Axis` of `hip/pool.hip`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Axis {
    n: i32,
    k: i32,
    s: i32,
    p: i32,
    d: i32,
    unused: i32,
}

/// `struct Window` of `hip/pool.hip`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Window {
    h: Axis,
    w: Axis,
    oh: u32,
    ow: u32,
    include_pad: u32,
    narrow: u32,
}

/// `struct PlaneView` of `hip/pool.hip`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct PlaneView {
    offset: u64,
    channels: u64,
    sn: u64,
    sc: u64,
    sh: u64,
    sw: u64,
}

/// Spatial dim `i` of input size `n` with `out` windows, if every window position the kernel
/// computes (`o s - p + j d`, `start + k`, `n + p`) fits its `int`.
fn axis(p: &Pool2dParams, i: usize, n: usize, out: usize) -> Option<Axis> {
    let (k, s, pad, d) = (p.kernel[i], p.stride[i], p.padding[i], p.dilation[i]);
    let reach = (out as u128) * (s as u128) + (k as u128) * (d as u128) + (n as u128) + (pad as u128);
    let int = |v: usize| i32::try_from(v).ok();
    (reach <= i32::MAX as u128).then_some(Axis {
        n: int(n)?,
        k: int(k)?,
        s: int(s)?,
        p: int(pad)?,
        d: int(d)?,
        unused: 0,
    })
}

impl<R: Runtime> PoolOps for NativeBackend<R> {
    fn pool2d(&self, x: &NativeStorage<R>, l: &Layout, op: PoolOp, p: &Pool2dParams) -> Result<NativeStorage<R>> {
        let (d, s) = (l.dims(), l.strides());
        // The spec checked that at least one window fits each dim.
        let (oh, ow) = (p.out_size(0, d[2]).unwrap_or(0), p.out_size(1, d[3]).unwrap_or(0));
        let y = self.storage(x.dtype, d[0] * d[1] * oh * ow)?;
        let (total, per_plane) = ((d[0] * d[1]) as u64, (oh * ow) as u64);
        if total == 0 || per_plane == 0 {
            return Ok(y);
        }
        let (Some(h), Some(w)) = (axis(p, 0, d[2], oh), axis(p, 1, d[3], ow)) else {
            return Err(self.error(format!("{op}: windows over {} x {} past the kernel's 2^31", d[2], d[3])));
        };
        if per_plane > MAX_ELEMS {
            return Err(self.error(format!("{op}: a plane of {oh} x {ow} is past the kernel's 2^32")));
        }
        let g = Window {
            h,
            w,
            oh: oh as u32,
            ow: ow as u32,
            include_pad: p.count_include_pad.into(),
            narrow: (total <= MAX_ELEMS).into(),
        };
        let v = PlaneView {
            offset: l.offset() as u64,
            channels: d[1] as u64,
            sn: s[0] as u64,
            sc: s[1] as u64,
            sh: s[2] as u64,
            sw: s[3] as u64,
        };
        let name = kernel_name(op.name(), x.dtype);
        let step = MAX_ELEMS / per_plane;
        let mut p0 = 0;
        while p0 < total {
            let planes = step.min(total - p0);
            let mut args = super::kernel::Args::default();
            args.u64(p0).u64(planes).pod(&g).pod(&v).ptr(x.ptr).ptr(y.at((p0 * per_plane) as usize));
            // SAFETY: {max,avg}_pool2d_T(p0, planes, Window, PlaneView, x, y) in order; it reads
            // the input cells of each window (inside the view, which the spec validated against
            // `x`) and writes `planes * oh * ow` elements of `y` from plane `p0` on.
            unsafe { self.launch(Family::Pool, &name, planes * per_plane, &mut args)? };
            p0 += planes;
        }
        Ok(y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_past_an_int_are_refused() {
        let p = Pool2dParams::new(2);
        let a = axis(&p, 0, 10, 5).map(|a| (a.n, a.k, a.s, a.p, a.d));
        assert_eq!(a, Some((10, 2, 2, 0, 1)));
        // 2^30 outputs at stride 2 reach 2^31.
        assert!(axis(&p, 0, 1 << 31, 1 << 30).is_none());
        assert!(axis(&p.dilation(1 << 30), 0, 4, 1).is_none());
    }
}
