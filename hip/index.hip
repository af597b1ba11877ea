// Indexing by integer ids (src/spec/index.rs): index_select, gather, scatter, scatter_add and
// index_add over strided operands (see common.h). Ids are u8, u32 or i64, read through their
// byte width (a launch argument, the same for every thread: a uniform branch), so each op has
// one kernel per value dtype, named as the spec names it.
//
// A bad id (negative, or >= size) is never followed. The first one is recorded in the op's own
// flag, u64 [code, index, size, unused] with code = 1 + the op's position in IndexOp::ALL, set
// by compare-and-swap so that one writer wins; the flag travels with the op's output, and its
// readbacks report it as IndexOutOfRange (src/tensor/status.rs).
#include "common.h"

// Id `j` of an id buffer whose elements are `width` bytes (1: u8, 4: u32, 8: i64).
__device__ __forceinline__ i64 load_id(const void* ids, u32 width, u64 j) {
  if (width == 8) return ((const i64*)ids)[j];
  if (width == 4) return (i64)((const u32*)ids)[j];
  return (i64)((const u8*)ids)[j];
}

// Whether `id` lies in 0..size; records it in `flag` when it does not.
__device__ __forceinline__ bool id_ok(i64 id, u64 size, u64* flag, u32 code) {
  if (id >= 0 && (u64)id < size) return true;
  // The code is the low half of flag[0]: both vendors' GPUs are little-endian.
  if (atomic_cas_u32((u32*)flag, 0u, code) == 0u) {
    flag[1] = (u64)id;
    flag[2] = size;
  }
  return false;
}

// a / b, in 32-bit arithmetic when both fit (64-bit division is several times slower).
__device__ __forceinline__ u64 div_u64(u64 a, u64 b) {
  return ((a | b) >> 32) == 0 ? (u64)((u32)a / (u32)b) : a / b;
}

// Flags the bad ids of a view of ids, for an op whose main pass visits none of them (an empty
// output with ids).
RWO_KERNEL index_check(Dims d, View iv, const void* ids, u32 width, u64 size, u64* flag, u32 code) {
  for_each(d.n, [&](u32 i) { (void)id_ok(load_id(ids, width, at(iv, d, i)), size, flag, code); });
}

// ---- index_select and gather: y[i] = x[xv(i) + ids[iv(i)] * stride] ----
// over the walk `d` of the output; `xv` walks x with the coordinate along dim held at 0, `iv`
// walks the ids over the output (index_select's 1-D ids spread along dim, stride 0 elsewhere;
// gather's have the output's shape). A bad id leaves its element unwritten (the op fails).

template <class T>
__device__ __forceinline__ void pick(const Dims& d, const View& xv, const View& iv, const T* x, const void* ids,
                                     T* y, u32 width, u64 size, u64 stride, u64* flag, u32 code) {
  for_each(d.n, [&](u32 i) {
    i64 id = load_id(ids, width, at(iv, d, i));
    if (id_ok(id, size, flag, code)) y[i] = x[at(xv, d, i) + (u64)id * stride];
  });
}
#define RWO_PICK_KERNEL(op, T)                                                                 \
  RWO_KERNEL op##_##T(Dims d, View xv, View iv, const T* x, const void* ids, T* y, u32 width,  \
                      u64 size, u64 stride, u64* flag, u32 code) {                             \
    pick<T>(d, xv, iv, x, ids, y, width, size, stride, flag, code);                            \
  }
#define PICK(op, ...) RWO_EACH(RWO_PICK_KERNEL, op, __VA_ARGS__)

PICK(index_select, u8, u32, i64, f16, bf16, f32, f64)
PICK(gather, u8, u32, i64, f16, bf16, f32, f64)

