// Scaled dot-product attention (flash-style) and the rotary embeddings (src/spec/attention.rs).
//
// sdpa: a workgroup takes BQ query rows of one (batch, kv head) and DC columns of the output:
// the rows of the query heads sharing the kv head (grouped-query attention), head after head
// (row v is query row v % Lq of head kv * group + v / Lq), so they read each k and v tile once. For each
// tile of BK keys it forms the BQ x BK scores in workgroup memory (q and k read in chunks of DK
// along D into workgroup memory), updates each row's running max and sum (online softmax: the
// earlier sum and accumulators scaled by exp(old max - new max)), reads the BK x DC tile of v and
// adds the tile's weighted values to each invocation's accumulators. Scores never reach memory.
// TPR invocations share a row: invocation t owns row t / TPR, the keys and the columns
// (t % TPR) + TPR n; a row's max and sum go through workgroup memory. Rows of qs, ks and ss are
// padded (QP, KP, SP) so that a row's invocations read different banks. CT is the compute type
// (f32 for the halves and f32, f64 for f64). Keys past the causal limit or dropped by a u8 mask score -inf
// and weigh 0; a row with no key left has sum 0 and is NaN.
//
// Few rows against many keys (decoding): with SPLIT the keys are cut into ranges of split_len (a
// multiple of BK), a workgroup per range, each writing its rows' unnormalised accumulators,
// running max and sum to `part` ([row, split, Dv + 2] in CT) instead of y; sdpa_combine then
// weighs the ranges by exp(max - the row's max) into y.
//
// Metadata at EXTRA: the scale (param 0), then at MA: Hq, Hq / Hkv, Lq, Lk, D, Dv, causal, query
// tiles, column chunks, workgroups; then offset and strides (batch, head, row, col) of q, k, v
// and the mask (stride 0 where it broadcasts); then splits and split_len.

const MA: u32 = EXTRA + 3u;

fn at(o: u32, b: u32, h: u32, i: u32, c: u32) -> u32 {
    return md[o] + b * md[o + 1u] + h * md[o + 2u] + i * md[o + 3u] + c * md[o + 4u];
}

// The keys query row i sees under the causal limit: i + Lk - Lq + 1, within 0 ..= Lk.
fn causal_seen(i: u32, lq: u32, lk: u32) -> u32 {
    let mine = i + 1u + lk;
    return min(lk, select(0u, mine - lq, mine > lq));
}

// The keys any row of a tile sees under the causal limit: the tile's rows v0 .. v0 + n of the
// group's `rows` (query row v % Lq of head v / Lq); its last query row is Lq - 1 where the tile
// crosses from one head to the next.
fn causal_tile_end(v0: u32, n: u32, rows: u32, lq: u32, lk: u32) -> u32 {
    let vlast = min(v0 + n, rows) - 1u;
    return causal_seen(select(vlast % lq, lq - 1u, v0 / lq != vlast / lq), lq, lk);
}

// The factor a row's earlier sums take when its running max goes from `old` to `m`: 0 while it
// had no key (old -inf), 1 while it still has none (m -inf: a key scored -inf weighs 0).
fn rescale(old: CT, m: CT) -> CT {
    if (m > neg_inf()) {
        return select(c_exp(old - m), CT(0), old == neg_inf());
    }
    return CT(1);
}

// @kernel sdpa
var<workgroup> qs: array<CT, BQ * QP>;
var<workgroup> ks: array<CT, BK * KP>;
var<workgroup> vs: array<CT, BK * DC>;
var<workgroup> ss: array<CT, BQ * SP>;
var<workgroup> red_max: array<CT, WG>;
var<workgroup> red_sum: array<CT, WG>;
var<workgroup> row_m: array<CT, BQ>;
var<workgroup> row_l: array<CT, BQ>;

// Rows v0 .. v0 + BQ of kv head hk's query rows, dims d0 .. d0 + DK, into qs (0 past the ends).
fn load_q(t: u32, b: u32, hk: u32, v0: u32, d0: u32) {
    let lq = md[MA + 2u];
    let group = md[MA + 1u];
    for (var x = t; x < BQ * DK; x += WG) {
        let v = v0 + x / DK;
        let e = d0 + x % DK;
        var val = CT(0);
        if (v < group * lq && e < md[MA + 4u]) {
            val = q_load(at(MA + 10u, b, hk * group + v / lq, v % lq, e));
        }
        qs[(x / DK) * QP + x % DK] = val;
    }
}

