//! Errors travel with data: a failure a kernel finds in device data (an out-of-range id) belongs
//! to the output it spoiled and to everything computed from it, in every readback and every
//! thread; no other tensor ever sees it. The cpu reports such failures at once, from the op.

use crate::suite;
use rocm_wgpu_ops::spec::index::IndexOp;
use rocm_wgpu_ops::{Device, Error, Result, Tensor};

suite!(
    every_readback_of_a_spoiled_output_fails,
    tensors_derived_from_a_spoiled_output_fail,
    writes_of_a_spoiled_tensor_spoil_the_destination,
    a_spoiled_output_dropped_unread_spoils_nothing_else,
    #[cfg(not(target_family = "wasm"))]
    a_spoiled_output_handed_to_another_thread_fails_there,
    #[cfg(not(target_family = "wasm"))]
    later_threads_never_see_an_earlier_threads_failure,
    long_chains_of_flagged_ops_keep_their_failure,
    long_chains_of_flagged_writes_in_place_keep_their_failure,
);

/// `x` = 0..12 as `[3, 4]`.
fn x(dev: &Device) -> Result<Tensor> {
    Tensor::from_vec((0..12).map(|v| v as f32).collect(), [3, 4], dev)
}

/// Each index op with one id past dim 1 (size 4) of `x`, as `(op, result)`.
fn bad_ops(dev: &Device) -> Result<Vec<(IndexOp, Result<Tensor>)>> {
    let x = x(dev)?;
    let ids1 = Tensor::from_vec(vec![1u32, 42], [2], dev)?;
    let ids2 = Tensor::from_vec(vec![0u32, 3, 2, 42, 1, 0], [3, 2], dev)?;
    let src = Tensor::from_vec(vec![10f32, 20., 30., 40., 50., 60.], [3, 2], dev)?;
    Ok(vec![
        (IndexOp::IndexSelect, x.index_select(&ids1, 1)),
        (IndexOp::Gather, x.gather(&ids2, 1)),
        (IndexOp::Scatter, x.scatter(&ids2, &src, 1)),
        (IndexOp::ScatterAdd, x.scatter_add(&ids2, &src, 1)),
        (IndexOp::IndexAdd, x.index_add(&ids1, &src, 1)),
    ])
}

fn expected(op: IndexOp) -> Error {
    Error::IndexOutOfRange { op: op.name(), index: 42, size: 4 }
}

/// The spoiled output of `r` (a GPU backend), or `None` when the op failed at once (cpu), which
/// must then be the index error.
fn spoiled(op: IndexOp, r: Result<Tensor>) -> Option<Tensor> {
    match r {
        Ok(t) => Some(t),
        Err(e) => {
            assert_eq!(e, expected(op), "{op} failed at once with another error");
            None
        }
    }
}

/// `r` must be the index error of `op`.
fn fails<T: std::fmt::Debug>(op: IndexOp, r: Result<T>, what: &str) {
    match r {
        Err(e) => assert_eq!(e, expected(op), "{op}: {what}"),
        Ok(v) => panic!("{op}: {what}: expected {:?}, got Ok({v:?})", expected(op)),
    }
}

/// A good index op and its readback.
async fn good_readback(dev: &Device) -> Result<()> {
    let ids = Tensor::from_vec(vec![2u32, 0], [2], dev)?;
    assert_eq!(x(dev)?.index_select(&ids, 0)?.to_vec_async::<f32>().await?, vec![8., 9., 10., 11., 0., 1., 2., 3.]);
    Ok(())
}

async fn every_readback_of_a_spoiled_output_fails(dev: &Device) -> Result<()> {
    for (op, r) in bad_ops(dev)? {
        let Some(t) = spoiled(op, r) else { continue };
        for attempt in 0..3 {
            fails(op, t.to_vec_async::<f32>().await, &format!("readback {attempt}"));
        }
        fails(op, t.t()?.to_cpu_storage_async().await, "readback of a view");
        good_readback(dev).await?;
        fails(op, t.to_vec_async::<f32>().await, "readback after another tensor's");
    }
    dev.synchronize_async().await
}

