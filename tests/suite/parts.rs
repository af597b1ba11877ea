//! Tensors past the binding limit (`src/tensor/parts.rs`): on a wgpu device whose tensor
//! buffers are held to 16 KiB (`RWO_WGPU_TUNE=max_binding=16384`), tensors of a few thousand
//! elements are stored in parts and every op that splits is compared with the cpu reference, on
//! operands in parts, on views of them and on outputs past one buffer. Natively and in both
//! browsers; only wgpu binds such a limit, so on other kinds the cases have nothing to run.

use crate::{Tol, compare_with_cpu, cpu, rand_tensor, suite};
use rocm_wgpu_ops::spec::conv::ConvParams;
use rocm_wgpu_ops::spec::elementwise::UnaryOp;
use rocm_wgpu_ops::spec::pool::Pool2dParams;
use rocm_wgpu_ops::spec::quant::GgmlType;
use rocm_wgpu_ops::spec::random::Distribution;
use rocm_wgpu_ops::wgpu::Tune;
use rocm_wgpu_ops::{BackendKind, DType, Device, Error, IndexOp, QTensor, Result, Tensor};
use std::sync::OnceLock;

suite!(tensors_in_parts_match_reference, ops_that_do_not_split_say_so);

/// The limit the cases run under: 4096 f32.
const LIMIT: u64 = 16384;

/// A wgpu device like `dev` holding tensor buffers to [`LIMIT`] bytes (opened once), or `None`
/// when `dev` is not wgpu.
async fn small_device(dev: &Device) -> Result<Option<Device>> {
    static SMALL: OnceLock<Device> = OnceLock::new();
    if dev.kind() != BackendKind::Wgpu {
        return Ok(None);
    }
    if let Some(d) = SMALL.get() {
        return Ok(Some(d.clone()));
    }
    let d = Device::wgpu_tuned_async(None, None, Tune { max_binding: Some(LIMIT), ..Tune::default() }).await?;
    Ok(Some(SMALL.get_or_init(|| d).clone()))
}

/// `[6, 3, 16, 16]` f32, 18432 bytes: images in parts, three images a part.
fn images(d: &Device) -> Result<Tensor> {
    rand_tensor(d, DType::F32, &[6, 3, 16, 16], 34, -2.0, 2.0)
}

/// A case: the same tensor made on a device.
type Op = dyn Fn(&Device) -> Result<Tensor>;

/// `[300, 24]` f32, 28800 bytes: two parts of 170 rows and 130 (whole rows of 24).
fn table(d: &Device) -> Result<Tensor> {
    rand_tensor(d, DType::F32, &[300, 24], 71, -2.0, 2.0)
}

/// `[4, 4096]` f32: each row a part of 16384 bytes.
fn rows(d: &Device) -> Result<Tensor> {
    rand_tensor(d, DType::F32, &[4, 4096], 72, -2.0, 2.0)
}

