// f64 helpers, included when a kernel computes in f64 (SHADER_F64).
//
// Vulkan gives f64 only arithmetic, sqrt, floor/ceil/round/trunc, abs, sign, min/max, fma and
// ldexp: exp, expm1, log, sin, cos, tanh, erf and pow are written here after fdlibm / musl (exp
// and log reduced by ln 2, sin/cos by pi/2 with fdlibm's kernel polynomials, erf with s_erf's
// rational fits; pow through a double-double log). Against glibc on lavapipe they are within
// 1 ulp (tanh 2) over their whole range, with IEEE special values; sin and cos reduce exactly
// for every finite x (Cody-Waite up to 2^20 pi/2, Payne-Hanek beyond). Subnormal results need
// a driver that keeps f64 denormals.
//
// Nothing here reads the bits of an f64 (that needs SHADER_INT64): exponents come from
// comparisons and a conversion to f32, NaN and signs from the f32 conversion (which keeps
// them), powers of two from ldexp kept to normal results. Products are never assumed unfused:
// extra precision comes from splitting at f32 precision (a conversion, which no compiler
// fuses), and the error terms of sums go through `f64_keep`: Mesa's NIR re-associates float
// arithmetic not marked NoContraction (naga never marks it), turning `(a + b) - a` into `b`
// and every compensation term into 0.

// NaN test through the f32 conversion (which keeps NaN), immune to folding of `v != v`.
// fence32 of an f64 (common.wgsl).
fn fence64(x: f64) -> f64 {
    return select(x, 0.0lf, md[1] == 0u);
}

fn is_nan64(v: f64) -> bool {
    return is_nan(f32(v));
}

fn max_nan64(a: f64, b: f64) -> f64 {
    if (is_nan64(a) || is_nan64(b)) {
        return select(b, a, is_nan64(a));
    }
    return max(a, b);
}

fn min_nan64(a: f64, b: f64) -> f64 {
    if (is_nan64(a) || is_nan64(b)) {
        return select(b, a, is_nan64(a));
    }
    return min(a, b);
}

// Truncating, saturating f64 to u32; NaN gives 0.
fn f64_to_u32(v: f64) -> u32 {
    if (!(v > 0.0lf)) {
        return 0u;
    }
    if (v >= 4294967296.0lf) {
        return 0xffffffffu;
    }
    return u32(v);
}

// x, through an operation compilers cannot see through or fuse across: a max with the -inf
// every kernel's metadata carries in md[1] (written by the host, unknowable to a compiler; a
// buffer's length would not do, since a driver knows its bounds). A NaN passes by the max,
// which may return its other operand (keep32 of random.wgsl).
fn f64_keep(x: f64) -> f64 {
    return select(max(x, f64(bitcast<f32>(md[1]))), x, is_nan64(x));
}

fn f64_inf() -> f64 {
    return f64(f32_of_bits(0x7f800000u));
}

fn f64_nan() -> f64 {
    return f64(f32_of_bits(0x7fc00000u));
}

// The sign bit (of zeros too), read through the f32 conversion, which keeps it.
fn f64_signbit(v: f64) -> bool {
    return (bitcast<u32>(f32(v)) >> 31u) != 0u;
}

fn f64_is_finite(v: f64) -> bool {
    return abs(v) <= 1.7976931348623157e308lf;
}

// |x| = m * 2^e with m in [1, 2), for finite non-zero x (subnormals included).
struct F64Parts {
    m: f64,
    e: i32,
}

