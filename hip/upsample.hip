// Nearest-neighbour resizing (src/spec/upsample.rs): output cell `o` of a dim of input size
// `in` and output size `out` copies input cell floor(o * in / out), in exact integers.
//
// One kernel body for both ops: a 1-D resize is a 2-D one with one row. A launch covers
// `planes` whole (N, C) planes from plane `p0` of the contiguous output (the host keeps a
// launch under 2^32 elements); the input is any strided view. `{op}_{T}` takes one output cell
// per thread, `{op}_{T}_vec` 16 bytes of a row (rows of whole chunks): the index arithmetic,
// not memory, is what bounds this op, so it is done once per chunk and in 32 bits where the
// sizes allow.
#include "common.h"

// Where the input planes sit: offset and strides in elements, as `(N, C, H, W)`.
struct PlaneView {
  u64 offset;
  u64 channels;  // C: a plane index p is (p / C, p % C)
  u64 sn, sc, sh, sw;
};

// The source of output cell (plane p, row r, column c): exact floor(r * ih / oh) and
// floor(c * iw / ow), in 32 bits where the host says the products fit (`narrow`), else 64.
struct Source {
  u32 ih, iw, oh, ow;
  u32 narrow, unused;
  __device__ __forceinline__ u64 row(u32 r) const {
    return narrow ? (u64)(r * ih / oh) : (u64)r * ih / oh;
  }
  __device__ __forceinline__ u64 col(u32 c) const {
    return narrow ? (u64)(c * iw / ow) : (u64)c * iw / ow;
  }
};

// The storage offset of row r of plane p of the input.
__device__ __forceinline__ u64 plane_row(const PlaneView& v, const Source& s, u64 p, u32 r) {
  u64 n = s.narrow ? (u64)((u32)p / (u32)v.channels) : p / v.channels;
  return v.offset + n * v.sn + (p - n * v.channels) * v.sc + s.row(r) * v.sh;
}

// One thread per output cell.
template <class T>
__device__ __forceinline__ void upsample(u64 p0, u64 planes, Source s, PlaneView v, const T* x, T* y) {
  const u32 per_plane = s.oh * s.ow;
  for_each(planes * per_plane, [&](u32 i) {
    u32 q = i / per_plane, cell = i - q * per_plane;
    u32 r = cell / s.ow, c = cell - r * s.ow;
    y[i] = x[plane_row(v, s, p0 + q, r) + s.col(c) * v.sw];
  });
}

// W consecutive output cells of a row per thread (rows of whole 16-byte chunks), one store.
template <class T>
__device__ __forceinline__ void upsample_vec(u64 p0, u64 planes, Source s, PlaneView v, const T* x, T* y) {
  constexpr u32 W = RWO_VEC_BYTES / sizeof(T);
  const u32 per_row = s.ow / W, per_plane = s.oh * per_row;
  for_each(planes * per_plane, [&](u32 i) {
    u32 q = i / per_plane, rest = i - q * per_plane;
    u32 r = rest / per_row, c0 = (rest - r * per_row) * W;
    const u64 src = plane_row(v, s, p0 + q, r);
    Pack<T, W> out;
#pragma unroll
    for (u32 w = 0; w < W; ++w) out.v[w] = x[src + s.col(c0 + w) * v.sw];
    reinterpret_cast<Pack<T, W>*>(y)[i] = out;
  });
}

#define RWO_UPSAMPLE(op, T)                                                                     \
  RWO_KERNEL op##_##T(u64 p0, u64 planes, Source s, PlaneView v, const T* x, T* y) {            \
    upsample<T>(p0, planes, s, v, x, y);                                                        \
  }                                                                                             \
  RWO_KERNEL op##_##T##_vec(u64 p0, u64 planes, Source s, PlaneView v, const T* x, T* y) {      \
    upsample_vec<T>(p0, planes, s, v, x, y);                                                    \
  }
#define UPSAMPLE(op, ...) RWO_EACH(RWO_UPSAMPLE, op, __VA_ARGS__)

UPSAMPLE(upsample_nearest1d, u8, u32, i64, f16, bf16, f32, f64)
UPSAMPLE(upsample_nearest2d, u8, u32, i64, f16, bf16, f32, f64)
