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

// qmatvec: x [rows, K] (through its strides) times the N rows of blocks transposed, for few rows.
// A warp per QMV_ROWS weight rows (QMV_ROWS QMV_THREADS / warpSize rows a block). A row is cut
// into units of 32 values (16 for q8_0, 8 in the fallback) inside one block; lane i takes the
// units i, i + warpSize, ... of each of its rows (neighbouring lanes read neighbouring bytes). A
// unit is decoded once (`Unit<TY, A>` below) into its small integers q as f32 and, per run (RUNS
// stretches of VALUES / RUNS consecutive values of the row), a scale d and, for the types with
// mins, a min m: the run's weights are d q - m, ggml's values. Each of the MQ rows of x adds
// d sum(q x) - m sum(x) per run to each weight row's f32 accumulator (the sums by fused
// multiply-adds; a run of x is read once for the warp's rows), as llama.cpp's matrix-vector
// kernels apply the scales. The accumulators are added across the warp by shuffles (warpSize
// lanes: 32 or 64) and lane 0 writes y[i, n] for each row i of x and weight row n.
// q4_0, q8_0 and q6_K units are read as 32-bit words (their blocks start on even addresses:
// `QmvArgs::align`; `words` shifts two aligned words where a word is not), q4_K's as 16-byte
// vectors (its 144-byte blocks on 16-byte boundaries); other types and alignments value by value
// through the functions above (`Unit<0, 1>`: units of 8, one run, d = 1). Where x's rows are
// contiguous 16-byte-aligned vectors (`QmvArgs::xvec`), a run's values of x come in whole vectors.
#define QMV_THREADS 128
// Weight rows per warp (`QMV_ROWS` of src/native/quant.rs). 4 measured slower than 2 on an H200
// (q8_0 23.9 -> 27.6 us, q6_K 24.5 -> 40.5 at [1,4096] x [14336,4096]^T; q4_K 20.0 -> 19.2).
#define QMV_ROWS 2
#define QMV_MAX_ROWS 8

// `struct QmvArgs` of src/native/quant.rs: the first weight row of the launch, N, K, the block's
// values and bytes, the rows, x's stride along K, the offset in x of each row (past `rows`: the
// last again), ggml's id of the type, the alignment of every block's start (1, 2 or 16 bytes)
// and whether x's rows are aligned vectors.
struct QmvArgs {
  u64 first, n, k, bs, bb, rows, sk;
  u64 row[QMV_MAX_ROWS];
  u64 t, align, xvec;
};

// The word at p; NC: through NVIDIA's read-only data path (`ld.global.nc`; a plain load on
// AMD).
template <bool NC>
__device__ __forceinline__ u32 load(const u32* p) {
#if defined(__CUDACC_RTC__)
  if constexpr (NC) return __ldg(p);
#endif
  return *p;
}

// N little-endian 32-bit words from p, an address aligned to A bytes (16 or 2): whole vectors, or
// (A = 2) the aligned words from p rounded down to 4 bytes, shifted by its 2 bytes (one more word
// where p is not on 4 bytes: every load is of an aligned word holding bytes asked for, so none
// reaches past the buffer's last aligned word).
template <u32 A, u32 N, bool NC = false>
__device__ __forceinline__ void words(const u8* p, u32* w) {
  static_assert(A == 16 || A == 2, "16-byte vectors or 2-byte alignment");
  if constexpr (A == 16) {
    static_assert(N % 4 == 0, "whole vectors");
#pragma unroll
    for (u32 i = 0; i < N / 4; ++i) {
      const uint4 v = reinterpret_cast<const uint4*>(p)[i];
      w[4 * i] = v.x, w[4 * i + 1] = v.y, w[4 * i + 2] = v.z, w[4 * i + 3] = v.w;
    }
  } else {
    const u32 off = (u32)reinterpret_cast<u64>(p) & 2;
    const u32* v = reinterpret_cast<const u32*>(p - off);
    u32 next = load<NC>(v);
#pragma unroll
    for (u32 i = 0; i < N; ++i) {
      const u32 cur = next;
      next = (i + 1 < N || off) ? load<NC>(v + i + 1) : 0;
      w[i] = (u32)((((u64)next << 32) | cur) >> (8 * off));
    }
  }
}

// Byte i of w (an integer below 2^8) as f32 minus `bias`, exactly: 2^23 + v is the f32 whose
// mantissa is v, so no conversion instruction (a quarter of the f32 rate) runs.
__device__ __forceinline__ float byte_f32(u32 w, u32 i, float bias) {
#if defined(__CUDACC_RTC__)
  const u32 bits = __byte_perm(w, 0x4B000000u, 0x7440u | i);
#else
  const u32 bits = 0x4B000000u | ((w >> (8 * i)) & 255u);
#endif
  return __int_as_float(bits) - (8388608.0f + bias);
}

// The low nibbles of the N words of w, then their high nibbles, each in a byte of v (2N words).
template <u32 N>
__device__ __forceinline__ void nibbles(const u32* w, u32* v) {
#pragma unroll
  for (u32 i = 0; i < N; ++i) v[i] = w[i] & 0x0F0F0F0Fu, v[N + i] = (w[i] >> 4) & 0x0F0F0F0Fu;
}

// The 4 bytes of each of the N words of w as 4N values q (byte order) minus `bias`.
template <u32 N>
__device__ __forceinline__ void bytes_f32(const u32* w, float bias, float* q) {
#pragma unroll
  for (u32 i = 0; i < 4 * N; ++i) q[i] = byte_f32(w[i / 4], i % 4, bias);
}

// Unit j of the block at b: q[32], the runs' scales d and mins m (`MIN` types), and each run's
// first value within the block (`at`).
template <u32 TY, u32 A>
struct Unit;

template <u32 A>
struct Unit<2, A> {  // q4_0: d qs[16]; value l: nibble l / 16 of qs[l % 16], minus 8, times d
  static constexpr u32 VALUES = 32, RUNS = 1, PER_BLOCK = 1;
  static constexpr bool MIN = false;
  static __device__ __forceinline__ void decode(const u8* b, u32, float* q, float* d, float*, u32* at) {
    u32 w[4], v[8];
    words<A, 4>(b + 2, w);
    nibbles<4>(w, v);
    bytes_f32<8>(v, 8.0f, q);
    d[0] = half_at(b);
    at[0] = 0;
  }
};

