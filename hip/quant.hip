// GGML blocks (ggml-common.h's layouts) dequantized to f32, f16 or bf16 (and multiplied with a
// few rows of x in qmatvec): ggml's values, the same f32 steps in the same order (the runtimes compile without contraction: -ffp-contract=off,
// --fmad=false, so no product fuses with a sum). Fields are read byte by byte: most block sizes
// (q4_0's 18 bytes) leave blocks unaligned.
#include "common.h"

__device__ __forceinline__ float half_at(const u8* b) {
  f16 h;
  h.bits = (unsigned short)(b[0] | (b[1] << 8));
  return f16_to_f32(h);
}

// Nibble j / 16 of byte j % 16: the 4-bit quants of the 32-value blocks.
__device__ __forceinline__ u32 nibble(const u8* qs, u32 j) { return (qs[j % 16] >> (4 * (j / 16))) & 15; }

// Bit j of the 5th bits (a little-endian u32).
__device__ __forceinline__ u32 fifth(const u8* qh, u32 j) { return (qh[j / 8] >> (j % 8)) & 1; }

__device__ float q4_0(const u8* b, u32 j) { return (float)((int)nibble(b + 2, j) - 8) * half_at(b); }

__device__ float q4_1(const u8* b, u32 j) { return (float)nibble(b + 4, j) * half_at(b) + half_at(b + 2); }

__device__ float q5_0(const u8* b, u32 j) {
  return (float)((int)(nibble(b + 6, j) | (fifth(b + 2, j) << 4)) - 16) * half_at(b);
}

__device__ float q5_1(const u8* b, u32 j) {
  return (float)(nibble(b + 8, j) | (fifth(b + 4, j) << 4)) * half_at(b) + half_at(b + 2);
}

__device__ float q8_0(const u8* b, u32 j) { return (float)(signed char)b[2 + j] * half_at(b); }

// q2_K: scales[16] qs[64] d dmin. Value 128n + 32k + 16h + l: 2 bits of qs[32n + 16h + l] at
// shift 2k, under scale byte 8n + 2k + h (low nibble: scale, high: min).
__device__ float q2_k(const u8* b, u32 i) {
  const u32 n = i / 128, k = i / 32 % 4, h = i / 16 % 2, l = i % 16;
  const u32 sc = b[8 * n + 2 * k + h];
  const float dl = half_at(b + 80) * (float)(sc & 15), ml = half_at(b + 82) * (float)(sc >> 4);
  return dl * (float)((b[16 + 32 * n + 16 * h + l] >> (2 * k)) & 3) - ml;
}

// q3_K: hmask[32] qs[64] scales[12] d. Scale s: low 4 bits in nibble s / 8 of byte s % 8, high 2
// bits at 2 (s / 4) of byte 8 + s % 4; minus 4 where bit 4n + k of hmask[16h + l] is clear.
__device__ float q3_k(const u8* b, u32 i) {
  const u32 n = i / 128, k = i / 32 % 4, h = i / 16 % 2, l = i % 16, s = 8 * n + 2 * k + h;
  const u32 low = (b[96 + s % 8] >> (4 * (s / 8))) & 15, high = (b[104 + s % 4] >> (2 * (s / 4))) & 3;
  const float dl = half_at(b + 108) * (float)((int)(low | (high << 4)) - 32);
  const int v = (b[32 + 32 * n + 16 * h + l] >> (2 * k)) & 3;
  const int m = (b[16 * h + l] >> (4 * n + k)) & 1 ? 0 : 4;
  return dl * (float)(v - m);
}

// ggml's get_scale_min_k4: the 6-bit scale and min of run r of a q4_K / q5_K block.
__device__ __forceinline__ void scale_min_k4(const u8* q, u32 r, u32* sc, u32* m) {
  if (r < 4) {
    *sc = q[r] & 63;
    *m = q[r + 4] & 63;
  } else {
    *sc = (q[r + 4] & 15) | ((q[r - 4] >> 6) << 4);
    *m = (q[r + 4] >> 4) | ((q[r] >> 6) << 4);
  }
}

// q4_K: d dmin scales[12] qs[128]. Run r of 32: nibble r % 2 of qs[32 (r / 2) + l].
__device__ float q4_k(const u8* b, u32 i) {
  const u32 r = i / 32, l = i % 32;
  u32 sc, m;
  scale_min_k4(b + 4, r, &sc, &m);
  const float d1 = half_at(b) * (float)sc, m1 = half_at(b + 2) * (float)m;
  return d1 * (float)((b[16 + 32 * (r / 2) + l] >> (4 * (r % 2))) & 15) - m1;
}