@compute @workgroup_size(WG)
fn sdpa(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let g = wid.x + wid.y * nwg.x;
    if (g >= md[MA + 9u]) {
        return;
    }
    let hq = md[MA];
    let lq = md[MA + 2u];
    let lk = md[MA + 3u];
    let d = md[MA + 4u];
    let dv = md[MA + 5u];
    let causal = md[MA + 6u] != 0u;
    let chunks = md[MA + 8u];
    let tiles = md[MA + 7u];
    let splits = md[MA + 30u];
    let c0 = (g % chunks) * DC;
    let i0 = ((g / chunks) % tiles) * BQ;
    let split = (g / chunks / tiles) % splits;
    let group = md[MA + 1u];
    let hkv = hq / group;
    let rows = group * lq;
    let bh = g / chunks / tiles / splits;
    let hk = bh % hkv;
    let b = bh / hkv;
    let r = t / TPR;
    let c = t % TPR;
    // This invocation's row: query row i of head h (rows past the group's: vi >= rows, idle).
    let vi = i0 + r;
    let h = hk * group + vi / lq;
    let i = vi % lq;
    let scale = param(0u);
    let neg = neg_inf();
    // Keys any row of the tile sees, and those row i sees (i + Lk - Lq + 1, within 0 ..= Lk).
    var kend = lk;
    var seen = lk;
    if (causal) {
        kend = causal_tile_end(i0, BQ, rows, lq, lk);
        seen = causal_seen(i, lq, lk);
    }
    // This workgroup's keys: its split's range, up to the tile's last.
    let kbegin = split * md[MA + 31u];
    if (SPLIT) {
        kend = min(kend, kbegin + md[MA + 31u]);
    }
    if (t < BQ) {
        row_m[t] = neg;
        row_l[t] = CT(0);
    }
    var acc = array<CT, NJ>();
    for (var n = 0u; n < NJ; n++) {
        acc[n] = CT(0);
    }
    // The workgroup's kv head in k and v. Tiles are read in passes of WG elements (KR rows of a k
    // tile, VR of a v tile), an invocation's loads all issued before its stores to workgroup
    // memory so that their latencies overlap; the v tile's at the top of its iteration, before
    // the scores' work.
    let kbase = at(MA + 15u, b, hk, 0u, 0u);
    let vbase = at(MA + 20u, b, hk, 0u, 0u);
    let q_once = d <= DK;
    if (q_once) {
        load_q(t, b, hk, i0, 0u);
    }
    for (var j0 = kbegin; j0 < kend; j0 += BK) {
        // The previous tile's readers of ss, vs and the row sums are done (with D = 0 no other
        // barrier comes).
        workgroupBarrier();
        var vv = array<CT, VN>();
        for (var n = 0u; n < VN; n++) {
            let j = j0 + t / DC + VR * n;
            let col = c0 + t % DC;
            var val = CT(0);
            if (j < lk && col < dv) {
                val = v_load(vbase + j * md[MA + 23u] + col * md[MA + 24u]);
            }
            vv[n] = val;
        }
        var sc = array<CT, SU>();
        for (var u = 0u; u < SU; u++) {
            sc[u] = CT(0);
        }
        for (var d0 = 0u; d0 < d; d0 += DK) {
            workgroupBarrier();
            if (!q_once) {
                load_q(t, b, hk, i0, d0);
            }
            var kv = array<CT, KN>();
            let e = d0 + t % DK;
            for (var n = 0u; n < KN; n++) {
                let j = j0 + t / DK + KR * n;
                var val = CT(0);
                if (j < lk && e < d) {
                    val = k_load(kbase + j * md[MA + 18u] + e * md[MA + 19u]);
                }
                kv[n] = val;
            }
            for (var n = 0u; n < KN; n++) {
                ks[(t / DK + KR * n) * KP + t % DK] = kv[n];
            }
            workgroupBarrier();
            let dn = min(DK, d - d0);
            for (var e = 0u; e < dn; e++) {
                let qv = qs[r * QP + e];
                for (var u = 0u; u < SU; u++) {
                    sc[u] += qv * ks[(c + TPR * u) * KP + e];
                }
            }
        }
        // Scores in registers; the row's max over its invocations' partial maxima.
        var mx = neg;
        for (var u = 0u; u < SU; u++) {
            let j = j0 + c + TPR * u;
            var s = neg;
            if (vi < rows && j < seen) {
                s = mask_score(scale * sc[u], at(MA + 25u, b, h, i, j), neg);
            }
            sc[u] = s;
            mx = select(mx, s, s > mx);
        }
        let old = row_m[r];
        red_max[t] = mx;
        workgroupBarrier();
        mx = old;
        for (var x = 0u; x < TPR; x++) {
            let m = red_max[r * TPR + x];
            mx = select(mx, m, m > mx);
        }
        let a = rescale(old, mx);
        var part_sum = CT(0);
        for (var u = 0u; u < SU; u++) {
            var p = CT(0);
            if (mx > neg && sc[u] != neg) {
                p = c_exp(sc[u] - mx);
            }
            ss[r * SP + c + TPR * u] = p;
            part_sum += p;
        }
        red_sum[t] = part_sum;
        for (var n = 0u; n < VN; n++) {
            vs[(t / DC + VR * n) * DC + t % DC] = vv[n];
        }
        workgroupBarrier();
        if (c == 0u) {
            var sum = CT(0);
            for (var x = 0u; x < TPR; x++) {
                sum += red_sum[r * TPR + x];
            }
            row_m[r] = mx;
            row_l[r] = row_l[r] * a + sum;
        }
        for (var n = 0u; n < NJ; n++) {
            var sum = acc[n] * a;
            for (var x = 0u; x < BK; x++) {
                sum += ss[r * SP + x] * vs[x * DC + c + TPR * n];
            }
            acc[n] = sum;
        }
    }
    // The normalised tile, staged in vs (BQ <= BK rows), then stored a word at a time.
    workgroupBarrier();
    let l = row_l[r];
    if (SPLIT) {
        if (vi < rows) {
            let p = (((b * hq + h) * lq + i) * splits + split) * (dv + 2u);
            for (var n = 0u; n < NJ; n++) {
                let col = c0 + c + TPR * n;
                if (col < dv) {
                    part_put(p + col, acc[n]);
                }
            }
            if (c0 == 0u && c == 0u) {
                part_put(p + dv, row_m[r]);
                part_put(p + dv + 1u, l);
            }
        }
        return;
    }
    for (var n = 0u; n < NJ; n++) {
        vs[r * DC + c + TPR * n] = select(acc[n] / l, nan_c(), l == CT(0));
    }
    workgroupBarrier();
    for (var w = t; w < BQ * DC / OUT_EPW; w += WG) {
        let e0 = w * OUT_EPW;
        let row = i0 + e0 / DC;
        let col = c0 + e0 % DC;
        if (row < rows && col < dv) {
            // Row v of kv head hk is output row (b Hkv + hk) group Lq + v: the heads' rows in turn.
            let base = ((b * hkv + hk) * rows + row) * dv + col;
            for (var x = 0u; x < OUT_EPW; x++) {
                out_set(base + x, vs[e0 + x]);
            }
            out_flush(base / OUT_EPW);
        }
    }
}