// q8_0: d qs[32] (i8). Unit j: half a block, qs[16j ..][16], so two neighbouring lanes read a
// block. H200, f16, us: `qmatvec` [1,4096] x [14336,4096]^T 23.9-24.0 with whole blocks, 22.3-22.6
// with halves, 29.8 with quarters (q6_K's branch of the same kernel 24.6 -> 25.4); `dequantize`
// to f16 [4096,4096] 25.2 -> 15.2.
template <u32 A>
struct Unit<8, A> {
  static constexpr u32 VALUES = 16, RUNS = 1, PER_BLOCK = 2;
  static constexpr bool MIN = false;
  static __device__ __forceinline__ void decode(const u8* b, u32 j, float* q, float* d, float*, u32* at) {
    u32 w[4];
    words<A, 4>(b + 2 + 16 * j, w);
#pragma unroll
    for (u32 i = 0; i < 4; ++i) w[i] ^= 0x80808080u;  // i8 v as the byte v + 128
    bytes_f32<4>(w, 128.0f, q);
    d[0] = half_at(b);
    at[0] = 16 * j;
  }
};

// scale_min_k4 on the three little-endian words of scales[12] (s[0..3]).
__device__ __forceinline__ void scale_min_k4w(const u32* s, u32 r, u32* sc, u32* m) {
  const u32 sh = 8 * (r % 4);
  const u32 lo = (r < 4 ? s[0] : s[2]) >> sh, hi_sc = s[0] >> sh, hi_m = s[1] >> sh;
  *sc = r < 4 ? lo & 63 : (lo & 15) | ((hi_sc >> 6) & 3) << 4;
  *m = r < 4 ? hi_m & 63 : ((lo >> 4) & 15) | ((hi_m >> 6) & 3) << 4;
}

// q4_K: d dmin scales[12] qs[128]; value 64c + 32h + l (l < 32): nibble h of qs[32c + l], under
// sub-block 2c + h's 6-bit scale and min. Unit j takes qs[16j ..][16]: c = j / 2, l from 16 (j % 2),
// its low nibbles run 0 and its high nibbles run 1.
template <u32 A>
struct Unit<12, A> {
  static constexpr u32 VALUES = 32, RUNS = 2, PER_BLOCK = 8;
  static constexpr bool MIN = true;
  static __device__ __forceinline__ void decode(const u8* b, u32 j, float* q, float* d, float* m, u32* at) {
    u32 h[4], w[4], v[8];
    words<A, 4>(b, h);
    words<A, 4>(b + 16 + 16 * j, w);
    nibbles<4>(w, v);
    bytes_f32<8>(v, 0.0f, q);
    const u32 c = j / 2;
    const float dd = f16_to_f32(f16{(unsigned short)(h[0] & 0xFFFF)});
    const float dm = f16_to_f32(f16{(unsigned short)(h[0] >> 16)});
#pragma unroll
    for (u32 r = 0; r < 2; ++r) {
      u32 sc, mn;
      scale_min_k4w(h + 1, 2 * c + r, &sc, &mn);
      d[r] = dd * (float)sc;
      m[r] = dm * (float)mn;
      at[r] = 64 * c + 32 * r + 16 * (j % 2);
    }
  }
};

// q6_K: ql[128] qh[64] scales[16] d; value 128n + 32k + l: nibble k / 2 of ql[64n + 32 (k % 2) +
// l], 2 high bits at 2k of qh[32n + l], minus 32, under the i8 scale 8n + 2k + l / 16. Unit j:
// n = j / 4, l from 8 (j % 4), run k for k = 0 .. 3. Its words through the read-only data path
// (H200, f16 [1,4096] x [14336,4096]^T, three rounds: 25.4-25.6 -> 24.5-24.6 us; q8_0's and
// q4_0's the same way no faster: 22.3-22.5 -> 22.5, 16.9-17.1 -> 17.2-17.3).
template <u32 A>
struct Unit<14, A> {
  static constexpr u32 VALUES = 32, RUNS = 4, PER_BLOCK = 8;
  static constexpr bool MIN = false;
  static __device__ __forceinline__ void decode(const u8* b, u32 j, float* q, float* d, float*, u32* at) {
    const u32 n = j / 4, l = 8 * (j % 4);
    u32 lo[2], hi[2], qh[2], v[8];
    words<A, 2, true>(b + 64 * n + l, lo);
    words<A, 2, true>(b + 64 * n + 32 + l, hi);
    words<A, 2, true>(b + 128 + 32 * n + l, qh);
#pragma unroll
    for (u32 i = 0; i < 2; ++i) {
      v[i] = (lo[i] & 0x0F0F0F0Fu) | ((qh[i] & 0x03030303u) << 4);
      v[2 + i] = (hi[i] & 0x0F0F0F0Fu) | ((qh[i] & 0x0C0C0C0Cu) << 2);
      v[4 + i] = ((lo[i] >> 4) & 0x0F0F0F0Fu) | (qh[i] & 0x30303030u);
      v[6 + i] = ((hi[i] >> 4) & 0x0F0F0F0Fu) | ((qh[i] >> 2) & 0x30303030u);
    }
    bytes_f32<8>(v, 32.0f, q);
    const float dd = half_at(b + 208);
#pragma unroll
    for (u32 k = 0; k < 4; ++k) {
      d[k] = dd * (float)(int)(signed char)b[192 + 8 * n + 2 * k + l / 16];
      at[k] = 128 * n + 32 * k + l;
    }
  }
};

// Values j0 .. j0 + 8 of the block at b, each by F.
template <float (*F)(const u8*, u32)>
__device__ __forceinline__ void decode8(const u8* b, u32 j0, float* q) {
#pragma unroll
  for (u32 e = 0; e < 8; ++e) q[e] = F(b, j0 + e);
}

// Any type at any address: units of 8 consecutive values, each by its type's function (one
// branch a unit), one run with d = 1.
template <>
struct Unit<0, 1> {
  static constexpr u32 VALUES = 8, RUNS = 1, PER_BLOCK = 0;  // bs / 8
  static constexpr bool MIN = false;
  static __device__ __forceinline__ void decode(u32 t, const u8* b, u32 j, float* q, float* d, u32* at) {
    at[0] = 8 * j;
    d[0] = 1.0f;
    switch (t) {
      case 2: decode8<q4_0>(b, at[0], q); break;
      case 3: decode8<q4_1>(b, at[0], q); break;
      case 6: decode8<q5_0>(b, at[0], q); break;
      case 7: decode8<q5_1>(b, at[0], q); break;
      case 8: decode8<q8_0>(b, at[0], q); break;
      case 10: decode8<q2_k>(b, at[0], q); break;
      case 11: decode8<q3_k>(b, at[0], q); break;
      case 12: decode8<q4_k>(b, at[0], q); break;
      case 13: decode8<q5_k>(b, at[0], q); break;
      default: decode8<q6_k>(b, at[0], q); break;
    }
  }
};

