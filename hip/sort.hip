// argsort along the last dim (src/spec/sort.rs) as a sort of (key, index) pairs.
//
// Each key is an unsigned integer whose order is the spec's order of the values (NaN above
// +inf, -0.0 equal to 0.0; all bits inverted for descending), so pairs ordered by key, then
// index, are exactly a stable argsort: all pairs are distinct, ties need no care. Keys of up
// to 32 bits travel with their index as one u64 (key << 32 | index); 64-bit keys as a u64 key
// and a u32 index.
//
// `argsort_{T}` sorts runs of S (a power of two <= BLOCK) elements of each row in shared memory
// with a bitonic network: rows of n <= BLOCK are one run padded to S = next_pow2(n) (padding
// sorts last), BLOCK / S rows a block. Longer rows are cut into runs of BLOCK, written as
// pairs, and `argsort_merge_{narrow,wide}` passes merge pairs of sorted runs (the run length
// doubling each pass) by merge path, one output tile of BLOCK a block; the last pass writes the
// indices. Each thread holds E consecutive pairs in registers, where the network's steps of
// stride < E run without shared memory.
#include "common.h"

// Pairs each thread holds in registers (E in src/native/sort.rs): 16 halves the shared-memory
// steps of 8 at about the same occupancy.
#define SORT_E 16

