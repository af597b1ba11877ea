// Random draws (src/spec/random.rs): element i of a draw from (seed, offset) sits at stream
// position offset + i (mod 2^64) and uses lane pos % 4 of the Philox 4x32-10 block pos / 4.
// One thread per block: thread t of a launch owns block offset / 4 + t (mod 2^62) and writes
// the up to four elements whose positions fall in it (uniform: one word each; normal: the pair
// of lanes (0, 1) or (2, 3) by Box-Muller). Values are computed in f32 (f64 for f64 tensors)
// with the parameters rounded to it on the host, every product and sum rounded alone (the build
// turns contraction off), and the accurate logf/sincosf (never the fast intrinsics): words and
// uniforms are the cpu's bit for bit, normals within a few ulps.
#include "common.h"

// The four words of Philox 4x32-10 block `block` for key `seed` (spec::random::philox4x32_10).
__device__ __forceinline__ void philox(u64 block, u64 seed, u32 (&c)[4]) {
  u32 c0 = (u32)block, c1 = (u32)(block >> 32), c2 = 0u, c3 = 0u;
  u32 k0 = (u32)seed, k1 = (u32)(seed >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const u64 p0 = (u64)0xD2511F53u * c0;
    const u64 p1 = (u64)0xCD9E8D57u * c2;
    const u32 n0 = (u32)(p1 >> 32) ^ c1 ^ k0;
    const u32 n2 = (u32)(p0 >> 32) ^ c3 ^ k1;
    c1 = (u32)p1;
    c3 = (u32)p0;
    c0 = n0;
    c2 = n2;
  }
  c[0] = c0;
  c[1] = c1;
  c[2] = c2;
  c[3] = c3;
}

// The compute types: `n * 2^-24` (exact for n <= 2^24), 2 pi rounded to the type, and the
// accurate ln, sqrt, sin and cos.
template <class C>
struct real;
template <>
struct real<float> {
  static __device__ __forceinline__ float unit(u32 n) { return (float)n * (1.0f / 16777216.0f); }
  static __device__ __forceinline__ float tau() { return 6.28318530717958647692f; }
  static __device__ __forceinline__ float ln(float v) { return logf(v); }
  static __device__ __forceinline__ float root(float v) { return sqrtf(v); }
  static __device__ __forceinline__ void sin_cos(float t, float* s, float* c) { sincosf(t, s, c); }
};
template <>
struct real<double> {
  static __device__ __forceinline__ double unit(u32 n) { return (double)n * (1.0 / 16777216.0); }
  static __device__ __forceinline__ double tau() { return 6.28318530717958647692; }
  static __device__ __forceinline__ double ln(double v) { return log(v); }
  static __device__ __forceinline__ double root(double v) { return sqrt(v); }
  static __device__ __forceinline__ void sin_cos(double t, double* s, double* c) { sincos(t, s, c); }
};

// low + (high - low) * u for each lane.
struct uniform_dist {
  template <class C>
  static __device__ __forceinline__ void values(const u32 (&w)[4], C low, C high, C (&v)[4]) {
    const C span = high - low;
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = low + span * real<C>::unit(w[k] >> 8);
  }
};

// mean + std * (r cos t, r sin t) for each pair of lanes: r = sqrt(-2 ln u1), t = 2 pi u2.
struct normal_dist {
  template <class C>
  static __device__ __forceinline__ void values(const u32 (&w)[4], C mean, C sd, C (&v)[4]) {
#pragma unroll
    for (int p = 0; p < 4; p += 2) {
      const C u1 = real<C>::unit((w[p] >> 8) + 1u);
      const C u2 = real<C>::unit(w[p + 1] >> 8);
      const C r = real<C>::root((C)-2.0 * real<C>::ln(u1));
      const C t = real<C>::tau() * u2;
      C s, c;
      real<C>::sin_cos(t, &s, &c);
      v[p] = mean + sd * (r * c);
      v[p + 1] = mean + sd * (r * s);
    }
  }
};

// Four consecutive elements in one store, at an address aligned to it (at most 16 bytes).
__device__ __forceinline__ void store4(f16* p, const f16 (&q)[4]) {
  *(u64*)p = (u64)q[0].bits | ((u64)q[1].bits << 16) | ((u64)q[2].bits << 32) | ((u64)q[3].bits << 48);
}
__device__ __forceinline__ void store4(bf16* p, const bf16 (&q)[4]) {
  *(u64*)p = (u64)q[0].bits | ((u64)q[1].bits << 16) | ((u64)q[2].bits << 32) | ((u64)q[3].bits << 48);
}
__device__ __forceinline__ void store4(f32* p, const f32 (&q)[4]) {
  uint4 v;
  v.x = __float_as_uint(q[0]);
  v.y = __float_as_uint(q[1]);
  v.z = __float_as_uint(q[2]);
  v.w = __float_as_uint(q[3]);
  *(uint4*)p = v;
}
__device__ __forceinline__ void store4(f64* p, const f64 (&q)[4]) {
  double2 a, b;
  a.x = q[0];
  a.y = q[1];
  b.x = q[2];
  b.y = q[3];
  ((double2*)p)[0] = a;
  ((double2*)p)[1] = b;
}

