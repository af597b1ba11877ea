//! Fusion: on a GPU device, an elementwise op's result is deferred, a program of steps over its
//! inputs (`expr::program`), and an elementwise op on a deferred result of its own shape adds a
//! step to that result's program instead of reading it. The program runs as one kernel
//! (`ElementwiseOps::fused`) when something needs the data: an op that does not fuse, a
//! readback, `Device::synchronize`, an in-place write to any tensor of the device (a deferred
//! program may read what it overwrites), or a program at its size limits. Each step stores what
//! its op alone would, so fused and unfused results are the same bits. `RWO_FUSION=0` (or
//! `Device::set_fusion(false)`) runs every op at once.
//!
//! Where the backend's GEMM kernels take an epilogue (`MatmulOps::epilogues`), a matmul's result
//! is deferred too, as a [`Product`] that its program reads as input 0: elementwise ops on it
//! become that program's steps, which the GEMM kernel computes where it stores C.

use super::Tensor;
use super::status::{Flags, Status};
use crate::backend::{ElementwiseOps, MatmulOps, Memory};
use crate::device::{BackendOf, Storage, dispatch};
use crate::expr::program::{Op, Program, Step, Value};
use crate::spec::matmul::MatmulGeometry;
use crate::spec::{Family, Out};
use crate::{DType, Device, Layout, Result, Scalar};
use std::sync::Arc;

/// Steps a program holds at most; an op past it runs its operand's program first.
const MAX_STEPS: usize = 32;

/// Inputs a program reads at most (a wgpu kernel binds 8 storage buffers: the metadata, the
/// output and these).
const MAX_INPUTS: usize = 6;

/// Tensors a program over a product reads besides it (a wgpu GEMM kernel binds the metadata, A,
/// B and C before them).
const MAX_EPILOGUE_INPUTS: usize = 4;

/// A matrix product not run yet: its operands (broadcast to the geometry's batch dims) and
/// geometry.
pub(crate) struct Product {
    lhs: Tensor,
    rhs: Tensor,
    geometry: MatmulGeometry,
}

/// A deferred elementwise result: its program, the tensors it reads (each in the result's
/// shape) and its parameters; with a product, the program's input 0 is that product and
/// `inputs` are its inputs 1 on.
pub(crate) struct Deferred {
    product: Option<Arc<Product>>,
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
        let operands = self.product.iter().flat_map(|p| [&p.lhs, &p.rhs]);
        for t in operands.chain(&self.inputs) {
            if !owners.iter().any(|o| o.shares_storage(t)) {
                owners.push(t);
                guards.push(t.read()?);
            }
        }
        let at = |t: &Tensor| owners.iter().position(|o| o.shares_storage(t)).unwrap_or_default();
        dispatch!(self.device, |b| {
            let storages = guards.iter().map(|g| b.get(g)).collect::<Result<Vec<_>>>()?;
            let inputs: Vec<(_, &Layout)> = self.inputs.iter().map(|t| (storages[at(t)], t.layout())).collect();
            let storage = match &self.product {
                None => b.fused(&self.program, &inputs, &self.params)?,
                Some(p) => {
                    let (lhs, rhs) = ((storages[at(&p.lhs)], p.lhs.layout()), (storages[at(&p.rhs)], p.rhs.layout()));
                    b.matmul_then(lhs, rhs, &p.geometry, &self.program, &inputs, &self.params)?
                }
            };
            Ok(b.wrap(storage))
        })
    }
}

/// A program under construction: its inputs (deduplicated) and the values of inlined results.
struct Builder {
    /// The product the program reads as input 0, if any.
    product: Option<Arc<Product>>,
    program: Program,
    /// The tensors it reads: its inputs after the product's.
    inputs: Vec<Tensor>,
    params: Vec<Scalar>,
    /// Whether operands' programs may be inlined.
    inline: bool,
    /// The deferred results inlined so far (by their storage) and the value of each.
    inlined: Vec<(Tensor, Value)>,
}

impl Builder {
    /// An empty program over `product` (if any), inlining operands' programs if `inline`.
    fn new(inline: bool, product: Option<Arc<Product>>) -> Builder {
        let mut program = Program::default();
        program.inputs.extend(product.iter().map(|p| p.geometry.out.dtype));
        Builder { product, program, inputs: vec![], params: vec![], inline, inlined: vec![] }
    }

    /// The program input of `inputs[k]`.
    fn input_value(&self, k: usize) -> Value {
        Value::Input((k + self.product.is_some() as usize) as u8)
    }

    /// The most tensors the program may read.
    fn max_inputs(&self) -> usize {
        if self.product.is_some() { MAX_EPILOGUE_INPUTS } else { MAX_INPUTS }
    }