// ---- index_select of whole rows ----
// When x's dims after dim are contiguous, output row (a, r) (a over the leading dims, walked in
// x by `lv` over `ld`; r over the n ids) is the run of `row` chunks of x from
// lv(a) + ids[r] * stride, everything counted in chunks V of N bytes (the host picks the widest
// N that every row start, stride and length allows, up to 16). A group of 2^tpr_log2 threads
// moves one piece of a row, 4 chunks a thread with every load issued before the stores; `pieces`
// pieces make a row; groups take (row, piece) items in a grid-stride loop. y is contiguous.

template <int N>
struct chunk_of;
template <>
struct chunk_of<1> {
  typedef u8 T;
};
template <>
struct chunk_of<2> {
  typedef unsigned short T;
};
template <>
struct chunk_of<4> {
  typedef u32 T;
};
template <>
struct chunk_of<8> {
  typedef uint2 T;
};
template <>
struct chunk_of<16> {
  typedef uint4 T;
};

template <class V>
__device__ __forceinline__ void rows(const Dims& ld, const View& lv, const V* __restrict__ x, const void* ids,
                                     V* __restrict__ y, u32 width, u64 ids_offset, u64 ids_stride, u64 n, u64 size,
                                     u64 stride, u64 row, u64 pieces, u32 tpr_log2, u64* flag, u32 code) {
  const u32 tpr = 1u << tpr_log2;
  const u32 lane = threadIdx.x & (tpr - 1u);
  const u64 per_block = blockDim.x >> tpr_log2;
  const u64 items = ld.n * n * pieces;
  for (u64 w = (u64)blockIdx.x * per_block + (threadIdx.x >> tpr_log2); w < items; w += gridDim.x * per_block) {
    const u64 out_row = div_u64(w, pieces);
    const u64 piece = w - out_row * pieces;
    const u64 a = div_u64(out_row, n);
    const u64 r = out_row - a * n;
    const i64 id = load_id(ids, width, ids_offset + r * ids_stride);
    if (!id_ok(id, size, flag, code)) continue;
    const V* src = x + at(lv, ld, (u32)a) + (u64)id * stride;
    V* dst = y + out_row * row;
    const u64 c0 = piece * 4u * tpr + lane;
    V v[4];
#pragma unroll
    for (u32 u = 0; u < 4; ++u) {
      const u64 c = c0 + u * tpr;
      if (c < row) v[u] = src[c];
    }
#pragma unroll
    for (u32 u = 0; u < 4; ++u) {
      const u64 c = c0 + u * tpr;
      if (c < row) dst[c] = v[u];
    }
  }
}
#define RWO_ROWS(op, N)                                                                           \
  RWO_KERNEL op##_##N(Dims ld, View lv, const chunk_of<N>::T* x, const void* ids,                 \
                      chunk_of<N>::T* y, u32 width, u64 ids_offset, u64 ids_stride, u64 n,        \
                      u64 size, u64 stride, u64 row, u64 pieces, u32 tpr_log2, u64* flag,         \
                      u32 code) {                                                                 \
    rows<chunk_of<N>::T>(ld, lv, x, ids, y, width, ids_offset, ids_stride, n, size, stride, row,  \
                         pieces, tpr_log2, flag, code);                                           \
  }
#define ROWS(op, ...) RWO_EACH(RWO_ROWS, op, __VA_ARGS__)

ROWS(index_select_rows, 1, 2, 4, 8, 16)

// ---- scatter, scatter_add, index_add: y[yv(i) + ids[iv(i)] * stride] op= src[sv(i)] ----
// over the walk `d` of src; y is a contiguous copy of dst made before (the host's copy), `yv`
// walks it with the coordinate along dim held at 0. Set stores (repeated ids leave one of the
// values: any store of up to 8 aligned bytes is whole on these GPUs); add is atomic: native adds
// for f32, f64, u32 and i64, and for the 1- and 2-byte dtypes a compare-and-swap loop on the
// aligned 32-bit word holding the element (y's allocation is a multiple of 4 bytes).

