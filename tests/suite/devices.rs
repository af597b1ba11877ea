//! Several devices: opening by ordinal, tensors of two devices in one op, copies between
//! devices, and the collectives of a `Group` on every device count this machine has (NCCL on
//! CUDA devices, the host path on wgpu and the cpu), against values computed here.

use rocm_wgpu_ops::{BackendKind, DType, Device, Error, Group, ReduceOp, Result, Tensor, UniqueId};

crate::suite!(
    copies_between_devices_keep_every_value,
    tensors_of_two_devices_do_not_meet,
    collectives_match_their_definitions,
    collectives_refuse_bad_input_and_keep_it,
);

crate::tests!(
    #[cfg(not(target_family = "wasm"))]
    devices_open_by_ordinal_and_a_missing_one_says_so,
    #[cfg(not(target_family = "wasm"))]
    ranks_of_several_threads_join_one_group,
);

/// The devices a group on `dev`'s backend can have here, `dev` first: every CUDA (ROCm) device,
/// or `dev` and a second wgpu device on the same adapter, or the cpu twice.
async fn peers(dev: &Device) -> Result<Vec<Device>> {
    let mut all = vec![dev.clone()];
    match dev.kind() {
        #[cfg(not(target_family = "wasm"))]
        kind @ (BackendKind::Cuda | BackendKind::Rocm) => {
            for e in Device::list().into_iter().filter(|e| e.kind == kind).skip(1) {
                all.push(if kind == BackendKind::Cuda { Device::cuda(e.ordinal)? } else { Device::rocm(e.ordinal)? });
            }
        }
        BackendKind::Wgpu => all.push(Device::wgpu_async(None, None).await?),
        _ => all.push(Device::cpu()),
    }
    Ok(all)
}

/// A second device of `dev`'s backend, distinct from it where the backend has such a thing.
async fn other(dev: &Device) -> Result<Device> {
    let peers = peers(dev).await?;
    match dev.kind() {
        BackendKind::Cuda if peers.len() < 2 => Device::cuda(0),
        BackendKind::Rocm if peers.len() < 2 => Device::rocm(0),
        _ => Ok(peers[1].clone()),
    }
}

fn dtypes(dev: &Device) -> Vec<DType> {
    let all = [DType::F32, DType::F16, DType::BF16, DType::F64, DType::I64, DType::U32, DType::U8];
    all.into_iter().filter(|&d| dev.supports("add", d).is_ok()).collect()
}

async fn values(t: &Tensor) -> Result<Vec<f64>> {
    Ok(t.to_cpu_storage_async().await?.to_f64_vec())
}

/// Rank `r`'s input: small integers (exact in every dtype, sums and products too).
fn input(r: usize, len: usize) -> Vec<f64> {
    (0..len).map(|i| ((i * 5 + r * 7) % 9 + 1) as f64).collect()
}

/// Small integers (exact in f32) as `dtype` on `dev`, cast there from f32 (a browser has no f64).
fn tensor(v: &[f64], shape: &[usize], dtype: DType, dev: &Device) -> Result<Tensor> {
    Tensor::from_vec(v.iter().map(|&x| x as f32).collect::<Vec<_>>(), shape, dev)?.to_dtype(dtype)
}

async fn copies_between_devices_keep_every_value(dev: &Device) -> Result<()> {
    let second = other(dev).await?;
    for dtype in dtypes(dev) {
        let v = input(3, 6 * 5);
        // A strided view: the transpose of a narrowed [6, 5].
        let x = tensor(&v, &[6, 5], dtype, dev)?.narrow(0, 1, 4)?.t()?;
        let want: Vec<f64> = (0..5).flat_map(|j| (1..5).map(move |i| i * 5 + j)).map(|k| v[k]).collect();
        let there = x.to_device_async(&second).await?;
        assert!(there.device().same_device(&second) && there.is_contiguous());
        assert_eq!(values(&there).await?, want, "{dtype} on {}", second.describe());
        let back = there.to_device_async(dev).await?;
        assert_eq!(values(&back).await?, want, "{dtype} back on {}", dev.describe());
        let host = x.to_device_async(&Device::cpu()).await?;
        assert!(host.device().same_device(&Device::cpu()));
        assert_eq!(values(&host.to_device_async(dev).await?).await?, want, "{dtype} through the cpu device");
        assert_eq!(values(&x).await?, want, "{dtype}: the source after the copies");
        let empty = Tensor::zeros([0, 3], dtype, dev)?.to_device_async(&second).await?;
        assert_eq!(empty.shape().dims(), [0, 3]);
    }
    Ok(())
}

