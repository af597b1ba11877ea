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

// The 32-bit little-endian word at byte a of q (any a): the aligned word, or two shifted.
fn word_at(a: u32) -> u32 {
    let w = a >> 2u;
    let s = (a & 3u) * 8u;
    if (s == 0u) {
        return q[w];
    }
    return (q[w] >> s) | (q[w + 1u] << (32u - s));
}

// The words of bytes p .. p + 16 / p .. p + 8 (p even) and the f16 bits at byte o (even), from
// aligned words only, shifted by p's 2 bytes: the same instructions for every lane, where
// `word_at` branches on the alignment, which alternates between neighbouring blocks of 34 or 18
// bytes, so that every warp took both ways.
fn words4_even(p: u32) -> vec4<u32> {
    let a = p >> 2u;
    let w = vec4<u32>(q[a], q[a + 1u], q[a + 2u], q[a + 3u]);
    var e = 0u;
    if ((p & 2u) != 0u) {
        e = q[a + 4u];
    }
    return select((w >> vec4<u32>(16u)) | (vec4<u32>(w.yzw, e) << vec4<u32>(16u)), w, (p & 2u) == 0u);
}

fn words2_even(p: u32) -> vec2<u32> {
    let a = p >> 2u;
    let w = vec2<u32>(q[a], q[a + 1u]);
    var e = 0u;
    if ((p & 2u) != 0u) {
        e = q[a + 2u];
    }
    return select((w >> vec2<u32>(16u)) | (vec2<u32>(w.y, e) << vec2<u32>(16u)), w, (p & 2u) == 0u);
}

fn half_even(o: u32) -> u32 {
    return (q[o >> 2u] >> ((o & 2u) * 8u)) & 0xffffu;
}

// A q8_0 unit: its block's f16 scale d and its 16 quants, four words.
struct Q8Words {
    d: u32,
    w: vec4<u32>,
}

// The unit of the block at byte o whose quants start at its byte 2 + h.
fn q8_0_words(even: bool, o: u32, h: u32) -> Q8Words {
    let p = o + 2u + h;
    if (even) {
        return Q8Words(half_even(o), words4_even(p));
    }
    return Q8Words(word_at(o) & 0xffffu, vec4<u32>(word_at(p), word_at(p + 4u), word_at(p + 8u), word_at(p + 12u)));
}

// v (below 2^23) minus `bias` as f32, exactly: 2^23 + v is the f32 whose mantissa is v.
fn int_f32(v: u32, bias: f32) -> f32 {
    return bitcast<f32>(0x4b000000u | v) - (8388608.0 + bias);
}

// The 4 bytes of w (each masked by `mask`) as f32 minus `bias`.
fn bytes_f32(w: u32, mask: u32, bias: f32) -> vec4<f32> {
    let v = w & (mask * 0x01010101u);
    return vec4<f32>(int_f32(v & 255u, bias), int_f32((v >> 8u) & 255u, bias), int_f32((v >> 16u) & 255u, bias),
                     int_f32(v >> 24u, bias));
}

// ggml's get_scale_min_k4 of sub-block sb on the words h1, h2, h3 of a q4_K block's scales[12],
// times d and dmin: (d sc, dmin m).
fn scale_min_words(h1: u32, h2: u32, h3: u32, sb: u32, dd: f32, dm: f32) -> vec2<f32> {
    let sh = 8u * (sb % 4u);
    let lo = select(h3, h1, sb < 4u) >> sh;
    let hs = h1 >> sh;
    let hm = h2 >> sh;
    let sc = select((lo & 15u) | (((hs >> 6u) & 3u) << 4u), lo & 63u, sb < 4u);
    let mn = select(((lo >> 4u) & 15u) | (((hm >> 6u) & 3u) << 4u), hm & 63u, sb < 4u);
    return vec2<f32>(dd * f32(sc), dm * f32(mn));
}

// The header of the q4_K block at byte o: d, dmin, and scales[12] as three little-endian words.
struct K4Head {
    d: f32,
    dmin: f32,
    s1: u32,
    s2: u32,
    s3: u32,
}

fn k4_head(o: u32) -> K4Head {
    let h0 = word_at(o);
    return K4Head(f16_to_f32(h0 & 0xffffu), f16_to_f32(h0 >> 16u), word_at(o + 4u), word_at(o + 8u), word_at(o + 12u));
}