// Elements [0, n) of y from stream positions offset.. (n < 2^32, so under 2^30 + 1 threads).
template <class T, class Dist>
__device__ __forceinline__ void draw(T* y, u64 n, u64 seed, u64 offset, typename num<T>::C a,
                                     typename num<T>::C b) {
  typedef typename num<T>::C C;
  const u32 lane0 = (u32)(offset & 3u);
  const u64 block0 = offset >> 2;
  const u64 align = sizeof(T) * 4 < 16 ? sizeof(T) * 4 : 16;
  for_each((n + lane0 + 3u) / 4u, [&](u32 t) {
    u32 w[4];
    philox((block0 + t) & 0x3fffffffffffffffull, seed, w);
    C v[4];
    Dist::values(w, a, b, v);
    T q[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) q[k] = num<T>::store(v[k]);
    // Element e of y takes lane k of this block when e = 4t + k - lane0.
    const u64 first = (u64)t * 4u;
    if (lane0 == 0u && first + 4u <= n && ((u64)(y + first) & (align - 1u)) == 0u) {
      store4(y + first, q);
    } else {
#pragma unroll
      for (u32 k = 0; k < 4; ++k) {
        if (first + k >= lane0 && first + k - lane0 < n) y[first + k - lane0] = q[k];
      }
    }
  });
}
// Four consecutive elements in one load, from an address aligned to it (at most 16 bytes).
template <class T>
__device__ __forceinline__ void load4(const T* p, T (&q)[4]) {
  if constexpr (sizeof(T) == 2) {
    const u64 v = *(const u64*)p;
#pragma unroll
    for (int k = 0; k < 4; ++k) q[k].bits = (unsigned short)(v >> (16 * k));
  } else if constexpr (sizeof(T) == 4) {
    const uint4 v = *(const uint4*)p;
    q[0] = __uint_as_float(v.x);
    q[1] = __uint_as_float(v.y);
    q[2] = __uint_as_float(v.z);
    q[3] = __uint_as_float(v.w);
  } else {
    const double2 a = ((const double2*)p)[0], b = ((const double2*)p)[1];
    q[0] = a.x;
    q[1] = a.y;
    q[2] = b.x;
    q[3] = b.y;
  }
}

// Dropout of the contiguous x[0, n) from stream positions offset..: element e keeps x * scale
// where its uniform is at least p, else x * 0 (a NaN stays NaN), in the compute type.
template <class T>
__device__ __forceinline__ void dropout(const T* x, T* y, u64 n, u64 seed, u64 offset, typename num<T>::C p,
                                        typename num<T>::C scale) {
  typedef typename num<T>::C C;
  const u32 lane0 = (u32)(offset & 3u);
  const u64 block0 = offset >> 2;
  const u64 align = sizeof(T) * 4 < 16 ? sizeof(T) * 4 : 16;
  for_each((n + lane0 + 3u) / 4u, [&](u32 t) {
    u32 w[4];
    philox((block0 + t) & 0x3fffffffffffffffull, seed, w);
    const u64 first = (u64)t * 4u;
    C m[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) m[k] = real<C>::unit(w[k] >> 8) >= p ? scale : (C)0;
    // Whole blocks at aligned addresses move as one vector each way (coalesced across threads).
    if (lane0 == 0u && first + 4u <= n && (((u64)(x + first) | (u64)(y + first)) & (align - 1u)) == 0u) {
      T q[4];
      load4(x + first, q);
#pragma unroll
      for (int k = 0; k < 4; ++k) q[k] = num<T>::store(num<T>::load(q[k]) * m[k]);
      store4(y + first, q);
      return;
    }
#pragma unroll
    for (u32 k = 0; k < 4; ++k) {
      if (first + k >= lane0 && first + k - lane0 < n) {
        const u64 e = first + k - lane0;
        y[e] = num<T>::store(num<T>::load(x[e]) * m[k]);
      }
    }
  });
}

#define RWO_DROPOUT(op, T)                                                                                 \
  RWO_KERNEL op##_##T(const T* x, T* y, u64 n, u64 seed, u64 offset, num<T>::C p, num<T>::C scale) { \
    dropout<T>(x, y, n, seed, offset, p, scale);                                                          \
  }
#define DROPOUT(op, ...) RWO_EACH(RWO_DROPOUT, op, __VA_ARGS__)

#define RWO_DRAW(op, T, Dist)                                                         \
  RWO_KERNEL op##_##T(T* y, u64 n, u64 seed, u64 offset, num<T>::C a, num<T>::C b) {  \
    draw<T, Dist>(y, n, seed, offset, a, b);                                          \
  }
#define RWO_UNIFORM(op, T) RWO_DRAW(op, T, uniform_dist)
#define RWO_NORMAL(op, T) RWO_DRAW(op, T, normal_dist)
#define UNIFORM(op, ...) RWO_EACH(RWO_UNIFORM, op, __VA_ARGS__)
#define NORMAL(op, ...) RWO_EACH(RWO_NORMAL, op, __VA_ARGS__)

UNIFORM(rand_uniform, f16, bf16, f32, f64)
NORMAL(rand_normal, f16, bf16, f32, f64)
DROPOUT(dropout, f16, bf16, f32, f64)
