//! Property-based fuzzing of the public Tensor API (proptest): random shapes (zero and huge dims
//! included), dtypes, views (transpose, narrow, broadcast, valid or not), ops with random
//! params and ids (out of range included), on the cpu and on every GPU backend here. Each call
//! must return an `Error` or a result equal to the cpu reference's; a panic anywhere fails.
//!
//! `RWO_FUZZ_CASES` sets the number of cases (CI: 1500); `README.md` has the long run.

use crate::Tol;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rocm_wgpu_ops::io::{Gguf, GgufWriter, ModelTensor, Safetensors};
use rocm_wgpu_ops::spec::conv::ConvParams;
use rocm_wgpu_ops::spec::elementwise::{BinaryOp, CmpOp, UnaryOp};
use rocm_wgpu_ops::spec::pool::Pool2dParams;
use rocm_wgpu_ops::spec::reduce::ReduceOp;
use rocm_wgpu_ops::{BackendKind, CpuStorage, DType, Device, Error, IndexOp, Result, Tensor, TensorIndexer};
use std::sync::atomic::{AtomicU64, Ordering};

crate::tests!(
    random_calls_never_panic_and_agree_with_the_cpu,
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
        Some(n) if n <= 1024 => {
            call(Tensor::from_cpu(crate::Data::new(seed).storage(dtype, n, lo, hi), shape.to_vec(), dev))
        }
        _ => call(Tensor::full(1u8, shape.to_vec(), dtype, dev)),
    }
}

fn input(dev: &Device, c: &Case, dtype: DType) -> Result<Tensor> {
    let (lo, hi) = if dtype.is_int() { (-8.0, 8.0) } else { (-4.0, 4.0) };
    make(dev, dtype, &c.shape, c.seed, lo, hi)
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

const OPS: usize = 29;
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

/// Runs op `c.op` on `x` (the viewed input) on `dev`, reading the result back.
fn run(dev: &Device, c: &Case, x: &Tensor) -> Result<(Vec<usize>, CpuStorage)> {
    let [p0, p1, p2, p3] = c.p;
    let rank = x.rank();
    let d = |k: u64| (k % (rank as u64 + 1)) as usize; // a dim, or one past the last
    let small = |k: u64| (k % 5) as usize;
    let (lo, hi) = if x.dtype().is_int() { (-8.0, 8.0) } else { (-4.0, 4.0) };
    let other = |shape: Vec<usize>| make(dev, x.dtype(), &shape, c.seed ^ 1, lo, hi);
    let idt = pick(&[DType::U8, DType::U32, DType::I64], p3);
    let size_of = |dim: usize| x.dims().get(dim).copied().unwrap_or(1);
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
            let p = ConvParams::<1>::default().padding(small(p1)).stride(small(p2)).dilation(1 + small(p3) % 2);
            call(x.conv1d(&other(vec![1 + small(p0) % 2, size_of(1), 1 + small(p0 >> 8) % 3])?, &p))
        }
        21 => {
            let p = Pool2dParams::new(small(p0)).stride(small(p1)).padding(small(p2));
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
            let dim = d(p0);
            let mut s = x.dims().to_vec();
            if let Some(v) = s.get_mut(dim) {
                *v = small(p1);
            }
            call(x.slice_set(&other(s)?, dim, small(p2)))?;
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
        _ => call(x.layer_norm(None, None, pick(&[1e-5, 0.0, -1.0], p0))),
    }?;
    let data = call(y.to_cpu_storage())?;
    Ok((y.dims().to_vec(), data))
}

/// Runs the case on `dev`: `Err` is any error along the way.
fn on(dev: &Device, c: &Case) -> Result<(Vec<usize>, CpuStorage)> {
    let dtype = DTYPES[c.dtype];
    let x = viewed(input(dev, c, dtype)?, &c.view)?;
    run(dev, c, &x)
}

/// Whether a device may refuse what the cpu ran: its own limits, or what it states it lacks.
fn may_refuse(dev: &Device, e: &Error) -> bool {
    match e {
        Error::LimitExceeded { .. } => true,
        Error::UnsupportedDType { op, dtype, .. } => dev.supports(op, *dtype).is_err(),
        _ => false,
    }
}