// The (d sc, dmin m) of sub-blocks 2c (x, y) and 2c + 1 (z, w) of the q4_K block at byte o.
fn scales_k4(o: u32, c: u32) -> vec4<f32> {
    let h = k4_head(o);
    return vec4<f32>(scale_min_words(h.s1, h.s2, h.s3, 2u * c, h.d, h.dmin),
                     scale_min_words(h.s1, h.s2, h.s3, 2u * c + 1u, h.d, h.dmin));
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

// dequantize of q4_0, q8_0 and q4_K by their quants' words: an invocation per word of a block's
// quants (read whole, `word_at`), decoded as qmatvec decodes it, with dequantize's steps (each
// product fenced where a difference follows); neighbouring invocations take neighbouring words,
// so they store neighbouring words of y. The block type is the kernel constant QT (ggml's id).
// Metadata as dequantize's.
// @kernel dequantize_units
// Values i .. i + 4 of y (i a multiple of 4), a word at a time.
fn put4(i: u32, v: vec4<f32>) {
    y_set(i, v.x);
    y_set(i + 1u, v.y);
    y_flush((i + 1u) / Y_EPW);
    y_set(i + 2u, v.z);
    y_set(i + 3u, v.w);
    y_flush((i + 3u) / Y_EPW);
}

// q4_K's values (d sc) q - (dmin m) of the quants q under sm = (d sc, dmin m).
fn k4(q: vec4<f32>, sm: vec2<f32>) -> vec4<f32> {
    let m = fence32(sm.y);
    return vec4<f32>(fence32(sm.x * q.x) - m, fence32(sm.x * q.y) - m, fence32(sm.x * q.z) - m, fence32(sm.x * q.w) - m);
}

@compute @workgroup_size(WG)
fn dequantize_units(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = flat_id(gid, nwg);
    let base = md[EXTRA + 1u];
    switch QT {
        // q4_0, word w of qs: values 4w .. 4w + 4 (low nibbles) and 16 more (high).
        case 2u: {
            if (g >= md[0] / 8u) {
                return;
            }
            let o = base + (g / 4u) * 18u;
            let w = g % 4u;
            let d = f16_to_f32(word_at(o) & 0xffffu);
            let v = word_at(o + 2u + 4u * w);
            let i = 32u * (g / 4u) + 4u * w;
            put4(i, bytes_f32(v, 15u, 8.0) * d);
            put4(i + 16u, bytes_f32(v >> 4u, 15u, 8.0) * d);
        }
        // q8_0, word w of qs: values 4w .. 4w + 4 (i8 v as the byte v + 128).
        case 8u: {
            if (g >= md[0] / 4u) {
                return;
            }
            let o = base + (g / 8u) * 34u;
            let d = f16_to_f32(word_at(o) & 0xffffu);
            put4(4u * g, bytes_f32(word_at(o + 2u + 4u * (g % 8u)) ^ 0x80808080u, 255u, 128.0) * d);
        }
        // q4_K, word w of qs[128]: c = w / 8, l = 4 (w % 8); its low nibbles are values 64c + l ..
        // + 4 (sub-block 2c), its high nibbles 32 further (sub-block 2c + 1).
        default: {
            if (g >= md[0] / 8u) {
                return;
            }
            let o = base + (g / 32u) * 144u;
            let w = g % 32u;
            let c = w / 8u;
            let sm = scales_k4(o, c);
            let v = word_at(o + 16u + 4u * w);
            let i = 256u * (g / 32u) + 64u * c + 4u * (w % 8u);
            put4(i, k4(bytes_f32(v, 15u, 0.0), sm.xy));
            put4(i + 32u, k4(bytes_f32(v >> 4u, 15u, 0.0), sm.zw));
        }
    }
}

// x [rows, K] (read through its strides) times the N rows of blocks transposed, for few rows: QL
// invocations (a lane group) per RW weight rows (q4_K's two, and q6_K's from two rows of x on,
// share each read of x), WG / QL groups a workgroup. A row is cut into units inside one block, a
// few words of its quants each; lane l takes the units l, l + QL, ..., so that neighbours read
// neighbouring bytes and, at each step, nearby values of x (`x4`: four at once, one vector where
// the host found x's rows aligned). q4_0, q8_0, q4_K and q6_K units are decoded from whole 32-bit
// words (`word_at`: any byte address; blocks on even bytes through `words4_even` / `words2_even`,
// branch-free) into small integers as f32 (`int_f32`: no conversion instruction) under a scale d
// and, for q4_K, a min m per run of values: each of the MQ rows of x adds d sum(q x) - m sum(x) per
// run to its f32 accumulator (the sums by fma), as the native kernel does. Other types decode runs
// of RUN values with the functions above. The lanes' MQ RW accumulators meet in workgroup memory;
// one invocation per row of x and weight row adds a group's QL of them and writes y[i, n] (an
// atomic update of its word: a packed word may hold two outputs of different workgroups). The loops
// index no arrays but MQ's (a driver may keep a loop, and an array indexed in a kept loop goes to
// memory): each word is read where it is used. q4_0's and q4_K's rows are not even a loop:
// `q4_0_rows` and `q4_k_rows`, generated, call the row's function once per row with i a literal
// (NVIDIA kept the 8-row loop of both, and their `acc` and `xrow` in local memory:
// `examples/kernel_stats.rs`).
//
// The block type is the kernel constant QT (ggml's id): a kernel holds one type's decoder. Metadata
// at EXTRA + 2: K, N, the block's values and bytes, the rows, x's stride along K, then the offset
// in x of each of the MQ rows (rows past `rows` repeat the last). x's values come through `x4` and
// `x1`; with a prologue (`pro_setup`, after qmv_start) x is a norm's input, and they are its
// values normed (nn.wgsl's `row_norm`, the code of the norm's own kernel: the same bits as the norm
// stored and read back), the norm's parameters after the rows' offsets.
// @kernel qmatvec
var<private> wv: array<f32, RUN>;

// sum(q x) as one fma per value, from s.
fn dot4(q: vec4<f32>, x: vec4<f32>, s: f32) -> f32 {
    return fma(q.w, x.w, fma(q.z, x.z, fma(q.y, x.y, fma(q.x, x.x, s))));
}

// q4_0 (18 bytes: d qs[16]): value 4w + b + 16h is nibble h of byte b of qs word w, minus 8.
// Unit: half a block, the words 2h and 2h + 1 (values 8h .. 8h + 8 and 16 more). Half blocks
// rather than a word a unit: H200, [1,4096] x [14336,4096]^T f16, 44-47 -> 35.5-36 us (the
// block's scale and the unit's index math once for 16 values, not 8).
fn qmv_q4_0(row: u32, lane: u32, kn: u32, sk: u32, even: bool) {
    for (var u = lane; u < kn / 16u; u += QL) {
        let h = u % 2u;
        let o = row + (u / 2u) * 18u;
        let k = 32u * (u / 2u) + 8u * h;
        if (even) {
            let v = words2_even(o + 2u + 8u * h);
            q4_0_rows(k, sk, v.x, v.y, f16_to_f32(half_even(o)));
        } else {
            q4_0_rows(k, sk, word_at(o + 2u + 8u * h), word_at(o + 6u + 8u * h), f16_to_f32(word_at(o) & 0xffffu));
        }
    }
}

// Row i of x's products with a q4_0 unit (called by `q4_0_rows` for each row, i a literal).
fn q4_0_row(i: u32, k: u32, sk: u32, v0: u32, v1: u32, d: f32) {
    var s = dot4(bytes_f32(v0, 15u, 8.0), x4(i, k, sk), 0.0);
    s = dot4(bytes_f32(v1, 15u, 8.0), x4(i, k + 4u, sk), s);
    s = dot4(bytes_f32(v0 >> 4u, 15u, 8.0), x4(i, k + 16u, sk), s);
    s = dot4(bytes_f32(v1 >> 4u, 15u, 8.0), x4(i, k + 20u, sk), s);
    acc[i] = fma(d, s, acc[i]);
}

// q8_0 (34 bytes: d qs[32], i8). Unit: half a block, four words (16 values): H200, as q4_0,
// 48.4-48.8 -> 39.8 us against two words a unit (a whole block a unit: 47-49). From two rows of x
// on (RW = 2) the lane group takes two weight rows, as q6_K's (one row: no faster, session 48).
fn qmv_q8_0(row: u32, row2: u32, lane: u32, kn: u32, sk: u32, even: bool) {
    for (var u = lane; u < kn / 16u; u += QL) {
        let at = (u / 2u) * 34u;
        let h = 16u * (u % 2u);
        let a = q8_0_words(even, row + at, h);
        if (RW == 1u) {
            q8_0_unit(16u * u, sk, a);
        } else {
            q8_0_units(16u * u, sk, a, q8_0_words(even, row2 + at, h));
        }
    }
}

// i8 values v of a word as the f32 v (each byte v + 128 first).
fn i8s_f32(w: u32) -> vec4<f32> {
    return bytes_f32(w ^ 0x80808080u, 255u, 128.0);
}

// Every row of x's products with a q8_0 unit a from value k of the row.
fn q8_0_unit(k: u32, sk: u32, a: Q8Words) {
    let q0 = i8s_f32(a.w.x);
    let q1 = i8s_f32(a.w.y);
    let q2 = i8s_f32(a.w.z);
    let q3 = i8s_f32(a.w.w);
    for (var i = 0u; i < MQ; i++) {
        var s = dot4(q0, x4(i, k, sk), 0.0);
        s = dot4(q1, x4(i, k + 4u, sk), s);
        s = dot4(q2, x4(i, k + 8u, sk), s);
        s = dot4(q3, x4(i, k + 12u, sk), s);
        acc[i] = fma(f16_to_f32(a.d), s, acc[i]);
    }
}

// The same for the units a and b of the lane group's two weight rows (accumulators i and MQ + i),
// each value of x read once for both.
fn q8_0_units(k: u32, sk: u32, a: Q8Words, b: Q8Words) {
    let a0 = i8s_f32(a.w.x);
    let a1 = i8s_f32(a.w.y);
    let a2 = i8s_f32(a.w.z);
    let a3 = i8s_f32(a.w.w);
    let b0 = i8s_f32(b.w.x);
    let b1 = i8s_f32(b.w.y);
    let b2 = i8s_f32(b.w.z);
    let b3 = i8s_f32(b.w.w);
    for (var i = 0u; i < MQ; i++) {
        let x0 = x4(i, k, sk);
        let x1 = x4(i, k + 4u, sk);
        let x2 = x4(i, k + 8u, sk);
        let x3 = x4(i, k + 12u, sk);
        acc[i] = fma(f16_to_f32(a.d), dot4(a3, x3, dot4(a2, x2, dot4(a1, x1, dot4(a0, x0, 0.0)))), acc[i]);
        acc[MQ + i] = fma(f16_to_f32(b.d), dot4(b3, x3, dot4(b2, x2, dot4(b1, x1, dot4(b0, x0, 0.0)))), acc[MQ + i]);
    }
}

// q4_K (144 bytes: d dmin scales[12] qs[128]): value 64c + 32h + l (l < 32) is nibble h of
// qs[32c + l], under sub-block 2c + h's 6-bit scale and min. Unit: column w (< 8) of a block, the
// words w + 8c of qs (c = 0 .. 3): values 64c + 4w .. 64c + 4w + 4 in their low nibbles, 32 more
// in their high ones. So the 8 lanes of a block read 32 neighbouring values of x at each step
// (units of 16 neighbouring bytes put each lane 32 bytes from the next: 16 cache lines a load of
// x). The lane group takes two weight rows (at row, row2): each unit of one has its twin in the
// other, and each value of x read serves both (`q4_k_row`); the scales come from `k4_scales`.
fn qmv_q4_k(row: u32, row2: u32, lane: u32, kn: u32, sk: u32) {
    for (var u = lane; u < kn / 32u; u += QL) {
        let w = u % 8u;
        let o = row + (u / 8u) * 144u;
        let o2 = row2 + (u / 8u) * 144u;
        let s = k4_scales(k4_head(o), w);
        let s2 = k4_scales(k4_head(o2), w);
        q4_k_rows(256u * (u / 8u) + 4u * w, sk, k4_words(o + 16u + 4u * w), s, k4_words(o2 + 16u + 4u * w), s2);
    }
}

// The words p, p + 32, p + 64, p + 96: a q4_K unit's quants.
fn k4_words(p: u32) -> vec4<u32> {
    return vec4<u32>(word_at(p), word_at(p + 32u), word_at(p + 64u), word_at(p + 96u));
}

// The (d sc) and (dmin m) of a q4_K block's eight sub-blocks (ggml's get_scale_min_k4): sub-blocks
// 0 .. 3 in sl and ml, 4 .. 7 in sh and mh. `k4_scales(h, w)` (sections `k4_bytes`, `k4_shuffle`
// at the end) forms them from the header h for the lane of column w.
struct K4Scales {
    sl: vec4<f32>,
    ml: vec4<f32>,
    sh: vec4<f32>,
    mh: vec4<f32>,
}

fn k4_bytes(h: K4Head) -> K4Scales {
    return K4Scales(h.d * bytes_f32(h.s1, 63u, 0.0), h.dmin * bytes_f32(h.s2, 63u, 0.0),
                    h.d * bytes_f32((h.s3 & 0x0f0f0f0fu) | ((h.s1 >> 2u) & 0x30303030u), 255u, 0.0),
                    h.dmin * bytes_f32(((h.s3 >> 4u) & 0x0f0f0f0fu) | ((h.s2 >> 2u) & 0x30303030u), 255u, 0.0));
}

// Row i of x's products with the units of the lane group's two weight rows (accumulators i and
// MQ + i): their words v, v2 and the scales and mins of their sub-blocks s, s2, each value of x
// read once for both.
fn q4_k_row(i: u32, k: u32, sk: u32, v: vec4<u32>, s: K4Scales, v2: vec4<u32>, s2: K4Scales) {
    var r0 = acc[i];
    var r1 = acc[MQ + i];
    var a = x4(i, k, sk);
    var b = x4(i, k + 32u, sk);
    r0 = k4_run(r0, v.x, a, b, vec4<f32>(s.sl.xy, s.ml.xy));
    r1 = k4_run(r1, v2.x, a, b, vec4<f32>(s2.sl.xy, s2.ml.xy));
    a = x4(i, k + 64u, sk);
    b = x4(i, k + 96u, sk);
    r0 = k4_run(r0, v.y, a, b, vec4<f32>(s.sl.zw, s.ml.zw));
    r1 = k4_run(r1, v2.y, a, b, vec4<f32>(s2.sl.zw, s2.ml.zw));
    a = x4(i, k + 128u, sk);
    b = x4(i, k + 160u, sk);
    r0 = k4_run(r0, v.z, a, b, vec4<f32>(s.sh.xy, s.mh.xy));
    r1 = k4_run(r1, v2.z, a, b, vec4<f32>(s2.sh.xy, s2.mh.xy));
    a = x4(i, k + 192u, sk);
    b = x4(i, k + 224u, sk);
    acc[i] = k4_run(r0, v.w, a, b, vec4<f32>(s.sh.zw, s.mh.zw));
    acc[MQ + i] = k4_run(r1, v2.w, a, b, vec4<f32>(s2.sh.zw, s2.mh.zw));
}

// s plus one q4_K word's products: its low nibbles times a under the scale and min (sm.x, sm.z),
// its high nibbles times b under (sm.y, sm.w). The mins' terms are fmas by each value of x, not
// a min times x's sum: x enters every path only as a multiplicand, which no driver can contract
// with the arithmetic that formed it (H100: 43-45 us against 46-48 for the sum, `[1,4096] x
// [14336,4096]^T` f16 on wgpu).
fn k4_run(s: f32, v: u32, a: vec4<f32>, b: vec4<f32>, sm: vec4<f32>) -> f32 {
    var r = fma(sm.x, dot4(bytes_f32(v, 15u, 0.0), a, 0.0), s);
    r = dot4(vec4<f32>(-sm.z), a, r);
    r = fma(sm.y, dot4(bytes_f32(v >> 4u, 15u, 0.0), b, 0.0), r);
    return dot4(vec4<f32>(-sm.w), b, r);
}

// Two words of a q6_K unit's low bits from byte p (xy) and two of its high bits from hb (zw).
fn q6_k_words(even: bool, p: u32, hb: u32) -> vec4<u32> {
    if (even) {
        return vec4<u32>(words2_even(p), words2_even(hb));
    }
    return vec4<u32>(word_at(p), word_at(p + 4u), word_at(hb), word_at(hb + 4u));
}

// q6_K (210 bytes: ql[128] qh[64] scales[16] d): value 128n + 32g + l is nibble g / 2 of
// ql[64n + 32 (g % 2) + l] with 2 high bits at 2g of qh[32n + l], minus 32, under the i8 scale
// 8n + 2g + l / 16. Unit j (8 a block): n = j / 4, l from 8 (j % 4), run g for g = 0 .. 3. From
// two rows of x on (RW = 2) the lane group takes two weight rows, each value of x read once for
// both (H200, f16 x of 4 rows times [14336,4096]^T: 89-90 -> 67-68 us; at one row 49-51 -> 59-61,
// so one row keeps RW = 1).
fn qmv_q6_k(row: u32, row2: u32, lane: u32, kn: u32, sk: u32, even: bool) {
    for (var u = lane; u < kn / 32u; u += QL) {
        let j = u % 8u;
        let k0 = 256u * (u / 8u) + 128u * (j / 4u) + 8u * (j % 4u);
        let o = row + (u / 8u) * 210u;
        let o2 = row2 + (u / 8u) * 210u;
        let dd = half_at(o + 208u);
        var dd2 = 0.0;
        if (RW == 2u) {
            dd2 = half_at(o2 + 208u);
        }
        for (var g = 0u; g < 4u; g++) {
            let a = q6_k_run(o, j, g, even, dd);
            if (RW == 1u) {
                for (var i = 0u; i < MQ; i++) {
                    acc[i] = fma(a.sc, dot4(a.q1, x4(i, k0 + 32u * g + 4u, sk), dot4(a.q0, x4(i, k0 + 32u * g, sk), 0.0)), acc[i]);
                }
            } else {
                let b = q6_k_run(o2, j, g, even, dd2);
                for (var i = 0u; i < MQ; i++) {
                    let x0 = x4(i, k0 + 32u * g, sk);
                    let x1 = x4(i, k0 + 32u * g + 4u, sk);
                    acc[i] = fma(a.sc, dot4(a.q1, x1, dot4(a.q0, x0, 0.0)), acc[i]);
                    acc[MQ + i] = fma(b.sc, dot4(b.q1, x1, dot4(b.q0, x0, 0.0)), acc[MQ + i]);
                }
            }
        }
    }
}

// Run g of unit j of the q6_K block at byte o (its d: dd): its 8 values q - 32 (q0, q1) and their
// scale d sc.
struct Q6Run {
    sc: f32,
    q0: vec4<f32>,
    q1: vec4<f32>,
}

fn q6_k_run(o: u32, j: u32, g: u32, even: bool, dd: f32) -> Q6Run {
    let n = j / 4u;
    let l = 8u * (j % 4u);
    let sc = dd * f32(i8_of(byte_at(o + 192u + 8u * n + 2u * g + l / 16u)));
    let w = q6_k_words(even, o + 64u * n + 32u * (g % 2u) + l, o + 128u + 32u * n + l);
    let q0 = bytes_f32(((w.x >> (4u * (g / 2u))) & 0x0f0f0f0fu) | (((w.z >> (2u * g)) & 0x03030303u) << 4u), 63u, 32.0);
    let q1 = bytes_f32(((w.y >> (4u * (g / 2u))) & 0x0f0f0f0fu) | (((w.w >> (2u * g)) & 0x03030303u) << 4u), 63u, 32.0);
    return Q6Run(sc, q0, q1);
}

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

// The other types: runs of RUN values, each by its type's function.
fn qmv_runs(t: u32, row: u32, lane: u32, kn: u32, sk: u32, bs: u32, bb: u32) {
    for (var k0 = lane * RUN; k0 < kn; k0 += QL * RUN) {
        decode_run(t, row + (k0 / bs) * bb, k0 % bs);
        for (var i = 0u; i < MQ; i++) {
            for (var e = 0u; e < RUN; e++) {
                acc[i] = fma(wv[e], x1(i, k0 + e, sk), acc[i]);
            }
        }
    }
}

@compute @workgroup_size(WG)
fn qmatvec(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let first = (wid.x + wid.y * nwg.x) * (WG / QL) * RW;
    k4_lanes();
    let kn = md[EXTRA + 2u];
    let nn = md[EXTRA + 3u];
    let bs = md[EXTRA + 4u];
    let bb = md[EXTRA + 5u];
    let rows = md[EXTRA + 6u];
    let sk = md[EXTRA + 7u];
    let at = qmv_start(first, lid);
    pro_setup(lid);
    let row = at.x;
    let row2 = at.y;
    let lane = lid % QL;
    // The blocks on even bytes (and so every row's: q4_0's, q8_0's and q6_K's are).
    let even = (md[EXTRA + 1u] & 1u) == 0u;
    switch QT {
        case 2u: { qmv_q4_0(row, lane, kn, sk, even); }
        case 8u: { qmv_q8_0(row, row2, lane, kn, sk, even); }
        case 12u: { qmv_q4_k(row, row2, lane, kn, sk); }
        case 14u: { qmv_q6_k(row, row2, lane, kn, sk, even); }
        default: { qmv_runs(QT, row, lane, kn, sk, bs, bb); }
    }
    qmv_finish(lid, first, nn, rows);
}

// @kernel round_q8
// x's rows rounded to q8 activation blocks (`spec::quant::q8_scale`, `q8_round`: the same bits on
// every backend), an invocation per 4 values. PACK: into `q` as `qmatvec_q8`
// reads them: row i's values as i8 words from word i K / 4, then the blocks' d from word
// D = rows K / 4 (row i's from D + i K / 32) and their d sum(q) from S = D + rows K / 32, as f32
// bits; else the f32 values d q, row-major. Metadata at EXTRA: K, the rows, x's stride along K,
// then the offset in x of each row.

// The block's largest magnitude from the bits of its values' magnitudes: their order as integers
// is theirs as numbers, a NaN above infinity (so that no comparison of floats sees a NaN).
fn q8_scale(amax_bits: u32) -> f32 {
    if (amax_bits >= 0x7f800000u) {
        return f32_of_bits(0x7fc00000u);
    }
    if (amax_bits < 0x0d800000u) {
        return 0.0;
    }
    let m = bitcast<f32>(amax_bits) * bitcast<f32>(0x3c010204u);
    return bitcast<f32>((bitcast<u32>(m) + 0x1000u) & 0xffffe000u);
}

fn q8_round(x: f32, d: f32) -> f32 {
    if (d == 0.0) {
        return 0.0;
    }
    let r = round(x * (1.0 / d));
    let lo = (r - 0.5) * d;
    let hi = (r + 0.5) * d;
    let odd = (bitcast<u32>(i32(r)) & 1u) != 0u;
    if (x < lo || (x == lo && odd)) {
        return r - 1.0;
    }
    if (x > hi || (x == hi && odd)) {
        return r + 1.0;
    }
    return r;
}

// The lanes' largest magnitudes and sums of quants, met by blocks of 8 (a run of 32 values).
var<workgroup> runs: array<u32, WG>;

// The largest of (or the sum over, `sum`) the 8 values of `runs` of this lane's run: every lane
// of the workgroup calls it (barriers).
fn run_total(lid: u32, v: u32, sum: bool) -> u32 {
    workgroupBarrier();
    runs[lid] = v;
    workgroupBarrier();
    var t = 0u;
    for (var j = lid & ~7u; j < (lid | 7u) + 1u; j++) {
        t = select(max(t, runs[j]), t + runs[j], sum);
    }
    return t;
}

@compute @workgroup_size(WG)
fn round_q8(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // A lane a word of 4 values, 8 lanes a run: WG is a multiple of 8, so no run spans two.
    let g = flat_id(gid, nwg);
    let kn = md[EXTRA];
    let rows = md[EXTRA + 1u];
    let sk = md[EXTRA + 2u];
    let live = g < rows * (kn / 4u);
    let i = select(0u, g / (kn / 4u), live);
    let k0 = (g % (kn / 4u)) * 4u;
    let at = md[EXTRA + 3u + i] + k0 * sk;
    var v = vec4<f32>(0.0);
    if (live) {
        v = vec4<f32>(x_load(at), x_load(at + sk), x_load(at + 2u * sk), x_load(at + 3u * sk));
    }
    let m = max(max(bitcast<u32>(v.x) & 0x7fffffffu, bitcast<u32>(v.y) & 0x7fffffffu),
                max(bitcast<u32>(v.z) & 0x7fffffffu, bitcast<u32>(v.w) & 0x7fffffffu));
    let d = q8_scale(run_total(lid, m, false));
    let r = vec4<f32>(q8_round(v.x, d), q8_round(v.y, d), q8_round(v.z, d), q8_round(v.w, d));
    if (!PACK) {
        if (live) {
            for (var e = 0u; e < 4u; e++) {
                q_set(i * kn + k0 + e, bitcast<u32>(r[e] * d));
            }
        }
        return;
    }
    let qi = vec4<i32>(r);
    // The run's sum of quants (|sum| <= 32 127), offset to stay unsigned.
    let sum = f32(i32(run_total(lid, bitcast<u32>(qi.x + qi.y + qi.z + qi.w + 1024), true)) - 8192);
    if (!live) {
        return;
    }
    let b = bitcast<vec4<u32>>(qi) & vec4<u32>(0xffu);
    q_set(g, b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u));
    if ((g & 7u) == 0u) {
        let dw = rows * (kn / 4u);
        q_set(dw + g / 8u, bitcast<u32>(d));
        q_set(dw + rows * (kn / 32u) + g / 8u, bitcast<u32>(d * sum));
    }
}

