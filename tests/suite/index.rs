use crate::{Data, Tol, View, assert_close, assert_values, same_as_cpu, suite};
use rocm_wgpu_ops::spec::index::IndexOp;
use rocm_wgpu_ops::{CpuStorage, DType, Device, Error, Layout, Result, Shape, Tensor};

suite!(
    index_select_matches_reference,
    gather_matches_reference,
    scatter_matches_reference,
    scatter_add_matches_reference,
    scatter_in_place_matches_reference,
    index_add_matches_reference,
    index_select_hand_computed,
    gather_hand_computed,
    scatter_hand_computed,
    scatter_add_hand_computed,
    scatter_set_hand_computed,
    index_add_hand_computed,
    out_of_range_ids_are_errors,
    scatter_add_equals_index_add,
    gather_arange_is_identity,
    index_select_all_is_identity,
    index_select_large,
    scatter_add_many_collisions,
    index_add_many_collisions,
    i64_sums_carry_between_words,
    scatter_repeated_ids_leave_one_of_the_values,
);

/// Host storage of `dtype` holding `v` (values every dtype holds exactly).
fn host(dtype: DType, v: &[f64]) -> CpuStorage {
    match dtype {
        DType::U8 => CpuStorage::U8(v.iter().map(|&x| x as u8).collect()),
        DType::U32 => CpuStorage::U32(v.iter().map(|&x| x as u32).collect()),
        DType::I64 => CpuStorage::I64(v.iter().map(|&x| x as i64).collect()),
        DType::F16 => CpuStorage::F16(v.iter().map(|&x| half::f16::from_f64(x)).collect()),
        DType::BF16 => CpuStorage::BF16(v.iter().map(|&x| half::bf16::from_f64(x)).collect()),
        DType::F32 => CpuStorage::F32(v.iter().map(|&x| x as f32).collect()),
        DType::F64 => CpuStorage::F64(v.to_vec()),
    }
}

/// The storage shape and the layout in it of a tensor of `shape` seen as `view`.
fn view_layout(view: View, shape: &[usize]) -> Result<(Vec<usize>, Layout)> {
    let rank = shape.len();
    let mut s = shape.to_vec();
    Ok(match view {
        View::Transposed if rank >= 2 => {
            s.swap(0, rank - 1);
            let l = Layout::contiguous(s.clone()).transpose(0, rank - 1)?;
            (s, l)
        }
        View::Offset if rank == 1 => {
            s[0] += 5;
            let l = Layout::contiguous(s.clone()).narrow(0, 3, shape[0])?;
            (s, l)
        }
        View::Offset if rank >= 2 => {
            s[0] += 2;
            s[rank - 1] += 3;
            let l = Layout::contiguous(s.clone()).narrow(0, 1, shape[0])?.narrow(rank - 1, 2, shape[rank - 1])?;
            (s, l)
        }
        View::Broadcast if rank >= 1 => {
            s[0] = 1;
            let l = Layout::contiguous(s.clone()).broadcast_as(&Shape::new(shape))?;
            (s, l)
        }
        _ => (s.clone(), Layout::contiguous(s)),
    })
}

/// A tensor holding the row-major values `v` of `shape`, laid out as `view` (a broadcast keeps
/// the last row written); storage cells outside the view hold `pad`, which a kernel must not read.
fn laid_out(dev: &Device, view: View, dtype: DType, shape: &[usize], v: &[f64], pad: f64) -> Result<Tensor> {
    Ok(laid_out_in(dev, view, dtype, shape, v, pad)?.1)
}

/// [`laid_out`]'s tensor after the whole storage it views (pad cells included).
fn laid_out_in(
    dev: &Device,
    view: View,
    dtype: DType,
    shape: &[usize],
    v: &[f64],
    pad: f64,
) -> Result<(Tensor, Tensor)> {
    let (storage_shape, l) = view_layout(view, shape)?;
    let mut data = vec![pad; storage_shape.iter().product()];
    for (i, &x) in l.strided_index().zip(v) {
        data[i] = x;
    }
    let t = Tensor::from_cpu(host(dtype, &data), storage_shape, dev)?;
    let rank = shape.len();
    let viewed = match view {
        View::Transposed if rank >= 2 => t.transpose(0, rank - 1),
        View::Offset if rank == 1 => t.narrow(0, 3, shape[0]),
        View::Offset if rank >= 2 => t.narrow(0, 1, shape[0])?.narrow(rank - 1, 2, shape[rank - 1]),
        View::Broadcast if rank >= 1 => t.broadcast_as(Shape::new(shape)),
        _ => Ok(t.clone()),
    }?;
    Ok((t, viewed))
}

