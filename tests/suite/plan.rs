//! Replay (`Device::capture`, `Plan::run`): a plan gives the bits of the ops it recorded, run
//! on each run's inputs; it reads and writes outside tensors again at each run and keeps them
//! alive; what it cannot record or replay is an error that leaves the device usable; a bad id
//! in a replayed step reaches that run's outputs only; its inputs are never written.

use crate::{float_dtypes, rand_tensor, suite};
use rocm_wgpu_ops::{BackendKind, DType, Device, Error, Result, Tensor};

suite!(
    a_plan_gives_the_bits_of_the_ops_it_recorded,
    a_plan_reads_and_writes_outside_tensors_at_each_run,
    a_plan_writes_where_its_inputs_say,
    a_plan_never_writes_its_inputs,
    a_plan_refuses_what_it_cannot_record_or_replay,
    a_bad_id_in_a_replayed_step_reaches_that_runs_outputs,
    #[cfg(not(target_family = "wasm"))]
    another_threads_work_is_not_recorded,
    #[cfg(not(target_family = "wasm"))]
    a_capture_survives_another_handle_opened_and_dropped
);

/// A model-like step: a product, a broadcast bias, GELU and a residual (fused where the device
/// fuses), a softmax, rows picked by ids, a constant made inside the step; two outputs.
fn step(x: &Tensor, w: &Tensor, b: &Tensor, ids: &Tensor) -> Result<Vec<Tensor>> {
    let h = x.matmul(w)?.broadcast_add(b)?.gelu()?;
    let h = (h.narrow(1, 0, 16)? + x)?.affine(0.5, 0.25)?;
    let p = h.softmax(1)?.index_select(ids, 0)?;
    let scale = Tensor::from_vec((0..16).map(|i| 1.0 + i as f32 / 8.0).collect(), [16], x.device())?;
    let p = p.broadcast_mul(&scale.to_dtype(x.dtype())?)?;
    Ok(vec![p.clone(), p.sum_keepdim(1)?.sqr()?])
}

async fn bytes(t: &Tensor) -> Result<Vec<u8>> {
    Ok(t.to_cpu_storage_async().await?.as_bytes().to_vec())
}

async fn a_plan_gives_the_bits_of_the_ops_it_recorded(dev: &Device) -> Result<()> {
    for dtype in float_dtypes(dev).into_iter().filter(|d| [DType::F32, DType::F16].contains(d)) {
        let xs: Vec<Tensor> =
            (0..3).map(|s| rand_tensor(dev, dtype, &[5, 16], 10 + s, -1.0, 1.0)).collect::<Result<_>>()?;
        let b = rand_tensor(dev, dtype, &[24], 3, -0.5, 0.5)?;
        let ids = Tensor::from_vec(vec![4u32, 0, 2, 2], [4], dev)?;
        let mut plan = {
            // The plan keeps what the step reads alive: these handles go before it runs.
            let w = rand_tensor(dev, dtype, &[16, 24], 2, -0.5, 0.5)?;
            let (w2, b2, ids2) = (w.clone(), b.clone(), ids.clone());
            dev.capture(&[&xs[0]], move |x| step(&x[0], &w2, &b2, &ids2))?
        };
        let w = rand_tensor(dev, dtype, &[16, 24], 2, -0.5, 0.5)?;
        // Buffers freed and made again around the runs must not land in the plan's.
        let mut runs = vec![];
        for x in xs.iter().chain([&xs[1]]) {
            let noise: Vec<Tensor> =
                (0..8).map(|s| rand_tensor(dev, dtype, &[5, 24], 90 + s, 5.0, 9.0)).collect::<Result<_>>()?;
            runs.push(plan.run(&[x])?);
            drop(noise);
            let _ = rand_tensor(dev, dtype, &[4, 16], 99, 7.0, 8.0)?.exp()?;
        }
        // Checked after every run: a later run leaves earlier outputs as they were.
        for (i, (got, x)) in runs.iter().zip(xs.iter().chain([&xs[1]])).enumerate() {
            let want = step(x, &w, &b, &ids)?;
            assert_eq!(got.len(), 2);
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.shape(), w.shape());
                assert_eq!(
                    bytes(g).await?,
                    bytes(w).await?,
                    "{dtype} run {i} on {}: replay and the ops differ",
                    dev.kind()
                );
            }
        }
        // The runs really differ (the plan read each run's input).
        assert_ne!(bytes(&runs[0][0]).await?, bytes(&runs[1][0]).await?);
    }
    Ok(())
}

