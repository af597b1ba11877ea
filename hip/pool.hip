// 2-D pooling (src/spec/pool.rs), PyTorch's windows: window `o` of a dim starts at `o s - p`;
// max_pool2d takes the cells `start + j d` inside the input (padded cells ignored, NaN wins, no
// cell: -inf); avg_pool2d sums the input cells of `[start, start + k)` and divides by the window
// clipped to the padded input (`include_pad`) or by its input cells (no cell: 0).
//
// One thread per output cell, in the compute type (f32 for the halves). A launch covers
// `planes` whole (N, C) planes from plane `p0` of the contiguous output (the host keeps a launch
// under 2^32 outputs and every window position within an int); the input is any strided view.
#include "common.h"

// Where the input planes sit: offset and strides in elements, as `(N, C, H, W)`.
struct PlaneView {
  u64 offset;
  u64 channels;  // C: a plane index p is (p / C, p % C)
  u64 sn, sc, sh, sw;
};

// One spatial dim's windows: input size, kernel, stride, padding, dilation.
struct Axis {
  int n, k, s, p, d, unused;
};

struct Window {
  Axis h, w;
  u32 oh, ow;
  u32 include_pad;  // avg_pool2d: divide by the padded window's area
  u32 narrow;       // 1 where plane indices fit 32 bits (cheaper division)
};

// The storage offset of plane p of the input.
__device__ __forceinline__ u64 plane_at(const PlaneView& v, const Window& g, u64 p) {
  u64 n = g.narrow ? (u64)((u32)p / (u32)v.channels) : p / v.channels;
  return v.offset + n * v.sn + (p - n * v.channels) * v.sc;
}

__device__ __forceinline__ int imax(int a, int b) { return a > b ? a : b; }
__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }

// Calls `f(i, base, r0, c0)` for output cell i of the launch: its plane's offset and its
// window's first row and column (possibly in the padding).
template <class F>
__device__ __forceinline__ void each_window(u64 p0, u64 planes, const Window& g, const PlaneView& v, F f) {
  const u32 per_plane = g.oh * g.ow;
  for_each(planes * per_plane, [&](u32 i) {
    u32 q = i / per_plane, cell = i - q * per_plane;
    u32 r = cell / g.ow, c = cell - r * g.ow;
    f(i, plane_at(v, g, p0 + q), (int)r * g.h.s - g.h.p, (int)c * g.w.s - g.w.p);
  });
}

template <class T>
__device__ __forceinline__ void max_pool2d(u64 p0, u64 planes, Window g, PlaneView v, const T* x, T* y) {
  typedef typename num<T>::C C;
  each_window(p0, planes, g, v, [&](u32 i, u64 base, int r0, int c0) {
    C m = neg_inf((C)0);
    for (int a = 0; a < g.h.k; ++a) {
      const int ir = r0 + a * g.h.d;
      if (ir < 0 || ir >= g.h.n) continue;
      const u64 row = base + (u64)ir * v.sh;
      for (int b = 0; b < g.w.k; ++b) {
        const int ic = c0 + b * g.w.d;
        if (ic >= 0 && ic < g.w.n) m = max_nan(m, num<T>::load(x[row + (u64)ic * v.sw]));
      }
    }
    y[i] = num<T>::store(m);
  });
}

template <class T>
__device__ __forceinline__ void avg_pool2d(u64 p0, u64 planes, Window g, PlaneView v, const T* x, T* y) {
  typedef typename num<T>::C C;
  each_window(p0, planes, g, v, [&](u32 i, u64 base, int r0, int c0) {
    const int rs = imax(r0, 0), re = imin(r0 + g.h.k, g.h.n);
    const int cs = imax(c0, 0), ce = imin(c0 + g.w.k, g.w.n);
    C sum = (C)0;
    for (int ir = rs; ir < re; ++ir) {
      const u64 row = base + (u64)ir * v.sh;
      for (int ic = cs; ic < ce; ++ic) sum += num<T>::load(x[row + (u64)ic * v.sw]);
    }
    const int real = imax(re - rs, 0) * imax(ce - cs, 0);
    const int padded = (imin(r0 + g.h.k, g.h.n + g.h.p) - r0) * (imin(c0 + g.w.k, g.w.n + g.w.p) - c0);
    const int area = g.include_pad ? padded : real;
    y[i] = num<T>::store(real == 0 ? (C)0 : sum / (C)area);
  });
}

#define RWO_POOL(op, T)                                                                \
  RWO_KERNEL op##_##T(u64 p0, u64 planes, Window g, PlaneView v, const T* x, T* y) {     \
    op<T>(p0, planes, g, v, x, y);                                                     \
  }
#define POOL(op, ...) RWO_EACH(RWO_POOL, op, __VA_ARGS__)

POOL(max_pool2d, f16, bf16, f32, f64)
POOL(avg_pool2d, f16, bf16, f32, f64)
