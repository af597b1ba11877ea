// Elementwise maps over a shared logical shape. The builder defines per specialisation: the
// bindings with their loads (`x_load`), index maps (`x_at`) and word-wise output (`y_set`,
// `y_flush`, `Y_EPW`), and the op itself: `op(..)`. One invocation writes one output word.

// f32 maps without a WGSL builtin, or whose builtin is undefined somewhere we need it.

// tanh is exactly +-1 in f32 past |15|; clamping keeps implementations from inf / inf.
fn tanh32(v: f32) -> f32 {
    return tanh(clamp(v, -15.0, 15.0));
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
        return bitcast<f32>(0x7fc00000u);
    }
    let inf = bitcast<f32>(0x7f800000u);
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
    var r: f32;
    if (ax == 0.0 || ax == inf) {
        r = select(0.0, inf, (ax == 0.0) == (e < 0.0));
    } else if (x < 0.0 && !is_int) {
        return bitcast<f32>(0x7fc00000u);
    } else {
        r = exp2(e * log2(ax));
    }
    return select(r, -r, negate);
}

// @kernel map1
@compute @workgroup_size(WG)
fn map1(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    let n = md[0];
    let first = w * Y_EPW;
    if (first >= n) {
        return;
    }
    for (var k = 0u; k < Y_EPW; k++) {
        let i = first + k;
        if (i < n) {
            y_set(i, op(x_load(x_at(i))));
        }
    }
    y_flush(w);
}

// @kernel map2
@compute @workgroup_size(WG)
fn map2(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    let n = md[0];
    let first = w * Y_EPW;
    if (first >= n) {
        return;
    }
    for (var k = 0u; k < Y_EPW; k++) {
        let i = first + k;
        if (i < n) {
            y_set(i, op(a_load(a_at(i)), b_load(b_at(i))));
        }
    }
    y_flush(w);
}

// @kernel map3
@compute @workgroup_size(WG)
fn map3(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    let n = md[0];
    let first = w * Y_EPW;
    if (first >= n) {
        return;
    }
    for (var k = 0u; k < Y_EPW; k++) {
        let i = first + k;
        if (i < n) {
            y_set(i, op(c_load(c_at(i)), a_load(a_at(i)), b_load(b_at(i))));
        }
    }
    y_flush(w);
}

// Four elements per invocation, UNROLL times (grid-strided, so each load stays coalesced):
// vector loads and stores where the layouts allow.
// @kernel map1_v4
@compute @workgroup_size(WG)
fn map1_v4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let stride = nwg.x * nwg.y * WG * 4u;
    for (var u = 0u; u < UNROLL; u++) {
        let i = flat_id(gid, nwg) * 4u + u * stride;
        if (i < md[0]) {
            let x = x_get4(i);
            y_set4(i, vec4(op(x.x), op(x.y), op(x.z), op(x.w)));
        }
    }
}

// @kernel map2_v4
@compute @workgroup_size(WG)
fn map2_v4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let stride = nwg.x * nwg.y * WG * 4u;
    for (var u = 0u; u < UNROLL; u++) {
        let i = flat_id(gid, nwg) * 4u + u * stride;
        if (i < md[0]) {
            let a = a_get4(i);
            let b = b_get4(i);
            y_set4(i, vec4(op(a.x, b.x), op(a.y, b.y), op(a.z, b.z), op(a.w, b.w)));
        }
    }
}

// @kernel map3_v4
@compute @workgroup_size(WG)
fn map3_v4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let stride = nwg.x * nwg.y * WG * 4u;
    for (var u = 0u; u < UNROLL; u++) {
        let i = flat_id(gid, nwg) * 4u + u * stride;
        if (i < md[0]) {
            let c = c_get4(i);
            let a = a_get4(i);
            let b = b_get4(i);
            y_set4(i, vec4(op(c.x, a.x, b.x), op(c.y, a.y, b.y), op(c.z, a.z, b.z), op(c.w, a.w, b.w)));
        }
    }
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
