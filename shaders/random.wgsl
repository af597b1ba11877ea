// Random draws exactly as spec::random defines them: element i sits at stream position
// offset + i (mod 2^64), whose 32-bit word is a lane of the Philox 4x32-10 block pos / 4.
// Elements go in groups of four, [4q, 4q + 4): positions P = offset + 4q .. P + 3, which are
// lanes P % 4 .. of block P / 4 and, unless offset is a multiple of 4, of the next block too.
// Each invocation makes four groups, q = g, g + T, g + 2T, g + 3T (T invocations in the grid):
// their blocks run side by side in the four lanes of vec4<u32> words (four independent chains
// of multiplies to interleave), and neighbouring invocations write neighbouring groups, each in
// whole words (a vector store where the dtype allows), so that stores stay coalesced and no
// output word is shared by two invocations.
//
// The builder adds: `R` (the compute type), `RAND_TAU` (2 pi rounded to R), `rand_unit(n)`
// (n 2^-24, exact), `rand_ln`, `rand_sincos` (vec2(sin, cos)), `rand_keep` (identity that no
// compiler sees through), `rand_mul(m, x)` (the 64-bit products m x[i] as high and low words),
// `rand_put(q, v)` (group q's four values into y) and `param(k)`. Metadata after the two
// parameters: offset (lo, hi), seed (lo, hi).

const PHILOX_M0: u32 = 0xD2511F53u;
const PHILOX_M1: u32 = 0xCD9E8D57u;
const PHILOX_W0: u32 = 0x9E3779B9u;
const PHILOX_W1: u32 = 0xBB67AE85u;

// The 64-bit products of a multiplier and four words.
struct Wide {
    hi: vec4<u32>,
    lo: vec4<u32>,
}

// Four Philox blocks, lane i of word j being word j of block i.
struct Blocks {
    w0: vec4<u32>,
    w1: vec4<u32>,
    w2: vec4<u32>,
    w3: vec4<u32>,
}

// The blocks whose 62-bit counters are (lo, hi) in each lane, for key (seed lo, seed hi).
fn philox4(lo: vec4<u32>, hi: vec4<u32>, seed: vec2<u32>) -> Blocks {
    var c = Blocks(lo, hi, vec4<u32>(0u), vec4<u32>(0u));
    var k = seed;
    for (var round = 0u; round < 10u; round++) {
        let p0 = rand_mul(PHILOX_M0, c.w0);
        let p1 = rand_mul(PHILOX_M1, c.w2);
        c = Blocks(p1.hi ^ c.w1 ^ vec4<u32>(k.x), p1.lo, p0.hi ^ c.w3 ^ vec4<u32>(k.y), p0.lo);
        k += vec2<u32>(PHILOX_W0, PHILOX_W1);
    }
    return c;
}

// Block i of four, as its words.
fn block_of(b: Blocks, i: u32) -> vec4<u32> {
    return vec4<u32>(b.w0[i], b.w1[i], b.w2[i], b.w3[i]);
}

// The groups q.x .. q.w of an invocation: `a` holds block P / 4 of each, `b` the block after
// (computed only when offset is not a multiple of 4), `lane` = P % 4 (the same for all).
struct Groups {
    a: Blocks,
    b: Blocks,
    lane: u32,
}

fn rand_groups(q: vec4<u32>) -> Groups {
    let off = vec2<u32>(md[EXTRA + 6u], md[EXTRA + 7u]);
    let seed = vec2<u32>(md[EXTRA + 8u], md[EXTRA + 9u]);
    // Block P / 4 = offset / 4 + q, modulo 2^62.
    let lo = vec4<u32>((off.x >> 2u) | (off.y << 30u)) + q;
    let carry = select(vec4<u32>(0u), vec4<u32>(1u), lo < q);
    let hi = (vec4<u32>(off.y >> 2u) + carry) & vec4<u32>(0x3fffffffu);
    let zero = vec4<u32>(0u);
    var r = Groups(philox4(lo, hi, seed), Blocks(zero, zero, zero, zero), off.x & 3u);
    // The same lane for every invocation of a dispatch: a uniform branch.
    if (r.lane != 0u) {
        let lo1 = lo + vec4<u32>(1u);
        let carry1 = select(vec4<u32>(0u), vec4<u32>(1u), lo1 == zero);
        r.b = philox4(lo1, (hi + carry1) & vec4<u32>(0x3fffffffu), seed);
    }
    return r;
}