// @kernel qmatvec_q8
// qmatvec of x rounded to q8 blocks (`round_q8`'s packed rows, `xq`): a weight's integer quants
// times x's i8 values by 4-byte integer dot products (`dot4I8Packed`), each run's integer sum
// scaled once: q4_0 d_w (d_x sum(q q_x) - 8 d_x sum(q_x)) a block, q8_0 d_w d_x sum(q q_x) a half
// block, q4_K (d sc) d_x sum(q q_x) - (dmin m) d_x sum(q_x) a sub-block (the sum of x's quants
// `round_q8` stored, d_x sum(q_x), is exact in f32). Lanes, lane groups, workgroups and the meeting
// of the lanes' sums as qmatvec's (`qmv_frame`); metadata the same, with each accumulator's row
// of x as its index (rows past `rows` the last again).

// d_x of block b of the row of x in accumulator i, and its d_x sum(q_x).
fn xq_d(i: u32, b: u32, kn: u32) -> f32 {
    return bitcast<f32>(xs[md[EXTRA + 6u] * (kn / 4u) + xrow[i] * (kn / 32u) + b]);
}

fn xq_s(i: u32, b: u32, kn: u32) -> f32 {
    return bitcast<f32>(xs[md[EXTRA + 6u] * (kn / 4u + kn / 32u) + xrow[i] * (kn / 32u) + b]);
}