// The decode pass: the group x Lq <= ROWS query rows of one (batch, kv head) in one workgroup,
// against one key range (the split rule as sdpa's), every output column. q, k and v are read as
// 16-byte words (bound as raw words; every row whole aligned words, VE values a word, decoded to
// f32 quads by `quad`). q's rows are staged once in qs (rows past the group's zero). Per tile of
// BK = WG keys: (1) invocation t forms key t's score for every row from its key's words, KB
// loads in flight; (2) the rows' maxima over the tile through workgroup memory (RED partial
// maxima a row, then one invocation a row keeps its running max and the tile's rescale factor);
// (3) the invocations split as (key group kh, row r, word w of a v row), up to PN such triples
// each: each adds p x v over its key group's keys (every kh_n-th key of the tile, VB loads in
// flight) and keeps its sum of p. At the end the key groups' accumulators and sums are added
// through workgroup memory. The entry is generated (src/wgpu/attention/decode.rs): every row's
// score, word and accumulator its own variable (a private array indexed in a loop lived in
// memory: 3x the time). Metadata as sdpa's (one query tile, one column chunk).
// @kernel sdpa_decode
var<workgroup> qs: array<vec4<f32>, QS>;
var<workgroup> ps: array<CT, ROWS * BK>;
var<workgroup> red: array<CT, ROWS * RED>;
var<workgroup> row_m: array<CT, ROWS>;
var<workgroup> row_a: array<CT, ROWS>;
var<workgroup> sums: array<CT, KHMAX * ROWS>;

