// argsort along the last dim as a sort of (key, index) pairs.
//
// Each key is an unsigned integer whose order is the spec's order of the values (NaN above
// +inf, -0.0 equal to 0.0; inverted for descending), so pairs ordered by key, then index,
// are exactly a stable argsort: every pair is distinct, ties need no care.
//
// `block` sorts runs of S (a power of two <= BLOCK) elements of a row in workgroup memory with
// a bitonic network; rows of n <= BLOCK are one run padded to S = next_pow2(n), BLOCK / S rows
// per workgroup. Longer rows are cut into runs of BLOCK, and `merge` passes then merge pairs
// of sorted runs (run length doubling each pass) by merge path, one output tile of BLOCK per
// workgroup. Each invocation holds E = BLOCK / WG consecutive pairs in registers (`rk`, `ri`)
// where a step of the network stays inside them.
//
// Generated per specialisation: `Key` (u32, or vec2<u32>(high, low) for 64-bit keys),
// `KEY_MAX`, `before(ka, ia, kb, ib)` (the pair order), `BLOCK`, `E`, the register networks
// `sort_local(s)` and `clean_local()`, `to_regs(p)` / `from_regs(p)` (E pairs from / to
// workgroup place p), `merge_regs(na, m)` (E calls of `take`), `emit(pos, key, index)` (stores one sorted pair: the index into `y`, or
// key and index into `ko`, `io`), and for `block`, `key_of(i)` (the key of logical element i
// of `x`).

// Workgroup places are padded by one per 32 (`sh`), so that E-strided accesses of a warp
// meet distinct banks.
var<workgroup> sk: array<Key, BLOCK + BLOCK / 32u>;
var<workgroup> si: array<u32, BLOCK + BLOCK / 32u>;
var<private> rk: array<Key, E>;
var<private> ri: array<u32, E>;

fn sh(p: u32) -> u32 {
    return p + (p >> 5u);
}

