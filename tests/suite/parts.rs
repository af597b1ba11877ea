//! Tensors past the binding limit (`src/tensor/parts.rs`): on a wgpu device whose tensor
//! buffers are held to 16 KiB (`RWO_WGPU_TUNE=max_binding=16384`), tensors of a few thousand
//! elements are stored in parts and every op that splits is compared with the cpu reference, on
//! operands in parts, on views of them and on outputs past one buffer.

use crate::{Tol, compare_with_cpu, rand_tensor};
use rocm_wgpu_ops::wgpu::Tune;
use rocm_wgpu_ops::{DType, Device, Error, IndexOp, Result, Tensor};

crate::tests!(tensors_in_parts_match_reference, ops_that_do_not_split_say_so);

/// The limit the cases run under: 4096 f32.
const LIMIT: u64 = 16384;

/// A wgpu device holding tensor buffers to [`LIMIT`] bytes, or `None` where wgpu is absent.
fn small_device() -> Result<Option<Device>> {
    if crate::wgpu_or_skip().is_none() {
        return Ok(None);
    }
    Device::wgpu_tuned(None, None, Tune { max_binding: Some(LIMIT), ..Tune::default() }).map(Some)
}

/// A case: the same tensor made on a device.
type Op = dyn Fn(&Device) -> Result<Tensor>;

/// `[300, 24]` f32, 28800 bytes: two parts of 170 rows and 130 (whole rows of 24).
fn table(d: &Device) -> Result<Tensor> {
    rand_tensor(d, DType::F32, &[300, 24], 71, -2.0, 2.0)
}

fn tensors_in_parts_match_reference() -> Result<()> {
    let Some(dev) = small_device()? else { return Ok(()) };
    let info = dev.info().into_iter().find(|(k, _)| *k == "max storage binding").map(|(_, v)| v);
    assert!(info.as_deref().is_some_and(|v| v.starts_with("16384 bytes") && v.contains("parts")), "{info:?}");
    let ids = |d: &Device, v: Vec<u32>| Tensor::from_vec(v, [7], d);
    let cases: Vec<(&str, Tol, Box<Op>)> = vec![
        ("upload and readback", Tol::EXACT, Box::new(table)),
        ("a narrow view across both parts", Tol::EXACT, Box::new(|d| table(d)?.narrow(0, 150, 40))),
        ("a transposed copy", Tol::EXACT, Box::new(|d| table(d)?.t()?.contiguous())),
        ("zeros then add", Tol::EXACT, Box::new(|d| Tensor::zeros([300, 24], DType::F32, d)?.add(&table(d)?))),
        ("exp", Tol::of(DType::F32), Box::new(|d| table(d)?.exp())),
        ("affine", Tol::of(DType::F32), Box::new(|d| table(d)?.affine(0.5, -1.0))),
        (
            "add a broadcast row",
            Tol::EXACT,
            Box::new(|d| table(d)?.add(&rand_tensor(d, DType::F32, &[24], 3, -1., 1.)?)),
        ),
        ("add two in parts", Tol::EXACT, Box::new(|d| table(d)?.add(&table(d)?.sqr()?))),
        ("cast to f16 (fits one buffer)", Tol::EXACT, Box::new(|d| table(d)?.to_dtype(DType::F16))),
        (
            "compare and where",
            Tol::EXACT,
            Box::new(|d| {
                let t = table(d)?;
                t.ge(0.0)?.where_cond(&t, &t.neg()?)
            }),
        ),
        (
            "an outer sum past one buffer",
            Tol::EXACT,
            Box::new(|d| {
                let col = rand_tensor(d, DType::F32, &[300, 1], 5, -1., 1.)?;
                col.add(&rand_tensor(d, DType::F32, &[1, 24], 6, -1., 1.)?)
            }),
        ),
        ("sum along rows", Tol::of(DType::F32), Box::new(|d| table(d)?.sum(1))),
        ("softmax of rows", Tol::of(DType::F32), Box::new(|d| table(d)?.softmax(1))),
        (
            "matmul by the transposed table (N in pieces)",
            Tol { atol: 1e-5, rtol: 1e-5 },
            Box::new(|d| rand_tensor(d, DType::F32, &[8, 24], 9, -1., 1.)?.matmul(&table(d)?.t()?)),
        ),
        (
            "matmul of the table (M in pieces)",
            Tol { atol: 1e-5, rtol: 1e-5 },
            Box::new(|d| table(d)?.matmul(&rand_tensor(d, DType::F32, &[24, 5], 10, -1., 1.)?)),
        ),
        (
            "embedding rows from both parts",
            Tol::EXACT,
            Box::new(move |d| table(d)?.index_select(&ids(d, vec![0, 169, 170, 299, 5, 250, 170])?, 0)),
        ),
        (
            "columns picked (split along rows)",
            Tol::EXACT,
            Box::new(move |d| table(d)?.index_select(&ids(d, vec![0, 23, 5, 5, 1, 2, 3])?, 1)),
        ),
        (
            "f16 rows of a table in parts",
            Tol::EXACT,
            Box::new(move |d| {
                let t = rand_tensor(d, DType::F16, &[400, 24], 12, -2.0, 2.0)?;
                t.index_select(&ids(d, vec![399, 0, 341, 342, 170, 171, 1])?, 0)
            }),
        ),
        ("the last rows as a view", Tol::of(DType::F32), Box::new(|d| table(d)?.i((290.., 3..20))?.exp())),
    ];
    pollster::block_on(async {
        for (what, tol, f) in &cases {
            compare_with_cpu(&dev, *tol, what, f).await?;
        }
        Ok::<(), Error>(())
    })?;
    // An id past the table is an error at readback, said against the whole dim.
    let bad = table(&dev)?.index_select(&ids(&dev, vec![0, 1, 2, 300, 4, 5, 6])?, 0)?;
    match bad.to_vec2::<f32>() {
        Err(Error::IndexOutOfRange { index: 300, size: 300, .. }) => {}
        other => panic!("an id past the table: {other:?}"),
    }
    Ok(())
}

/// An op that cannot split such an operand is a clear `LimitExceeded`, and leaves it intact.
fn ops_that_do_not_split_say_so() -> Result<()> {
    let Some(dev) = small_device()? else { return Ok(()) };
    let t = table(&dev)?;
    let want = t.to_vec2::<f32>()?;
    // An output past one buffer is stored in parts too.
    let wide = t.to_dtype(DType::F64)?;
    // A sum over the dim the parts split: no piece of the output keeps its operand in one part.
    let refused = [
        ("sum over rows", t.sum(0)),
        ("layer_norm", t.layer_norm(None, None, 1e-5)),
        ("layer_norm of an output in parts", wide.layer_norm(None, None, 1e-5)),
    ];
    for (what, r) in refused {
        match r {
            Err(Error::LimitExceeded { needed, limit, .. }) => assert!(needed > limit, "{what}: {needed} <= {limit}"),
            other => panic!("{what}: {other:?}"),
        }
    }
    assert_eq!(t.to_vec2::<f32>()?, want);
    Ok(())
}
