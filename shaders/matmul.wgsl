// Matrix products, and the GEMM body of the implicit-GEMM convolutions (shaders/conv.wgsl
// supplies their gathers). One problem per dispatch: for each batch b, C[b] (M x N, row-major,
// contiguous after the batches before it) = A[b] (M x K) B[b] (K x N), each operand read in
// place through its strides.
//
// Metadata at EXTRA: each word by its name, `gmeta(MD_K)`; the `MD_*` constants are generated
// into every kernel from the one table the host writes them by (src/wgpu/gemm/slots.rs).
//
// An operand is A (outer dim M) or B (outer dim N); its code is written once with the prefix
// `opnd_` (constants `OPND_`, metadata words `MD_OPND_`) and instantiated for each with `a_` /
// `b_`. The generated part (src/wgpu/gemm/) defines the element type T, the tile constants, the
// operands' bindings with `opnd_ld(i) -> T` (element i) and `opnd_ld4(i) -> vec4<T>` (elements
// i..i+4, i a multiple of 4), the output's stores, the tiled and cooperative entries with their
// unrolled inner products, and the K loop they share.
//
// Bounds (these kernels run without wgpu's injected checks: `UNCHECKED` in src/wgpu/mod.rs):
// every operand load is guarded by `o < total && k < kn` (row and depth inside the operand);
// a vector load starts at a multiple of 4 elements, so where its tail passes `kn` (or `total`)
// it still lies in the buffer (allocated in 16-byte multiples) and `select` zeroes that tail;
// workgroup-array indices are tile coordinates below the tile's generated sizes; every store
// goes through `c_row4`/`c_tile`, guarded by row < M and column < N; a workgroup past the last
// tile returns (or, in the cooperative kernel, stores nothing). The suite's matmul edge cases
// (1, 17, 131, 1023, k = 1, transposed operands) run every tile configuration.

// Tile rows swept together, so that workgroups running at once share their A and B panels.
const GROUP_M: u32 = 8u;

fn gmeta(i: u32) -> u32 {
    return md[EXTRA + i];
}

// The end of the workgroup's part of K (the loaders read nothing past it), set by the entry.
var<private> k_hi: u32;

// The end of the part of K starting at k0 (part p starts at p * MD_PART_K). The K loops that
// hold barriers count their steps from this, not from `k_hi`: a private variable is not
// uniform to WebGPU's uniformity analysis (Tint rejects the barrier; naga does not).
fn k_end(k0: u32) -> u32 {
    return min(gmeta(MD_K), k0 + gmeta(MD_PART_K));
}

// The batch and the first row and column of flat tile g, tiles ordered in groups of GROUP_M
// tile rows, column by column within a group.
fn tile_of(g: u32) -> vec3<u32> {
    let per_batch = gmeta(MD_TILES);
    let b = g / per_batch;
    let t = g % per_batch;
    let rows = gmeta(MD_TILE_ROWS);
    let cols = gmeta(MD_TILE_COLS);
    let first = (t / (GROUP_M * cols)) * GROUP_M;
    let height = min(rows - first, GROUP_M);
    let inside = t % (GROUP_M * cols);
    return vec3<u32>(b, first + inside % height, inside / height);
}

// The offsets of batch b in A and B.
fn batch_offsets(b: u32) -> vec2<u32> {
    let r = gmeta(MD_RANK);
    var rem = b;
    var off = vec2<u32>(0u, 0u);
    for (var d = r; d > 0u; d--) {
        let size = gmeta(MD_RANK + d);
        let i = rem % size;
        rem /= size;
        off += i * vec2<u32>(gmeta(MD_RANK + r + d), gmeta(MD_RANK + 2u * r + d));
    }
    return off;
}

// How many rows A has (M) and columns B has (N): the extent of each operand's outer dim.
fn a_total() -> u32 {
    return gmeta(MD_M);
}

fn b_total() -> u32 {
    return gmeta(MD_N);
}

