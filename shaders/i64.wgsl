// i64 support. The kernel builder includes one section: `native` (with SHADER_INT64) or
// `emulated` (an i64 as vec2<u32>(lo, hi), two's complement), plus its `_f64` section when
// the kernel also uses f64.

// @section native
const I64_MAX: i64 = 9223372036854775807li;
// -2^63 as an f32 converts exactly (naga cannot fold `-MAX - 1` for i64 constants).
const I64_MIN_F: f32 = -9223372036854775808.0;

// Truncating, saturating f32 to i64; NaN gives 0.
fn f32_to_i64(v: f32) -> i64 {
    if (is_nan(v)) {
        return 0li;
    }
    if (v >= 9223372036854775807.0) {
        return I64_MAX;
    }
    if (v <= I64_MIN_F) {
        return i64(I64_MIN_F);
    }
    return i64(v);
}

// Truncating division; by zero gives 0; MIN / -1 wraps (as negation does).
fn i64_div(a: i64, b: i64) -> i64 {
    if (b == 0li) {
        return 0li;
    }
    if (b == -1li) {
        return -a;
    }
    return a / b;
}

// @section native_f64
// NaN found through the f32 conversion (which keeps it): `v != v` was folded away (lavapipe gave
// i64::MIN for NaN).
fn f64_to_i64(v: f64) -> i64 {
    if (is_nan(f32(v))) {
        return 0li;
    }
    if (v >= 9223372036854775807.0lf) {
        return I64_MAX;
    }
    if (v <= f64(I64_MIN_F)) {
        return i64(I64_MIN_F);
    }
    return i64(v);
}

// @section emulated
const I64E_MAX: vec2<u32> = vec2<u32>(0xffffffffu, 0x7fffffffu);
const I64E_MIN: vec2<u32> = vec2<u32>(0u, 0x80000000u);

fn i64e_is_neg(a: vec2<u32>) -> bool {
    return (a.y >> 31u) == 1u;
}

fn i64e_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn i64e_neg(a: vec2<u32>) -> vec2<u32> {
    return i64e_add(vec2<u32>(~a.x, ~a.y), vec2<u32>(1u, 0u));
}

fn i64e_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return i64e_add(a, i64e_neg(b));
}

// The full 64-bit product of two u32.
fn mul32(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return vec2<u32>((p00 & 0xffffu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}

// Wrapping product.
fn i64e_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let p = mul32(a.x, b.x);
    return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x);
}

fn i64e_eq(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x == b.x && a.y == b.y;
}

fn i64e_lt(a: vec2<u32>, b: vec2<u32>) -> bool {
    if (a.y != b.y) {
        return bitcast<i32>(a.y) < bitcast<i32>(b.y);
    }
    return a.x < b.x;
}

fn i64e_le(a: vec2<u32>, b: vec2<u32>) -> bool {
    return !i64e_lt(b, a);
}

fn i64e_max(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return select(a, b, i64e_lt(a, b));
}

fn i64e_min(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return select(a, b, i64e_lt(b, a));
}

fn i64e_abs(a: vec2<u32>) -> vec2<u32> {
    return select(a, i64e_neg(a), i64e_is_neg(a));
}

fn i64e_sign(a: vec2<u32>) -> vec2<u32> {
    if (i64e_is_neg(a)) {
        return vec2<u32>(0xffffffffu, 0xffffffffu);
    }
    return vec2<u32>(select(0u, 1u, a.x != 0u || a.y != 0u), 0u);
}

// Unsigned 64-bit quotient by shift and subtract.
fn u64e_div(n: vec2<u32>, d: vec2<u32>) -> vec2<u32> {
    var q = vec2<u32>(0u, 0u);
    var r = vec2<u32>(0u, 0u);
    for (var i = 63; i >= 0; i--) {
        r = vec2<u32>((r.x << 1u), (r.y << 1u) | (r.x >> 31u));
        let bit = select((n.x >> u32(i)) & 1u, (n.y >> u32(i - 32)) & 1u, i >= 32);
        r.x = r.x | bit;
        let ge = r.y > d.y || (r.y == d.y && r.x >= d.x);
        if (ge) {
            r = i64e_sub(r, d);
            if (i >= 32) {
                q.y = q.y | (1u << u32(i - 32));
            } else {
                q.x = q.x | (1u << u32(i));
            }
        }
    }
    return q;
}

// Truncating division; by zero gives 0; MIN / -1 wraps to MIN.
fn i64e_div(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (b.x == 0u && b.y == 0u) {
        return vec2<u32>(0u, 0u);
    }
    let q = u64e_div(i64e_abs(a), i64e_abs(b));
    return select(q, i64e_neg(q), i64e_is_neg(a) != i64e_is_neg(b));
}

// Correctly rounded conversion to f32 (when u32 to f32 rounds to nearest).
fn i64e_to_f32(a: vec2<u32>) -> f32 {
    let m = i64e_abs(a);
    var f = f32();
    if (m.y == 0u) {
        f = f32(m.x);
    } else {
        let bits = 32u - countLeadingZeros(m.y);
        // The top 32 significant bits, with the bits shifted out folded into a sticky bit.
        let top = (m.y << (32u - bits)) | select(m.x >> bits, 0u, bits == 32u);
        let lost = select(m.x << (32u - bits), m.x, bits == 32u);
        f = ldexp(f32(top | select(0u, 1u, lost != 0u)), i32(bits));
    }
    return select(f, -f, i64e_is_neg(a));
}

// Truncating, saturating f32 to i64; NaN gives 0.
fn i64e_from_f32(v: f32) -> vec2<u32> {
    if (is_nan(v)) {
        return vec2<u32>(0u, 0u);
    }
    if (v >= 9223372036854775807.0) {
        return I64E_MAX;
    }
    if (v <= -9223372036854775808.0) {
        return I64E_MIN;
    }
    let t = trunc(abs(v));
    let hi = u32(t / 4294967296.0);
    let lo = u32(t - f32(hi) * 4294967296.0);
    let m = vec2<u32>(lo, hi);
    return select(m, i64e_neg(m), v < 0.0);
}

// @section emulated_f64
fn i64e_to_f64(a: vec2<u32>) -> f64 {
    return f64(bitcast<i32>(a.y)) * 4294967296.0lf + f64(a.x);
}

fn i64e_from_f64(v: f64) -> vec2<u32> {
    if (is_nan(f32(v))) {
        return vec2<u32>(0u, 0u);
    }
    if (v >= 9223372036854775807.0lf) {
        return I64E_MAX;
    }
    if (v <= -9223372036854775808.0lf) {
        return I64E_MIN;
    }
    let t = trunc(abs(v));
    let hi = u32(t / 4294967296.0lf);
    let lo = u32(t - f64(hi) * 4294967296.0lf);
    let m = vec2<u32>(lo, hi);
    return select(m, i64e_neg(m), v < 0.0lf);
}
