// Reductions (src/spec/reduce.rs): sum, min, max, argmin, argmax over any set of dims of any
// strided layout, into a contiguous output with one element per kept position.
//
// The host splits the layout into kept dims (`kd`, `kv`: one output each, row-major) and
// reduced dims (`rd`, `rv`: walked row-major, so an element's flat index there is what the arg
// ops return). Two kernels read the input:
// - `{op}_{T}` (rows): `group` consecutive threads (a power of two, up to the block) reduce one
//   output's extent, then combine through warp shuffles and, past a warp, shared memory. A
//   contiguous extent is read 16 bytes a load.
// - `{op}_{T}_cols` (columns): `bx` consecutive outputs per block, the block's other dimension
//   splitting the extent; used where neighbouring outputs are neighbours in memory, so a warp's
//   loads are coalesced.
// Either may cut each extent into `chunks` (grid work items) that write partial states (the
// state's value type, plus the index for the arg ops) at [output][c_base + chunk] of a
// [M][c_total] buffer; `{op}_{T}_partials` (rows) reduces those rows, again into partials or
// the output.
//
// Sums accumulate in f32 for the halves, f64 for f32 and f64, wrapping for integers, and round
// once at the end. Min and max propagate NaN. The arg ops keep (value, index) pairs and take
// the pair first in a total order: a NaN before every number, then the extreme value, then the
// smaller index; so the result is the first extreme whatever the order of combination.
#include "common.h"

// Threads of every reduce block (BLOCK in src/native/kernel.rs).
#define RED_BLOCK 256
// The fewest lanes a warp has on any runtime: sizes shared arrays indexed by warp.
#define RED_MIN_WARP 32

// Wrapping sums in the compute types.
__device__ __forceinline__ float red_add(float a, float b) { return a + b; }
__device__ __forceinline__ double red_add(double a, double b) { return a + b; }
__device__ __forceinline__ u32 red_add(u32 a, u32 b) { return a + b; }
__device__ __forceinline__ i64 red_add(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }

// The least and greatest value of each compute type (infinities for floats).
template <class C>
struct bound;
template <>
struct bound<float> {
  static __device__ __forceinline__ float lo() { return __uint_as_float(0xff800000u); }
  static __device__ __forceinline__ float hi() { return __uint_as_float(0x7f800000u); }
};
template <>
struct bound<double> {
  static __device__ __forceinline__ double lo() { return __longlong_as_double((i64)0xfff0000000000000ull); }
  static __device__ __forceinline__ double hi() { return __longlong_as_double(0x7ff0000000000000ll); }
};
template <>
struct bound<u32> {
  static __device__ __forceinline__ u32 lo() { return 0u; }
  static __device__ __forceinline__ u32 hi() { return 0xffffffffu; }
};
template <>
struct bound<i64> {
  static __device__ __forceinline__ i64 lo() { return (i64)0x8000000000000000ull; }
  static __device__ __forceinline__ i64 hi() { return 0x7fffffffffffffffll; }
};

// Value ops: an identity and an associative, commutative join.
struct sum_red {
  enum { ARG = 0 };
  template <class C>
  static __device__ __forceinline__ C init() { return (C)0; }
  template <class C>
  static __device__ __forceinline__ C join(C a, C b) { return red_add(a, b); }
};
struct min_red {
  enum { ARG = 0 };
  template <class C>
  static __device__ __forceinline__ C init() { return bound<C>::hi(); }
  template <class C>
  static __device__ __forceinline__ C join(C a, C b) { return is_nan(a) ? a : (is_nan(b) || b < a ? b : a); }
};
struct max_red {
  enum { ARG = 0 };
  template <class C>
  static __device__ __forceinline__ C init() { return bound<C>::lo(); }
  template <class C>
  static __device__ __forceinline__ C join(C a, C b) { return is_nan(a) ? a : (is_nan(b) || b > a ? b : a); }
};
// Arg ops: whether (a, ia) comes before (b, ib): NaN first (the smaller index among NaNs),
// then the extreme value, then the smaller index.
struct argmin_red {
  enum { ARG = 1 };
  template <class C>
  static __device__ __forceinline__ C init() { return bound<C>::hi(); }
  template <class C>
  static __device__ __forceinline__ bool first(C a, u32 ia, C b, u32 ib) {
    if (is_nan(a)) return !is_nan(b) || ia < ib;
    return !is_nan(b) && (a < b || (a == b && ia < ib));
  }
};
struct argmax_red {
  enum { ARG = 1 };
  template <class C>
  static __device__ __forceinline__ C init() { return bound<C>::lo(); }
  template <class C>
  static __device__ __forceinline__ bool first(C a, u32 ia, C b, u32 ib) {
    if (is_nan(a)) return !is_nan(b) || ia < ib;
    return !is_nan(b) && (a > b || (a == b && ia < ib));
  }
};

