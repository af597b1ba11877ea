//! The self-check that `cargo run --release` runs: every op of the spec, for every dtype it
//! takes, on a device, compared with the cpu reference; plus hand-computed answers per family,
//! so the cpu reference itself is checked too.

use rocm_wgpu_ops::spec::Family;
use rocm_wgpu_ops::spec::conv::ConvParams;
use rocm_wgpu_ops::spec::elementwise::{BinaryOp, CmpOp, UnaryOp};
use rocm_wgpu_ops::spec::pool::Pool2dParams;
use rocm_wgpu_ops::spec::random::{self, Distribution};
use rocm_wgpu_ops::spec::reduce::ReduceOp;
use rocm_wgpu_ops::{CpuStorage, DType, Device, Error, Result, Tensor, WithDType};
use std::task::Poll;
use std::time::Duration;
// The browser's clock on wasm32 (std's `Instant` panics there), std's natively.
use web_time::Instant;

// The checks of the families an LLM needs (attention, quantized weights), kept beside this file.
#[path = "selfcheck_llm.rs"]
mod llm;

/// How one family fared on one device.
#[derive(Debug)]
pub struct FamilyReport {
    pub family: Family,
    pub checks: usize,
    pub failures: Vec<String>,
    /// Checks the backend declined with `Error::UnsupportedDType` (f64 without SHADER_F64).
    pub unsupported: Vec<String>,
    /// Checks left out by a quick run ([`Scope::Quick`]).
    pub skipped: usize,
    /// Checks not started within the run's time budget.
    pub out_of_time: usize,
}

/// Which checks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every op for every dtype.
    Full,
    /// Every op in f32 (casts from and to every dtype included), and the hand-computed answers,
    /// within [`QUICK_BUDGET`].
    Quick,
}

/// How long a [`Scope::Quick`] check may start new checks. llvmpipe through OpenGL on two
/// shared cores (load 10, Mesa's shader cache off) took 4.5 minutes for the f32 elementwise
/// checks alone, and one argsort check ran 1.5 minutes past a budget of 4: 3 keeps the whole
/// check under 5 minutes.
pub const QUICK_BUDGET: Duration = Duration::from_secs(180);

/// Why `dev` should get a [`Scope::Quick`] check, with the fix, or `None`: a software renderer
/// behind OpenGL (llvmpipe) compiles each kernel for seconds, so every op for every dtype takes
/// it half an hour on two cores, against a minute for lavapipe (Vulkan) on the same machine.
pub fn slow_adapter(dev: &Device) -> Option<String> {
    dev.gl_software_adapter().map(|name| {
        format!(
            "the only wgpu adapter here is {name}, a software renderer behind OpenGL: it runs \
             kernels on the CPU and compiles each for seconds. Install a Vulkan driver for a \
             faster one (lavapipe; Debian/Ubuntu: apt-get install mesa-vulkan-drivers), or your \
             GPU's driver"
        )
    })
}

type Build = Box<dyn Fn(&Device) -> Result<Tensor>>;

enum Expect {
    /// Same as the cpu reference within the dtype's tolerance times this factor.
    Reference(f64),
    /// These values, within the dtype's tolerance.
    Values(Vec<f64>),
}

struct Check {
    name: String,
    build: Build,
    expect: Expect,
}

fn check(name: impl Into<String>, build: impl Fn(&Device) -> Result<Tensor> + 'static) -> Check {
    Check { name: name.into(), build: Box::new(build), expect: Expect::Reference(4.0) }
}

fn known(name: &str, values: &[f64], build: impl Fn(&Device) -> Result<Tensor> + 'static) -> Check {
    Check { name: name.into(), build: Box::new(build), expect: Expect::Values(values.to_vec()) }
}

/// Runs every family's checks on `dev`.
#[cfg(not(target_family = "wasm"))]
pub fn run(dev: &Device) -> Vec<FamilyReport> {
    Family::ALL.iter().map(|&family| run_family(dev, family, Scope::Full, None, &mut |_, _| {})).collect()
}

