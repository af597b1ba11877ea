//! Fusion: on a GPU device, an elementwise op's result is deferred, a program of steps over its
//! inputs (`expr::program`), and an elementwise op on a deferred result of its own shape adds a
//! step to that result's program instead of reading it. The program runs as one kernel
//! (`ElementwiseOps::fused`) when something needs the data: an op that does not fuse, a
//! readback, `Device::synchronize`, an in-place write to any tensor of the device (a deferred
//! program may read what it overwrites), or a program at its size limits. Each step stores what
//! its op alone would, so fused and unfused results are the same bits. `RWO_FUSION=0` (or
//! `Device::set_fusion(false)`) runs every op at once.

use super::Tensor;
use super::status::{Flag, Status};
use crate::backend::{ElementwiseOps, Memory};
use crate::device::{BackendOf, Storage, dispatch};
use crate::expr::program::{Op, Program, Step, Value};
use crate::spec::Out;
use crate::{DType, Device, Layout, Result, Scalar};
use std::sync::Arc;

/// Steps a program holds at most; an op past it runs its operand's program first.
const MAX_STEPS: usize = 32;

/// Inputs a program reads at most (a wgpu kernel binds 8 storage buffers: the metadata, the
/// output and these).
const MAX_INPUTS: usize = 6;

/// A deferred elementwise result: its program, the tensors it reads (each in the result's
/// shape) and its parameters.
pub(crate) struct Deferred {
    program: Program,
    inputs: Vec<Tensor>,
    params: Vec<Scalar>,
    device: Device,
}

impl Deferred {
    /// Runs the program: the result's storage.
    pub(super) fn run(&self) -> Result<Storage> {
        // Each distinct storage read-locked once (a storage read twice in one thread could
        // deadlock behind a waiting writer).
        let mut owners: Vec<&Tensor> = vec![];
        let mut guards = vec![];
        for t in &self.inputs {
            if !owners.iter().any(|o| o.shares_storage(t)) {
                owners.push(t);
                guards.push(t.read()?);
            }
        }
        let at = |t: &Tensor| owners.iter().position(|o| o.shares_storage(t)).unwrap_or_default();
        dispatch!(self.device, |b| {
            let storages = guards.iter().map(|g| b.get(g)).collect::<Result<Vec<_>>>()?;
            let inputs: Vec<(_, &Layout)> = self.inputs.iter().map(|t| (storages[at(t)], t.layout())).collect();
            Ok(b.wrap(b.fused(&self.program, &inputs, &self.params)?))
        })
    }
}

/// A program under construction: its inputs (deduplicated) and the values of inlined results.
struct Builder {
    program: Program,
    inputs: Vec<Tensor>,
    params: Vec<Scalar>,
    /// Whether operands' programs may be inlined.
    inline: bool,
    /// The deferred results inlined so far (by their storage) and the value of each.
    inlined: Vec<(Tensor, Value)>,
}

impl Builder {
    /// The value of operand `t` seen as `layout` (broadcast to the result's shape): the result of
    /// its own program, inlined, where `t` is a deferred result of exactly that shape and the
    /// program stays within its limits; else an input (its program run first).
    fn value(&mut self, t: &Tensor, layout: &Layout) -> Result<Value> {
        if self.inline && t.layout() == layout && layout.is_contiguous() && layout.offset() == 0 {
            if let Some(&(_, v)) = self.inlined.iter().find(|(i, _)| i.shares_storage(t)) {
                return Ok(v);
            }
            if let Some(v) = t.with_deferred(|d| self.inline(d)) {
                self.inlined.push((t.clone(), v));
                return Ok(v);
            }
        }
        t.materialize()?;
        Ok(self.input(t.view(layout.clone())))
    }

    /// `t` as an input, once per storage and layout.
    fn input(&mut self, t: Tensor) -> Value {
        if let Some(k) = self.inputs.iter().position(|i| i.shares_storage(&t) && i.layout() == t.layout()) {
            return Value::Input(k as u8);
        }
        self.program.inputs.push(t.dtype());
        self.inputs.push(t);
        Value::Input(self.inputs.len() as u8 - 1)
    }

