//! What the WGSL path can run on an adapter, per op and dtype: the one statement behind
//! [`crate::Device::supports`] for wgpu, which the suite checks both ways on every adapter
//! (`tests/suite/support.rs`).
//!
//! The only dtype an adapter can lack is f64 (without SHADER_F64 WGSL has no f64 arithmetic):
//! - ops that only move bytes take f64 as the same 8 bytes as an i64 ([`bits_of`]), so they
//!   need no SHADER_F64;
//! - every other op in f64 returns `UnsupportedDType`.
//!
//! A new WGSL family that only moves bytes declares its ops `[MovesBytes]` in the spec
//! ([`Prop::MovesBytes`]) and computes in `bits_of(dtype)`; one that does arithmetic needs
//! nothing here (its `Repr::of` refuses f64).

use super::repr::Caps;
use crate::DType;
use crate::spec::{OpInfo, Prop};

/// Why `op` cannot run in `dtype` with `caps`, or `None` when it can.
pub(crate) fn unsupported(caps: Caps, op: &OpInfo, dtype: DType) -> Option<String> {
    (dtype == DType::F64 && !caps.f64 && !op.has(Prop::MovesBytes)).then(|| "the adapter lacks SHADER_F64".to_string())
}

/// The dtype a byte-moving op computes in: f64 as i64 where the adapter has no f64 (the same 8
/// bytes, moved bit for bit), else `dtype` itself.
pub(crate) fn bits_of(dtype: DType, caps: Caps) -> DType {
    if dtype == DType::F64 && !caps.f64 { DType::I64 } else { dtype }
}
