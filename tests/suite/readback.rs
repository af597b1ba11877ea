//! The async readbacks and device creation (the forms a browser needs) give what the blocking
//! ones give: the same values over every layout, the same errors, the same device.

use crate::suite;
use rocm_wgpu_ops::{BackendKind, DType, Device, Error, Result, Tensor};

suite!(async_readbacks_match_the_blocking_ones);
crate::tests!(async_device_creation_matches_the_blocking_one);

async fn async_readbacks_match_the_blocking_ones(dev: &Device) -> Result<()> {
    let host: Vec<f32> = (0..24).map(|v| v as f32 * 0.5 - 3.0).collect();
    let x = Tensor::from_vec(host.clone(), [4, 6], dev)?;
    assert_eq!(x.to_vec_async::<f32>().await?, host, "contiguous");
    assert_eq!(x.to_vec_async::<f32>().await?, x.to_vec::<f32>()?);
    // A transposed view and an offset narrow go through the same copy as the sync forms.
    let t = x.t()?;
    let want_t: Vec<Vec<f32>> = (0..6).map(|c| (0..4).map(|r| host[r * 6 + c]).collect()).collect();
    assert_eq!(t.to_vec2_async::<f32>().await?, want_t, "transposed");
    assert_eq!(t.to_vec2_async::<f32>().await?, t.to_vec2::<f32>()?);
    let n = x.narrow(1, 2, 3)?.narrow(0, 1, 2)?;
    assert_eq!(n.to_vec_async::<f32>().await?, vec![host[8], host[9], host[10], host[14], host[15], host[16]]);
    assert_eq!(n.to_cpu_storage_async().await?, n.to_cpu_storage()?);
    // Computed data, sub-word dtypes and an empty tensor.
    let s = x.sum_all()?;
    assert_eq!(s.to_scalar_async::<f32>().await?, host.iter().sum::<f32>());
    assert_eq!(s.to_scalar_async::<f32>().await?, s.to_scalar::<f32>()?);
    let bytes = Tensor::from_vec(vec![7u8, 0, 255, 1, 9], [5], dev)?;
    assert_eq!(bytes.to_vec_async::<u8>().await?, vec![7, 0, 255, 1, 9]);
    let half = x.to_dtype(DType::F16)?.narrow(1, 1, 3)?;
    assert_eq!(half.to_cpu_storage_async().await?, half.to_cpu_storage()?);
    let empty = Tensor::zeros([0, 3], DType::F32, dev)?;
    assert_eq!(empty.to_vec2_async::<f32>().await?, Vec::<Vec<f32>>::new());
    // The same errors as the sync forms.
    let wrong = Error::HostDType { expected: DType::U32, got: DType::F32 };
    assert_eq!(x.to_vec_async::<u32>().await, Err(wrong.clone()));
    assert_eq!(x.to_vec::<u32>(), Err(wrong));
    assert_eq!(n.flatten_all()?.to_vec2_async::<f32>().await, n.flatten_all()?.to_vec2::<f32>());
    assert!(matches!(x.to_scalar_async::<f32>().await, Err(Error::Rank { op: "to_scalar", .. })));
    // A failure the device finds in the data comes back from the async readback too.
    let ids = Tensor::from_vec(vec![1u32, 42], [2], dev)?;
    match x.index_select(&ids, 1) {
        Ok(bad) => {
            let oob = Error::IndexOutOfRange { op: "index_select", index: 42, size: 6 };
            assert_eq!(bad.to_vec_async::<f32>().await, Err(oob.clone()));
            assert_eq!(bad.to_vec::<f32>(), Err(oob));
        }
        Err(e) => assert!(matches!(e, Error::IndexOutOfRange { index: 42, .. }), "{e}"),
    }
    dev.synchronize_async().await?;
    // The async copy on another device.
    let moved = t.to_device_async(&crate::cpu()).await?;
    assert_eq!(moved.to_vec2::<f32>()?, want_t);
    Ok(())
}

/// Every kind opens (or fails with the same reason) through the async forms as through the
/// blocking ones, and `auto_async` picks what `auto` picks.
fn async_device_creation_matches_the_blocking_one() -> Result<()> {
    for &kind in BackendKind::PREFERENCE {
        let (blocking, awaited) = (Device::new(kind), pollster::block_on(Device::new_async(kind)));
        match (&blocking, &awaited) {
            (Ok(a), Ok(b)) => {
                assert_eq!((a.kind(), a.describe()), (b.kind(), b.describe()), "{kind}");
                assert_eq!(a.info(), b.info(), "{kind}");
            }
            (Err(a), Err(b)) => assert_eq!(a, b, "{kind}"),
            _ => panic!("{kind}: blocking {blocking:?}, async {awaited:?}"),
        }
    }
    let (a, b) = (Device::auto()?, pollster::block_on(Device::auto_async())?);
    assert_eq!((a.kind(), a.describe()), (b.kind(), b.describe()));
    Ok(())
}