fn f64_parts(x: f64) -> F64Parts {
    var a = abs(x);
    var e = 0;
    // Bring a into [2^-114, 2^64), where its f32 conversion is a normal number.
    if (a >= 1.3407807929942597e154lf) {
        a *= 7.458340731200207e-155lf;
        e += 512;
    }
    if (a >= 1.157920892373162e77lf) {
        a *= 8.636168555094445e-78lf;
        e += 256;
    }
    if (a >= 3.402823669209385e38lf) {
        a *= 2.938735877055719e-39lf;
        e += 128;
    }
    if (a >= 1.8446744073709552e19lf) {
        a *= 5.421010862427522e-20lf;
        e += 64;
    }
    if (a < 7.458340731200207e-155lf) {
        a *= 1.3407807929942597e154lf;
        e -= 512;
    }
    if (a < 8.636168555094445e-78lf) {
        a *= 1.157920892373162e77lf;
        e -= 256;
    }
    if (a < 2.938735877055719e-39lf) {
        a *= 3.402823669209385e38lf;
        e -= 128;
    }
    if (a < 5.421010862427522e-20lf) {
        a *= 1.8446744073709552e19lf;
        e -= 64;
    }
    // The f32 exponent is floor(log2 a), or one more where the conversion rounded up.
    var k = i32((bitcast<u32>(f32(a)) >> 23u) & 0xffu) - 127;
    var m = ldexp(a, -k);
    if (m < 1.0lf) {
        m *= 2.0lf;
        k -= 1;
    }
    return F64Parts(m, e + k);
}

// y * 2^k, rounded once, for y in [0.5, 4] and k in [-1100, 1100] (overflow gives inf,
// underflow a subnormal or 0). ldexp itself only ever makes normal numbers.
fn f64_scale(y: f64, k: i32) -> f64 {
    if (k > 1000) {
        return ldexp(y, k - 1000) * 1.0715086071862673e301lf;
    }
    if (k < -1000) {
        return ldexp(y, k + 1000) * 9.332636185032189e-302lf;
    }
    return ldexp(y, k);
}

// ---- Double-double pieces (a value as an unevaluated sum hi + lo) ----

// a + b = s + e exactly.
fn f64_two_sum(a: f64, b: f64) -> vec2<f64> {
    let s = f64_keep(a + b);
    let bb = f64_keep(s - a);
    // Each piece kept: the error is algebraically zero, which a reassociating compiler sees.
    return vec2<f64>(s, f64_keep(a - f64_keep(s - bb)) + f64_keep(b - bb));
}

// a + b = s + e exactly, for |a| >= |b| (or a = 0).
fn f64_fast_two_sum(a: f64, b: f64) -> vec2<f64> {
    let s = f64_keep(a + b);
    return vec2<f64>(s, b - f64_keep(s - a));
}

// a * b = p + e exactly (barring overflow, |a|, |b| < 2^995): Veltkamp's split of each factor
// into 26 + 27 bits, so the partial products are exact whether or not a driver fuses them.
// Every step is kept opaque: the error is algebraically zero to a reassociating compiler, and
// a split through f32 (`f64(f32(a))`) is a round trip a compiler may drop.
fn f64_split(a: f64) -> vec2<f64> {
    let c = f64_keep(134217729.0lf * a);
    let hi = f64_keep(c - f64_keep(c - a));
    return vec2<f64>(hi, f64_keep(a - hi));
}

fn f64_two_prod(a: f64, b: f64) -> vec2<f64> {
    let p = f64_keep(a * b);
    let sa = f64_split(a);
    let sb = f64_split(b);
    let e = f64_keep(f64_keep(f64_keep(sa.x * sb.x - p) + sa.x * sb.y) + sa.y * sb.x) + sa.y * sb.y;
    return vec2<f64>(p, e);
}

// (a.x + a.y) + (b.x + b.y), renormalised.
fn f64_dd_add(a: vec2<f64>, b: vec2<f64>) -> vec2<f64> {
    let s = f64_two_sum(a.x, b.x);
    return f64_fast_two_sum(s.x, s.y + a.y + b.y);
}

// ---- exp, expm1 ----

const F64_LN2_HI: f64 = 6.93147180369123816490e-01lf;
const F64_LN2_LO: f64 = 1.90821492927058770002e-10lf;
const F64_INV_LN2: f64 = 1.44269504088896338700e+00lf;

// 2^k * e^(hi - lo) for hi - lo within [-ln2/2, ln2/2] (a little more is fine), with lo
// carrying what hi misses of the reduced argument.
fn f64_exp_reduced(hi: f64, lo: f64, k: i32) -> f64 {
    let x = hi - lo;
    let xx = x * x;
    let c = x - xx * (1.66666666666666019037e-01lf + xx * (-2.77777777770155933842e-03lf
        + xx * (6.61375632143793436117e-05lf + xx * (-1.65339022054652515390e-06lf
        + xx * 4.13813679705723846039e-08lf))));
    let y = 1.0lf - ((lo - (x * c) / (2.0lf - c)) - hi);
    return f64_scale(y, k);
}