fn dot_lo(v: vec4<u32>, x: vec4<u32>) -> i32 {
    let m = 0x0f0f0f0fu;
    return dot4I8Packed(v.x & m, x.x) + dot4I8Packed(v.y & m, x.y) + dot4I8Packed(v.z & m, x.z) + dot4I8Packed(v.w & m, x.w);
}

fn dot_hi(v: vec4<u32>, x: vec4<u32>) -> i32 {
    return dot_lo(v >> vec4<u32>(4u), x);
}

// q4_0: a lane a block, its 16 bytes of quants: values l (low nibbles) and 16 + l (high).
fn qmv8_q4_0(row: u32, lane: u32, kn: u32, even: bool) {
    for (var b = lane; b < kn / 32u; b += QL) {
        let o = row + b * 18u;
        var v = vec4<u32>(0u);
        var dw = 0.0;
        if (even) {
            v = words4_even(o + 2u);
            dw = f16_to_f32(half_even(o));
        } else {
            v = vec4<u32>(word_at(o + 2u), word_at(o + 6u), word_at(o + 10u), word_at(o + 14u));
            dw = f16_to_f32(word_at(o) & 0xffffu);
        }
        for (var i = 0u; i < MQ; i++) {
            let x = xrow[i] * (kn / 16u) + 2u * b;
            let s = dot_lo(v, xq[x]) + dot_hi(v, xq[x + 1u]);
            acc[i] = fma(dw, fma(xq_d(i, b, kn), f32(s), -8.0 * xq_s(i, b, kn)), acc[i]);
        }
    }
}

