//! Nearest-neighbour resizing on wgpu (`shaders/upsample.wgsl`): one invocation per output word,
//! or four outputs stored as one vector where output rows are whole vectors. Inputs are read in
//! place through their strides; source cells follow the spec's exact integer rule.

use super::kernel::{Index, Spec};
use super::repr::{Access, Caps, Repr};
use super::support::bits_of;
use super::{KernelKey, WgpuBackend, WgpuStorage};
use crate::backend::UpsampleOps;
use crate::spec::Family;
use crate::spec::upsample::UpsampleOp;
use crate::{DType, Layout, Result};

/// The kernel for `dtype`; `v4` stores four outputs per invocation (a vectorizing repr).
fn upsample_spec(caps: Caps, dtype: DType, v4: bool) -> Result<Spec> {
    let r = Repr::of(dtype, caps, UpsampleOp::UpsampleNearest2d.name())?;
    let mut spec = Spec::new(Family::Upsample, if v4 { "nearest_v4" } else { "nearest" }, caps)
        .bind("x", r, Access::Read, Index::None)
        .bind("y", r, Access::Write, Index::None);
    spec.bindings[1].vec = v4;
    Ok(spec)
}

/// Whether `floor(o * len / size)` for `o < size` needs more than a u32 product.
fn wide(len: usize, size: usize) -> u32 {
    (size.saturating_sub(1) as u64 * len as u64 > u32::MAX as u64) as u32
}

impl WgpuBackend {
    /// Resizes the `(H, W)` planes of `x` (sizes `input`, strides `hw`) to `size`; 1-D inputs
    /// pass a height of 1.
    fn resize(
        &self,
        x: &WgpuStorage,
        l: &Layout,
        input: [usize; 2],
        hw: [usize; 2],
        size: [usize; 2],
    ) -> Result<WgpuStorage> {
        let (d, s) = (l.dims(), l.strides());
        let n = d[0] * d[1] * size[0] * size[1];
        let y = self.storage(x.dtype, n)?;
        if n == 0 {
            return Ok(y);
        }
        // Only elements move: f64 goes as the same 8 bytes where the adapter lacks SHADER_F64.
        let dtype = bits_of(x.dtype, self.caps());
        let r = Repr::of(dtype, self.caps(), UpsampleOp::UpsampleNearest2d.name())?;
        let v4 = r.vectorizes() && size[1].is_multiple_of(4);
        let key = KernelKey::Upsample(dtype, v4);
        let (spec, pipeline) = self.keyed(key, || upsample_spec(self.caps(), dtype, v4))?;
        let extra = [
            d[1],
            size[0],
            size[1],
            input[0],
            input[1],
            l.offset(),
            s[0],
            s[1],
            hw[0],
            hw[1],
            wide(input[0], size[0]) as usize,
            wide(input[1], size[1]) as usize,
            input[1] / size[1],
            input[1] % size[1],
        ];
        let meta = spec.meta(n as u32, &[], &extra.map(|v| v as u32));
        let per = if v4 { 4 } else { r.per_word() as usize };
        self.run(&spec, &pipeline, &[x.buffer(), y.buffer()], &meta, n.div_ceil(per) as u64)?;
        Ok(y)
    }
}

impl UpsampleOps for WgpuBackend {
    fn upsample_nearest1d(&self, x: &WgpuStorage, l: &Layout, size: usize) -> Result<WgpuStorage> {
        self.resize(x, l, [1, l.dims()[2]], [0, l.strides()[2]], [1, size])
    }

    fn upsample_nearest2d(&self, x: &WgpuStorage, l: &Layout, size: [usize; 2]) -> Result<WgpuStorage> {
        let (d, s) = (l.dims(), l.strides());
        self.resize(x, l, [d[2], d[3]], [s[2], s[3]], size)
    }
}

/// Every upsample kernel: `{op}_{dtype}` (1-D and 2-D share it) and `_v4`.
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    use crate::spec::kernel_name;
    let mut v = vec![];
    for dt in caps.dtypes() {
        for &op in UpsampleOp::ALL {
            v.push((kernel_name(op.name(), dt), upsample_spec(caps, dt, false)));
        }
        if Repr::of(dt, caps, "upsample").is_ok_and(|r| r.vectorizes()) {
            v.push((
                format!("{}_v4", kernel_name(UpsampleOp::UpsampleNearest2d.name(), dt)),
                upsample_spec(caps, dt, true),
            ));
        }
    }
    v
}