async fn a_plan_reads_and_writes_outside_tensors_at_each_run(dev: &Device) -> Result<()> {
    let cache = Tensor::zeros([4, 3], DType::F32, dev)?;
    let c = cache.clone();
    // Each run writes its input into row 1 and returns the column sums of the whole cache.
    let mut plan = dev.capture(&[&Tensor::zeros([1, 3], DType::F32, dev)?], move |x| {
        c.slice_set(&x[0], 0, 1)?;
        Ok(vec![c.sum_keepdim(0)?])
    })?;
    let x = Tensor::from_vec(vec![1f32, 2., 3.], [1, 3], dev)?;
    let y1 = plan.run(&[&x])?.remove(0);
    // Written outside between runs: the next run reads it.
    cache.slice_set(&Tensor::from_vec(vec![10f32, 20., 30.], [1, 3], dev)?, 0, 3)?;
    let x2 =
        Tensor::from_vec(vec![-1f32, 0.5, 4.], [1, 3], dev)?.broadcast_mul(&Tensor::ones([1], DType::F32, dev)?)?;
    let y2 = plan.run(&[&x2.t()?.t()?])?.remove(0);
    assert_eq!(y1.to_vec2_async::<f32>().await?, [[1., 2., 3.]]);
    assert_eq!(y2.to_vec2_async::<f32>().await?, [[9., 20.5, 34.]]);
    assert_eq!(cache.to_vec2_async::<f32>().await?, [[0., 0., 0.], [-1., 0.5, 4.], [0., 0., 0.], [10., 20., 30.]]);
    Ok(())
}

/// A decode step's cache write: a row written in place (`scatter_set`) at a position that is
/// the run's input, the next position an output fed to the next run: one plan, every position.
async fn a_plan_writes_where_its_inputs_say(dev: &Device) -> Result<()> {
    let cache = Tensor::zeros([4, 3], DType::F32, dev)?;
    let c = cache.clone();
    let row = |v: [f32; 3]| Tensor::from_vec(v.to_vec(), [1, 3], dev);
    let mut at = Tensor::from_vec(vec![0u32], [1], dev)?;
    let mut plan = dev.capture(&[&row([1., 2., 3.])?, &at], move |x| {
        c.scatter_set(&x[1].reshape([1, 1])?.broadcast_as([1, 3])?, &x[0], 0)?;
        Ok(vec![c.sum_keepdim(0)?, x[1].add(1u32)?])
    })?;
    let mut sums = vec![];
    for v in [[1f32, 2., 3.], [10., 20., 30.], [-4., 0.5, 8.]] {
        let [sum, next] = <[Tensor; 2]>::try_from(plan.run(&[&row(v)?, &at])?).expect("two outputs");
        sums.push(sum.to_vec2_async::<f32>().await?);
        at = next;
    }
    assert_eq!(sums, [vec![[1f32, 2., 3.]], vec![[11., 22., 33.]], vec![[7., 22.5, 41.]]], "on {}", dev.kind());
    assert_eq!(at.to_vec_async::<u32>().await?, [3]);
    let rows = cache.to_vec2_async::<f32>().await?;
    assert_eq!(rows, [[1f32, 2., 3.], [10., 20., 30.], [-4., 0.5, 8.], [0., 0., 0.]], "on {}", dev.kind());
    Ok(())
}

/// A plan's inputs are read, never written: a closure writing in place into its input writes
/// a copy, on every backend (the cpu's plan once wrote the caller's tensor, and refused a
/// broadcast one where the GPUs' wrote their placeholder: the replay fuzz test's find).
async fn a_plan_never_writes_its_inputs(dev: &Device) -> Result<()> {
    let x = Tensor::from_vec(vec![1f32, 2., 3., 4.], [2, 2], dev)?;
    let mut plan = dev.capture(&[&x], |xs| {
        xs[0].slice_set(&Tensor::zeros([1, 2], DType::F32, xs[0].device())?, 0, 0)?;
        Ok(vec![xs[0].sum_all()?.reshape([1])?])
    })?;
    let y = Tensor::from_vec(vec![5f32, 6., 7., 8.], [2, 2], dev)?;
    let row = Tensor::from_vec(vec![9f32, 10.], [1, 2], dev)?.broadcast_as([2, 2])?;
    for (input, want) in [(&y, 15f32), (&row, 19.)] {
        let before = input.to_vec2_async::<f32>().await?;
        let sum = plan.run(&[input])?.remove(0).to_vec_async::<f32>().await?;
        assert_eq!(sum, [want], "row 0 zeroed, on {}", dev.kind());
        assert_eq!(input.to_vec2_async::<f32>().await?, before, "the input as it was, on {}", dev.kind());
    }
    Ok(())
}