// q8_0: a lane a half block (as qmatvec's units).
fn qmv8_q8_0(row: u32, lane: u32, kn: u32, even: bool) {
    for (var u = lane; u < kn / 16u; u += QL) {
        let a = q8_0_words(even, row + (u / 2u) * 34u, 16u * (u % 2u));
        let dw = f16_to_f32(a.d);
        for (var i = 0u; i < MQ; i++) {
            let x = xq[xrow[i] * (kn / 16u) + u];
            let s = dot4I8Packed(a.w.x, x.x) + dot4I8Packed(a.w.y, x.y) + dot4I8Packed(a.w.z, x.z) + dot4I8Packed(a.w.w, x.w);
            acc[i] = fma(dw * xq_d(i, u / 2u, kn), f32(s), acc[i]);
        }
    }
}

// The 16 bytes from byte p of the blocks: one 16-byte load where the blocks start on 16 bytes
// (QV: q4_K's of 144 bytes, and so every field this reads from them), else four words.
fn q16(p: u32) -> vec4<u32> {
    if (QV) {
        return qv[p >> 4u];
    }
    return vec4<u32>(word_at(p), word_at(p + 4u), word_at(p + 8u), word_at(p + 12u));
}

// (d sc, dmin m) of sub-block 2c (xz) and 2c + 1 (yw) of the q4_K block with header words h (d
// dmin, scales[12]): ggml's get_scale_min_k4 on the two bytes both take from each word.
fn k4_pair(h: vec4<u32>, c: u32) -> vec4<f32> {
    let sh = 16u * (c % 2u);
    let s1 = h.y >> sh;
    let s2 = h.z >> sh;
    let s3 = h.w >> sh;
    let hi = c >= 2u;
    let sc = select(s1 & 0x3f3fu, (s3 & 0x0f0fu) | ((s1 >> 2u) & 0x3030u), hi);
    let mn = select(s2 & 0x3f3fu, ((s3 >> 4u) & 0x0f0fu) | ((s2 >> 2u) & 0x3030u), hi);
    let d = f16_to_f32(h.x & 0xffffu);
    let dm = f16_to_f32(h.x >> 16u);
    return vec4<f32>(d * int_f32(sc & 255u, 0.0), d * int_f32(sc >> 8u, 0.0), dm * int_f32(mn & 255u, 0.0),
                     dm * int_f32(mn >> 8u, 0.0));
}

