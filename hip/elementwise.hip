// Elementwise ops (src/spec/elementwise.rs): unary maps, affine/powf/elu/clamp, broadcasting
// binary ops, comparisons, where_cond and cast, over strided operands (see common.h).
// Floats compute in f32 (f64 for f64) and round once; integers wrap.
// Every op `K` has `K` (any strided walk, one element per thread per step) and `K_vec` (inner
// strides 0 or 1, aligned: 16-byte chunks, see common.h); binary ops also have `K_tiled`
// (an operand stored transposed to the output). All three compute the same per element.
#include "common.h"

// ---- unary maps: one functor per op, an overload per compute type it takes ----

struct neg_op {
  __device__ float operator()(float v) const { return -v; }
  __device__ double operator()(double v) const { return -v; }
  __device__ i64 operator()(i64 v) const { return (i64)(0ull - (u64)v); }
};
struct abs_op {
  __device__ float operator()(float v) const { return fabsf(v); }
  __device__ double operator()(double v) const { return fabs(v); }
  __device__ u32 operator()(u32 v) const { return v; }
  __device__ i64 operator()(i64 v) const { return v < 0 ? (i64)(0ull - (u64)v) : v; }
};
struct sqr_op {
  __device__ float operator()(float v) const { return v * v; }
  __device__ double operator()(double v) const { return v * v; }
  __device__ u32 operator()(u32 v) const { return v * v; }
  __device__ i64 operator()(i64 v) const { return (i64)((u64)v * (u64)v); }
};
struct relu_op {
  __device__ float operator()(float v) const { return v < 0.0f ? 0.0f : v; }
  __device__ double operator()(double v) const { return v < 0.0 ? 0.0 : v; }
  __device__ u32 operator()(u32 v) const { return v; }
  __device__ i64 operator()(i64 v) const { return v < 0 ? 0 : v; }
};
struct sign_op {
  __device__ float operator()(float v) const { return is_nan(v) || v == 0.0f ? v : (v > 0.0f ? 1.0f : -1.0f); }
  __device__ double operator()(double v) const { return is_nan(v) || v == 0.0 ? v : (v > 0.0 ? 1.0 : -1.0); }
  __device__ u32 operator()(u32 v) const { return v != 0u ? 1u : 0u; }
  __device__ i64 operator()(i64 v) const { return v > 0 ? 1 : (v < 0 ? -1 : 0); }
};

// Float-only maps, written once over `float` and `double` by the F32/F64 pair below.
#define RWO_FLOAT_OP(name, expr32, expr64)                           \
  struct name##_op {                                                 \
    __device__ float operator()(float v) const { return expr32; }    \
    __device__ double operator()(double v) const { return expr64; }  \
  };
RWO_FLOAT_OP(recip, 1.0f / v, 1.0 / v)
RWO_FLOAT_OP(exp, expf(v), exp(v))
RWO_FLOAT_OP(log, logf(v), log(v))
RWO_FLOAT_OP(sin, sinf(v), sin(v))
RWO_FLOAT_OP(cos, cosf(v), cos(v))
RWO_FLOAT_OP(tanh, tanhf(v), tanh(v))
RWO_FLOAT_OP(sqrt, sqrtf(v), sqrt(v))
RWO_FLOAT_OP(gelu,
             0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v))),
             0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))))
RWO_FLOAT_OP(gelu_erf, 0.5f * v * (1.0f + erff(v / 1.4142135623730951f)),
             0.5 * v * (1.0 + erf(v / 1.4142135623730951)))
RWO_FLOAT_OP(erf, erff(v), erf(v))
RWO_FLOAT_OP(silu, v / (1.0f + expf(-v)), v / (1.0 + exp(-v)))
RWO_FLOAT_OP(sigmoid, 1.0f / (1.0f + expf(-v)), 1.0 / (1.0 + exp(-v)))
RWO_FLOAT_OP(ceil, ceilf(v), ceil(v))
RWO_FLOAT_OP(floor, floorf(v), floor(v))
// rint rounds half to even in the default rounding mode.
RWO_FLOAT_OP(round, rintf(v), rint(v))