async fn a_plan_refuses_what_it_cannot_record_or_replay(dev: &Device) -> Result<()> {
    let x = Tensor::from_vec(vec![1f32, 2., 3., 4.], [2, 2], dev)?;
    let capture = |e: Error| matches!(e, Error::Capture { .. });
    if dev.kind() != BackendKind::Cpu {
        // A wait inside a capture: refused, the capture abandoned, the device as before.
        let e = dev.capture(&[&x], |x| {
            let y = x[0].exp()?;
            y.to_vec2::<f32>()?;
            Ok(vec![y])
        });
        assert!(e.as_ref().is_err_and(|e| capture(e.clone())), "a readback inside a capture: {e:?}");
        let e = dev.capture(&[&x], |x| {
            dev.synchronize()?;
            Ok(vec![x[0].clone()])
        });
        assert!(e.is_err_and(capture), "a synchronize inside a capture");
        let e = dev.capture(&[&x], |x| {
            dev.capture(&[&x[0]], |x| Ok(vec![x[0].neg()?]))?;
            Ok(vec![x[0].clone()])
        });
        assert!(e.is_err_and(capture), "a capture inside a capture");
        assert_eq!(x.neg()?.to_vec2_async::<f32>().await?, [[-1., -2.], [-3., -4.]], "the device after refusals");
    }
    // The closure's own error comes back as it is.
    let e = dev.capture(&[&x], |x| Ok(vec![x[0].matmul(&Tensor::zeros([3, 3], DType::F32, dev)?)?]));
    assert!(matches!(e, Err(Error::MatmulShape { .. })), "{e:?}");
    // Runs on inputs unlike the captured ones.
    let mut plan = dev.capture(&[&x], |x| Ok(vec![x[0].sqr()?]))?;
    for bad in [
        Tensor::zeros([2, 3], DType::F32, dev)?,
        Tensor::zeros([2, 2], DType::U32, dev)?,
        Tensor::zeros([4], DType::F32, dev)?,
    ] {
        assert!(plan.run(&[&bad]).is_err_and(capture), "an input {:?} {}", bad.shape(), bad.dtype());
    }
    assert!(plan.run(&[]).is_err_and(capture), "no input");
    assert!(plan.run(&[&x, &x]).is_err_and(capture), "two inputs");
    let other = Device::cpu();
    if dev.kind() != BackendKind::Cpu {
        let on_cpu = Tensor::zeros([2, 2], DType::F32, &other)?;
        assert!(plan.run(&[&on_cpu]).is_err_and(capture), "an input on another device");
    }
    // And the plan still runs after refusing them.
    let y = plan.run(&[&x.t()?])?.remove(0);
    assert_eq!(y.to_vec2_async::<f32>().await?, [[1., 9.], [4., 16.]]);
    Ok(())
}

async fn a_bad_id_in_a_replayed_step_reaches_that_runs_outputs(dev: &Device) -> Result<()> {
    let table = Tensor::from_vec((0..12).map(|v| v as f32).collect(), [4, 3], dev)?;
    let ids = |v: Vec<u32>| Tensor::from_vec(v, [2], dev);
    let t = table.clone();
    let mut plan = dev.capture(&[&ids(vec![0, 1])?], move |i| Ok(vec![t.index_select(&i[0], 0)?.affine(2.0, 0.0)?]))?;
    let good = plan.run(&[&ids(vec![3, 1])?])?.remove(0);
    // The cpu finds the bad id while the op runs; a GPU in the replay, for the readback.
    let bad = plan.run(&[&ids(vec![2, 7])?]);
    let again = plan.run(&[&ids(vec![0, 2])?])?.remove(0);
    let e = match bad {
        Ok(mut out) => out.remove(0).to_vec2_async::<f32>().await,
        Err(e) => Err(e),
    };
    assert!(matches!(e, Err(Error::IndexOutOfRange { index: 7, size: 4, .. })), "{e:?}");
    assert_eq!(good.to_vec2_async::<f32>().await?, [[18., 20., 22.], [6., 8., 10.]]);
    assert_eq!(again.to_vec2_async::<f32>().await?, [[0., 2., 4.], [12., 14., 16.]]);
    Ok(())
}

