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
// workgroup.
//
// The network keeps every step in registers: each invocation holds E pairs (`r`), and a
// "round" loads, from workgroup memory, E places that are closed under up to log2(E)
// consecutive steps (groups of places differing only in those strides' bits), does those
// steps, and stores them back; one barrier per round. A stage k (strides k/2 .. 1) takes its
// strides >= E in rounds of log2(E) bits from the top and ends with a round on E consecutive
// places (strides E/2 .. 1): a block of 4096 takes 22 barriers (one a step took 46).
// Steps compare (a, a + j) ascending or descending by bit k of a (Batcher's form), flipped by
// bit S, so that every run of S ends ascending.
//
// Generated per specialisation: `Key` (u32, or vec2<u32>(high, low) for 64-bit keys), `Pair`
// (key and index), `pair(k, i)`, `pair_key(v)`, `pair_index(v)`, `PAD_PAIR` (sorts after every
// real pair), `before(a, b)`, the workgroup arrays with `sget(p)` / `sput(p, v)` (place p),
// `BLOCK`, `E`, `LOG_E`, `SLOTS`, the register code `sort_local(base, s)`, `bit_round(c, lid, lo,
// k, s)`, `to_regs(p)` / `from_regs(p)` (E pairs from / to place p on), `merge_regs(na, m)`,
// `emit(pos, v)` (stores one sorted pair: the index into `y`, or key and index into `ko`, `io`),
// and for `block`, `key_of(i)` (the key of logical element i of `x`).

var<private> r: array<Pair, E>;

// Places are padded by one per 16 (`SLOTS` = BLOCK + BLOCK / 16): E-strided accesses of a
// warp (E consecutive places per invocation) and runs of consecutive places meet distinct banks.
fn sh(p: u32) -> u32 {
    return p + (p >> 4u);
}

// Whether the step of stage k (a power of two <= s) orders place p and its partner ascending.
fn up(p: u32, k: u32, s: u32) -> bool {
    return ((p & k) == 0u) == ((p & s) == 0u);
}

// The workgroup's index in a 1-D or 2-D grid.
fn group_id(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// Sorts every aligned run of s (a power of two <= BLOCK) places ascending, the places written
// and synchronised before; the result is in place, synchronised after.
fn bitonic(lid: u32, s: u32) {
    to_regs(lid * E);
    sort_local(lid * E, s);
    from_regs(lid * E);
    workgroupBarrier();
    for (var k = 2u * E; k <= s; k <<= 1u) {
        // Bits hi .. LOG_E of the strides in rounds of up to LOG_E bits from the top, then
        // bits LOG_E - 1 .. 0 (one call site: the rounds are long code).
        var hi = countTrailingZeros(k) - 1u;
        loop {
            let high = hi >= LOG_E;
            let c = select(LOG_E, min(LOG_E, hi + 1u - LOG_E), high);
            let lo = select(0u, hi + 1u - c, high);
            bit_round(c, lid, lo, k, s);
            workgroupBarrier();
            if (lo == 0u) {
                break;
            }
            hi = lo - 1u;
        }
    }
}

// Row and column of place p of a workgroup whose first run is `first` (runs of s, `runs` a
// row; runs > 1 only when s = BLOCK, one run a workgroup).
fn place(first: u32, p: u32, s: u32, runs: u32) -> vec2<u32> {
    if (runs == 1u) {
        return vec2<u32>(first + (p >> countTrailingZeros(s)), p & (s - 1u));
    }
    return vec2<u32>(first / runs, (first % runs) * BLOCK + p);
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
        let rc = place(first, p, s, runs);
        var v = PAD_PAIR;
        if (rc.x < rows && rc.y < n) {
            v = pair(key_of(rc.x * n + rc.y), rc.y);
        }
        sput(p, v);
    }
    workgroupBarrier();
    bitonic(lid, s);
    // Padding sorts after the run's own elements, so sorted place c of a run is its element
    // exactly when column (run * s + c) exists.
    for (var p = lid; p < BLOCK; p += WG) {
        let rc = place(first, p, s, runs);
        if (rc.x < rows && rc.y < n) {
            emit(rc.x * n + rc.y, sget(p));
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

// The next merged pair (a's places are [0, na), b's [na, m)); moves `cur` past it.
fn take(na: u32, m: u32) -> Pair {
    let va = sget(min(cur.x, BLOCK - 1u));
    let vb = sget(min(cur.y, BLOCK - 1u));
    let from_a = cur.y >= m || (cur.x < na && before(va, vb));
    cur += select(vec2<u32>(0u, 1u), vec2<u32>(1u, 0u), from_a);
    return select(vb, va, from_a);
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
    let ab = start & ~(2u * run - 1u);
    let la = min(run, n - ab);
    let lb = min(run, n - ab - la);
    let a0 = base + ab;
    let b0 = a0 + la;
    let o0 = start - ab;
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
            if (before(pair(ka_load(a0 + q), ia_load(a0 + q)), pair(ka_load(b), ia_load(b)))) {
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
        sput(p, pair(ka_load(src), ia_load(src)));
    }
    workgroupBarrier();
    // Outputs [lid * E, lid * E + E) per invocation: its split in workgroup memory, then a
    // sequential merge (past m, unused values).
    let e0 = min(lid * E, m);
    var lo = select(0u, e0 - nb, e0 > nb);
    var hi = min(e0, na);
    while (lo < hi) {
        let mid = (lo + hi) >> 1u;
        if (before(sget(mid), sget(na + e0 - mid - 1u))) {
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
        emit(a0 + o0 + p, sget(p));
    }
}
