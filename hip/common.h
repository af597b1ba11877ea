// Shared by every hip/*.hip file, in the dialect HIP (hipcc, hiprtc) and CUDA (NVRTC) have in
// common. This header maps the few differences (headers, the halves' conversions, warp
// shuffles); the kernels are written once.
#pragma once

#if defined(__CUDACC_RTC__)
// NVRTC: the launch builtins and math functions are built in; no header is needed (NVRTC 13
// no longer bundles cuda_fp16.h, so the halves below convert through PTX instead).
#elif defined(__HIPCC_RTC__)
// hiprtc: the HIP runtime header is pre-included, and there are no system headers to include.
#else
#include <hip/hip_runtime.h>
#endif

// Element types, named as the crate's dtypes so that an instantiation `UNARY(exp, f32)` both
// picks the type and names the entry point `exp_f32`.
typedef unsigned char u8;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;
typedef float f32;
typedef double f64;
// The halves are stored as their bits, the same 2-byte type on both runtimes; only their
// conversions to and from f32 differ (vendor half intrinsics, or PTX on NVRTC).
struct f16 {
  unsigned short bits;
};
struct bf16 {
  unsigned short bits;
};

// f16 <-> f32: exact one way, round to nearest even the other (overflow gives infinity).
#if defined(__CUDACC_RTC__)
__device__ __forceinline__ float f16_to_f32(f16 v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
  return f;
}
__device__ __forceinline__ f16 f32_to_f16(float f) {
  f16 r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.bits) : "f"(f));
  return r;
}
#else
// HIP: clang's own _Float16, as hip_fp16.h's __half2float and __float2half convert (that header
// is not pre-included by every hiprtc, and clashes with the copy that is by ROCm 5's).
__device__ __forceinline__ float f16_to_f32(f16 v) { return (float)__builtin_bit_cast(_Float16, v.bits); }
__device__ __forceinline__ f16 f32_to_f16(float f) {
  f16 r;
  r.bits = __builtin_bit_cast(unsigned short, (_Float16)f);
  return r;
}
#endif

// The largest rank a kernel indexes; the host merges dims and splits larger layouts.
// Must match `MAX_DIMS` in src/native/kernel.rs.
#define RWO_MAX_DIMS 8

// The shape a strided kernel walks (row-major, dims [0, rank)) and its element count. The host
// keeps `n` below 2^32 (it splits larger launches), so element indices are u32: 32-bit division
// is several times cheaper than 64-bit, and one index width halves the code.
struct Dims {
  u64 rank;
  u64 n;
  u64 d[RWO_MAX_DIMS];
};

// Where one operand's elements sit: offset and strides in elements, or contiguous from offset.
struct View {
  u64 offset;
  u64 contiguous;
  u64 s[RWO_MAX_DIMS];
};

// Storage index of element `i` (row-major over `d`) of view `v`.
__device__ __forceinline__ u64 at(const View& v, const Dims& d, u32 i) {
  if (v.contiguous) return v.offset + i;
  u64 off = v.offset;
#pragma unroll
  for (int k = RWO_MAX_DIMS - 1; k >= 0; --k) {
    if (k < (int)d.rank) {
      u32 dk = (u32)d.d[k];
      u32 q = i / dk;
      off += (u64)(i - q * dk) * v.s[k];
      i = q;
    }
  }
  return off;
}

// Calls `body(i)` for every i < n (n < 2^32), spread over the grid (grid-stride loop).
template <class F>
__device__ __forceinline__ void for_each(u64 n, F body) {
  u64 stride = (u64)blockDim.x * gridDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) body((u32)i);
}

// ---- vectorized walks (the `_vec` kernels) ----
// A walk whose operands all have inner stride 0 or 1 (after the host merged dims) moves in
// chunks of W elements: 16 bytes of its widest operand. Each thread takes U chunks, loads them
// all, then computes and stores them, so several 16-byte loads per operand are in flight per
// thread; one block covers blockDim.x * U chunks and the grid covers the walk once (no
// grid-stride loop). The host checks alignment and sizes the grid from the same numbers
// (`VEC_BYTES`, `VEC_UNROLL`, `VEC_MAX_RANK` and `vec_path` in src/native/kernel.rs).
#define RWO_VEC_BYTES 16
#define RWO_VEC_UNROLL 2