/// Another thread's ops, readbacks and in-place writes during a capture run as usual (none is
/// recorded), and the capture's own deferred results stay in its plan.
#[cfg(not(target_family = "wasm"))]
async fn another_threads_work_is_not_recorded(dev: &Device) -> Result<()> {
    let x = Tensor::from_vec(vec![1f32, 2., 3.], [3], dev)?;
    let seen = std::sync::Mutex::new(vec![]);
    let mut plan = dev.capture(&[&x], |x| {
        // Deferred here, in the capture, while the other thread writes and reads.
        let y = x[0].affine(2.0, 1.0)?.sqr()?;
        let (z, w) = std::thread::scope(|s| {
            s.spawn(|| -> Result<(Vec<f32>, Vec<f32>)> {
                let a = Tensor::from_vec(vec![4f32, 5.], [2], dev)?;
                let b = a.neg()?;
                a.fill_(1.0)?;
                Ok((b.to_vec::<f32>()?, a.to_vec::<f32>()?))
            })
            .join()
            .expect("the other thread does not panic")
        })?;
        seen.lock().expect("not poisoned").extend(z.into_iter().chain(w));
        Ok(vec![y])
    })?;
    assert_eq!(*seen.lock().expect("not poisoned"), [-4., -5., 1., 1.]);
    let y = plan.run(&[&Tensor::from_vec(vec![0f32, -1., 0.5], [3], dev)?])?.remove(0);
    assert_eq!(y.to_vec_async::<f32>().await?, [1., 1., 4.]);
    Ok(())
}

/// Another handle on the same GPU, opened and dropped by another thread while a capture is under
/// way, leaves the plan right. (A native device's opening synchronized the whole context, and
/// its drop frees memory and destroys library handles, which wait for every stream: either
/// failed the capture on the H100 until that work waited for it.)
#[cfg(not(target_family = "wasm"))]
async fn a_capture_survives_another_handle_opened_and_dropped(dev: &Device) -> Result<()> {
    let kind = dev.kind();
    let x = rand_tensor(dev, DType::F32, &[32, 32], 5, -1.0, 1.0)?;
    let want = x.matmul(&x)?.relu()?.to_vec::<f32>()?;
    let (go, started) = std::sync::mpsc::channel();
    let (opened, seen) = std::sync::mpsc::channel();
    let product = |d: &Device| -> Result<Vec<f32>> {
        let a = Tensor::from_vec((0..64).map(|i| i as f32).collect(), [8, 8], d)?;
        a.matmul(&a)?.to_vec::<f32>()
    };
    let (ready, used) = std::sync::mpsc::channel();
    let (plan, other) = std::thread::scope(|s| {
        let other = s.spawn(move || -> Result<Vec<f32>> {
            // Used (its library handles made) before the capture, dropped during it. Making a
            // handle waits for any capture under way, and the capture below waits for this
            // thread: the product is done before it starts (`Device::capture`'s contract).
            let before = Device::new(kind)?;
            let a = product(&before);
            let _ = ready.send(());
            let a = a?;
            started.recv().expect("the capture starts");
            let during = Device::new(kind)?;
            opened.send(()).expect("the capture waits for it");
            drop(before);
            let b = product(&during)?;
            assert_eq!(a, b, "the same product on two handles");
            Ok(b)
        });
        // (Gone without a product if it failed: its error comes from the join.)
        let _ = used.recv();
        let plan = dev.capture(&[&x], |xs| {
            // (The cpu's plan runs its closure again at each run, when the other thread is gone.)
            if go.send(()).is_ok() {
                seen.recv().expect("the other thread opens a device");
            }
            let y = xs[0].matmul(&xs[0])?;
            // Time for the other thread's drop to come while the capture is under way.
            std::thread::sleep(std::time::Duration::from_millis(50));
            Ok(vec![y.relu()?])
        });
        (plan, other.join().expect("the other thread does not panic"))
    });
    let (mut plan, other) = (plan?, other?);
    let want_other: Vec<f32> = product(&Device::cpu())?;
    assert_eq!(other, want_other);
    let y = plan.run(&[&x])?.remove(0);
    assert_eq!(y.to_vec_async::<f32>().await?, want, "the plan's product, bit for bit with the op's");
    Ok(())
}
