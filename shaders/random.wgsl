// Random draws exactly as spec::random defines them: element i sits at stream position
// offset + i (mod 2^64), whose 32-bit word is a lane of the Philox 4x32-10 block pos / 4.
// One invocation makes the four elements [4g, 4g + 4): positions P = offset + 4g .. P + 3,
// which are lanes P % 4 .. of block P / 4 and, unless offset is a multiple of 4, of the next
// block too. Writing whole words of four elements keeps every output word (two f16 / bf16
// share one) to one invocation.
//
// The builder adds: `R` (the compute type), `RAND_TAU` (2 pi rounded to R), `rand_unit(n)`
// (n 2^-24, exact), `rand_ln`, `rand_sincos` (vec2(sin, cos)), `rand_keep` (identity that no
// compiler sees through), `mulhilo` (the 64-bit product of two u32 as vec2(lo, hi)), and
// `param(k)`. Metadata after the two parameters: offset (lo, hi), seed (lo, hi).

const PHILOX_M0: u32 = 0xD2511F53u;
const PHILOX_M1: u32 = 0xCD9E8D57u;
const PHILOX_W0: u32 = 0x9E3779B9u;
const PHILOX_W1: u32 = 0xBB67AE85u;

// The four words of block (lo, hi) for key (seed lo, seed hi).
fn philox(block: vec2<u32>, seed: vec2<u32>) -> vec4<u32> {
    var c = vec4<u32>(block.x, block.y, 0u, 0u);
    var k = seed;
    for (var round = 0u; round < 10u; round++) {
        if (round > 0u) {
            k += vec2<u32>(PHILOX_W0, PHILOX_W1);
        }
        let p0 = mulhilo(PHILOX_M0, c.x);
        let p1 = mulhilo(PHILOX_M1, c.z);
        c = vec4<u32>(p1.y ^ c.y ^ k.x, p1.x, p0.y ^ c.w ^ k.y, p0.x);
    }
    return c;
}

// The Philox words around positions P .. P + 3 (P = offset + 4g): `a` is block P / 4, `b` the
// block after it (only computed when P is not a multiple of 4), `lane` = P % 4.
struct RandWords {
    a: vec4<u32>,
    b: vec4<u32>,
    lane: u32,
}

fn rand_words(g: u32) -> RandWords {
    let off = vec2<u32>(md[EXTRA + 6u], md[EXTRA + 7u]);
    let seed = vec2<u32>(md[EXTRA + 8u], md[EXTRA + 9u]);
    // P = offset + 4g mod 2^64 (4g < 2^32: at most 2^30 invocations); blocks are P / 4 and
    // the one after it, modulo 2^62.
    let lo = off.x + 4u * g;
    let hi = off.y + select(0u, 1u, lo < off.x);
    let b0 = vec2<u32>((lo >> 2u) | (hi << 30u), hi >> 2u);
    var r = RandWords(philox(b0, seed), vec4<u32>(0u), lo & 3u);
    // The same lane for every invocation of a dispatch: a uniform branch.
    if (r.lane != 0u) {
        let b1lo = b0.x + 1u;
        r.b = philox(vec2<u32>(b1lo, (b0.y + select(0u, 1u, b1lo == 0u)) & 0x3fffffffu), seed);
    }
    return r;
}

// The words of positions P .. P + 3 (no dynamic indexing: a switch on the uniform lane).
fn rand_four(r: RandWords) -> vec4<u32> {
    switch (r.lane) {
        case 0u: {
            return r.a;
        }
        case 1u: {
            return vec4<u32>(r.a.yzw, r.b.x);
        }
        case 2u: {
            return vec4<u32>(r.a.zw, r.b.xy);
        }
        default: {
            return vec4<u32>(r.a.w, r.b.xyz);
        }
    }
}

// Writes v[j] to element 4g + j for the elements below n, one output word at a time.
fn rand_write(g: u32, v: vec4<R>) {
    let n = md[0];
    let first = 4u * g;
    for (var k = 0u; k < 4u / Y_EPW; k++) {
        if (k * Y_EPW >= n - first) {
            break;
        }
        for (var e = 0u; e < Y_EPW; e++) {
            let j = k * Y_EPW + e;
            if (j < n - first) {
                y_set(first + j, v[j]);
            }
        }
        y_flush(first / Y_EPW + k);
    }
}

// mean + std (r cos t, r sin t) for the pair of words w: r = sqrt(-2 ln u1), t = 2 pi u2.
fn rand_box_muller(w: vec2<u32>) -> vec2<R> {
    let u1 = rand_unit((w.x >> 8u) + 1u);
    let u2 = rand_unit(w.y >> 8u);
    let r = sqrt(R(-2.0) * rand_ln(u1));
    let sc = rand_sincos(rand_keep(RAND_TAU * u2));
    let mean = param(0u);
    let sd = param(1u);
    return vec2<R>(mean + rand_keep(sd * (r * sc.y)), mean + rand_keep(sd * (r * sc.x)));
}

// Whether invocation g has elements to make: g < ceil(n / 4), without overflowing n + 3.
fn rand_active(g: u32) -> bool {
    let n = md[0];
    return g < n / 4u + select(0u, 1u, n % 4u != 0u);
}

// f32 pieces: accurate on every driver (WGSL's log/sin/cos may be good to only 2^-11).

