//! The wgpu runtime itself: buffer pool accounting, the binding limit, an adapter without the
//! optional features, and errors as values. Each test opens its own device (so pool figures
//! are its own); without an adapter they are ignored, unless `RWO_REQUIRE` names wgpu.

use crate::selfcheck;
use rocm_wgpu_ops::spec::Family;
use rocm_wgpu_ops::wgpu::{POOL_SLACK, Tune};
use rocm_wgpu_ops::{BackendKind, DType, Device, Error, Result, Tensor};
use std::time::Duration;

crate::tests!(
    repeated_ops_of_one_size_allocate_nothing,
    an_upload_waits_for_the_recorded_work_that_read_its_buffer,
    work_handed_to_the_submitting_thread_runs_before_a_later_upload,
    pipelines_held_stay_within_their_bound,
    pool_holds_at_most_one_and_a_half_times_the_peak_live_bytes,
    tensors_past_the_binding_limit_are_stored_in_parts,
    an_adapter_without_optional_features_passes_the_selfcheck,
    tensors_of_two_devices_do_not_mix,
    kernels_are_bounds_checked_by_default,
);

/// A fresh wgpu device with `features`; the test is ignored where there is no adapter.
fn fresh(features: Option<&str>) -> Device {
    match Device::wgpu(None, features) {
        Ok(d) => d,
        Err(e) if crate::required_kinds().contains(&BackendKind::Wgpu) => panic!("RWO_REQUIRE names wgpu: {e}"),
        Err(e) => crate::harness::skip(format!("no wgpu adapter: {e}")),
    }
}

fn repeated_ops_of_one_size_allocate_nothing() -> Result<()> {
    let dev = fresh(None);
    let a = Tensor::rand(-1.0, 1.0, [256, 1024], DType::F32, &dev)?;
    let b = Tensor::rand(-1.0, 1.0, [1024], DType::F32, &dev)?;
    for _ in 0..3 {
        a.add(&b)?.exp()?;
    }
    dev.synchronize()?;
    let stats = |d: &Device| d.memory_stats().expect("a wgpu device has a pool");
    let before = stats(&dev);
    for _ in 0..100 {
        a.add(&b)?.exp()?;
    }
    dev.synchronize()?;
    let after = stats(&dev);
    assert_eq!(after.created, before.created, "buffers created by 100 repeated ops: {before:?} -> {after:?}");
    assert_eq!(after.held, before.held);
    Ok(())
}

/// A small upload is copied in order with the work recorded before it (no submit): a tensor
/// dropped after a recorded op read it gives its buffer back to the pool, the next upload of its
/// size takes that buffer, and the op still reads the old values.
fn an_upload_waits_for_the_recorded_work_that_read_its_buffer() -> Result<()> {
    let dev = fresh(None);
    let n = 4096;
    let mut created = vec![];
    for round in 0..8 {
        let a = Tensor::from_vec(vec![round as f32; n], [n], &dev)?;
        let sum_a = a.sum([0])?;
        drop(a);
        let b = Tensor::from_vec(vec![-1f32; n], [n], &dev)?;
        let sum_b = b.sum([0])?;
        assert_eq!(sum_a.to_vec::<f32>()?, [(round * n) as f32], "round {round}: the sum recorded before the upload");
        assert_eq!(sum_b.to_vec::<f32>()?, [-(n as f32)], "round {round}: the uploaded tensor's sum");
        created.push(dev.memory_stats().expect("a wgpu device has a pool").created);
    }
    // From the second round on, every upload took a buffer an earlier tensor gave back.
    assert!(created.windows(2).skip(1).all(|w| w[0] == w[1]), "buffers created after each round: {created:?}");
    Ok(())
}

/// A device holding at most 4 pipelines in memory runs 10 kernels of different unary ops twice
/// over, each time equal to the cpu, and says it holds at most 4 (`Device::info`).
fn pipelines_held_stay_within_their_bound() -> Result<()> {
    use rocm_wgpu_ops::spec::elementwise::UnaryOp::*;
    let dev = match Device::wgpu_tuned(None, None, Tune { max_pipelines: Some(4), ..Tune::default() }) {
        Ok(d) => d,
        Err(e) if crate::required_kinds().contains(&BackendKind::Wgpu) => panic!("RWO_REQUIRE names wgpu: {e}"),
        Err(e) => crate::harness::skip(format!("no wgpu adapter: {e}")),
    };
    let held = |d: &Device| -> usize {
        let cache = d.info().into_iter().find(|(k, _)| *k == "pipeline cache").expect("wgpu says its pipelines").1;
        cache.split_whitespace().next().and_then(|n| n.parse().ok()).expect("a count first")
    };
    let values = vec![0.25f32, 0.5, 1.5, 2.0];
    let (x, on_cpu) = (Tensor::from_vec(values.clone(), [4], &dev)?, Tensor::from_vec(values, [4], &Device::cpu())?);
    for round in 0..2 {
        for op in [Exp, Log, Sin, Cos, Tanh, Sqrt, Sigmoid, Erf, Floor, Recip] {
            let (got, want) = (x.unary(op)?.to_vec::<f32>()?, on_cpu.unary(op)?.to_vec::<f32>()?);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() <= 1e-6 * w.abs().max(1.0), "round {round} {op:?}: {got:?}, cpu {want:?}");
            }
            assert!(held(&dev) <= 4, "round {round} {op:?}: {} pipelines held", held(&dev));
        }
    }
    Ok(())
}