var<private> d_b: u32;
var<private> d_hk: u32;
var<private> d_split: u32;
var<private> d_rows: u32;
var<private> d_dw: u32;
var<private> d_vw: u32;
var<private> d_kbegin: u32;
var<private> d_kend: u32;
var<private> d_kbase: u32;
var<private> d_vbase: u32;
var<private> d_krow: u32;
var<private> d_vrow: u32;

// The workgroup's kv head, key range and row count; q's rows into qs.
fn dec_setup(g: u32, t: u32) {
    let group = md[MA + 1u];
    let lq = md[MA + 2u];
    let splits = md[MA + 30u];
    d_split = g % splits;
    let bh = g / splits;
    let hkv = md[MA] / group;
    d_rows = group * lq;
    d_hk = bh % hkv;
    d_b = bh / hkv;
    d_dw = md[MA + 4u] / VE;
    d_vw = md[MA + 5u] / VE;
    d_kbase = at(MA + 15u, d_b, d_hk, 0u, 0u) / VE;
    d_vbase = at(MA + 20u, d_b, d_hk, 0u, 0u) / VE;
    d_krow = md[MA + 18u] / VE;
    d_vrow = md[MA + 23u] / VE;
    d_kbegin = d_split * md[MA + 31u];
    d_kend = md[MA + 3u];
    if (SPLIT) {
        d_kend = min(d_kend, d_kbegin + md[MA + 31u]);
    }
    // Row r is query row r % Lq of head hk group + r / Lq; its words at r DQ of qs.
    for (var x = t; x < ROWS * DW; x += WG) {
        let r = x / DW;
        let i = x % DW;
        var w = vec4<u32>(0u);
        if (r < d_rows && i < d_dw) {
            w = q[at(MA + 10u, d_b, d_hk * group + r / lq, r % lq, 0u) / VE + i];
        }
        for (var h = 0u; h < QW; h++) {
            qs[r * DQ + i * QW + h] = quad(w, h);
        }
    }
    if (t < ROWS) {
        row_m[t] = neg_inf();
    }
}

// Row r's score of key j (-inf past the range, the causal limit or the mask), into ps at key t.
fn dec_score(r: u32, j: u32, t: u32, s: CT) -> CT {
    if (r >= d_rows) {
        return neg_inf();
    }
    let group = md[MA + 1u];
    let lq = md[MA + 2u];
    let lk = md[MA + 3u];
    var seen = lk;
    if (md[MA + 6u] != 0u) {
        seen = causal_seen(r % lq, lq, lk);
    }
    var x = neg_inf();
    if (j < d_kend && j < seen) {
        x = mask_score(param(0u) * s, at(MA + 25u, d_b, d_hk * group + r / lq, r % lq, j), neg_inf());
    }
    ps[r * BK + t] = x;
    return x;
}

// The rows' maxima over the tile: RED partials a row, then each row's new max and the factor its
// earlier sums take (`rescale`).
fn dec_max(t: u32) {
    let neg = neg_inf();
    let r = t / RED;
    let x0 = (t % RED) * PER;
    var mx = neg;
    if (r < d_rows) {
        for (var x = 0u; x < PER; x++) {
            let v = ps[r * BK + x0 + x];
            mx = select(mx, v, v > mx);
        }
    }
    red[t] = mx;
    workgroupBarrier();
    if (t < ROWS) {
        let old = row_m[t];
        var m = old;
        for (var x = 0u; x < RED; x++) {
            let v = red[t * RED + x];
            m = select(m, v, v > m);
        }
        row_a[t] = rescale(old, m);
        row_m[t] = m;
    }
}

// Row r's weight of key t, exp(s - max) (0 for a key scored -inf), into ps.
fn dec_weight(r: u32, t: u32, s: CT) {
    if (r < d_rows) {
        let m = row_m[r];
        var p = CT(0);
        if (m > neg_inf() && s != neg_inf()) {
            p = c_exp(s - m);
        }
        ps[r * BK + t] = p;
    }
}

// Triple x's value of key u of the tile at j0 (zeros past the range or past the triples).
fn dec_v(x: u32, kh_n: u32, j0: u32, u: u32) -> vec4<u32> {
    if (x / (d_rows * d_vw) < kh_n && u < BK && j0 + u < d_kend) {
        return v[d_vbase + (j0 + u) * d_vrow + x % d_vw];
    }
    return vec4<u32>(0u);
}

