// The index kernels.