// The flat workgroup index of a 1-D or 2-D grid.
fn group_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// Elements (k, o..o+4) of a strided operand (o along its outer dim), the batch's offset
// included; what lies outside the matrix reads as zero.
// @section strided_gather
var<private> opnd_col: vec4<u32>;
var<private> opnd_in: vec4<bool>;
// K and the operand's K stride, read from the metadata once.
var<private> opnd_kn: u32;
var<private> opnd_ks: u32;

fn opnd_setup4(o: u32, base: u32) {
    opnd_kn = k_hi;
    opnd_ks = gmeta(MD_OPND_K);
    let os = vec4<u32>(o) + vec4<u32>(0u, 1u, 2u, 3u);
    opnd_in = os < vec4<u32>(opnd_total());
    opnd_col = vec4<u32>(base + gmeta(MD_OPND_OFFSET)) + os * gmeta(MD_OPND_OUTER);
}

fn opnd_ktile(k0: u32) {}

fn opnd_one(ok: bool, i: u32) -> RAW {
    if (ok) {
        return opnd_word(i);
    }
    return RAW(0);
}

// The raw words of the four; their parities in `opnd_par4` (see `gather_fetch`).
fn opnd_get4(k: u32, r: u32) -> vec4<RAW> {
    if (k >= opnd_kn) {
        return vec4<RAW>(RAW(0));
    }
    let at = opnd_col + vec4<u32>(k * opnd_ks);
    opnd_par4 = dot(at & vec4<u32>(1u), vec4<u32>(1u, 2u, 4u, 8u));
    return vec4<RAW>(opnd_one(opnd_in.x, at.x), opnd_one(opnd_in.y, at.y), opnd_one(opnd_in.z, at.z), opnd_one(opnd_in.w, at.w));
}

// The vector loaders' state: the first outer row of the workgroup's tile, where the
// operand's batch starts, its strides along the outer dim and K, K and the outer extent (read
// from the metadata once, not at every step).
// @section vec_setup
var<private> opnd_base: u32;
var<private> opnd_o0: u32;
var<private> opnd_os: u32;
var<private> opnd_ks: u32;
var<private> opnd_kn: u32;
var<private> opnd_tot: u32;

fn opnd_setup(o0: u32, base: u32, lid: u32) {
    opnd_o0 = o0;
    opnd_base = base + gmeta(MD_OPND_OFFSET);
    opnd_os = gmeta(MD_OPND_OUTER);
    opnd_ks = gmeta(MD_OPND_K);
    opnd_kn = k_hi;
    opnd_tot = opnd_total();
}

// The tiled kernel's operand loaders: a tile of OPND_OT outer x BK, fetched into registers a
// step ahead of its use and held in workgroup memory as vectors of four, every store a whole
// vector: along K (OPND_OT rows of OPND_S4 vectors) when fetched along K, else along the outer
// dim (BK rows of OPND_S4 vectors). One buffer is OPND_SZ4 vectors. The registers hold the raw
// 16-byte words as loaded (`opnd_raw`); they are decoded and their tails past the matrix
// zeroed only when staged, after the step's products: nothing uses a load before then, so the
// fetch does not wait for memory.
//
// Vectors of four along K (the operand's K stride is 1 and rows start on multiples of 4).
// @section tiled_kvec
var<private> opnd_r: array<vec4<u32>, OPND_NV>;
var<private> opnd_k0: u32;
fn opnd_fetch(k0: u32, lid: u32) {
    let os = opnd_os;
    let kn = opnd_kn;
    let total = opnd_tot;
    opnd_k0 = k0;
    for (var j = 0u; j < OPND_NV; j++) {
        let v = lid + j * WG;
        let o = opnd_o0 + v / (BK / 4u);
        let k = k0 + (v % (BK / 4u)) * 4u;
        var x = vec4<u32>(0u);
        if (o < total && k < kn) {
            x = opnd_raw(opnd_base + o * os + k);
        }
        opnd_r[j] = x;
    }
}

fn opnd_stage(buf: u32, lid: u32) {
    for (var j = 0u; j < OPND_NV; j++) {
        let v = lid + j * WG;
        let o = opnd_o0 + v / (BK / 4u);
        let k = opnd_k0 + (v % (BK / 4u)) * 4u;
        let x = opnd_dec4(opnd_r[j], opnd_base + o * opnd_os + k);
        let past = vec4<u32>(k) + vec4<u32>(0u, 1u, 2u, 3u) >= vec4<u32>(opnd_kn);
        opnd_s4[buf * OPND_SZ4 + (v / (BK / 4u)) * OPND_S4 + v % (BK / 4u)] = select(x, vec4<T>(T(0)), past);
    }
}

