// GGML blocks (ggml-common.h's layouts) read from their bytes as u32 words. A block of BB bytes
// starts at byte b * BB, which is not 4-byte aligned for most types (q4_0's 18 bytes), and the
// blocks may start at any byte of the buffer (a window of a file's bytes), so every field is read
// at its byte address: `byte_at` takes one byte of a word; `half_at` the two bytes of an f16,
// which may straddle two words. The values are
// ggml's: the same f32 steps in the same order, each product fenced (a driver may contract a
// product and a sum into one fused multiply-add, which the cpu reference does not).
//
// Metadata at EXTRA: ggml's id of the block type, the byte offset of the first block in q (then,
// for qmatvec, the words its section lists).

fn byte_at(a: u32) -> u32 {
    return (q[a >> 2u] >> ((a & 3u) * 8u)) & 0xffu;
}

fn half_at(a: u32) -> f32 {
    return f16_to_f32(byte_at(a) | (byte_at(a + 1u) << 8u));
}

fn i8_of(b: u32) -> i32 {
    return bitcast<i32>(b << 24u) >> 24u;
}

// Nibble `j / 16` of byte `j % 16` from `at`: the 4-bit quants of the 32-value blocks.
fn nibble(at: u32, j: u32) -> u32 {
    return (byte_at(at + j % 16u) >> (4u * (j / 16u))) & 15u;
}

// Bit j of the u32 of 5th bits at `at`.
fn fifth(at: u32, j: u32) -> u32 {
    return (byte_at(at + j / 8u) >> (j % 8u)) & 1u;
}

fn q4_0(o: u32, j: u32) -> f32 {
    return f32(i32(nibble(o + 2u, j)) - 8) * half_at(o);
}

fn q4_1(o: u32, j: u32) -> f32 {
    return fence32(f32(nibble(o + 4u, j)) * half_at(o)) + half_at(o + 2u);
}

fn q5_0(o: u32, j: u32) -> f32 {
    let v = nibble(o + 6u, j) | (fifth(o + 2u, j) << 4u);
    return f32(i32(v) - 16) * half_at(o);
}

fn q5_1(o: u32, j: u32) -> f32 {
    let v = nibble(o + 8u, j) | (fifth(o + 4u, j) << 4u);
    return fence32(f32(v) * half_at(o)) + half_at(o + 2u);
}

fn q8_0(o: u32, j: u32) -> f32 {
    return f32(i8_of(byte_at(o + 2u + j))) * half_at(o);
}

// q2_K: scales[16] qs[64] d dmin. Value 128n + 32k + 16h + l: 2 bits of qs[32n + 16h + l] at
// shift 2k, under scale byte 8n + 2k + h (low nibble: scale, high: min).
fn q2_k(o: u32, i: u32) -> f32 {
    let n = i / 128u;
    let k = (i / 32u) % 4u;
    let h = (i / 16u) % 2u;
    let l = i % 16u;
    let sc = byte_at(o + 8u * n + 2u * k + h);
    let dl = half_at(o + 80u) * f32(sc & 15u);
    let ml = half_at(o + 82u) * f32(sc >> 4u);
    let v = (byte_at(o + 16u + 32u * n + 16u * h + l) >> (2u * k)) & 3u;
    return fence32(dl * f32(v)) - fence32(ml);
}

// q3_K: hmask[32] qs[64] scales[12] d. The 6-bit scale s: low 4 bits in nibble s / 8 of byte
// s % 8, high 2 bits at 2 (s / 4) of byte 8 + s % 4; minus 4 where bit 4n + k of hmask is clear.
fn q3_k(o: u32, i: u32) -> f32 {
    let n = i / 128u;
    let k = (i / 32u) % 4u;
    let h = (i / 16u) % 2u;
    let l = i % 16u;
    let s = 8u * n + 2u * k + h;
    let low = (byte_at(o + 96u + s % 8u) >> (4u * (s / 8u))) & 15u;
    let high = (byte_at(o + 104u + s % 4u) >> (2u * (s / 4u))) & 3u;
    let dl = half_at(o + 108u) * f32(i32(low | (high << 4u)) - 32);
    let v = i32((byte_at(o + 32u + 32u * n + 16u * h + l) >> (2u * k)) & 3u);
    let m = select(4, 0, ((byte_at(o + 16u * h + l) >> (4u * n + k)) & 1u) != 0u);
    return dl * f32(v - m);
}

