// Scaled dot-product attention (flash-style) and the rotary embeddings (src/spec/attention.rs),
// the same mechanism as shaders/attention.wgsl (see ARCHITECTURE.md, "The attention family").
//
// sdpa: a block of ATT_THREADS takes ATT_BQ query rows of one (batch, kv head) and ATT_DC
// columns of the output: the rows of the query heads that share the kv head (grouped-query
// attention), head after head (row v is query row v % Lq of head kv * group + v / Lq), so the
// heads of a group read each tile of k and v once. For each tile of BK keys it forms the scores
// in shared memory (q and k read in chunks of DK along D), updates each row's running max and
// sum (online softmax: the earlier sum and accumulators scaled by exp(old max - new max)), reads
// the tile of v and adds the weighted values to each thread's accumulators. The scores never
// reach memory. ATT_TPR threads share a row: thread t owns row t / ATT_TPR, the keys and the
// columns (t % ATT_TPR) + ATT_TPR n; a row's max and sum go through shared memory (no warp
// shuffle, so any warpSize works). The k and v tiles are read in passes of ATT_THREADS elements,
// a thread's loads into registers before its stores to shared memory, v's at the top of the
// tile's iteration (see the kernel). Shared rows are padded by one element so that the threads of
// a row read different banks. The halves and f32 compute in f32 (BK = DK = 64), f64 in f64
// (BK 16, DK 32, to fit 48 KiB). A row with no key left (mask, causal, Lk = 0) has sum 0: NaN.
//
// Few rows against many keys (decoding): the keys are split into `splits` ranges of `split_len`
// (a multiple of BK: spec::attention::KEY_TILE), a block per range; each writes its rows'
// unnormalised accumulators, running max and sum to `part` ([row, split, Dv + 2] in the compute
// type) instead of y, and sdpa_combine weighs the ranges by exp(max - the rows' max) into y.
#include "common.h"

#define ATT_BQ 16
#define ATT_TPR 16
#define ATT_DC 64
#define ATT_THREADS (ATT_TPR * ATT_BQ)

// Keys per tile and the chunk of D read at a time, per compute type.
template <class C>
struct AttTiles {
  static constexpr u32 BK = 64, DK = 64;
};
template <>
struct AttTiles<double> {
  static constexpr u32 BK = 16, DK = 32;
};

#define ATT_KERNEL extern "C" __global__ void __launch_bounds__(ATT_THREADS)

// Offset and strides (batch, head, row, column) of one operand, in elements.
struct View4 {
  u64 offset, sb, sh, sl, sc;
  __device__ __forceinline__ u64 at(u64 b, u64 h, u64 i, u64 c) const {
    return offset + b * sb + h * sh + i * sl + c * sc;
  }
};

// `struct SdpaArgs` of src/native/attention.rs: the geometry, the launch's blocks and the views
// (the mask's stride 0 where it broadcasts; unused without a mask).
struct SdpaArgs {
  u64 hq, group, lq, lk, d, dv, causal, tiles, chunks, splits, split_len, blocks;
  double scale;
  View4 q, k, v, m;
};

__device__ __forceinline__ float att_exp(float v) { return expf(v); }
__device__ __forceinline__ double att_exp(double v) { return exp(v); }

// The score of one kept key with the mask applied (MASK 0: none, 1: u8 keep, 2: additive).
template <class T, int MASK>
__device__ __forceinline__ typename num<T>::C masked(typename num<T>::C s, const void* mask, u64 at) {
  typedef typename num<T>::C C;
  if constexpr (MASK == 1) return reinterpret_cast<const u8*>(mask)[at] != 0 ? s : neg_inf((C)0);
  if constexpr (MASK == 2) return s + num<T>::load(reinterpret_cast<const T*>(mask)[at]);
  return s;
}