template <class T, class Op>
__device__ __forceinline__ void unary(const Dims& d, const View& xv, const T* x, T* y) {
  Op op;
  for_each(d.n, [&](u32 i) { y[i] = num<T>::store(op(num<T>::load(x[at(xv, d, i)]))); });
}
template <class T, class Op>
__device__ __forceinline__ void unary_vec(const Dims& d, const View& xv, const T* x, T* y) {
  Op op;
  map_vec(d, y, [=](T v) { return num<T>::store(op(num<T>::load(v))); }, Src<T>{x, xv});
}
#define RWO_UNARY(op, T)                                                                       \
  RWO_KERNEL op##_##T(Dims d, View xv, const T* x, T* y) { unary<T, op##_op>(d, xv, x, y); }   \
  RWO_KERNEL op##_##T##_vec(Dims d, View xv, const T* x, T* y) { unary_vec<T, op##_op>(d, xv, x, y); }
#define UNARY(op, ...) RWO_EACH(RWO_UNARY, op, __VA_ARGS__)

UNARY(neg, i64, f16, bf16, f32, f64)
UNARY(recip, f16, bf16, f32, f64)
UNARY(exp, f16, bf16, f32, f64)
UNARY(log, f16, bf16, f32, f64)
UNARY(sin, f16, bf16, f32, f64)
UNARY(cos, f16, bf16, f32, f64)
UNARY(tanh, f16, bf16, f32, f64)
UNARY(abs, u8, u32, i64, f16, bf16, f32, f64)
UNARY(sqr, u8, u32, i64, f16, bf16, f32, f64)
UNARY(sqrt, f16, bf16, f32, f64)
UNARY(gelu, f16, bf16, f32, f64)
UNARY(gelu_erf, f16, bf16, f32, f64)
UNARY(erf, f16, bf16, f32, f64)
UNARY(relu, u8, u32, i64, f16, bf16, f32, f64)
UNARY(silu, f16, bf16, f32, f64)
UNARY(sigmoid, f16, bf16, f32, f64)
UNARY(ceil, f16, bf16, f32, f64)
UNARY(floor, f16, bf16, f32, f64)
UNARY(round, f16, bf16, f32, f64)
UNARY(sign, u8, u32, i64, f16, bf16, f32, f64)

// ---- maps with scalars, passed in the compute type ----

template <class C>
struct affine_f {
  C mul, add;
  __device__ C operator()(C v) const { return v * mul + add; }
};
template <class C>
struct powf_f {
  C e;
  __device__ C operator()(C v) const { return fpow(v, e); }
};
template <class C>
struct elu_f {
  C alpha;
  __device__ C operator()(C v) const { return v >= 0 ? v : alpha * fexpm1(v); }
};
template <class C>
struct clamp_f {
  C lo, hi;
  __device__ C operator()(C v) const { return v < lo ? lo : (v > hi ? hi : v); }
};

template <class T, class F>
__device__ __forceinline__ void map_scalar(const Dims& d, const View& xv, const T* x, T* y, F f) {
  for_each(d.n, [&](u32 i) { y[i] = num<T>::store(f(num<T>::load(x[at(xv, d, i)]))); });
}
template <class T, class F>
__device__ __forceinline__ void map_scalar_vec(const Dims& d, const View& xv, const T* x, T* y, F f) {
  map_vec(d, y, [=](T v) { return num<T>::store(f(num<T>::load(v))); }, Src<T>{x, xv});
}

#define RWO_AFFINE(op, T)                                                                      \
  RWO_KERNEL op##_##T(Dims d, View xv, const T* x, T* y, num<T>::C mul, num<T>::C add) {       \
    map_scalar(d, xv, x, y, affine_f<num<T>::C>{mul, add});                                    \
  }                                                                                            \
  RWO_KERNEL op##_##T##_vec(Dims d, View xv, const T* x, T* y, num<T>::C mul, num<T>::C add) { \
    map_scalar_vec(d, xv, x, y, affine_f<num<T>::C>{mul, add});                                \
  }
