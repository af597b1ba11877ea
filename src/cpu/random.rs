//! Uniform and normal draws on the cpu, element by element from the stream position exactly as
//! [`crate::spec::random`] defines them.

use super::{CpuBackend, CpuStorage, map_strided};
use crate::backend::RandomOps;
use crate::spec::random::{self, Distribution};
use crate::{DType, Error, Layout, Result, WithDType, with_float_storage};
use half::{bf16, f16};
use std::ops::{Add, Mul, Sub};

/// The type a dtype's values are computed in: f32 for f16, bf16 and f32; f64 for f64.
trait Real: Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> {
    /// `2 pi` rounded to this type.
    const TAU: Self;
    /// A parameter rounded to this type.
    fn param(v: f64) -> Self;
    /// `n * 2^-24` for `n <= 2^24`: exact in both types.
    fn unit(n: u32) -> Self;
    fn ln(self) -> Self;
    fn sqrt(self) -> Self;
    fn cos(self) -> Self;
    fn sin(self) -> Self;
}

macro_rules! real {
    ($t:ident) => {
        impl Real for $t {
            const TAU: Self = std::$t::consts::TAU;
            fn param(v: f64) -> Self {
                v as $t
            }
            fn unit(n: u32) -> Self {
                n as $t * (1.0 / 16_777_216.0)
            }
            fn ln(self) -> Self {
                $t::ln(self)
            }
            fn sqrt(self) -> Self {
                $t::sqrt(self)
            }
            fn cos(self) -> Self {
                $t::cos(self)
            }
            fn sin(self) -> Self {
                $t::sin(self)
            }
        }
    };
}
real!(f32);
real!(f64);

/// The value at lane `lane` of a block whose four words are `w`.
fn draw<R: Real>(dist: Distribution, w: &[u32; 4], lane: usize) -> R {
    match dist {
        Distribution::Uniform { low, high } => {
            let (low, high) = (R::param(low), R::param(high));
            low + (high - low) * R::unit(w[lane] >> 8)
        }
        Distribution::Normal { mean, std } => {
            // The pair's words are lanes (0, 1) or (2, 3): always in the same block.
            let u1 = R::unit((w[lane & !1] >> 8) + 1);
            let u2 = R::unit(w[lane | 1] >> 8);
            let r = (R::param(-2.0) * u1.ln()).sqrt();
            let t = R::TAU * u2;
            let z = if lane.is_multiple_of(2) { r * t.cos() } else { r * t.sin() };
            R::param(mean) + R::param(std) * z
        }
    }
}

/// `len` values from position `offset` on; each from its position alone, the block of four
/// words kept while consecutive positions share it.
fn stream<R: Real>(len: usize, dist: Distribution, seed: u64, offset: u64) -> Vec<R> {
    let mut cached: Option<(u64, [u32; 4])> = None;
    (0..len as u64)
        .map(|i| {
            let pos = offset.wrapping_add(i);
            let b = pos / 4;
            let words = match cached {
                Some((cb, w)) if cb == b => w,
                _ => {
                    let w = random::block(seed, b);
                    cached = Some((b, w));
                    w
                }
            };
            draw::<R>(dist, &words, (pos % 4) as usize)
        })
        .collect()
}

/// Dropout of the row-major values of `x` in the compute type `R`: the uniform at each position,
/// kept (times `scale`) where it is at least `p`, else times 0.
fn dropout_in<R: Real + PartialOrd + Into<f64>, T: WithDType>(
    x: &[T],
    l: &Layout,
    p: R,
    scale: R,
    seed: u64,
    offset: u64,
) -> CpuStorage {
    let u = stream::<R>(l.elem_count(), Distribution::Uniform { low: 0.0, high: 1.0 }, seed, offset);
    let xs = map_strided(x, l, |v| R::param(v.to_f64()));
    let y: Vec<T> =
        xs.iter().zip(u).map(|(&v, u)| T::from_f64((v * if u >= p { scale } else { R::param(0.0) }).into())).collect();
    CpuStorage::from_vec(y)
}

impl RandomOps for CpuBackend {
    fn dropout(&self, x: &CpuStorage, l: &Layout, p: f64, scale: f64, seed: u64, offset: u64) -> Result<CpuStorage> {
        with_float_storage!(x, v => Ok(if x.dtype() == DType::F64 {
            dropout_in::<f64, _>(v, l, p, scale, seed, offset)
        } else {
            dropout_in::<f32, _>(v, l, p as f32, scale as f32, seed, offset)
        }), Err(Error::WrongDType { op: "dropout", dtype: x.dtype(), expected: "f16, bf16, f32, f64".into() }))
    }

    fn random(&self, dtype: DType, len: usize, dist: Distribution, seed: u64, offset: u64) -> Result<CpuStorage> {
        let f32s = || stream::<f32>(len, dist, seed, offset);
        Ok(match dtype {
            DType::F16 => CpuStorage::F16(f32s().into_iter().map(f16::from_f32).collect()),
            DType::BF16 => CpuStorage::BF16(f32s().into_iter().map(bf16::from_f32).collect()),
            DType::F32 => CpuStorage::F32(f32s()),
            DType::F64 => CpuStorage::F64(stream::<f64>(len, dist, seed, offset)),
            DType::U8 | DType::U32 | DType::I64 => {
                let op = dist.op();
                let expected = op.dtypes().iter().map(|d| d.name()).collect::<Vec<_>>().join(", ");
                return Err(Error::WrongDType { op: op.name(), dtype, expected });
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_match_the_word_definition() {
        let (seed, offset) = (0x1234_5678_9abc_def0, (1u64 << 32) - 3);
        let got = stream::<f32>(11, Distribution::Uniform { low: 0.0, high: 1.0 }, seed, offset);
        for (i, g) in got.iter().enumerate() {
            assert_eq!(*g, random::unit_f32(random::word(seed, offset + i as u64)), "element {i}");
        }
    }
}