template <class T, int MASK>
__device__ __forceinline__ void sdpa(u64 first, const SdpaArgs& a, const T* q, const T* k, const T* v,
                                     const void* mask, T* y, void* part) {
  typedef typename num<T>::C C;
  constexpr u32 BK = AttTiles<C>::BK, DK = AttTiles<C>::DK, QP = DK + 1, KP = DK + 1, SP = BK + 1;
  constexpr u32 SU = BK / ATT_TPR, NJ = ATT_DC / ATT_TPR;
  // Tiles are read in passes of ATT_THREADS elements, a thread's loads all issued before its
  // stores to shared memory (a store between two loads would wait for the first: a generic
  // pointer may alias shared memory), so their latencies overlap: ATT_THREADS / DK rows of a
  // k tile a pass, ATT_THREADS / ATT_DC rows of a v tile.
  constexpr u32 KN = BK * DK / ATT_THREADS, VN = BK * ATT_DC / ATT_THREADS;
  constexpr u32 KR = ATT_THREADS / DK, VR = ATT_THREADS / ATT_DC;
  static_assert(BK * DK % ATT_THREADS == 0 && ATT_THREADS % DK == 0, "a k tile in whole passes");
  static_assert(BK * ATT_DC % ATT_THREADS == 0 && ATT_THREADS % ATT_DC == 0, "a v tile in whole passes");
  __shared__ C qs[ATT_BQ * QP];
  __shared__ C ks[BK * KP];
  __shared__ C vs[BK * ATT_DC];
  __shared__ C ss[ATT_BQ * SP];
  __shared__ C red_max[ATT_THREADS], red_sum[ATT_THREADS];
  __shared__ C row_m[ATT_BQ], row_l[ATT_BQ];
  const u64 g = first + blockIdx.x;
  if (g >= a.blocks) return;
  const u32 t = threadIdx.x, r = t / ATT_TPR, c = t % ATT_TPR;
  const u64 c0 = (g % a.chunks) * ATT_DC;
  const u64 i0 = ((g / a.chunks) % a.tiles) * ATT_BQ;
  const u64 split = (g / a.chunks / a.tiles) % a.splits;
  const u64 hkv = a.hq / a.group, rows = a.group * a.lq;
  const u64 bh = g / a.chunks / a.tiles / a.splits;
  const u64 hk = bh % hkv, b = bh / hkv;
  // This thread's row: query row i of head h (rows past the group's: vi >= rows, idle).
  const u64 vi = i0 + r, h = hk * a.group + vi / a.lq, i = vi % a.lq;
  const C scale = (C)a.scale, neg = neg_inf((C)0);
  // The block's kv head in k and v; this thread's column of the tiles it loads.
  const u64 kbase = a.k.offset + b * a.k.sb + hk * a.k.sh, vbase = a.v.offset + b * a.v.sb + hk * a.v.sh;
  const u32 ke = t % DK, kr0 = t / DK, vcol = t % ATT_DC, vr0 = t / ATT_DC;
  // Keys any row of the tile sees, and those row i sees (i + Lk - Lq + 1, within 0 ..= Lk).
  u64 kend = a.lk, seen = a.lk;
  if (a.causal) {
    // The tile's last query row: lq - 1 when the tile crosses from one head to the next.
    const u64 vlast = (i0 + ATT_BQ < rows ? i0 + ATT_BQ : rows) - 1;
    const u64 imax = i0 / a.lq != vlast / a.lq ? a.lq - 1 : vlast % a.lq;
    const u64 last = imax + 1 + a.lk, mine = i + 1 + a.lk;
    kend = last > a.lq ? (last - a.lq < a.lk ? last - a.lq : a.lk) : 0;
    seen = mine > a.lq ? (mine - a.lq < a.lk ? mine - a.lq : a.lk) : 0;
  }
  // This block's keys: its split's range, up to the tile's last.
  const u64 kbegin = split * a.split_len;
  if (a.splits > 1) kend = kbegin + a.split_len < kend ? kbegin + a.split_len : kend;
  if (t < ATT_BQ) {
    row_m[t] = neg;
    row_l[t] = (C)0;
  }
  C acc[NJ];
#pragma unroll
  for (u32 n = 0; n < NJ; ++n) acc[n] = (C)0;
  auto load_q = [&](u64 d0) {
    for (u32 x = t; x < ATT_BQ * DK; x += ATT_THREADS) {
      const u64 qv = i0 + x / DK, e = d0 + x % DK;
      const u64 qh = hk * a.group + qv / a.lq, qi = qv % a.lq;
      qs[(x / DK) * QP + x % DK] = qv < rows && e < a.d ? num<T>::load(q[a.q.at(b, qh, qi, e)]) : (C)0;
    }
  };
  const bool q_once = a.d <= DK;
  if (q_once) load_q(0);
  for (u64 j0 = kbegin; j0 < kend; j0 += BK) {
    // The previous tile's readers of ss, vs and the row sums are done (with D = 0 no other
    // barrier comes).
    __syncthreads();
    // The tile of v, read now so that its loads overlap the scores' work.
    C vv[VN];
#pragma unroll
    for (u32 n = 0; n < VN; ++n) {
      const u64 j = j0 + vr0 + VR * n, col = c0 + vcol;
      vv[n] = j < a.lk && col < a.dv ? num<T>::load(v[vbase + j * a.v.sl + col * a.v.sc]) : (C)0;
    }
    C sc[SU];
#pragma unroll
    for (u32 u = 0; u < SU; ++u) sc[u] = (C)0;
    for (u64 d0 = 0; d0 < a.d; d0 += DK) {
      __syncthreads();
      if (!q_once) load_q(d0);
      C kv[KN];
      const u64 e = d0 + ke;
#pragma unroll
      for (u32 n = 0; n < KN; ++n) {
        const u64 j = j0 + kr0 + KR * n;
        kv[n] = j < a.lk && e < a.d ? num<T>::load(k[kbase + j * a.k.sl + e * a.k.sc]) : (C)0;
      }
#pragma unroll
      for (u32 n = 0; n < KN; ++n) ks[(kr0 + KR * n) * KP + ke] = kv[n];
      __syncthreads();
      const u32 dn = (u32)(a.d - d0 < DK ? a.d - d0 : DK);
      for (u32 e = 0; e < dn; ++e) {
        const C qv = qs[r * QP + e];
#pragma unroll
        for (u32 u = 0; u < SU; ++u) sc[u] += qv * ks[(c + ATT_TPR * u) * KP + e];
      }
    }
    // Scores in registers; the row's max over its threads' partial maxima.
    C mx = neg;
#pragma unroll
    for (u32 u = 0; u < SU; ++u) {
      const u64 j = j0 + c + ATT_TPR * u;
      C s = neg;
      if (vi < rows && j < seen) s = masked<T, MASK>(scale * sc[u], mask, a.m.at(b, h, i, j));
      sc[u] = s;
      mx = s > mx ? s : mx;
    }
    const C old = row_m[r];
    red_max[t] = mx;
    __syncthreads();
    mx = old;
    for (u32 x = 0; x < ATT_TPR; ++x) mx = red_max[r * ATT_TPR + x] > mx ? red_max[r * ATT_TPR + x] : mx;
    // A key scored -inf weighs 0; while the row has none, the accumulators stay as they are.
    C al = (C)1, part_sum = (C)0;
    if (mx > neg) al = old == neg ? (C)0 : att_exp(old - mx);
#pragma unroll
    for (u32 u = 0; u < SU; ++u) {
      const C p = mx > neg && sc[u] != neg ? att_exp(sc[u] - mx) : (C)0;
      ss[r * SP + c + ATT_TPR * u] = p;
      part_sum += p;
    }
    red_sum[t] = part_sum;
#pragma unroll
    for (u32 n = 0; n < VN; ++n) vs[(vr0 + VR * n) * ATT_DC + vcol] = vv[n];
    __syncthreads();
    if (c == 0) {
      C sum = (C)0;
      for (u32 x = 0; x < ATT_TPR; ++x) sum += red_sum[r * ATT_TPR + x];
      row_m[r] = mx;
      row_l[r] = row_l[r] * al + sum;
    }
#pragma unroll
    for (u32 n = 0; n < NJ; ++n) {
      C sum = acc[n] * al;
      for (u32 x = 0; x < BK; ++x) sum += ss[r * SP + x] * vs[x * ATT_DC + c + ATT_TPR * n];
      acc[n] = sum;
    }
  }
  // Without a key tile no barrier has yet followed the rows' initialisation.
  __syncthreads();
  const C l = row_l[r];
  if (vi >= rows) return;
  if (a.splits > 1) {
    C* p = reinterpret_cast<C*>(part) + (((b * a.hq + h) * a.lq + i) * a.splits + split) * (a.dv + 2);
#pragma unroll
    for (u32 n = 0; n < NJ; ++n) {
      const u64 col = c0 + c + ATT_TPR * n;
      if (col < a.dv) p[col] = acc[n];
    }
    if (c0 == 0 && c == 0) {
      p[a.dv] = row_m[r];
      p[a.dv + 1] = l;
    }
    return;
  }
  const u64 base = ((b * a.hq + h) * a.lq + i) * a.dv;
#pragma unroll
  for (u32 n = 0; n < NJ; ++n) {
    const u64 col = c0 + c + ATT_TPR * n;
    if (col < a.dv) y[base + col] = num<T>::store(l == (C)0 ? neg_inf((C)0) - neg_inf((C)0) : acc[n] / l);
  }
}

