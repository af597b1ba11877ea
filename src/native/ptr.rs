//! A device address: the one type every native module passes around (a leaf, so that the
//! runtime, the BLAS and DNN traits and the kernels need not import each other for it).

/// An address in device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DevicePtr(pub u64);

impl DevicePtr {
    /// The address `bytes` further on.
    pub fn offset(self, bytes: usize) -> DevicePtr {
        DevicePtr(self.0 + bytes as u64)
    }
}