async fn tensors_derived_from_a_spoiled_output_fail(dev: &Device) -> Result<()> {
    let other = Tensor::ones([3, 2], rocm_wgpu_ops::DType::F32, dev)?;
    for (op, r) in bad_ops(dev)? {
        let Some(t) = spoiled(op, r) else { continue };
        fails(op, t.sum_all()?.to_scalar_async::<f32>().await, "sum");
        fails(op, t.exp()?.max([0])?.to_vec_async::<f32>().await, "exp then max");
        let pair = t.narrow(1, 0, 2)?;
        fails(op, pair.add(&other)?.to_vec_async::<f32>().await, "lhs of add");
        fails(op, other.mul(&pair)?.to_vec_async::<f32>().await, "rhs of mul");
        fails(op, t.to_dtype(rocm_wgpu_ops::DType::F16)?.contiguous()?.to_vec_async::<half::f16>().await, "cast");
        fails(op, t.to_device_async(&Device::cpu()).await, "copy to the cpu");
        // A spoiled tensor used as ids spoils that op's output too, whatever its values.
        let ids = t.narrow(0, 0, 1)?.flatten_all()?.to_dtype(rocm_wgpu_ops::DType::U32)?;
        fails(op, other.index_select(&ids.clamp(0u32, 1u32)?, 1)?.to_vec_async::<f32>().await, "ids of another op");
        assert_eq!(other.sum_all()?.to_scalar_async::<f32>().await?, 6.0, "an input of those ops stays clean");
    }
    Ok(())
}

async fn writes_of_a_spoiled_tensor_spoil_the_destination(dev: &Device) -> Result<()> {
    for (op, r) in bad_ops(dev)? {
        let Some(t) = spoiled(op, r) else { continue };
        let row = t.narrow(0, 0, 1)?.narrow(1, 0, 2)?;
        let dst = Tensor::zeros([2, 2], rocm_wgpu_ops::DType::F32, dev)?;
        dst.slice_set(&row, 0, 1)?;
        fails(op, dst.to_vec_async::<f32>().await, "slice_set destination");
        let clean = Tensor::zeros([1, 2], rocm_wgpu_ops::DType::F32, dev)?;
        fails(op, Tensor::cat(&[&clean, &row], 0)?.to_vec_async::<f32>().await, "cat");
        assert_eq!(clean.to_vec_async::<f32>().await?, vec![0., 0.], "a part of cat stays clean");
        // An empty block of it: nothing is written, the failure still goes where it is written
        // (cat of such a block returned the other parts' values: the fuzz test's find).
        let none = row.narrow(0, 0, 0)?;
        let dst = Tensor::zeros([2, 2], rocm_wgpu_ops::DType::F32, dev)?;
        dst.slice_set(&none, 0, 1)?;
        fails(op, dst.to_vec_async::<f32>().await, "slice_set of an empty block");
        fails(op, Tensor::cat(&[&clean, &none], 0)?.to_vec_async::<f32>().await, "cat with an empty block");
    }
    Ok(())
}

async fn a_spoiled_output_dropped_unread_spoils_nothing_else(dev: &Device) -> Result<()> {
    for (op, r) in bad_ops(dev)? {
        drop(spoiled(op, r));
        good_readback(dev).await?;
        dev.synchronize_async().await?;
        assert_eq!(x(dev)?.sum_all()?.to_scalar_async::<f32>().await?, 66.0, "after a dropped {op}");
    }
    Ok(())
}

#[cfg(not(target_family = "wasm"))] // threads: a browser's module has one
async fn a_spoiled_output_handed_to_another_thread_fails_there(dev: &Device) -> Result<()> {
    let d = dev.clone();
    let made = std::thread::spawn(move || bad_ops(&d)).join().expect("the making thread does not panic")?;
    for (op, r) in made {
        let Some(t) = spoiled(op, r) else { continue };
        fails(op, t.to_vec_async::<f32>().await, "readback in the receiving thread");
        let t2 = t.clone();
        let r = std::thread::spawn(move || t2.sum_all()?.to_scalar::<f32>()).join().expect("no panic");
        fails(op, r, "sum in a third thread");
    }
    Ok(())
}

