//! Property-based fuzzing of the public Tensor API (proptest): random shapes (zero and huge dims
//! included), dtypes, views (transpose, narrow, broadcast, valid or not), values (NaN, infinities
//! and -0 in a quarter of the float tensors), ops with random params and ids (out of range
//! included), on the cpu and on every GPU backend here. Each call
//! must return an `Error` or a result equal to the cpu reference's; a panic anywhere fails. A
//! quarter as many cases are captured (`Device::capture`) and replayed on new data, against the
//! cpu's plans; and cases run from three threads at once on the same devices.
//!
//! `RWO_FUZZ_CASES` sets the number of cases (CI: 1500); `README.md` has the long run.

use crate::Tol;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rocm_wgpu_ops::io::{Gguf, GgufWriter, ModelTensor, Safetensors};
use rocm_wgpu_ops::spec::conv::ConvParams;
use rocm_wgpu_ops::spec::elementwise::{BinaryOp, CmpOp, UnaryOp};
use rocm_wgpu_ops::spec::pool::Pool2dParams;
use rocm_wgpu_ops::spec::quant::GgmlType;
use rocm_wgpu_ops::spec::reduce::ReduceOp;
use rocm_wgpu_ops::{BackendKind, CpuStorage, DType, Device, Error, IndexOp, QTensor, Result, Tensor, TensorIndexer};
use std::sync::atomic::{AtomicU64, Ordering};

crate::tests!(
    random_calls_never_panic_and_agree_with_the_cpu,
    replayed_calls_agree_with_the_cpu,
    calls_from_threads_at_once_agree_with_the_cpu,
    host_bytes_of_any_length_never_panic,
    mutated_model_files_never_panic
);

/// A dim: small mostly, sometimes 0, rarely one no memory holds.
fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![20 => 1usize..=4, 3 => Just(0usize), 1 => Just(1usize << 62)]
}

/// How the input is seen before the op.
#[derive(Clone, Debug)]
enum View {
    Plain,
    Transpose(usize, usize),
    Narrow(usize, usize, usize),
    /// Stretch every size-1 dim to this size, and prepend one dim of it.
    Broadcast(usize),
}

fn view() -> impl Strategy<Value = View> {
    prop_oneof![
        3 => Just(View::Plain),
        2 => (0usize..5, 0usize..5).prop_map(|(a, b)| View::Transpose(a, b)),
        2 => (0usize..5, 0usize..4, 0usize..4).prop_map(|(d, s, l)| View::Narrow(d, s, l)),
        2 => (0usize..5).prop_map(View::Broadcast),
    ]
}

/// One program: an input, a view of it, one op with raw parameters.
#[derive(Clone, Debug)]
struct Case {
    shape: Vec<usize>,
    dtype: usize,
    view: View,
    op: usize,
    p: [u64; 4],
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (prop::collection::vec(dim(), 0..=4), 0usize..7, view(), 0usize..OPS, any::<[u64; 4]>(), any::<u64>())
        .prop_map(|(shape, dtype, view, op, p, seed)| Case { shape, dtype, view, op, p, seed })
}

/// API calls made, over every case and device (the figure the long run reports).
static CALLS: AtomicU64 = AtomicU64::new(0);

fn call<T>(r: Result<T>) -> Result<T> {
    CALLS.fetch_add(1, Ordering::Relaxed);
    r
}

/// A tensor of `shape` with values from `seed` (ids: in `[lo, hi)`), or, where the shape is too
/// large to hold, what the constructors say about it.
fn make(dev: &Device, dtype: DType, shape: &[usize], seed: u64, lo: f64, hi: f64) -> Result<Tensor> {
    let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    match n {
        Some(n @ 1..=1024) if dtype.is_float() && seed % 4 == 1 => {
            // Some values made special (NaN, an infinity of either sign, -0), whose handling the
            // spec states op by op: in a quarter of the float tensors. (Not large finite ones:
            // their cancellations leave results far from both backends' within any tolerance
            // of the result's size.)
            let mut v = crate::Data::new(seed).storage(DType::F64, n, lo, hi).to_f64_vec();
            for (i, special) in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0].into_iter().enumerate() {
                if (seed >> (4 + i)).is_multiple_of(2) {
                    v[(seed >> (12 + 10 * i)) as usize % n] = special;
                }
            }
            let host = call(Tensor::from_vec(v, shape.to_vec(), &crate::cpu()))?.to_dtype(dtype)?;
            call(Tensor::from_cpu(host.to_cpu_storage()?, shape.to_vec(), dev))
        }
        Some(n) if n <= 1024 => {
            call(Tensor::from_cpu(crate::Data::new(seed).storage(dtype, n, lo, hi), shape.to_vec(), dev))
        }
        _ => call(Tensor::full(1u8, shape.to_vec(), dtype, dev)),
    }
}

/// The case's input: finite for attention, whose q meets every key, dropped ones too
/// (`spec::attention`), and for quantized products, whose sums an infinity may make NaN
/// (`spec::quant`).
fn input(dev: &Device, c: &Case, dtype: DType) -> Result<Tensor> {
    let (lo, hi) = if dtype.is_int() { (-8.0, 8.0) } else { (-4.0, 4.0) };
    let finite = [ATTENTION, QUANT].contains(&c.op);
    make(dev, dtype, &c.shape, if finite { c.seed & !3 } else { c.seed }, lo, hi)
}

