// Convolutions and their transposes (src/spec/conv.rs) for the cases the DNN library does not
// take (a dtype, a parameter combination, or no library at all): one thread per output element
// of the contiguous output, summing over its input channels and kernel cells straight from the
// strided input and kernel (an implicit GEMM without tiles: correct for every combination the
// spec allows; the library is the fast path).
//
// A 1-D conv is a 2-D one with a height of 1: one body serves `conv1d` and `conv2d` (and the
// two transposes). A launch covers `count` outputs from batch `n0` on (the host keeps each under
// 2^32). Halves accumulate in f32; f32 and f64 in f64, rounding once to the dtype.
#include "common.h"

// The geometry in two spatial dims: channels and groups, input, kernel and output sizes,
// padding, stride and dilation per dim.
struct ConvGeo {
  u64 c_in, c_out, groups;
  u64 ih, iw, kh, kw, oh, ow;
  u64 ph, pw, sh, sw, dh, dw;
};

// A 4-D operand's offset and strides, in elements.
struct View4 {
  u64 offset, s0, s1, s2, s3;
};

template <class T>
struct conv_acc {
  typedef float A;
};
template <>
struct conv_acc<f32> {
  typedef double A;
};
template <>
struct conv_acc<f64> {
  typedef double A;
};

// Output `i` of the launch as (n, channel, row, column).
struct OutIndex {
  u64 n, co;
  u32 r, c;
  __device__ __forceinline__ OutIndex(u32 i, u64 n0, const ConvGeo& g) {
    const u32 plane = (u32)(g.oh * g.ow), per_n = (u32)g.c_out * plane;
    u32 nl = i / per_n, rem = i - nl * per_n;
    u32 ch = rem / plane, p = rem - ch * plane;
    n = n0 + nl;
    co = ch;
    r = p / (u32)g.ow;
    c = p - r * (u32)g.ow;
  }
};

// conv: y[n, co, r, c] = sum over ci of co's group and kernel cells (a, b) of
// x[n, ci, r * sh - ph + a * dh, c * sw - pw + b * dw] * w[co, ci - group start, a, b].
template <class T>
__device__ __forceinline__ void conv_forward(u64 n0, u64 count, const ConvGeo& g, const View4& xv, const View4& wv,
                                             const T* x, const T* w, T* y) {
  typedef typename conv_acc<T>::A A;
  const u64 cig = g.c_in / g.groups, cog = g.c_out / g.groups;
  for_each(count, [&](u32 i) {
    OutIndex o(i, n0, g);
    const u64 first = (o.co / cog) * cig;
    A acc = (A)0;
    for (u64 ci = 0; ci < cig; ++ci) {
      const u64 xc = xv.offset + o.n * xv.s0 + (first + ci) * xv.s1, wc = wv.offset + o.co * wv.s0 + ci * wv.s1;
      for (u64 a = 0; a < g.kh; ++a) {
        const i64 ir = (i64)(o.r * g.sh + a * g.dh) - (i64)g.ph;
        if (ir < 0 || ir >= (i64)g.ih) continue;
        for (u64 b = 0; b < g.kw; ++b) {
          const i64 ic = (i64)(o.c * g.sw + b * g.dw) - (i64)g.pw;
          if (ic < 0 || ic >= (i64)g.iw) continue;
          acc += (A)num<T>::load(x[xc + (u64)ir * xv.s2 + (u64)ic * xv.s3]) *
                 (A)num<T>::load(w[wc + a * wv.s2 + b * wv.s3]);
        }
      }
    }
    y[i] = num<T>::store((typename num<T>::C)acc);
  });
}

// conv_transpose: y[n, co, r, c] = sum over ci of co's group and kernel cells (a, b) with
// r = ir * sh - ph + a * dh and c = ic * sw - pw + b * dw for input cells (ir, ic) of
// x[n, ci, ir, ic] * w[ci, co - group start, a, b] (kernel `(C_in, C_out / groups, kh, kw)`).
template <class T>
__device__ __forceinline__ void conv_backward(u64 n0, u64 count, const ConvGeo& g, const View4& xv,
                                              const View4& wv, const T* x, const T* w, T* y) {
  typedef typename conv_acc<T>::A A;
  const u64 cig = g.c_in / g.groups, cog = g.c_out / g.groups;
  for_each(count, [&](u32 i) {
    OutIndex o(i, n0, g);
    const u64 grp = o.co / cog, first = grp * cig, wo = o.co - grp * cog;
    A acc = (A)0;
    for (u64 a = 0; a < g.kh; ++a) {
      const i64 tr = (i64)(o.r + g.ph) - (i64)(a * g.dh);
      if (tr < 0 || (u64)tr % g.sh != 0 || (u64)tr / g.sh >= g.ih) continue;
      const u64 ir = (u64)tr / g.sh;
      for (u64 b = 0; b < g.kw; ++b) {
        const i64 tc = (i64)(o.c + g.pw) - (i64)(b * g.dw);
        if (tc < 0 || (u64)tc % g.sw != 0 || (u64)tc / g.sw >= g.iw) continue;
        const u64 ic = (u64)tc / g.sw;
        for (u64 ci = 0; ci < cig; ++ci) {
          const u64 xi = xv.offset + o.n * xv.s0 + (first + ci) * xv.s1 + ir * xv.s2 + ic * xv.s3;
          const u64 wi = wv.offset + (first + ci) * wv.s0 + wo * wv.s1 + a * wv.s2 + b * wv.s3;
          acc += (A)num<T>::load(x[xi]) * (A)num<T>::load(w[wi]);
        }
      }
    }
    y[i] = num<T>::store((typename num<T>::C)acc);
  });
}

#define RWO_CONV(op, T)                                                                                      \
  RWO_KERNEL op##_##T(u64 n0, u64 count, ConvGeo g, View4 xv, View4 wv, const T* x, const T* w, T* y) {     \
    conv_forward<T>(n0, count, g, xv, wv, x, w, y);                                                         \
  }
#define CONV(op, ...) RWO_EACH(RWO_CONV, op, __VA_ARGS__)

#define RWO_CONV_T(op, T)                                                                                    \
  RWO_KERNEL op##_##T(u64 n0, u64 count, ConvGeo g, View4 xv, View4 wv, const T* x, const T* w, T* y) {     \
    conv_backward<T>(n0, count, g, xv, wv, x, w, y);                                                        \
  }
#define CONV_T(op, ...) RWO_EACH(RWO_CONV_T, op, __VA_ARGS__)

CONV(conv1d, f16, bf16, f32, f64)
CONV(conv2d, f16, bf16, f32, f64)
CONV_T(conv_transpose1d, f16, bf16, f32, f64)
CONV_T(conv_transpose2d, f16, bf16, f32, f64)