/// A batch handed to the submitting thread reaches the queue before an upload made after it:
/// here the thread waits 20 ms before each batch, so an upload written to its (recycled) buffer
/// without waiting for the thread would run before the work handed over that read the buffer.
fn work_handed_to_the_submitting_thread_runs_before_a_later_upload() -> Result<()> {
    let tune = Tune { submit_thread: Some(true), submit_delay: Some(Duration::from_millis(20)), ..Tune::default() };
    let dev = match Device::wgpu_tuned(None, None, tune) {
        Ok(d) => d,
        Err(e) if crate::required_kinds().contains(&BackendKind::Wgpu) => panic!("RWO_REQUIRE names wgpu: {e}"),
        Err(e) => crate::harness::skip(format!("no wgpu adapter: {e}")),
    };
    // 128 KiB: more than a quarter of a batch's arena, so the upload writes its buffer directly.
    let n = 1 << 15;
    let mut created = vec![];
    for round in 0..4 {
        let a = Tensor::from_vec(vec![round as f32 + 1.0; n], [n], &dev)?;
        let sum_a = a.sum([0])?;
        drop(a);
        // A dispatch 200 us after the batch opened hands the batch (with the sum) over.
        std::thread::sleep(Duration::from_millis(1));
        let _handed = Tensor::rand(0.0, 1.0, [16], DType::F32, &dev)?;
        let b = Tensor::from_vec(vec![-1f32; n], [n], &dev)?;
        let sum_b = b.sum([0])?;
        assert_eq!(sum_a.to_vec::<f32>()?, [((round + 1) * n) as f32], "round {round}: the sum handed over");
        assert_eq!(sum_b.to_vec::<f32>()?, [-(n as f32)], "round {round}: the uploaded tensor's sum");
        created.push(dev.memory_stats().expect("a wgpu device has a pool").created);
    }
    // From the second round on, the upload took the buffer of the tensor the handed sum read.
    assert!(created.windows(2).skip(1).all(|w| w[0] == w[1]), "buffers created after each round: {created:?}");
    Ok(())
}

fn pool_holds_at_most_one_and_a_half_times_the_peak_live_bytes() -> Result<()> {
    let dev = fresh(None);
    let mut live: Vec<Tensor> = vec![];
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut peak_ratio = 0f64;
    for step in 0..3000 {
        if live.len() < 12 && (next() % 3 != 0 || live.is_empty()) {
            // 1 KiB to 16 MiB: tensors below 1 KiB round up to the 256-byte minimum bucket.
            let elems = 256usize << (next() % 13) as usize;
            let elems = elems + (next() as usize % elems);
            live.push(Tensor::zeros([elems], DType::F32, &dev)?);
        } else {
            let i = next() as usize % live.len();
            live.swap_remove(i);
        }
        let s = dev.memory_stats().expect("a wgpu device has a pool");
        let live_bytes: u64 = live.iter().map(|t| t.elem_count() as u64 * 4).sum();
        assert_eq!(s.live, live_bytes, "step {step}: the pool's live bytes are the tensors' bytes");
        assert!(s.held as f64 <= 1.5 * s.peak_live as f64 + POOL_SLACK as f64, "step {step}: {s:?}");
        peak_ratio = peak_ratio.max(s.held as f64 / (s.peak_live as f64 + POOL_SLACK as f64));
    }
    let s = dev.memory_stats().expect("a wgpu device has a pool");
    assert!(s.peak_held as f64 <= 1.5 * s.peak_live as f64 + POOL_SLACK as f64, "{s:?}");
    assert!(s.created < 3000, "the pool reused buffers: {} created", s.created);
    assert!(peak_ratio > 0.0);
    Ok(())
}

