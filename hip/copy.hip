// Copies and fills (src/spec/copy.rs): copy_strided (any view to contiguous), copy2d (a block
// of rows), fill (a value into any view) and arange. The host turns contiguous copies and
// byte-uniform fills into memcpy/memset and splits launches past 2^32 elements.
#include "common.h"

template <class T>
struct identity {
  __device__ T operator()(T v) const { return v; }
};

// y[dst_offset + i] = x[element i of the view]: any view; inner stride 0 or 1 (`_vec`, see
// common.h); stored transposed ([batch,] rows, cols with the rows' stride the smaller,
// `_tiled`).
template <class T>
__device__ __forceinline__ void copy_tiled(const Dims& d, const View& xv, const T* x, T* y) {
  __shared__ T tile[RWO_TILE][RWO_TILE + 1];
  Tile t(d);
  map_tiled(t, y, identity<T>(), TileIn<T>(x, xv, d, t, tile));
}
#define RWO_COPY_STRIDED(op, T)                                                            \
  RWO_KERNEL op##_##T(Dims d, View xv, const T* x, T* y, u64 dst_offset) {                 \
    for_each(d.n, [&](u32 i) { y[dst_offset + i] = x[at(xv, d, i)]; });                    \
  }                                                                                        \
  RWO_KERNEL op##_##T##_vec(Dims d, View xv, const T* x, T* y, u64 dst_offset) {           \
    map_vec(d, y + dst_offset, identity<T>(), Src<T>{x, xv});                              \
  }                                                                                        \
  RWO_KERNEL op##_##T##_tiled(Dims d, View xv, const T* x, T* y, u64 dst_offset) {         \
    copy_tiled(d, xv, x, y + dst_offset);                                                  \
  }

// `rows` rows of `cols` elements from `x + src_offset` (row stride `src_stride`) to
// `y + dst_offset` (row stride `dst_stride`); rows * cols < 2^32. `_vec`: the same block as a
// walk of [rows, cols] (views of inner stride 1 whose rows are whole aligned chunks, see
// common.h), as the host's `vec_path` checks.
#define RWO_COPY2D(op, T)                                                                  \
  RWO_KERNEL op##_##T(u64 rows, u64 cols, u64 src_stride, u64 dst_stride, u64 src_offset,  \
                      u64 dst_offset, const T* x, T* y) {                                  \
    u32 c = (u32)cols;                                                                     \
    for_each(rows * cols, [&](u32 i) {                                                     \
      u32 r = i / c;                                                                       \
      u32 k = i - r * c;                                                                   \
      y[dst_offset + r * dst_stride + k] = x[src_offset + r * src_stride + k];             \
    });                                                                                    \
  }                                                                                        \
  RWO_KERNEL op##_##T##_vec(Dims d, View xv, View yv, const T* x, T* y) {                  \
    constexpr int W = RWO_VEC_BYTES / (int)sizeof(T);                                      \
    constexpr int U = RWO_VEC_UNROLL;                                                      \
    vec_walk<W, U>(d, VecOut<T, W>(y, &yv, d), identity<T>(), VecIn<T, W, U>(x, xv, d));   \
  }

// Every element of the view of `y` set to `value`; `_vec` for views of inner stride 1 (whole
// chunks stored, see common.h).
template <class T>
__device__ __forceinline__ void fill_vec(const Dims& d, const View& yv, T* y, T value) {
  constexpr int W = RWO_VEC_BYTES / (int)sizeof(T);
  vec_walk<W, RWO_VEC_UNROLL>(d, VecOut<T, W>(y, &yv, d), [=]() { return value; });
}
#define RWO_FILL(op, T)                                                                    \
  RWO_KERNEL op##_##T(Dims d, View yv, T* y, T value) {                                    \
    for_each(d.n, [&](u32 i) { y[at(yv, d, i)] = value; });                                \
  }                                                                                        \
  RWO_KERNEL op##_##T##_vec(Dims d, View yv, T* y, T value) { fill_vec(d, yv, y, value); }

// y[i] = start + (base + i) * step: in f64 for floats (rounded once to the dtype), wrapping
// in i64 for integers. `base` is where this launch starts in the whole range.
template <class T>
__device__ __forceinline__ void arange_at(T* y, u64 n, u64 base, double start, double step) {
  for_each(n, [&](u32 i) { y[i] = conv<T>::from(start + (double)(base + i) * step); });
}
template <class T>
__device__ __forceinline__ void arange_at(T* y, u64 n, u64 base, i64 start, i64 step) {
  for_each(n, [&](u32 i) { y[i] = conv<T>::from((i64)((u64)start + (base + i) * (u64)step)); });
}
#define RWO_ARANGE_FLOAT(op, T)                                                            \
  RWO_KERNEL op##_##T(T* y, u64 n, u64 base, double start, double step) {                  \
    arange_at<T>(y, n, base, start, step);                                                 \
  }
#define RWO_ARANGE_INT(op, T)                                                              \
  RWO_KERNEL op##_##T(T* y, u64 n, u64 base, i64 start, i64 step) {                        \
    arange_at<T>(y, n, base, start, step);                                                 \
  }

#define COPY_STRIDED(op, ...) RWO_EACH(RWO_COPY_STRIDED, op, __VA_ARGS__)
#define COPY2D(op, ...) RWO_EACH(RWO_COPY2D, op, __VA_ARGS__)
#define FILL(op, ...) RWO_EACH(RWO_FILL, op, __VA_ARGS__)
#define ARANGE_FLOAT(op, ...) RWO_EACH(RWO_ARANGE_FLOAT, op, __VA_ARGS__)
#define ARANGE_INT(op, ...) RWO_EACH(RWO_ARANGE_INT, op, __VA_ARGS__)

COPY_STRIDED(copy_strided, u8, u32, i64, f16, bf16, f32, f64)
COPY2D(copy2d, u8, u32, i64, f16, bf16, f32, f64)
FILL(fill, u8, u32, i64, f16, bf16, f32, f64)
ARANGE_INT(arange, u8, u32, i64)
ARANGE_FLOAT(arange, f16, bf16, f32, f64)