// q4_K: lane t of a block's 8 takes 16 bytes of its quants, qs[16 t ..]: 16 values of sub-block
// 2c (low nibbles) and 16 of 2c + 1 (high), c = t / 2; the lane group takes two weight rows (at
// row, row2), each word of x read once for both; the mins by the lane on each run's first half.
fn qmv8_q4_k(row: u32, row2: u32, lane: u32, kn: u32) {
    for (var u = lane; u < kn / 32u; u += QL) {
        let t = u % 8u;
        let b = u / 8u;
        let c = t / 2u;
        let o = row + b * 144u;
        let o2 = row2 + b * 144u;
        let v = q16(o + 16u + 16u * t);
        let v2 = q16(o2 + 16u + 16u * t);
        let a = k4_pair(q16(o), c);
        let a2 = k4_pair(q16(o2), c);
        let first = t % 2u == 0u;
        for (var i = 0u; i < MQ; i++) {
            let xl = xq[xrow[i] * (kn / 16u) + 16u * b + 4u * c + t % 2u];
            let xh = xq[xrow[i] * (kn / 16u) + 16u * b + 4u * c + t % 2u + 2u];
            let dl = xq_d(i, 8u * b + 2u * c, kn);
            let dh = xq_d(i, 8u * b + 2u * c + 1u, kn);
            let sl = select(0.0, xq_s(i, 8u * b + 2u * c, kn), first);
            let sh = select(0.0, xq_s(i, 8u * b + 2u * c + 1u, kn), first);
            let l = f32(dot_lo(v, xl));
            let hh = f32(dot_hi(v, xh));
            let l2 = f32(dot_lo(v2, xl));
            let hh2 = f32(dot_hi(v2, xh));
            acc[i] = acc[i] + l * (a.x * dl) + hh * (a.y * dh) - a.z * sl - a.w * sh;
            acc[MQ + i] = acc[MQ + i] + l2 * (a2.x * dl) + hh2 * (a2.y * dh) - a2.z * sl - a2.w * sh;
        }
    }
}

