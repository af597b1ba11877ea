// Elementwise maps over a shared logical shape. The builder defines per specialisation: the
// bindings with their loads (`x_load`), index maps (`x_at`) and word-wise output (`y_set`,
// `y_flush`, `Y_EPW`), and the op itself: `op(..)`. One invocation writes one output word.

// f32 maps without a WGSL builtin, or whose builtin is undefined somewhere we need it. The
// float unary ops return a NaN input before calling any of these (a driver's tanh clamps NaN
// to -1). Subnormals: drivers may flush them in arithmetic (NVIDIA through Vulkan does, Mesa's
// log does), so what the spec keeps exact or in range is decided on the bits here.

// tanh is exactly +-1 in f32 past |15|; clamping keeps implementations from inf / inf.
fn tanh32(v: f32) -> f32 {
    return tanh(clamp(v, -15.0, 15.0));
}

fn nan32() -> f32 {
    return f32_of_bits(0x7fc00000u);
}

// Below zero and not -0 (-NaN included): log and sqrt give NaN there.
fn below_zero(v: f32) -> bool {
    return bitcast<u32>(v) > 0x80000000u;
}

// A non-zero subnormal, of either sign.
fn tiny32(v: f32) -> bool {
    let a = bitcast<u32>(v) & 0x7fffffffu;
    return a != 0u && a < 0x00800000u;
}

fn neg32(v: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(v) ^ 0x80000000u);
}

fn abs32(v: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(v) & 0x7fffffffu);
}

// -1, 0 or 1 with v's sign; zeros and NaN stay as they are.
fn sign32(v: f32) -> f32 {
    let b = bitcast<u32>(v);
    if (is_nan(v) || (b & 0x7fffffffu) == 0u) {
        return v;
    }
    return bitcast<f32>((b & 0x80000000u) | 0x3f800000u);
}

// IEEE comparisons on the bits: -0 equals +0, NaN is unordered, subnormals are not zero.
// `ord32` maps the bits of non-NaN floats to u32s in the floats' order (-0 just below +0).
fn ord32(b: u32) -> u32 {
    return select(b | 0x80000000u, ~b, b >= 0x80000000u);
}

fn zeros32(a: f32, b: f32) -> bool {
    return ((bitcast<u32>(a) | bitcast<u32>(b)) & 0x7fffffffu) == 0u;
}

fn lt32(a: f32, b: f32) -> bool {
    return !(is_nan(a) || is_nan(b)) && ord32(bitcast<u32>(a)) < ord32(bitcast<u32>(b)) && !zeros32(a, b);
}

fn le32(a: f32, b: f32) -> bool {
    return !(is_nan(a) || is_nan(b)) && (ord32(bitcast<u32>(a)) <= ord32(bitcast<u32>(b)) || zeros32(a, b));
}

fn eq32(a: f32, b: f32) -> bool {
    return !(is_nan(a) || is_nan(b)) && (bitcast<u32>(a) == bitcast<u32>(b) || zeros32(a, b));
}

// maximum and minimum as the spec's (NaN first; ties give a); one of the operands' bits.
fn max32(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b)) {
        return select(b, a, is_nan(a));
    }
    return select(b, a, le32(b, a));
}

fn min32(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b)) {
        return select(b, a, is_nan(a));
    }
    return select(b, a, le32(a, b));
}

// ceil, floor and round of a subnormal, which a flushing driver would see as 0. Zero results
// are v's sign bit, never a 0.0 constant: without SPIR-V float controls Mesa does not keep the
// sign of zeros, and folds `select(0.0, -1.0, c)` to `-f32(c)` (-0 for false).
fn zero_like(v: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(v) & 0x80000000u);
}

fn ceil32(v: f32) -> f32 {
    return select(ceil(v), select(1.0, zero_like(v), below_zero(v)), tiny32(v));
}

