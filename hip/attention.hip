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

// The keys query row i (of Lq) sees: every one, or under causal (aligned bottom-right) those
// below i + 1 + Lk - Lq, within 0 ..= Lk.
__device__ __forceinline__ u64 att_seen(const SdpaArgs& a, u64 i) {
  const u64 mine = i + 1 + a.lk;
  return !a.causal ? a.lk : mine > a.lq ? (mine - a.lq < a.lk ? mine - a.lq : a.lk) : 0;
}

// The latest query row (of Lq) among rows [v0, v0 + n) of a group (the group's rows run head
// after head): Lq - 1 when they cross from one head to the next.
__device__ __forceinline__ u64 att_last(const SdpaArgs& a, u64 v0, u64 n) {
  const u64 rows = a.group * a.lq, vlast = (v0 + n < rows ? v0 + n : rows) - 1;
  return v0 / a.lq != vlast / a.lq ? a.lq - 1 : vlast % a.lq;
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
  // Keys any row of the tile sees, and those row i sees.
  u64 kend = att_seen(a, att_last(a, i0, ATT_BQ));
  const u64 seen = att_seen(a, i);
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
// against one short key range, every output column; q, k and v rows whole aligned 16-byte
// vectors (src/native/attention.rs checks: 16 / sizeof(T) values a vector), D up to DEC_DMAX
// values and a v row up to DEC_VWORDS vectors (other shapes take the other passes). A decode
// step is a few rows against a few hundred keys: its time is memory latency, so the keys are cut
// into as many ranges as fill the GPU (up to DEC_SPLITS, DEC_BK keys a tile) and each tile waits
// on memory once: (1) every thread issues its loads of k (DEC_TPK threads a key, neighbouring
// vectors of its row) and of v (thread (key group, vector of a v row)) together, the next tile's
// k as soon as this one's scores are formed and its v once this one's are used; (2) a key's
// threads form its scores against q (staged once in shared memory) and add them by shuffles
// within DEC_TPK lanes; (3) the rows' tile max, weights and sums by shuffles within 32 lanes a
// row (a warp of 32 or 64 lanes: every mask below 32); (4) p x v into each thread's accumulators,
// rescaled by exp(old max - new max). The key groups meet in shared memory at the end. With
// ranges, each block writes its rows' unnormalised accumulators, max and sum to `part` ([row,
// range, Dv + 2] in the compute type, as sdpa's) and counts itself on its (batch, kv head)'s
// counter; the last one weighs the ranges by exp(max - the rows' max) into y, in range order
// (the same bits whichever block is last), and leaves the counter at 0.
#define DEC_ROWS 8
#define DEC_THREADS 128
#define DEC_BK 32
#define DEC_TPK 4
#define DEC_KB 8
#define DEC_DMAX 256
#define DEC_VWORDS 32
#define DEC_SPLITS 32

#define DEC_KERNEL extern "C" __global__ void __launch_bounds__(DEC_THREADS)

// The values of a 16-byte vector of T in the compute type.
template <class T>
__device__ __forceinline__ void dec_unpack(const uint4& w, typename num<T>::C* v) {
  const T* e = reinterpret_cast<const T*>(&w);
#pragma unroll
  for (u32 i = 0; i < 16 / sizeof(T); ++i) v[i] = num<T>::load(e[i]);
}

// R: the rows a block forms scores for (the group's rows rounded up to 1, 2, 4 or DEC_ROWS).
template <class T, int MASK, int R>
__device__ __forceinline__ void sdpa_decode(u64 first, const SdpaArgs& a, const T* q, const T* k, const T* v,
                                            const void* mask, T* y, void* part, u32* counts) {
  typedef typename num<T>::C C;
  constexpr u32 VE = 16 / sizeof(T), DW = DEC_DMAX / VE, VN = DEC_BK * DEC_VWORDS / DEC_THREADS;
  constexpr u32 KSTEP = DEC_TPK * DEC_KB, WARPS = DEC_THREADS / 32, QN = (R * DW + DEC_THREADS - 1) / DEC_THREADS;
  static_assert(DEC_BK * DEC_TPK == DEC_THREADS && DEC_BK == 32, "a tile's keys: a thread group each, 32 lanes");
  __shared__ C qs[R * DEC_DMAX];
  __shared__ C ps[R * DEC_BK];
  __shared__ C red[DEC_THREADS * R * VE];
  __shared__ C row_m[R], row_l[R], row_a[R];
  __shared__ bool last;
  const u64 g = first + blockIdx.x;
  if (g >= a.blocks) return;
  const u32 t = threadIdx.x, lane = t % 32;
  const u64 split = g % a.splits, bh = g / a.splits;
  const u64 hkv = a.hq / a.group, hk = bh % hkv, b = bh / hkv;
  const u32 rows = (u32)(a.group * a.lq), dw = (u32)(a.d / VE), vw = (u32)(a.dv / VE);
  // k: key `key` of the tile, vectors sub, sub + DEC_TPK, ...; v: key group kg (keys kg, kg +
  // kg_n, ...) and vector w of their rows.
  const u32 key = t / DEC_TPK, sub = t % DEC_TPK, kg_n = DEC_THREADS / vw, kg = t / vw, w = t % vw;
  const C scale = (C)a.scale, neg = neg_inf((C)0);
  const uint4* kb = reinterpret_cast<const uint4*>(k + a.k.offset + b * a.k.sb + hk * a.k.sh);
  const uint4* vb = reinterpret_cast<const uint4*>(v + a.v.offset + b * a.v.sb + hk * a.v.sh);
  const u64 krow = a.k.sl / VE, vrow = a.v.sl / VE;
  const u64 kbegin = split * a.split_len;
  const u64 kend = a.splits > 1 && kbegin + a.split_len < a.lk ? kbegin + a.split_len : a.lk;
  uint4 kw[DEC_KB], vv[VN];
  const auto fetch_k = [&](u64 j0, u32 i0) {
    const u64 j = j0 + key;
#pragma unroll
    for (u32 i = 0; i < DEC_KB; ++i) {
      const u32 x = i0 + sub + DEC_TPK * i;
      kw[i] = j < kend && x < dw ? kb[j * krow + x] : make_uint4(0, 0, 0, 0);
    }
  };
  const auto fetch_v = [&](u64 j0) {
#pragma unroll
    for (u32 n = 0; n < VN; ++n) {
      const u32 u = kg + kg_n * n;
      vv[n] = kg < kg_n && u < DEC_BK && j0 + u < kend ? vb[(j0 + u) * vrow + w] : make_uint4(0, 0, 0, 0);
    }
  };
  fetch_k(kbegin, 0);
  fetch_v(kbegin);
  // Row r is query row r % Lq of head hk group + r / Lq (rows past the group's: zeros); every
  // load before the first store.
  uint4 qw[QN];
#pragma unroll
  for (u32 n = 0; n < QN; ++n) {
    const u32 x = t + n * DEC_THREADS, r = x / DW, i = x % DW;
    qw[n] = x < R * DW && r < rows && i < dw
                ? reinterpret_cast<const uint4*>(q + a.q.at(b, hk * a.group + r / a.lq, r % a.lq, 0))[i]
                : make_uint4(0, 0, 0, 0);
  }
#pragma unroll
  for (u32 n = 0; n < QN; ++n) {
    const u32 x = t + n * DEC_THREADS;
    if (x < R * DW) dec_unpack<T>(qw[n], qs + (x / DW) * DEC_DMAX + (x % DW) * VE);
  }
  if (t < R) {
    row_m[t] = neg;
    row_l[t] = (C)0;
  }
  C acc[R][VE];
#pragma unroll
  for (u32 r = 0; r < R; ++r) {
#pragma unroll
    for (u32 e = 0; e < VE; ++e) acc[r][e] = (C)0;
  }
  for (u64 j0 = kbegin; j0 < kend; j0 += DEC_BK) {
    // qs staged, and the previous tile's readers of ps and the row statistics done.
    __syncthreads();
    const u64 j = j0 + key;
    C s[R];
#pragma unroll
    for (u32 r = 0; r < R; ++r) s[r] = (C)0;
    for (u32 i0 = 0; i0 < dw; i0 += KSTEP) {
      if (i0 > 0) fetch_k(j0, i0);
#pragma unroll
      for (u32 i = 0; i < DEC_KB; ++i) {
        const u32 x = i0 + sub + DEC_TPK * i;
        if (x >= dw) break;
        C kx[VE];
        dec_unpack<T>(kw[i], kx);
#pragma unroll
        for (u32 r = 0; r < R; ++r) {
#pragma unroll
          for (u32 e = 0; e < VE; ++e) s[r] += qs[r * DEC_DMAX + x * VE + e] * kx[e];
        }
      }
    }
    if (j0 + DEC_BK < kend) fetch_k(j0 + DEC_BK, 0);
#pragma unroll
    for (u32 r = 0; r < R; ++r) {
#pragma unroll
      for (u32 o = 1; o < DEC_TPK; o *= 2) s[r] += shfl_xor(s[r], o);
    }
    // Key `key`'s scores (-inf past the range or the rows, the causal limit or the mask).
    if (sub == 0) {
#pragma unroll
      for (u32 r = 0; r < R; ++r) {
        C x = neg;
        if (r < rows && j < kend && j < att_seen(a, r % a.lq))
          x = masked<T, MASK>(scale * s[r], mask, a.m.at(b, hk * a.group + r / a.lq, r % a.lq, j));
        ps[r * DEC_BK + key] = x;
      }
    }
    __syncthreads();
    // A row's 32 scores in 32 lanes: the new max, the weights exp(s - max) in place of the scores,
    // the rescale factor of the earlier sums (0 before a first key, 1 while the row has none).
    for (u32 r = t / 32; r < R; r += WARPS) {
      const C x = ps[r * DEC_BK + lane], old = row_m[r];
      C m = x;
#pragma unroll
      for (u32 o = 16; o > 0; o /= 2) {
        const C other = shfl_xor(m, o);
        m = other > m ? other : m;
      }
      m = m > old ? m : old;
      const C p = m > neg && x != neg ? att_exp(x - m) : (C)0;
      C l = p;
#pragma unroll
      for (u32 o = 16; o > 0; o /= 2) l += shfl_xor(l, o);
      ps[r * DEC_BK + lane] = p;
      if (lane == 0) {
        const C al = m > neg ? (old == neg ? (C)0 : att_exp(old - m)) : (C)1;
        row_a[r] = al;
        row_l[r] = row_l[r] * al + l;
        row_m[r] = m;
      }
    }
    __syncthreads();
#pragma unroll
    for (u32 r = 0; r < R; ++r) {
      const C al = row_a[r];
#pragma unroll
      for (u32 e = 0; e < VE; ++e) acc[r][e] *= al;
    }
#pragma unroll
    for (u32 n = 0; n < VN; ++n) {
      const u32 u = kg + kg_n * n;
      if (kg < kg_n && u < DEC_BK && j0 + u < kend) {
        C vx[VE];
        dec_unpack<T>(vv[n], vx);
#pragma unroll
        for (u32 r = 0; r < R; ++r) {
          const C p = ps[r * DEC_BK + u];
#pragma unroll
          for (u32 e = 0; e < VE; ++e) acc[r][e] += p * vx[e];
        }
      }
    }
    if (j0 + DEC_BK < kend) fetch_v(j0 + DEC_BK);
  }
  // The key groups' accumulators meet in `red`.
  __syncthreads();
  if (kg < kg_n) {
#pragma unroll
    for (u32 r = 0; r < R; ++r) {
#pragma unroll
      for (u32 e = 0; e < VE; ++e) red[((kg * R + r) * vw + w) * VE + e] = acc[r][e];
    }
  }
  __syncthreads();
  const auto row_of = [&](u32 r) { return (b * a.hq + hk * a.group + r / a.lq) * a.lq + r % a.lq; };
  C* pt = reinterpret_cast<C*>(part);
  for (u32 x = t; x < rows * vw; x += DEC_THREADS) {
    const u32 r = x / vw, ww = x % vw;
    C o[VE];
#pragma unroll
    for (u32 e = 0; e < VE; ++e) o[e] = (C)0;
    for (u32 kh = 0; kh < kg_n; ++kh) {
#pragma unroll
      for (u32 e = 0; e < VE; ++e) o[e] += red[((kh * R + r) * vw + ww) * VE + e];
    }
    const u64 row = row_of(r);
    if (a.splits > 1) {
      C* p = pt + (row * a.splits + split) * (a.dv + 2);
#pragma unroll
      for (u32 e = 0; e < VE; ++e) p[ww * VE + e] = o[e];
      if (ww == 0) {
        p[a.dv] = row_m[r];
        p[a.dv + 1] = row_l[r];
      }
    } else {
      const C l = row_l[r];
#pragma unroll
      for (u32 e = 0; e < VE; ++e) y[row * a.dv + ww * VE + e] = num<T>::store(l == (C)0 ? neg - neg : o[e] / l);
    }
  }
  if (a.splits == 1) return;
  count_fence();
  __syncthreads();
  if (t == 0) last = atomicAdd(&counts[bh], 1u) == a.splits - 1;
  __syncthreads();
  if (!last) return;
  count_fence();
  // The last block: each row's ranges weighed by exp(max - the rows' max) (ps), their sums' total
  // (row_l), then the values.
  const volatile C* vp = pt;
  const u64 stride = a.dv + 2;
  for (u32 r = t / 32; r < R; r += WARPS) {
    const u64 base = r < rows ? row_of(r) * a.splits * stride : 0;
    const bool here = r < rows && lane < a.splits;
    const C ms = here ? vp[base + lane * stride + a.dv] : neg, ls = here ? vp[base + lane * stride + a.dv + 1] : (C)0;
    C m = ms;
#pragma unroll
    for (u32 o = 16; o > 0; o /= 2) {
      const C other = shfl_xor(m, o);
      m = other > m ? other : m;
    }
    const C wt = ms == neg ? (C)0 : att_exp(ms - m);
    C l = wt * ls;
#pragma unroll
    for (u32 o = 16; o > 0; o /= 2) l += shfl_xor(l, o);
    ps[r * DEC_BK + lane] = wt;
    if (lane == 0) row_l[r] = l;
  }
  __syncthreads();
  for (u32 x = t; x < rows * vw; x += DEC_THREADS) {
    const u32 r = x / vw, ww = x % vw;
    const u64 row = row_of(r);
    const volatile C* p = vp + row * a.splits * stride + ww * VE;
    C o[VE];
#pragma unroll
    for (u32 e = 0; e < VE; ++e) o[e] = (C)0;
#pragma unroll 4
    for (u32 s = 0; s < (u32)a.splits; ++s) {
      const C wt = ps[r * DEC_BK + s];
#pragma unroll
      for (u32 e = 0; e < VE; ++e) o[e] += wt * p[s * stride + e];
    }
    const C l = row_l[r];
#pragma unroll
    for (u32 e = 0; e < VE; ++e) y[row * a.dv + ww * VE + e] = num<T>::store(l == (C)0 ? neg - neg : o[e] / l);
  }
  if (t == 0) counts[bh] = 0u;
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
// tables [B, T, D/2] at theirs; interleaved: rope_i; `lanes` threads a row, `step` rows at a
// time (lanes x step <= the block's threads).
struct RopeArgs {
  u64 n, h, t, d, interleaved;
  u64 xo, xb, xh, xt, xd;
  u64 co, cb, ct, ci;
  u64 so, sb, st, si;
  u64 lanes, step;
};

// A block takes `step` rows at a time, `lanes` threads a row (a thread an element, and every
// lanes-th after it in longer rows), ROPE_RUN times (`ROPE_RUN` and `rope_grid` of
// src/spec/attention.rs): neighbouring threads read and write neighbouring elements, and a
// thread finds its row's (b, h, t) by division once (in 32 bits: the host checked n < 2^32),
// then steps it.
#define ROPE_RUN 4
template <class T>
__device__ __forceinline__ void rope(const RopeArgs& a, const T* x, const T* cs, const T* sn, T* y) {
  typedef typename num<T>::C C;
  const u32 d = (u32)a.d, tn = (u32)a.t, hn = (u32)a.h, half = d / 2, lanes = (u32)a.lanes, step = (u32)a.step;
  const u32 rows = (u32)a.n / d, lid = threadIdx.x;
  u32 row = blockIdx.x * step * ROPE_RUN + lid / lanes;
  if (lid >= lanes * step || row >= rows) return;
  const u32 lane = lid % lanes;
  u32 tt = row % tn, h = row / tn % hn, b = row / tn / hn;
  for (u32 k = 0; k < ROPE_RUN && row < rows; ++k) {
    const u64 xr = a.xo + b * a.xb + h * a.xh + tt * a.xt;
    const u64 cr = a.co + b * a.cb + tt * a.ct, sr = a.so + b * a.sb + tt * a.st;
    for (u32 e = lane; e < d; e += lanes) {
      u32 i = e < half ? e : e - half, lo = i, hi = i + half;
      if (a.interleaved) {
        i = e / 2;
        lo = 2 * i;
        hi = lo + 1;
      }
      const C cv = num<T>::load(cs[cr + i * a.ci]), sv = num<T>::load(sn[sr + i * a.si]);
      const C x0 = num<T>::load(x[xr + lo * a.xd]), x1 = num<T>::load(x[xr + hi * a.xd]);
      y[(u64)row * d + e] = num<T>::store(e == lo ? x0 * cv - x1 * sv : x0 * sv + x1 * cv);
    }
    row += step;
    for (tt += step; tt >= tn; tt -= tn) {
      if (++h == hn) {
        h = 0;
        ++b;
      }
    }
  }
}

#if defined(__CUDACC_RTC__) && __CUDA_ARCH__ >= 800
// The tensor-core pass (NVIDIA sm_80 and later, f16 and bf16; src/native/attention.rs picks it
// for D, Dv up to 128, decoding included: its copies are whole vectors): the same rows, causal
// limits, mask, split ranges and output as sdpa above, computed with mma.sync m16n8k16 (f32
// accumulation). A block of MMA_WARPS warps takes MMA_BQ rows, 16 a warp, and every output
// column (DM: D and Dv padded to 64 or 128). The q rows, and per tile of MMA_BK keys the k and v
// tiles, sit in shared memory (48 KiB at DM 128; cp.async where a view's rows are whole 16-byte
// vectors, else element by element), read into fragments by ldmatrix (chunks permuted, `mma_at`,
// so that its 8 rows fall in different banks). The copies overlap the work as
// FlashAttention-2's do: v's tile while the scores are formed, the next k tile while the softmax
// and the weighted sum run. S = q k^T and the online softmax stay in registers (a row's max and
// sum across the 4 threads holding it, by warp shuffle; exp as 2^x), and P, rounded to the dtype
// as the second product's operand, multiplies the v tile into the accumulators. AMD's matrix
// cores take other instructions: HIP runs sdpa and sdpa_decode.
#define MMA_WARPS 4
#define MMA_BQ (16 * MMA_WARPS)
#define MMA_BK 64
#define MMA_THREADS (32 * MMA_WARPS)
// Blocks a multiprocessor holds: registers for 3 (168 a thread). Measured on the H200, long
// prefill f16 (D 128): 3 blocks 733 us, 2 blocks (232 registers) 825 us. Two row fragments a
// warp (128 rows a block, 64 KiB of shared memory, FlashAttention-2's shape: each k and v
// fragment feeding two products) needed 255 registers and 2 blocks, and measured slower: 807
// against 565 us (session 25).
#define MMA_BLOCKS 3

__device__ __forceinline__ u32 shared_addr(const void* p) {
  u32 a;
  asm("{ .reg .u64 g; cvta.to.shared.u64 g, %1; cvt.u32.u64 %0, g; }" : "=r"(a) : "l"(p));
  return a;
}

// Four 8x8 matrices of 16-bit elements from shared memory (lanes 8m..8m+7 address matrix m's
// rows), transposed or not.
template <bool TRANS>
__device__ __forceinline__ void ldmatrix4(u32* r, u32 addr) {
  if constexpr (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// Two f32 rounded to the dtype, `lo` in the low half (the lower column of a fragment).
template <class T>
__device__ __forceinline__ u32 pack2(float lo, float hi) {
  u32 r;
  if constexpr (is_f16<T>::value)
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// Where element (r, c) of a shared tile of DM columns sits: rows are not padded; the 16-byte
// chunks of row r are permuted (chunk c / 8 at c / 8 ^ r % 8), so that the 8 rows one ldmatrix
// reads at one column fall in different banks, and a thread's chunk lands on the same banks
// every 8 rows.
template <u32 DM>
__device__ __forceinline__ u32 mma_at(u32 r, u32 c) {
  return r * DM + ((c / 8) ^ (r % 8)) * 8 + c % 8;
}

// Rows [j0, j0 + MMA_BK) of one head of a view (row j at base + j sl, column c at c sc; rows
// from `rows` on and columns from `cols` on read as 0) into a shared tile at `s` (its shared
// address `sa`). Whole 16-byte vectors through cp.async where the view allows (`vec`): a thread
// copies the same 8 columns of every (MMA_THREADS / (DM / 8))-th row (a multiple of 8), so its
// source steps by a constant (recomputing each row's address cost about a third of the pass's
// instructions). Else element by element.
template <u32 DM, class T>
__device__ __forceinline__ void mma_tile(unsigned short* s, u32 sa, const T* src, u64 base, u64 sl, u64 sc, u64 j0,
                                         u64 rows, u64 cols, bool vec, u32 t) {
  constexpr u32 V = DM / 8, STEP = MMA_THREADS / V;
  static_assert(MMA_THREADS % V == 0 && MMA_BK % STEP == 0 && STEP % 8 == 0, "a tile in whole passes");
  if (vec) {
    const u32 r0 = t / V, c = t % V * 8;
    const T* from = src + base + (j0 + r0) * sl + c;
    const u64 step = STEP * sl;
    const u32 to = sa + mma_at<DM>(r0, c) * 2;
    if (c < cols && j0 + MMA_BK <= rows) {
      // A whole tile (all but a view's last): no bounds, the source stepping by a constant.
#pragma unroll
      for (u32 n = 0; n < MMA_BK / STEP; ++n, from += step)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(to + n * STEP * DM * 2), "l"(from));
    } else {
#pragma unroll
      for (u32 n = 0; n < MMA_BK / STEP; ++n, from += step) {
        const bool in = c < cols && j0 + r0 + n * STEP < rows;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(to + n * STEP * DM * 2),
                     "l"(in ? from : src), "r"(in ? 16 : 0));
      }
    }
    asm volatile("cp.async.commit_group;");
    return;
  }
  for (u32 x0 = 0; x0 < MMA_BK * DM; x0 += MMA_THREADS * 16) {
    unsigned short e[16];
#pragma unroll
    for (u32 n = 0; n < 16; ++n) {
      const u32 x = x0 + n * MMA_THREADS + t, r = x / DM, c = x % DM;
      e[n] = j0 + r < rows && c < cols ? src[base + (j0 + r) * sl + c * sc].bits : 0;
    }
#pragma unroll
    for (u32 n = 0; n < 16; ++n) {
      const u32 x = x0 + n * MMA_THREADS + t;
      s[mma_at<DM>(x / DM, x % DM)] = e[n];
    }
  }
  asm volatile("cp.async.commit_group;");
}

// 2^x, flushing a subnormal result to 0 (the weights of a softmax: their sum is at least 1).
__device__ __forceinline__ float mma_exp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// Whether a view's rows are whole, aligned 16-byte vectors of `cols` elements.
template <class T>
__device__ __forceinline__ bool mma_vec(const View4& w, const T* p, u64 cols) {
  return w.sc == 1 && (w.offset | w.sb | w.sh | w.sl | cols) % 8 == 0 && reinterpret_cast<u64>(p) % 16 == 0;
}

template <class T, int MASK, u32 DM>
__device__ __forceinline__ void sdpa_mma(u64 first, const SdpaArgs& a, const T* q, const T* k, const T* v,
                                         const void* mask, T* y, void* part) {
  constexpr u32 NK = MMA_BK / 8, ND = DM / 8;
  constexpr float LOG2E = 1.4426950408889634f;
  __shared__ __align__(16) unsigned short qs[MMA_BQ * DM];
  __shared__ __align__(16) unsigned short ks[MMA_BK * DM];
  __shared__ __align__(16) unsigned short vs[MMA_BK * DM];
  const u64 g = first + blockIdx.x;
  if (g >= a.blocks) return;
  const u32 t = threadIdx.x, w = t / 32, lane = t % 32, gr = lane / 4, tc = lane % 4;
  // Blocks in order of the tile's last row, latest first (under causal the longest rows first,
  // so the short ones fill the last wave), then split, then (batch, kv head).
  const u64 hkv = a.hq / a.group, rows = a.group * a.lq, heads = a.blocks / a.tiles / a.splits;
  const u64 tile = a.tiles - 1 - g / (heads * a.splits), split = g / heads % a.splits, bh = g % heads;
  const u64 hk = bh % hkv, b = bh / hkv, i0 = tile * MMA_BQ;
  // This thread's two rows (fragment rows gr and gr + 8 of its warp). The fewer keys of the two
  // that they see (none for a row past the group's) lets a warp skip the limits of a tile all
  // its rows see whole.
  const u64 vr[2] = {i0 + w * 16 + gr, i0 + w * 16 + gr + 8};
  const u64 seen0 = vr[0] >= rows ? 0 : att_seen(a, vr[0] % a.lq), seen1 = vr[1] >= rows ? 0 : att_seen(a, vr[1] % a.lq);
  const u64 seen_min = seen0 < seen1 ? seen0 : seen1;
  u64 kend = att_seen(a, att_last(a, i0, MMA_BQ));
  const u64 kbegin = split * a.split_len;
  if (a.splits > 1) kend = kbegin + a.split_len < kend ? kbegin + a.split_len : kend;
  const u64 kbase = a.k.offset + b * a.k.sb + hk * a.k.sh, vbase = a.v.offset + b * a.v.sb + hk * a.v.sh;
  const bool kvec = mma_vec(a.k, k, a.d), vvec = mma_vec(a.v, v, a.dv);
  // The block's q rows (row r of the tile from its own head).
  const bool qvec = mma_vec(a.q, q, a.d);
  for (u32 x = t; x < MMA_BQ * (DM / 8); x += MMA_THREADS) {
    const u32 r = x / (DM / 8), c = (x % (DM / 8)) * 8;
    const u64 qv = i0 + r, qh = hk * a.group + qv / a.lq, qi = qv % a.lq;
    uint4 e = make_uint4(0, 0, 0, 0);
    if (qv < rows && c < a.d) {
      if (qvec) {
        e = *reinterpret_cast<const uint4*>(q + a.q.at(b, qh, qi, c));
      } else {
        u32 h[8];
#pragma unroll
        for (u32 n = 0; n < 8; ++n) h[n] = c + n < a.d ? q[a.q.at(b, qh, qi, c + n)].bits : 0;
        e = make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
      }
    }
    *reinterpret_cast<uint4*>(qs + mma_at<DM>(r, c)) = e;
  }
  // Where this lane's rows start for ldmatrix (q and v: row lane % 16, chunk lane / 16; k: row
  // lane % 8 + 8 (lane / 16), chunk lane / 8 % 2): every such row is lane % 8 past a multiple of
  // 8, so the chunk 2 i + h of the 16 columns i sits at (2 i + h) ^ (lane % 8).
  const u32 ks_at = shared_addr(ks), vs_at = shared_addr(vs);
  const u32 x8 = lane % 8;
  const u32 q_lane = shared_addr(qs) + (w * 16 + lane % 16) * DM * 2, q_h = lane / 16;
  const u32 k_lane = ks_at + (lane % 8 + lane / 16 * 8) * DM * 2, k_h = lane / 8 % 2;
  const u32 v_lane = vs_at + (lane % 16) * DM * 2, v_h = lane / 16;
  const float neg = neg_inf(0.f);
  float acc[ND][4], m[2] = {neg, neg}, l[2] = {0.f, 0.f};
#pragma unroll
  for (u32 n = 0; n < ND; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
  const float scale = (float)a.scale;
  // Every 16-column step of the two products runs, those past D and Dv on the zeros the tiles
  // hold there (a branch between the steps, to stop at D, kept the compiler from moving the
  // fragment loads ahead of the products); so does a warp whose rows are all past the group's,
  // as in decoding (skipping its products measured 6% slower on long prefill and no faster on
  // decode, H200).
  // The copies overlap the work as FlashAttention-2's do: v's tile is read while the scores
  // are formed, the next k tile while the softmax and the weighted sum run (one buffer each; the
  // groups of copies complete in order, so waiting for all but the last is waiting for the one
  // needed).
  __syncthreads();
  if (kbegin < kend) mma_tile<DM>(ks, ks_at, k, kbase, a.k.sl, a.k.sc, kbegin, a.lk, a.d, kvec, t);
  for (u64 j0 = kbegin; j0 < kend; j0 += MMA_BK) {
    // The previous tile's readers of vs are done.
    __syncthreads();
    mma_tile<DM>(vs, vs_at, v, vbase, a.v.sl, a.v.sc, j0, a.lk, a.dv, vvec, t);
    asm volatile("cp.async.wait_group 1;");
    __syncthreads();
    float s[NK][4];
#pragma unroll
    for (u32 n = 0; n < NK; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
    for (u32 kk = 0; kk < DM / 16; ++kk) {
      u32 qa[4];
      ldmatrix4<false>(qa, q_lane + ((2 * kk + q_h) ^ x8) * 16);
      const u32 kc = ((2 * kk + k_h) ^ x8) * 16;
#pragma unroll
      for (u32 np = 0; np < NK / 2; ++np) {
        u32 bf[4];
        ldmatrix4<false>(bf, k_lane + np * 16 * DM * 2 + kc);
        mma16816<T>(s[2 * np], qa, bf);
        mma16816<T>(s[2 * np + 1], qa, bf + 2);
      }
    }
    // Every reader of ks is done: the next tile of k goes there.
    __syncthreads();
    if (j0 + MMA_BK < kend)
      mma_tile<DM>(ks, ks_at, k, kbase, a.k.sl, a.k.sc, j0 + MMA_BK, a.lk, a.d, kvec, t);
    else
      asm volatile("cp.async.commit_group;");
    // Scale, mask and the causal limit, and the rows' new maxima. A warp whose rows all see the
    // whole tile skips the checks and, with a positive scale, leaves the scores unscaled (the
    // scale goes into the exponent's factor `f`: the max of the scaled scores is the scaled max).
    float mx[2];
    const bool raw = MASK == 0 && scale > 0.f && __all_sync(0xffffffffu, j0 + MMA_BK <= seen_min);
    const float f = raw ? scale * LOG2E : LOG2E;
    if (raw) {
      float hi[2] = {s[0][0], s[0][2]};
#pragma unroll
      for (u32 n = 0; n < NK; ++n) {
#pragma unroll
        for (u32 e = 0; e < 4; ++e) hi[e / 2] = fmaxf(hi[e / 2], s[n][e]);
      }
      mx[0] = fmaxf(m[0], hi[0] * scale);
      mx[1] = fmaxf(m[1], hi[1] * scale);
    } else {
#pragma unroll
      for (u32 x = 0; x < 2; ++x) {
        const u64 hr = hk * a.group + vr[x] / a.lq, ir = vr[x] % a.lq, seen = x == 0 ? seen0 : seen1;
        mx[x] = m[x];
#pragma unroll
        for (u32 n = 0; n < NK; ++n) {
#pragma unroll
          for (u32 e = 2 * x; e < 2 * x + 2; ++e) {
            const u64 j = j0 + n * 8 + tc * 2 + e % 2;
            float sv = neg;
            if (j < seen) sv = masked<T, MASK>(scale * s[n][e], mask, a.m.at(b, hr, ir, j));
            s[n][e] = sv;
            mx[x] = sv > mx[x] ? sv : mx[x];
          }
        }
      }
    }
    float al[2], ml[2];
#pragma unroll
    for (u32 x = 0; x < 2; ++x) {
      mx[x] = fmaxf(mx[x], __shfl_xor_sync(0xffffffffu, mx[x], 1));
      mx[x] = fmaxf(mx[x], __shfl_xor_sync(0xffffffffu, mx[x], 2));
      // A key scored -inf weighs 0; while the row has none, the accumulators stay as they are.
      al[x] = mx[x] == neg ? 1.f : mma_exp2((m[x] - mx[x]) * LOG2E);
      m[x] = mx[x];
      l[x] *= al[x];
      // exp(s - m) as 2^(s f - m log2(e)); a score of -inf gives 0 (with m finite: a row whose
      // max is -inf has every score -inf, and any finite m gives them 0 too).
      ml[x] = mx[x] == neg ? 0.f : mx[x] * LOG2E;
    }
#pragma unroll
    for (u32 n = 0; n < NK; ++n) {
#pragma unroll
      for (u32 e = 0; e < 4; ++e) {
        const float p = mma_exp2(__fmaf_rn(s[n][e], f, -ml[e / 2]));
        s[n][e] = p;
        l[e / 2] += p;
      }
    }
    // (Scaling the accumulators only where a row's max moved measured no faster: H200.)
#pragma unroll
    for (u32 n = 0; n < ND; ++n) {
      acc[n][0] *= al[0], acc[n][1] *= al[0];
      acc[n][2] *= al[1], acc[n][3] *= al[1];
    }
    asm volatile("cp.async.wait_group 1;");
    __syncthreads();
#pragma unroll
    for (u32 kk = 0; kk < MMA_BK / 16; ++kk) {
      const u32 pa[4] = {pack2<T>(s[2 * kk][0], s[2 * kk][1]), pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                         pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]), pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (u32 np = 0; np < ND / 2; ++np) {
        u32 bf[4];
        ldmatrix4<true>(bf, v_lane + kk * 16 * DM * 2 + ((2 * np + v_h) ^ x8) * 16);
        mma16816<T>(acc[2 * np], pa, bf);
        mma16816<T>(acc[2 * np + 1], pa, bf + 2);
      }
    }
  }
  asm volatile("cp.async.wait_group 0;");
  // Each row's sum over the 4 threads holding it.
#pragma unroll
  for (u32 x = 0; x < 2; ++x) {
    l[x] += __shfl_xor_sync(0xffffffffu, l[x], 1);
    l[x] += __shfl_xor_sync(0xffffffffu, l[x], 2);
  }
#pragma unroll
  for (u32 x = 0; x < 2; ++x) {
    if (vr[x] >= rows) continue;
    const u64 row = (b * a.hq + hk * a.group + vr[x] / a.lq) * a.lq + vr[x] % a.lq;
    if (a.splits > 1) {
      float* p = reinterpret_cast<float*>(part) + (row * a.splits + split) * (a.dv + 2);
#pragma unroll
      for (u32 n = 0; n < ND; ++n) {
#pragma unroll
        for (u32 e = 0; e < 2; ++e) {
          const u64 col = n * 8 + tc * 2 + e;
          if (col < a.dv) p[col] = acc[n][2 * x + e];
        }
      }
      if (tc == 0) {
        p[a.dv] = m[x];
        p[a.dv + 1] = l[x];
      }
      continue;
    }
#pragma unroll
    for (u32 n = 0; n < ND; ++n) {
#pragma unroll
      for (u32 e = 0; e < 2; ++e) {
        const u64 col = n * 8 + tc * 2 + e;
        if (col < a.dv) y[row * a.dv + col] = num<T>::store(l[x] == 0.f ? neg - neg : acc[n][2 * x + e] / l[x]);
      }
    }
  }
}

#define RWO_SDPA_MMA_ONE(op, T, DM, MASK, suffix)                                                     \
  extern "C" __global__ void __launch_bounds__(MMA_THREADS, MMA_BLOCKS)                           \
      op##_mma##DM##_##T##suffix(u64 first, SdpaArgs a, const T* q, const T* k, const T* v, const void* m, \
                                 T* y, void* part) {                                                  \
    sdpa_mma<T, MASK, DM>(first, a, q, k, v, m, y, part);                                             \
  }
#define RWO_SDPA_MMA(op, T)                  \
  RWO_SDPA_MMA_ONE(op, T, 64, 0, )           \
  RWO_SDPA_MMA_ONE(op, T, 64, 1, _keep)      \
  RWO_SDPA_MMA_ONE(op, T, 64, 2, _additive)  \
  RWO_SDPA_MMA_ONE(op, T, 128, 0, )          \
  RWO_SDPA_MMA_ONE(op, T, 128, 1, _keep)     \
  RWO_SDPA_MMA_ONE(op, T, 128, 2, _additive)
#define RWO_SDPA_MMA_EACH(op, ...) RWO_EACH(RWO_SDPA_MMA, op, __VA_ARGS__)
// (RWO_-named so that the suite's list of entry points every target must hold leaves them out.)
RWO_SDPA_MMA_EACH(scaled_dot_product_attention, f16, bf16)
#endif

// The decode pass for up to R rows a kv head: op_decode{R}_T[_keep|_additive].
#define RWO_SDPA_DECODE(op, T, R)                                                                          \
  DEC_KERNEL op##_decode##R##_##T(u64 first, SdpaArgs a, const T* q, const T* k, const T* v, const void* m, \
                                  T* y, void* part, u32* counts) {                                         \
    sdpa_decode<T, 0, R>(first, a, q, k, v, m, y, part, counts);                                           \
  }                                                                                                        \
  DEC_KERNEL op##_decode##R##_##T##_keep(u64 first, SdpaArgs a, const T* q, const T* k, const T* v,         \
                                         const void* m, T* y, void* part, u32* counts) {                   \
    sdpa_decode<T, 1, R>(first, a, q, k, v, m, y, part, counts);                                           \
  }                                                                                                        \
  DEC_KERNEL op##_decode##R##_##T##_additive(u64 first, SdpaArgs a, const T* q, const T* k, const T* v,     \
                                             const void* m, T* y, void* part, u32* counts) {               \
    sdpa_decode<T, 2, R>(first, a, q, k, v, m, y, part, counts);                                           \
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
  RWO_SDPA_DECODE(op, T, 1) RWO_SDPA_DECODE(op, T, 2) RWO_SDPA_DECODE(op, T, 4) RWO_SDPA_DECODE(op, T, 8)      \
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