// q5_K: d dmin scales[12] qh[32] qs[128]. As q4_K, plus 16 where bit r of qh[l] is set.
__device__ float q5_k(const u8* b, u32 i) {
  const u32 r = i / 32, l = i % 32;
  u32 sc, m;
  scale_min_k4(b + 4, r, &sc, &m);
  const float d1 = half_at(b) * (float)sc, m1 = half_at(b + 2) * (float)m;
  const u32 v = ((b[48 + 32 * (r / 2) + l] >> (4 * (r % 2))) & 15) + 16 * ((b[16 + l] >> r) & 1);
  return d1 * (float)v - m1;
}

// q6_K: ql[128] qh[64] scales[16] d. Value 128n + 32k + l: nibble k / 2 of
// ql[64n + 32 (k % 2) + l], 2 high bits at 2k of qh[32n + l], i8 scale 8n + 2k + l / 16.
__device__ float q6_k(const u8* b, u32 i) {
  const u32 n = i / 128, k = i / 32 % 4, l = i % 32;
  const u32 low = (b[64 * n + 32 * (k % 2) + l] >> (4 * (k / 2))) & 15;
  const u32 high = (b[128 + 32 * n + l] >> (2 * k)) & 3;
  const int sc = (signed char)b[192 + 8 * n + 2 * k + l / 16];
  return half_at(b + 208) * (float)sc * (float)((int)(low | (high << 4)) - 32);
}

// Element i of the blocks of type t (ggml's id).
__device__ __forceinline__ float dequant(u32 t, const u8* q, u64 i) {
  switch (t) {
    case 2: return q4_0(q + i / 32 * 18, i % 32);
    case 3: return q4_1(q + i / 32 * 20, i % 32);
    case 6: return q5_0(q + i / 32 * 22, i % 32);
    case 7: return q5_1(q + i / 32 * 24, i % 32);
    case 8: return q8_0(q + i / 32 * 34, i % 32);
    case 10: return q2_k(q + i / 256 * 84, i % 256);
    case 11: return q3_k(q + i / 256 * 110, i % 256);
    case 12: return q4_k(q + i / 256 * 144, i % 256);
    case 13: return q5_k(q + i / 256 * 176, i % 256);
    default: return q6_k(q + i / 256 * 210, i % 256);
  }
}

#define RWO_DEQUANTIZE(op, T)                                      \
  RWO_KERNEL op##_##T(u64 n, u32 t, const u8* q, T* y) {           \
    for_each(n, [&](u32 i) { y[i] = num<T>::store(dequant(t, q, i)); }); \
  }
#define DEQUANTIZE(op, ...) RWO_EACH(RWO_DEQUANTIZE, op, __VA_ARGS__)

DEQUANTIZE(dequantize, f32, f16, bf16)

// qmatvec: x [rows, K] (through its strides) times the N rows of blocks transposed, for few rows.
// A warp per weight row (QMV_THREADS / warpSize rows a block); lane i takes the runs of QMV_RUN
// values i, i + warpSize, ... (a run lies inside one block), decodes each once and adds its
// products with each of the MQ rows of x to that row's f32 accumulator; the accumulators are
// added across the warp by shuffles (warpSize lanes: 32 or 64) and lane 0 writes y[i, n] for
// each row i of x.
// Where the blocks start on even addresses (`QmvArgs::even`), q8_0, q4_0, q4_K and q6_K runs are
// decoded from 16-bit loads with their block's fields read once a run (run8 below; ggml's values,
// the integers made f32 without a conversion instruction); the other types, and odd addresses,
// value by value through the functions above. Where x's rows are contiguous 16-byte-aligned
// vectors (`QmvArgs::xvec`), a run's 8 values of x come in whole vectors.
#define QMV_THREADS 128
#define QMV_RUN 8
#define QMV_MAX_ROWS 8

// `struct QmvArgs` of src/native/quant.rs: the first weight row of the launch, N, K, the block's
// values and bytes, the rows, x's stride along K, the offset in x of each row (past `rows`: the
// last again), ggml's id of the type, whether the blocks start on even addresses and whether
// x's rows are aligned vectors.
struct QmvArgs {
  u64 first, n, k, bs, bb, rows, sk;
  u64 row[QMV_MAX_ROWS];
  u64 t, even, xvec;
};

