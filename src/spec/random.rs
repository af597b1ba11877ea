//! Random tensors from a counter-based generator: the same seed and offset give the same
//! numbers on every backend.
//!
//! The generator is Philox 4x32-10 (Salmon et al., SC'11). Element `i` of a tensor drawn with
//! `(seed, offset)` sits at stream position `pos = (offset + i) mod 2^64` and uses the 32-bit
//! word [`word`]`(seed, pos)`: the block counter is `pos / 4` as a 64-bit number in counter
//! words 0 and 1 (words 2 and 3 are 0), the key is the seed's low and high halves, and the word
//! is lane `pos % 4` of the block ([`block`]). Each element depends on its position alone, so
//! any backend may compute elements in any order.
//!
//! Values are computed in a compute type `R`: f32 for f16, bf16 and f32 tensors, f64 for f64
//! tensors. The parameters (`low`, `high`, `mean`, `std`) are first rounded to `R`; every
//! `+ - *` below is one `R` operation rounded to nearest (not fused); the result is rounded
//! once (to nearest even) to the dtype.
//! - uniform: `u = (w >> 8) * 2^-24` in `[0, 1)` (exact in `R`); the value is
//!   `low + (high - low) * u`. Rounding may reach `high` (e.g. f32 in `[1, 2)` at the top `u`).
//! - normal: Box-Muller on the pair `p = pos / 2`, whose words `2p` and `2p + 1` are lanes
//!   `(0, 1)` or `(2, 3)` of one block: `u1 = ((word(2p) >> 8) + 1) * 2^-24` in `(0, 1]`,
//!   `u2 = (word(2p + 1) >> 8) * 2^-24` in `[0, 1)`, `r = sqrt(-2 ln u1)`, `t = 2pi * u2` with
//!   `2pi` rounded to `R`, `z = r cos t` for even `pos`, `r sin t` for odd; the value is
//!   `mean + std * z`. `ln`, `cos`, `sin` need not be correctly rounded: backends agree within a
//!   few ulps of `R`, not bit for bit.
//!
//! Every value draws on 24 random bits, f64 included: f64 uniforms take 2^24 distinct values
//! and every normal lies within `sqrt(48 ln 2) ~ 5.77` standard deviations of the mean.
//!
//! Dropout of `x` with probability `p` at `(seed, offset)` ([`dropout`]): element `i` (in `x`'s
//! logical row-major order) draws `u_i`, the uniform of `rand_uniform` on `[0, 1)` at that
//! position, and is kept when `u_i >= p` (`p` rounded to `R`): with probability `1 - p` up to
//! 2^-24. Its value is `x_i * m_i` in `R`, rounded to the dtype, where `m_i` is `1 / (1 - p)`
//! (one `R` division, rounded) when kept and 0 when not (so a dropped NaN stays NaN and a
//! negative value gives -0, as `x * mask * scale` in PyTorch); `p = 0` is the identity and
//! `p = 1` keeps nothing (`m = 0`). `p` must lie in `[0, 1]`.

use super::{Out, check_dtype, invalid, spec_enum};
use crate::{DType, Result, Shape};

spec_enum! {
    /// Random draws.
    pub enum RandomOp in Random {
        RandUniform = rand_uniform: DType::FLOAT,
        RandNormal = rand_normal: DType::FLOAT,
        Dropout = dropout: DType::FLOAT,
    }
}

/// What to draw.
///
/// ```
/// use rocm_wgpu_ops::spec::random::Distribution;
/// use rocm_wgpu_ops::{DType, Device, Tensor};
///
/// let dev = Device::cpu();
/// let dist = Distribution::Uniform { low: 2.0, high: 3.0 };
/// // Seed 1, from stream position 0: the same values on every backend.
/// let x = Tensor::random([1000], DType::F32, dist, 1, 0, &dev)?.to_vec::<f32>()?;
/// assert!(x.iter().all(|v| (2.0..3.0).contains(v)));
/// assert_eq!(Tensor::random([4], DType::F32, dist, 1, 0, &dev)?.to_vec::<f32>()?, x[..4]);
/// # Ok::<(), rocm_wgpu_ops::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Distribution {
    /// Uniform in `[low, high)` (rounding to a half type may reach `high`).
    Uniform {
        /// The lowest value.
        low: f64,
        /// The bound above every value.
        high: f64,
    },
    /// Normal with mean and standard deviation.
    Normal {
        /// The mean.
        mean: f64,
        /// The standard deviation.
        std: f64,
    },
}

