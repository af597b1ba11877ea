//! What both model programs share: flags, the backends to run on, timing, the per-family
//! profile, the error budget of a forward, and the comparison with the cpu reference.

// Each example compiles this module and uses part of it.
#![allow(dead_code)]

use rocm_wgpu_ops::{BackendKind, DType, Device, Error, Tensor};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::str::FromStr;
use std::time::{Duration, Instant};

pub type Res<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// `--key value` flags and the `--profile` switch; `--help` prints `usage` and exits.
pub struct Flags {
    values: BTreeMap<String, String>,
    pub profile: bool,
}

/// The flags both programs take, after their own.
pub const COMMON_USAGE: &str = "\
  --dtype LIST     f32, f16, bf16, comma-separated (default f32)
  --backend LIST   cpu, wgpu, rocm, cuda, comma-separated (default: every GPU backend found;
                   the cpu is always the reference, and timed only when named here)
  --runs N         timed forwards per backend and dtype, after 2 s of warm-up (default 5)
  --profile        one more forward with a synchronisation after every op, printing the time
                   per op family; the waits perturb it, so its total exceeds the median
Exits 1 when a GPU backend's f32 output differs from the cpu's by more than the tolerance.";

impl Flags {
    pub fn parse(usage: &str, known: &[&str]) -> Res<Flags> {
        let mut values = BTreeMap::new();
        let mut profile = false;
        let mut it = std::env::args().skip(1);
        while let Some(a) = it.next() {
            match a.as_str() {
                "--help" | "-h" => {
                    println!("{usage}\n{COMMON_USAGE}");
                    std::process::exit(0);
                }
                "--profile" => profile = true,
                _ => {
                    let key = a.strip_prefix("--").filter(|k| known.contains(k) || COMMON.contains(k));
                    let key = key.ok_or_else(|| format!("unknown argument {a:?} (see --help)"))?;
                    let v = it.next().ok_or_else(|| format!("{a} needs a value"))?;
                    values.insert(key.to_string(), v);
                }
            }
        }
        Ok(Flags { values, profile })
    }

    pub fn get<T: FromStr>(&self, key: &str, default: T) -> Res<T> {
        match self.values.get(key) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| format!("--{key} {v}: not a valid value").into()),
        }
    }

    pub fn list(&self, key: &str, default: &str) -> Vec<String> {
        let v = self.values.get(key).map_or(default, String::as_str);
        v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
    }

    pub fn dtypes(&self) -> Res<Vec<DType>> {
        let parse = |s: &str| match s {
            "f32" => Ok(DType::F32),
            "f16" => Ok(DType::F16),
            "bf16" => Ok(DType::BF16),
            _ => Err(format!("--dtype {s}: expected f32, f16 or bf16")),
        };
        Ok(self.list("dtype", "f32").iter().map(|s| parse(s)).collect::<Result<_, _>>()?)
    }

    /// The backends to time: those `--backend` names (an absent one is an error), else every
    /// GPU backend that answers here, each skipped one said with its reason.
    pub fn devices(&self) -> Res<Vec<Device>> {
        if self.values.contains_key("backend") {
            return Ok(self
                .list("backend", "")
                .iter()
                .map(|n| BackendKind::parse(n).and_then(Device::new))
                .collect::<Result<_, _>>()?);
        }
        let mut found = vec![];
        for (kind, dev) in Device::probe_all() {
            match dev {
                Ok(d) if kind != BackendKind::Cpu => found.push(d),
                Ok(_) => {}
                Err(e) => println!("# {kind}: not used ({e})"),
            }
        }
        if found.is_empty() {
            return Err("no GPU backend found; time the cpu with --backend cpu".into());
        }
        Ok(found)
    }
}

const COMMON: &[&str] = &["dtype", "backend", "runs"];

/// Says which backend runs, and which families it still computes on the cpu reference.
pub fn describe(dev: &Device) {
    println!("\n## {}", dev.describe());
    for (k, v) in dev.info() {
        if k == "on the cpu reference" {
            println!("#   families on the cpu reference here: {v}");
        }
    }
}

/// Where a forward's ops go: timed per family when profiling, and counted into the error
/// budget of the chain.
pub struct Ctx {
    dev: Device,
    profile: Option<RefCell<BTreeMap<&'static str, (Duration, usize)>>>,
    budget: Cell<f64>,
}

impl Ctx {
    pub fn new(dev: &Device, profile: bool) -> Ctx {
        Ctx { dev: dev.clone(), profile: profile.then(Default::default), budget: Cell::new(0.0) }
    }

