//! cuDNN's flash attention through the graph API (ARCHITECTURE.md, the attention family): the
//! graph torch builds for `F.scaled_dot_product_attention` on its cuDNN backend, as cuDNN's API
//! log shows it. `S = Q K^T` (K^T by strides), `S * scale`, where causal `row >= col` of two
//! index tensors keeping `S` and `-inf` elsewhere, `max`, `exp(S - max)`, `sum`, `P = exp / sum`
//! in the data dtype, `O = P V`; the statistics `max + log(sum)` virtual. cuDNN's fused engine
//! runs the whole graph without writing the scores.

use super::super::{AttnBuffers, AttnDesc, Tensor4, Workspace};
use super::graph::{Desc, Held, Plan, Step, Stop, finish, plan, tensor};
use super::{data_type, dev};
use crate::Result;
use cudarc::cudnn::sys::{
    self, cudnnBackendAttributeName_t as Name, cudnnBackendAttributeType_t as Type,
    cudnnBackendDescriptorType_t as Kind, cudnnDataType_t as Data, cudnnPointwiseMode_t as Mode,
    cudnnReduceTensorOp_t as Reduce,
};
use std::ffi::c_void;

/// Ids of the tensors the variant pack names: q, k (read as K^T), v, the output, and the
/// by-value scale and `-inf` (host memory).
const Q: i64 = 1;
const K: i64 = 2;
const V: i64 = 3;
const Y: i64 = 4;
const SCALE: i64 = 5;
const NEG_INF: i64 = 6;
/// Ids of the virtual tensors start past it.
const VIRTUAL: i64 = 100;

const FLOAT: Data = Data::CUDNN_DATA_FLOAT;

impl Plan {
    /// The first plan of cuDNN's heuristics for attention `a` that finalizes within the
    /// workspace limit, or `None` when cuDNN does not take it.
    pub fn attention(handle: sys::cudnnHandle_t, a: &AttnDesc) -> Result<Option<Plan>> {
        finish(build(handle, a))
    }

    /// Queues attention `a` on the handle's stream.
    ///
    /// # Safety
    /// The plan is `a`'s; the buffers hold what `a` states, aligned as it says; the workspace
    /// holds at least [`Plan::workspace`] bytes.
    pub unsafe fn run_attention(
        &self,
        handle: sys::cudnnHandle_t,
        a: &AttnDesc,
        io: &AttnBuffers,
        workspace: Workspace,
    ) -> Result<()> {
        let (scale, neg_inf) = (f32::from_bits(a.scale), f32::NEG_INFINITY);
        let host = |v: &f32| v as *const f32 as *mut c_void;
        let ids = [Q, K, V, Y, SCALE, NEG_INF];
        let pointers = [dev(io.q), dev(io.k), dev(io.v), dev(io.y), host(&scale), host(&neg_inf)];
        let n = if a.causal { 6 } else { 5 };
        // SAFETY: the caller's contract; the by-value scalars live through the call.
        unsafe { self.run(handle, &ids[..n], &pointers[..n], workspace) }
    }
}

/// An operation and the descriptor it was made from (kept alive with it).
struct Op {
    op: Desc,
    _of: Desc,
}

fn matmul(a: &Desc, b: &Desc, c: &Desc) -> Step<Op> {
    let mm = Desc::new(Kind::CUDNN_BACKEND_MATMUL_DESCRIPTOR)?;
    mm.set(Name::CUDNN_ATTR_MATMUL_COMP_TYPE, Type::CUDNN_TYPE_DATA_TYPE, &[FLOAT])?;
    let mm = mm.finalize()?;
    let op = Desc::new(Kind::CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR)?;
    op.set_descs(Name::CUDNN_ATTR_OPERATION_MATMUL_ADESC, &[a])?
        .set_descs(Name::CUDNN_ATTR_OPERATION_MATMUL_BDESC, &[b])?
        .set_descs(Name::CUDNN_ATTR_OPERATION_MATMUL_CDESC, &[c])?
        .set_descs(Name::CUDNN_ATTR_OPERATION_MATMUL_DESC, &[&mm])?;
    Ok(Op { op: op.finalize()?, _of: mm })
}