async fn tensors_of_two_devices_do_not_meet(dev: &Device) -> Result<()> {
    let second = other(dev).await?;
    if second.same_device(dev) {
        return Ok(()); // the cpu: one device however often it is opened
    }
    let a = tensor(&input(0, 4), &[4], DType::F32, dev)?;
    let b = tensor(&input(1, 4), &[4], DType::F32, &second)?;
    match a.add(&b) {
        Err(Error::DeviceMismatch { op, lhs, rhs }) => {
            assert_eq!(op, "add");
            assert!(!lhs.is_empty() && !rhs.is_empty() && lhs != rhs, "{lhs:?} vs {rhs:?}");
        }
        other => panic!("add across devices: {other:?}"),
    }
    assert_eq!(values(&a).await?, input(0, 4));
    assert_eq!(values(&b).await?, input(1, 4));
    Ok(())
}

/// What every rank gets from `op` over `ins`, element by element.
fn reduced(ins: &[Vec<f64>], op: ReduceOp) -> Vec<f64> {
    let n = ins.len() as f64;
    (0..ins[0].len())
        .map(|i| {
            let col = ins.iter().map(|v| v[i]);
            match op {
                ReduceOp::Sum => col.sum(),
                ReduceOp::Prod => col.product(),
                ReduceOp::Max => col.fold(f64::MIN, f64::max),
                ReduceOp::Min => col.fold(f64::MAX, f64::min),
                ReduceOp::Avg => col.sum::<f64>() / n,
            }
        })
        .collect()
}

async fn collectives_match_their_definitions(dev: &Device) -> Result<()> {
    let devs = peers(dev).await?;
    let n = devs.len();
    let group = Group::new(&devs)?;
    let (rows, cols) = (2 * n, 3);
    let ins: Vec<Vec<f64>> = (0..n).map(|r| input(r, rows * cols)).collect();
    for dtype in dtypes(dev) {
        let xs = devs.iter().zip(&ins).map(|(d, v)| tensor(v, &[rows, cols], dtype, d)).collect::<Result<Vec<_>>>()?;
        let what = |c: &str| format!("{c} {dtype} over {n} ranks ({})", group.describe());
        let mut ops = vec![ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min];
        if dtype.is_float() {
            ops.push(ReduceOp::Avg);
        }
        for op in ops {
            let want = reduced(&ins, op);
            let tol = if op == ReduceOp::Avg { crate::Tol::of(dtype).times(n as f64) } else { crate::Tol::EXACT };
            for (r, got) in group.all_reduce_async(&xs, op).await?.iter().enumerate() {
                assert_eq!(got.shape().dims(), [rows, cols]);
                assert!(got.device().same_device(&devs[r]));
                let want = tensor(&want, &[rows, cols], DType::F64, &crate::cpu())?;
                crate::assert_close(
                    &got.to_device_async(&crate::cpu()).await?.to_dtype(DType::F64)?,
                    &want,
                    tol,
                    &what(&format!("all_reduce {op:?} rank {r}")),
                )
                .await?;
            }
            let part = rows / n * cols;
            for (r, got) in group.reduce_scatter_async(&xs, op).await?.iter().enumerate() {
                assert_eq!(got.shape().dims(), [rows / n, cols]);
                let want = tensor(&want[r * part..(r + 1) * part], &[rows / n, cols], DType::F64, &crate::cpu())?;
                let label = what(&format!("reduce_scatter {op:?} rank {r}"));
                let got = got.to_device_async(&crate::cpu()).await?.to_dtype(DType::F64)?;
                crate::assert_close(&got, &want, tol, &label).await?;
            }
        }
        let gathered: Vec<f64> = ins.concat();
        for (r, got) in group.all_gather_async(&xs).await?.iter().enumerate() {
            assert_eq!(got.shape().dims(), [rows * n, cols]);
            assert_eq!(values(got).await?, gathered, "{} rank {r}", what("all_gather"));
        }
        let root = n - 1;
        for (r, got) in group.broadcast_async(&xs, root).await?.iter().enumerate() {
            assert_eq!(values(got).await?, ins[root], "{} rank {r}", what("broadcast"));
        }
        let moved = group.send_recv_async(&xs[0], 0, root).await?;
        assert!(moved.device().same_device(&devs[root]));
        assert_eq!(values(&moved).await?, ins[0], "{}", what("send_recv"));
        for (x, v) in xs.iter().zip(&ins) {
            assert_eq!(&values(x).await?, v, "{}: an input after the collectives", what("every"));
        }
    }
    Ok(())
}