// x, through a max with the -inf of md[1] (written by the host into every kernel's metadata,
// which no compiler can know): keeps a product from being fused into the add after it, and a
// sum from being re-associated away.
fn keep32(x: f32) -> f32 {
    return max(x, bitcast<f32>(md[1]));
}

// ln x for a positive normal x: x = 2^k m with m in [sqrt(1/2), sqrt(2)), then
// ln m = f - f^2/2 + s (f^2/2 + R(s^2)) with f = m - 1, s = f / (2 + f) (fdlibm's scheme, R
// its Taylor series to s^8: error below 2^-28 relative).
fn ln32(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    var k = i32(b >> 23u) - 127;
    var m = bitcast<f32>((b & 0x007fffffu) | 0x3f800000u);
    if (m > 1.4142135) {
        m *= 0.5;
        k += 1;
    }
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let hfsq = 0.5 * f * f;
    let r = z * (0.6666666666666666 + z * (0.4 + z * (0.2857142857142857 + z * 0.2222222222222222)));
    let dk = f32(k);
    // ln 2 in a 16-bit head (exact times k) and its tail.
    return dk * 0.693145751953125 - ((hfsq - (s * (hfsq + r) + dk * 1.428606765330187e-06)) - f);
}

// (sin t, cos t) for t in [0, 2 pi]: t - k pi/2 exactly for k = round(t 2/pi) <= 4, with
// pi/2 in 21 + 21 + 24 bits (k times each head is exact), then Taylor polynomials to r^9 and
// r^10 on |r| <= pi/4 (truncation below 2^-28).
fn sincos32(t: f32) -> vec2<f32> {
    let k = round(t * 0.63661975);
    let r = keep32(keep32(t - k * 1.570796012878418) - k * 3.139164164167596e-07) - k * 6.223371969669989e-14;
    let z = r * r;
    let s = r + r * z * (-0.16666667 + z * (0.008333333 + z * (-1.984127e-4 + z * 2.7557319e-6)));
    let c = 1.0 - 0.5 * z + z * z * (0.041666668 + z * (-0.0013888889 + z * (2.4801587e-5 + z * -2.7557319e-7)));
    switch (u32(k) & 3u) {
        case 0u: {
            return vec2<f32>(s, c);
        }
        case 1u: {
            return vec2<f32>(c, -s);
        }
        case 2u: {
            return vec2<f32>(-s, -c);
        }
        default: {
            return vec2<f32>(-c, s);
        }
    }
}

// @section real_f32
alias R = f32;
const RAND_TAU: f32 = 6.2831854820251465;
fn rand_unit(n: u32) -> f32 {
    return f32(n) * 5.9604644775390625e-08;
}
fn rand_keep(x: f32) -> f32 {
    return keep32(x);
}
fn rand_ln(x: f32) -> f32 {
    return ln32(x);
}
fn rand_sincos(t: f32) -> vec2<f32> {
    return sincos32(t);
}

// @section real_f64
alias R = f64;
const RAND_TAU: f64 = 6.283185307179586lf;
fn rand_unit(n: u32) -> f64 {
    return f64(n) * 5.9604644775390625e-08lf;
}
fn rand_keep(x: f64) -> f64 {
    return f64_keep(x);
}
fn rand_ln(x: f64) -> f64 {
    return f64_log(x);
}
fn rand_sincos(t: f64) -> vec2<f64> {
    return f64_sincos(t);
}

// @section mulhilo_native
fn mulhilo(a: u32, b: u32) -> vec2<u32> {
    let p = u64(a) * u64(b);
    return vec2<u32>(u32(p), u32(p >> 32u));
}

// @section mulhilo_emulated
fn mulhilo(a: u32, b: u32) -> vec2<u32> {
    let al = a & 0xffffu;
    let ah = a >> 16u;
    let bl = b & 0xffffu;
    let bh = b >> 16u;
    let lh = al * bh;
    let hl = ah * bl;
    let mid = ((al * bl) >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
    return vec2<u32>(a * b, ah * bh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u));
}

// @kernel rand_uniform
@compute @workgroup_size(WG)
fn rand_uniform(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = flat_id(gid, nwg);
    if (!rand_active(g)) {
        return;
    }
    let w = rand_four(rand_words(g));
    let low = param(0u);
    let span = param(1u) - low;
    var v: vec4<R>;
    for (var j = 0u; j < 4u; j++) {
        v[j] = low + rand_keep(span * rand_unit(w[j] >> 8u));
    }
    rand_write(g, v);
}

// @kernel rand_normal
@compute @workgroup_size(WG)
fn rand_normal(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = flat_id(gid, nwg);
    if (!rand_active(g)) {
        return;
    }
    let r = rand_words(g);
    // Pairs start at even lanes: from lane 0 or 2, two pairs give (cos, sin, cos, sin); from an
    // odd lane, the sine half of the pair before, a whole pair, and the cosine half of the next.
    let from0 = r.lane < 2u;
    let p0 = rand_box_muller(select(r.a.zw, r.a.xy, from0));
    let p1 = rand_box_muller(select(r.b.xy, r.a.zw, from0));
    var v = vec4<R>(p0, p1);
    if ((r.lane & 1u) != 0u) {
        let p2 = rand_box_muller(select(r.b.zw, r.b.xy, from0));
        v = vec4<R>(p0.y, p1, p2.x);
    }
    rand_write(g, v);
}