fn viewed(t: Tensor, v: &View) -> Result<Tensor> {
    match *v {
        View::Plain => Ok(t),
        View::Transpose(a, b) => call(t.transpose(a, b)),
        View::Narrow(d, s, l) => call(t.narrow(d, s, l)),
        View::Broadcast(k) => {
            let mut dims: Vec<usize> = t.dims().iter().map(|&d| if d == 1 { k } else { d }).collect();
            dims.insert(0, k);
            call(t.broadcast_as(dims))
        }
    }
}

const OPS: usize = 38;
/// The case of attention.
const ATTENTION: usize = 28;
/// The case of quantized weights (their K reaches 256: sums of more terms than x holds).
const QUANT: usize = 32;
/// The case of several ops in a row, with writes in place among them.
const CHAIN: usize = 36;
/// The kinds of step a chain takes.
const CHAIN_OPS: u64 = 14;
const DTYPES: [DType; 7] = [DType::F32, DType::F16, DType::BF16, DType::F64, DType::U8, DType::U32, DType::I64];

fn pick<T: Copy>(xs: &[T], k: u64) -> T {
    xs[k as usize % xs.len()]
}

/// Ids of `dtype` in `shape`: in `0..size` for three seeds in four, else in `[-2, size + 2)`
/// (unsigned from 0), some out of range.
fn ids(dev: &Device, dtype: DType, shape: &[usize], size: usize, seed: u64) -> Result<Tensor> {
    if !seed.is_multiple_of(4) {
        return make(dev, dtype, shape, seed, 0.0, size as f64);
    }
    make(dev, dtype, shape, seed, if dtype == DType::I64 { -2.0 } else { 0.0 }, size as f64 + 2.0)
}

/// Ids for scatter, where which of several writes to one place lands is unspecified: distinct
/// along `dim` within each line (the line's position plus a per-line shift, modulo `size`), and
/// for one seed in four one id out of range. Shapes too large to hold go to [`make`] (all ids
/// and all sources alike, so any write order agrees).
fn distinct_ids(dev: &Device, dtype: DType, shape: &[usize], dim: usize, size: usize, seed: u64) -> Result<Tensor> {
    let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).filter(|&n| n <= 1024);
    let Some(n) = n.filter(|_| size > 0 && dim < shape.len()) else { return ids(dev, dtype, shape, size, seed) };
    let inner: usize = shape[dim + 1..].iter().product();
    let along = shape[dim];
    let mut ids: Vec<i64> = (0..n)
        .map(|k| {
            let line = (k / (inner * along)) * inner + k % inner;
            let shift = (line as u64 ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            ((k / inner % along + shift as usize) % size) as i64
        })
        .collect();
    if seed.is_multiple_of(4) && n > 0 {
        ids[(seed / 4) as usize % n] = size as i64;
    }
    let dtype = if dtype == DType::U8 && size > 255 { DType::I64 } else { dtype };
    call(call(Tensor::from_vec(ids, shape.to_vec(), dev))?.to_dtype(dtype))
}