/// The checks of `family` that `scope` keeps, and how many it leaves out.
fn planned(family: Family, scope: Scope) -> (Vec<Check>, usize) {
    let all = checks(family);
    let n = all.len();
    let kept: Vec<Check> = match scope {
        Scope::Full => all,
        Scope::Quick => {
            all.into_iter().filter(|c| matches!(c.expect, Expect::Values(_)) || c.name.contains("f32")).collect()
        }
    };
    let skipped = n - kept.len();
    (kept, skipped)
}

/// How many checks `scope` runs in `family` (for a progress display and a time budget).
pub fn count(family: Family, scope: Scope) -> usize {
    planned(family, scope).0.len()
}

/// Runs `family`'s checks in `scope` on `dev`, calling `on_check(index, name)` before each;
/// those not started by `until` are left out (counted in `out_of_time`). Blocks on
/// [`run_family_async`].
#[cfg(not(target_family = "wasm"))]
pub fn run_family(
    dev: &Device,
    family: Family,
    scope: Scope,
    until: Option<Instant>,
    on_check: &mut dyn FnMut(usize, &str),
) -> FamilyReport {
    pollster::block_on(run_family_async(dev, family, scope, until, on_check))
}

/// [`run_family`] without blocking (in a browser): the self-check itself. In a browser the
/// checks start in groups ([`TOGETHER`]): `on_check` names each of a group before it starts, and
/// `until` is looked at before each group.
pub async fn run_family_async(
    dev: &Device,
    family: Family,
    scope: Scope,
    until: Option<Instant>,
    on_check: &mut dyn FnMut(usize, &str),
) -> FamilyReport {
    let (checks, skipped) = planned(family, scope);
    let mut report = FamilyReport { family, checks: 0, failures: vec![], unsupported: vec![], skipped, out_of_time: 0 };
    for (n, group) in checks.chunks(TOGETHER).enumerate() {
        if until.is_some_and(|t| Instant::now() >= t) {
            report.out_of_time = checks.len() - n * TOGETHER;
            break;
        }
        for (i, c) in group.iter().enumerate() {
            on_check(n * TOGETHER + i, &c.name);
        }
        report.checks += group.len();
        for (c, verdict) in group.iter().zip(all(group.iter().map(|c| verdict(dev, c))).await) {
            match verdict {
                Verdict::Pass => {}
                Verdict::Unsupported(e) => report.unsupported.push(format!("{}: {e}", c.name)),
                Verdict::Failed(e) => report.failures.push(format!("{}: {e}", c.name)),
            }
        }
    }
    report
}

/// How many checks start together: in a browser 32, whose readbacks then share the device's
/// next delivery (Firefox delivers them at a poll every 100 ms, so one at a time each check
/// waits ~100 ms); natively one, as a native readback waits for the GPU where it starts.
const TOGETHER: usize = if cfg!(target_family = "wasm") { 32 } else { 1 };

/// The outputs of `futures`, in order, awaited together: each is polled at every wake-up until
/// it is done, so their readbacks wait for the same delivery (the suite's queued checks use it
/// too).
pub async fn all<F: std::future::Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut running: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = running.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        for (slot, future) in out.iter_mut().zip(&mut running) {
            if slot.is_none()
                && let Poll::Ready(v) = future.as_mut().poll(cx)
            {
                *slot = Some(v);
            }
        }
        if out.iter().all(Option::is_some) { Poll::Ready(()) } else { Poll::Pending }
    })
    .await;
    out.into_iter().flatten().collect()
}

/// How one check fared.
#[derive(Debug)]
pub enum Verdict {
    Pass,
    /// The device declined with `Error::UnsupportedDType`.
    Unsupported(Error),
    Failed(String),
}

async fn verdict(dev: &Device, c: &Check) -> Verdict {
    match evaluate(dev, c).await {
        Ok(()) => Verdict::Pass,
        Err(Outcome::Unsupported(e)) => Verdict::Unsupported(e),
        Err(Outcome::Failed(e)) => Verdict::Failed(e),
    }
}