// W elements of T, aligned to their size: one load or store instruction of 2 to 16 bytes.
template <class T, int W>
struct alignas(sizeof(T) * W) Pack {
  T v[W];
};

// The largest element size among types: what sets W.
template <class T, class... R>
struct max_size {
  static constexpr int value = (int)sizeof(T) > max_size<R...>::value ? (int)sizeof(T) : max_size<R...>::value;
};
template <class T>
struct max_size<T> {
  static constexpr int value = (int)sizeof(T);
};

// Vectorized walks have rank 1 to 3 (the host sends no other): the inner dim, walked in chunks,
// and up to two outer dims, whose elements are the walk's rows. Row `row` is the outer index
// (i0, i1) = (row / d1, row % d1) at rank 3, (0, row) at rank 2, (0, 0) at rank 1, and each
// operand's row starts at offset + i0 * sa + i1 * sb with (sa, sb) its outer strides (0 where
// the dim is absent). Fields are picked with constant indices so that the parameter structs are
// never indexed at run time (that would copy them to local memory).
#define RWO_VEC_MAX_RANK 3
struct VecRows {
  u32 per_row;  // chunks per row (rank > 1)
  u32 d1;       // the middle dim at rank 3
  u32 rank;
  __device__ __forceinline__ VecRows(const Dims& d, int w)
      : per_row((u32)((d.rank == 3 ? d.d[2] : d.rank == 2 ? d.d[1] : d.d[0]) / w)),
        d1((u32)d.d[1]),
        rank((u32)d.rank) {}
  // Chunk `c` as the outer index (i0, i1) of its row and its first column.
  __device__ __forceinline__ void locate(u32 c, u32& i0, u32& i1, u32& col, int w) const {
    u32 row = rank > 1 ? c / per_row : 0u;
    col = (c - row * per_row) * w;
    i0 = rank == 3 ? row / d1 : 0u;
    i1 = row - i0 * d1;
  }
};
__device__ __forceinline__ u64 inner_stride(const View& v, const Dims& d) {
  return d.rank == 3 ? v.s[2] : d.rank == 2 ? v.s[1] : v.s[0];
}
__device__ __forceinline__ u64 outer_a(const View& v, const Dims& d) { return d.rank == 3 ? v.s[0] : 0ull; }
__device__ __forceinline__ u64 outer_b(const View& v, const Dims& d) {
  return d.rank == 3 ? v.s[1] : d.rank == 2 ? v.s[0] : 0ull;
}

// One input of a vectorized walk: U chunks loaded whole (inner stride 1) or as one element
// repeated (inner stride 0, a broadcast along the inner dim).
template <class T, int W, int U>
struct VecIn {
  const T* p;  // the view's first element
  u64 sa, sb;
  bool bcast;
  Pack<T, W> buf[U];
  __device__ __forceinline__ VecIn(const T* p_, const View& v, const Dims& d)
      : p(p_ + v.offset), sa(outer_a(v, d)), sb(outer_b(v, d)), bcast(inner_stride(v, d) == 0) {}
  __device__ __forceinline__ void load(int k, u32 i0, u32 i1, u32 col) {
    const T* q = p + (u64)i0 * sa + (u64)i1 * sb;
    if (bcast) {
      T x = *q;
#pragma unroll
      for (int w = 0; w < W; ++w) buf[k].v[w] = x;
    } else {
      buf[k] = *reinterpret_cast<const Pack<T, W>*>(q + col);
    }
  }
  // Element `e` of a rank-1 walk (the tail past the last whole chunk).
  __device__ __forceinline__ T at(u32 e) const { return p[bcast ? 0u : e]; }
};

// The output of a vectorized walk: contiguous from `p` (`v` null), or a view of inner stride 1.
template <class T, int W>
struct VecOut {
  typedef T type;
  T* p;
  u64 sa, sb;
  bool dense;
  __device__ __forceinline__ VecOut(T* p_, const View* v, const Dims& d)
      : p(v ? p_ + v->offset : p_), sa(v ? outer_a(*v, d) : 0), sb(v ? outer_b(*v, d) : 0), dense(!v) {}
  __device__ __forceinline__ void store(u32 c, u32 i0, u32 i1, u32 col, const Pack<T, W>& r) const {
    u64 at = dense ? (u64)c * W : (u64)i0 * sa + (u64)i1 * sb + col;
    *reinterpret_cast<Pack<T, W>*>(p + at) = r;
  }
  __device__ __forceinline__ void store_at(u32 e, T x) const { p[e] = x; }
};

