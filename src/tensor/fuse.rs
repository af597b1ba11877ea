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
//! become that program's steps, which the GEMM kernel computes where it stores C. A quantized
//! product of a few rows likewise (`QuantOps::qmatvec_epilogues`).

use super::Tensor;
use super::status::{Flags, Status};
use crate::backend::{ElementwiseOps, MatmulOps, Memory, QmvInput, QuantOps, RowNormArgs};
use crate::device::{BackendOf, Storage, dispatch};
use crate::expr::program::{Op, Program, Step, Value};
use crate::spec::matmul::MatmulGeometry;
use crate::spec::nn::NnOp;
use crate::spec::quant::{GgmlType, QuantOp};
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

/// A matrix product not run yet: its lhs and rhs, its dtype (its program's input 0) and its
/// elements.
pub(crate) struct Product {
    lhs: Lhs,
    rhs: Rhs,
    dtype: DType,
    elems: usize,
}

/// A product's rhs: a matmul's (broadcast to the geometry's batch dims, with the geometry), or a
/// quantized weight's blocks ([`crate::QTensor::qmatmul`]: the u8 tensor, the byte its blocks
/// start at, their type and the weight's rows N).
enum Rhs {
    Dense(Tensor, MatmulGeometry),
    Quant(Tensor, (usize, GgmlType, usize)),
}

impl Rhs {
    fn tensor(&self) -> &Tensor {
        match self {
            Rhs::Dense(t, _) | Rhs::Quant(t, _) => t,
        }
    }
}

/// The product `t`'s deferred program reads, where `t` is all of that program's elements: a
/// view of some of them (the first half of a gate-and-up product, which a SwiGLU reads beside its
/// other half) takes the product's stored result, so that the product runs once.
fn whole_product(t: &Tensor, d: &Deferred) -> Option<Arc<Product>> {
    d.product.clone().filter(|p| p.elems == t.layout().shape().elem_count())
}

/// A product's lhs: a tensor, or a norm not run yet, which the product computes from its input
/// ([`MatmulOps::matmul_norm_then`]). The norm's own result is not held here, so that nothing
/// runs it unless someone else reads it.
enum Lhs {
    Tensor(Tensor),
    Norm(Arc<PendingNorm>),
}

impl Product {
    fn norm(&self) -> Option<&Arc<PendingNorm>> {
        match &self.lhs {
            Lhs::Norm(n) => Some(n),
            Lhs::Tensor(_) => None,
        }
    }
}

/// A layer or rms norm over the last dim of `x` not run yet (`Tensor::defer_norm`): it runs
/// when its result is read, or inside the product that reads it as its lhs.
pub(crate) struct PendingNorm {
    op: NnOp,
    x: Tensor,
    w: Option<Tensor>,
    b: Option<Tensor>,
    eps: f64,
}

impl PendingNorm {
    fn tensors(&self) -> impl Iterator<Item = &Tensor> {
        std::iter::once(&self.x).chain(&self.w).chain(&self.b)
    }
}

/// A deferred elementwise result: its program, the tensors it reads (each in the result's
/// shape) and its parameters; with a product, the program's input 0 is that product and
/// `inputs` are its inputs 1 on.
pub(crate) struct Deferred {
    product: Option<Arc<Product>>,
    /// A norm deferred alone (no product, a program of no steps): the result is the norm's.
    norm: Option<Arc<PendingNorm>>,
    program: Program,
    inputs: Vec<Tensor>,
    params: Vec<Scalar>,
    device: Device,
}

impl Deferred {
    /// Whether it may stay deferred while the storage at `written` is written in place: a norm
    /// that reads none of it (a norm a product computes stays unread: running it before every
    /// cache write would cost its kernel after all).
    pub(super) fn can_wait(&self, written: *const ()) -> bool {
        self.norm.as_ref().is_some_and(|n| n.tensors().all(|t| Arc::as_ptr(&t.storage).cast::<()>() != written))
    }

