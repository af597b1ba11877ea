// Indexing by integer ids. The builder generates per specialisation: the bindings' helpers,
// `id_bits(j)` (the id at storage index j as the low and high words of an i64) and, for
// scatter, `update(i, v)` (store or add v at element i of y). Every kernel binds `flags`.
// md[EXTRA] = the op's code (1 + its position in IndexOp::ALL), md[EXTRA + 1] = the size of
// the indexed dim; a kernel's own words follow.

// Records the first bad id as [op code, id low, id high, size low, size high]; later ones are
// dropped.
fn flag_bad(bits: vec2u, size: vec2u) {
    if (atomicLoad(&flags[0]) != 0u) {
        return;
    }
    loop {
        let r = atomicCompareExchangeWeak(&flags[0], 0u, md[EXTRA]);
        if (r.exchanged) {
            atomicStore(&flags[1], bits.x);
            atomicStore(&flags[2], bits.y);
            atomicStore(&flags[3], size.x);
            atomicStore(&flags[4], size.y);
            return;
        }
        if (r.old_value != 0u) {
            return;
        }
    }
}

// The id at storage index j of ids if it lies in 0..size; else it is flagged and `size` (never
// a valid id) is returned, so that callers skip it.
fn id_at(j: u32) -> u32 {
    let b = id_bits(j);
    let size = md[EXTRA + 1u];
    if (b.y == 0u && b.x < size) {
        return b.x;
    }
    flag_bad(b, vec2u(size, 0u));
    return size;
}

// y[i] = x[x_at(i) + ids[ids_at(i)] * stride] for the elements of one output word: x_at maps the
// output position with its coordinate along dim taken as 0, ids_at spreads the ids over the
// output shape (index_select) or is their own layout (gather). md[EXTRA + 2] = x's stride
// along dim. A bad id gives 0.
// @kernel pick
@compute @workgroup_size(WG)
fn pick(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    let n = md[0];
    let first = w * Y_EPW;
    if (first >= n) {
        return;
    }
    let size = md[EXTRA + 1u];
    let stride = md[EXTRA + 2u];
    for (var k = 0u; k < Y_EPW; k++) {
        let i = first + k;
        if (i < n) {
            let id = id_at(ids_at(i));
            var v = ZERO;
            if (id < size) {
                v = x_load(x_at(i) + id * stride);
            }
            y_set(i, v);
        }
    }
    y_flush(w);
}

// index_select of whole contiguous rows, copied as u32 words (x and y are bound as words).
// Output row r (md[0] rows) is x row ids[r % n] of the leading position r / n. A workgroup
// covers WG / TW rows (TW = 1 << md[EXTRA + 3] threads each) and one chunk of 4 * TW words of
// them; each thread moves up to 4 words, all loaded before any is stored to keep reads in
// flight. md[EXTRA + 2..] = words per row, log2 TW, chunks per row, n, x's stride along dim
// in words. x_at(p) is the first word of leading position p with the dim coordinate 0.
// @kernel rows
@compute @workgroup_size(WG)
fn rows(
    @builtin(local_invocation_index) t: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let g = wid.x + wid.y * nwg.x;
    let words = md[EXTRA + 2u];
    let sh = md[EXTRA + 3u];
    let chunks = md[EXTRA + 4u];
    let n = md[EXTRA + 5u];
    let tw = 1u << sh;
    let r = (g / chunks) * (WG >> sh) + (t >> sh);
    if (r >= md[0]) {
        return;
    }
    let first = (g % chunks) * 4u * tw + (t & (tw - 1u));
    let yrow = r * words;
    let id = id_at(ids_at(r % n));
    if (id >= md[EXTRA + 1u]) {
        for (var q = 0u; q < 4u; q++) {
            let k = first + q * tw;
            if (k < words) {
                y_set(yrow + k, 0u);
            }
        }
        return;
    }
    let xrow = x_at(r / n) + id * md[EXTRA + 6u];
    // Written out rather than as a loop over an array, which a compiler might put in memory.
    let k1 = first + tw;
    let k2 = k1 + tw;
    let k3 = k2 + tw;
    var v0 = 0u;
    var v1 = 0u;
    var v2 = 0u;
    var v3 = 0u;
    if (first < words) {
        v0 = x_load(xrow + first);
    }
    if (k1 < words) {
        v1 = x_load(xrow + k1);
    }
    if (k2 < words) {
        v2 = x_load(xrow + k2);
    }
    if (k3 < words) {
        v3 = x_load(xrow + k3);
    }
    if (first < words) {
        y_set(yrow + first, v0);
    }
    if (k1 < words) {
        y_set(yrow + k1, v1);
    }
    if (k2 < words) {
        y_set(yrow + k2, v2);
    }
    if (k3 < words) {
        y_set(yrow + k3, v3);
    }
}