// Row r's weight of key u of the tile at j0 for triple x (0 past the range or the triples).
fn dec_p(x: u32, kh_n: u32, j0: u32, u: u32) -> CT {
    let triples = d_rows * d_vw;
    if (x / triples < kh_n && u < BK && j0 + u < d_kend) {
        return ps[(x % triples) / d_vw * BK + u];
    }
    return CT(0);
}

// Triple x's sums parked in qs and sums for the key groups' total.
fn dec_park(x: u32, kh_n: u32, lo: vec4<CT>, hi: vec4<CT>, l: CT) {
    let triples = d_rows * d_vw;
    let kh = x / triples;
    if (kh < kh_n) {
        qs[x * QW] = lo;
        if (QW == 2u) {
            qs[x * QW + 1u] = hi;
        }
        if (x % d_vw == 0u) {
            sums[kh * ROWS + (x % triples) / d_vw] = l;
        }
    }
}

// Triple x of key group 0: its row's word of the output, the key groups' sums added; normalised
// into y, or (split) unnormalised into part with the row's max and sum.
fn dec_out(x: u32, kh_n: u32) {
    let triples = d_rows * d_vw;
    if (x >= triples) {
        return;
    }
    let hq = md[MA];
    let group = md[MA + 1u];
    let lq = md[MA + 2u];
    let dv = md[MA + 5u];
    let r = x / d_vw;
    let w = x % d_vw;
    var o = array<vec4<CT>, 2>();
    var sum = CT(0);
    for (var kh = 0u; kh < kh_n; kh++) {
        for (var h = 0u; h < QW; h++) {
            o[h] += qs[(kh * triples + x) * QW + h];
        }
        sum += sums[kh * ROWS + r];
    }
    let row = (d_b * hq + d_hk * group + r / lq) * lq + r % lq;
    if (SPLIT) {
        let p = (row * md[MA + 30u] + d_split) * (dv + 2u);
        for (var e = 0u; e < VE; e++) {
            part_put(p + w * VE + e, o[e / 4u][e % 4u]);
        }
        if (w == 0u) {
            part_put(p + dv, row_m[r]);
            part_put(p + dv + 1u, sum);
        }
    } else {
        let y0 = row * dv + w * VE;
        for (var e = 0u; e < VE; e++) {
            out_set(y0 + e, select(o[e / 4u][e % 4u] / sum, nan_c(), sum == CT(0)));
            if ((e + 1u) % OUT_EPW == 0u) {
                out_flush((y0 + e) / OUT_EPW);
            }
        }
    }
}

// y from the splits' partial results (see sdpa), one invocation per output word. Metadata at
// MA: Dv, splits. One pass over the splits, CB of them loaded at a time (so that their loads are
// in flight together), the running max, sum and value rescaled by each batch's max.
// @kernel sdpa_combine
const CB: u32 = 8u;

@compute @workgroup_size(WG)
fn sdpa_combine(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    let n = md[0];
    let first = w * Y_EPW;
    if (first >= n) {
        return;
    }
    let dv = md[MA];
    let splits = md[MA + 1u];
    let neg = neg_inf();
    for (var x = 0u; x < Y_EPW; x++) {
        let idx = first + x;
        if (idx < n) {
            let row = idx / dv;
            let col = idx % dv;
            let base = row * splits * (dv + 2u);
            var mx = neg;
            var l = CT(0);
            var o = CT(0);
            for (var s0 = 0u; s0 < splits; s0 += CB) {
                var ms = array<CT, CB>();
                var ls = array<CT, CB>();
                var os = array<CT, CB>();
                var bm = mx;
                for (var u = 0u; u < CB; u++) {
                    ms[u] = neg;
                    if (s0 + u < splits) {
                        let at = base + (s0 + u) * (dv + 2u);
                        ms[u] = part_load(at + dv);
                        ls[u] = part_load(at + dv + 1u);
                        os[u] = part_load(at + col);
                    }
                    bm = select(bm, ms[u], ms[u] > bm);
                }
                // A range without a key (max -inf) weighs 0; while every range so far has none,
                // the sums stay 0.
                if (bm > neg) {
                    let a = rescale(mx, bm);
                    l *= a;
                    o *= a;
                    mx = bm;
                    for (var u = 0u; u < CB; u++) {
                        let wt = select(c_exp(ms[u] - bm), CT(0), ms[u] == neg);
                        l += wt * ls[u];
                        o += wt * os[u];
                    }
                }
            }
            y_set(idx, select(o / l, nan_c(), l == CT(0)));
        }
    }
    y_flush(w);
}