/// `n` values for `dtype`: integers that make u8 sums wrap, floats on a grid of 1/4 in
/// [-4, 4) so that sums of a few of them are exact in every float dtype, in any order.
fn values(dtype: DType, n: usize, seed: u64) -> Vec<f64> {
    let mut d = Data::new(seed);
    (0..n)
        .map(|_| match dtype {
            DType::U8 | DType::U32 => d.f64(0.0, 200.0).floor(),
            DType::I64 => d.f64(-100.0, 100.0).floor(),
            _ => (d.f64(-4.0, 4.0) * 4.0).floor() / 4.0,
        })
        .collect()
}

fn value_tensor(dev: &Device, view: View, dtype: DType, shape: &[usize], seed: u64) -> Result<Tensor> {
    let n = shape.iter().product();
    laid_out(dev, view, dtype, shape, &values(dtype, n, seed), 0.0)
}

/// Random ids in `0..size` (repeats likely); the pad is out of range for any size used here.
fn random_ids(dev: &Device, view: View, dtype: DType, shape: &[usize], size: usize, seed: u64) -> Result<Tensor> {
    let mut d = Data::new(seed);
    let v: Vec<f64> = (0..shape.iter().product()).map(|_| d.f64(0.0, size as f64).floor()).collect();
    laid_out(dev, view, dtype, shape, &v, 200.0)
}

/// Ids distinct along `dim` (so scatter's result is defined): each line along `dim` is a
/// rotation of `0..size`; needs `shape[dim] <= size`.
fn distinct_ids(dev: &Device, view: View, dtype: DType, shape: &[usize], dim: usize, size: usize) -> Result<Tensor> {
    let strides = Shape::new(shape).contiguous_strides();
    let v: Vec<f64> = (0..shape.iter().product::<usize>())
        .map(|flat| {
            let pos: Vec<usize> = strides.iter().zip(shape).map(|(&s, &d)| flat / s % d).collect();
            let shift: usize = pos.iter().enumerate().filter(|&(i, _)| i != dim).map(|(i, p)| p * (2 * i + 3)).sum();
            ((pos[dim] + shift) % size) as f64
        })
        .collect();
    laid_out(dev, view, dtype, shape, &v, 200.0)
}

/// Value shapes (and whether their ids are empty) every "matches reference" case runs over.
const CASES: &[(&[usize], bool)] = &[(&[4, 5, 3], false), (&[4, 5, 3], true), (&[2, 0, 3], false)];

/// Views of the ids (a broadcast would repeat ids, which scatter leaves unspecified).
const ID_VIEWS: [View; 3] = [View::Contiguous, View::Transposed, View::Offset];