/// Op `c.op` on `x` (the viewed input) on `dev`.
fn op(dev: &Device, c: &Case, x: &Tensor) -> Result<Tensor> {
    let [p0, p1, p2, p3] = c.p;
    let rank = x.rank();
    let d = |k: u64| (k % (rank as u64 + 1)) as usize; // a dim, or one past the last
    let small = |k: u64| (k % 5) as usize;
    let (lo, hi) = if x.dtype().is_int() { (-8.0, 8.0) } else { (-4.0, 4.0) };
    // Another operand of x's dtype: contiguous, or in a quarter of the cases (of rank 2 or more)
    // the transpose of its last two dims' tensor, so that the kernels read it strided.
    let other = |shape: Vec<usize>| match shape.len() {
        r if r >= 2 && c.seed >> 62 == 0 => {
            let mut t = shape.clone();
            t.swap(r - 1, r - 2);
            call(make(dev, x.dtype(), &t, c.seed ^ 1, lo, hi)?.transpose(r - 1, r - 2))
        }
        _ => make(dev, x.dtype(), &shape, c.seed ^ 1, lo, hi),
    };
    // An operand of finite values (`make` makes specials only from seeds of residue 1 mod 4).
    let finite = |shape: Vec<usize>| make(dev, x.dtype(), &shape, (c.seed ^ 1) & !3, lo, hi);
    // A convolution's kernel, finite: a zero of padding (or of a transposed convolution's hole)
    // may meet it in a product or not, by backend (`spec::conv`), which decides 0 x inf.
    let kernel = finite;
    let idt = pick(&[DType::U8, DType::U32, DType::I64], p3);
    let size_of = |dim: usize| x.dims().get(dim).copied().unwrap_or(1);
    // x where it has rank r, else a tensor of x's dtype of a small shape of rank r from `k`.
    let rank_r = |r: usize, x: &Tensor, k: u64| match x.rank() {
        n if n == r => Ok(x.clone()),
        _ => other((0..r).map(|i| 1 + small(k >> (8 * i))).collect()),
    };
    let rank3 = |x: &Tensor, k: u64| rank_r(3, x, k);
    let rank4 = |x: &Tensor, k: u64| rank_r(4, x, k);
    let y = match c.op {
        0 => call(x.unary(pick(UnaryOp::ALL, p0))),
        1 => call(x.affine(p0 as f64 % 7.0 - 3.0, p1 as f64 % 5.0)),
        2 => call(x.powf(pick(&[0.5, 2.0, 3.0, -1.0], p0))),
        3 => call(x.elu(p0 as f64 % 3.0)),
        4 => call(x.clamp(small(p0) as f64 - 2.0, small(p1) as f64 - 2.0)),
        5 => {
            // The same shape, a broadcastable one, or a mismatched one.
            let mut s = x.dims().to_vec();
            match p1 % 3 {
                0 => {}
                1 if !s.is_empty() => s[0] = 1,
                _ => s.push(small(p2)),
            }
            call(x.binary(&other(s)?, pick(BinaryOp::ALL, p0)))
        }
        6 => call(x.cmp(&other(x.dims().to_vec())?, pick(CmpOp::ALL, p0))),
        7 => {
            let cond = make(dev, DType::U8, x.dims(), c.seed ^ 2, 0.0, 2.0)?;
            call(cond.where_cond(x, &other(x.dims().to_vec())?))
        }
        8 => call(x.to_dtype(pick(&DTYPES, p0))),
        9 => {
            let dims: Vec<usize> = (0..=(p1 % 3)).map(|i| d(p0 >> (8 * i))).collect();
            call(x.reduce(pick(ReduceOp::ALL, p2), &dims, p3 % 2 == 0))
        }
        10 => {
            let dim = d(p0);
            call(x.index_select(&ids(dev, idt, &[small(p1)], size_of(dim), c.seed ^ 3)?, dim))
        }
        11 => {
            let dim = d(p0);
            let mut s = x.dims().to_vec();
            if let Some(v) = s.get_mut(dim) {
                *v = small(p1);
            }
            call(x.gather(&ids(dev, idt, &s, size_of(dim), c.seed ^ 4)?, dim))
        }
        12 | 13 => {
            let dim = d(p0);
            let s: Vec<usize> = x.dims().iter().map(|&v| v.min(small(p1))).collect();
            let i = if c.op == 12 {
                distinct_ids(dev, idt, &s, dim, size_of(dim), c.seed ^ 5)?
            } else {
                ids(dev, idt, &s, size_of(dim), c.seed ^ 5)?
            };
            let src = other(s)?;
            // Half of the cases in place, through x's view (a broadcast one is an error).
            call(match (c.op == 12, p2 % 2 == 0) {
                (true, true) => x.scatter(&i, &src, dim),
                (false, true) => x.scatter_add(&i, &src, dim),
                (true, false) => x.scatter_set(&i, &src, dim).map(|()| x.clone()),
                (false, false) => x.scatter_add_set(&i, &src, dim).map(|()| x.clone()),
            })
        }
        14 => {
            let dim = d(p0);
            let n = small(p1);
            let mut s = x.dims().to_vec();
            if let Some(v) = s.get_mut(dim) {
                *v = n;
            }
            call(x.index_add(&ids(dev, idt, &[n], size_of(dim), c.seed ^ 6)?, &other(s)?, dim))
        }
        15 => call(x.argsort(p0 % 2 == 0)),
        16 => call(if p1 % 2 == 0 { x.softmax(d(p0)) } else { x.log_softmax(d(p0)) }),
        17 => {
            let k = x.dims().last().copied().unwrap_or(1);
            call(x.matmul(&other(vec![if p1 % 4 == 0 { k + 1 } else { k }, small(p0)])?))
        }
        18 => {
            let s: Vec<usize> = (0..=(p1 % 4)).map(|i| small(p0 >> (8 * i)) + (i == 0) as usize).collect();
            call(x.reshape(s))
        }
        19 => call(Tensor::cat(&[x, &x.contiguous()?], d(p0))),
        20 => {
            let x = if p2 >> 8 & 3 == 0 { x.clone() } else { rank3(x, p2 >> 10)? };
            let p = ConvParams::<1>::default().padding(small(p1)).stride(small(p2)).dilation(1 + small(p3) % 2);
            let channels = x.dims().get(1).copied().unwrap_or(1);
            call(x.conv1d(&kernel(vec![1 + small(p0) % 2, channels, 1 + small(p0 >> 8) % 3])?, &p))
        }
        21 => {
            let x = if p2 >> 8 & 3 == 0 { x.clone() } else { rank4(x, p2 >> 10)? };
            // Windows, strides and padding of every size at times (most refused), else ones
            // that fit.
            let p = match p3 >> 8 & 3 {
                0 => Pool2dParams::new(small(p0)).stride(small(p1)).padding(small(p2)),
                _ => Pool2dParams::new(1 + small(p0) % 3).stride(1 + small(p1) % 2).padding(small(p2) % 2),
            };
            call(if p3 % 2 == 0 { x.max_pool2d(&p) } else { x.avg_pool2d(&p) })
        }
        22 => {
            // Sizes up to one no memory holds.
            let size = if p1 % 8 == 0 { 1usize << 62 } else { small(p0) };
            call(x.upsample_nearest1d(size))
        }
        23 => {
            // `.i(..)`: per dim an index (past the end at times), a range (reversed at times) or all.
            let ix = |k: u64, size: usize| -> TensorIndexer {
                match k % 3 {
                    0 => ((k >> 2) as usize % (size + 2)).into(),
                    1 => ((k >> 2) as usize % (size + 2)..(k >> 9) as usize % (size + 2)).into(),
                    _ => (..).into(),
                }
            };
            let n = (p1 % (rank as u64 + 2)) as usize;
            let idx: Vec<TensorIndexer> = (0..n).map(|i| ix(p0.rotate_right(13 * i as u32), size_of(i))).collect();
            call(match idx.as_slice() {
                [] => Ok(x.clone()),
                [a] => x.i(a.clone()),
                [a, b] => x.i((a.clone(), b.clone())),
                [a, b, c] => x.i((a.clone(), b.clone(), c.clone())),
                [a, b, c, e] => x.i((a.clone(), b.clone(), c.clone(), e.clone())),
                [a, b, c, e, f, ..] => x.i((a.clone(), b.clone(), c.clone(), e.clone(), f.clone())),
            })
        }
        24 => {
            // Into the view itself (transposed, narrowed, broadcast), then the whole of it.
            // A block of any length at any offset at times (most past the end), else one inside.
            let dim = d(p0);
            let mut s = x.dims().to_vec();
            let (mut len, mut at) = (small(p1), small(p2));
            if p3 & 3 != 0 {
                len %= size_of(dim) + 1;
                at %= size_of(dim) - len.min(size_of(dim)) + 1;
            }
            if let Some(v) = s.get_mut(dim) {
                *v = len;
            }
            call(x.slice_set(&other(s)?, dim, at))?;
            Ok(x.clone())
        }
        25 => {
            // A scalar operand: whole, fractional, negative or past u8.
            let v = pick(&[2.0, 0.5, -1.0, 300.0, 1e10], p0);
            call(match p1 % 3 {
                0 => x + v,
                1 => x.ge(v),
                _ => 3.0 - x,
            })
        }
        26 => {
            let dims: Vec<usize> = (0..=(p1 % 3)).map(|i| d(p0 >> (8 * i))).collect();
            call(match p2 % 4 {
                0 => x.mean(dims),
                1 => Tensor::stack(&[x, x], d(p0)),
                2 => x.flatten(d(p0), d(p3)),
                _ => x.reshape(((), small(p3))),
            })
        }
        27 => {
            // A vector on either side (or both).
            let k = x.dims().last().copied().unwrap_or(1);
            let v = other(vec![if p1 % 4 == 0 { k + 1 } else { k }])?;
            let xt = if rank >= 2 { x.t()? } else { x.clone() };
            call(if p0 % 2 == 0 { x.matmul(&v) } else { v.matmul(&xt) })
        }
        ATTENTION => {
            // Attention: q is x (of rank 4 or not), k and v with kv heads that divide q's heads
            // or not, keys that may be none, a value width that may differ, a mask of either
            // kind or one that does not broadcast, causal or not, a scale or the default.
            let q = match x.rank() {
                4 => x.clone(),
                _ => finite((0..4).map(|i| 1 + small(p0 >> (8 * i))).collect())?,
            };
            let [b, hq, lq, dq] = q.dims()[..] else { unreachable!("rank 4") };
            let hkv = pick(&[hq, (hq / 2).max(1), hq + 1], p0 >> 8);
            let (lk, dv) = (small(p1), if p1 % 7 == 0 { dq + 1 } else { dq });
            // k and v as they are, or heads split from a [B, L, H D]-like layout (strided);
            // finite, as q (and its input, `input`) and the additive mask but for its -inf drops:
            // a dropped key's NaN, or a NaN score, may reach the row or not, by backend
            // (`spec::attention`).
            let kv = |d: usize| match p1 % 2 {
                0 => finite(vec![b, hkv, lk, d]),
                _ => call(finite(vec![b, lk, hkv, d])?.transpose(1, 2)),
            };
            let (k, v) = (kv(dq)?, kv(dv)?);
            let keep = |shape: &[usize]| make(dev, DType::U8, shape, c.seed ^ 7, 0.0, 2.0);
            let mask = match p3 % 4 {
                0 => None,
                1 => Some(keep(&[lq, lk])?),
                2 => {
                    let drop = Tensor::full(f64::NEG_INFINITY, (), x.dtype(), dev)?;
                    Some(call(keep(&[1, 1, lq, lk])?.where_cond(&finite(vec![1, 1, lq, lk])?, &drop))?)
                }
                _ => Some(keep(&[lq + 1, lk])?),
            };
            let scale = (p2 % 3 == 0).then_some(0.5);
            call(q.scaled_dot_product_attention(&k, &v, mask.as_ref(), p2 % 2 == 0, scale))
        }
        29 => {
            // Rotary embeddings: cos and sin [T, D / 2] for x's last two dims, or a T off by one.
            let x = rank4(x, p0)?;
            let (t, half) = (x.dims()[2] + (p1 % 5 == 0) as usize, x.dims()[3] / 2);
            let (cos, sin) = (other(vec![t, half])?, make(dev, x.dtype(), &[t, half], c.seed ^ 8, -1.0, 1.0)?);
            call(if p0 % 2 == 0 { x.rope(&cos, &sin) } else { x.rope_i(&cos, &sin) })
        }
        30 => {
            // The norms of the last dim with their affine parameters (of its size, or one more).
            let n = x.dims().last().copied().unwrap_or(1) + (p1 % 5 == 0) as usize;
            let (w, b) = (other(vec![n])?, make(dev, x.dtype(), &[n], c.seed ^ 9, -1.0, 1.0)?);
            let eps = pick(&[1e-5, 1e-2, -1.0], p2);
            call(match p0 % 3 {
                0 => x.rms_norm(Some(&w), eps),
                1 => x.layer_norm(Some(&w), Some(&b), eps),
                _ => x.rms_norm(None, eps),
            })
        }
        31 => {
            // conv2d and conv_transpose2d over x's channels (dim 1): groups, stride, padding,
            // dilation, an output padding.
            let x = rank4(x, p3 >> 16)?;
            let groups = 1 + small(p3) % 2;
            let (f, kh, kw) = (1 + small(p0) % 3, 1 + small(p0 >> 8) % 3, 1 + small(p0 >> 16) % 3);
            let p = ConvParams::<2>::default()
                .padding(small(p1) % 3)
                .stride(1 + small(p2) % 2)
                .dilation(1 + small(p2 >> 8) % 2)
                .groups(groups);
            call(if p1 % 2 == 0 {
                x.conv2d(&kernel(vec![f * groups, x.dims()[1] / groups, kh, kw])?, &p)
            } else {
                x.conv_transpose2d(&kernel(vec![x.dims()[1], f, kh, kw])?, &p.output_padding(small(p3 >> 8) % 2))
            })
        }
        QUANT => {
            // Finite weights [N, K] quantized to any block type (K not always a whole number of
            // blocks) on the cpu, their blocks at any byte offset of a buffer on the device
            // (every alignment the kernels branch on), times x (this case's, or of their K)
            // exactly or in the q8 mode, or back.
            let ty = pick(GgmlType::ALL, p0);
            let (n, k) = (1 + small(p0 >> 8), pick(&[32, 64, 256, 48], p1));
            let w = make(&crate::cpu(), DType::F32, &[n, k], (c.seed ^ 10) & !3, -1.0, 1.0)?;
            let blocks = call(QTensor::quantize(&w, ty))?.to_bytes()?;
            let pad = (p2 >> 16) as usize % 17;
            let buffer: Vec<u8> = std::iter::repeat_n(0xa5, pad).chain(blocks.iter().copied()).collect();
            let window = call(Tensor::from_vec(buffer, [pad + blocks.len()], dev))?.narrow(0, pad, blocks.len())?;
            let q = call(QTensor::new(ty, [n, k], &window))?;
            // x finite, as the input of this case (`input`): a run's infinity may give NaN or
            // infinity by backend (`spec::quant`). Exactly, x may be a norm's result, which a
            // GPU deferring norms computes inside the product.
            let xs = if p2 % 4 == 0 { x.clone() } else { finite(vec![1 + small(p2 >> 8) % 3, k])? };
            call(match p3 % 3 {
                0 => match (p3 >> 20) % 3 {
                    0 => q.qmatmul(&xs),
                    1 => xs.rms_norm(None, 1e-5).and_then(|x| q.qmatmul(&x)),
                    _ => xs.layer_norm(None, None, 1e-5).and_then(|x| q.qmatmul(&x)),
                },
                1 => q.qmatmul_q8(&xs),
                _ => q.dequantize(pick(&[DType::F32, DType::F16, DType::BF16, DType::U8], p3 >> 8)),
            })
        }
        33 => {
            let x = if p2 & 3 == 0 { x.clone() } else { rank4(x, p2 >> 2)? };
            call(x.upsample_nearest2d(small(p0), if p1 % 8 == 0 { 1usize << 62 } else { small(p1 >> 8) }))
        }
        34 => {
            // An LSTM or GRU step after its products: x the gates [B, G H], the state [B, H] (or
            // one wider), a bias or none.
            let (lstm, g) = if p0 % 2 == 0 { (true, 4) } else { (false, 3) };
            // x as it is (any rank, any width), or gates of whole hidden units.
            let x = if p3 % 2 == 0 { x.clone() } else { other(vec![1 + small(p3 >> 8), g * (1 + small(p3 >> 16))])? };
            let width = x.dims().get(1).copied().unwrap_or(1);
            let gh = other(x.dims().to_vec())?;
            let bias = if p1 % 2 == 0 { Some(other(vec![width])?) } else { None };
            let state = other(vec![x.dims().first().copied().unwrap_or(1), width / g + (p2 % 7 == 0) as usize])?;
            call(if lstm { x.lstm_cell(&gh, bias.as_ref(), &state) } else { x.gru_cell(&gh, bias.as_ref(), &state) })
        }
        35 => {
            // Local response norm and batch norm across channels (dim 1), stats of its size or
            // one more; dropout at a stream position (the same mask on every backend).
            let ch = size_of(1) + (p1 % 5 == 0) as usize;
            match p0 % 3 {
                0 => call(x.local_response_norm(1 + small(p1), 1e-4, 0.75, pick(&[1.0, 2.0], p2))),
                1 => {
                    let (mean, var) = (other(vec![ch])?, make(dev, x.dtype(), &[ch], c.seed ^ 11, 0.0, 2.0)?);
                    let w = other(vec![ch])?;
                    call(x.batch_norm(&mean, &var, (p2 % 2 == 0).then_some(&w), None, 1e-5))
                }
                _ => call(x.dropout_at(pick(&[0.0, 0.5, 1.0, -0.5], p1), p2, p3 >> 1)),
            }
        }
        CHAIN => {
            // Ops in a row that the fusion engine may hold and run as one kernel (maps every
            // backend rounds alike, casts, broadcasts, a product whose epilogue they may join, rows
            // picked by ids, views), consumers that cannot join them (a reduction, softmax), with
            // writes in place into x and into the chain between them, and results held across
            // the writes: each as if every op ran alone, in order.
            let maps = [UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Sqr, UnaryOp::Relu, UnaryOp::Floor, UnaryOp::Sign];
            let pairs = [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Maximum, BinaryOp::Minimum];
            let (mut y, mut held) = (x.clone(), vec![]);
            for k in [p0, p1, p2, p3] {
                let r = k >> 4;
                let mut s = y.dims().to_vec();
                y = match k % CHAIN_OPS {
                    0 => call(y.unary(pick(&maps, r)))?,
                    1 => call(y.affine((r % 5) as f64 - 2.0, 0.5))?,
                    2 => {
                        if r % 2 == 0 && !s.is_empty() {
                            s[0] = 1;
                        }
                        call(y.binary(&other(s)?, pick(&pairs, r >> 1)))?
                    }
                    3 => call(y.to_dtype(pick(&DTYPES, r)))?,
                    4 => {
                        // x written in place (where its view allows: a broadcast one refuses).
                        call(x.slice_set(&other(x.dims().to_vec())?, 0, 0))?;
                        y
                    }
                    5 => call(y.add(x))?,
                    6 => {
                        held.push(y.clone());
                        y
                    }
                    7 => {
                        // The chain's first rows replaced in place.
                        if let Some(d0) = s.first_mut() {
                            *d0 = (*d0).min(1 + small(r));
                        }
                        call(y.slice_set(&make(dev, y.dtype(), &s, c.seed ^ 12, -2.0, 2.0)?, 0, 0))?;
                        y
                    }
                    8 => {
                        let k = y.dims().last().copied().unwrap_or(1);
                        call(y.matmul(&make(dev, y.dtype(), &[k, 1 + small(r)], c.seed ^ 13, -1.0, 1.0)?))?
                    }
                    // Rows picked by ids, some out of range at times: the error travels on
                    // through the ops after it (a GPU finds it in the data) to the readback.
                    9 => call(y.index_select(&ids(dev, idt, &[small(r)], s.first().copied().unwrap_or(1), r)?, 0))?,
                    // A view of what may be pending: its first rows, or its transpose.
                    10 => match y.rank() {
                        0 => y,
                        1 => call(y.narrow(0, 0, s[0].min(1 + small(r))))?,
                        n => call(y.transpose(n - 1, n - 2))?,
                    },
                    // A consumer that reduces (sum or max of the last dim) or normalises it.
                    11 => call(y.reduce(pick(&[ReduceOp::Sum, ReduceOp::Max], r), [s.len().saturating_sub(1)], true))?,
                    12 => call(y.softmax(s.len().saturating_sub(1)))?,
                    // A norm of the last dim, which a product after it may compute itself.
                    _ => call(match r % 3 {
                        0 => y.rms_norm(None, 1e-5),
                        1 => y.layer_norm(None, None, 1e-5),
                        _ => y.rms_norm(
                            Some(&make(dev, y.dtype(), &s[s.len().saturating_sub(1)..], (c.seed ^ 14) & !3, 0.5, 1.5)?),
                            1e-5,
                        ),
                    })?,
                };
            }
            held.push(y);
            let flat = held.iter().map(|t| t.to_dtype(DType::F32)?.flatten_all()).collect::<Result<Vec<_>>>()?;
            call(Tensor::cat(&flat, 0))
        }
        _ => call(x.layer_norm(None, None, pick(&[1e-5, 0.0, -1.0], p0))),
    }?;
    Ok(y)
}