// The L values v rounded to T and stored at y (16-byte aligned) as whole 16-byte vectors.
template <class T, u32 L>
__device__ __forceinline__ void store_run(T* y, const float* v) {
  constexpr u32 N = L * sizeof(T) / 4;
  static_assert(N % 4 == 0, "whole vectors");
  u32 w[N];
#pragma unroll
  for (u32 i = 0; i < N; ++i) {
    if constexpr (sizeof(T) == 4)
      w[i] = __float_as_uint(v[i]);
    else
      w[i] = (u32)num<T>::store(v[2 * i]).bits | (u32)num<T>::store(v[2 * i + 1]).bits << 16;
  }
#pragma unroll
  for (u32 i = 0; i < N / 4; ++i) reinterpret_cast<uint4*>(y)[i] = make_uint4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]);
}

// dequantize's `_units` form: thread u decodes unit u of the blocks (`Unit<TY, A>`: 16 or 32
// values from whole words) and stores each run's values, d q - m (ggml's steps in its order: q4_K's
// d sc q - dmin m as (d sc) q - (dmin m), q6_K's d sc q as (d sc) q), as 16-byte vectors.
template <class T, u32 TY, u32 A>
__device__ __forceinline__ void dequant_units(u64 units, u64 bb, const u8* q, T* y) {
  using U = Unit<TY, A>;
  constexpr u32 L = U::VALUES / U::RUNS;
  for_each(units, [&](u32 u) {
    const u32 blk = u / U::PER_BLOCK, j = u % U::PER_BLOCK;
    float v[U::VALUES], d[U::RUNS], m[U::RUNS];
    u32 at[U::RUNS];
    U::decode(q + (u64)blk * bb, j, v, d, m, at);
    T* out = y + (u64)blk * (U::VALUES * U::PER_BLOCK);
#pragma unroll
    for (u32 g = 0; g < U::RUNS; ++g) {
      float r[L];
#pragma unroll
      for (u32 e = 0; e < L; ++e) {
        if constexpr (U::MIN)
          r[e] = d[g] * v[L * g + e] - m[g];
        else
          r[e] = v[L * g + e] * d[g];
      }
      store_run<T, L>(out + at[g], r);
    }
  });
}

// One thread per value (`dequantize_T`), or per unit (`_units`: q4_0, q8_0 and q6_K blocks on
// even addresses, q4_K's on 16 bytes; `dequantize` in src/native/quant.rs chooses).
template <class T>
__device__ __forceinline__ void dequantize_units(u64 units, u32 t, u64 bb, const u8* q, T* y) {
  if (t == 2)
    dequant_units<T, 2, 2>(units, bb, q, y);
  else if (t == 8)
    dequant_units<T, 8, 2>(units, bb, q, y);
  else if (t == 12)
    dequant_units<T, 12, 16>(units, bb, q, y);
  else
    dequant_units<T, 14, 2>(units, bb, q, y);
}

#define RWO_DEQUANTIZE(op, T)                                                                    \
  RWO_KERNEL op##_##T(u64 n, u32 t, const u8* q, T* y) {                                         \
    for_each(n, [&](u32 i) { y[i] = num<T>::store(dequant(t, q, i)); });                         \
  }                                                                                              \
  RWO_KERNEL op##_##T##_units(u64 units, u32 t, u64 bb, const u8* q, T* y) { dequantize_units<T>(units, t, bb, q, y); }
#define DEQUANTIZE(op, ...) RWO_EACH(RWO_DEQUANTIZE, op, __VA_ARGS__)

DEQUANTIZE(dequantize, f32, f16, bf16)

// The L values of x at p as f32: whole 16-byte vectors (`vec`; L a multiple of 8), else through
// stride sk.
template <class T, u32 L>
__device__ __forceinline__ void xrun(const T* p, u64 sk, bool vec, float* v) {
  if (vec) {
    if constexpr (sizeof(T) == 4) {
#pragma unroll
      for (u32 i = 0; i < L / 4; ++i) {
        const float4 a = reinterpret_cast<const float4*>(p)[i];
        v[4 * i] = a.x, v[4 * i + 1] = a.y, v[4 * i + 2] = a.z, v[4 * i + 3] = a.w;
      }
    } else {
      u32 w[L / 2];
      words<16, L / 2>(reinterpret_cast<const u8*>(p), w);
#pragma unroll
      for (u32 i = 0; i < L; ++i) {
        T h;
        h.bits = (unsigned short)(w[i / 2] >> (16 * (i % 2)));
        v[i] = num<T>::load(h);
      }
    }
    return;
  }
#pragma unroll
  for (u32 e = 0; e < L; ++e) v[e] = num<T>::load(p[e * sk]);
}

// One lane's units of the QMV_ROWS weight rows at `rows` into their MQ accumulators each: the
// rows' units decoded first, then each run of x read once for all of them.
template <class T, int MQ, u32 TY, u32 A>
__device__ __forceinline__ void qmv_units(const QmvArgs& a, const u8* const* rows, const T* x, u32 lane, u32 warp,
                                          float (*acc)[MQ]) {
  using U = Unit<TY, A>;
  constexpr u32 L = U::VALUES / U::RUNS;
  const bool xvec = a.xvec != 0;
  const u32 per_block = U::PER_BLOCK ? U::PER_BLOCK : (u32)a.bs / U::VALUES, units = (u32)(a.k / U::VALUES);
  const T* xs[MQ];
#pragma unroll
  for (int i = 0; i < MQ; ++i) xs[i] = x + a.row[i];
  for (u32 u = lane; u < units; u += warp) {
    const u32 blk = u / per_block, j = u % per_block;
    float q[QMV_ROWS][U::VALUES], d[QMV_ROWS][U::RUNS], m[QMV_ROWS][U::RUNS];
    u32 at[U::RUNS];
#pragma unroll
    for (u32 r = 0; r < QMV_ROWS; ++r) {
      const u8* b = rows[r] + (u64)blk * a.bb;
      if constexpr (TY == 0)
        U::decode((u32)a.t, b, j, q[r], d[r], at);
      else
        U::decode(b, j, q[r], d[r], m[r], at);
    }
#pragma unroll
    for (int i = 0; i < MQ; ++i) {
#pragma unroll
      for (u32 g = 0; g < U::RUNS; ++g) {
        float xv[L], sx = 0.0f;
        xrun<T, L>(xs[i] + (u64)(blk * (u32)a.bs + at[g]) * a.sk, a.sk, xvec, xv);
        if constexpr (U::MIN) {
#pragma unroll
          for (u32 e = 0; e < L; ++e) sx += xv[e];
        }
#pragma unroll
        for (u32 r = 0; r < QMV_ROWS; ++r) {
          float s = 0.0f;
#pragma unroll
          for (u32 e = 0; e < L; ++e) s = fmaf(q[r][L * g + e], xv[e], s);
          acc[r][i] = fmaf(d[r][g], s, acc[r][i]);
          if constexpr (U::MIN) acc[r][i] = fmaf(-m[r][g], sx, acc[r][i]);
        }
      }
    }
  }
}

