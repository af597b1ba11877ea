//! Fused elementwise programs on the native backend: one kernel per program, its body the
//! program's steps rendered from the expression table (`render.rs`), compiled by the runtime's
//! compiler at first use (cached on disk by its text) and found by its program after that.

use super::kernel::{self, Arg, Args};
use super::render::{Hip, c_type};
use super::{NativeBackend, NativeStorage, Runtime};
use crate::expr::Ty;
use crate::expr::program::{Op, Program};
use crate::{DType, Layout, Result, Scalar};
use std::fmt::Write;

/// The source of `p`'s kernel `fused`: `(Dims, View per input, input pointers, output
/// pointer, parameters)`, a grid-stride walk loading each input through its view.
pub fn fused_source(p: &Program, params: &[DType]) -> String {
    let mut s = String::from("#include \"common.h\"\n\nRWO_KERNEL fused(Dims d");
    let n = p.inputs.len();
    for i in 0..n {
        let _ = write!(s, ", View v{i}");
    }
    for (i, dt) in p.inputs.iter().enumerate() {
        let _ = write!(s, ", const {dt}* x{i}");
    }
    let out = p.dtype();
    let _ = write!(s, ", {out}* y");
    for (k, &dt) in params.iter().enumerate() {
        let _ = write!(s, ", {} p{k}", c_type(Ty::of(dt)));
    }
    s.push_str(") {\n  for_each(d.n, [&](u32 i) {\n");
    for (i, dt) in p.inputs.iter().enumerate() {
        let _ = writeln!(s, "    {} a{i} = num<{dt}>::load(x{i}[at(v{i}, d, i)]);", c_type(Ty::of(*dt)));
    }
    let (lines, result) = p.render(&Hip);
    for l in lines {
        let _ = writeln!(s, "    {l}");
    }
    let _ = writeln!(s, "    y[i] = num<{out}>::store({result});\n  }});\n}}");
    s
}

/// The dtype each parameter of `p` is passed in (its step's operand dtype, whose compute type
/// the kernel takes it in); `count` of them.
fn param_dtypes(p: &Program, count: usize) -> Vec<DType> {
    let mut v = vec![DType::F32; count];
    for s in &p.steps {
        if let Op::Scalar(op, first) = s.op {
            let at = first as usize;
            v[at..at + op.arity()].fill(s.args[0].1);
        }
    }
    v
}

impl<R: Runtime> NativeBackend<R> {
    /// Runs program `p` over `inputs` (one shape) into a new storage (see
    /// [`crate::backend::ElementwiseOps::fused`]).
    pub(crate) fn run_fused(
        &self,
        p: &Program,
        inputs: &[(&NativeStorage<R>, &Layout)],
        params: &[Scalar],
    ) -> Result<NativeStorage<R>> {
        let shape = inputs.first().map_or(&[][..], |(_, l)| l.dims());
        let y = self.storage(p.dtype(), shape.iter().product())?;
        if y.len == 0 {
            return Ok(y);
        }
        let types = param_dtypes(p, params.len());
        let f = self.fused_function(p, || fused_source(p, &types))?;
        let strided: Vec<kernel::Strided> = inputs.iter().map(|(_, l)| (l.strides(), l.offset())).collect();
        for part in kernel::plan(shape, &strided) {
            let mut args = Args::default();
            args.pod(&part.dims);
            for v in &part.views {
                args.pod(v);
            }
            for (s, _) in inputs {
                args.ptr(s.ptr);
            }
            args.ptr(y.at(part.first as usize));
            for (&v, &dt) in params.iter().zip(&types) {
                args.arg(Arg::compute(dt, v));
            }
            // SAFETY: `fused_source` declares (Dims, a View per input, the input pointers, the
            // output pointer, each parameter in its compute type), as appended here; the
            // layouts lie inside their storages (validated by the spec) and each part writes its
            // own `n` elements of `y` from `first` on.
            unsafe { self.launch_function(f, part.dims.n, &mut args)? };
        }
        Ok(y)
    }
}