/// `y`'s dims and values, read back.
fn read(y: &Tensor) -> Result<(Vec<usize>, CpuStorage)> {
    Ok((y.dims().to_vec(), call(y.to_cpu_storage())?))
}

/// Runs the case on `dev`: `Err` is any error along the way.
fn on(dev: &Device, c: &Case) -> Result<(Vec<usize>, CpuStorage)> {
    let dtype = DTYPES[c.dtype];
    read(&op(dev, c, &viewed(input(dev, c, dtype)?, &c.view)?)?)
}

/// The case captured on `dev` (`Device::capture`) with its input, then run on new data of the
/// same shape, dtype and view; and run with an input of another shape, which must be refused.
fn replayed(dev: &Device, c: &Case) -> Result<(Vec<usize>, CpuStorage)> {
    let dtype = DTYPES[c.dtype];
    let x = viewed(input(dev, c, dtype)?, &c.view)?;
    let mut plan = call(dev.capture(&[&x], |xs| Ok(vec![op(dev, c, &xs[0])?])))?;
    let (lo, hi) = if dtype.is_int() { (-8.0, 8.0) } else { (-4.0, 4.0) };
    let again = viewed(make(dev, dtype, &c.shape, c.seed ^ 0x5eed, lo, hi)?, &c.view)?;
    let y = call(plan.run(&[&again]))?.remove(0);
    let other = make(dev, dtype, &[x.elem_count() + 1], c.seed, lo, hi)?;
    match call(plan.run(&[&other])) {
        Err(Error::Capture { .. }) => read(&y),
        r => panic!("a plan captured with {:?} run on {:?}: {:?}", x.dims(), other.dims(), r.map(|_| ())),
    }
}

