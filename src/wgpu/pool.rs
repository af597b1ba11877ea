//! avg_pool2d and max_pool2d on wgpu (`shaders/pool.wgsl`): one invocation per output word, or
//! four outputs of a row stored as one vector. The window size is a kernel constant (so that
//! its loops unroll), the rest of the geometry metadata; inputs are read in place through their
//! strides. Sums accumulate in f32 (f64 for f64).

use super::kernel::{Index, Spec};
use super::repr::{Access, Caps, Compute, Repr};
use super::{KernelKey, WgpuBackend, WgpuStorage};
use crate::backend::PoolOps;
use crate::spec::Family;
use crate::spec::pool::{Pool2dParams, PoolOp};
use crate::{DType, Layout, Result};

/// The kernel of `op` for `dtype` and a `kernel` window; `v4` stores four outputs at once.
fn pool_spec(caps: Caps, op: PoolOp, dtype: DType, kernel: [usize; 2], v4: bool) -> Result<Spec> {
    let r = Repr::of(dtype, caps, op.name())?;
    let c = r.compute();
    let (is_nan, neg_inf) = if c == Compute::F64 {
        ("is_nan64(v)", "f64(f32_of_bits(0xff800000u))")
    } else {
        ("is_nan(v)", "f32_of_bits(0xff800000u)")
    };
    let acc = match op {
        PoolOp::AvgPool2d => "fn acc_init() -> A { return A(0); }\n\
                              fn acc_add(s: A, v: A) -> A { return s + v; }\n\
                              fn acc_end(s: A, y0: i32, x0: i32) -> A { return avg_end(s, y0, x0); }"
            .to_string(),
        // Once a NaN is taken nothing compares above it; a window without cells is -inf.
        PoolOp::MaxPool2d => format!(
            "fn acc_init() -> A {{ return {neg_inf}; }}\n\
             fn acc_add(m: A, v: A) -> A {{ return select(m, v, v > m || {is_nan}); }}\n\
             fn acc_end(m: A, y0: i32, x0: i32) -> A {{ return m; }}"
        ),
    };
    let mut spec = Spec::new(Family::Pool, if v4 { "pool_v4" } else { "pool" }, caps)
        .bind("x", r, Access::Read, Index::None)
        .bind("y", r, Access::Write, Index::None);
    spec.bindings[1].vec = v4;
    let a = c.wgsl();
    Ok(spec
        .constant("KH", format!("{}u", kernel[0]))
        .constant("KW", format!("{}u", kernel[1]))
        .code(format!("alias A = {a};\nalias V = vec4<{a}>;\n{acc}")))
}

impl PoolOps for WgpuBackend {
    fn pool2d(&self, x: &WgpuStorage, l: &Layout, op: PoolOp, p: &Pool2dParams) -> Result<WgpuStorage> {
        let (d, s) = (l.dims(), l.strides());
        // The spec checked that both sizes exist.
        let (oh, ow) = (p.out_size(0, d[2]).unwrap_or(0), p.out_size(1, d[3]).unwrap_or(0));
        let n = d[0] * d[1] * oh * ow;
        let y = self.storage(x.dtype, n)?;
        if n == 0 {
            return Ok(y);
        }
        let r = Repr::of(x.dtype, self.caps(), op.name())?;
        let v4 = r.vectorizes() && ow.is_multiple_of(4);
        let key = KernelKey::Pool(op, x.dtype, p.kernel, v4);
        let (spec, pipeline) = self.keyed(key, || pool_spec(self.caps(), op, x.dtype, p.kernel, v4))?;
        let geometry = [p.stride, p.padding, p.dilation].concat();
        let extra: Vec<u32> = [d[1], oh, ow, d[2], d[3], l.offset(), s[0], s[1], s[2], s[3]]
            .into_iter()
            .chain(geometry)
            .chain([p.count_include_pad as usize])
            .map(|v| v as u32)
            .collect();
        let meta = spec.meta(n as u32, &[], &extra);
        let per = if v4 { 4 } else { r.per_word() as usize };
        self.run(&spec, &pipeline, &[x.buffer(), y.buffer()], &meta, n.div_ceil(per) as u64)?;
        Ok(y)
    }
}

/// Every pool kernel for `caps`: `{op}_{dtype}` (a 3x3 window, one word per invocation) and
/// `_v4` (a 2x2 window, four outputs per invocation).
pub fn shader_variants(caps: Caps) -> Vec<(String, Result<Spec>)> {
    use crate::spec::kernel_name;
    let mut v = vec![];
    for dt in caps.dtypes().into_iter().filter(|d| DType::FLOAT.contains(d)) {
        for &op in PoolOp::ALL {
            let name = kernel_name(op.name(), dt);
            v.push((name.clone(), pool_spec(caps, op, dt, [3, 3], false)));
            if Repr::of(dt, caps, op.name()).is_ok_and(|r| r.vectorizes()) {
                v.push((format!("{name}_v4"), pool_spec(caps, op, dt, [2, 2], true)));
            }
        }
    }
    v
}
