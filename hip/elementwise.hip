// Elementwise ops (src/spec/elementwise.rs): unary maps, affine/powf/elu/clamp, broadcasting
// binary ops, comparisons, where_cond and cast, over strided operands (see common.h).
// Floats compute in f32 (f64 for f64) and round once; integers wrap.
// Every op `K` has `K` (any strided walk, one element per thread per step) and `K_vec` (inner
// strides 0 or 1, aligned: 16-byte chunks, see common.h); binary ops also have `K_tiled`
// (an operand stored transposed to the output). All three compute the same per element.
#include "common.h"

// ---- unary maps: `{op}_op` functors (elementwise_ops.h), an overload per compute type ----

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


// ---- maps with scalars, passed in the compute type: `{op}_f<C>` holds them ----

template <class T, class F>
__device__ __forceinline__ void map_scalar(const Dims& d, const View& xv, const T* x, T* y, F f) {
  for_each(d.n, [&](u32 i) { y[i] = num<T>::store(f(num<T>::load(x[at(xv, d, i)]))); });
}
template <class T, class F>
__device__ __forceinline__ void map_scalar_vec(const Dims& d, const View& xv, const T* x, T* y, F f) {
  map_vec(d, y, [=](T v) { return num<T>::store(f(num<T>::load(v))); }, Src<T>{x, xv});
}

#define RWO_SCALAR1(op, T)                                                                     \
  RWO_KERNEL op##_##T(Dims d, View xv, const T* x, T* y, num<T>::C p0) {                       \
    map_scalar(d, xv, x, y, op##_f<num<T>::C>{p0});                                            \
  }                                                                                            \
  RWO_KERNEL op##_##T##_vec(Dims d, View xv, const T* x, T* y, num<T>::C p0) {                 \
    map_scalar_vec(d, xv, x, y, op##_f<num<T>::C>{p0});                                        \
  }
#define RWO_SCALAR2(op, T)                                                                     \
  RWO_KERNEL op##_##T(Dims d, View xv, const T* x, T* y, num<T>::C p0, num<T>::C p1) {         \
    map_scalar(d, xv, x, y, op##_f<num<T>::C>{p0, p1});                                        \
  }                                                                                            \
  RWO_KERNEL op##_##T##_vec(Dims d, View xv, const T* x, T* y, num<T>::C p0, num<T>::C p1) {   \
    map_scalar_vec(d, xv, x, y, op##_f<num<T>::C>{p0, p1});                                    \
  }
#define SCALAR1(op, ...) RWO_EACH(RWO_SCALAR1, op, __VA_ARGS__)
#define SCALAR2(op, ...) RWO_EACH(RWO_SCALAR2, op, __VA_ARGS__)

// ---- binary ops and comparisons over two views of one shape (broadcast by stride 0) ----

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


// ---- cast: `cast_{from}_{to}` ----

#define RWO_CAST(From, To)                                                                       \
  RWO_KERNEL cast_##From##_##To(Dims d, View xv, const From* x, To* y) {                         \
    for_each(d.n, [&](u32 i) { y[i] = conv<To>::from(wide(x[at(xv, d, i)])); });                 \
  }                                                                                              \
  RWO_KERNEL cast_##From##_##To##_vec(Dims d, View xv, const From* x, To* y) {                   \
    map_vec(d, y, [](From v) { return conv<To>::from(wide(v)); }, Src<From>{x, xv});             \
  }
#define CAST(From, ...) RWO_EACH(RWO_CAST, From, __VA_ARGS__)

// ---- the functors and instantiation lines of every op x dtype, generated from the expression
// table (src/expr/table.rs); the runtimes compile the table's own rendering in its place ----

#include "elementwise_ops.h"