// The cooperative-matrix pass (ARCHITECTURE.md, the attention family): f16, a workgroup of four
// subgroups of 32 takes BQ = 64 query rows of one (batch, kv head) as sdpa does (16 a subgroup)
// and every output column (D and Dv padded to DP), against its key range in tiles of BK keys.
// Its entry, every fragment unrolled, is generated (src/wgpu/attention/coop.rs): one pass over
// the keys. Lane t of a subgroup holds the scores of its row t / 2, keys
// 16 (t % 2) .. + 16 of a tile, from ss (row-major, a row a query row), and writes their weights
// P = exp(s - m) as f16 to ps, where m is the row's reference max: the first max it met, raised
// only when a tile's max passes it by more than TAU (so P <= e^TAU, well inside f16). Raising it
// scales the row's sum and accumulators by exp(old - new); cooperative matrices have no element
// access, so such a tile (rare: the max of a row settles within its first keys) sends every
// accumulator through ss and back, its rows scaled by their lanes. q, k and v are read as 16-byte
// words (bound as raw words; every row whole aligned words), the next tile's fetched into
// registers while this one is computed (coop_fetch, coop_put). At the end ss parks two output
// fragments at a time (rows of 16). Rows in workgroup memory are padded (KS, PS: 16
// bytes past DP and BK halves; SS: 4 floats past BK) so that a fragment's rows start in
// different banks. Metadata as sdpa's (one column chunk).
// @kernel sdpa_coop
var<workgroup> kv: array<f16, 2u * BK * KS>;
var<workgroup> ss: array<f32, BQ * SS>;
var<workgroup> ps: array<f16, BQ * PS>;
// Whether a row of the tile raised its reference max (its accumulators need scaling).
var<workgroup> c_flag: atomic<u32>;

const TAU: f32 = 8.0;

var<private> c_b: u32;
var<private> c_hk: u32;
var<private> c_i0: u32;
var<private> c_split: u32;
var<private> c_kbegin: u32;
var<private> c_kend: u32;
// This lane's row: whether it is one of the group's, its head, its query row, the keys it sees,
// its reference max, its share of the sum, the factor its accumulators take.
var<private> r_live: bool;
var<private> r_h: u32;
var<private> r_i: u32;
var<private> r_seen: u32;
var<private> r_m: CT;
var<private> r_l: CT;
var<private> r_a: CT;

// The workgroup's rows and keys (query tiles in reverse: a causal pass's longest first), and
// this lane's row.
fn coop_setup(g: u32, sg: u32, lane: u32) {
    let lq = md[MA + 2u];
    let lk = md[MA + 3u];
    let causal = md[MA + 6u] != 0u;
    let tiles = md[MA + 7u];
    let splits = md[MA + 30u];
    let group = md[MA + 1u];
    let hkv = md[MA] / group;
    let rows = group * lq;
    c_i0 = (tiles - 1u - g % tiles) * BQ;
    c_split = (g / tiles) % splits;
    let bh = g / tiles / splits;
    c_hk = bh % hkv;
    c_b = bh / hkv;
    let vi = c_i0 + sg * 16u + lane / 2u;
    r_live = vi < rows;
    r_h = c_hk * group + vi / lq;
    r_i = vi % lq;
    r_m = neg_inf();
    r_l = CT(0);
    r_a = CT(1);
    c_kend = lk;
    r_seen = lk;
    if (causal) {
        c_kend = causal_tile_end(c_i0, BQ, rows, lq, lk);
        r_seen = causal_seen(r_i, lq, lk);
    }
    c_kbegin = c_split * md[MA + 31u];
    if (SPLIT) {
        c_kend = min(c_kend, c_kbegin + md[MA + 31u]);
    }
}

// Eight halves of a raw 16-byte word into kv at half i.
fn kv_put8(i: u32, w: vec4<u32>) {
    for (var j = 0u; j < 4u; j++) {
        let h = unpack2x16float(w[j]);
        kv[i + 2u * j] = f16(h.x);
        kv[i + 2u * j + 1u] = f16(h.y);
    }
}