/// Whether a device may refuse what the cpu ran: its own limits, or what it states it lacks.
fn may_refuse(dev: &Device, e: &Error) -> bool {
    match e {
        Error::LimitExceeded { .. } => true,
        Error::UnsupportedDType { op, dtype, .. } => dev.supports(op, *dtype).is_err(),
        _ => false,
    }
}

/// The dtype whose tolerance a case's values are held to: the output's, or for a chain the least
/// precise float dtype its values passed through (a chain read back in f32 after a product or
/// softmax in f16 differs by what f16 rounding gives).
fn tol_dtype(c: &Case, out: DType) -> DType {
    if c.op != CHAIN {
        return out;
    }
    let casts = c.p.iter().filter(|&&k| k % CHAIN_OPS == 3).map(|&k| pick(&DTYPES, k >> 4));
    let mut floats: Vec<DType> = std::iter::once(DTYPES[c.dtype]).chain(casts).filter(|d| d.is_float()).collect();
    floats.push(out);
    floats.into_iter().max_by(|a, b| Tol::of(*a).rtol.total_cmp(&Tol::of(*b).rtol)).unwrap_or(out)
}

fn same(got: &CpuStorage, want: &CpuStorage, n_in: usize, tol: DType) -> std::result::Result<(), String> {
    if got.dtype() != want.dtype() || got.len() != want.len() {
        return Err(format!("{:?} x {} vs {:?} x {}", got.dtype(), got.len(), want.dtype(), want.len()));
    }
    if got.dtype() == DType::I64 {
        return if got == want { Ok(()) } else { Err("i64 values differ".into()) };
    }
    // Reductions and norms add up to n_in terms.
    let tol = Tol::of(tol).times(16.0 + n_in as f64);
    for (i, (a, b)) in got.to_f64_vec().into_iter().zip(want.to_f64_vec()).enumerate() {
        let ok = a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= tol.atol + tol.rtol * b.abs();
        if !ok {
            return Err(format!("element {i}: got {a}, want {b}"));
        }
    }
    Ok(())
}

