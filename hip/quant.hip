// GGML blocks (ggml-common.h's layouts) dequantized to f32, f16 or bf16: ggml's values, the same
// f32 steps in the same order (the runtimes compile without contraction: -ffp-contract=off,
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