    /// Runs one op of `family` whose rounding error is `budget` times the suite's one-op
    /// tolerance (`Tol::of(dtype).times(budget)` in `tests/suite`).
    pub fn op<T>(&self, family: &'static str, budget: f64, f: impl FnOnce() -> rocm_wgpu_ops::Result<T>) -> Res<T> {
        self.budget.set(self.budget.get() + budget);
        let Some(prof) = &self.profile else { return Ok(f()?) };
        let start = Instant::now();
        let out = f()?;
        self.dev.synchronize()?;
        let mut p = prof.borrow_mut();
        let e = p.entry(family).or_default();
        e.0 += start.elapsed();
        e.1 += 1;
        Ok(out)
    }

    /// The sum of the budgets of the ops run since the last call: errors that each op's input
    /// carries pass through it at most unamplified to first order, so a chain's bound is the
    /// sum of its ops' bounds.
    pub fn take_budget(&self) -> f64 {
        self.budget.replace(0.0)
    }

    pub fn print_profile(&self) {
        let Some(prof) = &self.profile else { return };
        let p = prof.borrow();
        let total: Duration = p.values().map(|(d, _)| *d).sum();
        println!("#   profile (synchronised after every op; perturbs timing): {:.3} ms in all", ms(total));
        let mut rows: Vec<_> = p.iter().collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.1.0));
        for (family, (d, n)) in rows {
            let share = 100.0 * d.as_secs_f64() / total.as_secs_f64().max(1e-12);
            println!("#     {family:<12} {:>10.3} ms {share:>5.1}%  {n} ops", ms(*d));
        }
    }
}

/// The suite's budgets (`tests/suite/*.rs`): a `k`-term sum of products is `1 + k/4` roundings
/// (matmul.rs), a norm or softmax 8 (nn.rs), a transcendental map 4 and an exact one 1
/// (elementwise.rs), a pool 2 (pool.rs), rope 8 (attention.rs); copies, views and index ops are
/// exact.
pub mod budget {
    pub fn sum_of_products(k: usize) -> f64 {
        1.0 + k as f64 / 4.0
    }
    /// Fused attention of head size `d` over `keys` keys: the budget of the chain it replaces
    /// (scores as a `d`-term sum of products, softmax, a `keys`-term weighted sum). The suite's
    /// 8 one-op tolerances hold for its small shapes, not for any `d` and `keys`; the fused
    /// kernel rounds to the dtype once, so this bound is loose but never short.
    pub fn attention(d: usize, keys: usize) -> f64 {
        sum_of_products(d) + NN + sum_of_products(keys)
    }
    pub const ROPE: f64 = 8.0;
    pub const NN: f64 = 8.0;
    pub const MAP: f64 = 4.0;
    pub const EXACT_MAP: f64 = 1.0;
    pub const POOL: f64 = 2.0;
    pub const COPY: f64 = 0.0;
}

/// The suite's one-op tolerance `(atol, rtol)` (`Tol::of` in `tests/suite/main.rs`).
fn one_op_tol(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::F16 => (1e-3, 2e-3),
        DType::BF16 => (8e-3, 1.6e-2),
        _ => (1e-6, 1e-5),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// How long forwards run before the timed ones. A GPU raises its clocks only under sustained
/// load: on an H100 through Vulkan, GPT-2's first 12-15 forwards (~250 ms) took 15.8 ms each,
/// the next 4.4-5.3 ms (f32), while CUDA gets its clocks at once. A warm-up of one forward
/// timed the power management, not the op chain (one second still left a slow start in a
/// process on a just-started machine).
const WARM_UP: Duration = Duration::from_secs(2);

/// Runs `forward` for [`WARM_UP`] (at least once), then `runs` times, synchronising before each
/// clock stops. Returns the median time and the last output.
pub fn time<T>(dev: &Device, runs: usize, forward: impl FnMut() -> Res<T>) -> Res<(Duration, T)> {
    time_on(std::slice::from_ref(dev), runs, forward)
}

/// [`time`] of a forward that runs on several devices: each clock stops when all are done;
/// kernels counted on all.
pub fn time_on<T>(devs: &[Device], runs: usize, mut forward: impl FnMut() -> Res<T>) -> Res<(Duration, T)> {
    let sync = || devs.iter().try_for_each(Device::synchronize);
    let launches = || devs.iter().map(Device::launches).sum::<u64>();
    let warm = Instant::now();
    let mut out = forward()?;
    sync()?;
    while warm.elapsed() < WARM_UP {
        out = forward()?;
        sync()?;
    }
    let (mut times, mut records) = (vec![], vec![]);
    let launched = launches();
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        out = forward()?;
        records.push(start.elapsed());
        sync()?;
        times.push(start.elapsed());
    }
    let fusion = if devs[0].fusion() { "on" } else { "off (RWO_FUSION=0)" };
    let per = (launches() - launched) as f64 / runs.max(1) as f64;
    println!("#   kernels per forward: {per:.0} (fusion {fusion})");
    let each: Vec<String> = times.iter().take(16).map(|&t| format!("{:.2}", ms(t))).collect();
    println!("#   forwards in order (ms): {}{}", each.join(" "), if times.len() > 16 { " ..." } else { "" });
    times.sort();
    records.sort();
    println!(
        "#   forward: median {:.3} ms of {} (min {:.3}, max {:.3}); recording it (CPU) median {:.3} ms",
        ms(times[times.len() / 2]),
        times.len(),
        ms(times[0]),
        ms(times[times.len() - 1]),
        ms(records[records.len() / 2])
    );
    Ok((times[times.len() / 2], out))
}