fn reduction(how: Reduce, x: &Desc, y: &Desc) -> Step<Op> {
    let r = Desc::new(Kind::CUDNN_BACKEND_REDUCTION_DESCRIPTOR)?;
    r.set(Name::CUDNN_ATTR_REDUCTION_OPERATOR, Type::CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &[how])?.set(
        Name::CUDNN_ATTR_REDUCTION_COMP_TYPE,
        Type::CUDNN_TYPE_DATA_TYPE,
        &[FLOAT],
    )?;
    let r = r.finalize()?;
    let op = Desc::new(Kind::CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR)?;
    op.set_descs(Name::CUDNN_ATTR_OPERATION_REDUCTION_XDESC, &[x])?
        .set_descs(Name::CUDNN_ATTR_OPERATION_REDUCTION_YDESC, &[y])?
        .set_descs(Name::CUDNN_ATTR_OPERATION_REDUCTION_DESC, &[&r])?;
    Ok(Op { op: op.finalize()?, _of: r })
}

/// The operands of a pointwise operation: `x`, the second input `b`, the select's condition
/// `t`, the output `y`, and an index op's axis.
struct Pw<'a> {
    x: &'a Desc,
    b: Option<&'a Desc>,
    t: Option<&'a Desc>,
    y: &'a Desc,
    axis: Option<i64>,
}

fn pointwise(mode: Mode, prec: Data, p: Pw) -> Step<Op> {
    let pw = Desc::new(Kind::CUDNN_BACKEND_POINTWISE_DESCRIPTOR)?;
    pw.set(Name::CUDNN_ATTR_POINTWISE_MODE, Type::CUDNN_TYPE_POINTWISE_MODE, &[mode])?.set(
        Name::CUDNN_ATTR_POINTWISE_MATH_PREC,
        Type::CUDNN_TYPE_DATA_TYPE,
        &[prec],
    )?;
    if let Some(axis) = p.axis {
        pw.set_i64(Name::CUDNN_ATTR_POINTWISE_AXIS, &[axis])?;
    }
    let pw = pw.finalize()?;
    let op = Desc::new(Kind::CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)?;
    op.set_descs(Name::CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, &[&pw])?
        .set_descs(Name::CUDNN_ATTR_OPERATION_POINTWISE_XDESC, &[p.x])?
        .set_descs(Name::CUDNN_ATTR_OPERATION_POINTWISE_YDESC, &[p.y])?;
    if let Some(b) = p.b {
        op.set_descs(Name::CUDNN_ATTR_OPERATION_POINTWISE_BDESC, &[b])?;
    }
    if let Some(t) = p.t {
        op.set_descs(Name::CUDNN_ATTR_OPERATION_POINTWISE_TDESC, &[t])?;
    }
    Ok(Op { op: op.finalize()?, _of: pw })
}

fn unary<'a>(x: &'a Desc, y: &'a Desc) -> Pw<'a> {
    Pw { x, b: None, t: None, y, axis: None }
}

fn binary<'a>(x: &'a Desc, b: &'a Desc, y: &'a Desc) -> Pw<'a> {
    Pw { x, b: Some(b), t: None, y, axis: None }
}