    /// The value of operand `t` seen as `layout` (broadcast to the result's shape): the result of
    /// its own program, inlined, where `t` is a deferred result of exactly that shape and the
    /// program stays within its limits; else an input (its program run first).
    fn value(&mut self, t: &Tensor, layout: &Layout) -> Result<Value> {
        if self.inline && inlinable(t, layout) {
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

    /// The values of operands `args` seen as `layouts`, with their dtypes.
    fn values(&mut self, args: &[&Tensor], layouts: &[&Layout]) -> Result<Vec<(Value, DType)>> {
        args.iter().zip(layouts).map(|(t, l)| Ok((self.value(t, l)?, t.dtype()))).collect()
    }

    /// Whether the program with its last step's arguments `values` reads its product.
    fn reads_product(&self, values: &[(Value, DType)]) -> bool {
        let args = self.program.steps.iter().flat_map(|s| &s.args).chain(values);
        self.product.is_some() && args.map(|a| a.0).any(|v| v == Value::Input(0))
    }

    /// `t` as an input, once per storage and layout.
    fn input(&mut self, t: Tensor) -> Value {
        if let Some(k) = self.inputs.iter().position(|i| i.shares_storage(&t) && i.layout() == t.layout()) {
            return self.input_value(k);
        }
        self.program.inputs.push(t.dtype());
        self.inputs.push(t);
        self.input_value(self.inputs.len() - 1)
    }

    /// `d`'s steps appended to this program (its inputs and parameters renumbered), or `None`
    /// where that would pass the limits or `d` reads a product this program does not.
    fn inline(&mut self, d: &Deferred) -> Option<Value> {
        let product = match (&d.product, &self.product) {
            (None, _) => None,
            (Some(a), Some(b)) if Arc::ptr_eq(a, b) => Some(Value::Input(0)),
            _ => return None,
        };
        let new_inputs = d.inputs.iter().filter(|t| !self.has_input(t)).count();
        if self.inputs.len() + new_inputs > self.max_inputs()
            || self.program.steps.len() + d.program.steps.len() >= MAX_STEPS
        {
            return None;
        }
        let mut inputs: Vec<Value> = product.into_iter().collect();
        inputs.extend(d.inputs.iter().map(|t| self.input(t.clone())));
        if d.program.steps.is_empty() {
            // A product alone.
            return inputs.first().copied();
        }
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
        let dtypes: smallvec::SmallVec<[DType; 4]> = args.iter().map(|t| t.dtype()).chain([out.dtype]).collect();
        if !dev.fusion() || !dispatch!(dev, |b| b.fuses(&dtypes)) {
            return Ok(None);
        }
        super::run::admit(dev, Family::Elementwise, op_name(op), out)?;
        args[0].check_operands(op_name(op), args.iter().copied())?;
        // An output past one buffer, or an operand stored in parts, split before they got here
        // (`parts.rs`): what is deferred fits one buffer. The program reads the product of the
        // first operand that is (or reads) one.
        let product = args
            .iter()
            .zip(layouts)
            .filter(|(t, l)| inlinable(t, l))
            .find_map(|(t, _)| t.with_deferred(|d| d.product.clone()));
        let mut b = Builder::new(true, product);
        let mut values = b.values(args, layouts)?;
        if b.product.is_some() && !b.reads_product(&values) {
            // Its reader ran first (past the limits): the product is no input.
            b = Builder::new(true, None);
            values = b.values(args, layouts)?;
        }
        if b.inputs.len() > b.max_inputs() {
            // The operands' programs together read too much: each runs first, as an input.
            b = Builder::new(false, None);
            values = b.values(args, layouts)?;
        }
        let op = match op {
            Op::Scalar(s, _) => {
                b.params.extend_from_slice(params);
                Op::Scalar(s, (b.params.len() - params.len()) as u8)
            }
            op => op,
        };
        b.program.steps.push(Step { op, args: values, dtype: out.dtype });
        let flags: Vec<Flags> = args.iter().map(|t| t.status().flags()).collect();
        let deferred = Deferred {
            product: b.product,
            program: b.program,
            inputs: b.inputs,
            params: b.params,
            device: dev.clone(),
        };
        Ok(Some(Tensor::deferred(deferred, out, Status::of(flags, dev), dev)))
    }

    /// The deferred product of `self` and `rhs`, seen as `ll` and `rl` (broadcast to `g`'s
    /// batch dims), where this device fuses and its GEMM kernels take epilogues; `None` where
    /// the matmul runs at once.
    pub(super) fn defer_product(
        &self,
        rhs: &Tensor,
        (ll, rl): (&Layout, &Layout),
        g: &MatmulGeometry,
    ) -> Result<Option<Tensor>> {
        let dev = &self.device;
        let dtypes = [self.dtype(), rhs.dtype(), g.out.dtype];
        if !dev.fusion() || !dispatch!(dev, |b| b.fuses(&dtypes) && b.epilogues()) {
            return Ok(None);
        }
        super::run::admit(dev, Family::Matmul, "matmul", &g.out)?;
        let (lhs, rhs) = (self.view(ll.clone()), rhs.view(rl.clone()));
        lhs.check_operands("matmul", [&lhs, &rhs].into_iter())?;
        let flags = [&lhs, &rhs].map(|t| t.status().flags());
        let status = Status::of(flags, dev);
        let program = Program { inputs: vec![g.out.dtype], steps: vec![] };
        let product = Some(Arc::new(Product { lhs, rhs, geometry: g.clone() }));
        let deferred = Deferred { product, program, inputs: vec![], params: vec![], device: dev.clone() };
        Ok(Some(Tensor::deferred(deferred, &g.out, status, dev)))
    }
}

/// Whether operand `t`, seen as `layout`, may be inlined: it is exactly the result's elements.
fn inlinable(t: &Tensor, layout: &Layout) -> bool {
    t.layout() == layout && layout.is_contiguous() && layout.offset() == 0
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
