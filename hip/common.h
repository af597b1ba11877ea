// Shared by every hip/*.hip file, in the dialect HIP (hipcc) and CUDA (NVRTC) have in common.
// This header maps the few differences (headers, the halves' conversions, warp shuffles); the
// kernels are written once.
#pragma once

#if defined(__CUDACC_RTC__)
// NVRTC: the launch builtins and math functions are built in; no header is needed (NVRTC 13
// no longer bundles cuda_fp16.h, so the halves below convert through PTX instead).
#else
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
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
__device__ __forceinline__ float f16_to_f32(f16 v) { return __half2float(__ushort_as_half(v.bits)); }
__device__ __forceinline__ f16 f32_to_f16(float f) {
  f16 r;
  r.bits = __half_as_ushort(__float2half(f));
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
__device__ __forceinline__ float fpow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double fpow(double a, double b) { return pow(a, b); }
__device__ __forceinline__ float fexpm1(float v) { return expm1f(v); }
__device__ __forceinline__ double fexpm1(double v) { return expm1(v); }

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