// The decode pass: the group x Lq <= DEC_ROWS query rows of one (batch, kv head) in one block,
// against one key range (the split rule as sdpa's), DEC_DC output columns. Per tile of DEC_BK
// keys: (1) thread t forms key t's score for every row (q and the k tile in shared memory,
// chunks of DK along D); (2) the rows' maxima over the tile through shared memory (DEC_RED
// partial maxima a row); (3) the threads split as (column, key group) add p x v for their column
// over their group's keys (v read straight into registers, DEC_VU loads in flight), each keeping
// its group's sum of p. At the end the key groups' accumulators and sums are added through
// shared memory. No warp operation. The loops over the rows are unrolled and skip the rows past
// the block's. Measured on the H200 (see ARCHITECTURE.md): with DK 64, or the v tile's loads
// all issued at the top of the tile, a thread needs more registers, fewer than 4 blocks fit an
// SM and a decode step of 32 heads over 4096 keys (512 blocks) takes two waves, twice the time.
#define DEC_ROWS 8
#define DEC_THREADS 128
#define DEC_BK 128
#define DEC_DC 64
#define DEC_KG (DEC_THREADS / DEC_DC)
#define DEC_RED 16
#define DEC_VU 8

// The chunk of D read at a time: 32 for the halves and f32, 16 for f64.
template <class C>
struct DecTiles {
  static constexpr u32 DK = 32;
};
template <>
struct DecTiles<double> {
  static constexpr u32 DK = 16;
};