// out[i] = f(in[i]...) over the walk `d`, in chunks of W elements, U per thread (see above).
// Rank 1 walks may end in a partial chunk, done element by element by the grid's first thread;
// the host sends rank > 1 walks only when the inner dim is whole chunks.
template <int W, int U, class Out, class F, class... In>
__device__ __forceinline__ void vec_walk(const Dims& d, const Out& out, F f, In&&... in) {
  const u32 n = (u32)d.n;
  const u32 full = n / W;
  const VecRows rows(d, W);
  const u32 first = blockIdx.x * (blockDim.x * U) + threadIdx.x;
#pragma unroll
  for (int k = 0; k < U; ++k) {
    u32 c = first + k * blockDim.x, i0, i1, col;
    if (c < full) {
      rows.locate(c, i0, i1, col, W);
      (in.load(k, i0, i1, col), ...);
    }
  }
#pragma unroll
  for (int k = 0; k < U; ++k) {
    u32 c = first + k * blockDim.x, i0, i1, col;
    if (c < full) {
      rows.locate(c, i0, i1, col, W);
      Pack<typename Out::type, W> r;
#pragma unroll
      for (int w = 0; w < W; ++w) r.v[w] = f(in.buf[k].v[w]...);
      out.store(c, i0, i1, col, r);
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    for (u32 e = full * W; e < n; ++e) out.store_at(e, f(in.at(e)...));
  }
}

// An input operand as the kernels get it: storage and view.
template <class T>
struct Src {
  const T* p;
  const View& v;
};

// y[i] = f(x[i]...) for a contiguous output `y`, W set by the widest of Y and the inputs; U
// chunks a thread (a fused program takes one: its body is unrolled over every element).
template <int U = RWO_VEC_UNROLL, class Y, class F, class... X>
__device__ __forceinline__ void map_vec(const Dims& d, Y* y, F f, Src<X>... xs) {
  constexpr int W = RWO_VEC_BYTES / max_size<Y, X...>::value;
  vec_walk<W, U>(d, VecOut<Y, W>(y, nullptr, d), f, VecIn<X, W, U>(xs.p, xs.v, d)...);
}

// ---- tiled walks (the `_tiled` kernels) ----
// A walk of rank 2 or 3 ([batch,] rows, cols) where some input is stored transposed to the
// output (its stride along rows below its stride along cols): each block takes a 32x32 tile
// of one batch with RWO_TILE x RWO_TILE_ROWS threads (`TILE_THREADS` in src/native/kernel.rs),
// 8 elements per thread per input, all loaded before any is used. Such inputs are staged through
// shared memory, read along their own contiguous dim; the others are read directly, and the
// output is written along its rows, so every global access is coalesced.
#define RWO_TILE 32
#define RWO_TILE_ROWS 4

// The tile of block `blockIdx.x` and what each operand needs: rows R, cols C, the batch's
// element offset of the output, and per thread its column lane `tx` and row lane `ty`.
struct Tile {
  u32 rows, cols, r0, c0, tx, ty, batch;
  __device__ __forceinline__ explicit Tile(const Dims& d) {
    bool b3 = d.rank == 3;
    rows = (u32)(b3 ? d.d[1] : d.d[0]);
    cols = (u32)(b3 ? d.d[2] : d.d[1]);
    u32 tc = (cols + RWO_TILE - 1) / RWO_TILE;
    u32 per_batch = ((rows + RWO_TILE - 1) / RWO_TILE) * tc;
    batch = blockIdx.x / per_batch;
    u32 t = blockIdx.x - batch * per_batch;
    r0 = (t / tc) * RWO_TILE;
    c0 = (t - (t / tc) * tc) * RWO_TILE;
    tx = threadIdx.x % RWO_TILE;
    ty = threadIdx.x / RWO_TILE;
  }
  // Whether element (r0 + r, c0 + c) of the tile lies in the walk.
  __device__ __forceinline__ bool in(u32 r, u32 c) const { return r0 + r < rows && c0 + c < cols; }
  // Its index in a contiguous output.
  __device__ __forceinline__ u64 out(u32 r, u32 c) const {
    return ((u64)batch * rows + (r0 + r)) * cols + (c0 + c);
  }
};

// One input of a tiled walk: the RWO_TILE / RWO_TILE_ROWS elements this thread uses, read
// directly, or staged through `tile` (shared memory) when the input is stored transposed.
template <class T>
struct TileIn {
  static constexpr int N = RWO_TILE / RWO_TILE_ROWS;
  const T* p;
  T (*tile)[RWO_TILE + 1];
  u64 base, sr, sc;
  bool staged;
  T vals[N];
  __device__ __forceinline__ TileIn(const T* p_, const View& v, const Dims& d, const Tile& t,
                                    T (*tile_)[RWO_TILE + 1])
      : p(p_), tile(tile_) {
    bool b3 = d.rank == 3;
    sr = b3 ? v.s[1] : v.s[0];
    sc = b3 ? v.s[2] : v.s[1];
    base = v.offset + (b3 ? (u64)t.batch * v.s[0] : 0ull);
    staged = sc > 1 && sr < sc;
  }
  // Staged: the thread reads down a column of the tile (along the input's rows), `ty` picking
  // the column; direct: along a row of it. All loads are issued before any value is used.
  __device__ __forceinline__ void load(const Tile& t) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      u32 j = t.ty + i * RWO_TILE_ROWS;
      u32 r = staged ? t.tx : j, c = staged ? j : t.tx;
      if (t.in(r, c)) vals[i] = p[base + (u64)(t.r0 + r) * sr + (u64)(t.c0 + c) * sc];
    }
  }
  __device__ __forceinline__ void stage(const Tile& t) {
    if (!staged) return;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      u32 j = t.ty + i * RWO_TILE_ROWS;
      if (t.in(t.tx, j)) tile[j][t.tx] = vals[i];
    }
  }
  // After the block's barrier: `vals[i]` becomes element (r0 + ty + i * RWO_TILE_ROWS, c0 + tx)
  // (values, not a select between a shared and a private address, which would keep `vals`
  // in memory).
  __device__ __forceinline__ void fetch(const Tile& t) {
    if (!staged) return;
#pragma unroll
    for (int i = 0; i < N; ++i) vals[i] = tile[t.tx][t.ty + i * RWO_TILE_ROWS];
  }
};