// e^(h + l) for a double-double argument (|l| tiny against |h|).
fn f64_exp_dd(h: f64, l: f64) -> f64 {
    if (h > 709.782712893383973096lf) {
        return f64_inf();
    }
    if (h < -745.13321910194110842lf) {
        return 0.0lf;
    }
    var k = 0;
    var hi = h;
    var lo = -l;
    if (abs(h) > 0.34657359027997264lf) {
        k = i32(round(h * F64_INV_LN2));
        let kf = f64(k);
        hi = h - kf * F64_LN2_HI;
        lo = kf * F64_LN2_LO - l;
    }
    return f64_exp_reduced(hi, lo, k);
}

fn f64_exp(x: f64) -> f64 {
    if (is_nan64(x)) {
        return x;
    }
    if (abs(x) < 3.725290298461914e-09lf) {
        return 1.0lf + x;
    }
    return f64_exp_dd(x, 0.0lf);
}

// e^x - 1, accurate near 0 (fdlibm's s_expm1 scheme).
fn f64_expm1(x_in: f64) -> f64 {
    var x = x_in;
    if (is_nan64(x)) {
        return x;
    }
    let neg = x < 0.0lf;
    let a = abs(x);
    if (a >= 38.816242111356935lf) {
        if (neg) {
            return -1.0lf;
        }
        if (x > 709.782712893383973096lf) {
            return f64_inf();
        }
    }
    var k = 0;
    var c = 0.0lf;
    if (a > 0.34657359027997264lf) {
        var hi = f64();
        var lo = f64();
        if (a < 1.0397207708399179lf) {
            k = select(1, -1, neg);
            hi = x - f64(k) * F64_LN2_HI;
            lo = f64(k) * F64_LN2_LO;
        } else {
            k = i32(x * F64_INV_LN2 + select(0.5lf, -0.5lf, neg));
            let t = f64(k);
            hi = x - t * F64_LN2_HI;
            lo = t * F64_LN2_LO;
        }
        x = f64_keep(hi - lo);
        c = (hi - x) - lo;
    } else if (a < 5.551115123125783e-17lf) {
        return x;
    }
    let hfx = 0.5lf * x;
    let hxs = x * hfx;
    let r1 = 1.0lf + hxs * (-3.33333333333331316428e-02lf + hxs * (1.58730158725481460165e-03lf
        + hxs * (-7.93650757867487942473e-05lf + hxs * (4.00821782732936239552e-06lf
        + hxs * -2.01099218183624371326e-07lf))));
    let t = 3.0lf - r1 * hfx;
    var e = hxs * ((r1 - t) / (6.0lf - x * t));
    if (k == 0) {
        return x - (x * e - hxs);
    }
    e = x * (e - c) - c;
    e -= hxs;
    if (k == -1) {
        return 0.5lf * (x - e) - 0.5lf;
    }
    if (k == 1) {
        if (x < -0.25lf) {
            return -2.0lf * (e - (x + 0.5lf));
        }
        return 1.0lf + 2.0lf * (x - e);
    }
    if (k <= -2 || k > 56) {
        return f64_scale(1.0lf - (e - x), k) - 1.0lf;
    }
    if (k < 20) {
        let y = (1.0lf - ldexp(1.0lf, -k)) - (e - x);
        return ldexp(y, k);
    }
    let y = (x - (e + ldexp(1.0lf, -k))) + 1.0lf;
    return ldexp(y, k);
}

// ---- log ----