#define DEC_KERNEL extern "C" __global__ void __launch_bounds__(DEC_THREADS)

template <class T, int MASK>
__device__ __forceinline__ void sdpa_decode(u64 first, const SdpaArgs& a, const T* q, const T* k, const T* v,
                                            const void* mask, T* y, void* part) {
  typedef typename num<T>::C C;
  constexpr u32 DK = DecTiles<C>::DK, KP = DK + 1, KN = DEC_BK * DK / DEC_THREADS, KR = DEC_THREADS / DK;
  constexpr u32 VN = DEC_BK / DEC_KG, PER = DEC_BK / DEC_RED;
  static_assert(DEC_BK == DEC_THREADS && DEC_THREADS % DK == 0 && DEC_THREADS % DEC_DC == 0, "decode tiles");
  __shared__ C qs[DEC_ROWS * DK];
  __shared__ C ks[DEC_BK * KP];
  __shared__ C ps[DEC_ROWS * DEC_BK];
  __shared__ C red[DEC_ROWS * DEC_RED];
  const u64 g = first + blockIdx.x;
  if (g >= a.blocks) return;
  const u32 t = threadIdx.x, c = t % DEC_DC, kg = t / DEC_DC;
  const u64 c0 = (g % a.chunks) * DEC_DC, split = (g / a.chunks) % a.splits, bh = g / a.chunks / a.splits;
  const u64 hkv = a.hq / a.group, rows = a.group * a.lq, hk = bh % hkv, b = bh / hkv;
  const C scale = (C)a.scale, neg = neg_inf((C)0);
  const u64 kbase = a.k.offset + b * a.k.sb + hk * a.k.sh, vbase = a.v.offset + b * a.v.sb + hk * a.v.sh;
  const u64 kbegin = split * a.split_len;
  const u64 kend = a.splits > 1 && kbegin + a.split_len < a.lk ? kbegin + a.split_len : a.lk;
  // Row r is query row r % Lq of head hk group + r / Lq; under causal it sees keys below seen(r).
  auto seen = [&](u64 r) -> u64 {
    const u64 mine = r % a.lq + 1 + a.lk;
    return !a.causal ? a.lk : mine > a.lq ? (mine - a.lq < a.lk ? mine - a.lq : a.lk) : 0;
  };
  C m[DEC_ROWS], l[DEC_ROWS], acc[DEC_ROWS], sc[DEC_ROWS];
#pragma unroll
  for (u32 r = 0; r < DEC_ROWS; ++r) m[r] = neg, l[r] = (C)0, acc[r] = (C)0;
  for (u64 j0 = kbegin; j0 < kend; j0 += DEC_BK) {
#pragma unroll
    for (u32 r = 0; r < DEC_ROWS; ++r) sc[r] = (C)0;
    for (u64 d0 = 0; d0 < a.d; d0 += DK) {
      // The previous chunk's (or tile's) readers of qs, ks, ps and red are done.
      __syncthreads();
      for (u32 x = t; x < DEC_ROWS * DK; x += DEC_THREADS) {
        const u64 r = x / DK, e = d0 + x % DK;
        qs[x] = r < rows && e < a.d ? num<T>::load(q[a.q.at(b, hk * a.group + r / a.lq, r % a.lq, e)]) : (C)0;
      }
      C kv[KN];
      const u64 e = d0 + t % DK;
#pragma unroll
      for (u32 n = 0; n < KN; ++n) {
        const u64 j = j0 + t / DK + KR * n;
        kv[n] = j < kend && e < a.d ? num<T>::load(k[kbase + j * a.k.sl + e * a.k.sc]) : (C)0;
      }
#pragma unroll
      for (u32 n = 0; n < KN; ++n) ks[(t / DK + KR * n) * KP + t % DK] = kv[n];
      __syncthreads();
      const u32 dn = (u32)(a.d - d0 < DK ? a.d - d0 : DK);
      for (u32 e = 0; e < dn; ++e) {
        const C kx = ks[t * KP + e];
#pragma unroll
        for (u32 r = 0; r < DEC_ROWS; ++r)
          if (r < rows) sc[r] += qs[r * DK + e] * kx;
      }
    }
    // Key t's scores (-inf past the range, the causal limit or the mask), into ps for the maxima.
    const u64 j = j0 + t;
#pragma unroll
    for (u32 r = 0; r < DEC_ROWS; ++r) {
      if (r >= rows) continue;
      C s = neg;
      if (j < kend && j < seen(r))
        s = masked<T, MASK>(scale * sc[r], mask, a.m.at(b, hk * a.group + r / a.lq, r % a.lq, j));
      sc[r] = s;
      ps[r * DEC_BK + t] = s;
    }
    __syncthreads();
    if (t < rows * DEC_RED) {
      C mx = neg;
      for (u32 x = 0; x < PER; ++x) {
        const C s = ps[(t / DEC_RED) * DEC_BK + (t % DEC_RED) * PER + x];
        mx = s > mx ? s : mx;
      }
      red[t] = mx;
    }
    __syncthreads();
    // Each row's new max; the weights p of key t, the earlier sums and accumulators rescaled.
#pragma unroll
    for (u32 r = 0; r < DEC_ROWS; ++r) {
      if (r >= rows) continue;
      C mx = m[r];
      for (u32 x = 0; x < DEC_RED; ++x) mx = red[r * DEC_RED + x] > mx ? red[r * DEC_RED + x] : mx;
      // A key scored -inf weighs 0; while the row has none, the accumulators stay as they are.
      if (mx > neg) {
        const C al = m[r] == neg ? (C)0 : att_exp(m[r] - mx);
        acc[r] *= al;
        l[r] *= al;
      }
      m[r] = mx;
      ps[r * DEC_BK + t] = mx > neg && sc[r] != neg ? att_exp(sc[r] - mx) : (C)0;
    }
    __syncthreads();
    // Column c0 + c of v over the key group's keys, DEC_VU loads in flight at a time.
    const u64 col = c0 + c;
#pragma unroll 1
    for (u32 n0 = 0; n0 < VN; n0 += DEC_VU) {
      C vv[DEC_VU];
#pragma unroll
      for (u32 n = 0; n < DEC_VU; ++n) {
        const u64 jv = j0 + kg * VN + n0 + n;
        vv[n] = jv < kend && col < a.dv ? num<T>::load(v[vbase + jv * a.v.sl + col * a.v.sc]) : (C)0;
      }
#pragma unroll
      for (u32 n = 0; n < DEC_VU; ++n) {
#pragma unroll
        for (u32 r = 0; r < DEC_ROWS; ++r) {
          if (r >= rows) continue;
          const C p = ps[r * DEC_BK + kg * VN + n0 + n];
          acc[r] += p * vv[n];
          l[r] += p;
        }
      }
    }
  }
  // The key groups' accumulators (in ps) and sums (in red) added by group 0's threads.
  __syncthreads();
#pragma unroll
  for (u32 r = 0; r < DEC_ROWS; ++r) {
    ps[(kg * DEC_ROWS + r) * DEC_DC + c] = acc[r];
    if (c == 0) red[kg * DEC_ROWS + r] = l[r];
  }
  __syncthreads();
  if (kg != 0 || c0 + c >= a.dv) return;
#pragma unroll
  for (u32 r = 0; r < DEC_ROWS; ++r) {
    if (r >= rows) continue;
    C o = (C)0, sum = (C)0;
    for (u32 x = 0; x < DEC_KG; ++x) {
      o += ps[(x * DEC_ROWS + r) * DEC_DC + c];
      sum += red[x * DEC_ROWS + r];
    }
    const u64 row = (b * a.hq + hk * a.group + r / a.lq) * a.lq + r % a.lq;
    if (a.splits > 1) {
      C* p = reinterpret_cast<C*>(part) + (row * a.splits + split) * (a.dv + 2);
      p[c0 + c] = o;
      if (c0 + c == 0) {
        p[a.dv] = m[r];
        p[a.dv + 1] = sum;
      }
    } else {
      y[row * a.dv + c0 + c] = num<T>::store(sum == (C)0 ? neg - neg : o / sum);
    }
  }
}