/// Every check of `family` on `dev`, by name: `{op} {dtype}...` (the dtypes the op reads or
/// writes follow its name; `cast {from} {to}`), or the op alone for hand-computed answers.
/// (Async: the suite's cases, which read them, also run in a browser.)
pub async fn verdicts(dev: &Device, family: Family) -> Vec<(String, Verdict)> {
    let mut out = vec![];
    for group in checks(family).chunks(TOGETHER) {
        out.extend(group.iter().map(|c| c.name.clone()).zip(all(group.iter().map(|c| verdict(dev, c))).await));
    }
    out
}

/// Why a check did not pass.
enum Outcome {
    Unsupported(Error),
    Failed(String),
}

impl From<String> for Outcome {
    fn from(s: String) -> Self {
        Outcome::Failed(s)
    }
}

fn tolerance(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::F64 => (1e-12, 1e-12),
        DType::F32 => (1e-6, 1e-5),
        DType::F16 => (1e-3, 2e-3),
        DType::BF16 => (8e-3, 1.6e-2),
        _ => (0.0, 0.0),
    }
}

async fn evaluate(dev: &Device, c: &Check) -> std::result::Result<(), Outcome> {
    let built = match (c.build)(dev) {
        Ok(t) => t.to_cpu_storage_async().await.map(|s| (t, s)),
        Err(e) => Err(e),
    };
    let got = match built {
        Ok(got) => got,
        Err(e @ Error::UnsupportedDType { .. }) => return Err(Outcome::Unsupported(e)),
        Err(e) => return Err(Outcome::Failed(e.to_string())),
    };
    let (got, got_data) = got;
    let (want, scale) = match &c.expect {
        Expect::Reference(k) => {
            let want = (c.build)(&Device::cpu()).map_err(|e| format!("cpu reference: {e}"))?;
            if want.shape() != got.shape() || want.dtype() != got.dtype() {
                return Err(format!("got {got:?}, reference {want:?}").into());
            }
            (want.to_cpu_storage_async().await.map_err(|e| e.to_string())?.to_f64_vec(), *k)
        }
        Expect::Values(v) => (v.clone(), 1.0),
    };
    let got_v = got_data.to_f64_vec();
    if got_v.len() != want.len() {
        return Err(format!("{} elements, expected {}", got_v.len(), want.len()).into());
    }
    let (atol, rtol) = tolerance(got.dtype());
    for (i, (&g, &w)) in got_v.iter().zip(&want).enumerate() {
        let ok = g == w || (g.is_nan() && w.is_nan()) || (g - w).abs() <= scale * (atol + rtol * w.abs());
        if !ok {
            return Err(format!("element {i}: got {g}, expected {w}").into());
        }
    }
    Ok(())
}

/// Deterministic host data in `[lo, hi)` (integers truncated, unsigned clamped at 0).
fn input(dev: &Device, dtype: DType, shape: &[usize], seed: u64, lo: f64, hi: f64) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let vals: Vec<f64> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            lo + (hi - lo) * (x >> 11) as f64 / (1u64 << 53) as f64
        })
        .collect();
    fn conv<T: WithDType>(v: &[f64]) -> CpuStorage {
        CpuStorage::from_vec(v.iter().map(|&x| T::from_f64(if T::DTYPE.is_int() { x.floor() } else { x })).collect())
    }
    let data = match dtype {
        DType::U8 => conv::<u8>(&vals),
        DType::U32 => conv::<u32>(&vals),
        DType::I64 => conv::<i64>(&vals),
        DType::F16 => conv::<half::f16>(&vals),
        DType::BF16 => conv::<half::bf16>(&vals),
        DType::F32 => conv::<f32>(&vals),
        DType::F64 => conv::<f64>(&vals),
    };
    Tensor::from_cpu(data, shape.to_vec(), dev)
}

/// A `[rows, cols]` input stored transposed, so every op also sees strides.
fn input_t(dev: &Device, dtype: DType, rows: usize, cols: usize, seed: u64, lo: f64, hi: f64) -> Result<Tensor> {
    input(dev, dtype, &[cols, rows], seed, lo, hi)?.t()
}

fn f32s(dev: &Device, v: &[f32], shape: &[usize]) -> Result<Tensor> {
    Tensor::from_slice(v, shape.to_vec(), dev)
}

