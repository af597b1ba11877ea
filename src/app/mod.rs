//! The programs built on the crate's public API that the main job runs: the self-check and the
//! benchmark cases. They sit beside the binary, not in the library, so that data in the library
//! flows one way (nothing in it is built on `Tensor` from below). `benches/common.rs` and the suite
//! (`tests/suite/`) include the same files by `#[path]`, and another small crate can too, so each
//! file names the library as `rocm_wgpu_ops::`, never `crate::`.

pub mod bench;
#[allow(dead_code, reason = "the main job uses part of the self-check; the suite the rest")]
pub mod selfcheck;