async fn collectives_refuse_bad_input_and_keep_it(dev: &Device) -> Result<()> {
    // The checks come before any engine: a host group of the device twice meets them all.
    let group = Group::via_host(&[dev.clone(), dev.clone()])?;
    let x = |r, shape: &[usize], dtype| tensor(&input(r, shape.iter().product()), shape, dtype, dev);
    let (a, b) = (x(0, &[4, 3], DType::F32)?, x(1, &[4, 3], DType::F32)?);
    let wrong = |e: Result<Vec<Tensor>>, what: &str| match e {
        Err(Error::InvalidParam { .. } | Error::ShapeMismatch { .. } | Error::DTypeMismatch { .. }) => {}
        Err(Error::WrongDType { .. } | Error::Rank { .. } | Error::DeviceMismatch { .. }) => {}
        other => panic!("{what}: {other:?}"),
    };
    wrong(group.all_reduce_async(std::slice::from_ref(&a), ReduceOp::Sum).await, "one tensor for two ranks");
    wrong(group.all_reduce_async(&[a.clone(), x(1, &[3, 4], DType::F32)?], ReduceOp::Sum).await, "two shapes");
    wrong(group.all_gather_async(&[a.clone(), x(1, &[4, 3], DType::F16)?]).await, "two dtypes");
    let (u, v) = (x(0, &[4], DType::U8)?, x(1, &[4], DType::U8)?);
    wrong(group.all_reduce_async(&[u, v], ReduceOp::Avg).await, "avg of u8");
    let odd = [x(0, &[3, 2], DType::F32)?, x(1, &[3, 2], DType::F32)?];
    wrong(group.reduce_scatter_async(&odd, ReduceOp::Sum).await, "3 rows over 2 ranks");
    let scalars = [Tensor::from_vec(vec![1f32], (), dev)?, Tensor::from_vec(vec![2f32], (), dev)?];
    wrong(group.all_gather_async(&scalars).await, "gathering scalars");
    wrong(group.broadcast_async(&[a.clone(), b.clone()], 2).await, "root 2 of 2");
    let second = other(dev).await?;
    if !second.same_device(dev) {
        let elsewhere = tensor(&input(1, 12), &[4, 3], DType::F32, &second)?;
        wrong(group.all_reduce_async(&[a.clone(), elsewhere], ReduceOp::Sum).await, "a tensor on another device");
    }
    assert!(matches!(Group::new(&[]), Err(Error::InvalidParam { .. })));
    if matches!(dev.kind(), BackendKind::Cpu | BackendKind::Wgpu) {
        assert!(matches!(Group::join(dev, &UniqueId([0; 128]), 2, 0), Err(Error::InvalidParam { .. })));
        assert!(UniqueId::new(dev.kind()).is_err());
    }
    if matches!(dev.kind(), BackendKind::Cuda | BackendKind::Rocm) {
        // One rank per GPU: the same GPU twice is refused.
        assert!(matches!(Group::new(&[dev.clone(), dev.clone()]), Err(Error::InvalidParam { .. })));
    }
    assert_eq!(values(&a).await?, input(0, 12));
    assert_eq!(values(&b).await?, input(1, 12));
    Ok(())
}