#define RWO_POWF(op, T)                                                                        \
  RWO_KERNEL op##_##T(Dims d, View xv, const T* x, T* y, num<T>::C e) {                        \
    map_scalar(d, xv, x, y, powf_f<num<T>::C>{e});                                             \
  }                                                                                            \
  RWO_KERNEL op##_##T##_vec(Dims d, View xv, const T* x, T* y, num<T>::C e) {                  \
    map_scalar_vec(d, xv, x, y, powf_f<num<T>::C>{e});                                         \
  }
#define RWO_ELU(op, T)                                                                         \
  RWO_KERNEL op##_##T(Dims d, View xv, const T* x, T* y, num<T>::C alpha) {                    \
    map_scalar(d, xv, x, y, elu_f<num<T>::C>{alpha});                                          \
  }                                                                                            \
  RWO_KERNEL op##_##T##_vec(Dims d, View xv, const T* x, T* y, num<T>::C alpha) {              \
    map_scalar_vec(d, xv, x, y, elu_f<num<T>::C>{alpha});                                      \
  }
#define RWO_CLAMP(op, T)                                                                       \
  RWO_KERNEL op##_##T(Dims d, View xv, const T* x, T* y, num<T>::C lo, num<T>::C hi) {         \
    map_scalar(d, xv, x, y, clamp_f<num<T>::C>{lo, hi});                                       \
  }                                                                                            \
  RWO_KERNEL op##_##T##_vec(Dims d, View xv, const T* x, T* y, num<T>::C lo, num<T>::C hi) {   \
    map_scalar_vec(d, xv, x, y, clamp_f<num<T>::C>{lo, hi});                                   \
  }
#define AFFINE(op, ...) RWO_EACH(RWO_AFFINE, op, __VA_ARGS__)
#define POWF(op, ...) RWO_EACH(RWO_POWF, op, __VA_ARGS__)
#define ELU(op, ...) RWO_EACH(RWO_ELU, op, __VA_ARGS__)
#define CLAMP(op, ...) RWO_EACH(RWO_CLAMP, op, __VA_ARGS__)

AFFINE(affine, f16, bf16, f32, f64)
POWF(powf, f16, bf16, f32, f64)
ELU(elu, f16, bf16, f32, f64)
CLAMP(clamp, u8, u32, i64, f16, bf16, f32, f64)

// ---- binary ops and comparisons over two views of one shape (broadcast by stride 0) ----

struct add_op {
  template <class C>
  __device__ C operator()(C a, C b) const { return a + b; }
  __device__ i64 operator()(i64 a, i64 b) const { return (i64)((u64)a + (u64)b); }
};
struct sub_op {
  template <class C>
  __device__ C operator()(C a, C b) const { return a - b; }
  __device__ i64 operator()(i64 a, i64 b) const { return (i64)((u64)a - (u64)b); }
};
struct mul_op {
  template <class C>
  __device__ C operator()(C a, C b) const { return a * b; }
  __device__ i64 operator()(i64 a, i64 b) const { return (i64)((u64)a * (u64)b); }
};
struct div_op {
  __device__ float operator()(float a, float b) const { return a / b; }
  __device__ double operator()(double a, double b) const { return a / b; }
  __device__ u32 operator()(u32 a, u32 b) const { return b == 0u ? 0u : a / b; }
  __device__ i64 operator()(i64 a, i64 b) const {
    if (b == 0) return 0;
    if (b == -1) return (i64)(0ull - (u64)a);  // wraps i64::MIN / -1
    return a / b;
  }
};
// NaN in either operand gives NaN (the first one's when both are).
struct maximum_op {
  template <class C>
  __device__ C operator()(C a, C b) const { return is_nan(a) ? a : (is_nan(b) ? b : (a >= b ? a : b)); }
};
struct minimum_op {
  template <class C>
  __device__ C operator()(C a, C b) const { return is_nan(a) ? a : (is_nan(b) ? b : (a <= b ? a : b)); }
};

