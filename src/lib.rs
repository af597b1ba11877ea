//! GPU tensor ops with two execution paths behind one contract: native on AMD GPUs (HIP
//! kernels, rocBLAS, MIOpen) and portable everywhere else through WGSL compute shaders on
//! wgpu, with a cpu reference backend as the oracle and last resort.
//!
//! ```
//! use rocm_wgpu_ops::{DType, Device, Tensor};
//!
//! let dev = Device::auto()?;
//! let a = Tensor::from_vec(vec![1f32, 2., 3., 4., 5., 6.], [2, 3], &dev)?;
//! let b = Tensor::ones([3, 2], DType::F32, &dev)?;
//! let c = a.matmul(&b)?.relu()?;
//! assert_eq!(c.to_vec::<f32>()?, vec![6., 6., 15., 15.]);
//! # Ok::<(), rocm_wgpu_ops::Error>(())
//! ```

#![warn(missing_docs)]
// The native runtimes load vendor libraries at run time; a browser has neither the libraries nor
// a way to load them.
#[cfg(all(target_family = "wasm", any(feature = "rocm", feature = "cuda")))]
compile_error!(
    "features `rocm` and `cuda` are native-only: on wasm32 the crate has the wgpu (WebGPU) and cpu backends"
);

pub mod backend;
mod block;
mod collective;
pub mod cpu;
mod device;
mod devices;
mod dtype;
mod error;
pub mod expr;
mod host;
pub mod io;
mod layout;
pub mod native;
mod pins;
pub mod spec;
mod tensor;
pub mod wgpu;

pub use backend::BackendKind;
pub use collective::{Group, ReduceOp, UniqueId};
pub use device::Device;
pub use devices::DeviceEntry;
pub use dtype::{DType, Scalar, WithDType};
pub use error::{Error, Result};
/// The f16 and bf16 element types (the `half` crate), so they can be named without adding it.
pub use half::{self, bf16, f16};
pub use host::CpuStorage;
pub use layout::{D, Dim, Layout, Shape, StridedBlocks, StridedIndex};
pub use tensor::{
    Dims, HostElement, IndexOp, Plan, QTensor, RnnOptions, RnnWeights, ShapeWithOneHole, Tensor, TensorIndexer,
    TensorOrScalar,
};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
