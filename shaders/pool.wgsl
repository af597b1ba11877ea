// 2-D average and max pooling with the windows of `spec::pool`. Output element
// i = ((n C + c) OH + oh) OW + ow pools the cells (oh SH - PH + j DH, ow SW - PW + l DW),
// j < KH, l < KW, of input plane (n, c) that lie inside it, read in place through the strides.
//
// The builder defines A (the compute type), KH and KW (the kernel size, constants so that the
// window loops unroll) and the op's accumulator: `acc_init() -> A`, `acc_add(acc, v) -> A`,
// `acc_end(acc, y0, x0) -> A` (y0, x0: the window's first row and column, maybe negative).
//
// Metadata at EXTRA: C, OH, OW, H, W, offset, strides of n, c, h, w, SH, SW, PH, PW, DH, DW,
// count_include_pad.

var<private> H: u32;
var<private> W: u32;
var<private> OH: u32;
var<private> OW: u32;

fn read_meta() {
    OH = md[EXTRA + 1u];
    OW = md[EXTRA + 2u];
    H = md[EXTRA + 3u];
    W = md[EXTRA + 4u];
}

// The storage index of plane p = n C + c.
fn plane(p: u32) -> u32 {
    let c = md[EXTRA];
    return md[EXTRA + 5u] + (p / c) * md[EXTRA + 6u] + (p % c) * md[EXTRA + 7u];
}

// The pooled window of output (oh, ow) of the plane at pb.
fn pool_at(pb: u32, oh: u32, ow: u32) -> A {
    let sth = md[EXTRA + 8u];
    let stw = md[EXTRA + 9u];
    let dh = md[EXTRA + 14u];
    let dw = md[EXTRA + 15u];
    let y0 = i32(oh * md[EXTRA + 10u]) - i32(md[EXTRA + 12u]);
    let x0 = i32(ow * md[EXTRA + 11u]) - i32(md[EXTRA + 13u]);
    var acc = acc_init();
    for (var j = 0u; j < KH; j++) {
        let y = y0 + i32(j * dh);
        if (y >= 0 && y < i32(H)) {
            let rb = pb + u32(y) * sth;
            for (var l = 0u; l < KW; l++) {
                let x = x0 + i32(l * dw);
                if (x >= 0 && x < i32(W)) {
                    acc = acc_add(acc, x_load(rb + u32(x) * stw));
                }
            }
        }
    }
    return acc_end(acc, y0, x0);
}

// avg_pool2d's divisor: the window clipped to the padded input (count_include_pad) or its
// input cells; a window without input cells is 0.
fn avg_end(sum: A, y0: i32, x0: i32) -> A {
    let ph = i32(md[EXTRA + 12u]);
    let pw = i32(md[EXTRA + 13u]);
    let ye = min(y0 + i32(KH), i32(H) + ph);
    let xe = min(x0 + i32(KW), i32(W) + pw);
    let rows = min(ye, i32(H)) - max(y0, 0);
    let cols = min(xe, i32(W)) - max(x0, 0);
    if (rows <= 0 || cols <= 0) {
        return A(0);
    }
    let area = select(rows * cols, (ye - y0) * (xe - x0), md[EXTRA + 16u] != 0u);
    return sum / A(area);
}

// One invocation per output word (Y_EPW outputs).
// @kernel pool
@compute @workgroup_size(WG)
fn pool(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    let n = md[0];
    let first = w * Y_EPW;
    if (first >= n) {
        return;
    }
    read_meta();
    for (var k = 0u; k < Y_EPW; k++) {
        let i = first + k;
        if (i < n) {
            let r = i / OW;
            y_set(i, pool_at(plane(r / OH), r % OH, i % OW));
        }
    }
    y_flush(w);
}

// Four outputs of one row per invocation (OW a multiple of 4), stored as one vector.
// @kernel pool_v4
@compute @workgroup_size(WG)
fn pool_v4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg) * 4u;
    if (i >= md[0]) {
        return;
    }
    read_meta();
    let r = i / OW;
    let ow = i % OW;
    let oh = r % OH;
    let pb = plane(r / OH);
    y_set4(i, V(pool_at(pb, oh, ow), pool_at(pb, oh, ow + 1u), pool_at(pb, oh, ow + 2u), pool_at(pb, oh, ow + 3u)));
}