// One binary op on stored values: load, compute, round once.
template <class T, class Op>
struct stored_op {
  __device__ T operator()(T a, T b) const { return num<T>::store(Op()(num<T>::load(a), num<T>::load(b))); }
};

template <class T, class Op>
__device__ __forceinline__ void binary(const Dims& d, const View& av, const View& bv, const T* a, const T* b,
                                       T* y) {
  stored_op<T, Op> f;
  for_each(d.n, [&](u32 i) { y[i] = f(a[at(av, d, i)], b[at(bv, d, i)]); });
}
template <class T, class Op>
__device__ __forceinline__ void binary_vec(const Dims& d, const View& av, const View& bv, const T* a,
                                           const T* b, T* y) {
  map_vec(d, y, stored_op<T, Op>(), Src<T>{a, av}, Src<T>{b, bv});
}
template <class T, class Op>
__device__ __forceinline__ void binary_tiled(const Dims& d, const View& av, const View& bv, const T* a,
                                             const T* b, T* y) {
  __shared__ T ta[RWO_TILE][RWO_TILE + 1];
  __shared__ T tb[RWO_TILE][RWO_TILE + 1];
  Tile t(d);
  map_tiled(t, y, stored_op<T, Op>(), TileIn<T>(a, av, d, t, ta), TileIn<T>(b, bv, d, t, tb));
}
#define RWO_BINARY(op, T)                                                                  \
  RWO_KERNEL op##_##T(Dims d, View av, View bv, const T* a, const T* b, T* y) {            \
    binary<T, op##_op>(d, av, bv, a, b, y);                                                \
  }                                                                                        \
  RWO_KERNEL op##_##T##_vec(Dims d, View av, View bv, const T* a, const T* b, T* y) {      \
    binary_vec<T, op##_op>(d, av, bv, a, b, y);                                            \
  }                                                                                        \
  RWO_KERNEL op##_##T##_tiled(Dims d, View av, View bv, const T* a, const T* b, T* y) {    \
    binary_tiled<T, op##_op>(d, av, bv, a, b, y);                                          \
  }
#define BINARY(op, ...) RWO_EACH(RWO_BINARY, op, __VA_ARGS__)

BINARY(add, u8, u32, i64, f16, bf16, f32, f64)
BINARY(sub, u8, u32, i64, f16, bf16, f32, f64)
BINARY(mul, u8, u32, i64, f16, bf16, f32, f64)
BINARY(div, u8, u32, i64, f16, bf16, f32, f64)
BINARY(maximum, u8, u32, i64, f16, bf16, f32, f64)
BINARY(minimum, u8, u32, i64, f16, bf16, f32, f64)

// Any comparison with NaN is false but `ne`, written `!(a == b)` for that reason.
struct eq_op {
  template <class C>
  __device__ bool operator()(C a, C b) const { return a == b; }
};
struct ne_op {
  template <class C>
  __device__ bool operator()(C a, C b) const { return !(a == b); }
};
struct lt_op {
  template <class C>
  __device__ bool operator()(C a, C b) const { return a < b; }
};
struct le_op {
  template <class C>
  __device__ bool operator()(C a, C b) const { return a <= b; }
};
struct gt_op {
  template <class C>
  __device__ bool operator()(C a, C b) const { return a > b; }
};
struct ge_op {
  template <class C>
  __device__ bool operator()(C a, C b) const { return a >= b; }
};

template <class T, class Op>
struct compare_op {
  __device__ u8 operator()(T a, T b) const { return Op()(num<T>::load(a), num<T>::load(b)) ? (u8)1 : (u8)0; }
};

template <class T, class Op>
__device__ __forceinline__ void compare(const Dims& d, const View& av, const View& bv, const T* a, const T* b,
                                        u8* y) {
  compare_op<T, Op> f;
  for_each(d.n, [&](u32 i) { y[i] = f(a[at(av, d, i)], b[at(bv, d, i)]); });
}
#define RWO_CMP(op, T)                                                                     \
  RWO_KERNEL op##_##T(Dims d, View av, View bv, const T* a, const T* b, u8* y) {           \
    compare<T, op##_op>(d, av, bv, a, b, y);                                               \
  }                                                                                        \
  RWO_KERNEL op##_##T##_vec(Dims d, View av, View bv, const T* a, const T* b, u8* y) {     \
    map_vec(d, y, compare_op<T, op##_op>(), Src<T>{a, av}, Src<T>{b, bv});                 \
  }