#[cfg(not(target_family = "wasm"))]
fn devices_open_by_ordinal_and_a_missing_one_says_so() -> Result<()> {
    let listed = Device::list();
    // The reason names the ordinal, unless the backend has no device here at all (then it says
    // why there is none: no driver, no GPU).
    let missing = |r: Result<Device>, kind: BackendKind| match r {
        Err(Error::BackendUnavailable { reason, .. }) => {
            let none_here = listed.iter().all(|e| e.kind != kind);
            assert!(reason.contains("999") || none_here, "{kind} 999: {reason}");
        }
        other => panic!("{kind} 999: {other:?}"),
    };
    missing(Device::cuda(999), BackendKind::Cuda);
    missing(Device::rocm(999), BackendKind::Rocm);
    missing(Device::wgpu_adapter(999, None), BackendKind::Wgpu);
    for kind in [BackendKind::Cuda, BackendKind::Rocm, BackendKind::Wgpu] {
        let of_kind: Vec<_> = listed.iter().filter(|e| e.kind == kind).collect();
        for (i, e) in of_kind.iter().enumerate() {
            assert_eq!(e.ordinal, i, "{e}");
        }
        // The first device of each kind listed opens by its ordinal, as that kind.
        let Some(first) = of_kind.first() else { continue };
        let dev = match kind {
            BackendKind::Cuda => Device::cuda(first.ordinal),
            BackendKind::Rocm => Device::rocm(first.ordinal),
            _ => Device::wgpu_adapter(first.ordinal, None),
        };
        // A listed device a backend cannot run (an old GPU, a GL adapter) says why.
        let Ok(dev) = dev else { continue };
        assert_eq!(dev.kind(), kind, "{first}");
        let name = first.name.split(" (").next().unwrap_or_default();
        assert!(dev.describe().contains(name), "{first} opened as {}", dev.describe());
    }
    Ok(())
}

/// Ranks in several threads join one group with a unique id, as processes do; needs two GPUs of
/// one native backend.
#[cfg(not(target_family = "wasm"))]
fn ranks_of_several_threads_join_one_group() -> Result<()> {
    let listed = Device::list();
    let Some(kind) = [BackendKind::Cuda, BackendKind::Rocm]
        .into_iter()
        .find(|&k| listed.iter().filter(|e| e.kind == k).count() >= 2)
    else {
        crate::harness::skip("fewer than two GPUs of one native backend here");
    };
    let id = UniqueId::new(kind)?;
    let n = listed.iter().filter(|e| e.kind == kind).count();
    let len = 1000;
    let ranks: Vec<_> = (0..n)
        .map(|rank| {
            std::thread::spawn(move || -> Result<(Vec<f64>, Vec<f64>)> {
                let dev = if kind == BackendKind::Cuda { Device::cuda(rank)? } else { Device::rocm(rank)? };
                let group = Group::join(&dev, &id, n, rank)?;
                assert_eq!((group.size(), group.ranks()), (n, &[rank][..]));
                let x = tensor(&input(rank, len), &[len], DType::F32, &dev)?;
                let sum = group.all_reduce(std::slice::from_ref(&x), ReduceOp::Sum)?.remove(0);
                // A ring: each rank sends to the next and receives from the one before.
                let (next, prev) = ((rank + 1) % n, (rank + n - 1) % n);
                let got = if rank % 2 == 0 {
                    group.send(&x, next)?;
                    group.recv(prev, [len], DType::F32)?
                } else {
                    let got = group.recv(prev, [len], DType::F32)?;
                    group.send(&x, next)?;
                    got
                };
                Ok((pollster::block_on(values(&sum))?, pollster::block_on(values(&got))?))
            })
        })
        .collect();
    let ins: Vec<Vec<f64>> = (0..n).map(|r| input(r, len)).collect();
    for (rank, h) in ranks.into_iter().enumerate() {
        let (sum, got) =
            h.join().map_err(|_| Error::InvalidParam { op: "join", msg: format!("rank {rank} panicked") })??;
        assert_eq!(sum, reduced(&ins, ReduceOp::Sum), "all_reduce on rank {rank}");
        assert_eq!(got, ins[(rank + n - 1) % n], "recv on rank {rank}");
    }
    Ok(())
}