#[cfg(not(target_family = "wasm"))] // threads: a browser's module has one
async fn later_threads_never_see_an_earlier_threads_failure(dev: &Device) -> Result<()> {
    let d = dev.clone();
    let kept = std::thread::spawn(move || bad_ops(&d)).join().expect("the making thread does not panic")?;
    // More threads than any fixed set of per-thread slots would have.
    for i in 0..70 {
        let d = dev.clone();
        let r = std::thread::spawn(move || pollster::block_on(good_readback(&d))).join().expect("no panic");
        assert!(r.is_ok(), "thread {i}: {r:?}");
    }
    for (op, r) in kept {
        if let Some(t) = spoiled(op, r) {
            fails(op, t.to_vec_async::<f32>().await, "readback after 70 other threads");
        }
    }
    Ok(())
}

/// `steps` index_adds of a row of ones into row 0 of zeros, the one at `bad_at` with id 9.
fn chain(dev: &Device, steps: usize, bad_at: Option<usize>) -> Result<Tensor> {
    let (good, bad) = (Tensor::from_vec(vec![0u32], [1], dev)?, Tensor::from_vec(vec![9u32], [1], dev)?);
    let one = Tensor::ones([1, 2], rocm_wgpu_ops::DType::F32, dev)?;
    let mut x = Tensor::zeros([3, 2], rocm_wgpu_ops::DType::F32, dev)?;
    for i in 0..steps {
        x = x.index_add(if Some(i) == bad_at { &bad } else { &good }, &one, 0)?;
    }
    Ok(x)
}

/// A chain of `make`'s 100 flagged steps, longer than the unread flags a status holds before
/// reading them: clean, it reads back as `clean`; with a bad id at step 10, as `failure`.
async fn a_long_chain_keeps_its_failure(
    dev: &Device,
    make: fn(&Device, usize, Option<usize>) -> Result<Tensor>,
    clean: &[f32],
    failure: Error,
) -> Result<()> {
    assert_eq!(make(dev, 100, None)?.to_vec_async::<f32>().await?, clean);
    match async { make(dev, 100, Some(10))?.to_vec_async::<f32>().await }.await {
        Err(e) => assert_eq!(e, failure),
        Ok(v) => panic!("a bad id early in a long chain was lost ({failure}): {v:?}"),
    }
    Ok(())
}

async fn long_chains_of_flagged_ops_keep_their_failure(dev: &Device) -> Result<()> {
    let failure = Error::IndexOutOfRange { op: "index_add", index: 9, size: 3 };
    a_long_chain_keeps_its_failure(dev, chain, &[100., 100., 0., 0., 0., 0.], failure).await
}

/// `steps` writes in place of a row of ones by `scatter_set` into row 0 of zeros, then a row of
/// twos into row 1 (so the result shows both kinds of write landed), the write at `bad_at` with
/// id 9 instead.
fn chain_in_place(dev: &Device, steps: usize, bad_at: Option<usize>) -> Result<Tensor> {
    let ids = |row: u32| Tensor::from_vec(vec![row; 2], [1, 2], dev);
    let (good, bad) = (ids(0)?, ids(9)?);
    let (one, two) = (
        Tensor::ones([1, 2], rocm_wgpu_ops::DType::F32, dev)?,
        Tensor::full(2f32, [1, 2], rocm_wgpu_ops::DType::F32, dev)?,
    );
    let x = Tensor::zeros([3, 2], rocm_wgpu_ops::DType::F32, dev)?;
    for i in 0..steps {
        x.scatter_set(if Some(i) == bad_at { &bad } else { &good }, &one, 0)?;
    }
    x.scatter_set(&ids(1)?, &two, 0)?;
    Ok(x)
}

async fn long_chains_of_flagged_writes_in_place_keep_their_failure(dev: &Device) -> Result<()> {
    // The written tensor's flags read in the middle of the chain, the failure kept from then on.
    let failure = Error::IndexOutOfRange { op: "scatter", index: 9, size: 3 };
    a_long_chain_keeps_its_failure(dev, chain_in_place, &[1., 1., 2., 2., 0., 0.], failure).await
}