/// At the adapter's own binding limit (lavapipe: 128 MiB), a tensor one row past it is stored in
/// parts: zeros read back across the cut, and an embedding table's rows and its product with a
/// matrix (the two ops a model's vocabulary takes) match values computed here. Small limits and
/// every op that splits: `tests/suite/parts.rs`.
fn tensors_past_the_binding_limit_are_stored_in_parts() -> Result<()> {
    let dev = fresh(None);
    let info = dev.info();
    let limit: u64 = info
        .iter()
        .find(|(k, _)| *k == "max storage binding")
        .and_then(|(_, v)| v.split(' ').next()?.parse().ok())
        .expect("info names the binding limit in bytes");
    let elems = (limit / 4 + 1) as usize;
    let zeros = Tensor::zeros([elems], DType::F32, &dev)?;
    assert_eq!(zeros.narrow(0, elems - 6, 6)?.to_vec::<f32>()?, [0.0; 6]);
    // Rows of 1024 f32 (4 KiB), one more than fit one buffer; entry (r, c) is (7r + c) mod 13,
    // and x's entries are small integers: every product and sum below is exact in f32.
    let (rows, width) = ((limit / 4096 + 1) as usize, 1024);
    let value = |r: usize, c: usize| ((7 * r + c) % 13) as f32;
    let host: Vec<f32> = (0..rows * width).map(|i| value(i / width, i % width)).collect();
    let table = Tensor::from_vec(host, [rows, width], &dev)?;
    let picks = [0u32, rows as u32 - 1, rows as u32 / 2, 1];
    let got = table.index_select(&Tensor::from_vec(picks.to_vec(), [4], &dev)?, 0)?.to_vec2::<f32>()?;
    for (row, &r) in got.iter().zip(&picks) {
        assert!(row.iter().enumerate().all(|(c, &v)| v == value(r as usize, c)), "row {r}");
    }
    let x = |k: usize, c: usize| ((k + 3 * c) % 5) as f32 - 2.0;
    let xs: Vec<f32> = (0..2 * width).map(|i| x(i / width, i % width)).collect();
    let logits = Tensor::from_vec(xs, [2, width], &dev)?.matmul(&table.t()?)?.to_vec2::<f32>()?;
    for (k, line) in logits.iter().enumerate() {
        for r in [0, 1, rows / 2, rows - 2, rows - 1] {
            let want: f32 = (0..width).map(|c| x(k, c) * value(r, c)).sum();
            assert_eq!(line[r], want, "logit ({k}, {r})");
        }
    }
    Ok(())
}

fn an_adapter_without_optional_features_passes_the_selfcheck() -> Result<()> {
    let dev = fresh(Some("none"));
    let features = dev.info().into_iter().find(|(k, _)| *k == "features").map(|(_, v)| v);
    assert_eq!(features.as_deref(), Some("none"));
    let mut unsupported = 0;
    for report in selfcheck::run(&dev) {
        assert!(report.failures.is_empty(), "{}: {:?}", report.family, report.failures);
        for u in &report.unsupported {
            assert!(u.contains("f64"), "{}: only f64 may be unsupported: {u}", report.family);
        }
        unsupported += report.unsupported.len();
        if report.family == Family::Elementwise {
            assert!(!report.unsupported.is_empty(), "f64 elementwise checks are declined");
        }
    }
    assert!(unsupported > 0);
    // f64 arithmetic needs SHADER_F64; moving f64 bytes does not.
    let z = Tensor::zeros([2], DType::F64, &dev)?;
    assert_eq!(z.to_vec::<f64>()?, vec![0.0, 0.0]);
    let err = z.exp().unwrap_err();
    assert!(matches!(err, Error::UnsupportedDType { backend: BackendKind::Wgpu, dtype: DType::F64, .. }), "{err:?}");
    assert!(err.to_string().contains("SHADER_F64"), "{err}");
    Ok(())
}

fn tensors_of_two_devices_do_not_mix() -> Result<()> {
    let (d1, d2) = (fresh(None), fresh(None));
    let a = Tensor::ones([3], DType::F32, &d1)?;
    let b = Tensor::ones([3], DType::F32, &d2)?;
    let err = a.add(&b).unwrap_err();
    assert!(matches!(err, Error::DeviceMismatch { op: "add", .. }), "{err:?}");
    // Each device by its name (not how it was chosen), the second said to be another.
    let name = d1.info().into_iter().next().map(|(_, v)| v).unwrap_or_default();
    let text = err.to_string();
    assert!(text.starts_with("add: operands on different devices: wgpu: "), "{text}");
    assert!(text.ends_with(" (another device of that name) (Tensor::to_device moves one)"), "{text}");
    assert!(text.contains(name.split(" (").next().unwrap_or_default()) && text.len() < 250, "{text}");
    let cpu = Tensor::ones([3], DType::F32, &Device::cpu())?;
    let err = a.mul(&cpu).unwrap_err();
    assert!(matches!(err, Error::DeviceMismatch { op: "mul", .. }), "{err:?}");
    assert!(err.to_string().contains(" vs cpu: reference backend (Tensor::to_device"), "{err}");
    assert_eq!(a.add(&b.to_device(&d1)?)?.to_vec::<f32>()?, vec![2.0; 3]);
    Ok(())
}

/// wgpu's injected bounds checks are on (but for the families measured faster without them)
/// unless `RWO_WGPU_BOUNDS_CHECKS` asks otherwise.
fn kernels_are_bounds_checked_by_default() -> Result<()> {
    let dev = fresh(None);
    let want = match std::env::var("RWO_WGPU_BOUNDS_CHECKS").as_deref() {
        Ok("0") => "off (RWO_WGPU_BOUNDS_CHECKS=0)",
        Ok("1") => "on for every kernel (RWO_WGPU_BOUNDS_CHECKS=1)",
        _ => "on, except matmul, conv, attention, quant (measured faster without)",
    };
    let got = dev.info().into_iter().find(|(k, _)| *k == "bounds checks").map(|(_, v)| v);
    assert_eq!(got.as_deref(), Some(want));
    Ok(())
}