// The end of qmatvec and qmatvec_q8: each accumulator summed over the warp by shuffles, lane 0
// writing y[i, n] for the rows of x and the weight rows that exist.
template <class T, int MQ>
__device__ __forceinline__ void qmv_store(const QmvArgs& a, u64 n0, u32 lane, u32 warp, float (*acc)[MQ], T* y) {
#pragma unroll
  for (u32 r = 0; r < QMV_ROWS; ++r) {
#pragma unroll
    for (int i = 0; i < MQ; ++i) {
      for (u32 d = warp >> 1; d > 0; d >>= 1) acc[r][i] += shfl_down(acc[r][i], (int)d);
      if (lane == 0 && (u64)i < a.rows && n0 + r < a.n) y[i * a.n + n0 + r] = num<T>::store(acc[r][i]);
    }
  }
}

template <class T, int MQ>
__device__ __forceinline__ void qmatvec(const QmvArgs& a, const u8* q, const T* x, T* y) {
  const u32 warp = (u32)warpSize, lane = threadIdx.x % warp;
  const u64 n0 = a.first + ((u64)blockIdx.x * (QMV_THREADS / warp) + threadIdx.x / warp) * QMV_ROWS;
  if (n0 >= a.n) return;
  // Rows past N (the last warp's) read row N - 1 again and write nothing.
  const u8* rows[QMV_ROWS];
#pragma unroll
  for (u32 r = 0; r < QMV_ROWS; ++r) rows[r] = q + min(n0 + r, a.n - 1) * (a.k / a.bs) * a.bb;
  float acc[QMV_ROWS][MQ];
#pragma unroll
  for (u32 r = 0; r < QMV_ROWS; ++r) {
#pragma unroll
    for (int i = 0; i < MQ; ++i) acc[r][i] = 0.0f;
  }
  if (a.t == 2 && a.align >= 2)
    qmv_units<T, MQ, 2, 2>(a, rows, x, lane, warp, acc);
  else if (a.t == 8 && a.align >= 2)
    qmv_units<T, MQ, 8, 2>(a, rows, x, lane, warp, acc);
  else if (a.t == 12 && a.align >= 16)
    qmv_units<T, MQ, 12, 16>(a, rows, x, lane, warp, acc);
  else if (a.t == 14 && a.align >= 2)
    qmv_units<T, MQ, 14, 2>(a, rows, x, lane, warp, acc);
  else
    qmv_units<T, MQ, 0, 1>(a, rows, x, lane, warp, acc);
  qmv_store<T, MQ>(a, n0, lane, warp, acc, y);
}

#define RWO_QMATVEC(op, T)                                                                          \
  RWO_KERNEL op##_##T(QmvArgs a, const u8* q, const T* x, T* y) { qmatvec<T, 1>(a, q, x, y); }    \
  RWO_KERNEL op##_##T##_m2(QmvArgs a, const u8* q, const T* x, T* y) { qmatvec<T, 2>(a, q, x, y); } \
  RWO_KERNEL op##_##T##_m4(QmvArgs a, const u8* q, const T* x, T* y) { qmatvec<T, 4>(a, q, x, y); } \
  RWO_KERNEL op##_##T##_m8(QmvArgs a, const u8* q, const T* x, T* y) { qmatvec<T, 8>(a, q, x, y); }
#define QMATVEC(op, ...) RWO_EACH(RWO_QMATVEC, op, __VA_ARGS__)

QMATVEC(qmatvec, f32, f16, bf16)

// The scale of a q8 activation block from the bits of its largest magnitude (spec::quant::q8_scale:
// the magnitudes compared as integers, a NaN above infinity).
__device__ __forceinline__ float q8_scale(u32 amax) {
  if (amax >= 0x7f800000u) return __int_as_float(0x7fc00000);
  if (amax < 0x0d800000u) return 0.0f;
  const float m = __fmul_rn(__int_as_float((int)amax), __int_as_float(0x3c010204));
  return __int_as_float((int)(((u32)__float_as_int(m) + 0x1000u) & 0xffffe000u));
}

// x / d to the nearest integer, ties to even, exactly (spec::quant::q8_round): a candidate from an
// approximate 1 / d, corrected by comparing x with (r -+ 1/2) d, both products exact.
__device__ __forceinline__ float q8_round(float x, float d) {
  if (d == 0.0f) return 0.0f;
  const float r = rintf(x * (1.0f / d));
  const float lo = __fmul_rn(r - 0.5f, d), hi = __fmul_rn(r + 0.5f, d);
  const bool odd = ((int)r & 1) != 0;
  if (x < lo || (x == lo && odd)) return r - 1.0f;
  if (x > hi || (x == hi && odd)) return r + 1.0f;
  return r;
}

// Run g of x's rows (a.rows x K / 32 runs of 32 values; row i's from a.row[i], along K by a.sk)
// into v as f32; returns the run's scale.
template <class T>
__device__ __forceinline__ float q8_run(const QmvArgs& a, const T* x, u64 g, float* v) {
  const u64 per = a.k / 32;
  const T* p = x + a.row[g / per] + (g % per) * 32 * a.sk;
  u32 amax = 0;
#pragma unroll
  for (u32 e = 0; e < 32; ++e) {
    v[e] = num<T>::load(p[e * a.sk]);
    amax = max(amax, (u32)__float_as_int(v[e]) & 0x7fffffffu);
  }
  return q8_scale(amax);
}

// x's rows rounded to q8 activation blocks: a thread per run, writing the f32 values d q to y
// [rows, K] (run g's at 32 g).
template <class T>
__device__ __forceinline__ void round_q8(const QmvArgs& a, const T* x, float* y) {
  const u64 g = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= a.rows * (a.k / 32)) return;
  float v[32];
  const float d = q8_run(a, x, g, v);
#pragma unroll
  for (u32 e = 0; e < 32; ++e) y[32 * g + e] = q8_round(v[e], d) * d;
}