// The type a reduction's state holds: the compute type, except that f32 sums accumulate in
// f64, so that they round about once as the reference's do (a plain f32 sum of 2^24 + 1 + 1
// loses both ones; f16 and bf16 have 13 and 16 bits to spare in f32).
template <class Op, class T>
struct acc {
  typedef typename num<T>::C A;
};
template <>
struct acc<sum_red, f32> {
  typedef double A;
};

// A reduction's running state: the value, plus for the arg ops the index of the pair kept (an
// empty state holds the identity and index 0xffffffff, which every element's pair beats).
template <class Op, class C, int ARG = Op::ARG>
struct State;
template <class Op, class C>
struct State<Op, C, 0> {
  C v;
  __device__ __forceinline__ void init() { v = Op::template init<C>(); }
  __device__ __forceinline__ void feed(C x, u32) { v = Op::join(v, x); }
  __device__ __forceinline__ void merge(const State& o) { v = Op::join(v, o.v); }
  __device__ __forceinline__ u32 index() const { return 0u; }
  __device__ __forceinline__ State xor_lane(int mask) const {
    State r;
    r.v = shfl_xor(v, mask);
    return r;
  }
};
template <class Op, class C>
struct State<Op, C, 1> {
  C v;
  u32 i;
  __device__ __forceinline__ void init() {
    v = Op::template init<C>();
    i = 0xffffffffu;
  }
  __device__ __forceinline__ void feed(C x, u32 ix) {
    if (Op::first(x, ix, v, i)) {
      v = x;
      i = ix;
    }
  }
  __device__ __forceinline__ void merge(const State& o) { feed(o.v, o.i); }
  __device__ __forceinline__ u32 index() const { return i; }
  __device__ __forceinline__ State xor_lane(int mask) const {
    State r;
    r.v = shfl_xor(v, mask);
    r.i = shfl_xor(i, mask);
    return r;
  }
};

// Where the elements come from: the input tensor (the index of an element is its flat index in
// the reduced dims) or partial states (each carries its index).
template <class T>
struct FromInput {
  typedef typename num<T>::C C;
  const T* x;
  __device__ __forceinline__ C value(u64 a) const { return num<T>::load(x[a]); }
  __device__ __forceinline__ u32 index(u64, u32 flat) const { return flat; }
};
template <class C_>
struct FromPartials {
  typedef C_ C;
  const C* v;
  const u32* i;
  __device__ __forceinline__ C value(u64 a) const { return v[a]; }
  __device__ __forceinline__ u32 index(u64 a, u32) const { return i[a]; }
};

// Where a finished state goes: the output (T, or the u32 index for the arg ops) or a partial.
struct Sink {
  void* y;
  void* pv;
  u32* pi;
  u64 c_total;
  u64 c_base;
  u32 partial;
};
template <class T, class Op, class C>
__device__ __forceinline__ void sink_store(const Sink& k, u64 o, u64 c, const State<Op, C>& st) {
  if (k.partial) {
    const u64 p = o * k.c_total + k.c_base + c;
    ((C*)k.pv)[p] = st.v;
    if (Op::ARG) k.pi[p] = st.index();
  } else if (Op::ARG) {
    ((u32*)k.y)[o] = st.index();
  } else {
    ((T*)k.y)[o] = num<T>::store(st.v);
  }
}