@compute @workgroup_size(WG)
fn qmatvec_q8(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let first = (wid.x + wid.y * nwg.x) * (WG / QL) * RW;
    let kn = md[EXTRA + 2u];
    let nn = md[EXTRA + 3u];
    let rows = md[EXTRA + 6u];
    let at = qmv_start(first, lid);
    let row = at.x;
    let row2 = at.y;
    let lane = lid % QL;
    let even = (md[EXTRA + 1u] & 1u) == 0u;
    switch QT {
        case 2u: { qmv8_q4_0(row, lane, kn, even); }
        case 8u: { qmv8_q8_0(row, lane, kn, even); }
        default: { qmv8_q4_k(row, row2, lane, kn); }
    }
    qmv_finish(lid, first, nn, rows);
}

// @section qmv_frame
// The accumulators of qmatvec and qmatvec_q8 (acc[r MQ + i]: row i of x, the group's weight row
// r), the rows of x they read, and their end: the lanes' sums meet in workgroup memory, and one
// invocation per row of x and weight row adds a group's QL of them and writes y[i, n] (an atomic
// update of its word: a packed word may hold two outputs of different workgroups) through
// `y_out`, which with an epilogue (`qmatvec`'s) stores its program's value at that element.
var<workgroup> part: array<f32, WG * MQ * RW>;
var<private> acc: array<f32, MQ * RW>;
var<private> xrow: array<u32, MQ>;