fn build(handle: sys::cudnnHandle_t, a: &AttnDesc) -> Step<Option<Plan>> {
    let Some(dt) = data_type(a.dtype) else { return Err(Stop::Refused) };
    let al = a.align;
    let ([b, hq, lq, _], [_, hkv, lk, d], ks) = (a.q.dims, a.k.dims, a.k.strides);
    let k_t = Tensor4 { dims: [b, hkv, d, lk], strides: [ks[0], ks[1], ks[3], ks[2]] };
    let q = tensor(dt, Q, &a.q, al, Held::Memory)?;
    let k = tensor(dt, K, &k_t, al, Held::Memory)?;
    let v = tensor(dt, V, &a.v, al, Held::Memory)?;
    let y = tensor(dt, Y, &a.y, al, Held::Memory)?;
    let one = Tensor4::packed([1; 4]);
    let scale = tensor(FLOAT, SCALE, &one, al, Held::ByValue)?;
    let neg_inf = tensor(FLOAT, NEG_INF, &one, al, Held::ByValue)?;
    let (scores, rows) = (Tensor4::packed([b, hq, lq, lk]), Tensor4::packed([b, hq, lq, 1]));
    let mut id = VIRTUAL;
    let mut virt = |dtype: Data, t: &Tensor4| {
        id += 1;
        tensor(dtype, id, t, al, Held::Virtual)
    };
    let (s, scaled) = (virt(FLOAT, &scores)?, virt(FLOAT, &scores)?);
    let (row, col) = (virt(Data::CUDNN_DATA_INT32, &scores)?, virt(Data::CUDNN_DATA_INT32, &scores)?);
    let (keep, masked) = (virt(Data::CUDNN_DATA_BOOLEAN, &scores)?, virt(FLOAT, &scores)?);
    let (max, shifted, exp) = (virt(FLOAT, &rows)?, virt(FLOAT, &scores)?, virt(FLOAT, &scores)?);
    let (sum, log, stats) = (virt(FLOAT, &rows)?, virt(FLOAT, &rows)?, virt(FLOAT, &rows)?);
    let p = virt(dt, &scores)?;
    let mut ops = vec![matmul(&q, &k, &s)?, pointwise(Mode::CUDNN_POINTWISE_MUL, FLOAT, binary(&s, &scale, &scaled))?];
    let logits = if a.causal {
        let index = |y, axis| Pw { x: &scaled, b: None, t: None, y, axis: Some(axis) };
        ops.push(pointwise(Mode::CUDNN_POINTWISE_GEN_INDEX, FLOAT, index(&col, 3))?);
        ops.push(pointwise(Mode::CUDNN_POINTWISE_GEN_INDEX, FLOAT, index(&row, 2))?);
        ops.push(pointwise(Mode::CUDNN_POINTWISE_CMP_GE, Data::CUDNN_DATA_BOOLEAN, binary(&row, &col, &keep))?);
        let select = Pw { x: &scaled, b: Some(&neg_inf), t: Some(&keep), y: &masked, axis: None };
        ops.push(pointwise(Mode::CUDNN_POINTWISE_BINARY_SELECT, FLOAT, select)?);
        &masked
    } else {
        &scaled
    };
    ops.push(reduction(Reduce::CUDNN_REDUCE_TENSOR_MAX, logits, &max)?);
    ops.push(pointwise(Mode::CUDNN_POINTWISE_SUB, FLOAT, binary(logits, &max, &shifted))?);
    ops.push(pointwise(Mode::CUDNN_POINTWISE_EXP, FLOAT, unary(&shifted, &exp))?);
    ops.push(reduction(Reduce::CUDNN_REDUCE_TENSOR_ADD, &exp, &sum)?);
    ops.push(pointwise(Mode::CUDNN_POINTWISE_LOG, FLOAT, unary(&sum, &log))?);
    ops.push(pointwise(Mode::CUDNN_POINTWISE_ADD, FLOAT, binary(&max, &log, &stats))?);
    ops.push(pointwise(Mode::CUDNN_POINTWISE_DIV, FLOAT, binary(&exp, &sum, &p))?);
    ops.push(matmul(&p, &v, &y)?);
    let ops: Vec<&Desc> = ops.iter().map(|o| &o.op).collect();
    plan(handle, &ops, a.dtype)
}
