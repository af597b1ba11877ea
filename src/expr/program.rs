//! A chain of elementwise ops over one shape, run as one kernel: a [`Program`] of steps, each an
//! op of the expression table over the program's inputs and earlier steps. Every step's result
//! is what the unfused op would have stored (rounded to its dtype), so a fused kernel gives the
//! unfused ops' bits; a dialect also keeps compilers from contracting across steps.

use super::{Dialect, Expr, Prim, Ty, render_lines, select, table};
use crate::DType;
use crate::spec::elementwise::{BinaryOp, CmpOp, ScalarOp, UnaryOp};

/// An elementwise op as a step of a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// A unary map.
    Unary(UnaryOp),
    /// A binary op.
    Binary(BinaryOp),
    /// A comparison (a u8 0 or 1).
    Cmp(CmpOp),
    /// A scalar map, its parameters from the program's list from `first` on.
    Scalar(ScalarOp, u8),
    /// where_cond: argument 0 the condition.
    Where,
    /// A cast to the step's dtype.
    Cast,
}

/// A value a step reads: an input of the program or an earlier step's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    /// Input `i` (a tensor the kernel loads).
    Input(u8),
    /// The result of step `k`.
    Step(u8),
}

/// One op of a program: its arguments and their dtypes, and the dtype it produces.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Step {
    /// The op.
    pub op: Op,
    /// Its arguments, with their dtypes.
    pub args: Vec<(Value, DType)>,
    /// The dtype of its result.
    pub dtype: DType,
}

/// Elementwise steps over inputs of one shape; the last step is the result. The parameters'
/// values are not part of it (they travel as data), so one kernel serves every value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Program {
    /// The inputs' dtypes.
    pub inputs: Vec<DType>,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

impl Step {
    /// The expression of this step over its arguments (`Arg(i)` is argument `i`).
    pub fn expr(&self) -> Expr {
        let ty = |i: usize| Ty::of(self.args[i].1);
        match self.op {
            Op::Unary(op) => table::unary(op, ty(0)),
            Op::Binary(op) => table::binary(op, ty(0)),
            Op::Cmp(op) => select(table::cmp(op, ty(0)), Expr::Lit(1.0, Ty::U32), Expr::Lit(0.0, Ty::U32)),
            Op::Scalar(op, _) => table::scalar(op, ty(0)),
            Op::Where => table::where_cond(ty(0), ty(1)),
            Op::Cast => table::cast(self.args[0].1, self.dtype),
        }
    }

    /// Where this step's parameters start in the program's list (none: 0).
    fn first_param(&self) -> u8 {
        match self.op {
            Op::Scalar(_, first) => first,
            _ => 0,
        }
    }
}

impl Program {
    /// The dtype of the result.
    pub fn dtype(&self) -> DType {
        self.steps.last().map_or(DType::F32, |s| s.dtype)
    }

    /// How many scalar parameters the steps read.
    pub fn params(&self) -> usize {
        self.steps
            .iter()
            .map(|s| match s.op {
                Op::Scalar(op, first) => first as usize + op.arity(),
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    }

    /// The program's body in dialect `d`: one binding per step (`t0`, `t1`, ..., each the step's
    /// stored value, after the bindings of its repeated subexpressions `t{k}_0`, ...), over
    /// inputs named `a0`, `a1`, ...; returns the statements and the name of the result.
    pub fn render(&self, d: &impl Dialect) -> (Vec<String>, String) {
        let mut lines = vec![];
        for (k, step) in self.steps.iter().enumerate() {
            let names: Vec<String> = step
                .args
                .iter()
                .map(|(v, _)| match v {
                    Value::Input(i) => format!("a{i}"),
                    Value::Step(j) => format!("t{j}"),
                })
                .collect();
            let at = Named { inner: d, names: &names, first_param: step.first_param() };
            let (shared, value) = render_lines(&step.expr(), &at, &format!("t{k}_"));
            lines.extend(shared);
            lines.push(d.bind(&format!("t{k}"), &d.stored(value, step.dtype), Ty::of(step.dtype)));
        }
        (lines, format!("t{}", self.steps.len().saturating_sub(1)))
    }
}

/// A dialect whose operands are named values and whose parameters start at `first_param`.
struct Named<'a, D> {
    inner: &'a D,
    names: &'a [String],
    first_param: u8,
}

impl<D: Dialect> Dialect for Named<'_, D> {
    fn lit(&self, v: f64, ty: Ty) -> String {
        self.inner.lit(v, ty)
    }
    fn arg(&self, i: u8, _: Ty) -> String {
        self.names[i as usize].clone()
    }
    fn param(&self, i: u8, ty: Ty) -> String {
        self.inner.param(self.first_param + i, ty)
    }
    fn prim(&self, p: Prim, args: &[String], tys: &[Ty]) -> String {
        self.inner.prim(p, args, tys)
    }
    fn cast(&self, x: &str, from: DType, to: DType) -> String {
        self.inner.cast(x, from, to)
    }
    fn stored(&self, x: String, dtype: DType) -> String {
        self.inner.stored(x, dtype)
    }
    fn bind(&self, name: &str, value: &str, ty: Ty) -> String {
        self.inner.bind(name, value, ty)
    }
}
