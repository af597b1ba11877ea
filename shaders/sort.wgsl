// The sort kernels.