// Vectors of four along the outer dim (its stride is 1, K rows start on multiples of 4).
// @section tiled_ovec
var<private> opnd_r: array<vec4<u32>, OPND_NV>;
var<private> opnd_k0: u32;
fn opnd_fetch(k0: u32, lid: u32) {
    let ks = opnd_ks;
    let kn = opnd_kn;
    let total = opnd_tot;
    opnd_k0 = k0;
    for (var j = 0u; j < OPND_NV; j++) {
        let v = lid + j * WG;
        let o = opnd_o0 + (v % (OPND_OT / 4u)) * 4u;
        let k = k0 + v / (OPND_OT / 4u);
        var x = vec4<u32>(0u);
        if (o < total && k < kn) {
            x = opnd_raw(opnd_base + o + k * ks);
        }
        opnd_r[j] = x;
    }
}

fn opnd_stage(buf: u32, lid: u32) {
    for (var j = 0u; j < OPND_NV; j++) {
        let v = lid + j * WG;
        let o = opnd_o0 + (v % (OPND_OT / 4u)) * 4u;
        let k = opnd_k0 + v / (OPND_OT / 4u);
        let x = opnd_dec4(opnd_r[j], opnd_base + o + k * opnd_ks);
        let past = vec4<u32>(o) + vec4<u32>(0u, 1u, 2u, 3u) >= vec4<u32>(opnd_tot);
        opnd_s4[buf * OPND_SZ4 + (v / (OPND_OT / 4u)) * OPND_S4 + v % (OPND_OT / 4u)] = select(x, vec4<T>(T(0)), past);
    }
}

// Four outer elements at a time through `opnd_get4` (any strides, or a convolution's
// gather): each invocation keeps one group of four (WG is a multiple of OPND_OT / 4) and walks
// K, held as the vectors along the outer dim are (the tiled and the cooperative kernels). The
// registers hold the raw words and the parities of the elements' indices (which half of a word
// a 2-byte element is), decoded when staged (as the vector loaders do).
// @section gather_fetch
var<private> opnd_r: array<vec4<RAW>, OPND_NV>;
var<private> opnd_p: array<u32, OPND_NV>;
var<private> opnd_par4: u32;

fn opnd_dec4g(w: vec4<RAW>, p: u32) -> vec4<T> {
    return vec4<T>(opnd_dec(w.x, p), opnd_dec(w.y, p >> 1u), opnd_dec(w.z, p >> 2u), opnd_dec(w.w, p >> 3u));
}

fn opnd_setup(o0: u32, base: u32, lid: u32) {
    opnd_setup4(o0 + (lid % (OPND_OT / 4u)) * 4u, base);
}

fn opnd_fetch(k0: u32, lid: u32) {
    opnd_ktile(k0);
    for (var j = 0u; j < OPND_NV; j++) {
        let r = lid / (OPND_OT / 4u) + j * (WG / (OPND_OT / 4u));
        opnd_par4 = 0u;
        opnd_r[j] = opnd_get4(k0 + r, r);
        opnd_p[j] = opnd_par4;
    }
}

// @section tiled_gather
fn opnd_stage(buf: u32, lid: u32) {
    for (var j = 0u; j < OPND_NV; j++) {
        let r = lid / (OPND_OT / 4u) + j * (WG / (OPND_OT / 4u));
        opnd_s4[buf * OPND_SZ4 + r * OPND_S4 + lid % (OPND_OT / 4u)] = opnd_dec4g(opnd_r[j], opnd_p[j]);
    }
}

