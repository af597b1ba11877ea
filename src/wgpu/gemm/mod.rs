//! The GEMM machinery shared by matmul and the convolutions (`shaders/matmul.wgsl`). Each file
//! uses items only of those listed before it (so they form no cycle; `table` takes what `hooks`
//! force as arguments):
//!
//! - `slots`: which metadata word holds what, one table, generated into every kernel's source;
//! - `problem`: a problem in plain numbers (`Gemm`), its batch dims merged, its metadata;
//! - `tiles`: the kernels (`Kernel`) and their configurations as plain structs;
//! - `table`: matmul's and the convolutions' tile tables with their provenance, and the plan
//!   (kernel, transposed form, split-K) for a problem;
//! - `hooks`: the thread-local overrides the suite and the bench sweep force kernels with;
//! - `codegen`: the WGSL pieces every kernel shares, the K loop among them;
//! - `tiled`, `coop`: the tiled and matrix-vector kernels, and the cooperative-matrix one;
//! - `source`: a kernel's whole spec; `variants`: every kernel by name for naga;
//! - `dispatch`: recording a problem (pipeline lookup, dispatch, split-K's sum).

mod codegen;
mod coop;
mod dispatch;
pub mod hooks;
mod problem;
pub(crate) mod slots;
mod source;
mod table;
mod tiled;
mod tiles;
pub(crate) mod variants;

pub(crate) use codegen::{ConvGather, EPILOGUE_INPUTS, Epilogue, Stage, Variant};
pub(crate) use dispatch::{EpilogueArgs, Prologue};
pub(crate) use problem::{Gemm, Operand, too_large};
pub(crate) use table::{CONV, TABLE};
pub(crate) use tiles::MATVEC_MAX_M;
