// Shared by every kernel (WG, the workgroup size, is defined before this).

// The invocation's index in a 1-D or 2-D grid of workgroups of WG invocations.
fn flat_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// The f32 of bits `b`, for NaN and the infinities: WGSL makes a constant expression whose value
// is one a shader-creation error (browsers' compilers enforce it), so the bits go through md[1]
// (the -inf every kernel's metadata carries, unknown to a compiler; the two xors cancel).
fn f32_of_bits(b: u32) -> f32 {
    return bitcast<f32>(b ^ md[1] ^ 0xff800000u);
}

// x, its bits through an or with zero made of md[1] (unknown to a compiler): a fused program's
// step value as an f32, which a driver then can neither contract with the next step's arithmetic
// nor keep in more precision. A select on md[1] was not enough: NVIDIA's driver carried sums
// through `f64(..)` and `f32(..)` of a cast unrounded (1-2 ulp off the ops one at a time). An
// or, not an xor: two fences in a row must leave one, and an xor twice with one value is none (a
// norm's fenced value rounded as stored, fenced again, was contracted on NVIDIA: session 60).
fn fence32(x: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) | (md[1] ^ 0xff800000u));
}

// NaN test on the bits, immune to fast-math folding of `v != v`.
fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// f32 to bf16 bits, round to nearest even; NaN stays a (quiet) NaN.
fn bf16_bits(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    if (is_nan(v)) {
        return 0x7fc0u;
    }
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

// Truncating, saturating f32 to u32; NaN gives 0.
fn f32_to_u32(v: f32) -> u32 {
    if (!(v > 0.0)) {
        return 0u;
    }
    if (v >= 4294967296.0) {
        return 0xffffffffu;
    }
    return u32(v);
}

// Maximum and minimum that propagate NaN.
fn max_nan(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b)) {
        return select(b, a, is_nan(a));
    }
    return max(a, b);
}

fn min_nan(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b)) {
        return select(b, a, is_nan(a));
    }
    return min(a, b);
}

// f16 bits (low 16 bits of h) to f32; exact. Written out because pack2x16float needs a
// capability Mesa only has alongside SHADER_F16.
fn f16_to_f32(h: u32) -> f32 {
    let s = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0u) {
        let v = f32(m) * 5.9604644775390625e-8;
        return select(v, -v, s != 0u);
    }
    if (e == 31u) {
        return bitcast<f32>(s | 0x7f800000u | (m << 13u));
    }
    return bitcast<f32>(s | ((e + 112u) << 23u) | (m << 13u));
}

// f32 to f16 bits, round to nearest even, overflow to infinity, NaN kept.
fn f32_to_f16(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    let s = (b >> 16u) & 0x8000u;
    let a = b & 0x7fffffffu;
    if (a > 0x7f800000u) {
        return s | 0x7e00u;
    }
    if (a >= 0x477ff000u) {
        return s | 0x7c00u;
    }
    if (a >= 0x38800000u) {
        let r = a - 0x38000000u;
        return s | ((r + 0xfffu + ((r >> 13u) & 1u)) >> 13u);
    }
    return s | u32(round(bitcast<f32>(a) * 16777216.0));
}