fn checks(family: Family) -> Vec<Check> {
    match family {
        Family::Elementwise => elementwise(),
        Family::Reduce => reduce(),
        Family::Index => index(),
        Family::Conv => conv(),
        Family::Pool => pool(),
        Family::Upsample => upsample(),
        Family::Copy => copy(),
        Family::Matmul => matmul(),
        Family::Nn => nn(),
        Family::Random => random(),
        Family::Sort => sort(),
        Family::Attention => llm::attention(),
        Family::Quant => llm::quant(),
    }
}

fn elementwise() -> Vec<Check> {
    let mut v = vec![
        known("add", &[4.0, 6.0], |d| f32s(d, &[1., 2.], &[2])?.add(&f32s(d, &[3., 4.], &[2])?)),
        known("exp", &[1.0, std::f64::consts::E], |d| f32s(d, &[0., 1.], &[2])?.exp()),
    ];
    for &op in UnaryOp::ALL {
        for &dt in op.dtypes() {
            let (lo, hi) = match op {
                UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Recip => (0.1, 4.0),
                _ => (-4.0, 4.0),
            };
            v.push(check(format!("{op} {dt}"), move |d| input_t(d, dt, 4, 33, 1, lo, hi)?.unary(op)));
        }
    }
    for &dt in DType::FLOAT {
        v.push(check(format!("affine {dt}"), move |d| input_t(d, dt, 4, 33, 2, -3., 3.)?.affine(0.5, 1.0)));
        v.push(check(format!("powf {dt}"), move |d| input_t(d, dt, 4, 33, 3, 0.1, 3.)?.powf(1.5)));
        v.push(check(format!("elu {dt}"), move |d| input_t(d, dt, 4, 33, 4, -3., 3.)?.elu(0.5)));
    }
    for &dt in DType::ALL {
        v.push(check(format!("clamp {dt}"), move |d| input_t(d, dt, 4, 33, 5, -9., 9.)?.clamp(1u8, 5u8)));
        v.push(check(format!("where_cond {dt}"), move |d| {
            let c = input(d, DType::U8, &[4, 1], 6, 0., 2.)?;
            c.where_cond(&input_t(d, dt, 4, 33, 7, -9., 9.)?, &input(d, dt, &[33], 8, -9., 9.)?)
        }));
        for &to in DType::ALL {
            v.push(check(format!("cast {dt} {to}"), move |d| input_t(d, dt, 4, 33, 9, 0., 200.)?.to_dtype(to)));
        }
    }
    for &op in BinaryOp::ALL {
        for &dt in op.dtypes() {
            v.push(check(format!("{op} {dt}"), move |d| {
                input_t(d, dt, 4, 33, 10, -9., 9.)?.binary(&input(d, dt, &[33], 11, 1., 9.)?, op)
            }));
        }
    }
    for &op in CmpOp::ALL {
        for &dt in op.dtypes() {
            v.push(check(format!("{op} {dt}"), move |d| {
                input_t(d, dt, 4, 33, 12, 0., 3.)?.cmp(&input(d, dt, &[33], 13, 0., 3.)?, op)
            }));
        }
    }
    v
}

fn reduce() -> Vec<Check> {
    let mut v = vec![
        known("sum", &[6.0], |d| f32s(d, &[1., 2., 3.], &[3])?.sum([0])),
        known("argmax", &[1.0], |d| f32s(d, &[1., 3., 2.], &[3])?.argmax([0])),
    ];
    for &op in ReduceOp::ALL {
        for &dt in op.dtypes() {
            for dim in [0, 1] {
                v.push(check(format!("{op} {dt} dim {dim}"), move |d| {
                    input_t(d, dt, 8, 33, 14, -9., 9.)?.reduce(op, [dim], false)
                }));
            }
        }
    }
    v
}