// y[i] = f(x[i]...) for a contiguous output `y` over a tiled walk; every thread of the block
// reaches the barrier.
template <class Y, class F, class... X>
__device__ __forceinline__ void map_tiled(const Tile& t, Y* y, F f, TileIn<X>&&... in) {
  (in.load(t), ...);
  (in.stage(t), ...);
  __syncthreads();
  (in.fetch(t), ...);
#pragma unroll
  for (int i = 0; i < RWO_TILE / RWO_TILE_ROWS; ++i) {
    u32 j = t.ty + i * RWO_TILE_ROWS;
    if (t.in(j, t.tx)) y[t.out(j, t.tx)] = f(in.vals[i]...);
  }
}

// bf16 <-> f32: round to nearest even; NaN stays a (quiet) NaN.
__device__ __forceinline__ float bf16_to_f32(bf16 v) {
  return __uint_as_float(((u32)v.bits) << 16);
}
__device__ __forceinline__ bf16 f32_to_bf16(float f) {
  u32 x = __float_as_uint(f);
  bf16 r;
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    r.bits = (unsigned short)((x >> 16) | 0x0040u);
  } else {
    r.bits = (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  }
  return r;
}

// Per element type: the compute type `C` (f32 for the halves, u32 for u8, the type itself
// otherwise), `load` into it and `store` (rounding once; integers wrap).
template <class T>
struct num;
template <>
struct num<f16> {
  typedef float C;
  static __device__ __forceinline__ C load(f16 v) { return f16_to_f32(v); }
  static __device__ __forceinline__ f16 store(C v) { return f32_to_f16(v); }
};
template <>
struct num<bf16> {
  typedef float C;
  static __device__ __forceinline__ C load(bf16 v) { return bf16_to_f32(v); }
  static __device__ __forceinline__ bf16 store(C v) { return f32_to_bf16(v); }
};
template <>
struct num<f32> {
  typedef float C;
  static __device__ __forceinline__ C load(f32 v) { return v; }
  static __device__ __forceinline__ f32 store(C v) { return v; }
};
template <>
struct num<f64> {
  typedef double C;
  static __device__ __forceinline__ C load(f64 v) { return v; }
  static __device__ __forceinline__ f64 store(C v) { return v; }
};
template <>
struct num<u8> {
  typedef u32 C;
  static __device__ __forceinline__ C load(u8 v) { return v; }
  static __device__ __forceinline__ u8 store(C v) { return (u8)v; }
};
template <>
struct num<u32> {
  typedef u32 C;
  static __device__ __forceinline__ C load(u32 v) { return v; }
  static __device__ __forceinline__ u32 store(C v) { return v; }
};
template <>
struct num<i64> {
  typedef i64 C;
  static __device__ __forceinline__ C load(i64 v) { return v; }
  static __device__ __forceinline__ i64 store(C v) { return v; }
};