// The workgroup's BQ rows of q (dims past D zero) across kv, row-major, rows KS halves apart.
fn coop_stage_q(lid: u32) {
    let lq = md[MA + 2u];
    let group = md[MA + 1u];
    let d = md[MA + 4u];
    for (var x = lid; x < BQ * DP / 8u; x += WG) {
        let r = x / (DP / 8u);
        let e = (x % (DP / 8u)) * 8u;
        let vi = c_i0 + r;
        var w = vec4<u32>(0u);
        if (vi < group * lq && e < d) {
            w = q[at(MA + 10u, c_b, c_hk * group + vi / lq, vi % lq, e) >> 3u];
        }
        kv_put8(r * KS + e, w);
    }
}

// A tile's words an invocation, fetched (TW = BK DP / 8 / WG) and not yet staged.
var<private> kw: array<vec4<u32>, TW>;
var<private> vw: array<vec4<u32>, TW>;

// Keys j0 .. j0 + BK of k (`is_k`: into kw) or v (vw), zeros past Lk and past the row's n halves.
fn coop_fetch(is_k: bool, j0: u32, lid: u32) {
    let lk = md[MA + 3u];
    let o = select(MA + 20u, MA + 15u, is_k);
    let n = select(md[MA + 5u], md[MA + 4u], is_k);
    let base = at(o, c_b, c_hk, 0u, 0u);
    let rs = md[o + 3u];
    for (var x = 0u; x < TW; x++) {
        let y = lid + x * WG;
        let j = j0 + y / (DP / 8u);
        let e = (y % (DP / 8u)) * 8u;
        var word = vec4<u32>(0u);
        if (j < lk && e < n) {
            let i = (base + j * rs + e) >> 3u;
            if (is_k) {
                word = k[i];
            } else {
                word = v[i];
            }
        }
        if (is_k) {
            kw[x] = word;
        } else {
            vw[x] = word;
        }
    }
}

// The fetched tile of k (at half 0 of kv) or v (at BK rows), a key a row.
fn coop_put(is_k: bool, lid: u32) {
    let to = select(BK * KS, 0u, is_k);
    for (var x = 0u; x < TW; x++) {
        let y = lid + x * WG;
        let at_h = to + (y / (DP / 8u)) * KS + (y % (DP / 8u)) * 8u;
        if (is_k) {
            kv_put8(at_h, kw[x]);
        } else {
            kv_put8(at_h, vw[x]);
        }
    }
}

// The tile's step for this lane's row: its 16 scores of the tile at j0 from ss
// (scaled, masked, -inf past its keys), the row's tile max (with the other lane's), the
// reference max raised where that passes it by more than TAU (the sum scaled here, the
// accumulators after: r_a, c_flag), the weights exp(s - m) as f16 into ps, the lane's share of
// the sum.
fn coop_weights(j0: u32, sg: u32, lane: u32) {
    let neg = neg_inf();
    let scale = param(0u);
    let c0 = (lane % 2u) * 16u;
    let at_s = (sg * 16u + lane / 2u) * SS + c0;
    var s = array<CT, 16>();
    var mx = neg;
    for (var u = 0u; u < 16u; u++) {
        let j = j0 + c0 + u;
        var x = neg;
        if (r_live && j < r_seen) {
            x = mask_score(scale * CT(ss[at_s + u]), at(MA + 25u, c_b, r_h, r_i, j), neg);
        }
        s[u] = x;
        mx = select(mx, x, x > mx);
    }
    let other = subgroupShuffleXor(mx, 1u);
    mx = select(mx, other, other > mx);
    let m = r_m;
    r_a = CT(1);
    if (mx > m + TAU) {
        if (m != neg) {
            r_a = c_exp(m - mx);
            r_l *= r_a;
            atomicOr(&c_flag, 1u);
        }
        r_m = mx;
    }
    let at_p = (sg * 16u + lane / 2u) * PS + c0;
    for (var u = 0u; u < 16u; u++) {
        var p = CT(0);
        if (s[u] != neg) {
            p = c_exp(s[u] - r_m);
        }
        r_l += p;
        ps[at_p + u] = f16(p);
    }
}

// Two accumulators parked in ss (rows of 16): this lane's eight columns of each scaled by its
// row's factor.
fn coop_rescale(sg: u32, lane: u32) {
    let src = sg * 16u * SS + (lane / 2u) * 16u + (lane % 2u) * 8u;
    for (var t = 0u; t < 8u; t++) {
        ss[src + t] *= r_a;
        ss[src + 256u + t] *= r_a;
    }
}

