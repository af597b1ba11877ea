//! The programs built on the crate's public API that the main job runs: the self-check, the
//! benchmark cases and the bench chart. They sit beside the binary, not in the library, so that data in the library
//! flows one way (nothing in it is built on `Tensor` from below). `benches/common.rs` and the suite
//! (`tests/suite/`) include the same files by `#[path]`, and another small crate can too, so each
//! file names the library as `rocm_wgpu_ops::`, never `crate::`. (A crate of their own would need
//! the binary, which lives in the library's package, to depend on it: a cycle.)

pub mod bench;
pub mod chart;
pub mod cpu_time;
#[allow(dead_code, reason = "the main job uses part of the self-check; the suite the rest")]
pub mod selfcheck;