// Values j0 .. j0 + QMV_RUN of the block at b, decoded by F.
template <float (*F)(const u8*, u32)>
__device__ __forceinline__ void decode_run(const u8* b, u32 j0, float* w) {
#pragma unroll
  for (u32 e = 0; e < QMV_RUN; ++e) w[e] = F(b, j0 + e);
}

// An integer 0 <= v < 2^23 as f32, exactly, minus `bias` (an integer): 2^23 + v is the f32 whose
// mantissa is v, so no conversion instruction (a quarter of the f32 rate) runs.
__device__ __forceinline__ float small_f32(u32 v, float bias) {
  return __int_as_float(0x4B000000u | v) - (8388608.0f + bias);
}

// The 8 bytes at p (an even address) from four 16-bit loads.
__device__ __forceinline__ void bytes8(const u8* p, u32* b) {
  const unsigned short* h = reinterpret_cast<const unsigned short*>(p);
#pragma unroll
  for (u32 i = 0; i < 4; ++i) {
    const u32 v = h[i];
    b[2 * i] = v & 255;
    b[2 * i + 1] = v >> 8;
  }
}

// Values j0 .. j0 + 8 (j0 a multiple of 8) of one block of type TY (q4_0, q8_0, q4_K or q6_K)
// at an even address, each the value of the per-value function of its type.
template <u32 TY>
__device__ __forceinline__ void run8(const u8* b, u32 j0, float* w) {
  u32 q[8];
  if constexpr (TY == 2) {  // q4_0: (nibble - 8) d
    bytes8(b + 2 + j0 % 16, q);
    const float d = half_at(b);
#pragma unroll
    for (u32 e = 0; e < 8; ++e) w[e] = small_f32((q[e] >> (4 * (j0 / 16))) & 15, 8.0f) * d;
  } else if constexpr (TY == 8) {  // q8_0: i8 d
    bytes8(b + 2 + j0, q);
    const float d = half_at(b);
#pragma unroll
    for (u32 e = 0; e < 8; ++e) w[e] = small_f32(q[e] ^ 128, 128.0f) * d;
  } else if constexpr (TY == 12) {  // q4_K: d sc nibble - dmin m
    const u32 r = j0 / 32;
    u32 sc, m;
    scale_min_k4(b + 4, r, &sc, &m);
    const float d1 = half_at(b) * (float)sc, m1 = half_at(b + 2) * (float)m;
    bytes8(b + 16 + 32 * (r / 2) + j0 % 32, q);
#pragma unroll
    for (u32 e = 0; e < 8; ++e) w[e] = d1 * small_f32((q[e] >> (4 * (r % 2))) & 15, 0.0f) - m1;
  } else {  // q6_K: d sc (6 bits - 32)
    static_assert(TY == 14, "a type with a run decoder");
    const u32 n = j0 / 128, k = j0 / 32 % 4, l = j0 % 32;
    u32 h[8];
    bytes8(b + 64 * n + 32 * (k % 2) + l, q);
    bytes8(b + 128 + 32 * n + l, h);
    const float dsc = half_at(b + 208) * (float)(int)(signed char)b[192 + 8 * n + 2 * k + l / 16];
#pragma unroll
    for (u32 e = 0; e < 8; ++e)
      w[e] = dsc * small_f32(((q[e] >> (4 * (k / 2))) & 15) | (((h[e] >> (2 * k)) & 3) << 4), 32.0f);
  }
}

// The same for the block type t, at any address, value by value: one branch per run.
__device__ __forceinline__ void decode_run(u32 t, const u8* b, u32 j0, float* w) {
  switch (t) {
    case 2: decode_run<q4_0>(b, j0, w); break;
    case 3: decode_run<q4_1>(b, j0, w); break;
    case 6: decode_run<q5_0>(b, j0, w); break;
    case 7: decode_run<q5_1>(b, j0, w); break;
    case 8: decode_run<q8_0>(b, j0, w); break;
    case 10: decode_run<q2_k>(b, j0, w); break;
    case 11: decode_run<q3_k>(b, j0, w); break;
    case 12: decode_run<q4_k>(b, j0, w); break;
    case 13: decode_run<q5_k>(b, j0, w); break;
    default: decode_run<q6_k>(b, j0, w); break;
  }
}