// The rescaling flag cleared (before the first tile, and after a tile's rescaling).
fn coop_rescaled(lid: u32) {
    if (lid == 0u) {
        atomicStore(&c_flag, 0u);
    }
}

// The row's sum: the two lanes' shares.
fn coop_sum() {
    r_l += subgroupShuffleXor(r_l, 1u);
}

// Output columns 16 n .. 16 n + 16 of the row, parked in ss at `slot` (16 x 16, row-major): the
// lane's eight of them normalised into y, or (split) unnormalised into part with the row's
// reference max and sum.
fn coop_out(n: u32, slot: u32, sg: u32, lane: u32) {
    if (!r_live) {
        return;
    }
    let hq = md[MA];
    let lq = md[MA + 2u];
    let dv = md[MA + 5u];
    let c0 = (lane % 2u) * 8u;
    let src = sg * 16u * SS + slot * 256u + (lane / 2u) * 16u + c0;
    let row = (c_b * hq + r_h) * lq + r_i;
    let p = (row * md[MA + 30u] + c_split) * (dv + 2u);
    let l = r_l;
    for (var t = 0u; t < 8u; t++) {
        let col = 16u * n + c0 + t;
        if (col < dv) {
            let o = CT(ss[src + t]);
            if (SPLIT) {
                part_put(p + col, o);
            } else {
                out_set(row * dv + col, select(o / l, nan_c(), l == CT(0)));
                out_flush(row * dv + col);
            }
        }
    }
    if (SPLIT && n == 0u && lane % 2u == 0u) {
        part_put(p + dv, r_m);
        part_put(p + dv + 1u, l);
    }
}

// rope (ROPE_I = false: element i with i + D/2) or rope_i (true: 2i with 2i + 1). A workgroup
// takes S rows at a time, L lanes a row (a lane a word of the output, and every L-th word after
// it in rows of more than L words), RUN times: neighbouring lanes read and write neighbouring
// words, and a lane finds its row's (b, h, t) by division once, then steps it (the grid:
// `rope_grid` of src/spec/attention.rs). Metadata at MA: H, T, D, then offset and strides (b, h,
// t, d) of x, offset and strides (b, t, i) of cos and of sin, then L and S.
// @kernel rope
fn x_of(b: u32, h: u32, tt: u32, e: u32) -> CT {
    return x_load(md[MA + 3u] + b * md[MA + 4u] + h * md[MA + 5u] + tt * md[MA + 6u] + e * md[MA + 7u]);
}

fn table_at(o: u32, b: u32, tt: u32, e: u32) -> u32 {
    return md[o] + b * md[o + 1u] + tt * md[o + 2u] + e * md[o + 3u];
}

@compute @workgroup_size(WG)
fn rope(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let f = flat_id(gid, nwg);
    let lid = f % WG;
    let lanes = md[MA + 16u];
    let step = md[MA + 17u];
    let d = md[MA + 2u];
    let rows = md[0] / d;
    var row = f / WG * step * RUN + lid / lanes;
    if (lid >= lanes * step || row >= rows) {
        return;
    }
    let lane = lid % lanes;
    let hh = md[MA];
    let tn = md[MA + 1u];
    let half = d / 2u;
    let words = d / Y_EPW;
    var tt = row % tn;
    var h = row / tn % hh;
    var b = row / tn / hh;
    for (var k = 0u; k < RUN; k++) {
        if (row >= rows) {
            break;
        }
        for (var w = lane; w < words; w += lanes) {
            for (var j = 0u; j < Y_EPW; j++) {
                let e = w * Y_EPW + j;
                var i = select(e, e - half, e >= half);
                var lo = i;
                var hi = i + half;
                if (ROPE_I) {
                    i = e / 2u;
                    lo = 2u * i;
                    hi = lo + 1u;
                }
                let cv = cos_load(table_at(MA + 8u, b, tt, i));
                let sv = sin_load(table_at(MA + 12u, b, tt, i));
                let x0 = x_of(b, h, tt, lo);
                let x1 = x_of(b, h, tt, hi);
                var y = x0 * sv + x1 * cv;
                if (e == lo) {
                    y = x0 * cv - x1 * sv;
                }
                y_set(row * d + e, y);
            }
            y_flush(row * words + w);
        }
        row += step;
        tt += step;
        while (tt >= tn) {
            tt -= tn;
            h += 1u;
            if (h == hh) {
                h = 0u;
                b += 1u;
            }
        }
    }
}