fn floor32(v: f32) -> f32 {
    return select(floor(v), select(zero_like(v), -1.0, below_zero(v)), tiny32(v));
}

fn round32(v: f32) -> f32 {
    return select(round(v), zero_like(v), tiny32(v));
}

// sqrt(m 2^-149) = sqrt(2m) 2^-75 for a subnormal of bits m: the driver sees a normal number.
fn sqrt32(v: f32) -> f32 {
    if (below_zero(v)) {
        return nan32();
    }
    // Zeros as they are: a driver may take sqrt as x * rsqrt(x), NaN at 0.
    if ((bitcast<u32>(v) & 0x7fffffffu) == 0u) {
        return v;
    }
    if (tiny32(v)) {
        return sqrt(f32(bitcast<u32>(v)) * 2.0) * bitcast<f32>(0x1a000000u);
    }
    return sqrt(v);
}

// log(m 2^-149) = log(m) - 149 ln 2 for a subnormal of bits m (149 ln 2 in two parts).
fn log32(v: f32) -> f32 {
    if (below_zero(v)) {
        return nan32();
    }
    if ((bitcast<u32>(v) & 0x7fffffffu) == 0u) {
        return f32_of_bits(0xff800000u);
    }
    if (tiny32(v)) {
        return (log(f32(bitcast<u32>(v))) - 103.2789306640625) + 7.606306489e-7;
    }
    return log(v);
}

// sin and cos: WGSL's builtins are accurate on [-pi, pi] only (NVIDIA's are off by 1e-3 at
// moderate arguments), so both reduce by pi/2 here and evaluate Cephes' sinf/cosf polynomials
// on [-pi/4, pi/4]. The reduction is exact for every f32 (Payne-Hanek in u32 arithmetic, which
// no driver flushes or reassociates): |x| = m 2^(E-150) times 96 bits of 2/pi from the bit
// where the product's integer part passes 4, low 96 bits of the product = x 2/pi mod 4.
// Within 2 ulp of the correctly rounded result over the whole f32 range (simulated in f32).

// 0, then the first 224 bits of 2/pi.
const TWO_OVER_PI = array<u32, 8>(0u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u,
    0x3c439041u, 0xfe5163abu);

// a * b as (low, high) words.
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let p00 = (a & 0xffffu) * (b & 0xffffu);
    let p01 = (a & 0xffffu) * (b >> 16u);
    let p10 = (a >> 16u) * (b & 0xffffu);
    let p11 = (a >> 16u) * (b >> 16u);
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return vec2<u32>((p00 & 0xffffu) | (mid << 16u), p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}

// 32 bits of `hi:lo` from bit `sh` (< 32) of hi on.
fn funnel(hi: u32, lo: u32, sh: u32) -> u32 {
    return select((hi << sh) | (lo >> (32u - sh)), hi, sh == 0u);
}

// |x| - q pi/2 in [-pi/4, pi/4] and q mod 4, for finite x.
struct Reduced {
    r: f32,
    q: u32,
}