// Skinny products (M small, a spec constant MV_M): each workgroup takes CW groups of four
// columns of C and splits K among KS invocations per group (columns fastest, so that loads of
// B coalesce along N); each invocation keeps MV_M rows of sums of its four columns and the
// workgroup adds the KS partial sums in workgroup memory. B is streamed once, a vector of four
// columns per load where its N stride is 1. Grid: (batch, column block) flat. With a prologue
// (`pro_setup`, `a_val`: codegen's `prologue_code`), A's rows are a norm's input, normed as
// they are read.
// @kernel matvec
var<workgroup> part: array<vec4<T>, WG * MV_M>;
var<private> acc: array<vec4<T>, MV_M>;
// B's K stride, N and B's N stride, read from the metadata once.
var<private> mv_bk: u32;
var<private> mv_nn: u32;
var<private> mv_bn: u32;

fn mv_step(ab: u32, am: u32, ak: u32, row: u32, n: u32, k: u32) {
    let bv = b_run4(row + k * mv_bk, n, mv_nn, mv_bn);
    for (var i = 0u; i < MV_M; i++) {
        acc[i] = fma(vec4<T>(a_val(ab + i * am + k * ak, i, k)), bv, acc[i]);
    }
}

@compute @workgroup_size(WG)
fn matvec(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = group_index(wid, nwg);
    let blocks = gmeta(MD_TILE_COLS);
    if (g >= blocks * gmeta(MD_BATCHES)) {
        return;
    }
    pro_setup(lid);
    let b = g / blocks;
    let off = batch_offsets(b);
    let c = lid % CW;
    let s = lid / CW;
    let n = (g % blocks * CW + c) * 4u;
    let nn = gmeta(MD_N);
    let kn = gmeta(MD_K);
    let ab = off.x + gmeta(MD_A_OFFSET);
    let am = gmeta(MD_A_OUTER);
    let ak = gmeta(MD_A_K);
    let row = off.y + gmeta(MD_B_OFFSET);
    mv_bk = gmeta(MD_B_K);
    mv_nn = nn;
    mv_bn = gmeta(MD_B_OUTER);
    if (n < nn) {
        var k = s;
        // MV_U steps per pass keep MV_U loads of B in flight.
        while (k + (MV_U - 1u) * KS < kn) {
            for (var u = 0u; u < MV_U; u++) {
                mv_step(ab, am, ak, row, n, k + u * KS);
            }
            k += MV_U * KS;
        }
        while (k < kn) {
            mv_step(ab, am, ak, row, n, k);
            k += KS;
        }
    }
    for (var i = 0u; i < MV_M; i++) {
        part[i * WG + lid] = acc[i];
    }
    workgroupBarrier();
    for (var half = KS / 2u; half > 0u; half /= 2u) {
        if (s < half) {
            for (var i = 0u; i < MV_M; i++) {
                part[i * WG + lid] += part[i * WG + lid + half * CW];
            }
        }
        workgroupBarrier();
    }
    if (s == 0u && n < nn) {
        for (var i = 0u; i < MV_M; i++) {
            c_row4(b * gmeta(MD_M) * nn + i * gmeta(MD_C_M), n, nn, gmeta(MD_C_N), part[i * WG + lid]);
        }
    }
}

// The same with B's K stride 1 (B stored transposed: each column of B a run along K): RW
// columns per workgroup, KS invocations per column walk its run in vectors of four, lanes
// along K so that loads coalesce; a tree over the KS lanes adds the sums.
// @kernel matvec_rows
var<workgroup> part: array<T, WG * MV_M>;
var<private> acc: array<T, MV_M>;
// K, read from the metadata once.
var<private> mv_kn: u32;

fn mv_step(ab: u32, am: u32, ak: u32, col: u32, k: u32) {
    let kn = mv_kn;
    let bv = b_run4(col, k, kn, 1u);
    // Fused multiply-adds in a stated order, not `dot` (whose order and rounding a driver
    // chooses, and NVIDIA's chose differently in two kernels with the same loop).
    for (var i = 0u; i < MV_M; i++) {
        let av = a_run4(ab + i * am, k, kn, ak);
        acc[i] = fma(av.w, bv.w, fma(av.z, bv.z, fma(av.y, bv.y, fma(av.x, bv.x, acc[i]))));
    }
}