fn index() -> Vec<Check> {
    let mut v = vec![known("index_select", &[30.0, 10.0], |d| {
        f32s(d, &[10., 20., 30.], &[3])?.index_select(&Tensor::from_slice(&[2u32, 0], [2], d)?, 0)
    })];
    for &dt in DType::ALL {
        for &it in DType::INT {
            v.push(check(format!("index_select {dt} ids {it}"), move |d| {
                input_t(d, dt, 9, 5, 15, -9., 9.)?.index_select(&input(d, it, &[7], 16, 0., 9.)?, 0)
            }));
        }
        v.push(check(format!("gather {dt}"), move |d| {
            input_t(d, dt, 6, 5, 17, -9., 9.)?.gather(&input(d, DType::U32, &[6, 3], 18, 0., 5.)?, 1)
        }));
        v.push(check(format!("scatter {dt}"), move |d| {
            let ids = Tensor::from_slice(&[2u32, 0, 1, 1, 2, 0], [2, 3], d)?;
            input_t(d, dt, 3, 3, 19, -9., 9.)?.scatter(&ids, &input(d, dt, &[2, 3], 20, -9., 9.)?, 0)
        }));
        v.push(check(format!("scatter_add {dt}"), move |d| {
            let ids = input(d, DType::I64, &[4, 3], 21, 0., 3.)?;
            input_t(d, dt, 3, 3, 22, 0., 9.)?.scatter_add(&ids, &input(d, dt, &[4, 3], 23, 0., 9.)?, 0)
        }));
        v.push(check(format!("index_add {dt}"), move |d| {
            let ids = input(d, DType::U8, &[5], 24, 0., 4.)?;
            input_t(d, dt, 4, 3, 25, 0., 9.)?.index_add(&ids, &input(d, dt, &[5, 3], 26, 0., 9.)?, 0)
        }));
    }
    v
}

fn conv() -> Vec<Check> {
    let mut v = vec![known("conv1d", &[3.0, 5.0], |d| {
        f32s(d, &[1., 2., 3.], &[1, 1, 3])?.conv1d(&f32s(d, &[1., 1.], &[1, 1, 2])?, &ConvParams::default())
    })];
    for &dt in DType::FLOAT {
        let p2 = ConvParams::<2>::default().padding(1).stride(2).groups(2);
        let p1 = ConvParams::<1>::default().padding(1).stride(2).dilation(2);
        v.push(check(format!("conv2d {dt}"), move |d| {
            input(d, dt, &[1, 4, 9, 9], 27, -1., 1.)?.conv2d(&input(d, dt, &[6, 2, 3, 3], 28, -1., 1.)?, &p2)
        }));
        v.push(check(format!("conv_transpose2d {dt}"), move |d| {
            input(d, dt, &[1, 4, 5, 5], 29, -1., 1.)?.conv_transpose2d(&input(d, dt, &[4, 3, 3, 3], 30, -1., 1.)?, &p2)
        }));
        v.push(check(format!("conv1d {dt}"), move |d| {
            input(d, dt, &[2, 3, 17], 31, -1., 1.)?.conv1d(&input(d, dt, &[4, 3, 3], 32, -1., 1.)?, &p1)
        }));
        v.push(check(format!("conv_transpose1d {dt}"), move |d| {
            input(d, dt, &[2, 3, 9], 33, -1., 1.)?.conv_transpose1d(&input(d, dt, &[3, 4, 3], 34, -1., 1.)?, &p1)
        }));
    }
    v
}

fn pool() -> Vec<Check> {
    let mut v = vec![known("avg_pool2d", &[2.5], |d| {
        f32s(d, &[1., 2., 3., 4.], &[1, 1, 2, 2])?.avg_pool2d(&Pool2dParams::new(2))
    })];
    for &dt in DType::FLOAT {
        let p = Pool2dParams::new(3).stride(2).padding(1);
        v.push(check(format!("avg_pool2d {dt}"), move |d| input(d, dt, &[2, 3, 8, 8], 35, -9., 9.)?.avg_pool2d(&p)));
        v.push(check(format!("max_pool2d {dt}"), move |d| input(d, dt, &[2, 3, 8, 8], 36, -9., 9.)?.max_pool2d(&p)));
    }
    v
}