__device__ __forceinline__ u64 red_min(u64 a, u64 b) { return a < b ? a : b; }

// Feeds elements [lo, hi) of the reduced walk at `base`, those of `lane`, `lane + step`, ...
// Up to one reduced dim is walked without division, four loads in flight.
template <class Op, class S, class Src>
__device__ __forceinline__ void feed_strided(S& st, const Src& src, u64 base, const Dims& rd, const View& rv,
                                             u32 lo, u32 hi, u32 lane, u32 step, u32 ibase) {
  // Counters in u64: an extent may end near 2^32.
  if (rv.contiguous || rd.rank <= 1) {
    const u64 s = rv.contiguous ? 1 : rv.s[0];
    const u64 b = base + rv.offset;
    u64 r = (u64)lo + lane;
    for (; r + 3 * step < hi; r += 4 * step) {
      const u64 a0 = b + r * s, a1 = b + (r + step) * s, a2 = b + (r + 2 * step) * s, a3 = b + (r + 3 * step) * s;
      const typename Src::C v0 = src.value(a0), v1 = src.value(a1), v2 = src.value(a2), v3 = src.value(a3);
      st.feed(v0, Op::ARG ? src.index(a0, ibase + (u32)r) : 0u);
      st.feed(v1, Op::ARG ? src.index(a1, ibase + (u32)(r + step)) : 0u);
      st.feed(v2, Op::ARG ? src.index(a2, ibase + (u32)(r + 2 * step)) : 0u);
      st.feed(v3, Op::ARG ? src.index(a3, ibase + (u32)(r + 3 * step)) : 0u);
    }
    for (; r < hi; r += step) {
      const u64 a = b + r * s;
      st.feed(src.value(a), Op::ARG ? src.index(a, ibase + (u32)r) : 0u);
    }
  } else {
    for (u64 r = (u64)lo + lane; r < hi; r += step) {
      const u64 a = base + at(rv, rd, (u32)r);
      st.feed(src.value(a), Op::ARG ? src.index(a, ibase + (u32)r) : 0u);
    }
  }
}

// 16 bytes of elements, loaded at once.
struct alignas(16) Vec16 {
  u32 w[4];
};
template <class T>
union Lanes {
  Vec16 raw;
  T e[16 / sizeof(T)];
};

template <class Op, class S, class T>
__device__ __forceinline__ void feed_lanes(S& st, const Lanes<T>& l, u32 index) {
#pragma unroll
  for (u32 q = 0; q < 16 / sizeof(T); ++q) st.feed(num<T>::load(l.e[q]), index + q);
}

// Feeds elements [lo, hi) of the contiguous run `p`: a head up to the first 16-byte boundary,
// then 16 bytes a load (four in flight), then the tail.
template <class Op, class S, class T>
__device__ __forceinline__ void feed_contiguous(S& st, const T* p, u32 lo, u32 hi, u32 lane, u32 step, u32 ibase) {
  const u32 V = 16 / sizeof(T);
  const u32 mis = (u32)((u64)(p + lo) & 15u) / (u32)sizeof(T);
  u32 head = mis ? V - mis : 0u;
  if (head > hi - lo) head = hi - lo;
  for (u64 r = (u64)lo + lane; r < lo + head; r += step) st.feed(num<T>::load(p[r]), ibase + (u32)r);
  const u32 s = lo + head;
  const u32 nv = (hi - s) / V;
  const Vec16* vp = (const Vec16*)(p + s);
  u32 j = lane;
  for (; j + 3 * step < nv; j += 4 * step) {
    Lanes<T> a, b, c, d;
    a.raw = vp[j];
    b.raw = vp[j + step];
    c.raw = vp[j + 2 * step];
    d.raw = vp[j + 3 * step];
    feed_lanes<Op>(st, a, ibase + s + j * V);
    feed_lanes<Op>(st, b, ibase + s + (j + step) * V);
    feed_lanes<Op>(st, c, ibase + s + (j + 2 * step) * V);
    feed_lanes<Op>(st, d, ibase + s + (j + 3 * step) * V);
  }
  for (; j < nv; j += step) {
    Lanes<T> a;
    a.raw = vp[j];
    feed_lanes<Op>(st, a, ibase + s + j * V);
  }
  for (u64 r = (u64)s + nv * V + lane; r < hi; r += step) st.feed(num<T>::load(p[r]), ibase + (u32)r);
}

