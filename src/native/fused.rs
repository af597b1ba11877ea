//! Fused elementwise programs on the native backend: a kernel per program and walk (strided, or
//! in 16-byte chunks), its body the program's steps rendered from the expression table
//! (`render.rs`), compiled by the runtime's compiler at first use (cached on disk by its text)
//! and found by its program after that.

use super::kernel::{self, Arg, Args, BLOCK, Path};
use super::render::{Hip, c_type};
use super::{NativeBackend, NativeStorage, Runtime};
use crate::expr::Ty;
use crate::expr::program::{Op, Program};
use crate::{DType, Layout, Result, Scalar};
use std::fmt::Write;

/// The source of `p`'s kernel `fused` with parameters `(Dims, View per input, input pointers,
/// output pointer, parameters)`: a grid-stride walk loading each input through its view, or
/// with `vec` a walk in 16-byte chunks where every operand's inner stride is 0 or 1 (`map_vec`
/// of `hip/common.h`, one chunk a thread: a program's body is unrolled over each chunk's
/// elements, and NVRTC's time grows with it).
pub fn fused_source(p: &Program, params: &[DType], vec: bool) -> String {
    let out = p.dtype();
    let mut sig = String::from("Dims d");
    for i in 0..p.inputs.len() {
        let _ = write!(sig, ", View v{i}");
    }
    for (i, dt) in p.inputs.iter().enumerate() {
        let _ = write!(sig, ", const {dt}* x{i}");
    }
    let _ = write!(sig, ", {out}* y{}", param_list(params));
    let f = lambda(p);
    let walk = if vec {
        let srcs: String = p.inputs.iter().enumerate().map(|(i, dt)| format!(", Src<{dt}>{{x{i}, v{i}}}")).collect();
        format!("map_vec<1>(d, y, {f}{srcs});")
    } else {
        let loads: Vec<String> = (0..p.inputs.len()).map(|i| format!("x{i}[at(v{i}, d, i)]")).collect();
        format!("auto f = {f};\n  for_each(d.n, [&](u32 i) {{ y[i] = f({}); }});", loads.join(", "))
    };
    format!("#include \"common.h\"\n\nRWO_KERNEL fused({sig}) {{\n  {walk}\n}}\n")
}

/// `p` as a C++ lambda of its inputs' stored values (`r0`, `r1`, ..) returning its result's, its
/// parameters named `p0`, `p1`, ...
pub(super) fn lambda(p: &Program) -> String {
    let out = p.dtype();
    let raw: Vec<String> = p.inputs.iter().enumerate().map(|(i, dt)| format!("{dt} r{i}")).collect();
    let mut f = format!("[&]({}) {{\n", raw.join(", "));
    for (i, dt) in p.inputs.iter().enumerate() {
        let _ = writeln!(f, "    {} a{i} = num<{dt}>::load(r{i});", c_type(Ty::of(*dt)));
    }
    let (lines, result) = p.render(&Hip);
    for l in lines {
        let _ = writeln!(f, "    {l}");
    }
    let _ = write!(f, "    return num<{out}>::store({result});\n  }}");
    f
}

/// The kernel parameters of `params` (each in its compute type), each after a comma.
pub(super) fn param_list(params: &[DType]) -> String {
    params.iter().enumerate().map(|(k, &dt)| format!(", {} p{k}", c_type(Ty::of(dt)))).collect()
}

/// The dtype each parameter of `p` is passed in (its step's operand dtype, whose compute type
/// the kernel takes it in); `count` of them.
pub(super) fn param_dtypes(p: &Program, count: usize) -> Vec<DType> {
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
        let strided: Vec<kernel::Strided> = inputs.iter().map(|(_, l)| (l.strides(), l.offset())).collect();
        let addrs: Vec<(u64, usize)> = inputs.iter().map(|(s, _)| (s.ptr.0, s.dtype.size_in_bytes())).collect();
        let size = p.dtype().size_in_bytes();
        for part in kernel::plan(shape, &strided) {
            let dense = (y.ptr.0 + part.first * size as u64, size);
            // One chunk a thread (`map_vec<1>`).
            let blocks = match kernel::vec_path_unrolled(&part, &addrs, Some(dense), 1) {
                Some(Path::Vec { blocks }) => Some(blocks),
                _ => None,
            };
            let f = self.fused_function(p, blocks.is_some(), || fused_source(p, &types, blocks.is_some()))?;
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
            // output pointer, each parameter in its compute type), as appended here; the layouts
            // lie inside their storages (validated by the spec) and each part writes its own `n`
            // elements of `y` from `first` on: the vector walk over a block a BLOCK chunks.
            unsafe {
                match blocks {
                    Some(blocks) => self.launch_function_grid(f, [blocks, 1, 1], BLOCK, &mut args)?,
                    None => self.launch_function(f, part.dims.n, &mut args)?,
                }
            }
        }
        Ok(y)
    }
}