// Order-preserving keys of the float bits: every NaN the largest key, both zeros one key.
__device__ __forceinline__ u32 f32_key(u32 b) {
  const u32 a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return 0xffffffffu;
  if (a == 0u) return 0x80000000u;
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ u64 f64_key(u64 b) {
  const u64 a = b & 0x7fffffffffffffffull;
  if (a > 0x7ff0000000000000ull) return 0xffffffffffffffffull;
  if (a == 0ull) return 0x8000000000000000ull;
  return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
}
__device__ __forceinline__ u32 sort_key(f32 v) { return f32_key(__float_as_uint(v)); }
__device__ __forceinline__ u32 sort_key(f16 v) { return f32_key(__float_as_uint(f16_to_f32(v))); }
__device__ __forceinline__ u32 sort_key(bf16 v) { return f32_key(((u32)v.bits) << 16); }
__device__ __forceinline__ u64 sort_key(f64 v) { return f64_key((u64)__double_as_longlong(v)); }
__device__ __forceinline__ u32 sort_key(u8 v) { return v; }
__device__ __forceinline__ u32 sort_key(u32 v) { return v; }
__device__ __forceinline__ u64 sort_key(i64 v) { return (u64)v ^ 0x8000000000000000ull; }

// Shared places are padded by one per 16, so that the E-strided accesses of a warp meet
// distinct banks.
__device__ __forceinline__ u32 pad(u32 p) { return p + (p >> 4); }

// Pairs of a key of up to 32 bits and an index, as one u64 (key << 32 | index).
struct Narrow {
  enum { BLOCK = 4096 };
  typedef u32 Key;
  struct P {
    u64 v;
  };
  struct Shared {
    u64 v[BLOCK + BLOCK / 16];
  };
  static __device__ __forceinline__ P make(u32 key, u32 i) {
    P p;
    p.v = ((u64)key << 32) | i;
    return p;
  }
  static __device__ __forceinline__ P pad_pair() {
    P p;
    p.v = 0xffffffffffffffffull;
    return p;
  }
  static __device__ __forceinline__ bool before(const P& a, const P& b) { return a.v < b.v; }
  static __device__ __forceinline__ u32 index(const P& a) { return (u32)a.v; }
  static __device__ __forceinline__ P get(const Shared& s, u32 p) {
    P r;
    r.v = s.v[pad(p)];
    return r;
  }
  static __device__ __forceinline__ void set(Shared& s, u32 p, const P& x) { s.v[pad(p)] = x.v; }
  static __device__ __forceinline__ P load(const u64* k, const u32*, u64 at) {
    P r;
    r.v = k[at];
    return r;
  }
  static __device__ __forceinline__ void store(u64* k, u32*, u64 at, const P& x) { k[at] = x.v; }
};

// Pairs of a 64-bit key and an index.
struct Wide {
  enum { BLOCK = 2048 };
  typedef u64 Key;
  struct P {
    u64 k;
    u32 i;
  };
  struct Shared {
    u64 k[BLOCK + BLOCK / 16];
    u32 i[BLOCK + BLOCK / 16];
  };
  static __device__ __forceinline__ P make(u64 key, u32 i) {
    P p;
    p.k = key;
    p.i = i;
    return p;
  }
  static __device__ __forceinline__ P pad_pair() { return make(0xffffffffffffffffull, 0xffffffffu); }
  static __device__ __forceinline__ bool before(const P& a, const P& b) {
    return a.k < b.k || (a.k == b.k && a.i < b.i);
  }
  static __device__ __forceinline__ u32 index(const P& a) { return a.i; }
  static __device__ __forceinline__ P get(const Shared& s, u32 p) { return make(s.k[pad(p)], s.i[pad(p)]); }
  static __device__ __forceinline__ void set(Shared& s, u32 p, const P& x) {
    s.k[pad(p)] = x.k;
    s.i[pad(p)] = x.i;
  }
  static __device__ __forceinline__ P load(const u64* k, const u32* i, u64 at) { return make(k[at], i[at]); }
  static __device__ __forceinline__ void store(u64* k, u32* i, u64 at, const P& x) {
    k[at] = x.k;
    i[at] = x.i;
  }
};

template <class T>
struct width {
  typedef Narrow W;
};
template <>
struct width<f64> {
  typedef Wide W;
};
template <>
struct width<i64> {
  typedef Wide W;
};

// Orders registers a < b.
template <class W>
__device__ __forceinline__ void rcx(typename W::P* r, u32 a, u32 b) {
  if (W::before(r[b], r[a])) {
    const typename W::P t = r[a];
    r[a] = r[b];
    r[b] = t;
  }
}

// One step of the network on the E registers: pairs (a, a + j), or (a, mirror of a in its
// k-run) when j = k / 2. Fully unrolled, so every register index is a constant.
template <class W>
__device__ __forceinline__ void reg_step(typename W::P* r, u32 k, u32 j) {
#pragma unroll
  for (u32 t = 0; t < SORT_E / 2; ++t) {
    const u32 a = ((t & ~(j - 1u)) << 1) | (t & (j - 1u));
    rcx<W>(r, a, j == (k >> 1) ? (a ^ (k - 1u)) : a + j);
  }
}

// Stages k = 2 .. min(s, E): sorts each aligned run of min(s, E) registers.
template <class W>
__device__ __forceinline__ void sort_local(typename W::P* r, u32 s) {
#pragma unroll
  for (u32 k = 2; k <= SORT_E; k <<= 1) {
    if (k <= s) {
#pragma unroll
      for (u32 j = k >> 1; j > 0; j >>= 1) reg_step<W>(r, k, j);
    }
  }
}

// The steps of stride < E of a stage k > E: plain pairs (a, a + j).
template <class W>
__device__ __forceinline__ void clean_local(typename W::P* r) {
#pragma unroll
  for (u32 j = SORT_E >> 1; j > 0; j >>= 1) reg_step<W>(r, 2 * SORT_E, j);
}

template <class W>
__device__ __forceinline__ void to_regs(typename W::P* r, const typename W::Shared& sm, u32 p) {
#pragma unroll
  for (u32 q = 0; q < SORT_E; ++q) r[q] = W::get(sm, p + q);
}
template <class W>
__device__ __forceinline__ void from_regs(const typename W::P* r, typename W::Shared& sm, u32 p) {
#pragma unroll
  for (u32 q = 0; q < SORT_E; ++q) W::set(sm, p + q, r[q]);
}

// Sorts every aligned run of s (a power of two <= BLOCK) shared places ascending. Stage k
// first compares each place of a k-run's lower half with its mirror in the upper half, then
// half-cleans, so that every run (not every other one) ends ascending. Called by the whole
// block (blockDim = BLOCK / E), after the places are written and synchronised.
template <class W>
__device__ __forceinline__ void bitonic(typename W::Shared& sm, u32 s) {
  const u32 nt = W::BLOCK / SORT_E;
  const u32 tid = threadIdx.x;
  typename W::P r[SORT_E];
  to_regs<W>(r, sm, tid * SORT_E);
  sort_local<W>(r, s);
  for (u32 k = 2 * SORT_E; k <= s; k <<= 1) {
    from_regs<W>(r, sm, tid * SORT_E);
    __syncthreads();
    for (u32 j = k >> 1; j >= SORT_E; j >>= 1) {
      for (u32 t = tid; t < W::BLOCK / 2; t += nt) {
        const u32 a = ((t & ~(j - 1u)) << 1) | (t & (j - 1u));
        const u32 b = j == (k >> 1) ? (a ^ (k - 1u)) : a + j;
        const typename W::P pa = W::get(sm, a), pb = W::get(sm, b);
        if (W::before(pb, pa)) {
          W::set(sm, a, pb);
          W::set(sm, b, pa);
        }
      }
      __syncthreads();
    }
    to_regs<W>(r, sm, tid * SORT_E);
    clean_local<W>(r);
  }
  from_regs<W>(r, sm, tid * SORT_E);
  __syncthreads();
}

// Rows `row` of the launch are at `at(ov, od, row)`, element `col` `col * step` further; `rows`
// rows of n. Runs of s, `runs` per row (runs > 1 only when s = BLOCK). Writes the sorted
// indices into y[row * n + col], or (pairs) the sorted pairs into pk/pi at the same places.
template <class T>
__device__ __forceinline__ void sort_blocks(const Dims& od, const View& ov, u64 step, const T* x, u32 n, u32 s,
                                            u32 runs, u64 rows, u64 mask, u32* y, u64* pk, u32* pi, u32 pairs) {
  typedef typename width<T>::W W;
  typedef typename W::Key Key;
  __shared__ typename W::Shared sm;
  const u32 nt = W::BLOCK / SORT_E;
  const u32 per = W::BLOCK / s;
  const u64 total = rows * runs;
  const u64 tiles = (total + per - 1) / per;
  for (u64 tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const u64 first = tile * per;
    for (u32 p = threadIdx.x; p < W::BLOCK; p += nt) {
      const u64 g = first + p / s;
      const u64 row = runs == 1 ? g : g / runs;
      const u64 col = (g - row * runs) * s + (p & (s - 1u));
      typename W::P v = W::pad_pair();
      if (g < total && col < n) {
        const u64 a = at(ov, od, (u32)row) + col * step;
        v = W::make((Key)(sort_key(x[a]) ^ (Key)mask), (u32)col);
      }
      W::set(sm, p, v);
    }
    __syncthreads();
    bitonic<W>(sm, s);
    // Padding sorts after a run's own elements, so sorted place c of a run is its element
    // exactly when column (run * s + c) exists.
    for (u32 p = threadIdx.x; p < W::BLOCK; p += nt) {
      const u64 g = first + p / s;
      const u64 row = runs == 1 ? g : g / runs;
      const u64 col = (g - row * runs) * s + (p & (s - 1u));
      if (g < total && col < n) {
        const typename W::P v = W::get(sm, p);
        if (pairs) {
          W::store(pk, pi, row * n + col, v);
        } else {
          y[row * n + col] = W::index(v);
        }
      }
    }
    __syncthreads();
  }
}

// Merges pairs of sorted runs of `run` (BLOCK times a power of two) pairs of each of `rows`
// rows of n, from ak/ai, one tile of BLOCK outputs per work item (`tiles` per row): into
// pk/pi (pairs) or the indices into y.
template <class W>
__device__ __forceinline__ void merge_runs(u32 n, u64 rows, u64 run, u32 tiles, const u64* ak, const u32* ai, u32* y,
                                           u64* pk, u32* pi, u32 pairs) {
  typedef typename W::P P;
  __shared__ typename W::Shared sm;
  __shared__ u64 bounds[2];
  const u32 nt = W::BLOCK / SORT_E;
  const u32 tid = threadIdx.x;
  const u64 items = rows * tiles;
  for (u64 w = blockIdx.x; w < items; w += gridDim.x) {
    const u64 row = w / tiles;
    const u64 start = (w - row * tiles) * W::BLOCK;
    // The pair of runs a, b this tile's outputs come from: tiles never straddle pairs.
    const u64 pair = start & ~(2 * run - 1);
    const u64 la = run < n - pair ? run : n - pair;
    const u64 lb = run < n - pair - la ? run : n - pair - la;
    const u64 a0 = row * n + pair;
    const u64 b0 = a0 + la;
    const u64 o0 = start - pair;
    const u64 o1 = o0 + W::BLOCK < la + lb ? o0 + W::BLOCK : la + lb;
    // Where the tile starts (h = 0) and ends (h = 1) in a: the split of output o is the number
    // of a's pairs among the first o outputs, the first q with a[q] not before b[o - q - 1].
    // 32 lanes search each split, probing 32 places of its interval per round; the rounds are
    // as many for every lane, so the shuffles see all their lanes.
    if (tid < 64) {
      const u32 h = tid / 32, t = tid % 32;
      const u64 o = h ? o1 : o0;
      u64 lo = o > lb ? o - lb : 0;
      u64 hi = o < la ? o : la;
      for (u64 span = run; span > 0; span /= 32) {
        const u64 step = (hi - lo + 31) / 32;
        const u64 q = lo + (t + 1) * step - 1;
        u32 yes = 0;
        if (step > 0 && q < hi) yes = W::before(W::load(ak, ai, a0 + q), W::load(ak, ai, b0 + o - q - 1)) ? 1u : 0u;
#pragma unroll
        for (int m = 16; m > 0; m >>= 1) yes += shfl_xor(yes, m);
        if (step > 0) {
          const u64 l0 = lo;
          lo = l0 + yes * step;
          const u64 end = l0 + (yes + 1) * step - 1;
          hi = end < hi ? end : hi;
        }
      }
      if (t == 0) bounds[h] = lo;
    }
    __syncthreads();
    const u32 i0 = (u32)bounds[0];
    const u32 na = (u32)bounds[1] - i0;
    const u32 m = (u32)(o1 - o0);
    const u32 nb = m - na;
    const u64 j0 = o0 - i0;
    for (u32 p = tid; p < m; p += nt) {
      const u64 src = p < na ? a0 + i0 + p : b0 + j0 + (p - na);
      W::set(sm, p, W::load(ak, ai, src));
    }
    __syncthreads();
    // Outputs [tid * E, tid * E + E): the thread's split in shared memory, then a sequential
    // merge into registers (places past m take whatever is there; they are not written out).
    const u32 e0 = tid * SORT_E < m ? tid * SORT_E : m;
    u32 lo = e0 > nb ? e0 - nb : 0u;
    u32 hi = e0 < na ? e0 : na;
    while (lo < hi) {
      const u32 mid = (lo + hi) >> 1;
      if (W::before(W::get(sm, mid), W::get(sm, na + e0 - mid - 1))) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    u32 ia = lo, ib = na + e0 - lo;
    P r[SORT_E];
#pragma unroll
    for (u32 q = 0; q < SORT_E; ++q) {
      const P pa = W::get(sm, ia < W::BLOCK ? ia : W::BLOCK - 1);
      const P pb = W::get(sm, ib < W::BLOCK ? ib : W::BLOCK - 1);
      const bool from_a = ib >= m || (ia < na && W::before(pa, pb));
      r[q] = from_a ? pa : pb;
      ia += from_a ? 1u : 0u;
      ib += from_a ? 0u : 1u;
    }
    __syncthreads();
    from_regs<W>(r, sm, tid * SORT_E);
    __syncthreads();
    for (u32 p = tid; p < m; p += nt) {
      const P v = W::get(sm, p);
      const u64 at_ = a0 + o0 + p;
      if (pairs) {
        W::store(pk, pi, at_, v);
      } else {
        y[at_] = W::index(v);
      }
    }
    __syncthreads();
  }
}

#define RWO_ARGSORT(op, T)                                                                        \
  RWO_KERNEL op##_##T(Dims od, View ov, u64 step, const T* x, u32 n, u32 s, u32 runs, u64 rows,   \
                      u64 mask, u32* y, u64* pk, u32* pi, u32 pairs) {                            \
    sort_blocks<T>(od, ov, step, x, n, s, runs, rows, mask, y, pk, pi, pairs);                    \
  }
#define ARGSORT(op, ...) RWO_EACH(RWO_ARGSORT, op, __VA_ARGS__)

ARGSORT(argsort, u8, u32, i64, f16, bf16, f32, f64)

// Merge passes, per key width (keys of up to 32 bits: narrow; i64 and f64: wide).
RWO_KERNEL argsort_merge_narrow(u32 n, u64 rows, u64 run, u32 tiles, const u64* ak, const u32* ai, u32* y, u64* pk,
                                u32* pi, u32 pairs) {
  merge_runs<Narrow>(n, rows, run, tiles, ak, ai, y, pk, pi, pairs);
}
RWO_KERNEL argsort_merge_wide(u32 n, u64 rows, u64 run, u32 tiles, const u64* ak, const u32* ai, u32* y, u64* pk,
                              u32* pi, u32 pairs) {
  merge_runs<Wide>(n, rows, run, tiles, ak, ai, y, pk, pi, pairs);
}