fn same(got: &CpuStorage, want: &CpuStorage, n_in: usize) -> std::result::Result<(), String> {
    if got.dtype() != want.dtype() || got.len() != want.len() {
        return Err(format!("{:?} x {} vs {:?} x {}", got.dtype(), got.len(), want.dtype(), want.len()));
    }
    if got.dtype() == DType::I64 {
        return if got == want { Ok(()) } else { Err("i64 values differ".into()) };
    }
    // Reductions and norms add up to n_in terms.
    let tol = Tol::of(got.dtype()).times(16.0 + n_in as f64);
    for (i, (a, b)) in got.to_f64_vec().into_iter().zip(want.to_f64_vec()).enumerate() {
        let ok = a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= tol.atol + tol.rtol * b.abs();
        if !ok {
            return Err(format!("element {i}: got {a}, want {b}"));
        }
    }
    Ok(())
}

fn check(devs: &[Device], c: &Case) -> std::result::Result<(), TestCaseError> {
    let cpu = crate::cpu();
    let want = on(&cpu, c);
    let n_in = c.shape.iter().fold(1usize, |a, &d| a.saturating_mul(d)).min(1 << 20);
    for dev in devs {
        let got = on(dev, c);
        let fail = |msg: String| Err(TestCaseError::fail(format!("on {}: {msg}", dev.describe())));
        match (&got, &want) {
            (Ok((gs, g)), Ok((ws, w))) => {
                if gs != ws {
                    return fail(format!("shape {gs:?}, cpu {ws:?}"));
                }
                if let Err(msg) = same(g, w, n_in) {
                    return fail(msg);
                }
            }
            (Err(e), Ok(_)) if !may_refuse(dev, e) => return fail(format!("error {e} where the cpu ran")),
            (Ok(_), Err(e)) => return fail(format!("a result where the cpu fails with {e}")),
            // Which bad id a GPU reports first is up to its threads; a device may also refuse
            // the op for its limits before it looks at ids.
            (Err(e), Err(w @ Error::IndexOutOfRange { .. }))
                if !matches!(e, Error::IndexOutOfRange { .. }) && !may_refuse(dev, e) =>
            {
                return fail(format!("error {e} where the cpu finds {w}"));
            }
            _ => {}
        }
    }
    Ok(())
}

fn random_calls_never_panic_and_agree_with_the_cpu() {
    let cases = std::env::var("RWO_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1500);
    let gpus = [BackendKind::Wgpu, BackendKind::Cuda, BackendKind::Rocm];
    let mut devs: Vec<Device> = gpus.iter().filter_map(|&k| crate::device(k).ok()).collect();
    // And wgpu holding tensor buffers to 256 bytes, so that inputs and outputs past 64 f32 are
    // stored in parts and the ops split (`src/tensor/parts.rs`).
    if devs.iter().any(|d| d.kind() == BackendKind::Wgpu) {
        let tune = rocm_wgpu_ops::wgpu::Tune { max_binding: Some(256), ..Default::default() };
        devs.push(Device::wgpu_tuned(None, None, tune).expect("a wgpu device with a lower binding limit"));
    }
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new(config);
    let start = std::time::Instant::now();
    if let Err(e) = runner.run(&case(), |c| check(&devs, &c)) {
        panic!("{e}");
    }
    let calls = CALLS.load(Ordering::Relaxed);
    let on: Vec<String> = std::iter::once("cpu".into()).chain(devs.iter().map(|d| d.kind().to_string())).collect();
    eprintln!("fuzz: {cases} cases, {calls} calls on {}, {:.1?}", on.join(" and "), start.elapsed());
    for d in &devs {
        let cache = d.info().into_iter().find(|(k, _)| *k == "pipeline cache").map(|(_, v)| v);
        eprintln!("fuzz: {} pipeline cache: {}", d.describe(), cache.unwrap_or_default());
    }
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