fn upsample() -> Vec<Check> {
    let mut v =
        vec![known("upsample_nearest1d", &[1., 1., 2., 2.], |d| f32s(d, &[1., 2.], &[1, 1, 2])?.upsample_nearest1d(4))];
    for &dt in DType::ALL {
        v.push(check(format!("upsample_nearest1d {dt}"), move |d| {
            input(d, dt, &[2, 3, 5], 37, 0., 9.)?.upsample_nearest1d(12)
        }));
        v.push(check(format!("upsample_nearest2d {dt}"), move |d| {
            input(d, dt, &[2, 3, 5, 4], 38, 0., 9.)?.upsample_nearest2d(7, 9)
        }));
    }
    v
}

fn copy() -> Vec<Check> {
    let mut v = vec![known("arange", &[0., 1., 2., 3.], |d| Tensor::arange(0i64, 4, d))];
    for &dt in DType::ALL {
        v.push(check(format!("copy_strided {dt}"), move |d| input_t(d, dt, 7, 9, 39, 0., 9.)?.contiguous()));
        v.push(check(format!("copy2d {dt}"), move |d| {
            Tensor::cat(&[&input(d, dt, &[3, 4], 40, 0., 9.)?, &input(d, dt, &[3, 2], 41, 0., 9.)?], 1)
        }));
        v.push(check(format!("fill {dt}"), move |d| Tensor::full(7u8, [3, 5], dt, d)));
        v.push(check(format!("arange {dt}"), move |d| arange_of(d, dt)));
    }
    v
}

/// An arange of `dtype` with a step that is not 1.
fn arange_of(d: &Device, dtype: DType) -> Result<Tensor> {
    use half::{bf16, f16};
    match dtype {
        DType::U8 => Tensor::arange_step(1u8, 60, 7, d),
        DType::U32 => Tensor::arange_step(1u32, 60, 7, d),
        DType::I64 => Tensor::arange_step(-5i64, 20, 3, d),
        DType::F16 => Tensor::arange_step(f16::from_f32(-1.0), f16::from_f32(1.0), f16::from_f32(0.125), d),
        DType::BF16 => Tensor::arange_step(bf16::from_f32(-1.0), bf16::from_f32(1.0), bf16::from_f32(0.125), d),
        DType::F32 => Tensor::arange_step(-1.0f32, 1.0, 0.125, d),
        DType::F64 => Tensor::arange_step(-1.0f64, 1.0, 0.125, d),
    }
}

fn matmul() -> Vec<Check> {
    let mut v = vec![known("matmul", &[17., 39.], |d| {
        f32s(d, &[1., 2., 3., 4.], &[2, 2])?.matmul(&f32s(d, &[5., 6.], &[2, 1])?)
    })];
    for &dt in DType::FLOAT {
        v.push(check(format!("matmul {dt}"), move |d| {
            input(d, dt, &[2, 17, 33], 42, -1., 1.)?.matmul(&input_t(d, dt, 33, 9, 43, -1., 1.)?)
        }));
    }
    v
}