// The raw bits of the narrow dtypes, as the low bits of a word, and back.
__device__ __forceinline__ u32 narrow_bits(u8 v) { return v; }
__device__ __forceinline__ u32 narrow_bits(f16 v) { return v.bits; }
__device__ __forceinline__ u32 narrow_bits(bf16 v) { return v.bits; }
template <class T>
__device__ __forceinline__ T narrow_from(u32 b);
template <>
__device__ __forceinline__ u8 narrow_from<u8>(u32 b) {
  return (u8)b;
}
template <>
__device__ __forceinline__ f16 narrow_from<f16>(u32 b) {
  f16 r;
  r.bits = (unsigned short)b;
  return r;
}
template <>
__device__ __forceinline__ bf16 narrow_from<bf16>(u32 b) {
  bf16 r;
  r.bits = (unsigned short)b;
  return r;
}

// *p += v for a 1- or 2-byte T, computed as the dtype's arithmetic does (u8 wraps; halves add
// in f32 and round once).
template <class T>
__device__ __forceinline__ void narrow_add(T* p, T v) {
  const u64 addr = (u64)p;
  u32* word = (u32*)(addr & ~(u64)3);
  const u32 shift = (u32)(addr & 3) * 8u;
  const u32 mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
  const typename num<T>::C add = num<T>::load(v);
  u32 old = *word;
  for (;;) {
    const T cur = narrow_from<T>((old & mask) >> shift);
    const u32 sum = narrow_bits(num<T>::store(num<T>::load(cur) + add));
    const u32 seen = atomic_cas_u32(word, old, (old & ~mask) | ((sum << shift) & mask));
    if (seen == old) break;
    old = seen;
  }
}

struct set_upd {
  template <class T>
  static __device__ __forceinline__ void apply(T* p, T v) {
    *p = v;
  }
};
struct add_upd {
  static __device__ __forceinline__ void apply(f32* p, f32 v) { atomic_add(p, v); }
  static __device__ __forceinline__ void apply(f64* p, f64 v) { atomic_add(p, v); }
  static __device__ __forceinline__ void apply(u32* p, u32 v) { atomic_add(p, v); }
  static __device__ __forceinline__ void apply(i64* p, i64 v) { atomic_add(p, v); }
  static __device__ __forceinline__ void apply(u8* p, u8 v) { narrow_add(p, v); }
  static __device__ __forceinline__ void apply(f16* p, f16 v) { narrow_add(p, v); }
  static __device__ __forceinline__ void apply(bf16* p, bf16 v) { narrow_add(p, v); }
};

template <class T, class Upd>
__device__ __forceinline__ void put(const Dims& d, const View& iv, const View& sv, const View& yv, const void* ids,
                                    const T* src, T* y, u32 width, u64 size, u64 stride, u64* flag, u32 code) {
  for_each(d.n, [&](u32 i) {
    i64 id = load_id(ids, width, at(iv, d, i));
    if (id_ok(id, size, flag, code)) Upd::apply(y + at(yv, d, i) + (u64)id * stride, src[at(sv, d, i)]);
  });
}
#define RWO_PUT(op, T, Upd)                                                                    \
  RWO_KERNEL op##_##T(Dims d, View iv, View sv, View yv, const void* ids, const T* src, T* y,  \
                      u32 width, u64 size, u64 stride, u64* flag, u32 code) {                  \
    put<T, Upd>(d, iv, sv, yv, ids, src, y, width, size, stride, flag, code);                  \
  }
#define RWO_PUT_SET(op, T) RWO_PUT(op, T, set_upd)
#define RWO_PUT_ADD(op, T) RWO_PUT(op, T, add_upd)
#define PUT_SET(op, ...) RWO_EACH(RWO_PUT_SET, op, __VA_ARGS__)
#define PUT_ADD(op, ...) RWO_EACH(RWO_PUT_ADD, op, __VA_ARGS__)

PUT_SET(scatter, u8, u32, i64, f16, bf16, f32, f64)
PUT_ADD(scatter_add, u8, u32, i64, f16, bf16, f32, f64)
PUT_ADD(index_add, u8, u32, i64, f16, bf16, f32, f64)
