//! The bandwidth of `Group::all_reduce` (sum, f32) over several devices of one backend, as
//! nccl-tests reports it: the algorithm bandwidth (bytes / time) and the bus bandwidth (times
//! 2 (n - 1) / n, what each link carries); `benches/collective_ref.py` measures
//! torch.distributed's NCCL all-reduce of the same size for the ratio.
//!
//! ```text
//! cargo run --release --features cuda --example all_reduce -- --backend cuda --devices 0,1 --mib 256
//! ```

mod common;

use common::{Flags, Res};
use rocm_wgpu_ops::{BackendKind, DType, Device, Group, ReduceOp, Tensor};
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "\
all_reduce: the bandwidth of Group::all_reduce (sum) over several devices.
  --devices LIST   device ordinals of the backend (default: every one Device::list shows)
  --mib N          MiB per rank (default 256)";

fn main() -> ExitCode {
    common::exit("all_reduce", main_())
}

fn main_() -> Res<bool> {
    let f = Flags::parse(USAGE, &["devices", "mib"])?;
    let kind = BackendKind::parse(&f.get("backend", "cuda".to_string())?)?;
    let listed: Vec<String> = Device::list().iter().filter(|e| e.kind == kind).map(|e| e.ordinal.to_string()).collect();
    let ordinals = f.list("devices", &listed.join(","));
    let open = |o: &String| -> Res<Device> {
        let o: usize = o.parse().map_err(|_| format!("--devices {o}: not an ordinal"))?;
        Ok(match kind {
            BackendKind::Cuda => Device::cuda(o)?,
            BackendKind::Rocm => Device::rocm(o)?,
            BackendKind::Wgpu => Device::wgpu_adapter(o, None)?,
            BackendKind::Cpu => Device::cpu(),
        })
    };
    let devs = ordinals.iter().map(open).collect::<Res<Vec<_>>>()?;
    let group = Group::new(&devs)?;
    let (n, mib) = (devs.len(), f.get("mib", 256usize)?);
    let len = mib << 18;
    let xs = devs.iter().map(|d| Tensor::ones([len], DType::F32, d)).collect::<rocm_wgpu_ops::Result<Vec<_>>>()?;
    let sync = || devs.iter().try_for_each(Device::synchronize);
    let mut out = vec![];
    for _ in 0..5 {
        out = group.all_reduce(&xs, ReduceOp::Sum)?;
    }
    sync()?;
    let mut times = vec![];
    for _ in 0..f.get("runs", 20usize)?.max(1) {
        let start = Instant::now();
        out = group.all_reduce(&xs, ReduceOp::Sum)?;
        sync()?;
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let t = times[times.len() / 2];
    let alg = (len * 4) as f64 / t / 1e9;
    let bus = alg * 2.0 * (n as f64 - 1.0) / n as f64;
    println!("# {} ({} ranks)", group.describe(), n);
    println!(
        "COLLECTIVE all_reduce {kind} f32 {mib} MiB n={n} {:.3} ms algbw {alg:.1} GB/s busbw {bus:.1} GB/s",
        t * 1e3
    );
    let want = n as f32;
    let ok = out
        .iter()
        .all(|o| o.narrow(0, len - 4, 4).and_then(|t| t.to_vec::<f32>()).is_ok_and(|v| v.iter().all(|&x| x == want)));
    println!("#   every rank holds {want} in its last elements: {}", if ok { "ok" } else { "FAILS" });
    Ok(ok)
}