fn f64_log(x: f64) -> f64 {
    if (is_nan64(x) || x < 0.0lf) {
        return select(f64_nan(), x, is_nan64(x));
    }
    if (x == 0.0lf) {
        return -f64_inf();
    }
    if (!f64_is_finite(x)) {
        return x;
    }
    let p = f64_parts(x);
    var m = p.m;
    var k = p.e;
    if (m > 1.4142135623730951lf) {
        m *= 0.5lf;
        k += 1;
    }
    // log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)), s = f / (2 + f).
    let f = m - 1.0lf;
    let hfsq = 0.5lf * f * f;
    let s = f / (2.0lf + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (3.999999999940941908e-01lf + w * (2.222219843214978396e-01lf + w * 1.531383769920937332e-01lf));
    let t2 = z * (6.666666666666735130e-01lf + w * (2.857142874366239149e-01lf
        + w * (1.818357216161805012e-01lf + w * 1.479819860511658591e-01lf)));
    let dk = f64(k);
    return s * (hfsq + t2 + t1) + dk * F64_LN2_LO - hfsq + f + dk * F64_LN2_HI;
}

// ln x as a double-double with relative error about 2^-100 in its parts and 2^-66 overall,
// for finite positive x (pow's logarithm: y ln x may reach 745, so 2^-53 would not do).
fn f64_log_dd(x: f64) -> vec2<f64> {
    let p = f64_parts(x);
    var m = p.m;
    var k = p.e;
    // m / b within [sqrt(3/4), sqrt(3/2)) keeps |s| <= 0.101.
    var b = 1.0lf;
    var lnb = vec2<f64>(0.0lf, 0.0lf);
    if (m >= 1.7320508075688772lf) {
        m *= 0.5lf;
        k += 1;
    } else if (m >= 1.224744871391589lf) {
        b = 1.5lf;
        lnb = vec2<f64>(0.4054651081081644lf, -2.8811380259626426e-18lf);
    }
    // s = (m - b) / (m + b) as sh + sl; ln(m / b) = 2s (1 + s^2/3 + s^4/5 + ...).
    let f = m - b;
    let d = f64_two_sum(m, b);
    let sh = f64_keep(f / d.x);
    let q = f64_two_prod(sh, d.x);
    // The remainder f - sh (m + b), exact, every step kept, then scaled by a reciprocal: on an
    // NVIDIA H200 the unkept form came out as 0 (the quotient of the tiny remainder, or a
    // rewrite of it), leaving pow(e, 709.78) 22 ulp off.
    let rem = f64_keep(f64_keep(f64_keep(f - q.x) - q.y) - f64_keep(sh * d.y));
    let sl = rem * f64_keep(1.0lf / d.x);
    let zz = f64_two_prod(sh, sh);
    let zh = zz.x;
    let zl = zz.y + 2.0lf * sh * sl;
    // w = z/3 (double-double) + z^2 (1/5 + z/7 + ...) (double); |w| <= 0.0035.
    let w1 = f64_two_prod(zh, 0.3333333333333333lf);
    let w1l = w1.y + zh * 1.850371707708594e-17lf + zl * 0.3333333333333333lf;
    let w2 = zh * zh * (0.2lf + zh * (0.14285714285714285lf + zh * (0.1111111111111111lf
        + zh * (0.09090909090909091lf + zh * (0.07692307692307693lf + zh * (0.06666666666666667lf
        + zh * (0.058823529411764705lf + zh * 0.05263157894736842lf)))))));
    // 2s + 2s w.
    let t = f64_two_prod(2.0lf * sh, w1.x);
    let tl = t.y + 2.0lf * sh * (w1l + w2) + 2.0lf * sl * w1.x;
    var r = f64_fast_two_sum(2.0lf * sh, t.x);
    r = f64_fast_two_sum(r.x, r.y + tl + 2.0lf * sl);
    // + k ln 2 + ln b (k ln2_hi: the product of a 11-bit and a 53-bit number, split exactly).
    let kf = f64(k);
    let kl = f64_two_prod(kf, 0.6931471805599453lf);
    let kln2 = f64_fast_two_sum(kl.x, kl.y + kf * 2.3190468138462996e-17lf);
    return f64_dd_add(f64_dd_add(kln2, lnb), r);
}

// ---- pow ----

// Whether y (finite) is an integer, and an odd one.
fn f64_is_int(y: f64) -> bool {
    return floor(y) == y;
}

fn f64_is_odd(y: f64) -> bool {
    return abs(y) < 9007199254740992.0lf && f64_is_int(y) && !f64_is_int(0.5lf * y);
}

// x^y with the semantics of Rust's powf (C99 pow): x^0 = 1 and 1^y = 1 even for NaN; a
// negative base takes integer exponents only (else NaN); 0^negative = inf (with the sign of
// x for odd y); (-1)^inf = 1; |x| < 1 to the +inf is 0, and so on.
fn f64_pow(x: f64, y: f64) -> f64 {
    if (y == 0.0lf || x == 1.0lf) {
        return 1.0lf;
    }
    if (is_nan64(x) || is_nan64(y)) {
        return f64_nan();
    }
    let ax = abs(x);
    if (!f64_is_finite(y)) {
        if (ax == 1.0lf) {
            return 1.0lf;
        }
        return select(0.0lf, f64_inf(), (ax > 1.0lf) == (y > 0.0lf));
    }
    let odd = f64_is_odd(y);
    let negate = odd && f64_signbit(x);
    if (ax == 0.0lf || !f64_is_finite(x)) {
        // 0^y and inf^y: 0 or inf by the signs, negative for a negative base and odd y.
        let big = (ax == 0.0lf) == (y < 0.0lf);
        let r = select(0.0lf, f64_inf(), big);
        return select(r, -r, negate);
    }
    if (x < 0.0lf && !f64_is_int(y)) {
        return f64_nan();
    }
    var r = f64();
    if (abs(y) >= 1.8446744073709552e19lf) {
        // |y ln x| > 2^64 * 2^-53 unless |x| = 1: certain overflow or underflow.
        r = select(0.0lf, f64_inf(), (ax > 1.0lf) == (y > 0.0lf));
        if (ax == 1.0lf) {
            r = 1.0lf;
        }
    } else {
        let l = f64_log_dd(ax);
        let p = f64_two_prod(y, l.x);
        let e = f64_fast_two_sum(p.x, p.y + y * l.y);
        r = f64_exp_dd(e.x, e.y);
    }
    return select(r, -r, negate);
}

// ---- sin, cos ----

// x = n pi/2 + (hi + lo), |hi + lo| <= pi/4 (a hair more at the boundary).
struct F64Rem {
    n: i32,
    hi: f64,
    lo: f64,
}

const F64_INV_PIO2: f64 = 6.36619772367581382433e-01lf;

// 2/pi in 24-bit pieces: 2/pi = sum over i >= 1 of F64_TWO_OVER_PI[i - 1] 2^(-24 i).
const F64_TWO_OVER_PI = array<u32, 52>(
    0xa2f983u, 0x6e4e44u, 0x1529fcu, 0x2757d1u, 0xf534ddu, 0xc0db62u, 0x95993cu, 0x439041u,
    0xfe5163u, 0xabdebbu, 0xc561b7u, 0x246e3au, 0x424dd2u, 0xe00649u, 0x2eea09u, 0xd1921cu,
    0xfe1debu, 0x1cb129u, 0xa73ee8u, 0x8235f5u, 0x2ebb44u, 0x84e99cu, 0x7026b4u, 0x5f7e41u,
    0x3991d6u, 0x398353u, 0x39f49cu, 0x845f8bu, 0xbdf928u, 0x3b1ff8u, 0x97ffdeu, 0x05980fu,
    0xef2f11u, 0x8b5a0au, 0x6d1f6du, 0x367ecfu, 0x27cb09u, 0xb74f46u, 0x3f669eu, 0x5fea2du,
    0x7527bau, 0xc7ebe5u, 0xf17b3du, 0x0739f7u, 0x8a5292u, 0xea6bfbu, 0x5fb11fu, 0x8d5d08u,
    0x560330u, 0x46fc7bu, 0x6babf0u, 0xcfbc20u,
);

// Piece i (from 1) of 2/pi as an f64; 0 before the binary point.
fn f64_two_over_pi(t: ptr<function, array<u32, 52>>, i: i32) -> f64 {
    if (i < 1 || i > 52) {
        return 0.0lf;
    }
    return f64((*t)[i - 1]);
}

// Payne-Hanek reduction for |x| >= 2^20 pi/2: |x| 2/pi mod 4 from the bits of 2/pi that
// matter at x's exponent, in 24-bit limbs of exact f64 products. n is right modulo 4.
fn f64_rem_pio2_large(x: f64) -> F64Rem {
    let p = f64_parts(x);
    // |x| = X 2^(e - 52) with X = x0 2^48 + x1 2^24 + x2, all integers.
    let big = p.m * 4503599627370496.0lf;
    let x0 = floor(big * 3.552713678800501e-15lf);
    let rest = big - x0 * 281474976710656.0lf;
    let x1 = floor(rest * 5.960464477539063e-08lf);
    let x2 = rest - x1 * 16777216.0lf;
    // |x| 2/pi = sum over q of D_q 2^(e0 - 24 q), D_q = sum over i + j = q of x_j C_i. Terms
    // with e0 - 24 q >= 2 are multiples of 4: start at the first q past them.
    let e0 = p.e - 4;
    let qmin = (e0 - 2) / 24 + 1;
    let s0 = e0 - 24 * qmin;
    var c = F64_TWO_OVER_PI;
    var d = array<f64, 8>();
    for (var k = 0; k < 8; k++) {
        let q = qmin + k;
        d[k] = x0 * f64_two_over_pi(&c, q) + x1 * f64_two_over_pi(&c, q - 1) + x2 * f64_two_over_pi(&c, q - 2);
    }
    for (var k = 7; k > 0; k--) {
        let carry = floor(d[k] * 5.960464477539063e-08lf);
        d[k] -= carry * 16777216.0lf;
        d[k - 1] += carry;
    }
    // Integer part mod 4 from the top limb; the fraction from it and the rest, summed exactly.
    let v = ldexp(d[0], s0);
    let vm = v - 4.0lf * floor(v * 0.25lf);
    var n = floor(vm);
    var fr = vec2<f64>(vm - n, 0.0lf);
    for (var k = 1; k < 8; k++) {
        let s = f64_two_sum(fr.x, ldexp(d[k], s0 - 24 * k));
        fr = vec2<f64>(s.x, fr.y + s.y);
    }
    fr = f64_fast_two_sum(fr.x, fr.y);
    // With s0 = 1 the fraction reaches into [1, 2).
    if (fr.x + fr.y >= 1.0lf) {
        n += 1.0lf;
        fr = f64_fast_two_sum(fr.x - 1.0lf, fr.y);
    }
    if (fr.x + fr.y >= 0.5lf) {
        n += 1.0lf;
        fr = f64_fast_two_sum(fr.x - 1.0lf, fr.y);
    }
    // (fraction) * pi/2.
    let t = f64_two_prod(fr.x, 1.5707963267948966lf);
    let r = f64_fast_two_sum(t.x, t.y + fr.x * 6.123233995736766e-17lf + fr.y * 1.5707963267948966lf);
    let ni = i32(n) & 3;
    if (x < 0.0lf) {
        return F64Rem(-ni, -r.x, -r.y);
    }
    return F64Rem(ni, r.x, r.y);
}

// Reduction by pi/2 for finite x: Cody-Waite in three pieces (fdlibm's medium case) up to
// 2^20 pi/2, where n is exact; Payne-Hanek beyond, accurate over the whole range.
fn f64_rem_pio2(x: f64) -> F64Rem {
    let a = abs(x);
    if (a <= 0.7853981633974483lf) {
        return F64Rem(0, x, 0.0lf);
    }
    if (a >= 1647099.3291652855lf) {
        return f64_rem_pio2_large(x);
    }
    let fnv = round(x * F64_INV_PIO2);
    // pi/2 in pieces of 33 bits (exact products with fnv < 2^20) and the tail of each. Every
    // piece is kept opaque: NVIDIA's compiler otherwise folds (x - n p1) - n p2 into
    // x - n (p1 + p2), which rounds away the very bits the pieces exist to keep.
    var r = f64_keep(x - f64_keep(fnv * 1.57079632673412561417e+00lf));
    var t = r;
    var w = f64_keep(fnv * 6.07710050630396597660e-11lf);
    r = f64_keep(t - w);
    w = f64_keep(fnv * 2.02226624879595063154e-21lf) - f64_keep(f64_keep(t - r) - w);
    t = r;
    w = f64_keep(fnv * 2.02226624871116645580e-21lf);
    r = f64_keep(t - w);
    w = f64_keep(fnv * 8.47842766036889956997e-32lf) - f64_keep(f64_keep(t - r) - w);
    let hi = f64_keep(r - w);
    return F64Rem(i32(fnv), hi, (r - hi) - w);
}

// sin(x + y) for |x + y| <= pi/4, y a correction to x.
fn f64_ksin(x: f64, y: f64) -> f64 {
    let z = x * x;
    let w = z * z;
    let r = 8.33333333332248946124e-03lf + z * (-1.98412698298579493134e-04lf + z * 2.75573137070700676789e-06lf)
        + z * w * (-2.50507602534068634195e-08lf + z * 1.58969099521155010221e-10lf);
    let v = z * x;
    return x - ((z * (0.5lf * y - v * r) - y) - v * -1.66666666666666324348e-01lf);
}

// cos(x + y) for |x + y| <= pi/4.
fn f64_kcos(x: f64, y: f64) -> f64 {
    let z = x * x;
    let w = z * z;
    let r = z * (4.16666666666666019037e-02lf + z * (-1.38888888888741095749e-03lf + z * 2.48015872894767294178e-05lf))
        + w * w * (-2.75573143513906633035e-07lf + z * (2.08757232129817482790e-09lf + z * -1.13596475577881948265e-11lf));
    let hz = 0.5lf * z;
    let v = f64_keep(1.0lf - hz);
    return v + (((1.0lf - v) - hz) + (z * r - x * y));
}

// (sin x, cos x); NaN for inf and NaN.
fn f64_sincos(x: f64) -> vec2<f64> {
    if (!f64_is_finite(x)) {
        return vec2<f64>(f64_nan(), f64_nan());
    }
    if (abs(x) < 7.450580596923828e-09lf) {
        return vec2<f64>(x, 1.0lf);
    }
    let r = f64_rem_pio2(x);
    let s = f64_ksin(r.hi, r.lo);
    let c = f64_kcos(r.hi, r.lo);
    switch (r.n & 3) {
        case 0: {
            return vec2<f64>(s, c);
        }
        case 1: {
            return vec2<f64>(c, -s);
        }
        case 2: {
            return vec2<f64>(-s, -c);
        }
        default: {
            return vec2<f64>(-c, s);
        }
    }
}

fn f64_sin(x: f64) -> f64 {
    if (!f64_is_finite(x)) {
        return f64_nan();
    }
    if (abs(x) < 1.4901161193847656e-08lf) {
        return x;
    }
    let r = f64_rem_pio2(x);
    switch (r.n & 3) {
        case 0: {
            return f64_ksin(r.hi, r.lo);
        }
        case 1: {
            return f64_kcos(r.hi, r.lo);
        }
        case 2: {
            return -f64_ksin(r.hi, r.lo);
        }
        default: {
            return -f64_kcos(r.hi, r.lo);
        }
    }
}

fn f64_cos(x: f64) -> f64 {
    if (!f64_is_finite(x)) {
        return f64_nan();
    }
    if (abs(x) < 7.450580596923828e-09lf) {
        return 1.0lf;
    }
    let r = f64_rem_pio2(x);
    switch (r.n & 3) {
        case 0: {
            return f64_kcos(r.hi, r.lo);
        }
        case 1: {
            return -f64_ksin(r.hi, r.lo);
        }
        case 2: {
            return -f64_kcos(r.hi, r.lo);
        }
        default: {
            return f64_ksin(r.hi, r.lo);
        }
    }
}

// ---- tanh ----

// u / (t + 2) with the sum kept exactly and the quotient corrected by its residual.
fn f64_tanh_ratio(u: f64, t: f64) -> f64 {
    let d = f64_two_sum(t, 2.0lf);
    let q = f64_keep(u / d.x);
    let p = f64_two_prod(q, d.x);
    return q + (((u - p.x) - p.y) - q * d.y) / d.x;
}

fn f64_tanh(x: f64) -> f64 {
    if (is_nan64(x)) {
        return x;
    }
    let a = abs(x);
    var t = f64();
    if (a > 0.5493061443340549lf) {
        if (a > 20.0lf) {
            t = 1.0lf;
        } else {
            t = 1.0lf - f64_tanh_ratio(2.0lf, f64_expm1(2.0lf * a));
        }
    } else if (a > 0.25541281188299536lf) {
        let e = f64_expm1(2.0lf * a);
        t = f64_tanh_ratio(e, e);
    } else if (a >= 2.7755575615628914e-17lf) {
        let e = f64_expm1(-2.0lf * a);
        t = -f64_tanh_ratio(e, e);
    } else {
        return x;
    }
    return select(t, -t, x < 0.0lf);
}

// ---- erf (fdlibm s_erf: rational fits on [0, 0.84375), [0.84375, 1.25), then erfc's
// exp(-x^2 - 0.5625 + R/S) / x on [1.25, 1/0.35) and [1/0.35, 6); 1 beyond) ----

fn f64_erf(x: f64) -> f64 {
    if (is_nan64(x)) {
        return x;
    }
    let a = abs(x);
    if (a < 0.84375lf) {
        if (a < 3.725290298461914e-09lf) {
            return x + 1.28379167095512558561e-01lf * x;
        }
        let z = x * x;
        let r = 1.28379167095512558561e-01lf + z * (-3.25042107247001499370e-01lf + z * (-2.84817495755985104766e-02lf
            + z * (-5.77027029648944159157e-03lf + z * -2.37630166566501626084e-05lf)));
        let s = 1.0lf + z * (3.97917223959155352819e-01lf + z * (6.50222499887672944485e-02lf
            + z * (5.08130628187576562776e-03lf + z * (1.32494738004321644526e-04lf + z * -3.96022827877536812320e-06lf))));
        return x + x * (r / s);
    }
    var y = f64();
    if (a < 1.25lf) {
        let s = a - 1.0lf;
        let p = -2.36211856075265944077e-03lf + s * (4.14856118683748331666e-01lf + s * (-3.72207876035701323847e-01lf
            + s * (3.18346619901161753674e-01lf + s * (-1.10894694282396677476e-01lf + s * (3.54783043256182359371e-02lf
            + s * -2.16637559486879084300e-03lf)))));
        let q = 1.0lf + s * (1.06420880400844228286e-01lf + s * (5.40397917702171048937e-01lf + s * (7.18286544141962662868e-02lf
            + s * (1.26171219808761642112e-01lf + s * (1.36370839120290507362e-02lf + s * 1.19844998467991074170e-02lf)))));
        y = 8.45062911510467529297e-01lf + p / q;
    } else if (a < 6.0lf) {
        let s = 1.0lf / (a * a);
        var r = f64();
        var q = f64();
        if (a < 2.857142857142857lf) {
            r = -9.86494403484714822705e-03lf + s * (-6.93858572707181764372e-01lf + s * (-1.05586262253232909814e+01lf
                + s * (-6.23753324503260060396e+01lf + s * (-1.62396669462573470355e+02lf + s * (-1.84605092906711035994e+02lf
                + s * (-8.12874355063065934246e+01lf + s * -9.81432934416914548592e+00lf))))));
            q = 1.0lf + s * (1.96512716674392571292e+01lf + s * (1.37657754143519042600e+02lf + s * (4.34565877475229228821e+02lf
                + s * (6.45387271733267880336e+02lf + s * (4.29008140027567833386e+02lf + s * (1.08635005541779435134e+02lf
                + s * (6.57024977031928170135e+00lf + s * -6.04244152148580987438e-02lf)))))));
        } else {
            r = -9.86494292470009928597e-03lf + s * (-7.99283237680523006574e-01lf + s * (-1.77579549177547519889e+01lf
                + s * (-1.60636384855821916062e+02lf + s * (-6.37566443368389627722e+02lf + s * (-1.02509513161107724954e+03lf
                + s * -4.83519191608651397019e+02lf)))));
            q = 1.0lf + s * (3.03380607434824582924e+01lf + s * (3.25792512996573918826e+02lf + s * (1.53672958608443695994e+03lf
                + s * (3.19985821950859553908e+03lf + s * (2.55305040643316442583e+03lf + s * (4.74528541206955367215e+02lf
                + s * -2.24409524465858183362e+01lf))))));
        }
        // exp(-a^2) as exp(-z^2) exp((z - a)(z + a)) with z the high 26 bits of a: z^2 exact.
        let z = f64_split(a).x;
        let erfc = f64_exp(-z * z - 0.5625lf) * f64_exp((z - a) * (z + a) + r / q) / a;
        y = 1.0lf - erfc;
    } else {
        y = 1.0lf;
    }
    return select(y, -y, x < 0.0lf);
}