async fn tensors_in_parts_match_reference(dev: &Device) -> Result<()> {
    let Some(dev) = small_device(dev).await? else { return Ok(()) };
    // Weights quantized on the cpu, uploaded by each device (`quantize` reads back: blocking).
    let w = rand_tensor(&cpu(), DType::F32, &[300, 64], 42, -1.0, 1.0)?;
    let q8 = QTensor::quantize_async(&w, GgmlType::Q8_0).await?.to_bytes_async().await?;
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
            "embedding rows of a view whose ranges are uneven, i64 ids",
            Tol::EXACT,
            Box::new(move |d| {
                let picked = Tensor::from_vec(vec![0i64, 69, 70, 199, 5, 150, 70], [7], d)?;
                table(d)?.narrow(0, 100, 200)?.index_select(&picked, 0)
            }),
        ),
        (
            "embedding rows of a column view (rows of words), ids a strided view",
            Tol::EXACT,
            Box::new(move |d| {
                let picked = Tensor::from_vec((0..14u32).map(|i| i * 21 % 300).collect(), [7, 2], d)?;
                table(d)?.narrow(1, 3, 10)?.index_select(&picked.narrow(1, 1, 1)?.squeeze(1)?, 0)
            }),
        ),
        (
            "embedding rows from more parts than one kernel binds",
            Tol::EXACT,
            Box::new(move |d| {
                let t = rand_tensor(d, DType::F32, &[3000, 24], 13, -2.0, 2.0)?;
                t.index_select(&ids(d, vec![2999, 0, 1700, 1699, 170, 169, 2500])?, 0)
            }),
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
        (
            "cat past one buffer",
            Tol::EXACT,
            Box::new(|d| {
                let t = table(d)?;
                Tensor::cat(&[t.narrow(0, 0, 150)?.abs()?, t.narrow(0, 150, 150)?.neg()?], 0)
            }),
        ),
        (
            "slice_set across the cut",
            Tol::EXACT,
            Box::new(|d| {
                let t = table(d)?;
                t.slice_set(&rand_tensor(d, DType::F32, &[10, 24], 35, 5.0, 6.0)?, 0, 165)?;
                Ok(t)
            }),
        ),
        (
            "slice_set of columns",
            Tol::EXACT,
            Box::new(|d| {
                let t = table(d)?;
                t.slice_set(&rand_tensor(d, DType::F32, &[300, 2], 36, 5.0, 6.0)?, 1, 7)?;
                Ok(t)
            }),
        ),
        (
            "fill_ of a view across the cut",
            Tol::EXACT,
            Box::new(|d| {
                let t = table(d)?;
                t.narrow(0, 160, 20)?.narrow(1, 2, 5)?.fill_(3.0)?;
                Ok(t)
            }),
        ),
        (
            "normal draws in parts (each element at its stream position)",
            Tol { atol: 1e-6, rtol: 1e-5 },
            Box::new(|d| Tensor::random([300, 25], DType::F32, Distribution::Normal { mean: 0.5, std: 2.0 }, 7, 13, d)),
        ),
        (
            "uniform f16 draws in parts",
            Tol::EXACT,
            Box::new(|d| Tensor::random([9001], DType::F16, Distribution::Uniform { low: -1.0, high: 3.0 }, 8, 5, d)),
        ),
        (
            "gather along rows in parts",
            Tol::EXACT,
            Box::new(|d| {
                let ids: Vec<u32> = (0..900).map(|i| (i * 7 % 24) as u32).collect();
                table(d)?.gather(&Tensor::from_vec(ids, [300, 3], d)?, 1)
            }),
        ),
        ("sum over the rows the parts cut", Tol { atol: 1e-5, rtol: 1e-5 }, Box::new(|d| table(d)?.sum(0))),
        ("max over the rows the parts cut", Tol::EXACT, Box::new(|d| table(d)?.max_keepdim(0))),
        // Each row a part of its own: summing the rows' partials would be the same split again
        // (a stack overflow found by the fuzz test), so columns go a chunk at a time.
        ("sum over rows that are each a part", Tol { atol: 1e-5, rtol: 1e-5 }, Box::new(|d| rows(d)?.sum(0))),
        ("min over rows that are each a part", Tol::EXACT, Box::new(|d| rows(d)?.min_keepdim(0))),
        ("argmax over rows that are each a part", Tol::EXACT, Box::new(|d| rows(d)?.argmax(0))),
        (
            "an f16 sum of a vector in parts",
            Tol::of(DType::F16),
            Box::new(|d| rand_tensor(d, DType::F16, &[9000], 13, -1.0, 1.0)?.sum(0)),
        ),
        (
            "layer_norm with weight and bias",
            Tol { atol: 1e-5, rtol: 1e-5 },
            Box::new(|d| {
                let (w, b) =
                    (rand_tensor(d, DType::F32, &[24], 14, 0.5, 1.5)?, rand_tensor(d, DType::F32, &[24], 15, -1., 1.)?);
                table(d)?.layer_norm(Some(&w), Some(&b), 1e-5)
            }),
        ),
        (
            "rms_norm",
            Tol { atol: 1e-5, rtol: 1e-5 },
            Box::new(|d| table(d)?.rms_norm(Some(&rand_tensor(d, DType::F32, &[24], 16, 0.5, 1.5)?), 1e-5)),
        ),
        (
            "batch_norm of images in parts",
            Tol { atol: 1e-5, rtol: 1e-5 },
            Box::new(|d| {
                let c = |seed, lo, hi| rand_tensor(d, DType::F32, &[4], seed, lo, hi);
                let x = rand_tensor(d, DType::F32, &[40, 4, 30], 17, -2.0, 2.0)?;
                x.batch_norm(&c(18, -1., 1.)?, &c(19, 0.5, 2.)?, Some(&c(20, 0.5, 1.5)?), Some(&c(21, -1., 1.)?), 1e-5)
            }),
        ),
        (
            "conv2d of images in parts",
            Tol { atol: 1e-5, rtol: 1e-5 },
            Box::new(|d| {
                let k = rand_tensor(d, DType::F32, &[4, 3, 3, 3], 22, -1.0, 1.0)?;
                images(d)?.conv2d(&k, &ConvParams::default())
            }),
        ),
        ("max_pool2d of images in parts", Tol::EXACT, Box::new(|d| images(d)?.max_pool2d(&Pool2dParams::new(2)))),
        (
            "upsample to images in parts",
            Tol::EXACT,
            Box::new(|d| rand_tensor(d, DType::F32, &[6, 3, 8, 8], 23, -1.0, 1.0)?.upsample_nearest2d(16, 16)),
        ),
        ("argsort of rows", Tol::EXACT, Box::new(|d| table(d)?.argsort(true))),
        (
            "argsort of rows past one buffer, with ties, both ways (merged ranges)",
            Tol::EXACT,
            Box::new(|d| {
                let x = rand_tensor(d, DType::F32, &[2, 5000], 55, -3.0, 3.0)?.unary(UnaryOp::Round)?;
                Tensor::cat(&[x.argsort(false)?, x.argsort(true)?], 0)
            }),
        ),
        ("argsort of columns crossing parts", Tol::EXACT, Box::new(|d| table(d)?.t()?.argsort(false))),
        (
            "argsort whose indices are past one buffer",
            Tol::EXACT,
            Box::new(|d| rand_tensor(d, DType::F32, &[5000], 59, 0.0, 9.0)?.to_dtype(DType::U8)?.argsort(true)),
        ),
        (
            "attention over keys past one buffer a row (composed), grouped heads, causal, masked",
            Tol { atol: 1e-5, rtol: 1e-5 },
            Box::new(|d| {
                let q = rand_tensor(d, DType::F32, &[1, 2, 4, 8], 61, -1.0, 1.0)?;
                let (k, v) = (
                    rand_tensor(d, DType::F32, &[1, 1, 600, 8], 62, -1.0, 1.0)?,
                    rand_tensor(d, DType::F32, &[1, 1, 600, 8], 63, -1.0, 1.0)?,
                );
                let keep = rand_tensor(d, DType::F32, &[4, 600], 64, 0.0, 1.99)?.to_dtype(DType::U8)?;
                let add = rand_tensor(d, DType::F32, &[1, 2, 1, 600], 65, -1.0, 1.0)?;
                Tensor::cat(
                    &[
                        q.scaled_dot_product_attention(&k, &v, None, true, None)?,
                        q.scaled_dot_product_attention(&k, &v, Some(&keep), false, Some(0.5))?,
                        q.scaled_dot_product_attention(&k, &v, Some(&add), true, None)?,
                    ],
                    2,
                )
            }),
        ),
        (
            "conv2d and conv_transpose2d of one image past one buffer (input channels summed)",
            Tol { atol: 1e-4, rtol: 1e-4 },
            Box::new(|d| {
                let image = rand_tensor(d, DType::F32, &[1, 3, 48, 48], 66, -1.0, 1.0)?;
                let k = rand_tensor(d, DType::F32, &[4, 3, 3, 3], 67, -1.0, 1.0)?;
                let kt = rand_tensor(d, DType::F32, &[3, 2, 3, 3], 68, -1.0, 1.0)?;
                let p = ConvParams { padding: [1, 1], ..ConvParams::default() };
                let y = image.conv2d(&k, &p)?.flatten_all()?;
                Tensor::cat(&[y, image.conv_transpose2d(&kt, &p)?.flatten_all()?], 0)
            }),
        ),
        (
            "f64 matmul with a K past one buffer (partial products in f64)",
            Tol::of(DType::F64),
            Box::new(|d| {
                let x = rand_tensor(d, DType::F64, &[2, 2500], 69, -1.0, 1.0)?;
                x.matmul(&rand_tensor(d, DType::F64, &[2500, 3], 70, -1.0, 1.0)?)
            }),
        ),
        (
            "sort of a row past one buffer",
            Tol::EXACT,
            Box::new(|d| Ok(rand_tensor(d, DType::F32, &[1, 6000], 60, -1.0, 1.0)?.sort(false)?.0)),
        ),
        (
            "rope of heads in parts",
            Tol { atol: 1e-5, rtol: 1e-5 },
            Box::new(|d| {
                let x = rand_tensor(d, DType::F32, &[2, 4, 30, 24], 24, -1.0, 1.0)?;
                let (c, s) = (
                    rand_tensor(d, DType::F32, &[30, 12], 25, -1., 1.)?,
                    rand_tensor(d, DType::F32, &[30, 12], 26, -1., 1.)?,
                );
                x.rope(&c, &s)
            }),
        ),
        (
            "attention, kv in parts, a mask",
            Tol { atol: 1e-5, rtol: 1e-5 },
            Box::new(|d| {
                let q = rand_tensor(d, DType::F32, &[3, 4, 30, 16], 27, -1.0, 1.0)?;
                let (k, v) = (
                    rand_tensor(d, DType::F32, &[3, 4, 40, 16], 28, -1., 1.)?,
                    rand_tensor(d, DType::F32, &[3, 4, 40, 16], 29, -1., 1.)?,
                );
                let mask = rand_tensor(d, DType::F32, &[30, 40], 30, 0.0, 2.0)?.to_dtype(DType::U8)?;
                q.scaled_dot_product_attention(&k, &v, Some(&mask), true, None)
            }),
        ),
        (
            "attention, grouped heads, q in parts",
            Tol { atol: 1e-5, rtol: 1e-5 },
            Box::new(|d| {
                let q = rand_tensor(d, DType::F32, &[3, 4, 30, 16], 31, -1.0, 1.0)?;
                let (k, v) = (
                    rand_tensor(d, DType::F32, &[3, 2, 40, 16], 32, -1., 1.)?,
                    rand_tensor(d, DType::F32, &[3, 2, 40, 16], 33, -1., 1.)?,
                );
                q.scaled_dot_product_attention(&k, &v, None, true, None)
            }),
        ),
        (
            "attention of grouped heads in parts over no key (NaN, as the fused kernels give)",
            Tol::EXACT,
            Box::new(|d| {
                let q = rand_tensor(d, DType::F32, &[1, 4, 600, 8], 35, -1.0, 1.0)?;
                let kv = Tensor::zeros([1, 2, 0, 8], DType::F32, d)?;
                q.scaled_dot_product_attention(&kv, &kv, None, false, None)
            }),
        ),
        ("argmax over the rows the parts cut", Tol::EXACT, Box::new(|d| table(d)?.argmax(0))),
        (
            "argmax of ties across the cut (the first index)",
            Tol::EXACT,
            Box::new(|d| table(d)?.ge(0.5)?.to_dtype(DType::F32)?.argmax(0)),
        ),
        (
            "argmin of an f16 vector in parts",
            Tol::EXACT,
            Box::new(|d| rand_tensor(d, DType::F16, &[9000], 37, -1.0, 1.0)?.argmin(0)),
        ),
        (
            "gather along the rows the parts cut",
            Tol::EXACT,
            Box::new(|d| {
                let ids: Vec<u32> = (0..7 * 24).map(|i| (i * 41 % 300) as u32).collect();
                table(d)?.gather(&Tensor::from_vec(ids, [7, 24], d)?, 0)
            }),
        ),
        (
            "scatter along the rows the parts cut",
            Tol::EXACT,
            Box::new(|d| {
                // Distinct rows in each column: one write an element.
                let ids: Vec<u32> = (0..3 * 24).map(|i| ((i / 24) * 97 + (i % 24) * 13) as u32 % 300).collect();
                let src = rand_tensor(d, DType::F32, &[3, 24], 38, 5.0, 6.0)?;
                table(d)?.scatter(&Tensor::from_vec(ids, [3, 24], d)?, &src, 0)
            }),
        ),
        (
            "scatter_add of columns (split by rows)",
            Tol { atol: 1e-6, rtol: 1e-6 },
            Box::new(|d| {
                let ids: Vec<u32> = (0..300 * 2).map(|i| ((i % 2) * 5 + i / 2) as u32 % 24).collect();
                let src = rand_tensor(d, DType::F32, &[300, 2], 39, 5.0, 6.0)?;
                table(d)?.scatter_add(&Tensor::from_vec(ids, [300, 2], d)?, &src, 1)
            }),
        ),
        (
            "index_add of rows on both sides of the cut",
            Tol { atol: 1e-6, rtol: 1e-6 },
            Box::new(move |d| {
                let src = rand_tensor(d, DType::F32, &[7, 24], 40, 5.0, 6.0)?;
                table(d)?.index_add(&ids(d, vec![169, 170, 0, 299, 170, 5, 169])?, &src, 0)
            }),
        ),
        (
            "scatter_set into a view of a table in parts",
            Tol::EXACT,
            Box::new(|d| {
                let t = table(d)?;
                let ids = Tensor::from_vec(vec![2u8, 0, 170, 255], [4, 1], d)?;
                let src = rand_tensor(d, DType::F32, &[4, 1], 41, 5.0, 6.0)?;
                t.narrow(1, 3, 4)?.scatter_set(&ids, &src, 0)?;
                Ok(t)
            }),
        ),
        (
            "dropout of a table in parts (each element at its stream position)",
            Tol::EXACT,
            Box::new(|d| table(d)?.dropout_at(0.3, 5, 11)),
        ),
        ("dropout of a transposed view", Tol::EXACT, Box::new(|d| table(d)?.t()?.dropout_at(0.6, 6, 3))),
        ("arange past one buffer", Tol::EXACT, Box::new(|d| Tensor::arange(3u32, 5003, d))),
        ("an f32 arange in parts", Tol::of(DType::F32), Box::new(|d| Tensor::arange_step(-3f32, 1000.0, 0.2, d))),
        (
            "q8_0 weights in parts: qmatmul and the dequantized path",
            Tol { atol: 1e-4, rtol: 1e-4 },
            Box::new(move |d| {
                let w = QTensor::from_bytes(GgmlType::Q8_0, [300, 64], &q8, d)?;
                let few = w.qmatmul(&rand_tensor(d, DType::F32, &[3, 64], 43, -1.0, 1.0)?)?;
                let many = w.qmatmul(&rand_tensor(d, DType::F32, &[40, 64], 44, -1.0, 1.0)?)?;
                Tensor::cat(&[few, many], 0)
            }),
        ),
        (
            "lstm cell, gates in parts",
            Tol { atol: 1e-5, rtol: 1e-5 },
            Box::new(|d| {
                let g = |seed| rand_tensor(d, DType::F32, &[200, 32], seed, -1.0, 1.0);
                g(45)?.lstm_cell(&g(46)?, None, &rand_tensor(d, DType::F32, &[200, 8], 47, -1.0, 1.0)?)
            }),
        ),
        (
            "gru cell with a bias, gates in parts",
            Tol { atol: 1e-5, rtol: 1e-5 },
            Box::new(|d| {
                let g = |seed| rand_tensor(d, DType::F32, &[200, 24], seed, -1.0, 1.0);
                let (b, h) = (
                    rand_tensor(d, DType::F32, &[24], 48, -1.0, 1.0)?,
                    rand_tensor(d, DType::F32, &[200, 8], 49, -1., 1.)?,
                );
                g(50)?.gru_cell(&g(51)?, Some(&b), &h)
            }),
        ),
        (
            "local_response_norm of images in parts",
            Tol { atol: 1e-5, rtol: 1e-5 },
            Box::new(|d| images(d)?.local_response_norm(3, 1e-2, 0.75, 2.0)),
        ),
        (
            "matmul with a K past one buffer (partial products)",
            Tol { atol: 1e-4, rtol: 1e-4 },
            Box::new(|d| {
                let x = rand_tensor(d, DType::F32, &[2, 5000], 52, -1.0, 1.0)?;
                x.matmul(&rand_tensor(d, DType::F32, &[5000, 3], 53, -1.0, 1.0)?)
            }),
        ),
        (
            "softmax and log_softmax of a row past one buffer",
            Tol { atol: 1e-6, rtol: 1e-5 },
            Box::new(|d| {
                let x = rand_tensor(d, DType::F32, &[2, 5000], 54, -3.0, 3.0)?;
                Tensor::cat(&[x.softmax(1)?, x.log_softmax(1)?], 0)
            }),
        ),
        (
            "layer_norm and rms_norm of rows past one buffer",
            Tol { atol: 1e-5, rtol: 1e-5 },
            Box::new(|d| {
                let x = rand_tensor(d, DType::F32, &[2, 5000], 56, -3.0, 3.0)?;
                let (w, b) = (
                    rand_tensor(d, DType::F32, &[5000], 57, 0.5, 1.5)?,
                    rand_tensor(d, DType::F32, &[5000], 58, -1., 1.)?,
                );
                Tensor::cat(&[x.layer_norm(Some(&w), Some(&b), 1e-5)?, x.rms_norm(Some(&w), 1e-5)?], 0)
            }),
        ),
    ];
    for (what, tol, f) in &cases {
        compare_with_cpu(&dev, *tol, what, f).await?;
    }
    // An embedding lookup from two parts is one kernel reading both; from more parts than one
    // kernel binds, a few kernels a part (for 18: 37 on lavapipe, 73 in Chromium; the ids moved
    // into each range at once, a pick a part, one fused chain), not pieces of its ids and
    // columns (2349 kernels for two parts before): the split's last resort leaves it to that
    // path.
    let (t, picked) = (table(&dev)?, ids(&dev, vec![0, 169, 170, 299, 5, 250, 170])?);
    let before = dev.launches();
    t.index_select(&picked, 0)?.to_vec2_async::<f32>().await?;
    let launched = dev.launches() - before;
    assert_eq!(launched, 1, "an embedding lookup from two parts took {launched} kernels");
    let t = rand_tensor(&dev, DType::F32, &[3000, 24], 13, -2.0, 2.0)?;
    let before = dev.launches();
    t.index_select(&picked, 0)?.to_vec2_async::<f32>().await?;
    let launched = dev.launches() - before;
    assert!(launched <= 6 * 18, "an embedding lookup from 18 parts took {launched} kernels");
    // An id past the table is an error at readback, said against the whole dim.
    let bad = table(&dev)?.index_select(&ids(&dev, vec![0, 1, 2, 300, 4, 5, 6])?, 0)?;
    match bad.to_vec2_async::<f32>().await {
        Err(Error::IndexOutOfRange { index: 300, size: 300, .. }) => {}
        other => panic!("an id past the table: {other:?}"),
    }
    // So is one given to an index_add with nothing to add (an empty view of the table).
    let empty = table(&dev)?.unsqueeze(0)?.broadcast_as([0, 300, 24])?;
    let two = Tensor::from_vec(vec![0u32, 300], [2], &dev)?;
    let bad = empty.index_add(&two, &Tensor::zeros([0, 2, 24], DType::F32, &dev)?, 1)?;
    match bad.to_vec3_async::<f32>().await {
        Err(Error::IndexOutOfRange { index: 300, size: 300, .. }) => {}
        other => panic!("an id past the table, nothing added: {other:?}"),
    }
    Ok(())
}