// round_q8 packed for qmatvec_q8 (`_pack`): row i's values as i8 words from word i K / 4 of y,
// then the runs' d from word R K / 4 (R = a.rows; row i's from R K / 4 + i K / 32), then their
// d sum(q) from R K / 4 + R K / 32, as f32.
template <class T>
__device__ __forceinline__ void round_q8_pack(const QmvArgs& a, const T* x, u32* y) {
  const u64 per = a.k / 32, g = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= a.rows * per) return;
  float v[32];
  const float d = q8_run(a, x, g, v);
  int sum = 0;
#pragma unroll
  for (u32 w = 0; w < 8; ++w) {
    u32 word = 0;
#pragma unroll
    for (u32 e = 0; e < 4; ++e) {
      const int q = (int)q8_round(v[4 * w + e], d);
      sum += q;
      word |= ((u32)q & 255u) << (8 * e);
    }
    y[8 * g + w] = word;
  }
  float* f = reinterpret_cast<float*>(y + a.rows * (a.k / 4));
  f[g] = d;
  f[a.rows * per + g] = d * (float)sum;
}

#define RWO_ROUND_Q8(op, T)                                                                       \
  RWO_KERNEL op##_##T(QmvArgs a, const T* x, float* y) { round_q8<T>(a, x, y); }                 \
  RWO_KERNEL op##_##T##_pack(QmvArgs a, const T* x, u32* y) { round_q8_pack<T>(a, x, y); }
#define ROUND_Q8(op, ...) RWO_EACH(RWO_ROUND_Q8, op, __VA_ARGS__)

ROUND_Q8(round_q8, f32, f16, bf16)

// sum over the 4 bytes of a and b (as i8) of their products, plus c.
__device__ __forceinline__ int dot4(u32 a, u32 b, int c) {
#if defined(__CUDACC_RTC__)
  return __dp4a((int)a, (int)b, c);
#else
#pragma unroll
  for (u32 e = 0; e < 4; ++e) c += (int)(signed char)(a >> (8 * e)) * (int)(signed char)(b >> (8 * e));
  return c;
#endif
}

// The low (h = 0) or high (h = 1) nibbles of the 4 words of w dotted with x's 4 words, plus c.
__device__ __forceinline__ int dot_nibbles(const u32* w, uint4 x, u32 h, int c) {
  const u32 m = 0x0F0F0F0Fu;
  c = dot4((w[0] >> (4 * h)) & m, x.x, c);
  c = dot4((w[1] >> (4 * h)) & m, x.y, c);
  c = dot4((w[2] >> (4 * h)) & m, x.z, c);
  return dot4((w[3] >> (4 * h)) & m, x.w, c);
}

// One lane's units for qmatvec_q8 (the q8 activation mode): a weight's integer quants times x's
// i8 words (round_q8_pack's: xq, with the runs' d in xd and d sum(q) in xs; a.row[i] is x's row
// index) by 4-byte dot products, each run's integer sum scaled once. Units as qmatvec's: q4_0 a
// whole block, q8_0 half a block, q4_K 16 bytes of a block's quants (sub-blocks 2c and 2c + 1; the
// mins by the lane holding each run's first half).
template <int MQ, u32 TY, u32 A>
__device__ __forceinline__ void qmv8_units(const QmvArgs& a, const u8* const* rows, const u32* xq, u32 lane,
                                           u32 warp, float (*acc)[MQ]) {
  const u64 kq = a.k / 4, kb = a.k / 32;
  const float* xd = reinterpret_cast<const float*>(xq + a.rows * kq);
  const float* xs = xd + a.rows * kb;
  const u32 per_block = TY == 2 ? 1 : TY == 8 ? 2 : 8, units = (u32)(a.k / (TY == 2 ? 32 : TY == 8 ? 16 : 32));
  for (u32 u = lane; u < units; u += warp) {
    const u32 blk = u / per_block, j = u % per_block;
    u32 w[QMV_ROWS][4];
    float d[QMV_ROWS][2], m[QMV_ROWS][2];
#pragma unroll
    for (u32 r = 0; r < QMV_ROWS; ++r) {
      const u8* b = rows[r] + (u64)blk * a.bb;
      if constexpr (TY == 2) {
        words<A, 4>(b + 2, w[r]);
        d[r][0] = half_at(b);
      } else if constexpr (TY == 8) {
        words<A, 4>(b + 2 + 16 * j, w[r]);
        d[r][0] = half_at(b);
      } else {
        u32 h[4];
        words<A, 4>(b, h);
        words<A, 4>(b + 16 + 16 * j, w[r]);
        const float dd = f16_to_f32(f16{(unsigned short)(h[0] & 0xFFFF)});
        const float dm = f16_to_f32(f16{(unsigned short)(h[0] >> 16)});
#pragma unroll
        for (u32 e = 0; e < 2; ++e) {
          u32 sc, mn;
          scale_min_k4w(h + 1, 2 * (j / 2) + e, &sc, &mn);
          d[r][e] = dd * (float)sc;
          m[r][e] = dm * (float)mn;
        }
      }
    }
#pragma unroll
    for (int i = 0; i < MQ; ++i) {
      const u64 xr = a.row[i];
      const uint4* xv = reinterpret_cast<const uint4*>(xq + xr * kq);
      if constexpr (TY == 2) {
        const uint4 lo = xv[2 * blk], hi = xv[2 * blk + 1];
        const float dx = xd[xr * kb + blk], sx = xs[xr * kb + blk];
#pragma unroll
        for (u32 r = 0; r < QMV_ROWS; ++r) {
          const int s = dot_nibbles(w[r], hi, 1, dot_nibbles(w[r], lo, 0, 0));
          acc[r][i] = fmaf(d[r][0], fmaf(dx, (float)s, -8.0f * sx), acc[r][i]);
        }
      } else if constexpr (TY == 8) {
        const uint4 x = xv[u];
        const float dx = xd[xr * kb + blk];
#pragma unroll
        for (u32 r = 0; r < QMV_ROWS; ++r) {
          const int s = dot4(w[r][3], x.w, dot4(w[r][2], x.z, dot4(w[r][1], x.y, dot4(w[r][0], x.x, 0))));
          acc[r][i] = fmaf(d[r][0] * dx, (float)s, acc[r][i]);
        }
      } else {
        const u32 c = j / 2, run = 8 * blk + 2 * c;
        const uint4 lo = xv[16 * blk + 4 * c + j % 2], hi = xv[16 * blk + 4 * c + j % 2 + 2];
        const float dl = xd[xr * kb + run], dh = xd[xr * kb + run + 1];
        const float sl = j % 2 ? 0.0f : xs[xr * kb + run], sh = j % 2 ? 0.0f : xs[xr * kb + run + 1];
#pragma unroll
        for (u32 r = 0; r < QMV_ROWS; ++r) {
          const float il = (float)dot_nibbles(w[r], lo, 0, 0), ih = (float)dot_nibbles(w[r], hi, 1, 0);
          acc[r][i] += il * (d[r][0] * dl) + ih * (d[r][1] * dh) - m[r][0] * sl - m[r][1] * sh;
        }
      }
    }
  }
}

