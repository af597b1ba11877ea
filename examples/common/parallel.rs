//! `--devices`: the transformer split over several devices (tensor parallel, as Megatron-LM
//! splits it): each rank holds a column shard of the q/k/v and MLP-in weights and a row shard
//! of the projections back to the width; the ranks' partial outputs are summed by one
//! all-reduce of a `Group` after the attention and after the MLP of each layer.

use crate::common::{self, Ctx, Flags, Res};
use crate::{Config, Model, Reference, prompt};
use rocm_wgpu_ops::{BackendKind, DType, Device, Group, ReduceOp, Result, Tensor};
use std::time::Duration;

/// The ranks of a forward, stepping through the layers together: one context per device (one
/// rank: the whole model on one device, no group).
pub struct Ranks<'a> {
    pub ctxs: &'a [Ctx],
    pub group: Option<&'a Group>,
}

impl Ranks<'_> {
    /// `f(rank, its context)` for every rank, in order.
    pub fn map<T>(&self, mut f: impl FnMut(usize, &Ctx) -> Res<T>) -> Res<Vec<T>> {
        self.ctxs.iter().enumerate().map(|(r, c)| f(r, c)).collect()
    }

    /// The ranks' partial outputs summed, on every rank.
    pub fn sum(&self, parts: Vec<Tensor>) -> Res<Vec<Tensor>> {
        match self.group {
            Some(g) => self.ctxs[0].op("collective", 0.0, || g.all_reduce(&parts, ReduceOp::Sum)),
            None => Ok(parts),
        }
    }
}

/// The parts `at` (start, length) of dim `dim` of `t`, side by side.
pub fn split(t: &Tensor, dim: usize, at: &[(usize, usize)]) -> Result<Tensor> {
    let parts = at.iter().map(|&(start, len)| t.narrow(dim, start, len)).collect::<Result<Vec<_>>>()?;
    Tensor::cat(&parts, dim)?.contiguous()
}

/// `b` on rank 0, zeros elsewhere: a bias added after a row-split matmul, once in the sum.
pub fn first_only(b: &Tensor, rank: usize) -> Result<Tensor> {
    if rank == 0 { Ok(b.clone()) } else { b.zeros_like() }
}

/// The ordinals `--devices` names, if any.
fn ordinals(f: &Flags) -> Res<Vec<usize>> {
    let list = f.list("devices", "");
    let parse = |o: &String| o.parse().map_err(|_| format!("--devices {o}: not a device ordinal"));
    Ok(list.iter().map(parse).collect::<std::result::Result<_, _>>()?)
}

/// Refuses a `--devices` the model does not split over.
pub fn check(f: &Flags, cfg: &Config) -> Res<()> {
    let n = ordinals(f)?.len();
    if n == 0 {
        return Ok(());
    }
    if cfg.quant != crate::Quant::Dense {
        return Err("--devices splits dense random weights: leave out --quant and --gguf".into());
    }
    if !(cfg.heads.is_multiple_of(n) && cfg.kv_heads.is_multiple_of(n) && cfg.mlp.is_multiple_of(n)) {
        return Err(format!("--devices: {n} devices must divide heads, kv-heads and mlp ({})", cfg.tag()).into());
    }
    Ok(())
}

/// The devices of `kind` that `--devices` names.
fn open(kind: BackendKind, ordinals: &[usize]) -> Res<Vec<Device>> {
    let one = |&o: &usize| match kind {
        BackendKind::Cuda => Device::cuda(o),
        BackendKind::Rocm => Device::rocm(o),
        BackendKind::Wgpu => Device::wgpu_adapter(o, None),
        BackendKind::Cpu => Ok(Device::cpu()),
    };
    Ok(ordinals.iter().map(one).collect::<Result<_>>()?)
}

/// With `--devices`: the forward split over those devices of `dev`'s backend, timed (`one`:
/// the one-device time) and compared with the cpu. Whether the comparison fails.
#[allow(clippy::too_many_arguments)]
pub fn run(
    f: &Flags,
    cfg: &Config,
    m: &Model,
    dev: &Device,
    dtype: DType,
    r: Option<&Reference>,
    check: usize,
    one: Duration,
) -> Res<bool> {
    let ordinals = ordinals(f)?;
    let n = ordinals.len();
    if n == 0 {
        return Ok(false);
    }
    let devs = open(dev.kind(), &ordinals)?;
    let group = Group::new(&devs)?;
    println!(
        "# {} {dtype} over {n} devices {ordinals:?} (tensor parallel; collectives {})",
        dev.kind(),
        group.describe()
    );
    let rank_cfg = Config { heads: cfg.heads / n, kv_heads: cfg.kv_heads / n, mlp: cfg.mlp / n, shards: n, ..*cfg };
    let shards = (0..n).map(|i| m.shard(cfg, i, n)?.to(&devs[i], dtype)).collect::<Res<Vec<_>>>()?;
    let shards: Vec<&Model> = shards.iter().collect();
    let ctxs: Vec<Ctx> = devs.iter().map(|d| Ctx::new(d, false)).collect();
    let p = Ranks { ctxs: &ctxs, group: Some(&group) };
    let forward = |len: usize| -> Res<Vec<(Tensor, Tensor)>> {
        let ids = devs.iter().map(|d| prompt(cfg, len, d)).collect::<Res<Vec<_>>>()?;
        Model::forward_ranks(&shards, &p, &rank_cfg, &ids, &[])
    };
    let (t, _) = common::time_on(&devs, f.get("runs", 5)?, || forward(cfg.seq))?;
    println!("#   {n} devices vs one: {:.2}x the one-device forward's speed", one.as_secs_f64() / t.as_secs_f64());
    println!("PARALLEL transformer {} {dtype} {:.3} ms devices={n} {}", dev.kind(), t.as_secs_f64() * 1e3, cfg.tag());
    let mut fails = false;
    let Some(r) = r else { return Ok(fails) };
    for (rank, (logits, _)) in forward(check)?.iter().enumerate() {
        let what = format!("the [{check}, {}] logits of rank {rank} of {n}", cfg.vocab);
        fails |= common::compare(logits, &r.logits, dtype, r.budget, &what)?;
    }
    Ok(fails)
}