// y[row, col] from the splits' partial results in `part` (see above): rows x dv elements.
template <class T>
__device__ __forceinline__ void sdpa_combine(u64 rows, u64 dv, u64 splits, const void* part, T* y) {
  typedef typename num<T>::C C;
  const C* p = reinterpret_cast<const C*>(part);
  const C neg = neg_inf((C)0);
  for_each(rows * dv, [&](u32 idx) {
    const u64 row = idx / dv, col = idx % dv;
    const C* r = p + row * splits * (dv + 2);
    // Both loops unrolled, so that a row's loads overlap (H200, a decode step of 32 heads over
    // 4096 keys: 60.5 us with one pass and a running max, 53.0 us so).
    C mx = neg;
#pragma unroll 8
    for (u64 s = 0; s < splits; ++s) mx = r[s * (dv + 2) + dv] > mx ? r[s * (dv + 2) + dv] : mx;
    C l = (C)0, o = (C)0;
#pragma unroll 8
    for (u64 s = 0; s < splits; ++s) {
      const C m = r[s * (dv + 2) + dv];
      const C w = m == neg ? (C)0 : att_exp(m - mx);
      l += w * r[s * (dv + 2) + dv + 1];
      o += w * r[s * (dv + 2) + col];
    }
    y[idx] = num<T>::store(l == (C)0 ? neg - neg : o / l);
  });
}