#define CMP(op, ...) RWO_EACH(RWO_CMP, op, __VA_ARGS__)

CMP(eq, u8, u32, i64, f16, bf16, f32, f64)
CMP(ne, u8, u32, i64, f16, bf16, f32, f64)
CMP(lt, u8, u32, i64, f16, bf16, f32, f64)
CMP(le, u8, u32, i64, f16, bf16, f32, f64)
CMP(gt, u8, u32, i64, f16, bf16, f32, f64)
CMP(ge, u8, u32, i64, f16, bf16, f32, f64)

// ---- where_cond: `where_cond_{value dtype}_{condition dtype}` ----

template <class T, class TC>
__device__ __forceinline__ void pick(const Dims& d, const View& cv, const View& tv, const View& fv, const TC* c,
                                       const T* t, const T* f, T* y) {
  for_each(d.n, [&](u32 i) { y[i] = c[at(cv, d, i)] != 0 ? t[at(tv, d, i)] : f[at(fv, d, i)]; });
}
template <class T, class TC>
__device__ __forceinline__ void pick_vec(const Dims& d, const View& cv, const View& tv, const View& fv,
                                         const TC* c, const T* t, const T* f, T* y) {
  map_vec(d, y, [](TC k, T a, T b) { return k != 0 ? a : b; }, Src<TC>{c, cv}, Src<T>{t, tv}, Src<T>{f, fv});
}
#define RWO_WHERE(T, TC)                                                                         \
  RWO_KERNEL where_cond_##T##_##TC(Dims d, View cv, View tv, View fv, const TC* c, const T* t,   \
                                   const T* f, T* y) {                                           \
    pick(d, cv, tv, fv, c, t, f, y);                                                             \
  }                                                                                              \
  RWO_KERNEL where_cond_##T##_##TC##_vec(Dims d, View cv, View tv, View fv, const TC* c,         \
                                         const T* t, const T* f, T* y) {                         \
    pick_vec(d, cv, tv, fv, c, t, f, y);                                                         \
  }
#define WHERE(T, ...) RWO_EACH(RWO_WHERE, T, __VA_ARGS__)

WHERE(u8, u8, u32, i64)
WHERE(u32, u8, u32, i64)
WHERE(i64, u8, u32, i64)
WHERE(f16, u8, u32, i64)
WHERE(bf16, u8, u32, i64)
WHERE(f32, u8, u32, i64)
WHERE(f64, u8, u32, i64)

// ---- cast: `cast_{from}_{to}` ----

#define RWO_CAST(From, To)                                                                       \
  RWO_KERNEL cast_##From##_##To(Dims d, View xv, const From* x, To* y) {                         \
    for_each(d.n, [&](u32 i) { y[i] = conv<To>::from(wide(x[at(xv, d, i)])); });                 \
  }                                                                                              \
  RWO_KERNEL cast_##From##_##To##_vec(Dims d, View xv, const From* x, To* y) {                   \
    map_vec(d, y, [](From v) { return conv<To>::from(wide(v)); }, Src<From>{x, xv});             \
  }
#define CAST(From, ...) RWO_EACH(RWO_CAST, From, __VA_ARGS__)

CAST(u8, u8, u32, i64, f16, bf16, f32, f64)
CAST(u32, u8, u32, i64, f16, bf16, f32, f64)
CAST(i64, u8, u32, i64, f16, bf16, f32, f64)
CAST(f16, u8, u32, i64, f16, bf16, f32, f64)
CAST(bf16, u8, u32, i64, f16, bf16, f32, f64)
CAST(f32, u8, u32, i64, f16, bf16, f32, f64)
CAST(f64, u8, u32, i64, f16, bf16, f32, f64)
