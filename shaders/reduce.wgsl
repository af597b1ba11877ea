// Reductions. The input is seen as a permuted layout: kept dims outer (one output each),
// reduced dims inner (R elements per output, flat index r in row-major order). Each output's
// range of r may be cut into C chunks of L; a chunked pass writes one partial per chunk and a
// second pass reduces the partials.
//
// The builder defines per specialisation: `x_load` (input), optionally `xi_load` (indices of a
// partial input) or `xw` (the input as 16-byte words, for the wide kernels), the output(s),
// UNROLL and the reduction state `S { v: A, i: u32 }` with
//   s_init() -> S                      the identity (index NONE)
//   s_push(s: S, v: V, i: u32) -> S    adds element v at flat index i
//   s_merge(a: S, b: S) -> S           combines two states (any order of indices)
//   idx(k: u32, r: u32) -> u32         the flat index of the element at storage index k, r
//   s_store(o: u32, s: S)              writes output (or partial) o
//   push_block(s, k, dk, r, step)      pushes UNROLL elements r + j step at k + j dk
// and for the wide kernels EPV (elements per word) and the pushes that decode words
// (`push_wide`, `wide_block`; `cols_init`, `cols_push`, `cols_block`, `cols_finish`).
//
// Metadata at EXTRA: O (outputs), R, C, L, T (invocations per chunk, a power of two), log2(T),
// offset, 0, kept rank KR, reduced rank RR (>= 1), then KR kept dims, KR kept strides, RR
// reduced dims, RR reduced strides.

const NONE: u32 = 0xffffffffu;
const KR_AT: u32 = 8u;

// md[EXTRA + 7] (zero), read once per invocation.
var<private> zero_bits: u32;

// v, through an operation the compiler cannot fold: keeps it from rewriting float
// expressions algebraically (as compilers may, for SPIR-V without NoContraction).
fn opaque(v: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(v) | zero_bits);
}

fn kept_rank() -> u32 {
    return md[EXTRA + KR_AT];
}

fn red_rank() -> u32 {
    return md[EXTRA + KR_AT + 1u];
}

// Where the reduced dims' sizes start in md (their strides follow).
fn red_at() -> u32 {
    return EXTRA + KR_AT + 2u + 2u * kept_rank();
}

// The storage index of r = 0 of output o.
fn kept_base(o: u32) -> u32 {
    let kr = kept_rank();
    let at = EXTRA + KR_AT + 2u;
    var rem = o;
    var off = md[EXTRA + 6u];
    for (var d = kr; d > 0u; d--) {
        let size = md[at + d - 1u];
        off += (rem % size) * md[at + kr + d - 1u];
        rem /= size;
    }
    return off;
}

// The storage offset of row q of the reduced dims without the innermost one.
fn red_outer(q: u32) -> u32 {
    let rr = red_rank();
    let at = red_at();
    var rem = q;
    var off = 0u;
    for (var d = rr - 1u; d > 0u; d--) {
        let size = md[at + d - 1u];
        off += (rem % size) * md[at + rr + d - 1u];
        rem /= size;
    }
    return off;
}

// Reduces r in [r0, r1) of the output at `base`, every `step`-th r from r0 (step >= 1), into s.
// The innermost reduced dim is walked incrementally; only crossing into another row of it
// divides.
fn run(s0: S, base: u32, r0: u32, r1: u32, step: u32) -> S {
    var s = s0;
    if (r0 >= r1) {
        return s;
    }
    let rr = red_rank();
    let at = red_at();
    let n0 = md[at + rr - 1u];
    let s0s = md[at + 2u * rr - 1u];
    let dk = step * s0s;
    var r = r0;
    var q = r0 / n0;
    var ri = r0 - q * n0;
    var k = base + red_outer(q) + ri * s0s;
    loop {
        if (r >= r1) {
            break;
        }
        // UNROLL loads at once while they stay in the range and in the current inner row.
        if (ri + (UNROLL - 1u) * step < n0 && r + (UNROLL - 1u) * step < r1) {
            s = push_block(s, k, dk, r, step);
            r += UNROLL * step;
            ri += UNROLL * step;
            k += UNROLL * dk;
        } else {
            s = push_block1(s, k, r);
            r += step;
            ri += step;
            k += dk;
        }
        if (ri >= n0 && r < r1) {
            let dq = ri / n0;
            q += dq;
            ri -= dq * n0;
            k = base + red_outer(q) + ri * s0s;
        }
    }
    return s;
}

fn push_block1(s: S, k: u32, r: u32) -> S {
    return s_push(s, x_load(k), idx(k, r));
}

var<workgroup> sh: array<S, WG>;

// Combines the states of t lanes (a power of two) sitting at tid, tid + stride, ...: lane 0
// (of lane = 0 .. t - 1) returns the result. Every invocation of the workgroup calls it.
fn tree(tid: u32, lane: u32, t: u32, stride: u32, s: S) -> S {
    // A previous tree may still read sh.
    workgroupBarrier();
    sh[tid] = s;
    for (var w = t >> 1u; w > 0u; w >>= 1u) {
        workgroupBarrier();
        if (lane < w) {
            sh[tid] = s_merge(sh[tid], sh[tid + w * stride]);
        }
    }
    return sh[tid];
}

