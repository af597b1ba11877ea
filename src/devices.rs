//! Devices by ordinal on every backend, and the list of what is present (ARCHITECTURE.md,
//! "Several devices").

use crate::backend::{BackendKind, Memory};
use crate::device::{AnyBackend, Device, Storage};
use crate::{Error, Result};

/// One device a backend sees: what [`Device::list`] returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceEntry {
    /// The backend that would run it.
    pub kind: BackendKind,
    /// What [`Device::cuda`], [`Device::rocm`] or [`Device::wgpu_adapter`] takes to open it.
    pub ordinal: usize,
    /// The driver's name for it.
    pub name: String,
}

impl std::fmt::Display for DeviceEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.kind, self.ordinal, self.name)
    }
}

fn opened(kind: BackendKind, opened: std::result::Result<(AnyBackend, String), String>) -> Result<Device> {
    match opened {
        Ok((b, label)) => Ok(Device::from_backend(b, format!("{label}: asked for by ordinal"))),
        Err(reason) => Err(Error::BackendUnavailable { kind: kind.to_string(), reason }),
    }
}

impl Device {
    /// The CUDA device of driver ordinal `ordinal` (as `cuDeviceGet` counts them), or why it
    /// cannot be used. `Device::auto()` and `Device::new(BackendKind::Cuda)` take the device
    /// `RWO_CUDA_DEVICE` names, else device 0.
    pub fn cuda(ordinal: usize) -> Result<Device> {
        #[cfg(feature = "cuda")]
        let b = crate::native::cuda::CudaBackend::open(Some(ordinal)).map(|b| {
            let label = b.describe();
            (AnyBackend::Cuda(b), label)
        });
        #[cfg(not(feature = "cuda"))]
        let b = Err(format!("device {ordinal}: not compiled in (build with --features cuda)"));
        opened(BackendKind::Cuda, b)
    }

    /// The ROCm device of HIP ordinal `ordinal` (as `hipGetDeviceCount` counts them), or why it
    /// cannot be used. `Device::auto()` and `Device::new(BackendKind::Rocm)` take the device
    /// `RWO_ROCM_DEVICE` names, else the first one the kernels can run on (cards before APUs).
    pub fn rocm(ordinal: usize) -> Result<Device> {
        #[cfg(feature = "rocm")]
        let b = crate::native::rocm::RocmBackend::open(Some(ordinal)).map(|b| {
            let label = b.describe();
            (AnyBackend::Rocm(b), label)
        });
        #[cfg(not(feature = "rocm"))]
        let b = Err(format!("device {ordinal}: not compiled in (build with --features rocm)"));
        opened(BackendKind::Rocm, b)
    }

    /// The wgpu adapter `ordinal` in the order the crate prefers adapters (the order of
    /// [`Device::list`]: hardware before software), with the optional features `features` names
    /// as in [`Device::wgpu`]. Blocks while the device opens; in a browser use
    /// [`Device::wgpu_adapter_async`].
    pub fn wgpu_adapter(ordinal: usize, features: Option<&str>) -> Result<Device> {
        crate::block::block_on_result("Device::wgpu_adapter", Self::wgpu_adapter_async(ordinal, features))
    }

    /// [`Device::wgpu_adapter`] without blocking: the form that works in a browser.
    pub async fn wgpu_adapter_async(ordinal: usize, features: Option<&str>) -> Result<Device> {
        let b = crate::wgpu::WgpuBackend::open(crate::wgpu::Pick::Ordinal(ordinal), features).await?;
        let label = b.describe();
        opened(BackendKind::Wgpu, Ok((AnyBackend::Wgpu(b), label)))
    }

    /// Every device the compiled-in GPU backends see, by backend and ordinal, without opening
    /// any; the cpu is always there and not listed. Natively only (a browser has one adapter:
    /// [`Device::wgpu_adapter_async`] with 0).
    #[cfg(not(target_family = "wasm"))]
    pub fn list() -> Vec<DeviceEntry> {
        let entries = |kind, names: std::result::Result<Vec<String>, String>| {
            let names = names.unwrap_or_default().into_iter().enumerate();
            names.map(move |(ordinal, name)| DeviceEntry { kind, ordinal, name }).collect::<Vec<_>>()
        };
        let mut all = vec![];
        #[cfg(feature = "rocm")]
        all.extend(entries(BackendKind::Rocm, crate::native::rocm::device_names()));
        #[cfg(feature = "cuda")]
        all.extend(entries(BackendKind::Cuda, crate::native::cuda::device_names()));
        let adapters = pollster::block_on(crate::wgpu::adapter_names());
        all.extend(entries(BackendKind::Wgpu, Ok(adapters)));
        all
    }
}

/// `len` elements from element `offset` of `s`, a storage of `from`, copied to `to` by the
/// driver's peer copy when both are devices of one native backend; `None` otherwise (the caller
/// goes through the host).
#[cfg(any(feature = "cuda", feature = "rocm"))]
pub(crate) fn peer_copy(from: &Device, to: &Device, s: &Storage, offset: usize, len: usize) -> Option<Result<Storage>> {
    match (from.backend(), to.backend(), s) {
        #[cfg(feature = "cuda")]
        (AnyBackend::Cuda(a), AnyBackend::Cuda(b), Storage::Cuda(s)) => {
            Some(b.copy_from_peer(a, s, offset, len).map(Storage::Cuda))
        }
        #[cfg(feature = "rocm")]
        (AnyBackend::Rocm(a), AnyBackend::Rocm(b), Storage::Rocm(s)) => {
            Some(b.copy_from_peer(a, s, offset, len).map(Storage::Rocm))
        }
        _ => None,
    }
}

/// Without a native backend every copy goes through the host.
#[cfg(not(any(feature = "cuda", feature = "rocm")))]
pub(crate) fn peer_copy(_: &Device, _: &Device, _: &Storage, _: usize, _: usize) -> Option<Result<Storage>> {
    None
}