    /// Runs the program: the result's storage.
    pub(super) fn run(&self) -> Result<Storage> {
        // Each distinct storage read-locked once (a storage read twice in one thread could
        // deadlock behind a waiting writer).
        let mut owners: Vec<&Tensor> = vec![];
        let mut guards = vec![];
        // A product that computes its lhs's norm reads the norm's tensors, not the lhs.
        let norm = self.norm.as_ref().or(self.product.as_ref().and_then(|p| p.norm()));
        let lhs = self.product.iter().filter_map(|p| match &p.lhs {
            Lhs::Tensor(t) => Some(t),
            Lhs::Norm(_) => None,
        });
        let rhs = self.product.iter().map(|p| p.rhs.tensor());
        let operands = lhs.chain(rhs).chain(norm.into_iter().flat_map(|n| n.tensors()));
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
            let arg = operand(|t| (storages[at(t)], t.layout()));
            let norm = norm.map(|n| RowNormArgs {
                op: n.op,
                x: arg(&n.x),
                w: n.w.as_ref().map(arg),
                b: n.b.as_ref().map(arg),
                eps: n.eps,
            });
            let (program, params) = (&self.program, &self.params);
            // A product's norm is its lhs.
            let lhs = || match self.product.as_ref().map(|p| &p.lhs) {
                Some(Lhs::Tensor(lhs)) => arg(lhs),
                _ => unreachable!("a product's norm is `norm`"),
            };
            let storage = match (self.product.as_ref().map(|p| &p.rhs), norm) {
                (None, None) => b.fused(program, &inputs, params)?,
                (None, Some(n)) => n.run(b)?,
                (Some(Rhs::Dense(rhs, g)), Some(n)) => b.matmul_norm_then(n, arg(rhs), g, program, &inputs, params)?,
                (Some(Rhs::Dense(rhs, g)), None) => b.matmul_then(lhs(), arg(rhs), g, program, &inputs, params)?,
                (Some(Rhs::Quant(q, w)), n) => {
                    let x = match n {
                        Some(n) => QmvInput::Norm(n),
                        None => QmvInput::Rows(lhs()),
                    };
                    b.qmatvec_then(arg(q).0, *w, x, program, &inputs, params)?
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
        program.inputs.extend(product.iter().map(|p| p.dtype));
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
            let whole = |d: &Deferred| d.product.is_none() || whole_product(t, d).is_some();
            if let Some(v) = t.with_deferred(|d| whole(d).then(|| self.inline(d)).flatten()) {
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
        if d.norm.is_some() {
            // A norm is no program: read as an input (it runs first).
            return None;
        }
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
            .find_map(|(t, _)| t.with_deferred(|d| whole_product(t, d)));
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
            norm: None,
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
        // The norm this lhs is, not run yet, the product computes (it is exactly the lhs).
        // (A lhs seen in another shape than the norm's, a vector as a row, reads the result.)
        let norm = match inlinable(self, ll) {
            true => self.with_deferred(|d| d.norm.clone()).filter(|n| n.x.dims() == ll.dims()),
            false => None,
        };
        let (lhs, rhs) = (self.view(ll.clone()), rhs.view(rl.clone()));
        lhs.check_operands("matmul", [&lhs, &rhs].into_iter())?;
        let flags = [&lhs, &rhs].map(|t| t.status().flags());
        let status = Status::of(flags, dev);
        let program = Program { inputs: vec![g.out.dtype], steps: vec![] };
        let lhs = match norm {
            Some(n) => Lhs::Norm(n),
            None => Lhs::Tensor(lhs),
        };
        let (dtype, elems) = (g.out.dtype, g.out.shape.elem_count());
        let product = Some(Arc::new(Product { lhs, rhs: Rhs::Dense(rhs, g.clone()), dtype, elems }));
        let deferred = Deferred { product, norm: None, program, inputs: vec![], params: vec![], device: dev.clone() };
        Ok(Some(Tensor::deferred(deferred, &g.out, status, dev)))
    }

    /// The deferred product `out` of `self` (a few rows, or the norm they are, not run yet) with
    /// the `n` weight rows whose blocks of `ty` start at byte `offset` of `bytes`, where this
    /// device fuses and its quantized products take epilogues
    /// ([`QuantOps::qmatvec_epilogues`]); `None` where the product runs at once.
    pub(crate) fn defer_qproduct(
        &self,
        bytes: &Tensor,
        w: (usize, GgmlType, usize),
        out: &Out,
    ) -> Result<Option<Tensor>> {
        let dev = &self.device;
        if !dev.fusion() || !dispatch!(dev, |b| b.fuses(&[self.dtype()]) && b.qmatvec_epilogues()) {
            return Ok(None);
        }
        super::run::admit(dev, Family::Quant, QuantOp::Qmatvec.name(), out)?;
        let (lhs, flags) = match self.pending_norm() {
            Some(n) => {
                let flags: Vec<Flags> = n.tensors().chain([bytes]).map(|t| t.status().flags()).collect();
                (Lhs::Norm(n), flags)
            }
            None => {
                self.check_operands(QuantOp::Qmatvec.name(), [self, bytes].into_iter())?;
                (Lhs::Tensor(self.clone()), vec![self.status().flags(), bytes.status().flags()])
            }
        };
        let program = Program { inputs: vec![out.dtype], steps: vec![] };
        let (rhs, elems) = (Rhs::Quant(bytes.clone(), w), out.shape.elem_count());
        let product = Some(Arc::new(Product { lhs, rhs, dtype: out.dtype, elems }));
        let deferred = Deferred { product, norm: None, program, inputs: vec![], params: vec![], device: dev.clone() };
        Ok(Some(Tensor::deferred(deferred, out, Status::of(flags, dev), dev)))
    }

    /// The norm this tensor is, not run yet ([`Tensor::defer_norm`]), where it is exactly the
    /// norm's result.
    pub(super) fn pending_norm(&self) -> Option<Arc<PendingNorm>> {
        match inlinable(self, self.layout()) {
            true => self.with_deferred(|d| d.norm.clone()).filter(|n| n.x.dims() == self.dims()),
            false => None,
        }
    }

    /// The deferred norm `op` (layer_norm or rms_norm) of `self` over its last dim with `w` and
    /// `b`, where this device fuses and would compute it inside the product that reads it
    /// (`MatmulOps::norm_prologues`: a decode step's few rows); `None` where it runs at once.
    pub(super) fn defer_norm(
        &self,
        op: NnOp,
        (w, b): (Option<&Tensor>, Option<&Tensor>),
        eps: f64,
        out: &Out,
    ) -> Result<Option<Tensor>> {
        let dev = &self.device;
        let dtype = self.dtype();
        if !dev.fusion() || !dispatch!(dev, |be| be.fuses(&[dtype]) && be.norm_prologues(self.layout(), dtype)) {
            return Ok(None);
        }
        super::run::admit(dev, Family::Nn, op.name(), out)?;
        let norm = PendingNorm { op, x: self.clone(), w: w.cloned(), b: b.cloned(), eps };
        // Its operands run now, as they would for the norm itself: a program deferred on past it
        // could be inlined into a later consumer (a residual add) and run again there by the
        // product that computes this norm.
        for t in norm.tensors() {
            t.materialize()?;
        }
        self.check_operands(op.name(), norm.tensors())?;
        let status = Status::of(norm.tensors().map(|t| t.status().flags()).collect::<Vec<_>>(), dev);
        let program = Program { inputs: vec![out.dtype], steps: vec![] };
        let norm = Some(Arc::new(norm));
        let deferred = Deferred { product: None, norm, program, inputs: vec![], params: vec![], device: dev.clone() };
        Ok(Some(Tensor::deferred(deferred, out, status, dev)))
    }
}

/// `f`, typed as a function from a tensor to its storage and layout for as long as both live.
fn operand<'t, S: 't, F: Fn(&'t Tensor) -> (&'t S, &'t Layout)>(f: F) -> F {
    f
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