// The byte offsets of the lane group's two weight rows (rows past N, the last workgroup's, read
// row N - 1 again and write nothing), once the rows of x are read and the accumulators zeroed.
fn qmv_start(first: u32, lid: u32) -> vec2<u32> {
    for (var i = 0u; i < MQ; i++) {
        xrow[i] = md[EXTRA + 8u + i];
    }
    for (var i = 0u; i < MQ * RW; i++) {
        acc[i] = 0.0;
    }
    let g = first + (lid / QL) * RW;
    let last = md[EXTRA + 3u] - 1u;
    let row_bytes = (md[EXTRA + 2u] / md[EXTRA + 4u]) * md[EXTRA + 5u];
    return md[EXTRA + 1u] + min(vec2<u32>(g, g + 1u), vec2<u32>(last)) * row_bytes;
}

fn qmv_finish(lid: u32, first: u32, nn: u32, rows: u32) {
    for (var j = 0u; j < MQ * RW; j++) {
        part[j * WG + lid] = acc[j];
    }
    workgroupBarrier();
    // Accumulator j = r MQ + i: row i of x, the group's weight row r.
    if (lid < (WG / QL) * MQ * RW) {
        let g = lid / (MQ * RW);
        let j = lid % (MQ * RW);
        let i = j % MQ;
        let n = first + g * RW + j / MQ;
        var sum = 0.0;
        for (var l = 0u; l < QL; l++) {
            sum += part[j * WG + g * QL + l];
        }
        if (i < rows && n < nn) {
            y_out(i * nn + n, sum);
        }
    }
}

// How `qmatvec`'s q4_K lanes form their blocks' scales (`k4_scales`, one of these sections
// a kernel): each lane all eight by bytes, or, where the subgroups hold a block's 8 neighbouring
// lanes, its own sub-block w's (d sc, dmin m) and the others' from their lanes (`k4_lane`, its
// subgroup lane, counted while every invocation runs). H200, `[1,4096] x [14336,4096]^T` f16:
// 46.5-48.9 -> 44.6-45.8 us.
// @section k4_bytes
fn k4_lanes() {}

fn k4_scales(h: K4Head, w: u32) -> K4Scales {
    return k4_bytes(h);
}

// @section k4_shuffle
var<private> k4_lane: u32;

fn k4_lanes() {
    k4_lane = subgroupExclusiveAdd(1u);
}

fn k4_scales(h: K4Head, w: u32) -> K4Scales {
    let m = scale_min_words(h.s1, h.s2, h.s3, w, h.d, h.dmin);
    let b = k4_lane - w;
    let a0 = subgroupShuffle(m, b);
    let a1 = subgroupShuffle(m, b + 1u);
    let a2 = subgroupShuffle(m, b + 2u);
    let a3 = subgroupShuffle(m, b + 3u);
    let a4 = subgroupShuffle(m, b + 4u);
    let a5 = subgroupShuffle(m, b + 5u);
    let a6 = subgroupShuffle(m, b + 6u);
    let a7 = subgroupShuffle(m, b + 7u);
    return K4Scales(vec4<f32>(a0.x, a1.x, a2.x, a3.x), vec4<f32>(a0.y, a1.y, a2.y, a3.y), vec4<f32>(a4.x, a5.x, a6.x, a7.x),
                    vec4<f32>(a4.y, a5.y, a6.y, a7.y));
}