// The Philox words around group i of four: `a` its block P / 4, `b` the next, `lane` = P % 4.
struct RandWords {
    a: vec4<u32>,
    b: vec4<u32>,
    lane: u32,
}

fn rand_words(r: Groups, i: u32) -> RandWords {
    return RandWords(block_of(r.a, i), block_of(r.b, i), r.lane);
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

// The groups of invocation g, and how many groups there are (ceil(n / 4), without
// overflowing n + 3). T <= 2^28 + 2^24 (n < 2^32), so g + 3T does not wrap.
fn rand_quads(gid: vec3<u32>, nwg: vec3<u32>) -> vec4<u32> {
    let g = flat_id(gid, nwg);
    let t = nwg.x * nwg.y * WG;
    return vec4<u32>(g, g + t, g + 2u * t, g + 3u * t);
}

fn rand_group_count() -> u32 {
    let n = md[0];
    return n / 4u + select(0u, 1u, n % 4u != 0u);
}

// mean + std (r cos t, r sin t) for the pair of words w: r = sqrt(-2 ln u1), t = 2 pi u2.
fn rand_box_muller(w: vec2<u32>, mean: R, sd: R) -> vec2<R> {
    let u1 = rand_unit((w.x >> 8u) + 1u);
    let u2 = rand_unit(w.y >> 8u);
    let r = sqrt(R(-2.0) * rand_ln(u1));
    let sc = rand_sincos(rand_keep(RAND_TAU * u2));
    return vec2<R>(mean + rand_keep(sd * (r * sc.y)), mean + rand_keep(sd * (r * sc.x)));
}

// Group q (lane i of the invocation's groups) of a uniform draw, if it exists.
fn uniform_group(r: Groups, i: u32, q: u32, groups: u32, low: R, span: R) {
    if (q >= groups) {
        return;
    }
    let w = rand_four(rand_words(r, i));
    let v = vec4<R>(
        low + rand_keep(span * rand_unit(w.x >> 8u)),
        low + rand_keep(span * rand_unit(w.y >> 8u)),
        low + rand_keep(span * rand_unit(w.z >> 8u)),
        low + rand_keep(span * rand_unit(w.w >> 8u)),
    );
    rand_put(q, v);
}

// Group q of a normal draw. Pairs start at even lanes: from lane 0 or 2, two pairs give (cos,
// sin, cos, sin); from an odd lane, the sine half of the pair before, a whole pair, and the
// cosine half of the next.
fn normal_group(r: Groups, i: u32, q: u32, groups: u32, mean: R, sd: R) {
    if (q >= groups) {
        return;
    }
    let w = rand_words(r, i);
    let from0 = w.lane < 2u;
    let p0 = rand_box_muller(select(w.a.zw, w.a.xy, from0), mean, sd);
    let p1 = rand_box_muller(select(w.b.xy, w.a.zw, from0), mean, sd);
    var v = vec4<R>(p0, p1);
    if ((w.lane & 1u) != 0u) {
        let p2 = rand_box_muller(select(w.b.zw, w.b.xy, from0), mean, sd);
        v = vec4<R>(p0.y, p1, p2.x);
    }
    rand_put(q, v);
}

// f32 pieces: accurate on every driver (WGSL's log/sin/cos may be good to only 2^-11).

// x, through a max with the -inf of md[1] (written by the host into every kernel's metadata,
// which no compiler can know): keeps a product from being fused into the add after it, and a
// sum from being re-associated away. A NaN passes by the max: a driver's max may return its
// other operand (lavapipe's did, -inf: dropout turned NaN into -inf).
fn keep32(x: f32) -> f32 {
    return select(max(x, bitcast<f32>(md[1])), x, is_nan(x));
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

// @section mul_wide
// Through u64 (SHADER_INT64): one widening multiply per word where the hardware has it.
fn rand_mul(m: u32, x: vec4<u32>) -> Wide {
    let p = vec4<u64>(x) * u64(m);
    return Wide(vec4<u32>(p >> vec4<u32>(32u)), vec4<u32>(p));
}

// @section mul_pieces
// From 16-bit halves, every partial product and sum within 32 bits: m x = mh xh 2^32 +
// (mh xl + ml xh) 2^16 + ml xl, the middle terms added in two steps so that neither carries
// out (u, v < 2^32); the low word is the wrapping product.
fn rand_mul(m: u32, x: vec4<u32>) -> Wide {
    let ml = m & 0xffffu;
    let mh = m >> 16u;
    let xl = x & vec4<u32>(0xffffu);
    let xh = x >> vec4<u32>(16u);
    let u = mh * xl + ((ml * xl) >> vec4<u32>(16u));
    let v = ml * xh + (u & vec4<u32>(0xffffu));
    return Wide(mh * xh + (u >> vec4<u32>(16u)) + (v >> vec4<u32>(16u)), m * x);
}

// @section put_vec
// Four elements in one vector store (f32, f16): past n only at the end, inside the buffer
// (tensor buffers are whole 16-byte words).
fn rand_put(q: u32, v: vec4<R>) {
    y_set4(4u * q, v);
}

// @section put_packed
// Two words of two halves each; past n only at the end, inside the buffer.
fn rand_put(q: u32, v: vec4<R>) {
    y_set(4u * q, v.x);
    y_set(4u * q + 1u, v.y);
    y_flush(2u * q);
    y_set(4u * q + 2u, v.z);
    y_set(4u * q + 3u, v.w);
    y_flush(2u * q + 1u);
}

// @section put_each
// Element by element, those below n (a group of f64 is two 16-byte words: the second may lie
// past the buffer).
fn rand_put(q: u32, v: vec4<R>) {
    let n = md[0];
    y_set(4u * q, v.x);
    if (4u * q + 1u < n) {
        y_set(4u * q + 1u, v.y);
    }
    if (4u * q + 2u < n) {
        y_set(4u * q + 2u, v.z);
    }
    if (4u * q + 3u < n) {
        y_set(4u * q + 3u, v.w);
    }
}

// @kernel dropout
// Group q of a dropout: each element below n reads x (through x_at: any layout), is kept
// where its uniform is at least p, and becomes x * scale, else x * 0 (a NaN stays NaN).
fn dropout_group(r: Groups, i: u32, q: u32, groups: u32, p: R, scale: R) {
    if (q >= groups) {
        return;
    }
    let w = rand_four(rand_words(r, i));
    let n = md[0];
    let e = 4u * q;
    var x = vec4<R>(R(0));
    x.x = x_load(x_at(e));
    if (e + 1u < n) {
        x.y = x_load(x_at(e + 1u));
    }
    if (e + 2u < n) {
        x.z = x_load(x_at(e + 2u));
    }
    if (e + 3u < n) {
        x.w = x_load(x_at(e + 3u));
    }
    let u = vec4<R>(rand_unit(w.x >> 8u), rand_unit(w.y >> 8u), rand_unit(w.z >> 8u), rand_unit(w.w >> 8u));
    let m = select(vec4<R>(R(0)), vec4<R>(scale), u >= vec4<R>(p));
    rand_put(q, vec4<R>(rand_keep(x.x * m.x), rand_keep(x.y * m.y), rand_keep(x.z * m.z), rand_keep(x.w * m.w)));
}

@compute @workgroup_size(WG)
fn dropout(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = rand_quads(gid, nwg);
    let groups = rand_group_count();
    if (q.x >= groups) {
        return;
    }
    let r = rand_groups(q);
    let p = param(0u);
    let scale = param(1u);
    dropout_group(r, 0u, q.x, groups, p, scale);
    dropout_group(r, 1u, q.y, groups, p, scale);
    dropout_group(r, 2u, q.z, groups, p, scale);
    dropout_group(r, 3u, q.w, groups, p, scale);
}

// @kernel rand_uniform
@compute @workgroup_size(WG)
fn rand_uniform(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = rand_quads(gid, nwg);
    let groups = rand_group_count();
    if (q.x >= groups) {
        return;
    }
    let r = rand_groups(q);
    let low = param(0u);
    let span = param(1u) - low;
    uniform_group(r, 0u, q.x, groups, low, span);
    uniform_group(r, 1u, q.y, groups, low, span);
    uniform_group(r, 2u, q.z, groups, low, span);
    uniform_group(r, 3u, q.w, groups, low, span);
}

// @kernel rand_normal
@compute @workgroup_size(WG)
fn rand_normal(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = rand_quads(gid, nwg);
    let groups = rand_group_count();
    if (q.x >= groups) {
        return;
    }
    let r = rand_groups(q);
    let mean = param(0u);
    let sd = param(1u);
    // A loop, not four calls: each call inlines three Box-Muller transforms, which with f64's
    // emulated log, sin and cos took lavapipe 5 s to compile written out four times.
    for (var i = 0u; i < 4u; i++) {
        normal_group(r, i, q[i], groups, mean, sd);
    }
}