// Conversions with Rust's `as` rules (src/dtype.rs): from an integer (as i64) they wrap or
// round to nearest; from a float (as f64, exact) they truncate and saturate (NaN gives 0) or
// round to nearest. The halves round through f32, as the cpu reference does on x86.
template <class To>
struct conv;
template <>
struct conv<u8> {
  static __device__ __forceinline__ u8 from(i64 v) { return (u8)(u64)v; }
  static __device__ __forceinline__ u8 from(double v) {
    return v != v || v <= 0.0 ? (u8)0 : v >= 255.0 ? (u8)255 : (u8)(u32)v;
  }
};
template <>
struct conv<u32> {
  static __device__ __forceinline__ u32 from(i64 v) { return (u32)(u64)v; }
  static __device__ __forceinline__ u32 from(double v) {
    return v != v || v <= 0.0 ? 0u : v >= 4294967295.0 ? 0xffffffffu : (u32)v;
  }
};
template <>
struct conv<i64> {
  static __device__ __forceinline__ i64 from(i64 v) { return v; }
  static __device__ __forceinline__ i64 from(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return 0x7fffffffffffffffll;
    if (v <= -9223372036854775808.0) return (i64)0x8000000000000000ull;
    return (i64)v;
  }
};
template <>
struct conv<f16> {
  static __device__ __forceinline__ f16 from(i64 v) { return f32_to_f16((float)(double)v); }
  static __device__ __forceinline__ f16 from(double v) { return f32_to_f16((float)v); }
};
template <>
struct conv<bf16> {
  static __device__ __forceinline__ bf16 from(i64 v) { return f32_to_bf16((float)(double)v); }
  static __device__ __forceinline__ bf16 from(double v) { return f32_to_bf16((float)v); }
};
template <>
struct conv<f32> {
  static __device__ __forceinline__ f32 from(i64 v) { return (float)v; }
  static __device__ __forceinline__ f32 from(double v) { return (float)v; }
};
template <>
struct conv<f64> {
  static __device__ __forceinline__ f64 from(i64 v) { return (double)v; }
  static __device__ __forceinline__ f64 from(double v) { return v; }
};

// A value widened to what `conv` takes: i64 for integers, f64 for floats (both exact).
__device__ __forceinline__ i64 wide(u8 v) { return (i64)v; }
__device__ __forceinline__ i64 wide(u32 v) { return (i64)v; }
__device__ __forceinline__ i64 wide(i64 v) { return v; }
__device__ __forceinline__ double wide(f16 v) { return (double)f16_to_f32(v); }
__device__ __forceinline__ double wide(bf16 v) { return (double)bf16_to_f32(v); }
__device__ __forceinline__ double wide(f32 v) { return (double)v; }
__device__ __forceinline__ double wide(f64 v) { return v; }

// Overloads for the compute types, so that one template serves f32 and f64 (and integers).
__device__ __forceinline__ bool is_nan(float v) { return v != v; }
__device__ __forceinline__ bool is_nan(double v) { return v != v; }
__device__ __forceinline__ bool is_nan(u32) { return false; }
__device__ __forceinline__ bool is_nan(i64) { return false; }
__device__ __forceinline__ float neg_inf(float) { return __uint_as_float(0xff800000u); }
__device__ __forceinline__ double neg_inf(double) { return __longlong_as_double((i64)0xfff0000000000000ull); }

