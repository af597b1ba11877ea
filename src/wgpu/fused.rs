//! Fused elementwise programs on wgpu: one `mapn` kernel (`shaders/elementwise.wgsl`) per
//! program, its `fn op` the program's steps rendered from the expression table, each input
//! loaded through its own layout. Kernels are found by what the program is (its steps, the
//! inputs' index maps, the vector form), never by their text: a program is rendered and its
//! pipeline built once.

use super::elementwise::{op_at, op_at4};
use super::kernel::{Index, Spec, lane_threads, vec_ok};
use super::render::Wgsl;
use super::repr::{Access, Caps, Compute, Repr, params};
use super::{WgpuBackend, WgpuStorage};
use crate::expr::Ty;
use crate::expr::program::{Op, Program};
use crate::spec::Family;
use crate::{Layout, Result, Scalar};

/// The binding names of a fused kernel's inputs, in order.
const INPUTS: [&str; MAX_INPUTS] = ["x0", "x1", "x2", "x3", "x4", "x5"];

/// Inputs a fused kernel binds at most: every adapter the backend takes has 8 storage buffers
/// per stage, and the metadata and the output take two.
pub const MAX_INPUTS: usize = 6;

/// What decides a fused kernel: the program, each input's index map, and which inputs load whole
/// vectors (`None`: one element per invocation step).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FusedKey {
    program: Program,
    index: Vec<Index>,
    vec: Option<Vec<bool>>,
}

/// The compute types of the program's scalar parameters, each once.
fn param_types(p: &Program, w: &Wgsl) -> Vec<Compute> {
    let mut v = vec![];
    for s in &p.steps {
        if let Op::Scalar(..) = s.op {
            let c = w.compute(Ty::of(s.args[0].1));
            if !v.contains(&c) {
                v.push(c);
            }
        }
    }
    v
}

/// The kernel of `key`.
pub(crate) fn fused_spec(caps: Caps, key: &FusedKey) -> Result<Spec> {
    let p = &key.program;
    let w = Wgsl { caps, names: &[] };
    let mut spec = Spec::new(Family::Elementwise, "mapn", caps);
    for ((&dt, &ix), name) in p.inputs.iter().zip(&key.index).zip(INPUTS) {
        spec = spec.bind(name, Repr::of(dt, caps, "fused")?, Access::Read, ix);
    }
    let out = Repr::of(p.dtype(), caps, "fused")?;
    spec = spec.bind("y", out, Access::Write, Index::None);
    let mut code: String = param_types(p, &w).into_iter().map(params::typed_decoder).collect();
    code += &op_function(p, &w, out.compute());
    let names = &INPUTS[..p.inputs.len()];
    code += &op_at(names, out.compute());
    if let Some(vec) = &key.vec {
        code += &op_at4(names, out.compute());
        spec = spec.lanes("mapn_v4", vec);
    }
    Ok(spec.code(code))
}

/// `fn op(a0, a1, ...) -> RET`: program `p` over its inputs' values, each of its compute type.
pub(crate) fn op_function(p: &Program, w: &Wgsl, ret: Compute) -> String {
    let args: Vec<String> =
        p.inputs.iter().enumerate().map(|(i, &dt)| format!("a{i}: {}", w.compute(Ty::of(dt)).wgsl())).collect();
    let (lines, result) = p.render(w);
    format!("fn op({}) -> {} {{\n    {}\n    return {result};\n}}\n", args.join(", "), ret.wgsl(), lines.join("\n    "))
}

impl WgpuBackend {
    /// Runs program `p` over `inputs` (one shape) into a new storage (see
    /// [`crate::backend::ElementwiseOps::fused`]).
    pub(crate) fn run_fused(
        &self,
        p: &Program,
        inputs: &[(&WgpuStorage, &Layout)],
        values: &[Scalar],
    ) -> Result<WgpuStorage> {
        let n = inputs.first().map_or(0, |(_, l)| l.elem_count());
        let caps = self.caps();
        let out = Repr::of(p.dtype(), caps, "fused")?;
        let y = self.storage(p.dtype(), n)?;
        if n == 0 {
            return Ok(y);
        }
        let reprs: Vec<Repr> = p.inputs.iter().map(|&d| Repr::of(d, caps, "fused")).collect::<Result<_>>()?;
        let lanes = out.vectorizes() && reprs.iter().chain([&out]).all(|r| r.compute() != Compute::I64e);
        let vec = lanes.then(|| inputs.iter().zip(&reprs).map(|((_, l), &r)| vec_ok(r, l)).chain([true]).collect());
        let index = inputs.iter().map(|(_, l)| Index::of(l)).collect();
        let threads = if lanes { lane_threads(n) } else { (n as u64).div_ceil(out.per_word() as u64) };
        let key = FusedKey { program: p.clone(), index, vec };
        let (spec, pipeline) = self.keyed(super::KernelKey::Fused(key.clone()), || fused_spec(caps, &key))?;
        let w = Wgsl { caps, names: &[] };
        let mut types = vec![Compute::F32; values.len()];
        for s in &p.steps {
            if let Op::Scalar(op, first) = s.op {
                let at = first as usize;
                types[at..at + op.arity()].fill(w.compute(Ty::of(s.args[0].1)));
            }
        }
        let extra: Vec<u32> = values.iter().zip(types).flat_map(|(v, c)| params::encode(c, &[*v])).collect();
        let layouts: Vec<&Layout> = inputs.iter().map(|(_, l)| *l).collect();
        let meta = spec.meta(n as u32, &layouts, &extra);
        let mut buffers: Vec<&wgpu::Buffer> = inputs.iter().map(|(s, _)| s.buffer()).collect();
        buffers.push(y.buffer());
        self.run(&spec, &pipeline, &buffers, &meta, threads)?;
        Ok(y)
    }
}