// ggml's get_scale_min_k4: the 6-bit scale (x) and min (y) of run r of a q4_K / q5_K block.
fn scale_min_k4(o: u32, r: u32) -> vec2<u32> {
    if (r < 4u) {
        return vec2<u32>(byte_at(o + r) & 63u, byte_at(o + r + 4u) & 63u);
    }
    let s = (byte_at(o + r + 4u) & 15u) | ((byte_at(o + r - 4u) >> 6u) << 4u);
    let m = (byte_at(o + r + 4u) >> 4u) | ((byte_at(o + r) >> 6u) << 4u);
    return vec2<u32>(s, m);
}

// q4_K: d dmin scales[12] qs[128]. Run r of 32: nibble r % 2 of qs[32 (r / 2) + l].
fn q4_k(o: u32, i: u32) -> f32 {
    let r = i / 32u;
    let l = i % 32u;
    let sm = scale_min_k4(o + 4u, r);
    let v = (byte_at(o + 16u + 32u * (r / 2u) + l) >> (4u * (r % 2u))) & 15u;
    let d1 = half_at(o) * f32(sm.x);
    return fence32(d1 * f32(v)) - fence32(half_at(o + 2u) * f32(sm.y));
}

// q5_K: d dmin scales[12] qh[32] qs[128]. As q4_K, plus 16 where bit r of qh[l] is set.
fn q5_k(o: u32, i: u32) -> f32 {
    let r = i / 32u;
    let l = i % 32u;
    let sm = scale_min_k4(o + 4u, r);
    let low = (byte_at(o + 48u + 32u * (r / 2u) + l) >> (4u * (r % 2u))) & 15u;
    let v = low + 16u * ((byte_at(o + 16u + l) >> r) & 1u);
    let d1 = half_at(o) * f32(sm.x);
    return fence32(d1 * f32(v)) - fence32(half_at(o + 2u) * f32(sm.y));
}

// q6_K: ql[128] qh[64] scales[16] d. Value 128n + 32k + l: nibble k / 2 of
// ql[64n + 32 (k % 2) + l], 2 high bits at 2k of qh[32n + l], i8 scale 8n + 2k + l / 16.
fn q6_k(o: u32, i: u32) -> f32 {
    let n = i / 128u;
    let k = (i / 32u) % 4u;
    let l = i % 32u;
    let low = (byte_at(o + 64u * n + 32u * (k % 2u) + l) >> (4u * (k / 2u))) & 15u;
    let high = (byte_at(o + 128u + 32u * n + l) >> (2u * k)) & 3u;
    let sc = i8_of(byte_at(o + 192u + 8u * n + 2u * k + l / 16u));
    return (half_at(o + 208u) * f32(sc)) * f32(i32(low | (high << 4u)) - 32);
}

// Element i of the blocks of type t (ggml's id) from byte `base`.
fn dequant(t: u32, base: u32, i: u32) -> f32 {
    switch t {
        case 2u: { return q4_0(base + (i / 32u) * 18u, i % 32u); }
        case 3u: { return q4_1(base + (i / 32u) * 20u, i % 32u); }
        case 6u: { return q5_0(base + (i / 32u) * 22u, i % 32u); }
        case 7u: { return q5_1(base + (i / 32u) * 24u, i % 32u); }
        case 8u: { return q8_0(base + (i / 32u) * 34u, i % 32u); }
        case 10u: { return q2_k(base + (i / 256u) * 84u, i % 256u); }
        case 11u: { return q3_k(base + (i / 256u) * 110u, i % 256u); }
        case 12u: { return q4_k(base + (i / 256u) * 144u, i % 256u); }
        case 13u: { return q5_k(base + (i / 256u) * 176u, i % 256u); }
        default: { return q6_k(base + (i / 256u) * 210u, i % 256u); }
    }
}

// One output word (Y_EPW values) per invocation.
// @kernel dequantize
@compute @workgroup_size(WG)
fn dequantize(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    let n = md[0];
    let first = w * Y_EPW;
    if (first >= n) {
        return;
    }
    for (var k = 0u; k < Y_EPW; k++) {
        let i = first + k;
        if (i < n) {
            y_set(i, dequant(md[EXTRA], md[EXTRA + 1u], i));
        }
    }
    y_flush(w);
}