impl Distribution {
    /// The op of the spec that draws it.
    pub fn op(self) -> RandomOp {
        match self {
            Distribution::Uniform { .. } => RandomOp::RandUniform,
            Distribution::Normal { .. } => RandomOp::RandNormal,
        }
    }
}

/// `low < high`, `std >= 0`; the parameters and `high - low` finite in the compute type (f32
/// but for f64 tensors), so that no draw is NaN.
pub fn random(shape: &Shape, dtype: DType, dist: Distribution) -> Result<Out> {
    let op = dist.op().name();
    check_dtype(op, dtype, dist.op().dtypes())?;
    let finite = |v: f64| if dtype == DType::F64 { v.is_finite() } else { (v as f32).is_finite() };
    let span = |low: f64, high: f64| if dtype == DType::F64 { high - low } else { f64::from(high as f32 - low as f32) };
    let ok = match dist {
        Distribution::Uniform { low, high } => finite(low) && finite(high) && span(low, high).is_finite() && low < high,
        Distribution::Normal { mean, std } => finite(mean) && finite(std) && std >= 0.0,
    };
    if !ok {
        return Err(invalid(op, format!("{dist:?}: need finite values in the compute type, low < high, std >= 0")));
    }
    Ok(Out::new(shape.clone(), dtype))
}

/// Dropout's checks and constants for an `x` of `dtype`: the compute type `R`, `p` rounded to
/// it, and the scale of a kept element (0 when `p` rounds to 1). `p` outside `[0, 1]` (or NaN)
/// is `InvalidParam`, an integer dtype `WrongDType`.
pub fn dropout(dtype: DType, p: f64) -> Result<(DType, f64, f64)> {
    check_dtype("dropout", dtype, RandomOp::Dropout.dtypes())?;
    if !(0.0..=1.0).contains(&p) {
        return Err(invalid("dropout", format!("p = {p}: the probability of dropping must lie in [0, 1]")));
    }
    Ok(if dtype == DType::F64 {
        (DType::F64, p, if p == 1.0 { 0.0 } else { 1.0 / (1.0 - p) })
    } else {
        let p = p as f32;
        (DType::F32, p.into(), if p == 1.0 { 0.0 } else { (1.0 / (1.0 - p)).into() })
    })
}

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// Philox 4x32 with 10 rounds.
pub fn philox4x32_10(mut ctr: [u32; 4], mut key: [u32; 2]) -> [u32; 4] {
    for round in 0..10 {
        if round > 0 {
            key = [key[0].wrapping_add(W0), key[1].wrapping_add(W1)];
        }
        let p0 = u64::from(M0) * u64::from(ctr[0]);
        let p1 = u64::from(M1) * u64::from(ctr[2]);
        ctr = [((p1 >> 32) as u32) ^ ctr[1] ^ key[0], p1 as u32, ((p0 >> 32) as u32) ^ ctr[3] ^ key[1], p0 as u32];
    }
    ctr
}

/// The four words of block `block` (stream positions `4 * block ..= 4 * block + 3`) for `seed`.
pub fn block(seed: u64, block: u64) -> [u32; 4] {
    philox4x32_10([block as u32, (block >> 32) as u32, 0, 0], [seed as u32, (seed >> 32) as u32])
}

/// The 32-bit word at stream position `pos` for `seed`.
pub fn word(seed: u64, pos: u64) -> u32 {
    block(seed, pos / 4)[(pos % 4) as usize]
}

/// `(w >> 8) * 2^-24`, in `[0, 1)`.
pub fn unit_f32(w: u32) -> f32 {
    (w >> 8) as f32 * (1.0 / 16_777_216.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn philox_matches_the_random123_known_answers() {
        // Known-answer vectors from Random123's kat_vectors for philox4x32_10.
        assert_eq!(philox4x32_10([0; 4], [0; 2]), [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]);
        assert_eq!(philox4x32_10([u32::MAX; 4], [u32::MAX; 2]), [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]);
        assert_eq!(
            philox4x32_10([0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344], [0xa409_3822, 0x299f_31d0]),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }
}