// The workgroup's index in a 1-D or 2-D grid.
fn group_id(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// Orders registers q < r.
fn rcx(q: u32, r: u32) {
    let kq = rk[q];
    let kr = rk[r];
    let iq = ri[q];
    let ir = ri[r];
    let swap = before(kr, ir, kq, iq);
    rk[q] = select(kq, kr, swap);
    rk[r] = select(kr, kq, swap);
    ri[q] = select(iq, ir, swap);
    ri[r] = select(ir, iq, swap);
}

// Orders workgroup places a < b.
fn scx(a: u32, b: u32) {
    let pa = sh(a);
    let pb = sh(b);
    let ka = sk[pa];
    let kb = sk[pb];
    let ia = si[pa];
    let ib = si[pb];
    if (before(kb, ib, ka, ia)) {
        sk[pa] = kb;
        sk[pb] = ka;
        si[pa] = ib;
        si[pb] = ia;
    }
}

// Sorts every aligned run of s (a power of two <= BLOCK) workgroup places ascending. Stage k
// first compares each place of a k-run's lower half with its mirror in the upper half, then
// half-cleans, so that every run (not every other one) ends ascending. Steps of stride < E
// run in registers, on the invocation's own E places.
fn bitonic(lid: u32, s: u32) {
    to_regs(lid * E);
    sort_local(s);
    for (var k = 2u * E; k <= s; k <<= 1u) {
        from_regs(lid * E);
        workgroupBarrier();
        for (var j = k >> 1u; j >= E; j >>= 1u) {
            for (var t = lid; t < BLOCK / 2u; t += WG) {
                let a = ((t & ~(j - 1u)) << 1u) | (t & (j - 1u));
                scx(a, select(a + j, a ^ (k - 1u), j == k >> 1u));
            }
            workgroupBarrier();
        }
        to_regs(lid * E);
        clean_local();
    }
    from_regs(lid * E);
    workgroupBarrier();
}

// md[EXTRA..] = n (row length), rows, S (run length, a power of two), runs per row, and the
// mask XORed into every key (all ones for descending).
// @kernel block
@compute @workgroup_size(WG)
fn block(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = md[EXTRA];
    let rows = md[EXTRA + 1u];
    let s = md[EXTRA + 2u];
    let runs = md[EXTRA + 3u];
    let first = group_id(wid, nwg) * (BLOCK / s);
    if (first >= rows * runs) {
        return;
    }
    for (var p = lid; p < BLOCK; p += WG) {
        let g = first + p / s;
        let row = g / runs;
        let col = (g % runs) * s + p % s;
        var k = KEY_MAX;
        var i = 0xffffffffu;
        if (row < rows && col < n) {
            k = key_of(row * n + col);
            i = col;
        }
        sk[sh(p)] = k;
        si[sh(p)] = i;
    }
    workgroupBarrier();
    bitonic(lid, s);
    // Padding sorts after the run's own elements, so sorted place c of a run is its element
    // exactly when column (run * s + c) exists.
    for (var p = lid; p < BLOCK; p += WG) {
        let g = first + p / s;
        let row = g / runs;
        let col = (g % runs) * s + p % s;
        if (row < rows && col < n) {
            emit(row * n + col, sk[sh(p)], si[sh(p)]);
        }
    }
}

// md[EXTRA..] = n, rows, L (sorted run length, BLOCK times a power of two), tiles per row.
// @kernel merge
const HALF: u32 = WG / 2u;
// Per search (tile start, tile end): the interval [lo, hi] holding the split.
var<workgroup> bounds: array<u32, 4>;
var<workgroup> trues: array<atomic<u32>, 2>;

// The places of the next pair from a and from b in the invocation's sequential merge.
var<private> cur: vec2<u32>;

// Takes the next merged pair (a's places are [0, na), b's [na, m)) into register q.
fn take(q: u32, na: u32, m: u32) {
    let pa = sh(min(cur.x, BLOCK - 1u));
    let pb = sh(min(cur.y, BLOCK - 1u));
    let from_a = cur.y >= m || (cur.x < na && before(sk[pa], si[pa], sk[pb], si[pb]));
    let c = select(pb, pa, from_a);
    rk[q] = sk[c];
    ri[q] = si[c];
    cur += select(vec2<u32>(0u, 1u), vec2<u32>(1u, 0u), from_a);
}

@compute @workgroup_size(WG)
fn merge(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = md[EXTRA];
    let rows = md[EXTRA + 1u];
    let run = md[EXTRA + 2u];
    let tiles = md[EXTRA + 3u];
    let w = group_id(wid, nwg);
    if (w >= rows * tiles) {
        return;
    }
    let base = (w / tiles) * n;
    let start = (w % tiles) * BLOCK;
    // The pair of runs a, b this tile's outputs come from (tiles never straddle pairs; runs
    // are powers of two, and a single run of 2^31 wraps the mask to 0).
    let pair = start & ~(2u * run - 1u);
    let la = min(run, n - pair);
    let lb = min(run, n - pair - la);
    let a0 = base + pair;
    let b0 = a0 + la;
    let o0 = start - pair;
    let o1 = min(o0 + BLOCK, la + lb);

    // Where the tile starts and ends in a: the split of output o is the number r of the first
    // o outputs taken from a, the first place of a where `a[r] before b[o - r - 1]` fails. Each
    // half of the workgroup searches one split, probing HALF places of its interval per round.
    let h = lid / HALF;
    let t = lid % HALF;
    let o = select(o0, o1, h == 1u);
    if (t == 0u) {
        bounds[2u * h] = select(0u, o - lb, o > lb);
        bounds[2u * h + 1u] = min(o, la);
        atomicStore(&trues[h], 0u);
    }
    workgroupBarrier();
    for (var span = run; span > 0u; span /= HALF) {
        let lo = bounds[2u * h];
        let hi = bounds[2u * h + 1u];
        let step = (hi - lo + HALF - 1u) / HALF;
        let q = lo + (t + 1u) * step - 1u;
        if (step > 0u && q < hi) {
            let b = b0 + o - q - 1u;
            if (before(ka_load(a0 + q), ia_load(a0 + q), ka_load(b), ia_load(b))) {
                atomicAdd(&trues[h], 1u);
            }
        }
        workgroupBarrier();
        if (t == 0u && step > 0u) {
            let nlo = lo + atomicLoad(&trues[h]) * step;
            bounds[2u * h] = nlo;
            bounds[2u * h + 1u] = min(hi, nlo + step - 1u);
            atomicStore(&trues[h], 0u);
        }
        workgroupBarrier();
    }
    let i0 = bounds[0];
    let na = bounds[2] - i0;
    let j0 = o0 - i0;
    let m = o1 - o0;
    let nb = m - na;
    // The tile's share of a, then of b, into workgroup memory.
    for (var p = lid; p < m; p += WG) {
        let src = select(b0 + j0 + p - na, a0 + i0 + p, p < na);
        sk[sh(p)] = ka_load(src);
        si[sh(p)] = ia_load(src);
    }
    workgroupBarrier();
    // Outputs [lid * E, lid * E + E) per invocation: its split in workgroup memory, then a
    // sequential merge (past m, unused values).
    let e0 = min(lid * E, m);
    var lo = select(0u, e0 - nb, e0 > nb);
    var hi = min(e0, na);
    while (lo < hi) {
        let mid = (lo + hi) >> 1u;
        let b = sh(na + e0 - mid - 1u);
        if (before(sk[sh(mid)], si[sh(mid)], sk[b], si[b])) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    cur = vec2<u32>(lo, na + e0 - lo);
    merge_regs(na, m);
    workgroupBarrier();
    from_regs(lid * E);
    workgroupBarrier();
    for (var p = lid; p < m; p += WG) {
        emit(a0 + o0 + p, sk[sh(p)], si[sh(p)]);
    }
}