// @kernel rows
// T invocations per chunk (T a power of two dividing WG), WG / T chunks per workgroup; chunk
// g = o * C + c.
@compute @workgroup_size(WG)
fn rows(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    zero_bits = md[EXTRA + 7u];
    let n_out = md[EXTRA];
    let chunks = md[EXTRA + 2u];
    let chunk = md[EXTRA + 3u];
    let t = md[EXTRA + 4u];
    let t_log = md[EXTRA + 5u];
    let lane = tid & (t - 1u);
    let g = (wid.x + wid.y * nwg.x) * (WG >> t_log) + (tid >> t_log);
    let live = g < n_out * chunks;
    var s = s_init();
    if (live) {
        let o = g / chunks;
        let r0 = (g - o * chunks) * chunk;
        s = run(s, kept_base(o), r0 + lane, min(md[EXTRA + 1u], r0 + chunk), t);
    }
    s = tree(tid, lane, t, 1u, s);
    if (lane == 0u && live) {
        s_store(g, s);
    }
}

// @kernel rows_wide
// As rows, over contiguous rows of whole words (R, L, offset and the kept strides multiples of
// EPV): invocation `lane` takes words lane, lane + T, ...; `wide_block` pushes UNROLL words.
@compute @workgroup_size(WG)
fn rows_wide(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    zero_bits = md[EXTRA + 7u];
    let n_out = md[EXTRA];
    let chunks = md[EXTRA + 2u];
    let chunk = md[EXTRA + 3u];
    let t = md[EXTRA + 4u];
    let t_log = md[EXTRA + 5u];
    let lane = tid & (t - 1u);
    let g = (wid.x + wid.y * nwg.x) * (WG >> t_log) + (tid >> t_log);
    let live = g < n_out * chunks;
    var s = s_init();
    if (live) {
        let o = g / chunks;
        let r0 = (g - o * chunks) * chunk;
        let b = kept_base(o) / EPV;
        let w1 = min(md[EXTRA + 1u], r0 + chunk) / EPV;
        var w = r0 / EPV + lane;
        loop {
            if (w + (UNROLL - 1u) * t < w1) {
                s = wide_block(s, b, w, t);
                w += UNROLL * t;
            } else if (w < w1) {
                s = push_wide(s, xw[b + w], w * EPV);
                w += t;
            } else {
                break;
            }
        }
    }
    s = tree(tid, lane, t, 1u, s);
    if (lane == 0u && live) {
        s_store(g, s);
    }
}

// @kernel cols
// X = WG / T neighbouring columns g = c * O + o per workgroup, so that loads coalesce when the
// innermost kept dim is the contiguous one; T invocations (y) per column take rows
// r0 + y, r0 + y + T, ... of its chunk; a tree combines them.
@compute @workgroup_size(WG)
fn cols(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    zero_bits = md[EXTRA + 7u];
    let n_out = md[EXTRA];
    let chunks = md[EXTRA + 2u];
    let chunk = md[EXTRA + 3u];
    let t = md[EXTRA + 4u];
    let x_log = countTrailingZeros(WG) - md[EXTRA + 5u];
    let y = tid >> x_log;
    let g = (wid.x + wid.y * nwg.x) * (WG >> md[EXTRA + 5u]) + (tid & ((1u << x_log) - 1u));
    let live = g < n_out * chunks;
    var s = s_init();
    if (live) {
        let c = g / n_out;
        let r0 = c * chunk;
        s = run(s, kept_base(g - c * n_out), r0 + y, min(md[EXTRA + 1u], r0 + chunk), t);
    }
    s = tree(tid, y, t, 1u << x_log, s);
    if (y == 0u && live) {
        s_store(g, s);
    }
}

// @kernel cols_wide
// As cols, EPV neighbouring outputs per column, one word per reduced element (the kept
// innermost dim contiguous and a multiple of EPV, every other stride and the offset multiples
// of EPV): column g = c * O / EPV + v takes outputs EPV v ... EPV v + EPV - 1, states in `cs`.
var<private> cs: array<S, EPV>;

@compute @workgroup_size(WG)
fn cols_wide(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    zero_bits = md[EXTRA + 7u];
    let n_words = md[EXTRA] / EPV;
    let chunks = md[EXTRA + 2u];
    let chunk = md[EXTRA + 3u];
    let t = md[EXTRA + 4u];
    let x_log = countTrailingZeros(WG) - md[EXTRA + 5u];
    let y = tid >> x_log;
    let g = (wid.x + wid.y * nwg.x) * (WG >> md[EXTRA + 5u]) + (tid & ((1u << x_log) - 1u));
    let live = g < n_words * chunks;
    let c = g / n_words;
    let o = (g - c * n_words) * EPV;
    cols_init();
    let r0 = c * chunk + y;
    let r1 = min(md[EXTRA + 1u], c * chunk + chunk);
    if (live && r0 < r1) {
        let base = kept_base(o);
        let rr = red_rank();
        let at = red_at();
        let n0 = md[at + rr - 1u];
        let s0s = md[at + 2u * rr - 1u];
        let dk = t * s0s;
        var r = r0;
        var q = r0 / n0;
        var ri = r0 - q * n0;
        var k = base + red_outer(q) + ri * s0s;
        loop {
            if (r >= r1) {
                break;
            }
            if (ri + (UNROLL - 1u) * t < n0 && r + (UNROLL - 1u) * t < r1) {
                cols_block(k / EPV, dk / EPV, r, t);
                r += UNROLL * t;
                ri += UNROLL * t;
                k += UNROLL * dk;
            } else {
                cols_push(xw[k / EPV], r);
                r += t;
                ri += t;
                k += dk;
            }
            if (ri >= n0 && r < r1) {
                let dq = ri / n0;
                q += dq;
                ri -= dq * n0;
                k = base + red_outer(q) + ri * s0s;
            }
        }
    }
    cols_finish(tid, y, t, 1u << x_log, y == 0u && live, c * md[EXTRA] + o);
}