@compute @workgroup_size(WG)
fn matvec_rows(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = group_index(wid, nwg);
    let blocks = gmeta(MD_TILE_COLS);
    if (g >= blocks * gmeta(MD_BATCHES)) {
        return;
    }
    let b = g / blocks;
    let off = batch_offsets(b);
    let c = lid / KS;
    let s = lid % KS;
    let n = g % blocks * RW + c;
    let nn = gmeta(MD_N);
    let kn = gmeta(MD_K);
    mv_kn = kn;
    let ab = off.x + gmeta(MD_A_OFFSET);
    let am = gmeta(MD_A_OUTER);
    let ak = gmeta(MD_A_K);
    if (n < nn) {
        let col = off.y + gmeta(MD_B_OFFSET) + n * gmeta(MD_B_OUTER);
        var k = s * 4u;
        while (k + 4u * (MV_U - 1u) * KS < kn) {
            for (var u = 0u; u < MV_U; u++) {
                mv_step(ab, am, ak, col, k + 4u * u * KS);
            }
            k += 4u * MV_U * KS;
        }
        while (k < kn) {
            mv_step(ab, am, ak, col, k);
            k += 4u * KS;
        }
    }
    for (var i = 0u; i < MV_M; i++) {
        part[i * WG + lid] = acc[i];
    }
    workgroupBarrier();
    for (var half = KS / 2u; half > 0u; half /= 2u) {
        if (s < half) {
            for (var i = 0u; i < MV_M; i++) {
                part[i * WG + lid] += part[i * WG + lid + half];
            }
        }
        workgroupBarrier();
    }
    if (s == 0u && n < nn) {
        for (var i = 0u; i < MV_M; i++) {
            c_put(b * gmeta(MD_M) * nn + i * gmeta(MD_C_M) + n * gmeta(MD_C_N), part[i * WG + lid]);
        }
    }
}

// Split-K's sum: each element of C the sum of the parts' f32 products at its index (the
// parts' slices of n elements one after another), added in order of part and rounded once.
// Metadata: MD_SUM_N (the elements of C) and MD_SUM_PARTS. Four elements per invocation.
// @kernel split_sum
@compute @workgroup_size(WG)
fn split_sum(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let n = gmeta(MD_SUM_N);
    let i = (group_index(wid, nwg) * WG + lid) * 4u;
    if (i >= n) {
        return;
    }
    var sum = vec4<T>(T(0));
    let parts = gmeta(MD_SUM_PARTS);
    for (var p = 0u; p < parts; p++) {
        sum += p_run4(p * n, i, n, 1u);
    }
    c_row4(0u, i, n, 1u, sum);
}

// The cooperative-matrix kernel's operand loaders: `array<f16>` in workgroup memory (as the
// H100 probe that ran; a u32-word array read by coopLoad failed NVIDIA's shader compiler),
// fetched a step ahead into registers: vectors as raw 16-byte words of eight halves, or
// gathered four at a time. An operand fetched along K is held with its outer dim as rows
// (half `o * OPND_SS + k`), any other with K as rows (half `k * OPND_SS + o`), so that
// coopLoad reads it as it lies (row- or column-major).
// @section coop_common
// The halves of eight at k..k+8 (two per word) below lim; the others zero.
fn keep8(w: vec4<u32>, k: u32, lim: u32) -> vec4<u32> {
    let at = vec4<u32>(k) + vec4<u32>(0u, 2u, 4u, 6u);
    let lo = select(vec4<u32>(0u), vec4<u32>(0xffffu), at < vec4<u32>(lim));
    let hi = select(vec4<u32>(0u), vec4<u32>(0xffff0000u), at + vec4<u32>(1u) < vec4<u32>(lim));
    return w & (lo | hi);
}

// Eight halves at half i (a multiple of 8) from a raw 16-byte word (f16 -> f32 -> f16 is exact).
// @section coop_put
fn opnd_put8(i: u32, w: vec4<u32>) {
    for (var j = 0u; j < 4u; j++) {
        let h = unpack2x16float(w[j]);
        opnd_sh[i + 2u * j] = f16(h.x);
        opnd_sh[i + 2u * j + 1u] = f16(h.y);
    }
}