// The larger of two values; a NaN wins (and stays).
template <class C>
__device__ __forceinline__ C max_nan(C a, C b) {
  return is_nan(a) ? a : (is_nan(b) || b > a ? b : a);
}

// ---- the primitives of the expression table (src/expr/mod.rs `Prim` states their numerics),
// one overload per compute type they take; src/native/render.rs writes the calls ----

__device__ __forceinline__ float rwo_neg(float a) { return -a; }
__device__ __forceinline__ double rwo_neg(double a) { return -a; }
__device__ __forceinline__ i64 rwo_neg(i64 a) { return (i64)(0ull - (u64)a); }
__device__ __forceinline__ float rwo_abs(float a) { return fabsf(a); }
__device__ __forceinline__ double rwo_abs(double a) { return fabs(a); }
__device__ __forceinline__ i64 rwo_abs(i64 a) { return a < 0 ? rwo_neg(a) : a; }
// Integers wrap: u32 natively, i64 through u64.
template <class C>
__device__ __forceinline__ C rwo_add(C a, C b) { return a + b; }
template <class C>
__device__ __forceinline__ C rwo_sub(C a, C b) { return a - b; }
template <class C>
__device__ __forceinline__ C rwo_mul(C a, C b) { return a * b; }
__device__ __forceinline__ i64 rwo_add(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
__device__ __forceinline__ i64 rwo_sub(i64 a, i64 b) { return (i64)((u64)a - (u64)b); }
__device__ __forceinline__ i64 rwo_mul(i64 a, i64 b) { return (i64)((u64)a * (u64)b); }
// Integer division truncates; by zero gives 0; i64::MIN / -1 wraps.
__device__ __forceinline__ float rwo_div(float a, float b) { return a / b; }
__device__ __forceinline__ double rwo_div(double a, double b) { return a / b; }
__device__ __forceinline__ u32 rwo_div(u32 a, u32 b) { return b == 0u ? 0u : a / b; }
__device__ __forceinline__ i64 rwo_div(i64 a, i64 b) { return b == 0 ? 0 : (b == -1 ? rwo_neg(a) : a / b); }
// NaN in either operand gives NaN (the first one's when both are).
template <class C>
__device__ __forceinline__ C rwo_max(C a, C b) { return is_nan(a) ? a : (is_nan(b) ? b : (a >= b ? a : b)); }
template <class C>
__device__ __forceinline__ C rwo_min(C a, C b) { return is_nan(a) ? a : (is_nan(b) ? b : (a <= b ? a : b)); }
template <class C>
__device__ __forceinline__ bool rwo_lt(C a, C b) { return a < b; }
template <class C>
__device__ __forceinline__ bool rwo_le(C a, C b) { return a <= b; }
template <class C>
__device__ __forceinline__ bool rwo_eq(C a, C b) { return a == b; }
__device__ __forceinline__ float rwo_sign(float v) { return is_nan(v) || v == 0.0f ? v : (v > 0.0f ? 1.0f : -1.0f); }
__device__ __forceinline__ double rwo_sign(double v) { return is_nan(v) || v == 0.0 ? v : (v > 0.0 ? 1.0 : -1.0); }
__device__ __forceinline__ u32 rwo_sign(u32 v) { return v != 0u ? 1u : 0u; }
__device__ __forceinline__ i64 rwo_sign(i64 v) { return v > 0 ? 1 : (v < 0 ? -1 : 0); }
// The vendors' math functions (never the fast intrinsics); rint rounds half to even.
#define RWO_FLOAT_PRIM(name, f32, f64)                                               \
  __device__ __forceinline__ float rwo_##name(float v) { return f32(v); }         \
  __device__ __forceinline__ double rwo_##name(double v) { return f64(v); }
RWO_FLOAT_PRIM(exp, expf, exp)
RWO_FLOAT_PRIM(expm1, expm1f, expm1)
RWO_FLOAT_PRIM(log, logf, log)
RWO_FLOAT_PRIM(sin, sinf, sin)
RWO_FLOAT_PRIM(cos, cosf, cos)
RWO_FLOAT_PRIM(tanh, tanhf, tanh)
RWO_FLOAT_PRIM(erf, erff, erf)
RWO_FLOAT_PRIM(sqrt, sqrtf, sqrt)
RWO_FLOAT_PRIM(ceil, ceilf, ceil)
RWO_FLOAT_PRIM(floor, floorf, floor)
RWO_FLOAT_PRIM(round, rintf, rint)
__device__ __forceinline__ float rwo_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double rwo_pow(double a, double b) { return pow(a, b); }

// Warp shuffles over the whole warp (`warpSize` lanes: 32 on NVIDIA, 32 or 64 on AMD).
#if defined(__CUDACC_RTC__)
template <class T>
__device__ __forceinline__ T shfl_down(T v, int delta) {
  return __shfl_down_sync(0xffffffffu, v, delta);
}
template <class T>
__device__ __forceinline__ T shfl_xor(T v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
#else
template <class T>
__device__ __forceinline__ T shfl_down(T v, int delta) {
  return __shfl_down(v, delta);
}
template <class T>
__device__ __forceinline__ T shfl_xor(T v, int mask) {
  return __shfl_xor(v, mask);
}
#endif

// Where the last block of a group finds itself on a counter (a product split along K, a decode
// step's key ranges): orders a block's writes of its results before its count, and the count
// before the last block's reads (an acquire-release fence at device scope; NVIDIA's
// __threadfence is sequentially consistent, and slower).
__device__ __forceinline__ void count_fence() {
#if defined(__CUDACC_RTC__)
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
#else
  __threadfence();
#endif
}

// Atomics, only those HIP and CUDA both have: 32-bit compare-and-swap, adds of f32, f64
// (CUDA sm_60+), u32 and u64 (as unsigned long long; an i64 add is the same bits in two's
// complement, so it wraps as the crate's integers do). No 8- or 16-bit atomics exist on both:
// those go through `atomic_cas_u32` on the aligned word that holds them.
__device__ __forceinline__ u32 atomic_cas_u32(u32* p, u32 expected, u32 desired) {
  return atomicCAS(p, expected, desired);
}
__device__ __forceinline__ void atomic_add(f32* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(f64* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(u32* p, u32 v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(u64* p, u64 v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(i64* p, i64 v) { atomicAdd((u64*)p, (u64)v); }

// `M(a, x)` for each `x` of the list: one line instantiates an op for several dtypes.
#define RWO_EXPAND(x) x
#define RWO_EACH_1(M, a, x) M(a, x)
#define RWO_EACH_2(M, a, x, ...) M(a, x) RWO_EXPAND(RWO_EACH_1(M, a, __VA_ARGS__))
#define RWO_EACH_3(M, a, x, ...) M(a, x) RWO_EXPAND(RWO_EACH_2(M, a, __VA_ARGS__))
#define RWO_EACH_4(M, a, x, ...) M(a, x) RWO_EXPAND(RWO_EACH_3(M, a, __VA_ARGS__))
#define RWO_EACH_5(M, a, x, ...) M(a, x) RWO_EXPAND(RWO_EACH_4(M, a, __VA_ARGS__))
#define RWO_EACH_6(M, a, x, ...) M(a, x) RWO_EXPAND(RWO_EACH_5(M, a, __VA_ARGS__))
#define RWO_EACH_7(M, a, x, ...) M(a, x) RWO_EXPAND(RWO_EACH_6(M, a, __VA_ARGS__))
#define RWO_PICK(_1, _2, _3, _4, _5, _6, _7, N, ...) N
#define RWO_EACH(M, a, ...)                                                                      \
  RWO_EXPAND(RWO_PICK(__VA_ARGS__, RWO_EACH_7, RWO_EACH_6, RWO_EACH_5, RWO_EACH_4, RWO_EACH_3, \
                      RWO_EACH_2, RWO_EACH_1, )(M, a, __VA_ARGS__))

// Entry points are C symbols so both runtimes find them by the name `spec::kernel_name` gives.
#define RWO_KERNEL extern "C" __global__ void

#if defined(__CUDACC_RTC__) && __CUDA_ARCH__ >= 800
// Tensor cores (NVIDIA sm_80 on; AMD's matrix cores take other instructions).
template <class T>
struct is_f16 {
  static constexpr bool value = false;
};
template <>
struct is_f16<f16> {
  static constexpr bool value = true;
};

// c += a b for a 16x16 tile of a (row-major fragments) and a 16x8 tile of b (column-major).
template <class T>
__device__ __forceinline__ void mma16816(float* c, const u32* a, const u32* b) {
  if constexpr (is_f16<T>::value)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif
