// softmax, log_softmax, layer_norm and rms_norm along lines, and batch_norm.
//
// A line is the N elements along the op's dim at one position of the other dims (the kept
// dims, walked in row-major order: line o). Element k of line o is read at
// kept_base(o) + k SR and written at out_base(o) + k INNER (the output is contiguous).
//
// T lanes share a line. Lane `lane` holds K units of four consecutive elements per tile (unit
// q of tile t is unit index u = (t K + q) T + lane, elements 4u .. 4u + 3), so that a line of
// up to 4 K T elements is read once into registers, reduced, and written from them. Longer
// lines are walked tile by tile twice: once for the statistics, once (reading again) for the
// output.
//
// Lanes are mapped in one of three ways:
// - `lines`, rows: T consecutive invocations per line, WG / T lines per workgroup;
// - `lines`, cols: WG / T neighbouring lines per workgroup, lane = tid / (WG / T), so that
//   loads coalesce across lines whose elements are far apart (a softmax over a leading dim);
// - `lines_sg` (adapters with subgroups): a whole workgroup per line, or a subgroup per line
//   (lanes: the subgroup's, T its size), RPW lines per workgroup.
// The statistics of a line's lanes are combined in workgroup memory (a tree) or by subgroup
// shuffles plus one workgroup-memory step.
//
// The builder defines per specialisation: A (f32 or f64), V = vec4<A>, K, PAD (the value of
// elements past the line), the line state St with st_init, st_merge (commutative bit for bit,
// so that every lane of a butterfly ends with the same state) and, with subgroups, st_xor;
// tile_stats(u0, tl) (the state of the lane's registers), finish(s) (the line's constants from
// its state), load_tile / store_tile (the lane's K units, unrolled), get4 / put4 (one unit of
// input / output), and the optional weight and bias loads.
//
// Metadata at EXTRA: eps (3 words, param(0)), L (lines), N, SR, INNER, T (lanes per line in
// `lines`), COLS, RPW (lines per workgroup in `lines_sg`), weight offset and stride, bias offset
// and stride, the input offset, kept rank KR, then KR kept dims and KR kept strides.

const M_L: u32 = 3u;
const M_N: u32 = 4u;
const M_SR: u32 = 5u;
const M_INNER: u32 = 6u;
const M_T: u32 = 7u;
const M_COLS: u32 = 8u;
const M_RPW: u32 = 9u;
const M_WOFF: u32 = 10u;
const M_WST: u32 = 11u;
const M_BOFF: u32 = 12u;
const M_BST: u32 = 13u;
const M_OFF: u32 = 14u;
const M_KR: u32 = 15u;

// What `lines` and `lines_sg` share (the builder adds it to their code).
// @section line
var<private> rv: array<V, K>;
var<private> N: u32;
var<private> SR: u32;
var<private> INNER: u32;

// -inf, once per invocation: the bits go through md (see f32_of_bits), and a read of md at each
// use costs softmax 13% on the H100 (a register does not).
fn read_meta() {
    NEG_INF = A(f32_of_bits(0xff800000u));
    N = md[EXTRA + M_N];
    SR = md[EXTRA + M_SR];
    INNER = md[EXTRA + M_INNER];
}

// The storage index of element 0 of line o.
fn kept_base(o: u32) -> u32 {
    let kr = md[EXTRA + M_KR];
    let at = EXTRA + M_KR + 1u;
    var rem = o;
    var off = md[EXTRA + M_OFF];
    for (var d = kr; d > 0u; d--) {
        let size = md[at + d - 1u];
        off += (rem % size) * md[at + kr + d - 1u];
        rem /= size;
    }
    return off;
}

// The output index of element 0 of line o.
fn out_base(o: u32) -> u32 {
    return (o / INNER) * N * INNER + o % INNER;
}

// The line o (when `live`) as lane `lane` of tl; every invocation of a line group calls it
// (the reductions synchronise).
fn process_line(o: u32, live: bool, lane: u32, tl: u32) {
    var base = 0u;
    var ob = 0u;
    if (live) {
        base = kept_base(o);
        ob = out_base(o);
    }
    let cap = 4u * K * tl;
    let tiles = (N + cap - 1u) / cap;
    var st = st_init();
    for (var t = 0u; t < tiles; t++) {
        let u0 = t * K * tl + lane;
        if (live) {
            load_tile(base, u0, tl);
            st = st_merge(st, tile_stats(u0, tl));
        }
    }
    finish(reduce_st(st));
    for (var t = 0u; t < tiles; t++) {
        let u0 = t * K * tl + lane;
        if (live) {
            if (tiles > 1u) {
                load_tile(base, u0, tl);
            }
            store_tile(ob, u0, tl);
        }
    }
}

var<workgroup> sh: array<St, WG>;

// @kernel lines
var<private> g_tid: u32;
var<private> g_lane: u32;
var<private> g_stride: u32;

// The state of every lane of the caller's line, combined by a tree in workgroup memory. The
// loop bound is read from the metadata: WGSL's uniformity rules (which browsers enforce) take
// a private variable as non-uniform, and a barrier may only sit under uniform control flow.
fn reduce_st(s: St) -> St {
    workgroupBarrier();
    sh[g_tid] = s;
    for (var w = md[EXTRA + M_T] >> 1u; w > 0u; w >>= 1u) {
        workgroupBarrier();
        if (g_lane < w) {
            sh[g_tid] = st_merge(sh[g_tid], sh[g_tid + w * g_stride]);
        }
    }
    workgroupBarrier();
    return sh[g_tid - g_lane * g_stride];
}

@compute @workgroup_size(WG)
fn lines(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    read_meta();
    let tl = md[EXTRA + M_T];
    let per = WG / tl;
    var local = tid / tl;
    g_lane = tid % tl;
    g_stride = 1u;
    if (md[EXTRA + M_COLS] != 0u) {
        local = tid % per;
        g_lane = tid / per;
        g_stride = per;
    }
    g_tid = tid;
    let o = (wid.x + wid.y * nwg.x) * per + local;
    process_line(o, o < md[EXTRA + M_L], g_lane, tl);
}

// @kernel lines_sg
var<private> g_sl: u32;
var<private> g_ss: u32;
var<private> g_sid: u32;
var<private> g_ns: u32;

// The state combined over the subgroup by a butterfly; every lane ends with the same state.
fn sg_all(s0: St) -> St {
    var s = s0;
    for (var off = 1u; off < g_ss; off <<= 1u) {
        s = st_merge(s, st_xor(s, off));
    }
    return s;
}

// The state of every lane of the caller's line: its subgroup's, or with a whole workgroup per
// line, the subgroups' states through workgroup memory.
fn reduce_st(s: St) -> St {
    let v = sg_all(s);
    if (!WHOLE) {
        return v;
    }
    workgroupBarrier();
    if (g_sl == 0u) {
        sh[g_sid] = v;
    }
    workgroupBarrier();
    var acc = st_init();
    for (var j = g_sl; j < g_ns; j += g_ss) {
        acc = st_merge(acc, sh[j]);
    }
    return sg_all(acc);
}

@compute @workgroup_size(WG)
fn lines_sg(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(subgroup_invocation_id) sl: u32, @builtin(subgroup_size) ss: u32, @builtin(subgroup_id) sid: u32, @builtin(num_subgroups) ns: u32) {
    read_meta();
    g_sl = sl;
    g_ss = ss;
    g_sid = sid;
    g_ns = ns;
    let rpw = md[EXTRA + M_RPW];
    let first = (wid.x + wid.y * nwg.x) * rpw;
    let n_lines = md[EXTRA + M_L];
    // WHOLE is a constant of the kernel (one line per workgroup: RPW is 1), so that the branch
    // not taken is no code at all: each inlines `process_line`, its units unrolled, and
    // lavapipe took 3 times as long to compile the kernel with both.
    if (WHOLE) {
        process_line(first, first < n_lines, tid, WG);
    } else {
        for (var r = sid; r < rpw; r += ns) {
            process_line(first + r, first + r < n_lines, sl, ss);
        }
    }
}

// @section row_norm
// A layer or rms norm of a few rows (a decode step's: up to 8, of whole units of four, in f32
// compute), formed one way by both this family's `norm_rows` kernel and the prologue of a
// matrix-vector product that reads the norm (matmul.wgsl's `matvec`, which then never stores
// it): the same code in both, so the two give the same bits (ARCHITECTURE.md, fusion). RN_T
// lanes take a row: lane l sums its units u = l, l + RN_T, ... of four elements in that order,
// ((e0 + e1) + (e2 + e3)) each, and the lanes' sums meet in a tree in workgroup memory (lane l
// adds lane l + s's, s = RN_T / 2 .. 1), independent of the subgroup size a driver picks. A
// layer norm sums the row less its first value, then the squares of its deviations from the
// mean so formed; an rms norm the squares. Products pass through fence32 so that no driver contracts them with the
// sum after them, and so do the statistics: a quotient lowered to a product by a reciprocal could
// be contracted with the sum after it in one kernel and not in the other; the reciprocal square
// root is one builtin (`1.0 / sqrt(v)`, two loose operations, a driver may merge in one kernel
// and not in another). The kernel defines rn_x(row, e) (element e of row `row` in f32), rn_w(e) and
// rn_b(e) (the weight and bias, where RN_W, RN_B), rn_n() (the row length), rn_eps(),
// rn_round(v) (v rounded to the output dtype as a store and a load round it), and rn_get(i) /
// rn_set(i, v), WG floats of workgroup memory for the sums.
const RN_T: u32 = 64u;

// The sum of v over the RN_T lanes of group g (l: the caller's lane in it). Every invocation of
// the workgroup calls it (it synchronises).
fn rn_sum(g: u32, l: u32, v: f32) -> f32 {
    let at = g * RN_T + l;
    rn_set(at, v);
    workgroupBarrier();
    for (var s = RN_T / 2u; s > 0u; s >>= 1u) {
        if (l < s) {
            rn_set(at, rn_get(at) + rn_get(at + s));
        }
        workgroupBarrier();
    }
    let total = rn_get(g * RN_T);
    workgroupBarrier();
    return total;
}

fn rn_x4(row: u32, e: u32) -> vec4<f32> {
    return vec4<f32>(rn_x(row, e), rn_x(row, e + 1u), rn_x(row, e + 2u), rn_x(row, e + 3u));
}

fn rn_sq(d: vec4<f32>) -> f32 {
    return (fence32(d.x * d.x) + fence32(d.y * d.y)) + (fence32(d.z * d.z) + fence32(d.w * d.w));
}

// Row `row`'s (mean, 1 / sqrt(variance + eps)); an rms norm's (0, 1 / sqrt(mean square + eps)).
// Lane l of group g; `live`: the row exists (every invocation calls, for the barriers).
fn rn_stats(row: u32, live: bool, g: u32, l: u32) -> vec2<f32> {
    let units = rn_n() / 4u;
    var s = 0.0;
    var mean = 0.0;
    if (RN_CENTER) {
        // Sums taken from the row's first value, so that a constant row has its mean exactly
        // (and normalises to 0), and a large offset does not swamp the spread.
        var k = 0.0;
        if (live) {
            k = rn_x(row, 0u);
            for (var u = l; u < units; u += RN_T) {
                let d = rn_x4(row, 4u * u) - vec4<f32>(k);
                s += (d.x + d.y) + (d.z + d.w);
            }
        }
        mean = k + fence32(rn_sum(g, l, s) / f32(rn_n()));
        s = 0.0;
    }
    if (live) {
        for (var u = l; u < units; u += RN_T) {
            s += rn_sq(rn_x4(row, 4u * u) - vec4<f32>(mean));
        }
    }
    let ms = fence32(rn_sum(g, l, s) / f32(rn_n()));
    return vec2<f32>(mean, fence32(inverseSqrt(fence32(ms + rn_eps()))));
}

// Element e of a row normed by its statistics r, weighted and shifted, rounded as stored.
fn rn_out(v: f32, e: u32, r: vec2<f32>) -> f32 {
    var y = fence32((v - r.x) * r.y);
    if (RN_W) {
        y = fence32(y * rn_w(e));
    }
    if (RN_B) {
        y = fence32(y + rn_b(e));
    }
    return rn_round(y);
}

// @kernel norm_rows
// A workgroup of RN_T lanes a row (row_norm above); the output contiguous, each lane's units
// stored as whole words. Metadata at EXTRA: N, x's offset, the weight's offset and stride, the
// bias's, eps (f32 bits).
var<workgroup> rn_sh: array<f32, WG>;

fn rn_get(i: u32) -> f32 {
    return rn_sh[i];
}

fn rn_set(i: u32, v: f32) {
    rn_sh[i] = v;
}

@compute @workgroup_size(WG)
fn norm_rows(@builtin(local_invocation_index) l: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let row = wid.x;
    let r = rn_stats(row, true, 0u, l);
    let n = rn_n();
    for (var u = l; u < n / 4u; u += RN_T) {
        let e = 4u * u;
        let v = rn_x4(row, e);
        let i = row * n + e;
        y_set(i, rn_out(v.x, e, r));
        y_set(i + 1u, rn_out(v.y, e + 1u, r));
        y_flush(i / Y_EPW);
        y_set(i + 2u, rn_out(v.z, e + 2u, r));
        y_set(i + 3u, rn_out(v.w, e + 3u, r));
        y_flush((i + 2u) / Y_EPW);
    }
}

// @kernel batch_norm
// Elementwise over a strided x: element i is in channel (i / INNER) % C. Metadata at EXTRA:
// eps (3 words), C, INNER, then offset and stride of mean, var, weight, bias.
@compute @workgroup_size(WG)
fn batch_norm(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    let n = md[0];
    let first = w * Y_EPW;
    if (first >= n) {
        return;
    }
    let channels = md[EXTRA + 3u];
    let inner = md[EXTRA + 4u];
    for (var k = 0u; k < Y_EPW; k++) {
        let i = first + k;
        if (i < n) {
            y_set(i, bn(x_load(x_at(i)), (i / inner) % channels));
        }
    }
    y_flush(w);
}

// @kernel local_response_norm
// Elementwise over a strided x of (N, C, ...): element i is in channel c = (i / INNER) % C, and
// its window sums x^2 over the channels c - size / 2 ..= c + (size - 1) / 2 that exist, read
// at x_at(i) moved by whole channel strides. Metadata at EXTRA: alpha, beta, k (3 words each),
// then C, INNER, the channel stride and size.
@compute @workgroup_size(WG)
fn local_response_norm(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    let n = md[0];
    let first = w * Y_EPW;
    if (first >= n) {
        return;
    }
    let channels = md[EXTRA + 9u];
    let inner = md[EXTRA + 10u];
    let sc = md[EXTRA + 11u];
    let size = md[EXTRA + 12u];
    for (var k = 0u; k < Y_EPW; k++) {
        let i = first + k;
        if (i < n) {
            let c = (i / inner) % channels;
            let at = x_at(i);
            let base = at - c * sc;
            let lo = select(0u, c - size / 2u, c >= size / 2u);
            let hi = min(c + (size - 1u) / 2u, channels - 1u);
            // Four loads issued before their sum, in order: a lane waits on memory once per four
            // channels. A channel past the window reads channel hi again and adds +0, which
            // changes no sum (every partial sum is >= +0).
            var s = CT(0);
            for (var j = lo; j <= hi; j += 4u) {
                let v0 = x_load(base + j * sc);
                let v1 = x_load(base + min(j + 1u, hi) * sc);
                let v2 = x_load(base + min(j + 2u, hi) * sc);
                let v3 = x_load(base + min(j + 3u, hi) * sc);
                s += v0 * v0;
                s += select(CT(0), v1 * v1, j + 1u <= hi);
                s += select(CT(0), v2 * v2, j + 2u <= hi);
                s += select(CT(0), v3 * v3, j + 3u <= hi);
            }
            y_set(i, x_load(at) / c_pow(s / CT(size) * param(0u) + param(2u), param(1u)));
        }
    }
    y_flush(w);
}

// @kernel rnn_cell
// lstm_cell (LSTM) or gru_cell, elementwise over the output: element i of [2, B, H] (h' then
// c') or [B, H], computed from e = i % (B H), batch row e / H, column e % H. Gate q of a row
// is column q H + j of gx and gh. Metadata at EXTRA: H, B H, then offset, row stride and
// column stride of gx, gh and the state, then the bias's offset and stride.
fn gate_at(o: u32, b: u32, col: u32) -> u32 {
    return md[o] + b * md[o + 1u] + col * md[o + 2u];
}

fn sigmoid_c(v: CT) -> CT {
    return CT(1) / (CT(1) + c_exp(-v));
}

@compute @workgroup_size(WG)
fn rnn_cell(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    let n = md[0];
    let first = w * Y_EPW;
    if (first >= n) {
        return;
    }
    let hh = md[EXTRA];
    let bh = md[EXTRA + 1u];
    let gx = EXTRA + 2u;
    let gh = EXTRA + 5u;
    let st = EXTRA + 8u;
    for (var k = 0u; k < Y_EPW; k++) {
        let i = first + k;
        if (i < n) {
            let e = i % bh;
            let b = e / hh;
            let j = e % hh;
            let s = state_load(gate_at(st, b, j));
            var a = array<CT, 4>();
            var r = array<CT, 4>();
            for (var q = 0u; q < GATES; q++) {
                a[q] = gx_load(gate_at(gx, b, q * hh + j));
                r[q] = gh_load(gate_at(gh, b, q * hh + j)) + bias_of(q * hh + j);
            }
            var y = CT();
            if (GATES == 4u) {
                let c = sigmoid_c(a[1] + r[1]) * s + sigmoid_c(a[0] + r[0]) * c_tanh(a[2] + r[2]);
                y = select(c, sigmoid_c(a[3] + r[3]) * c_tanh(c), i < bh);
            } else {
                let z = sigmoid_c(a[1] + r[1]);
                let nn = c_tanh(a[2] + sigmoid_c(a[0] + r[0]) * r[2]);
                y = (CT(1) - z) * nn + z * s;
            }
            y_set(i, y);
        }
    }
    y_flush(w);
}