// @section coop_kvec
var<private> opnd_r: array<vec4<u32>, OPND_NV>;
var<private> opnd_k0: u32;
fn opnd_fetch(k0: u32, lid: u32) {
    let os = opnd_os;
    let kn = opnd_kn;
    let total = opnd_tot;
    opnd_k0 = k0;
    for (var j = 0u; j < OPND_NV; j++) {
        let v = lid + j * WG;
        let o = opnd_o0 + v / (BK / 8u);
        let k = k0 + (v % (BK / 8u)) * 8u;
        var x = vec4<u32>(0u);
        if (o < total && k < kn) {
            x = opnd_w8(opnd_base + o * os + k);
        }
        opnd_r[j] = x;
    }
}

// The words' halves past K zeroed here, after the step's products (see the tiled loaders).
fn opnd_stage(buf: u32, lid: u32) {
    for (var j = 0u; j < OPND_NV; j++) {
        let v = lid + j * WG;
        let k = opnd_k0 + (v % (BK / 8u)) * 8u;
        opnd_put8(buf * OPND_SZ + (v / (BK / 8u)) * OPND_SS + (v % (BK / 8u)) * 8u, keep8(opnd_r[j], k, opnd_kn));
    }
}

// @section coop_ovec
var<private> opnd_r: array<vec4<u32>, OPND_NV>;
fn opnd_fetch(k0: u32, lid: u32) {
    let ks = opnd_ks;
    let kn = opnd_kn;
    let total = opnd_tot;
    for (var j = 0u; j < OPND_NV; j++) {
        let v = lid + j * WG;
        let o = opnd_o0 + (v % (OPND_OT / 8u)) * 8u;
        let k = k0 + v / (OPND_OT / 8u);
        var x = vec4<u32>(0u);
        if (o < total && k < kn) {
            x = opnd_w8(opnd_base + o + k * ks);
        }
        opnd_r[j] = x;
    }
}

fn opnd_stage(buf: u32, lid: u32) {
    for (var j = 0u; j < OPND_NV; j++) {
        let v = lid + j * WG;
        let o = opnd_o0 + (v % (OPND_OT / 8u)) * 8u;
        opnd_put8(buf * OPND_SZ + (v / (OPND_OT / 8u)) * OPND_SS + (v % (OPND_OT / 8u)) * 8u, keep8(opnd_r[j], o, opnd_tot));
    }
}

// @section coop_gather
fn opnd_stage(buf: u32, lid: u32) {
    for (var j = 0u; j < OPND_NV; j++) {
        let r = lid / (OPND_OT / 4u) + j * (WG / (OPND_OT / 4u));
        let at = buf * OPND_SZ + r * OPND_SS + (lid % (OPND_OT / 4u)) * 4u;
        let v = opnd_dec4g(opnd_r[j], opnd_p[j]);
        opnd_sh[at] = f16(v.x);
        opnd_sh[at + 1u] = f16(v.y);
        opnd_sh[at + 2u] = f16(v.z);
        opnd_sh[at + 3u] = f16(v.w);
    }
}

// The cooperative-matrix kernel's epilogue: a subgroup's 16 x 16 f32 tile, parked in c_sh at
// `at`, written to C rows r0.., columns c0.. (32 lanes, half a row of eight each); `live`:
// the workgroup's tile is C's (cooperative operations need uniform control flow, so a
// workgroup past the last tile runs the last one again and stores nothing).
// @section coop_epilogue
fn c_tile(base: u32, r0: u32, c0: u32, at: u32, lane: u32, live: bool) {
    let row = lane / 2u;
    let col = (lane % 2u) * 8u;
    let nn = gmeta(MD_N);
    if (live && r0 + row < gmeta(MD_M)) {
        let i = at + row * 16u + col;
        let lo = vec4<T>(c_sh[i], c_sh[i + 1u], c_sh[i + 2u], c_sh[i + 3u]);
        let hi = vec4<T>(c_sh[i + 4u], c_sh[i + 5u], c_sh[i + 6u], c_sh[i + 7u]);
        c_row4(base + (r0 + row) * nn, c0 + col, nn, 1u, lo);
        c_row4(base + (r0 + row) * nn, c0 + col + 4u, nn, 1u, hi);
    }
}