#[path = "../../src/app/cpu_time.rs"]
pub mod cpu_time;

/// The line `benches/models_ref.py` reads: model, backend, dtype, ms per forward, shapes.
pub fn model_line(model: &str, dev: &Device, dtype: DType, t: Duration, config: &str) {
    println!("MODEL {model} {} {dtype} {:.3} ms {config}", dev.kind(), ms(t));
}

/// A forward that the backend states it cannot run in this dtype (`Device::supports`) is
/// skipped with its reason; any other error stands.
pub fn unsupported(dev: &Device, e: &(dyn std::error::Error + 'static)) -> Option<String> {
    match e.downcast_ref::<Error>() {
        Some(err @ Error::UnsupportedDType { op, dtype, .. }) if dev.supports(op, *dtype).is_err() => {
            Some(err.to_string())
        }
        _ => None,
    }
}

/// Runs `run` (which returns whether its comparison fails) for each device and each dtype's
/// cpu reference, naming the device first; a dtype the device states unsupported is skipped
/// with its reason. Whether every run passed.
pub fn each<R>(
    devices: &[Device],
    refs: &[(DType, R)],
    mut run: impl FnMut(&Device, DType, &R) -> Res<bool>,
) -> Res<bool> {
    let mut ok = true;
    for dev in devices {
        describe(dev);
        for (dtype, r) in refs {
            match run(dev, *dtype, r) {
                Ok(fails) => ok &= !fails,
                Err(e) => match unsupported(dev, e.as_ref()) {
                    Some(why) => println!("#   skipped: {why}"),
                    None => return Err(e),
                },
            }
        }
    }
    Ok(ok)
}

/// The exit status of an example whose run says whether every f32 comparison passed: 1 when
/// one failed or on an error (printed after `name: `).
pub fn exit(name: &str, passed: Res<bool>) -> ExitCode {
    match passed {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Compares `got` with the cpu's `want` (same shape) against the chain's tolerance:
/// `max |got - want| <= budget * (atol + rtol * max |want|)`, the suite's one-op `Tol` scaled
/// by the summed budget, its relative part taken on the output's scale (as the suite's matmul
/// bound takes it on the sum of |products|, not on a result that may cancel to 0). Prints the
/// finding; returns whether it fails (f32 only: half types are reported, not judged).
pub fn compare(got: &Tensor, want: &Tensor, dtype: DType, budget: f64, what: &str) -> Res<bool> {
    let g = got.to_dtype(DType::F32)?.to_vec::<f32>()?;
    let w = want.to_dtype(DType::F32)?.to_vec::<f32>()?;
    let scale = w.iter().fold(0f32, |m, x| m.max(x.abs())) as f64;
    let diff = g.iter().zip(&w).fold(0f64, |m, (a, b)| {
        let d = (*a as f64 - *b as f64).abs();
        if d.is_nan() { f64::INFINITY } else { m.max(d) }
    });
    let (atol, rtol) = one_op_tol(dtype);
    let tol = budget * (atol + rtol * scale);
    let fails = dtype == DType::F32 && diff > tol;
    let verdict = match (dtype, fails) {
        (DType::F32, false) => "ok",
        (DType::F32, true) => "FAILS",
        _ => "reported only",
    };
    println!(
        "#   vs cpu: max |diff| {diff:.3e} on {what} (max |cpu| {scale:.3}); tolerance {tol:.3e} = \
         {budget:.0} op budgets x ({atol:e} + {rtol:e} x max |cpu|): {verdict}"
    );
    Ok(fails)
}