fn reduce_pio2(x: f32) -> Reduced {
    let a = bitcast<u32>(x) & 0x7fffffffu;
    if (a <= 0x3f490fdbu) {
        return Reduced(bitcast<f32>(a), 0u);
    }
    let m = (a & 0x7fffffu) | 0x800000u;
    let first = (a >> 23u) - 120u;
    let w = first / 32u;
    let sh = first % 32u;
    var t = TWO_OVER_PI;
    let w0 = funnel(t[w], t[w + 1u], sh);
    let w1 = funnel(t[w + 1u], t[w + 2u], sh);
    let w2 = funnel(t[w + 2u], t[w + 3u], sh);
    let p2 = mul_wide(m, w2);
    let p1 = mul_wide(m, w1);
    let l0 = p2.x;
    let l1 = p2.y + p1.x;
    let l2 = p1.y + m * w0 + select(0u, 1u, l1 < p2.y);
    // Quadrant in the top two bits, then the fraction f of a quadrant, rounded to [-1/2, 1/2].
    var q = l2 >> 30u;
    var f2 = (l2 << 2u) | (l1 >> 30u);
    var f1 = (l1 << 2u) | (l0 >> 30u);
    var f0 = l0 << 2u;
    let negative = f2 >= 0x80000000u;
    if (negative) {
        q += 1u;
        f0 = ~f0 + 1u;
        f1 = ~f1 + select(0u, 1u, f0 == 0u);
        f2 = ~f2 + select(0u, 1u, f0 == 0u && f1 == 0u);
    }
    // |f| = f2:f1:f0 2^-96: normalise, then two 24-bit parts times pi/2 (also in two parts).
    var e = 0u;
    for (var k = 0; k < 2; k++) {
        if (f2 == 0u) {
            f2 = f1;
            f1 = f0;
            f0 = 0u;
            e += 32u;
        }
    }
    let lz = countLeadingZeros(f2);
    let h = funnel(f2, f1, lz);
    let l = funnel(f1, f0, lz);
    let scale = bitcast<f32>((103u - e - lz) << 23u);
    let fh = f32(h >> 8u) * scale;
    let fl = f32(((h & 0xffu) << 16u) | (l >> 16u)) * scale * 5.9604644775390625e-8;
    let r = fh * 1.5707963705062866 + (fh * -4.371138829e-8 + fl * 1.5707963705062866);
    return Reduced(select(r, -r, negative), q & 3u);
}

fn sin_poly(r: f32) -> f32 {
    let z = r * r;
    return r + r * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
}

fn cos_poly(r: f32) -> f32 {
    let z = r * r;
    return 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));
}

fn sin32(x: f32) -> f32 {
    let a = bitcast<u32>(x) & 0x7fffffffu;
    if (a >= 0x7f800000u) {
        return nan32();
    }
    // sin x rounds to x below 2^-12; returned as it is, so subnormals are kept.
    if (a < 0x39800000u) {
        return x;
    }
    let red = reduce_pio2(x);
    let s = select(sin_poly(red.r), cos_poly(red.r), (red.q & 1u) == 1u);
    let y = select(s, -s, red.q >= 2u);
    return select(y, -y, (bitcast<u32>(x) >> 31u) == 1u);
}

fn cos32(x: f32) -> f32 {
    if ((bitcast<u32>(x) & 0x7fffffffu) >= 0x7f800000u) {
        return nan32();
    }
    let red = reduce_pio2(x);
    let c = select(cos_poly(red.r), sin_poly(red.r), (red.q & 1u) == 1u);
    return select(c, -c, red.q == 1u || red.q == 2u);
}

// erf: its Taylor series below 1 (error < 1e-8), the Numerical Recipes erfc fit above
// (relative error < 1.2e-7 on erfc).
fn erf32(x: f32) -> f32 {
    let a = abs(x);
    if (a < 1.0) {
        let z = x * x;
        var term = x;
        var sum = x;
        for (var n = 1; n <= 11; n++) {
            term *= -z / f32(n);
            sum += term / f32(2 * n + 1);
        }
        return sum * 1.1283791670955126;
    }
    let t = 1.0 / (1.0 + 0.5 * a);
    let p = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
        + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    let c = t * exp(-a * a + p);
    return select(1.0 - c, c - 1.0, x < 0.0);
}