// `struct RopeArgs` of src/native/attention.rs: x is [B, H, T, D] at (offset, strides), the
// tables [B, T, D/2] at theirs; interleaved: rope_i.
struct RopeArgs {
  u64 n, h, t, d, interleaved;
  u64 xo, xb, xh, xt, xd;
  u64 co, cb, ct, ci;
  u64 so, sb, st, si;
};

template <class T>
__device__ __forceinline__ void rope(const RopeArgs& a, const T* x, const T* cs, const T* sn, T* y) {
  typedef typename num<T>::C C;
  for_each(a.n, [&](u32 idx) {
    const u64 e = idx % a.d, row = idx / a.d, tt = row % a.t, h = (row / a.t) % a.h, b = row / a.t / a.h;
    const u64 half = a.d / 2;
    u64 i = e % half, lo = i, hi = i + half;
    if (a.interleaved) {
      i = e / 2;
      lo = 2 * i;
      hi = lo + 1;
    }
    const C cv = num<T>::load(cs[a.co + b * a.cb + tt * a.ct + i * a.ci]);
    const C sv = num<T>::load(sn[a.so + b * a.sb + tt * a.st + i * a.si]);
    const u64 xr = a.xo + b * a.xb + h * a.xh + tt * a.xt;
    const C x0 = num<T>::load(x[xr + lo * a.xd]), x1 = num<T>::load(x[xr + hi * a.xd]);
    y[idx] = num<T>::store(e == lo ? x0 * cv - x1 * sv : x0 * sv + x1 * cv);
  });
}

