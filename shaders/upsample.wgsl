// Nearest-neighbour resizing of (N, C, H, W) planes (1-D inputs have H = 1). Output element
// i = ((n C + c) OH + oy) OW + ox reads input cell (n, c, floor(oy IH / OH), floor(ox IW / OW)),
// the quotients exact: a u32 product where (OH - 1) IH and (OW - 1) IW fit (the host says
// which), else a 64-bit product and a long division.
//
// Metadata at EXTRA: C, OH, OW, IH, IW, offset, strides of n, c, h, w, whether rows and columns
// need the 64-bit quotient, then IW / OW and IW % OW.

// floor(a b / d) for a < d: the 64-bit product in 16-bit pieces, then restoring division one
// bit at a time (the quotient is below b, so it fits in 32 bits).
fn mul_div(a: u32, b: u32, d: u32) -> u32 {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let lo = (p00 & 0xffffu) | (mid << 16u);
    // hi < a < d, so the remainder starts below d.
    var r = a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    var q = 0u;
    for (var k = 0u; k < 32u; k++) {
        let carry = r >> 31u;
        r = (r << 1u) | ((lo >> (31u - k)) & 1u);
        q <<= 1u;
        // 2r + bit < 2d: one subtraction restores r < d (mod 2^32 when the shift carried out).
        if (carry != 0u || r >= d) {
            r -= d;
            q |= 1u;
        }
    }
    return q;
}

// The source cell of output cell o along a dim resized from len to size.
fn src(o: u32, len: u32, size: u32, wide: u32) -> u32 {
    if (wide != 0u) {
        return mul_div(o, len, size);
    }
    return o * len / size;
}

// The storage index of the input row read by row r = (n C + c) OH + oy of the output.
fn row_base(r: u32) -> u32 {
    let oh = md[EXTRA + 1u];
    let oy = r % oh;
    let p = r / oh;
    let c = md[EXTRA];
    let y = src(oy, md[EXTRA + 3u], oh, md[EXTRA + 10u]);
    return md[EXTRA + 5u] + (p / c) * md[EXTRA + 6u] + (p % c) * md[EXTRA + 7u] + y * md[EXTRA + 8u];
}

fn col_off(ox: u32) -> u32 {
    return src(ox, md[EXTRA + 4u], md[EXTRA + 2u], md[EXTRA + 11u]) * md[EXTRA + 9u];
}

// The storage offsets of the source columns of output columns ox .. ox + 3: one quotient, then
// steps of IW / OW and IW % OW (exact; r + IW % OW stays below 2 OW without overflow, since
// OW > 2^31 leaves IW = 1 when the u32 product fits).
fn cols4(ox: u32) -> vec4<u32> {
    if (md[EXTRA + 11u] != 0u) {
        return vec4<u32>(col_off(ox), col_off(ox + 1u), col_off(ox + 2u), col_off(ox + 3u));
    }
    let iw = md[EXTRA + 4u];
    let ow = md[EXTRA + 2u];
    let sq = md[EXTRA + 12u];
    let sr = md[EXTRA + 13u];
    var q = ox * iw / ow;
    var r = ox * iw - q * ow;
    var c = vec4<u32>(q);
    r += sr;
    q += sq + select(0u, 1u, r >= ow);
    r -= select(0u, ow, r >= ow);
    c.y = q;
    r += sr;
    q += sq + select(0u, 1u, r >= ow);
    r -= select(0u, ow, r >= ow);
    c.z = q;
    r += sr;
    q += sq + select(0u, 1u, r >= ow);
    c.w = q;
    return c * md[EXTRA + 9u];
}

// One invocation per output word (Y_EPW elements).
// @kernel nearest
@compute @workgroup_size(WG)
fn nearest(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    let n = md[0];
    let first = w * Y_EPW;
    if (first >= n) {
        return;
    }
    let ow = md[EXTRA + 2u];
    for (var k = 0u; k < Y_EPW; k++) {
        let i = first + k;
        if (i < n) {
            y_set(i, x_load(row_base(i / ow) + col_off(i % ow)));
        }
    }
    y_flush(w);
}

// Four outputs of one row per invocation (OW a multiple of 4), stored as one vector.
// @kernel nearest_v4
@compute @workgroup_size(WG)
fn nearest_v4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg) * 4u;
    if (i >= md[0]) {
        return;
    }
    let ow = md[EXTRA + 2u];
    let b = row_base(i / ow);
    let c = cols4(i % ow);
    y_set4(i, vec4(x_load(b + c.x), x_load(b + c.y), x_load(b + c.z), x_load(b + c.w)));
}