    /// `d`'s steps appended to this program (its inputs and parameters renumbered), or `None`
    /// where that would pass the limits.
    fn inline(&mut self, d: &Deferred) -> Option<Value> {
        let new_inputs = d.inputs.iter().filter(|t| !self.has_input(t)).count();
        if self.inputs.len() + new_inputs > MAX_INPUTS || self.program.steps.len() + d.program.steps.len() >= MAX_STEPS
        {
            return None;
        }
        let inputs: Vec<Value> = d.inputs.iter().map(|t| self.input(t.clone())).collect();
        let (base, params) = (self.program.steps.len() as u8, self.params.len() as u8);
        for s in &d.program.steps {
            let args = s
                .args
                .iter()
                .map(|&(v, dt)| match v {
                    Value::Input(i) => (inputs[i as usize], dt),
                    Value::Step(k) => (Value::Step(base + k), dt),
                })
                .collect();
            let op = match s.op {
                Op::Scalar(op, first) => Op::Scalar(op, params + first),
                op => op,
            };
            self.program.steps.push(Step { op, args, dtype: s.dtype });
        }
        self.params.extend_from_slice(&d.params);
        Some(Value::Step(base + d.program.steps.len() as u8 - 1))
    }

    fn has_input(&self, t: &Tensor) -> bool {
        self.inputs.iter().any(|i| i.shares_storage(t) && i.layout() == t.layout())
    }
}

impl Tensor {
    /// The deferred result of elementwise `op` over `args` (each seen as its layout in `layouts`,
    /// broadcast to `out`'s shape) with `params`, where this device fuses; `None` where it runs
    /// ops at once (the cpu, fusion off, a dtype it cannot run).
    pub(super) fn defer(
        op: Op,
        args: &[&Tensor],
        layouts: &[&Layout],
        out: &Out,
        params: &[Scalar],
    ) -> Result<Option<Tensor>> {
        let dev = &args[0].device;
        let dtypes: Vec<DType> = args.iter().map(|t| t.dtype()).chain([out.dtype]).collect();
        if !dev.fusion() || !dispatch!(dev, |b| b.fuses(&dtypes)) {
            return Ok(None);
        }
        super::run::admit(dev, crate::spec::Family::Elementwise, op_name(op), out)?;
        args[0].check_operands(op_name(op), args.iter().copied())?;
        // An output past one buffer, or an operand stored in parts, split before they got here
        // (`parts.rs`): what is deferred fits one buffer.
        let mut b =
            Builder { program: Program::default(), inputs: vec![], params: vec![], inline: true, inlined: vec![] };
        let mut values = vec![];
        for (t, l) in args.iter().zip(layouts) {
            values.push((b.value(t, l)?, t.dtype()));
        }
        if b.inputs.len() > MAX_INPUTS {
            // The operands' programs together read too much: each runs first, as an input.
            b = Builder { program: Program::default(), inputs: vec![], params: vec![], inline: false, inlined: vec![] };
            values.clear();
            for (t, l) in args.iter().zip(layouts) {
                values.push((b.value(t, l)?, t.dtype()));
            }
        }
        let op = match op {
            Op::Scalar(s, _) => {
                b.params.extend_from_slice(params);
                Op::Scalar(s, (b.params.len() - params.len()) as u8)
            }
            op => op,
        };
        b.program.steps.push(Step { op, args: values, dtype: out.dtype });
        let flags: Vec<Arc<Flag>> = args.iter().flat_map(|t| t.status().flags()).collect();
        let deferred = Deferred { program: b.program, inputs: b.inputs, params: b.params, device: dev.clone() };
        Ok(Some(Tensor::deferred(deferred, out, Status::of(flags, dev), dev)))
    }
}

/// The spec name of a step's op, for errors.
fn op_name(op: Op) -> &'static str {
    match op {
        Op::Unary(o) => o.name(),
        Op::Binary(o) => o.name(),
        Op::Cmp(o) => o.name(),
        Op::Scalar(o, _) => o.name(),
        Op::Where => "where_cond",
        Op::Cast => "cast",
    }
}
