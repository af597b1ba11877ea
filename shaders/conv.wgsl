// The convolutions as implicit GEMM on the kernels of shaders/matmul.wgsl: per (image, group),
// C (C_out / groups x OH OW) = W (C_out / groups x C_in / groups KH KW, contiguous) times the
// image unrolled into its windows, which is never stored: B's elements are gathered here as
// the GEMM loads its tiles. A 1-D convolution is a 2-D one of height 1.
//
// Metadata (see matmul.wgsl; `gmeta`): the image's offset is B's (MD_B_OFFSET), its sizes,
// the window, stride, padding and dilation and its strides are the MD_CONV_* words.
// CONV_T (generated): the transposed convolution, whose output pixel o meets input pixel
// (o + pad - tap * dilation) / stride where that divides evenly. CONV_KW, CONV_TAPS (KH KW),
// CONV_SH, CONV_SW, CONV_DH, CONV_DW (generated, i32): the window, stride and dilation, as
// constants so that the divisions below compile to multiplies (their MD_CONV_* words hold them
// too).
//
// Bounds (no injected checks, as matmul.wgsl): a gathered element is read only where its
// depth k < K and its pixel (y, x) lies in 0..IH x 0..IW (`ok`), else it is zero; addresses
// are formed from clamped coordinates, so even the unread ones stay inside the image.

// B element (k, o) for the four output pixels o..o+4 of `b_setup4`: k walks (channel, tap row,
// tap column) of the group's input channels.
// @section gather
var<private> b_y: vec4<i32>;
var<private> b_x: vec4<i32>;
var<private> b_in: vec4<bool>;
var<private> b_base: u32;
// K, IH, IW and the image's C, H and W strides, read from the metadata once.
var<private> b_kn: u32;
var<private> b_ihw: vec2<i32>;
var<private> b_cs: u32;
var<private> b_hs: u32;
var<private> b_ws: u32;

fn b_setup4(o: u32, base: u32) {
    b_kn = k_hi;
    b_ihw = vec2<i32>(i32(gmeta(MD_CONV_IH)), i32(gmeta(MD_CONV_IW)));
    b_cs = gmeta(MD_CONV_CS);
    b_hs = gmeta(MD_CONV_HS);
    b_ws = gmeta(MD_CONV_WS);
    let os = vec4<u32>(o) + vec4<u32>(0u, 1u, 2u, 3u);
    b_in = os < vec4<u32>(b_total());
    let ow = vec4<u32>(gmeta(MD_CONV_OW));
    let oy = vec4<i32>(os / ow);
    let ox = vec4<i32>(os % ow);
    let pad = vec2<i32>(i32(gmeta(MD_CONV_PH)), i32(gmeta(MD_CONV_PW)));
    if (CONV_T) {
        b_y = oy + vec4<i32>(pad.x);
        b_x = ox + vec4<i32>(pad.y);
    } else {
        b_y = oy * vec4<i32>(CONV_SH) - vec4<i32>(pad.x);
        b_x = ox * vec4<i32>(CONV_SW) - vec4<i32>(pad.y);
    }
    b_base = base + gmeta(MD_B_OFFSET);
}

fn b_ktile(k0: u32) {}

fn b_one(ok: bool, i: u32) -> RAW {
    if (ok) {
        return b_word(i);
    }
    return RAW(0);
}

// The raw words of the four and their parities in `b_par4` (matmul.wgsl's `gather_fetch`).
fn b_get4(k: u32, r: u32) -> vec4<RAW> {
    if (k >= b_kn) {
        return vec4<RAW>(RAW(0));
    }
    let c = k / u32(CONV_TAPS);
    let tap = i32(k % u32(CONV_TAPS));
    let dy = (tap / CONV_KW) * CONV_DH;
    let dx = (tap % CONV_KW) * CONV_DW;
    let zero = vec4<i32>(0);
    var y = vec4<i32>();
    var x = vec4<i32>();
    var ok = b_in;
    if (CONV_T) {
        let sy = vec4<i32>(CONV_SH);
        let sx = vec4<i32>(CONV_SW);
        let ty = b_y - vec4<i32>(dy);
        let tx = b_x - vec4<i32>(dx);
        // Negative remainders only where ty or tx < 0, which the bounds below reject.
        ok = ok & (ty % sy == zero) & (tx % sx == zero);
        y = ty / sy;
        x = tx / sx;
    } else {
        y = b_y + vec4<i32>(dy);
        x = b_x + vec4<i32>(dx);
    }
    let ih = vec4<i32>(b_ihw.x);
    let iw = vec4<i32>(b_ihw.y);
    ok = ok & (y >= zero) & (y < ih) & (x >= zero) & (x < iw);
    let at = vec4<u32>(b_base + c * b_cs) + vec4<u32>(max(y, zero)) * b_hs + vec4<u32>(max(x, zero)) * b_ws;
    b_par4 = dot(at & vec4<u32>(1u), vec4<u32>(1u, 2u, 4u, 8u));
    return vec4<RAW>(b_one(ok.x, at.x), b_one(ok.y, at.y), b_one(ok.z, at.z), b_one(ok.w, at.w));
}