// x^e as Rust's powf (C99 pow): x^0 = 1 and 1^e = 1 even for NaN; a negative base takes
// integer exponents only (else NaN); zeros and infinities by the signs, negative for a
// negative base (-0 included) and an odd exponent; (-1)^inf = 1, |x| < 1 to +inf is 0.
fn pow32(x: f32, e: f32) -> f32 {
    if (e == 0.0 || x == 1.0) {
        return 1.0;
    }
    if (is_nan(x) || is_nan(e)) {
        return f32_of_bits(0x7fc00000u);
    }
    let inf = f32_of_bits(0x7f800000u);
    let ax = abs(x);
    if (abs(e) == inf) {
        if (ax == 1.0) {
            return 1.0;
        }
        return select(0.0, inf, (ax > 1.0) == (e > 0.0));
    }
    let is_int = floor(e) == e;
    let odd = is_int && abs(e) < 16777216.0 && !(floor(e * 0.5) == e * 0.5);
    let negate = odd && (bitcast<u32>(x) >> 31u) != 0u;
    var r = f32();
    if (ax == 0.0 || ax == inf) {
        r = select(0.0, inf, (ax == 0.0) == (e < 0.0));
    } else if (x < 0.0 && !is_int) {
        return f32_of_bits(0x7fc00000u);
    } else {
        r = exp2(e * log2(ax));
    }
    return select(r, -r, negate);
}

// Every map and fused program (src/wgpu/elementwise.rs, fused.rs): `op_at(i)` loads element i
// of each input and computes the output element.
// @kernel mapn
@compute @workgroup_size(WG)
fn mapn(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    let n = md[0];
    let first = w * Y_EPW;
    if (first >= n) {
        return;
    }
    for (var k = 0u; k < Y_EPW; k++) {
        let i = first + k;
        if (i < n) {
            y_set(i, op_at(i));
        }
    }
    y_flush(w);
}

// An input stored transposed to the output (a column-major [rows, cols]) goes through a 32x32
// tile in workgroup memory, read along its contiguous rows and used along the output's: both
// the loads and the stores are coalesced. `NAME_stage` fills the tile (no-op for other inputs),
// `NAME_tget` reads element i. md[EXTRA..] = rows, cols.
// @kernel map1_t
@compute @workgroup_size(32, 8)
fn map1_t(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let rows = md[EXTRA];
    let cols = md[EXTRA + 1u];
    let tiles = (cols + 31u) / 32u;
    let t = wid.x + wid.y * nwg.x;
    let r0 = (t / tiles) * 32u;
    let c0 = (t % tiles) * 32u;
    if (r0 >= rows) {
        return;
    }
    x_stage(r0, c0, lid, rows, cols);
    workgroupBarrier();
    for (var j = lid.y; j < 32u; j += 8u) {
        let r = r0 + j;
        let c = c0 + lid.x;
        if (r < rows && c < cols) {
            let i = r * cols + c;
            y_set(i, op(x_tget(i, lid.x, j)));
        }
    }
}

// @kernel map2_t
@compute @workgroup_size(32, 8)
fn map2_t(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let rows = md[EXTRA];
    let cols = md[EXTRA + 1u];
    let tiles = (cols + 31u) / 32u;
    let t = wid.x + wid.y * nwg.x;
    let r0 = (t / tiles) * 32u;
    let c0 = (t % tiles) * 32u;
    if (r0 >= rows) {
        return;
    }
    a_stage(r0, c0, lid, rows, cols);
    b_stage(r0, c0, lid, rows, cols);
    workgroupBarrier();
    for (var j = lid.y; j < 32u; j += 8u) {
        let r = r0 + j;
        let c = c0 + lid.x;
        if (r < rows && c < cols) {
            let i = r * cols + c;
            y_set(i, op(a_tget(i, lid.x, j), b_tget(i, lid.x, j)));
        }
    }
}

// Four elements per invocation, UNROLL times (grid-strided, so each load stays coalesced):
// vector loads and stores where the layouts allow (`op_at4(i)`).
// @kernel mapn_v4
@compute @workgroup_size(WG)
fn mapn_v4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let stride = nwg.x * nwg.y * WG * 4u;
    for (var u = 0u; u < UNROLL; u++) {
        let i = flat_id(gid, nwg) * 4u + u * stride;
        if (i < md[0]) {
            y_set4(i, op_at4(i));
        }
    }
}