template <class Op, class S, class T>
__device__ __forceinline__ void feed_range(S& st, const FromInput<T>& src, u64 base, const Dims& rd, const View& rv,
                                           u32 lo, u32 hi, u32 lane, u32 step, u32 ibase) {
  if (rv.contiguous) {
    feed_contiguous<Op>(st, src.x + base + rv.offset, lo, hi, lane, step, ibase);
  } else {
    feed_strided<Op>(st, src, base, rd, rv, lo, hi, lane, step, ibase);
  }
}
template <class Op, class S, class C>
__device__ __forceinline__ void feed_range(S& st, const FromPartials<C>& src, u64 base, const Dims& rd,
                                           const View& rv, u32 lo, u32 hi, u32 lane, u32 step, u32 ibase) {
  feed_strided<Op>(st, src, base, rd, rv, lo, hi, lane, step, ibase);
}

// Combines the states of each aligned group of `group` threads (a power of two dividing the
// block) into its first thread: shuffles within a warp, then one state per warp through `ws`.
// Every thread of the block must call it (it may synchronise the block).
template <class S>
__device__ __forceinline__ S group_reduce(S st, u32 group, S* ws) {
  const u32 w = warpSize;
  const u32 in_warp = group < w ? group : w;
  for (u32 m = in_warp >> 1; m > 0; m >>= 1) st.merge(st.xor_lane((int)m));
  if (group > w) {
    const u32 warp = threadIdx.x / w;
    if ((threadIdx.x & (w - 1)) == 0) ws[warp] = st;
    __syncthreads();
    if ((threadIdx.x & (group - 1)) == 0) {
      for (u32 k = 1; k < group / w; ++k) st.merge(ws[warp + k]);
    }
    __syncthreads();
  }
  return st;
}

// Rows: `group` threads per (output, chunk) work item; items o + M * c, for M outputs and
// `chunks` chunks of `chunk_len` elements of each extent, taken a block's worth at a time.
template <class T, class Op, class Src>
__device__ __forceinline__ void reduce_rows(const Dims& kd, const View& kv, const Dims& rd, const View& rv,
                                            const Src& src, u32 group, u64 chunks, u64 chunk_len, u32 ibase,
                                            const Sink& sink) {
  typedef State<Op, typename acc<Op, T>::A> S;
  __shared__ S ws[RED_BLOCK / RED_MIN_WARP];
  const u32 per_block = blockDim.x / group;
  const u32 lane = threadIdx.x & (group - 1);
  const u64 total = kd.n * chunks;
  for (u64 g0 = (u64)blockIdx.x * per_block; g0 < total; g0 += (u64)gridDim.x * per_block) {
    const u64 g = g0 + threadIdx.x / group;
    S st;
    st.init();
    u64 o = 0, c = 0;
    if (g < total) {
      c = g / kd.n;
      o = g - c * kd.n;
      const u64 lo = c * chunk_len;
      const u64 hi = red_min(lo + chunk_len, rd.n);
      if (lo < hi) feed_range<Op>(st, src, at(kv, kd, (u32)o), rd, rv, (u32)lo, (u32)hi, lane, group, ibase);
    }
    st = group_reduce(st, group, ws);
    if (lane == 0 && g < total) sink_store<T>(sink, o, c, st);
  }
}