// qmatvec_q8: qmatvec's frame (a warp per QMV_ROWS weight rows) over qmv8_units, for q4_0 and
// q8_0 blocks on 2 bytes and q4_K on 2 or 16 (src/native/quant.rs sends the rest through
// round_q8 and qmatvec).
template <class T, int MQ>
__device__ __forceinline__ void qmatvec_q8(const QmvArgs& a, const u8* q, const u32* xq, T* y) {
  const u32 warp = (u32)warpSize, lane = threadIdx.x % warp;
  const u64 n0 = a.first + ((u64)blockIdx.x * (QMV_THREADS / warp) + threadIdx.x / warp) * QMV_ROWS;
  if (n0 >= a.n) return;
  const u8* rows[QMV_ROWS];
#pragma unroll
  for (u32 r = 0; r < QMV_ROWS; ++r) rows[r] = q + min(n0 + r, a.n - 1) * (a.k / a.bs) * a.bb;
  float acc[QMV_ROWS][MQ];
#pragma unroll
  for (u32 r = 0; r < QMV_ROWS; ++r) {
#pragma unroll
    for (int i = 0; i < MQ; ++i) acc[r][i] = 0.0f;
  }
  if (a.t == 2)
    qmv8_units<MQ, 2, 2>(a, rows, xq, lane, warp, acc);
  else if (a.t == 8)
    qmv8_units<MQ, 8, 2>(a, rows, xq, lane, warp, acc);
  else if (a.align >= 16)
    qmv8_units<MQ, 12, 16>(a, rows, xq, lane, warp, acc);
  else
    qmv8_units<MQ, 12, 2>(a, rows, xq, lane, warp, acc);
  qmv_store<T, MQ>(a, n0, lane, warp, acc, y);
}

#define RWO_QMATVEC_Q8(op, T)                                                                                \
  RWO_KERNEL op##_##T(QmvArgs a, const u8* q, const u32* xq, T* y) { qmatvec_q8<T, 1>(a, q, xq, y); }    \
  RWO_KERNEL op##_##T##_m2(QmvArgs a, const u8* q, const u32* xq, T* y) { qmatvec_q8<T, 2>(a, q, xq, y); } \
  RWO_KERNEL op##_##T##_m4(QmvArgs a, const u8* q, const u32* xq, T* y) { qmatvec_q8<T, 4>(a, q, xq, y); } \
  RWO_KERNEL op##_##T##_m8(QmvArgs a, const u8* q, const u32* xq, T* y) { qmatvec_q8<T, 8>(a, q, xq, y); }
#define QMATVEC_Q8(op, ...) RWO_EACH(RWO_QMATVEC_Q8, op, __VA_ARGS__)

QMATVEC_Q8(qmatvec_q8, f32, f16, bf16)

#if defined(__CUDACC_RTC__) && __CUDA_ARCH__ >= 800
// qmatvec on tensor cores (NVIDIA sm_80 on; src/native/quant.rs picks it for q4_K blocks on
// 16-byte boundaries times f16 x whose rows are aligned vectors, up to 8 rows): y^T = W x^T by
// mma.sync m16n8k16 (f32 accumulation), 16 weight rows as A, x's rows as the 8 columns of B
// (the columns past x's rows repeat its last row and are not written). A block of W warps (4 or
// 8: `qmatvec_f16_mma4`, `_mma8`) takes QMMA_ROWS weight rows; warp w takes their super-blocks
// w, w + W, ... (split along K), loading the next two's bytes into registers before it computes
// this one (H200, [1,4096] x [14336,4096]^T: 17.4 us with one ahead, 16.9 with two; the weights'
// loads through ld.global.nc.L1::no_allocate: 20.0), and the warps' sums meet in shared memory.
// `_xs`: x's rows are first staged in shared memory (where rows x K <= QMMA_XS), read from there
// at each super-block.
// Lane (g, t) = (lane / 4, lane % 4) holds rows g and g + 8 of A: it reads their headers and
// their quants qs[32t ..][32] (sub-block 2t in the low nibbles, 2t + 1 in the high ones), and the
// 64 values of x's row g those multiply (a k step's 16 positions may hold any values, the same in
// A and B). A nibble q becomes the f16 1024 + q (1024 + 16 q for a high one) by masking it into
// 0x6400's mantissa, and then its sub-block's sc q by one fused multiply-add (sc q <= 945 and
// the constants are exact in f16, so the fma rounds nothing). So one product sums sc q x over a
// super-block, a second one with the mins m as A sums m x, and each lane adds
// d (sum sc q x) - dmin (sum m x) to its f32 accumulators: ggml's weights d sc q - dmin m, the
// products exact, their sum in another order than the SIMT kernel's (which applies d sc per
// sub-block).
#define QMMA_ROWS 16
// The most values of x (rows times K) the `_xs` kernels hold in shared memory (36 KiB with the
// padding).
#define QMMA_XS 16384

// What lane t reads of one q4_K super-block for each of its two rows: the header (d, dmin,
// scales[12]) and its 32 bytes of quants.
struct Q4kLane {
  uint4 h[2], q[2][2];
};

__device__ __forceinline__ void q4k_lane(Q4kLane& p, const u8* const* rows, u64 blk, u32 t) {
#pragma unroll
  for (u32 r = 0; r < 2; ++r) {
    const uint4* b = reinterpret_cast<const uint4*>(rows[r] + blk * 144);
    p.h[r] = b[0];
    p.q[r][0] = b[1 + 2 * t];
    p.q[r][1] = b[2 + 2 * t];
  }
}

// v in both halves of an f16 pair (v exact in f16).
__device__ __forceinline__ u32 half2_of(float v) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %1;" : "=r"(r) : "f"(v));
  return r;
}

__device__ __forceinline__ u32 hfma2(u32 a, u32 b, u32 c) {
  u32 r;
  asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}

