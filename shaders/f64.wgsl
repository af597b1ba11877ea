// f64 helpers, included when a kernel computes in f64 (SHADER_F64).

fn is_nan64(v: f64) -> bool {
    return v != v;
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