// As `rows`, moving 16-byte vectors: md[EXTRA + 2] counts vectors per row, x and y are bound
// as vec4<u32>, and x_at(p) and the stride (in words) land on whole vectors.
// @kernel rows_v4
@compute @workgroup_size(WG)
fn rows_v4(
    @builtin(local_invocation_index) t: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let g = wid.x + wid.y * nwg.x;
    let units = md[EXTRA + 2u];
    let sh = md[EXTRA + 3u];
    let chunks = md[EXTRA + 4u];
    let n = md[EXTRA + 5u];
    let tw = 1u << sh;
    let r = (g / chunks) * (WG >> sh) + (t >> sh);
    if (r >= md[0]) {
        return;
    }
    let first = (g % chunks) * 4u * tw + (t & (tw - 1u));
    let k1 = first + tw;
    let k2 = k1 + tw;
    let k3 = k2 + tw;
    let yrow = r * units * 4u;
    let id = id_at(ids_at(r % n));
    var v0 = vec4<u32>(0u);
    var v1 = vec4<u32>(0u);
    var v2 = vec4<u32>(0u);
    var v3 = vec4<u32>(0u);
    if (id < md[EXTRA + 1u]) {
        let xrow = x_at(r / n) + id * md[EXTRA + 6u];
        if (first < units) {
            v0 = x_load4(xrow + 4u * first);
        }
        if (k1 < units) {
            v1 = x_load4(xrow + 4u * k1);
        }
        if (k2 < units) {
            v2 = x_load4(xrow + 4u * k2);
        }
        if (k3 < units) {
            v3 = x_load4(xrow + 4u * k3);
        }
    }
    if (first < units) {
        y_set4(yrow + 4u * first, v0);
    }
    if (k1 < units) {
        y_set4(yrow + 4u * k1, v1);
    }
    if (k2 < units) {
        y_set4(yrow + 4u * k2, v2);
    }
    if (k3 < units) {
        y_set4(yrow + 4u * k3, v3);
    }
}

// update(y_at(p) + ids[ids_at(p)] * stride, src[src_at(p)]) for every position p of src (and
// ids): y_at maps p with its coordinate along dim taken as 0 into the contiguous y.
// md[EXTRA + 2] = y's stride along dim.
// @kernel put
@compute @workgroup_size(WG)
fn put(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let p = flat_id(gid, nwg);
    if (p >= md[0]) {
        return;
    }
    let id = id_at(ids_at(p));
    if (id < md[EXTRA + 1u]) {
        update(y_at(p) + id * md[EXTRA + 2u], src_load(src_at(p)));
    }
}

// As `put`, race-free for types without atomics: one invocation per column of src (its
// positions with the coordinate along dim taken as 0), walking the column in order, so that
// no two invocations touch one element of y and repeated ids apply in row-major order, as on
// the cpu. md[EXTRA + 2..] = y's stride along dim, the column length, ids' and src's strides
// along dim.
// @kernel put_serial
@compute @workgroup_size(WG)
fn put_serial(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let c = flat_id(gid, nwg);
    if (c >= md[0]) {
        return;
    }
    let size = md[EXTRA + 1u];
    let ys = md[EXTRA + 2u];
    let m = md[EXTRA + 3u];
    let istep = md[EXTRA + 4u];
    let sstep = md[EXTRA + 5u];
    let ib = ids_at(c);
    let sb = src_at(c);
    let yb = y_at(c);
    for (var j = 0u; j < m; j++) {
        let id = id_at(ib + j * istep);
        if (id < size) {
            update(yb + id * ys, src_load(sb + j * sstep));
        }
    }
}

// Flags any bad id among md[0] ids (for ops whose main pass visits no id: an empty output).
// Flags the ids outside 0..size for an op whose main pass visits none (its output is empty, so
// the indexed dim may pass u32): md[EXTRA + 1] and md[EXTRA + 2] = the low and high words of
// size. A negative id has its top bit set: it is never below a size < 2^63.
// @kernel check
@compute @workgroup_size(WG)
fn check(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if (i >= md[0]) {
        return;
    }
    let b = id_bits(ids_at(i));
    let size = vec2u(md[EXTRA + 1u], md[EXTRA + 2u]);
    if (b.y < size.y || (b.y == size.y && b.x < size.x)) {
        return;
    }
    flag_bad(b, size);
}