#define RWO_SDPA(op, T)                                                                                      \
  ATT_KERNEL op##_##T(u64 first, SdpaArgs a, const T* q, const T* k, const T* v, const void* m, T* y,        \
                      void* part) {                                                                          \
    sdpa<T, 0>(first, a, q, k, v, m, y, part);                                                               \
  }                                                                                                          \
  ATT_KERNEL op##_##T##_keep(u64 first, SdpaArgs a, const T* q, const T* k, const T* v, const void* m, T* y, \
                             void* part) {                                                                   \
    sdpa<T, 1>(first, a, q, k, v, m, y, part);                                                               \
  }                                                                                                          \
  ATT_KERNEL op##_##T##_additive(u64 first, SdpaArgs a, const T* q, const T* k, const T* v, const void* m,  \
                                 T* y, void* part) {                                                         \
    sdpa<T, 2>(first, a, q, k, v, m, y, part);                                                               \
  }                                                                                                          \
  DEC_KERNEL op##_decode_##T(u64 first, SdpaArgs a, const T* q, const T* k, const T* v, const void* m, T* y, \
                             void* part) {                                                                   \
    sdpa_decode<T, 0>(first, a, q, k, v, m, y, part);                                                        \
  }                                                                                                          \
  DEC_KERNEL op##_decode_##T##_keep(u64 first, SdpaArgs a, const T* q, const T* k, const T* v, const void* m, \
                                    T* y, void* part) {                                                      \
    sdpa_decode<T, 1>(first, a, q, k, v, m, y, part);                                                        \
  }                                                                                                          \
  DEC_KERNEL op##_decode_##T##_additive(u64 first, SdpaArgs a, const T* q, const T* k, const T* v,          \
                                        const void* m, T* y, void* part) {                                   \
    sdpa_decode<T, 2>(first, a, q, k, v, m, y, part);                                                        \
  }                                                                                                          \
  extern "C" __global__ void op##_combine_##T(u64 rows, u64 dv, u64 splits, const void* part, T* y) {       \
    sdpa_combine<T>(rows, dv, splits, part, y);                                                              \
  }
#define SDPA(op, ...) RWO_EACH(RWO_SDPA, op, __VA_ARGS__)

#define RWO_ROPE(op, T)                                                                           \
  extern "C" __global__ void op##_##T(RopeArgs a, const T* x, const T* c, const T* s, T* y) { \
    rope<T>(a, x, c, s, y);                                                                       \
  }
#define ROPE(op, ...) RWO_EACH(RWO_ROPE, op, __VA_ARGS__)

SDPA(scaled_dot_product_attention, f16, bf16, f32, f64)
ROPE(rope, f16, bf16, f32, f64)
ROPE(rope_i, f16, bf16, f32, f64)