fn nn() -> Vec<Check> {
    let mut v = vec![known("softmax", &[0.25, 0.75], |d| f32s(d, &[0., 3f32.ln()], &[1, 2])?.softmax(1))];
    for &dt in DType::FLOAT {
        v.push(check(format!("softmax {dt}"), move |d| input_t(d, dt, 5, 33, 44, -5., 5.)?.softmax(0)));
        v.push(check(format!("log_softmax {dt}"), move |d| input_t(d, dt, 5, 33, 45, -5., 5.)?.log_softmax(1)));
        v.push(check(format!("layer_norm {dt}"), move |d| {
            let (w, b) = (input(d, dt, &[33], 46, 0., 2.)?, input(d, dt, &[33], 47, -1., 1.)?);
            input_t(d, dt, 5, 33, 48, -5., 5.)?.layer_norm(Some(&w), Some(&b), 1e-5)
        }));
        v.push(check(format!("rms_norm {dt}"), move |d| {
            input_t(d, dt, 5, 33, 49, -5., 5.)?.rms_norm(Some(&input(d, dt, &[33], 50, 0., 2.)?), 1e-5)
        }));
        v.push(check(format!("batch_norm {dt}"), move |d| {
            let (m, var) = (input(d, dt, &[3], 51, -1., 1.)?, input(d, dt, &[3], 52, 0.5, 2.)?);
            let (w, b) = (input(d, dt, &[3], 53, 0., 2.)?, input(d, dt, &[3], 54, -1., 1.)?);
            input(d, dt, &[2, 3, 4, 4], 55, -5., 5.)?.batch_norm(&m, &var, Some(&w), Some(&b), 1e-5)
        }));
        v.push(check(format!("local_response_norm {dt}"), move |d| {
            input(d, dt, &[2, 7, 3, 5], 56, -5., 5.)?.local_response_norm(5, 0.1, 0.75, 1.0)
        }));
        v.push(check(format!("lstm_cell {dt}"), move |d| {
            let (gx, gh, b) = (
                input_t(d, dt, 3, 20, 57, -3., 3.)?,
                input(d, dt, &[3, 20], 58, -3., 3.)?,
                input(d, dt, &[20], 59, -1., 1.)?,
            );
            gx.lstm_cell(&gh, Some(&b), &input(d, dt, &[3, 5], 60, -2., 2.)?)
        }));
        v.push(check(format!("gru_cell {dt}"), move |d| {
            let (gx, gh) = (input_t(d, dt, 3, 15, 61, -3., 3.)?, input(d, dt, &[3, 15], 62, -3., 3.)?);
            gx.gru_cell(&gh, None, &input(d, dt, &[3, 5], 63, -2., 2.)?)
        }));
    }
    v
}

fn random() -> Vec<Check> {
    let first = random::unit_f32(random::word(0, 0)) as f64;
    let uni = Distribution::Uniform { low: 0.0, high: 1.0 };
    let mut v = vec![known("rand_uniform", &[first], move |d| Tensor::random([1], DType::F32, uni, 0, 0, d))];
    for &dt in DType::FLOAT {
        let normal = Distribution::Normal { mean: 1.0, std: 2.0 };
        let uni = Distribution::Uniform { low: -2.0, high: 3.0 };
        v.push(check(format!("rand_uniform {dt}"), move |d| Tensor::random([1001], dt, uni, 7, 5, d)));
        v.push(check(format!("rand_normal {dt}"), move |d| Tensor::random([1001], dt, normal, 7, 5, d)));
        v.push(check(format!("dropout {dt}"), move |d| input_t(d, dt, 7, 33, 64, -5., 5.)?.dropout_at(0.3, 7, 3)));
    }
    v
}

fn sort() -> Vec<Check> {
    let mut v = vec![known("argsort", &[1., 2., 0.], |d| f32s(d, &[3., 1., 2.], &[3])?.argsort(false))];
    for &dt in DType::ALL {
        for desc in [false, true] {
            v.push(check(format!("argsort {dt} desc={desc}"), move |d| {
                input_t(d, dt, 5, 37, 56, 0., 20.)?.argsort(desc)
            }));
        }
    }
    v
}

// The main job's unit tests. Each imports inside its body: the suite includes this file in a test
// build without libtest, which drops the tests and would leave a module-level import unused.
#[cfg(test)]
mod tests {
    #[test]
    fn a_quick_check_keeps_f32_and_the_hand_computed_answers() {
        use super::*;
        for &f in Family::ALL {
            let (kept, skipped) = planned(f, Scope::Quick);
            assert_eq!(kept.len() + skipped, checks(f).len(), "{f}");
            assert!(!kept.is_empty(), "{f}: a quick check keeps some checks");
            for c in &kept {
                assert!(c.name.contains("f32") || matches!(c.expect, Expect::Values(_)), "{f}: {}", c.name);
            }
        }
        assert_eq!(planned(Family::Elementwise, Scope::Full).1, 0);
    }

    #[test]
    fn checks_not_started_by_the_deadline_are_counted_not_run() {
        use super::*;
        let family = Family::Elementwise;
        let report = run_family(&Device::cpu(), family, Scope::Quick, Some(Instant::now()), &mut |_, name| {
            panic!("{name} started past the deadline")
        });
        assert_eq!((report.checks, report.out_of_time), (0, count(family, Scope::Quick)));
    }
}