/// Calls `f(dtype, id dtype, value view, ids view, value shape, dim, empty ids)` over every
/// combination a "matches reference" case covers; dims whose size is 0 need empty ids. In a
/// browser on `dev` each (dtype, view, shape, dim) class takes one id dtype, turning.
async fn for_all(
    dev: &Device,
    op: IndexOp,
    mut f: impl AsyncFnMut(DType, DType, View, View, &[usize], usize, bool) -> Result<()>,
) -> Result<()> {
    for (di, &dtype) in op.dtypes().iter().enumerate() {
        for (vi, view) in View::ALL.into_iter().enumerate() {
            for (ci, &(shape, empty)) in CASES.iter().enumerate() {
                for dim in 0..shape.len() {
                    if shape[dim] == 0 && !empty {
                        continue;
                    }
                    for idt in crate::rotated(dev, DType::INT, di + vi + ci + dim) {
                        f(dtype, idt, view, ID_VIEWS[(vi + dim) % 3], shape, dim, empty).await?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// The shape of ids and src for gather and scatter: `n` along `dim`, smaller than `x` along
/// the other dims where it can be (torch semantics allow that).
fn fitted(x: &[usize], dim: usize, n: usize) -> Vec<usize> {
    x.iter().enumerate().map(|(i, &d)| if i == dim { n } else { d - usize::from(d > 1) }).collect()
}

fn with_dim(x: &[usize], dim: usize, n: usize) -> Vec<usize> {
    let mut s = x.to_vec();
    s[dim] = n;
    s
}

async fn index_select_matches_reference(dev: &Device) -> Result<()> {
    let op = IndexOp::IndexSelect;
    for_all(dev, op, async |dtype, idt, view, iview, shape, dim, empty| {
        let n = if empty { 0 } else { 6 };
        let what = format!("{op} {dtype} ids {idt} {view:?} ids {iview:?} {shape:?} dim {dim} n {n}");
        same_as_cpu(dev, Tol::EXACT, &what, |d| {
            let x = value_tensor(d, view, dtype, shape, 1)?;
            x.index_select(&random_ids(d, iview, idt, &[n], shape[dim], 2)?, dim)
        })
        .await
    })
    .await
}

async fn gather_matches_reference(dev: &Device) -> Result<()> {
    let op = IndexOp::Gather;
    for_all(dev, op, async |dtype, idt, view, iview, shape, dim, empty| {
        let ids_shape = fitted(shape, dim, if empty { 0 } else { 6 });
        let what = format!("{op} {dtype} ids {idt} {view:?} ids {iview:?} {shape:?} dim {dim} ids {ids_shape:?}");
        same_as_cpu(dev, Tol::EXACT, &what, |d| {
            let x = value_tensor(d, view, dtype, shape, 3)?;
            x.gather(&random_ids(d, iview, idt, &ids_shape, shape[dim], 4)?, dim)
        })
        .await
    })
    .await
}

async fn scatter_matches_reference(dev: &Device) -> Result<()> {
    let op = IndexOp::Scatter;
    for_all(dev, op, async |dtype, idt, view, iview, shape, dim, empty| {
        let n = if empty { 0 } else { shape[dim] - 1 };
        let src_shape = fitted(shape, dim, n);
        let what = format!("{op} {dtype} ids {idt} {view:?} ids {iview:?} {shape:?} dim {dim} src {src_shape:?}");
        same_as_cpu(dev, Tol::EXACT, &what, |d| {
            let dst = value_tensor(d, view, dtype, shape, 5)?;
            let src = value_tensor(d, view, dtype, &src_shape, 6)?;
            dst.scatter(&distinct_ids(d, iview, idt, &src_shape, dim, shape[dim])?, &src, dim)
        })
        .await
    })
    .await
}

async fn scatter_add_matches_reference(dev: &Device) -> Result<()> {
    let op = IndexOp::ScatterAdd;
    for_all(dev, op, async |dtype, idt, view, iview, shape, dim, empty| {
        let n = if empty { 0 } else { shape[dim] + 2 };
        let src_shape = fitted(shape, dim, n);
        let what = format!("{op} {dtype} ids {idt} {view:?} ids {iview:?} {shape:?} dim {dim} src {src_shape:?}");
        same_as_cpu(dev, Tol::of(dtype), &what, |d| {
            let dst = value_tensor(d, view, dtype, shape, 7)?;
            let src = value_tensor(d, view, dtype, &src_shape, 8)?;
            dst.scatter_add(&random_ids(d, iview, idt, &src_shape, shape[dim], 9)?, &src, dim)
        })
        .await
    })
    .await
}

/// `scatter_set` and `scatter_add_set` write through every view but a broadcast (an error):
/// the whole storage after the write, pad cells included, is the cpu's.
async fn scatter_in_place_matches_reference(dev: &Device) -> Result<()> {
    for op in [IndexOp::Scatter, IndexOp::ScatterAdd] {
        for_all(dev, op, async |dtype, idt, view, iview, shape, dim, empty| {
            let set = op == IndexOp::Scatter;
            let n = match (empty, set) {
                (true, _) => 0,
                (false, true) => shape[dim] - 1,
                (false, false) => shape[dim] + 2,
            };
            let src_shape = fitted(shape, dim, n);
            let what = format!("{op} in place {dtype} ids {idt} {view:?} ids {iview:?} {shape:?} dim {dim} n {n}");
            let tol = if set { Tol::EXACT } else { Tol::of(dtype) };
            let write = |d: &Device| -> Result<Tensor> {
                let n = shape.iter().product();
                let (storage, dst) = laid_out_in(d, view, dtype, shape, &values(dtype, n, 5), 0.0)?;
                let src = value_tensor(d, iview, dtype, &src_shape, 6)?;
                if set {
                    dst.scatter_set(&distinct_ids(d, iview, idt, &src_shape, dim, shape[dim])?, &src, dim)?;
                } else {
                    dst.scatter_add_set(&random_ids(d, iview, idt, &src_shape, shape[dim], 9)?, &src, dim)?;
                }
                Ok(storage)
            };
            if view == View::Broadcast && !shape.contains(&0) {
                let e = write(dev).expect_err(&what);
                assert!(matches!(e, Error::InvalidView { .. }), "{what}: {e}");
                return Ok(());
            }
            same_as_cpu(dev, tol, &what, write).await
        })
        .await?;
    }
    Ok(())
}

async fn index_add_matches_reference(dev: &Device) -> Result<()> {
    let op = IndexOp::IndexAdd;
    for_all(dev, op, async |dtype, idt, view, iview, shape, dim, empty| {
        let n = if empty { 0 } else { 6 };
        let src_shape = with_dim(shape, dim, n);
        let what = format!("{op} {dtype} ids {idt} {view:?} ids {iview:?} {shape:?} dim {dim} n {n}");
        same_as_cpu(dev, Tol::of(dtype), &what, |d| {
            let dst = value_tensor(d, view, dtype, shape, 10)?;
            let src = value_tensor(d, view, dtype, &src_shape, 11)?;
            dst.index_add(&random_ids(d, iview, idt, &[n], shape[dim], 12)?, &src, dim)
        })
        .await
    })
    .await
}

async fn index_select_hand_computed(dev: &Device) -> Result<()> {
    let x = Tensor::from_vec(vec![1f32, 2., 3., 4., 5., 6.], [3, 2], dev)?;
    let rows = Tensor::from_vec(vec![2u32, 0, 2], [3], dev)?;
    assert_values(&x.index_select(&rows, 0)?, &[3, 2], &[5f32, 6., 1., 2., 5., 6.], 0.0).await?;
    let cols = Tensor::from_vec(vec![1u8, 1, 0], [3], dev)?;
    assert_values(&x.index_select(&cols, 1)?, &[3, 3], &[2f32, 2., 1., 4., 4., 3., 6., 6., 5.], 0.0).await?;
    // x.t() is [[1, 3, 5], [2, 4, 6]]; its columns 2 and 0.
    let ids = Tensor::from_vec(vec![2i64, 0], [2], dev)?;
    assert_values(&x.t()?.index_select(&ids, 1)?, &[2, 2], &[5f32, 1., 6., 2.], 0.0).await?;
    let none = Tensor::from_vec(Vec::<i64>::new(), [0], dev)?;
    assert_values::<f32>(&x.index_select(&none, 0)?, &[0, 2], &[], 0.0).await?;
    Ok(())
}

async fn gather_hand_computed(dev: &Device) -> Result<()> {
    let x = Tensor::from_vec(vec![1i64, 2, 3, 4, 5, 6], [2, 3], dev)?;
    let ids = Tensor::from_vec(vec![2u32, 0, 1, 1], [2, 2], dev)?;
    assert_values(&x.gather(&ids, 1)?, &[2, 2], &[3i64, 1, 5, 5], 0.0).await?;
    // Along dim 0 with ids narrower than x along dim 1: out[i][j] = x[ids[i][j]][j].
    let ids = Tensor::from_vec(vec![1i64, 0, 1, 1], [4, 1], dev)?;
    assert_values(&x.gather(&ids, 0)?, &[4, 1], &[4i64, 1, 4, 4], 0.0).await?;
    // Transposed ids: logical [[0, 2], [1, 0]].
    let ids = Tensor::from_vec(vec![0u8, 1, 2, 0], [2, 2], dev)?.t()?;
    assert_values(&x.gather(&ids, 1)?, &[2, 2], &[1i64, 3, 5, 4], 0.0).await?;
    Ok(())
}

async fn scatter_hand_computed(dev: &Device) -> Result<()> {
    let dst_values: Vec<f32> = (1..=12).map(|v| v as f32).collect();
    let dst = Tensor::from_vec(dst_values.clone(), [3, 4], dev)?;
    let ids = Tensor::from_vec(vec![3i64, 0, 1, 2], [2, 2], dev)?;
    let src = Tensor::from_vec(vec![10f32, 20., 30., 40.], [2, 2], dev)?;
    let want = [20f32, 2., 3., 10., 5., 30., 40., 8., 9., 10., 11., 12.];
    assert_values(&dst.scatter(&ids, &src, 1)?, &[3, 4], &want, 0.0).await?;
    assert_eq!(dst.to_vec_async::<f32>().await?, dst_values, "scatter leaves dst untouched");
    // Along dim 0: out[ids[i][j]][j] = src[i][j].
    let ids = Tensor::from_vec(vec![2u8, 0, 1], [1, 3], dev)?;
    let src = Tensor::from_vec(vec![-1f32, -2., -3.], [1, 3], dev)?;
    let want = [1f32, -2., 3., 4., 5., 6., -3., 8., -1., 10., 11., 12.];
    assert_values(&dst.scatter(&ids, &src, 0)?, &[3, 4], &want, 0.0).await?;
    Ok(())
}

async fn scatter_add_hand_computed(dev: &Device) -> Result<()> {
    let dst = Tensor::ones([2, 3], DType::F32, dev)?;
    // Repeated ids accumulate; ids may be longer than dst along dim.
    let ids = Tensor::from_vec(vec![0u32, 0, 2, 0, 1, 1, 1, 1], [2, 4], dev)?;
    let src = Tensor::from_vec(vec![1f32, 2., 3., 4., 5., 6., 7., 8.], [2, 4], dev)?;
    assert_values(&dst.scatter_add(&ids, &src, 1)?, &[2, 3], &[8f32, 1., 4., 1., 27., 1.], 0.0).await?;
    assert_values(&dst, &[2, 3], &[1f32; 6], 0.0).await?;
    // u8 wraps: 200 + 100 + 1 = 301 = 45 (mod 256).
    let dst = Tensor::from_vec(vec![200u8, 7], [2], dev)?;
    let ids = Tensor::from_vec(vec![0i64, 0], [2], dev)?;
    let src = Tensor::from_vec(vec![100u8, 1], [2], dev)?;
    assert_values(&dst.scatter_add(&ids, &src, 0)?, &[2], &[45u8, 7], 0.0).await?;
    Ok(())
}

/// A KV-cache write: rows of `[1, 2, 1, 3]` at a position held on the device (ids broadcast
/// over the source), through a narrowed view of the cache; the rest of the cache untouched.
async fn scatter_set_hand_computed(dev: &Device) -> Result<()> {
    let cache = Tensor::zeros([1, 2, 4, 3], DType::F32, dev)?;
    let at = Tensor::from_vec(vec![2u32], [1], dev)?;
    let ids = at.reshape([1, 1, 1, 1])?.broadcast_as([1, 2, 1, 3])?;
    let row = Tensor::from_vec(vec![1f32, 2., 3., 4., 5., 6.], [1, 2, 1, 3], dev)?;
    cache.narrow(2, 1, 3)?.scatter_set(&ids, &row, 2)?;
    let mut want = [0f32; 24];
    want[9..12].copy_from_slice(&[1., 2., 3.]);
    want[21..24].copy_from_slice(&[4., 5., 6.]);
    assert_values(&cache, &[1, 2, 4, 3], &want, 0.0).await?;
    // Adding in place, repeated ids accumulate; a source that is the destination is read whole
    // before the write.
    let x = Tensor::from_vec(vec![1i64, 2, 3], [3], dev)?;
    x.scatter_add_set(&Tensor::from_vec(vec![0u8, 0, 2], [3], dev)?, &x, 0)?;
    assert_values(&x, &[3], &[4i64, 2, 6], 0.0).await
}

async fn index_add_hand_computed(dev: &Device) -> Result<()> {
    let dst = Tensor::ones([3, 2], DType::I64, dev)?;
    let ids = Tensor::from_vec(vec![0u8, 2, 0], [3], dev)?;
    let src = Tensor::from_vec(vec![1i64, 2, 3, 4, 5, 6], [3, 2], dev)?;
    assert_values(&dst.index_add(&ids, &src, 0)?, &[3, 2], &[7i64, 9, 1, 1, 4, 5], 0.0).await?;
    // Along dim 1: columns 0, 1, 1 of src go to columns 1, 0, 1 of dst.
    let ids = Tensor::from_vec(vec![1u32, 0, 1], [3], dev)?;
    let src = Tensor::from_vec(vec![1i64, 2, 3, 4, 5, 6, 7, 8, 9], [3, 3], dev)?;
    assert_values(&dst.index_add(&ids, &src, 1)?, &[3, 2], &[3i64, 5, 6, 11, 9, 17], 0.0).await?;
    assert_values(&dst, &[3, 2], &[1i64; 6], 0.0).await?;
    let dt = crate::wide(dev).0;
    let f = crate::floats(dev, vec![0.5, 0.25], &[2], dt)?;
    let src = crate::floats(dev, vec![0.125, 1.0, 2.0], &[3], dt)?;
    let ids = Tensor::from_vec(vec![1i64, 1, 0], [3], dev)?;
    crate::assert_floats(&f.index_add(&ids, &src, 0)?, &[2], &[2.5, 1.375], 0.0).await
}

/// `r` (read back, where a backend reports bad ids) must be an `IndexOutOfRange` for `index`.
async fn expect_out_of_range(r: Result<Tensor>, op: IndexOp, index: i64, size: usize) -> Result<()> {
    match async { r?.to_cpu_storage_async().await }.await {
        Err(e @ Error::IndexOutOfRange { .. }) => {
            assert_eq!(e, Error::IndexOutOfRange { op: op.name(), index, size });
            let msg = e.to_string();
            assert!(msg.contains(&index.to_string()) && msg.contains(op.name()), "message: {msg}");
            Ok(())
        }
        other => panic!("{op} with id {index} of size {size}: expected IndexOutOfRange, got {other:?}"),
    }
}

async fn out_of_range_ids_are_errors(dev: &Device) -> Result<()> {
    let x = Tensor::from_vec((0..12).map(|v| v as f32).collect(), [3, 4], dev)?;
    let src = Tensor::from_vec(vec![10f32, 20., 30., 40., 50., 60.], [3, 2], dev)?;
    let x_before = x.to_cpu_storage_async().await?;
    let src_before = src.to_cpu_storage_async().await?;
    for &idt in DType::INT {
        let mut bad = vec![4i64];
        if idt == DType::I64 {
            bad.push(-1);
        }
        for b in bad {
            // One bad id among good ones; dim 1 has size 4.
            let ids1 = Tensor::from_cpu(host(idt, &[1.0, b as f64]), [2], dev)?;
            let ids2 = Tensor::from_cpu(host(idt, &[0.0, 3.0, 2.0, b as f64, 1.0, 0.0]), [3, 2], dev)?;
            let (ids1_before, ids2_before) = (ids1.to_cpu_storage_async().await?, ids2.to_cpu_storage_async().await?);
            expect_out_of_range(x.index_select(&ids1, 1), IndexOp::IndexSelect, b, 4).await?;
            expect_out_of_range(x.gather(&ids2, 1), IndexOp::Gather, b, 4).await?;
            expect_out_of_range(x.scatter(&ids2, &src, 1), IndexOp::Scatter, b, 4).await?;
            expect_out_of_range(x.scatter_add(&ids2, &src, 1), IndexOp::ScatterAdd, b, 4).await?;
            expect_out_of_range(x.index_add(&ids1, &src, 1), IndexOp::IndexAdd, b, 4).await?;
            // In place, the cpu refuses before writing; a GPU skips the bad id and the next
            // read of the destination reports it.
            let y = x.copy()?;
            expect_out_of_range(y.scatter_set(&ids2, &src, 1).map(|()| y), IndexOp::Scatter, b, 4).await?;
            assert_eq!(x.to_cpu_storage_async().await?, x_before, "x unchanged after {idt} id {b}");
            assert_eq!(src.to_cpu_storage_async().await?, src_before, "src unchanged after {idt} id {b}");
            assert_eq!(ids1.to_cpu_storage_async().await?, ids1_before, "1-D ids unchanged");
            assert_eq!(ids2.to_cpu_storage_async().await?, ids2_before, "2-D ids unchanged");
        }
        // Along dim 0 (size 3), id == size.
        let ids = Tensor::from_cpu(host(idt, &[3.0]), [1], dev)?;
        expect_out_of_range(x.index_select(&ids, 0), IndexOp::IndexSelect, 3, 3).await?;
    }
    // The device still works after the errors.
    let ids = Tensor::from_vec(vec![2u32], [1], dev)?;
    assert_values(&x.index_select(&ids, 0)?, &[1, 4], &[8f32, 9., 10., 11.], 0.0).await?;
    Ok(())
}

async fn scatter_add_equals_index_add(dev: &Device) -> Result<()> {
    let shape = [3, 4, 2];
    for dtype in [DType::F32, DType::BF16, DType::I64, DType::U8] {
        for &idt in DType::INT {
            for dim in 0..3 {
                let n = 5;
                let dst = value_tensor(dev, View::Transposed, dtype, &shape, 13)?;
                let src_shape = with_dim(&shape, dim, n);
                let src = value_tensor(dev, View::Offset, dtype, &src_shape, 14)?;
                let ids = random_ids(dev, View::Contiguous, idt, &[n], shape[dim], 15)?;
                let spread = ids.reshape(with_dim(&[1, 1, 1], dim, n))?.broadcast_as(src_shape.clone())?;
                let what = format!("scatter_add vs index_add {dtype} ids {idt} dim {dim}");
                assert_close(
                    &dst.scatter_add(&spread, &src, dim)?,
                    &dst.index_add(&ids, &src, dim)?,
                    Tol::EXACT,
                    &what,
                )
                .await?;
            }
        }
    }
    Ok(())
}

async fn gather_arange_is_identity(dev: &Device) -> Result<()> {
    let shape = [3, 4, 5];
    for dtype in [DType::F16, DType::U32, DType::F64] {
        for view in View::ALL {
            let x = value_tensor(dev, view, dtype, &shape, 16)?;
            for (dim, &size) in shape.iter().enumerate() {
                let ids = Tensor::arange(0i64, size as i64, dev)?
                    .reshape(with_dim(&[1, 1, 1], dim, size))?
                    .broadcast_as(shape)?;
                assert_close(&x.gather(&ids, dim)?, &x, Tol::EXACT, &format!("gather arange {dtype} {view:?} {dim}"))
                    .await?;
            }
        }
    }
    Ok(())
}

async fn index_select_all_is_identity(dev: &Device) -> Result<()> {
    let shape = [3, 4, 5];
    for dtype in [DType::BF16, DType::I64, DType::F32] {
        for view in View::ALL {
            let x = value_tensor(dev, view, dtype, &shape, 17)?;
            for (dim, &size) in shape.iter().enumerate() {
                let ids = Tensor::arange(0u32, size as u32, dev)?;
                let what = format!("index_select all {dtype} {view:?} {dim}");
                assert_close(&x.index_select(&ids, dim)?, &x, Tol::EXACT, &what).await?;
            }
        }
    }
    Ok(())
}

/// Many rows from a large table: several workgroups per row and rows per workgroup where rows
/// are copied whole, and the element path where they are not (transposed, or u8 rows off a
/// word boundary in the offset view).
async fn index_select_large(dev: &Device) -> Result<()> {
    let cases: &[(DType, &[usize], usize)] = &[
        (DType::F32, &[5000, 1000], 0),
        (DType::U8, &[5000, 1000], 0),
        (DType::I64, &[5000, 1000], 0),
        (DType::F16, &[3, 700, 50], 1),
        (DType::BF16, &[40, 5000], 1),
    ];
    for &(dtype, shape, dim) in cases {
        for view in [View::Contiguous, View::Transposed, View::Offset] {
            for idt in [DType::U32, DType::I64] {
                let what = format!("index_select {dtype} {view:?} {shape:?} dim {dim} ids {idt}");
                same_as_cpu(dev, Tol::EXACT, &what, |d| {
                    let x = value_tensor(d, view, dtype, shape, 20)?;
                    x.index_select(&random_ids(d, View::Offset, idt, &[300], shape[dim], 21)?, dim)
                })
                .await?;
            }
        }
    }
    Ok(())
}

/// Sums whose every partial sum is exact in `dtype` (at most 120 terms of [-4, 4) on a grid of
/// 1/4 stay within f16's integers of quarters), so any order of adding gives the reference.
const COLLISION_DTYPES: [DType; 5] = [DType::F32, DType::F16, DType::U8, DType::I64, DType::F64];

async fn scatter_add_many_collisions(dev: &Device) -> Result<()> {
    for dtype in COLLISION_DTYPES {
        for &idt in DType::INT {
            // 400 source values per row into 6 (about 67 on each), and 300 per column into 5.
            for (dim, shape, src_shape) in [(1, [8, 6], [7, 400]), (0, [5, 9], [300, 9])] {
                let what = format!("scatter_add collisions {dtype} ids {idt} dim {dim}");
                same_as_cpu(dev, Tol::EXACT, &what, |d| {
                    let dst = value_tensor(d, View::Offset, dtype, &shape, 22)?;
                    let src = value_tensor(d, View::Transposed, dtype, &src_shape, 23)?;
                    let ids = random_ids(d, View::Contiguous, idt, &src_shape, shape[dim], 24)?;
                    dst.scatter_add(&ids, &src, dim)
                })
                .await?;
            }
        }
    }
    Ok(())
}

async fn index_add_many_collisions(dev: &Device) -> Result<()> {
    for dtype in COLLISION_DTYPES {
        for &idt in DType::INT {
            // 500 slices into 6 along dim 0 (about 83 on each), 300 into 4 along dim 1.
            for (dim, shape, n) in [(0, &[6, 33][..], 500), (1, &[3, 4, 5][..], 300)] {
                let what = format!("index_add collisions {dtype} ids {idt} dim {dim}");
                same_as_cpu(dev, Tol::EXACT, &what, |d| {
                    let dst = value_tensor(d, View::Transposed, dtype, shape, 25)?;
                    let src = value_tensor(d, View::Offset, dtype, &with_dim(shape, dim, n), 26)?;
                    dst.index_add(&random_ids(d, View::Offset, idt, &[n], shape[dim], 27)?, &src, dim)
                })
                .await?;
            }
        }
    }
    Ok(())
}

/// i64 sums crossing 2^32 both ways, so that adds carry into and borrow from the high word.
async fn i64_sums_carry_between_words(dev: &Device) -> Result<()> {
    let big = [4294967295.0, 1.0, -1.0, 8589934599.0, -34359738368.0, 4294967296.0, -4294967297.0, 3.0];
    let src_values: Vec<f64> = (0..64).map(|i| big[i % big.len()] * if i % 3 == 0 { -1.0 } else { 1.0 }).collect();
    for &idt in DType::INT {
        same_as_cpu(dev, Tol::EXACT, &format!("i64 scatter_add carries ids {idt}"), |d| {
            let dst = Tensor::from_cpu(host(DType::I64, &[4294967290.0, -5.0, 0.0]), [3], d)?;
            let src = Tensor::from_cpu(host(DType::I64, &src_values), [64], d)?;
            dst.scatter_add(&random_ids(d, View::Contiguous, idt, &[64], 3, 28)?, &src, 0)
        })
        .await?;
        same_as_cpu(dev, Tol::EXACT, &format!("i64 index_add carries ids {idt}"), |d| {
            let dst = Tensor::from_cpu(host(DType::I64, &[4294967290.0, -5.0, 0.0, 7.0]), [2, 2], d)?;
            let src = Tensor::from_cpu(host(DType::I64, &src_values), [32, 2], d)?;
            dst.index_add(&random_ids(d, View::Contiguous, idt, &[32], 2, 29)?, &src, 0)
        })
        .await?;
    }
    Ok(())
}

/// Every source row goes to row 1: each element of that row is one of the values written to
/// it (which one is unspecified), and the other rows are untouched.
async fn scatter_repeated_ids_leave_one_of_the_values(dev: &Device) -> Result<()> {
    for dtype in [DType::F32, DType::F16, DType::U8, DType::I64, DType::BF16] {
        let dst = value_tensor(dev, View::Contiguous, dtype, &[3, 5], 30)?;
        let src = value_tensor(dev, View::Transposed, dtype, &[40, 5], 31)?;
        let ids = Tensor::from_cpu(host(DType::U32, &[1.0; 200]), [40, 5], dev)?;
        let got = dst.scatter(&ids, &src, 0)?.to_cpu_storage_async().await?.to_f64_vec();
        let (d, s) = (
            dst.to_cpu_storage_async().await?.to_f64_vec(),
            src.contiguous()?.to_cpu_storage_async().await?.to_f64_vec(),
        );
        for c in 0..5 {
            assert_eq!((got[c], got[10 + c]), (d[c], d[10 + c]), "scatter {dtype}: rows 0 and 2, column {c}");
            let written: Vec<f64> = (0..40).map(|r| s[r * 5 + c]).collect();
            assert!(written.contains(&got[5 + c]), "scatter {dtype}: column {c} got {}, not written", got[5 + c]);
        }
    }
    Ok(())
}