/// How a case runs on a device.
#[derive(Clone, Copy, PartialEq)]
enum Way {
    /// Called: [`on`].
    Once,
    /// Captured and run again: [`replayed`].
    Replayed,
}

impl Way {
    fn run(self, dev: &Device, c: &Case) -> Result<(Vec<usize>, CpuStorage)> {
        match self {
            Way::Once => on(dev, c),
            Way::Replayed => replayed(dev, c),
        }
    }
}

/// `c` run `way` on the cpu and on each of `devs`, compared; `ran` counts the cases the cpu ran
/// to a result, by op. Replayed, a device may refuse a capture the cpu makes (an op inside it
/// that waits for the device: `quantize` reads its input back).
fn check(devs: &[Device], c: &Case, way: Way, ran: &[AtomicU64; OPS]) -> std::result::Result<(), TestCaseError> {
    let cpu = crate::cpu();
    let want = way.run(&cpu, c);
    if want.is_ok() {
        ran[c.op].fetch_add(1, Ordering::Relaxed);
    }
    let replay = way == Way::Replayed;
    let n_in = c.shape.iter().fold(1usize, |a, &d| a.saturating_mul(d)).min(1 << 20);
    let n_in = if c.op == QUANT { n_in.max(256) } else { n_in };
    for dev in devs {
        let got = way.run(dev, c);
        let fail = |msg: String| Err(TestCaseError::fail(format!("on {}: {msg}", dev.describe())));
        match (&got, &want) {
            (Ok((gs, g)), Ok((ws, w))) => {
                if gs != ws {
                    return fail(format!("shape {gs:?}, cpu {ws:?}"));
                }
                if let Err(msg) = same(g, w, n_in, tol_dtype(c, g.dtype())) {
                    return fail(msg);
                }
            }
            (Err(e), Ok(_)) if !(may_refuse(dev, e) || replay && matches!(e, Error::Capture { .. })) => {
                return fail(format!("error {e} where the cpu ran"));
            }
            (Ok(_), Err(e)) => return fail(format!("a result where the cpu fails with {e}")),
            // Which bad id a GPU reports first is up to its threads; a device may also refuse
            // the op for its limits before it looks at ids, and in a chain, where a GPU finds
            // the bad id in the data and goes on, refuse a later op the cpu never reached.
            (Err(e), Err(w @ Error::IndexOutOfRange { .. }))
                if !matches!(e, Error::IndexOutOfRange { .. }) && !may_refuse(dev, e) && c.op != CHAIN =>
            {
                return fail(format!("error {e} where the cpu finds {w}"));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The GPU devices here, and wgpu holding tensor buffers to 256 bytes, so that inputs and
/// outputs past 64 f32 are stored in parts and the ops split (`src/tensor/parts.rs`), and 16
/// pipelines, so that kernels are dropped and built again under the ops (and plans) using them.
fn fuzz_devices() -> Vec<Device> {
    let gpus = [BackendKind::Wgpu, BackendKind::Cuda, BackendKind::Rocm];
    let mut devs: Vec<Device> = gpus.iter().filter_map(|&k| crate::device(k).ok()).collect();
    if devs.iter().any(|d| d.kind() == BackendKind::Wgpu) {
        let tune = rocm_wgpu_ops::wgpu::Tune { max_binding: Some(256), max_pipelines: Some(16), ..Default::default() };
        devs.push(Device::wgpu_tuned(None, None, tune).expect("a wgpu device with a lower binding limit"));
    }
    devs
}

/// `cases` random cases run `way` on the cpu and `devs`; a failure panics.
fn run_cases(devs: &[Device], cases: u32, way: Way, ran: &[AtomicU64; OPS]) {
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    if let Err(e) = TestRunner::new(config).run(&case(), |c| check(devs, &c, way, ran)) {
        panic!("{e}");
    }
}

/// `cases` random cases run `way` on every device, then what the run covered.
fn fuzz(name: &str, cases: u32, way: Way, ran: &[AtomicU64; OPS]) {
    let devs = fuzz_devices();
    let start = std::time::Instant::now();
    run_cases(&devs, cases, way, ran);
    let on: Vec<String> = std::iter::once("cpu".into()).chain(devs.iter().map(|d| d.kind().to_string())).collect();
    eprintln!("{name}: {cases} cases on {}, {:.1?}", on.join(" and "), start.elapsed());
    let ran: Vec<String> = ran.iter().map(|r| r.load(Ordering::Relaxed).to_string()).collect();
    eprintln!("{name}: cases with a result on the cpu, by op: {}", ran.join(" "));
    for d in &devs {
        let cache = d.info().into_iter().find(|(k, _)| *k == "pipeline cache").map(|(_, v)| v);
        eprintln!("{name}: {} pipeline cache: {}", d.describe(), cache.unwrap_or_default());
    }
}

/// The number of cases (`RWO_FUZZ_CASES`, 1500 by default).
fn cases() -> u32 {
    std::env::var("RWO_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1500)
}

fn random_calls_never_panic_and_agree_with_the_cpu() {
    static RAN: [AtomicU64; OPS] = [const { AtomicU64::new(0) }; OPS];
    fuzz("fuzz", cases(), Way::Once, &RAN);
    eprintln!("fuzz: {} API calls in all, replays' included", CALLS.load(Ordering::Relaxed));
}

/// The same cases captured and replayed on new data (a quarter as many): a plan gives what the
/// ops give run one at a time, on every device, and refuses an input of another shape.
fn replayed_calls_agree_with_the_cpu() {
    static RAN: [AtomicU64; OPS] = [const { AtomicU64::new(0) }; OPS];
    fuzz("replay fuzz", cases().div_ceil(4), Way::Replayed, &RAN);
}

/// Cases from three threads at once on the same devices, two calling and one capturing and
/// replaying (an eighth as many each): each thread's results as if it ran alone.
fn calls_from_threads_at_once_agree_with_the_cpu() {
    static RAN: [AtomicU64; OPS] = [const { AtomicU64::new(0) }; OPS];
    let devs = fuzz_devices();
    std::thread::scope(|s| {
        for way in [Way::Once, Way::Once, Way::Replayed] {
            let devs = &devs;
            s.spawn(move || run_cases(devs, cases().div_ceil(8), way, &RAN));
        }
    });
    let ran: Vec<String> = RAN.iter().map(|r| r.load(Ordering::Relaxed).to_string()).collect();
    eprintln!("threads fuzz: cases with a result on the cpu, by op: {}", ran.join(" "));
}

/// Host data from raw bytes of any length and dtype: the elements back bit for bit where the
/// length is whole elements, else an `InvalidParam` naming the length (it once panicked).
fn host_bytes_of_any_length_never_panic() {
    let config = Config { cases: 512, failure_persistence: None, ..Config::default() };
    let bytes = (0usize..7, prop::collection::vec(any::<u8>(), 0..40));
    let result = TestRunner::new(config).run(&bytes, |(dtype, bytes)| {
        let dtype = DTYPES[dtype];
        match CpuStorage::from_bytes(dtype, &bytes) {
            Ok(s) => {
                prop_assert_eq!(s.as_bytes(), &bytes[..]);
                prop_assert_eq!(s.len() * dtype.size_in_bytes(), bytes.len());
            }
            Err(Error::InvalidParam { op: "from_bytes", msg }) => {
                prop_assert!(!bytes.len().is_multiple_of(dtype.size_in_bytes()), "{msg}");
                prop_assert!(msg.contains(&bytes.len().to_string()), "{msg}");
            }
            Err(e) => return Err(TestCaseError::fail(format!("{dtype}, {} bytes: {e}", bytes.len()))),
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// A small valid GGUF and safetensors file (gguf-py's and numpy's: tests/vectors/io/) with
/// random bytes overwritten (half of them in the first 64 bytes, where the counts are) and cut
/// short: parsing and loading every tensor on the cpu give a result or an `Error`, never a
/// panic or an allocation the file could not back. A GGUF whose tensors all load is written
/// again and read back to the same metadata.
fn mutated_model_files_never_panic() {
    const FILES: [&[u8]; 2] =
        [include_bytes!("../vectors/io/tiny.gguf"), include_bytes!("../vectors/io/tiny.safetensors")];
    let cases = std::env::var("RWO_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1500);
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let edit = (any::<bool>(), any::<prop::sample::Index>(), any::<u8>());
    let input =
        (0usize..2, prop::collection::vec(edit, 0..6), prop::option::weighted(0.25, any::<prop::sample::Index>()));
    let dev = crate::cpu();
    let (parsed, loaded) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
    let result = TestRunner::new(config).run(&input, |(which, edits, cut)| {
        let mut bytes = FILES[which].to_vec();
        for (head, at, b) in edits {
            let i = at.index(if head { 64 } else { bytes.len() });
            bytes[i] = b;
        }
        if let Some(at) = cut {
            bytes.truncate(at.index(bytes.len()));
        }
        if which == 0 {
            let Ok(g) = Gguf::read(&bytes) else { return Ok(()) };
            parsed.set(parsed.get() + 1);
            let tensors: Vec<Result<(String, ModelTensor)>> =
                g.tensors().iter().map(|t| Ok((t.name.clone(), g.tensor(&bytes, &t.name, &dev)?))).collect();
            let Ok(tensors) = tensors.into_iter().collect::<Result<Vec<_>>>() else { return Ok(()) };
            loaded.set(loaded.get() + 1);
            let mut w = GgufWriter::new();
            for (k, v) in g.metadata() {
                w.metadata(k, v.clone());
            }
            for (name, t) in &tensors {
                let added = match t {
                    ModelTensor::Plain(t) => w.tensor(name, t).map(drop),
                    ModelTensor::Quantized(q) => w.qtensor(name, q).map(drop),
                };
                added.map_err(|e| TestCaseError::fail(format!("{name} loaded but cannot be written: {e}")))?;
            }
            let again = w.to_bytes().map_err(|e| TestCaseError::fail(format!("rewrite: {e}")))?;
            let back = Gguf::read(&again).map_err(|e| TestCaseError::fail(format!("reread: {e}")))?;
            prop_assert_eq!(back.metadata(), g.metadata());
        } else {
            let Ok(s) = Safetensors::read(&bytes) else { return Ok(()) };
            parsed.set(parsed.get() + 1);
            if s.names().iter().all(|n| s.tensor(&bytes, n, &dev).is_ok()) {
                loaded.set(loaded.get() + 1);
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    eprintln!("model files: {cases} mutated, {} parsed, {} with every tensor loaded", parsed.get(), loaded.get());
}
