// The random kernels.
