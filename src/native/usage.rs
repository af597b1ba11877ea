//! Which path each native call took (a vendor library or our kernels), counted for `info()`.

use std::sync::atomic::{AtomicU64, Ordering};

/// How many calls of each op family went to the vendor libraries and how many to our kernels
/// (shown by `info()`, so a run can tell which path it measured).
#[derive(Default)]
pub(crate) struct LibraryUse {
    counts: [AtomicU64; 8],
    /// Kernels launched (ours, and each vendor library call).
    launches: AtomicU64,
}

/// What [`LibraryUse`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    GemmLibrary,
    GemmKernels,
    MatmulOnCpu,
    ConvLibrary,
    ConvKernels,
    BatchNormLibrary,
    BatchNormKernels,
    AttentionLibrary,
}

impl LibraryUse {
    const NAMES: [&str; 8] = [
        "matmul BLAS",
        "matmul kernels",
        "matmul cpu",
        "conv DNN",
        "conv kernels",
        "batch_norm DNN",
        "batch_norm kernels",
        "attention DNN",
    ];

    pub(crate) fn count(&self, p: Path) {
        self.counts[p as usize].fetch_add(1, Ordering::Relaxed);
        if matches!(p, Path::GemmLibrary | Path::ConvLibrary | Path::BatchNormLibrary | Path::AttentionLibrary) {
            self.launched();
        }
    }

    /// One more kernel launched.
    pub(crate) fn launched(&self) {
        self.launched_many(1);
    }

    /// Counts `n` launches at once (a replayed graph's).
    pub(crate) fn launched_many(&self, n: u64) {
        self.launches.fetch_add(n, Ordering::Relaxed);
    }

    /// Kernels launched so far.
    pub(crate) fn launches(&self) -> u64 {
        self.launches.load(Ordering::Relaxed)
    }

    pub(crate) fn describe(&self) -> String {
        let v: Vec<String> =
            Self::NAMES.iter().zip(&self.counts).map(|(n, c)| format!("{n} {}", c.load(Ordering::Relaxed))).collect();
        v.join(", ")
    }
}