// x [rows, K] (read through its strides) times the N rows of blocks transposed, for few rows: a
// workgroup per weight row n. Each invocation takes runs of RUN values of the row (run u: values
// RUN u .. RUN u + RUN, inside one block), invocation i the runs i, i + WG, ..., so neighbours
// read neighbouring bytes; it decodes a run in registers with the functions above, once, and
// adds its products with each of the MQ rows of x to that row's f32 accumulator. A tree over the
// workgroup adds the accumulators; invocation i < rows writes y[i, n] (an atomic update of its
// word: a packed word may hold two outputs of different workgroups).
//
// Metadata at EXTRA + 2: K, N, the block's values and bytes, the rows, x's stride along K, then
// the offset in x of each of the MQ rows (rows past `rows` repeat the last).
// @kernel qmatvec
var<workgroup> part: array<f32, WG * MQ>;
var<private> acc: array<f32, MQ>;
var<private> wv: array<f32, RUN>;
var<private> xrow: array<u32, MQ>;

// Values j0 .. j0 + RUN of the block of type t at byte o into wv: one branch per run.
fn decode_run(t: u32, o: u32, j0: u32) {
    switch t {
        case 2u: { for (var e = 0u; e < RUN; e++) { wv[e] = q4_0(o, j0 + e); } }
        case 3u: { for (var e = 0u; e < RUN; e++) { wv[e] = q4_1(o, j0 + e); } }
        case 6u: { for (var e = 0u; e < RUN; e++) { wv[e] = q5_0(o, j0 + e); } }
        case 7u: { for (var e = 0u; e < RUN; e++) { wv[e] = q5_1(o, j0 + e); } }
        case 8u: { for (var e = 0u; e < RUN; e++) { wv[e] = q8_0(o, j0 + e); } }
        case 10u: { for (var e = 0u; e < RUN; e++) { wv[e] = q2_k(o, j0 + e); } }
        case 11u: { for (var e = 0u; e < RUN; e++) { wv[e] = q3_k(o, j0 + e); } }
        case 12u: { for (var e = 0u; e < RUN; e++) { wv[e] = q4_k(o, j0 + e); } }
        case 13u: { for (var e = 0u; e < RUN; e++) { wv[e] = q5_k(o, j0 + e); } }
        default: { for (var e = 0u; e < RUN; e++) { wv[e] = q6_k(o, j0 + e); } }
    }
}

@compute @workgroup_size(WG)
fn qmatvec(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let n = wid.x + wid.y * nwg.x;
    let kn = md[EXTRA + 2u];
    let nn = md[EXTRA + 3u];
    if (n >= nn) {
        return;
    }
    let t = md[EXTRA];
    let bs = md[EXTRA + 4u];
    let bb = md[EXTRA + 5u];
    let rows = md[EXTRA + 6u];
    let sk = md[EXTRA + 7u];
    let row = md[EXTRA + 1u] + n * (kn / bs) * bb;
    for (var i = 0u; i < MQ; i++) {
        xrow[i] = md[EXTRA + 8u + i];
        acc[i] = 0.0;
    }
    for (var k0 = lid * RUN; k0 < kn; k0 += WG * RUN) {
        decode_run(t, row + (k0 / bs) * bb, k0 % bs);
        for (var e = 0u; e < RUN; e++) {
            let xk = (k0 + e) * sk;
            for (var i = 0u; i < MQ; i++) {
                acc[i] += wv[e] * x_load(xrow[i] + xk);
            }
        }
    }
    for (var i = 0u; i < MQ; i++) {
        part[i * WG + lid] = acc[i];
    }
    workgroupBarrier();
    for (var half = WG / 2u; half > 0u; half /= 2u) {
        if (lid < half) {
            for (var i = 0u; i < MQ; i++) {
                part[i * WG + lid] += part[i * WG + lid + half];
            }
        }
        workgroupBarrier();
    }
    if (lid < MQ && lid < rows) {
        y_store(lid * nn + n, part[lid * WG]);
    }
}