// Columns: `bx` consecutive outputs per block (x) and chunk `blockIdx.y` of their extents,
// split among the block's blockDim / bx rows of threads, then combined in shared memory.
template <class T, class Op>
__device__ __forceinline__ void reduce_cols(const Dims& kd, const View& kv, const Dims& rd, const View& rv,
                                            const T* x, u32 bx, u64 chunk_len, u32 ibase, const Sink& sink) {
  typedef State<Op, typename acc<Op, T>::A> S;
  __shared__ S part[RED_BLOCK];
  const u32 tx = threadIdx.x & (bx - 1);
  const u32 ty = threadIdx.x / bx;
  const u32 by = blockDim.x / bx;
  const u64 c = blockIdx.y;
  const u64 lo = c * chunk_len;
  const u64 hi = red_min(lo + chunk_len, rd.n);
  const u64 blocks = (kd.n + bx - 1) / bx;
  FromInput<T> src;
  src.x = x;
  for (u64 b = blockIdx.x; b < blocks; b += gridDim.x) {
    const u64 o = b * bx + tx;
    S st;
    st.init();
    if (o < kd.n && lo < hi) feed_strided<Op>(st, src, at(kv, kd, (u32)o), rd, rv, (u32)lo, (u32)hi, ty, by, ibase);
    part[threadIdx.x] = st;
    __syncthreads();
    for (u32 s = by >> 1; s > 0; s >>= 1) {
      if (ty < s) {
        st.merge(part[threadIdx.x + s * bx]);
        part[threadIdx.x] = st;
      }
      __syncthreads();
    }
    if (ty == 0 && o < kd.n) sink_store<T>(sink, o, c, st);
  }
}

// Three entry points per op and dtype: rows and columns over the input, rows over partials.
// Sink parameters: the output, the partial values and indices, c_total, c_base, and whether
// to write partials.
#define RWO_SINK_PARAMS void *y, void *pv, u32 *pi, u64 c_total, u64 c_base, u32 partial
#define RWO_REDUCE(op, T)                                                                         \
  RWO_KERNEL op##_##T(Dims kd, View kv, Dims rd, View rv, const T* x, u32 group, u64 chunks,      \
                      u64 chunk_len, u32 ibase, RWO_SINK_PARAMS) {                                \
    FromInput<T> src;                                                                             \
    src.x = x;                                                                                    \
    const Sink k = {y, pv, pi, c_total, c_base, partial};                                         \
    reduce_rows<T, op##_red>(kd, kv, rd, rv, src, group, chunks, chunk_len, ibase, k);            \
  }                                                                                               \
  RWO_KERNEL op##_##T##_cols(Dims kd, View kv, Dims rd, View rv, const T* x, u32 bx,              \
                             u64 chunk_len, u32 ibase, RWO_SINK_PARAMS) {                         \
    const Sink k = {y, pv, pi, c_total, c_base, partial};                                         \
    reduce_cols<T, op##_red>(kd, kv, rd, rv, x, bx, chunk_len, ibase, k);                         \
  }                                                                                               \
  RWO_KERNEL op##_##T##_partials(Dims kd, View kv, Dims rd, View rv, const acc<op##_red, T>::A* v, \
                                 const u32* i, u32 group, u64 chunks, u64 chunk_len,              \
                                 RWO_SINK_PARAMS) {                                               \
    FromPartials<acc<op##_red, T>::A> src;                                                        \
    src.v = v;                                                                                    \
    src.i = i;                                                                                    \
    const Sink k = {y, pv, pi, c_total, c_base, partial};                                         \
    reduce_rows<T, op##_red>(kd, kv, rd, rv, src, group, chunks, chunk_len, 0u, k);               \
  }
#define REDUCE(op, ...) RWO_EACH(RWO_REDUCE, op, __VA_ARGS__)

REDUCE(sum, u8, u32, i64, f16, bf16, f32, f64)
REDUCE(min, u8, u32, i64, f16, bf16, f32, f64)
REDUCE(max, u8, u32, i64, f16, bf16, f32, f64)
REDUCE(argmin, u8, u32, i64, f16, bf16, f32, f64)
REDUCE(argmax, u8, u32, i64, f16, bf16, f32, f64)
