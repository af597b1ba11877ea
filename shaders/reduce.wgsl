// The reduce kernels.