// The 8 values of x at p as f32: one or two 16-byte vectors (`vec`), else through stride sk.
template <class T>
__device__ __forceinline__ void x8(const T* p, u64 sk, bool vec, float* v) {
  if (vec) {
    if constexpr (sizeof(T) == 4) {
      const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
      v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    } else {
      const uint4 a = *reinterpret_cast<const uint4*>(p);
      const u32 words[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
      for (u32 i = 0; i < 8; ++i) {
        T h;
        h.bits = (unsigned short)(words[i / 2] >> (16 * (i % 2)));
        v[i] = num<T>::load(h);
      }
    }
    return;
  }
#pragma unroll
  for (u32 e = 0; e < 8; ++e) v[e] = num<T>::load(p[e * sk]);
}

// One lane's runs of a weight row into its MQ accumulators: decoded by run8<TY>, or value by
// value (TY 0). Unrolled so that the loads of several runs are in flight at once.
template <class T, int MQ, u32 TY>
__device__ __forceinline__ void qmv_runs(const QmvArgs& a, const u8* row, const T* x, u32 lane, u32 warp, float* acc) {
  const bool xvec = a.xvec != 0;
#pragma unroll 4
  for (u64 k0 = (u64)lane * QMV_RUN; k0 < a.k; k0 += (u64)warp * QMV_RUN) {
    float w[QMV_RUN];
    const u8* b = row + k0 / a.bs * a.bb;
    if constexpr (TY == 0)
      decode_run((u32)a.t, b, (u32)(k0 % a.bs), w);
    else
      run8<TY>(b, (u32)(k0 % a.bs), w);
#pragma unroll
    for (int i = 0; i < MQ; ++i) {
      float xv[QMV_RUN];
      x8(x + a.row[i] + k0 * a.sk, a.sk, xvec, xv);
#pragma unroll
      for (int e = 0; e < QMV_RUN; ++e) acc[i] += w[e] * xv[e];
    }
  }
}

template <class T, int MQ>
__device__ __forceinline__ void qmatvec(const QmvArgs& a, const u8* q, const T* x, T* y) {
  const u32 warp = (u32)warpSize, lane = threadIdx.x % warp;
  const u64 n = a.first + (u64)blockIdx.x * (QMV_THREADS / warp) + threadIdx.x / warp;
  if (n >= a.n) return;
  const u8* row = q + n * (a.k / a.bs) * a.bb;
  float acc[MQ];
#pragma unroll
  for (int i = 0; i < MQ; ++i) acc[i] = 0.0f;
  switch (a.even ? a.t : 0) {
    case 2: qmv_runs<T, MQ, 2>(a, row, x, lane, warp, acc); break;
    case 8: qmv_runs<T, MQ, 8>(a, row, x, lane, warp, acc); break;
    case 12: qmv_runs<T, MQ, 12>(a, row, x, lane, warp, acc); break;
    case 14: qmv_runs<T, MQ, 14>(a, row, x, lane, warp, acc); break;
    default: qmv_runs<T, MQ, 0>(a, row, x, lane, warp, acc); break;
  }
#pragma unroll
  for (int i = 0; i < MQ; ++i) {
    for (u32 d = warp >> 1; d > 0; d >>= 1) acc[i] += shfl_down(acc[i], (int)d);
  }
#pragma unroll
  for (int i = 0; i < MQ; ++i) {
    if (lane == 0 && (u64)i < a.rows) y[i * a.n + n] = num<T>::store(acc[i]);
  }
}

#define RWO_QMATVEC(op, T)                                                                          \
  RWO_KERNEL op##_##T(QmvArgs a, const u8* q, const T* x, T* y) { qmatvec<T, 1>(a, q, x, y); }    \
  RWO_KERNEL op##_##T##_m2(QmvArgs a, const u8* q, const T* x, T* y) { qmatvec<T, 2>(a, q, x, y); } \
  RWO_KERNEL op##_##T##_m4(QmvArgs a, const u8* q, const T* x, T* y) { qmatvec<T, 4>(a, q, x, y); } \
  RWO_KERNEL op##_##T##_m8(QmvArgs a, const u8* q, const T* x, T* y) { qmatvec<T, 8>(a, q, x, y); }
#define QMATVEC(op, ...) RWO_EACH(RWO_QMATVEC, op, __VA_ARGS__)

QMATVEC(qmatvec, f32, f16, bf16)