/// An op that cannot split such an operand is a clear `LimitExceeded`, and leaves it intact.
async fn ops_that_do_not_split_say_so(dev: &Device) -> Result<()> {
    let Some(dev) = small_device(dev).await? else { return Ok(()) };
    let t = table(&dev)?;
    let want = t.to_vec2_async::<f32>().await?;
    // A grouped convolution of one image past one buffer does not split.
    let image = rand_tensor(&dev, DType::F32, &[1, 3, 48, 48], 66, -1.0, 1.0)?;
    let kernel = rand_tensor(&dev, DType::F32, &[3, 1, 3, 3], 67, -1.0, 1.0)?;
    let grouped = ConvParams { groups: 3, ..ConvParams::default() };
    let refused = [("a grouped conv2d of one image past one buffer", image.conv2d(&kernel, &grouped))];
    for (what, r) in refused {
        match r {
            Err(Error::LimitExceeded { needed, limit, .. }) => assert!(needed > limit, "{what}: {needed} <= {limit}"),
            other => panic!("{what}: {other:?}"),
        }
    }
    assert_eq!(t.to_vec2_async::<f32>().await?, want);
    // A scatter into parts with an id past the table says so at readback: along the dim the
    // parts cut, and along another (written window by window).
    let ids = Tensor::from_vec(vec![4u32, 300], [2, 1], &dev)?;
    t.scatter_set(&ids, &Tensor::from_vec(vec![7f32, 8.], [2, 1], &dev)?, 0)?;
    match t.to_vec2_async::<f32>().await {
        Err(Error::IndexOutOfRange { index: 300, size: 300, .. }) => {}
        other => panic!("an id past the table: {other:?}"),
    }
    let (t, ids) = (table(&dev)?, Tensor::from_vec(vec![3u32, 24], [1, 2], &dev)?);
    t.scatter_add_set(&ids, &Tensor::from_vec(vec![7f32, 8.], [1, 2], &dev)?, 1)?;
    match t.to_vec2_async::<f32>().await {
        Err(Error::IndexOutOfRange { index: 24, size: 24, .. }) => {}
        other => panic!("a column past the table: {other:?}"),
    }
    Ok(())
}