__device__ __forceinline__ u32 hsub2(u32 a, u32 b) {
  u32 r;
  asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

__device__ __forceinline__ u32 word_of(const uint4* v, u32 i) {
  const uint4 u = v[i / 4];
  return i % 4 == 0 ? u.x : i % 4 == 1 ? u.y : i % 4 == 2 ? u.z : u.w;
}

// The end of a tensor-core block of W warps: lane (g, t)'s accumulators (c fragments: rows g and
// g + 8 of the block's QMMA_ROWS weight rows from n0, columns 2t and 2t + 1, x's rows) summed over
// the warps in shared memory and stored to y, the columns past x's rows and rows past N not.
template <u32 W>
__device__ __forceinline__ void qmma_store(const QmvArgs& a, u64 n0, const float* acc, f16* y) {
  __shared__ float part[W][QMMA_ROWS][8];
  const u32 lane = threadIdx.x % 32, w = threadIdx.x / 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (u32 j = 0; j < 4; ++j) part[w][g + 8 * (j / 2)][2 * t + j % 2] = acc[j];
  __syncthreads();
  for (u32 e = threadIdx.x; e < QMMA_ROWS * 8; e += 32 * W) {
    const u32 r = e / 8, col = e % 8;
    float s = 0.0f;
#pragma unroll
    for (u32 v = 0; v < W; ++v) s += part[v][r][col];
    if (col < a.rows && n0 + r < a.n) y[col * a.n + n0 + r] = num<f16>::store(s);
  }
}

template <u32 W, bool XS>
__device__ __forceinline__ void qmatvec_mma(const QmvArgs& a, const u8* q, const f16* x, f16* y) {
  __shared__ uint4 xs[XS ? QMMA_XS / 64 * 9 : 1];
  const u32 lane = threadIdx.x % 32, w = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const u64 n0 = a.first + (u64)blockIdx.x * QMMA_ROWS, nb = a.k / 256, rb = nb * 144;
  const u8* rows[2] = {q + min(n0 + g, a.n - 1) * rb, q + min(n0 + g + 8, a.n - 1) * rb};
  const f16* xg = x + a.row[g] + 64 * t;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  Q4kLane cur, nxt, nx2;
  if (w < nb) q4k_lane(cur, rows, w, t);
  if (w + W < nb) q4k_lane(nxt, rows, w + W, t);
  // XS: x's rows in shared memory, 64 values (8 vectors) a chunk, a vector of padding after each
  // (so the 4 lanes of a group, 4 chunks apart, read different banks).
  const u32 chunks = (u32)(a.k / 64), xrow = (u32)min((u64)g, a.rows - 1) * chunks;
  if constexpr (XS) {
    for (u32 e = threadIdx.x; e < (u32)a.rows * chunks * 8; e += 32 * W) {
      const u32 i = e / (chunks * 8), v = e % (chunks * 8);
      xs[(i * chunks + v / 8) * 9 + v % 8] = reinterpret_cast<const uint4*>(x + a.row[i])[v];
    }
    __syncthreads();
  }
  for (u64 blk = w; blk < nb; blk += W) {
    if (blk + 2 * W < nb) q4k_lane(nx2, rows, blk + 2 * W, t);
    // x: values 64t .. 64t + 64 of the super-block in row g, as pairs.
    u32 xw[32];
    const uint4* xp = XS ? xs + (xrow + 4 * (u32)blk + t) * 9 : reinterpret_cast<const uint4*>(xg + blk * 256);
#pragma unroll
    for (u32 i = 0; i < 8; ++i) {
      const uint4 v = xp[i];
      xw[4 * i] = v.x, xw[4 * i + 1] = v.y, xw[4 * i + 2] = v.z, xw[4 * i + 3] = v.w;
    }
    // Per row r and half h (sub-block 2t + h): the fma's factor and addend, and the min.
    u32 mul[2][2], add[2][2], mins[2][2];
    float d[2], dmin[2];
#pragma unroll
    for (u32 r = 0; r < 2; ++r) {
      const u32 s[3] = {cur.h[r].y, cur.h[r].z, cur.h[r].w};
      u32 sc0, m0, sc1, m1;
      scale_min_k4w(s, 2 * t, &sc0, &m0);
      scale_min_k4w(s, 2 * t + 1, &sc1, &m1);
      mul[r][0] = half2_of((float)sc0), add[r][0] = half2_of(-1024.0f * (float)sc0);
      mul[r][1] = half2_of((float)sc1 * 0.0625f), add[r][1] = half2_of(-64.0f * (float)sc1);
      mins[r][0] = half2_of((float)m0), mins[r][1] = half2_of((float)m1);
      d[r] = f16_to_f32(f16{(unsigned short)(cur.h[r].x & 0xFFFF)});
      dmin[r] = f16_to_f32(f16{(unsigned short)(cur.h[r].x >> 16)});
    }
    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f}, cm[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (u32 i = 0; i < 8; ++i) {
      // Word i of each row's quants: bytes 4i .. 4i + 3, values 4i + l (low) and 32 + 4i + l.
      const u32 w0 = word_of(cur.q[0], i), w1 = word_of(cur.q[1], i);
#pragma unroll
      for (u32 h = 0; h < 2; ++h) {
        const u32 mask = h ? 0x00F000F0u : 0x000F000Fu, one = 0x64006400u;
        // a0 / a1: bytes 4i and 4i + 2 of rows g / g + 8; a2 / a3: bytes 4i + 1 and 4i + 3.
        const u32 fa[4] = {hfma2((w0 & mask) | one, mul[0][h], add[0][h]),
                           hfma2((w1 & mask) | one, mul[1][h], add[1][h]),
                           hfma2(((w0 >> 8) & mask) | one, mul[0][h], add[0][h]),
                           hfma2(((w1 >> 8) & mask) | one, mul[1][h], add[1][h])};
        const u32 x0 = xw[16 * h + 2 * i], x1 = xw[16 * h + 2 * i + 1];
        const u32 fb[2] = {__byte_perm(x0, x1, 0x5410), __byte_perm(x0, x1, 0x7632)};
        const u32 fm[4] = {mins[0][h], mins[1][h], mins[0][h], mins[1][h]};
        mma16816<f16>(c, fa, fb);
        mma16816<f16>(cm, fm, fb);
      }
    }
    // c[j]: row g + 8 (j / 2), column (x's row) 2t + j % 2.
#pragma unroll
    for (u32 j = 0; j < 4; ++j) acc[j] = fmaf(-dmin[j / 2], cm[j], fmaf(d[j / 2], c[j], acc[j]));
    cur = nxt;
    nxt = nx2;
  }
  qmma_store<W>(a, n0, acc, y);
}

RWO_KERNEL qmatvec_f16_mma4(QmvArgs a, const u8* q, const f16* x, f16* y) { qmatvec_mma<4, false>(a, q, x, y); }
RWO_KERNEL qmatvec_f16_mma8(QmvArgs a, const u8* q, const f16* x, f16* y) { qmatvec_mma<8, false>(a, q, x, y); }
RWO_KERNEL qmatvec_f16_mma4_xs(QmvArgs a, const u8* q, const f16* x, f16* y) { qmatvec_mma<4, true>(a, q, x, y); }
RWO_KERNEL qmatvec_f16_mma8_xs(QmvArgs a, const u8* q, const f16* x, f16* y) { qmatvec_mma<8, true>(a, q, x, y); }

// q8_0 on tensor cores (src/native/quant.rs picks it for blocks on 16 bytes, K a multiple of 256,
// times f16 x whose rows are aligned vectors, 2 to 8 rows): the frame above (16 weight rows a
// block of W warps, K split over them, the warps' sums met in shared memory), a step 8 blocks
// (256 values, 272 bytes a row: every row's steps on 16 bytes). A warp loads its 16 rows' step as
// whole 16-byte vectors, lane i the vectors i, i + 32, ... of the 272 (the next step's in
// registers while this one is computed; two steps ahead was slower, H200 [1,4096] x
// [14336,4096]^T 24.1-24.3 -> 28.9-29.2 us), and stores them to its tile in shared memory; lane
// (g, t) then reads there quant words t and t + 4 of each block of rows g and g + 8 (values
// 4t .. 4t + 4 and 16 + 4t .. 16 + 4t + 4, a block's two k steps; a row of 68 words puts the 8
// groups' words in 32 different banks) and their scales. An i8 q becomes the f16
// (1024 + (q + 128)) - 1152 = q exactly (a byte permute and one f16x2 subtraction for two), the
// values of x are B as they are, and each lane adds d (sum q x) per block to its accumulators,
// as the SIMT kernel does. H200, f16 x times [14336,4096]^T: 4 rows 43.8-44.1 -> 26.9-27.2 us, but
// one row 22.3-22.5 -> 24.1-24.3, which the SIMT kernel keeps. Its first form, each lane loading
// its words straight from memory (a load touching 16 rows for 16 bytes of each), took 41.2.
#define QMMA8_WORDS 68

template <u32 W>
__device__ __forceinline__ void qmatvec_mma_q8(const QmvArgs& a, const u8* q, const f16* x, f16* y) {
  __shared__ uint4 tile[W][QMMA_ROWS * QMMA8_WORDS / 4];
  const u32 lane = threadIdx.x % 32, w = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const u64 n0 = a.first + (u64)blockIdx.x * QMMA_ROWS, steps = a.k / 256, rb = a.k / 32 * 34;
  // Vector j of this lane's share of a step: vector e % 17 of row e / 17, e = lane + 32 j.
  constexpr u32 V = QMMA_ROWS * QMMA8_WORDS / 4, J = (V + 31) / 32;
  const uint4* src[J];
#pragma unroll
  for (u32 j = 0; j < J; ++j) {
    const u32 e = min(lane + 32 * j, V - 1);
    src[j] = reinterpret_cast<const uint4*>(q + min(n0 + e / 17, a.n - 1) * rb) + e % 17;
  }
  const u32* xw = reinterpret_cast<const u32*>(x + a.row[g]);
  const u32* tw = reinterpret_cast<const u32*>(tile[w]);
  const u32 sign = 0x80808080u, one = 0x64646464u, bias = 0x64806480u;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  uint4 nxt[J];
  if (w < steps) {
#pragma unroll
    for (u32 j = 0; j < J; ++j) nxt[j] = src[j][17 * w];
  }
  for (u64 s = w; s < steps; s += W) {
    __syncwarp();
#pragma unroll
    for (u32 j = 0; j < J; ++j)
      if (lane + 32 * j < V) tile[w][lane + 32 * j] = nxt[j];
    __syncwarp();
    if (s + W < steps) {
#pragma unroll
      for (u32 j = 0; j < J; ++j) nxt[j] = src[j][17 * (s + W)];
    }
#pragma unroll
    for (u32 b = 0; b < 8; ++b) {
      // Block b of the step: bytes 34b .. 34b + 34 of each row, its quants from byte 2.
      u32 fa[2][4], d[2];
#pragma unroll
      for (u32 r = 0; r < 2; ++r) {
        const u32* row = tw + (g + 8 * r) * QMMA8_WORDS;
        u32 qw[2];
        if (b % 2 == 0) {
          // On 4 bytes: d in the low half of word 17b / 2, each quant word across two words.
          const u32 o = 17 * b / 2;
          d[r] = row[o] & 0xFFFF;
          qw[0] = __byte_perm(row[o + t], row[o + t + 1], 0x5432);
          qw[1] = __byte_perm(row[o + t + 4], row[o + t + 5], 0x5432);
        } else {
          // On 2 bytes: d in the high half of word (17b - 1) / 2, the quants on whole words.
          const u32 o = (17 * b - 1) / 2;
          d[r] = row[o] >> 16;
          qw[0] = row[o + 1 + t];
          qw[1] = row[o + 5 + t];
        }
#pragma unroll
        for (u32 k = 0; k < 2; ++k) {
          const u32 v = qw[k] ^ sign;
          fa[k][r] = hsub2(__byte_perm(v, one, 0x4140), bias);
          fa[k][2 + r] = hsub2(__byte_perm(v, one, 0x4342), bias);
        }
      }
      // x: values 4t .. 4t + 4 and 16 + 4t .. 16 + 4t + 4 of the block, as pairs.
      const u32 xo = (u32)s * 128 + 16 * b + 2 * t;
      const uint2 x0 = *reinterpret_cast<const uint2*>(xw + xo), x1 = *reinterpret_cast<const uint2*>(xw + xo + 8);
      float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      const u32 b0[2] = {x0.x, x0.y}, b1[2] = {x1.x, x1.y};
      mma16816<f16>(c, fa[0], b0);
      mma16816<f16>(c, fa[1], b1);
      // c[j]: row g + 8 (j / 2), column (x's row) 2t + j % 2.
#pragma unroll
      for (u32 j = 0; j < 4; ++j) acc[j] = fmaf(f16_to_f32(f16{(unsigned short)d[j / 2]}), c[j], acc[j]);
    }
  }
  qmma_store<W>(a, n0, acc, y);
}

RWO_KERNEL qmatvec_f16_q8_0_mma4(QmvArgs a, const u8* q, const f16* x, f16* y) { qmatvec_mma_q8<4>(a, q, x, y); }
RWO_KERNEL qmatvec_f16_q8_0_mma8(QmvArgs a, const u8* q, const f16* x, f16* y) { qmatvec_mma_q8<8>(a, q, x, y); }
#endif
