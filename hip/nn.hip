// Softmax, log_softmax, layer_norm, rms_norm, batch_norm, local_response_norm and the recurrent
// cells (src/spec/nn.rs). No library we
// bind has the norms, and measured on an H100 cuDNN's softmax runs at half of torch's speed and
// its log_softmax misses our tolerance, so these run here (batch_norm also goes to cuDNN where
// it takes the case: src/native/dnn.rs).
//
// Softmax and the norms work on lines: a line is the `size` elements along one dim, at
// `offset + o * so + i * si + j * ss` for outer index o, inner index i (the dims after the
// line's, merged) and position j; the output is contiguous, line (o, i) at (o * size + j) *
// inner + i. The host merges the dims before and after the line's into one each (or copies the
// input to contiguous memory when they do not merge).
// - `{op}_{T}_v{V}[_vec]` (rows): a group of `group` consecutive threads (a power of two, up to
//   the block) per line, each holding V of its elements in registers, so that a line is read
//   once; the group combines through warp shuffles and, past a warp, shared memory. `_vec`: the
//   line moves in 16-byte chunks (contiguous lines of whole, aligned chunks; the host checks).
//   `{op}_{T}[_vec]` (no V) keeps nothing in registers and reads the line once per pass, for
//   longer lines.
// - `{op}_{T}_cols` (softmax): lines across memory (inner > 1), 32 neighbouring lines per block
//   so that a warp reads 32 neighbouring elements, the block's 8 rows of threads splitting each
//   line.
// Everything computes in f32 for halves and f32, in f64 for f64. Softmax is exp(x - max) / sum
// exp(x - max) (its log: (x - max) - log(sum)); max propagates NaN. The norms sum each value's
// difference from the line's first value (so values far from 0 lose nothing of their spread to
// the offset), take the mean from that, then the mean of squared deviations from the mean, then
// (x - mean) / sqrt(var + eps) times the weight plus the bias (each only if given, as the cpu
// reference does).
#include "common.h"

// The most threads a rows or cols block has (`NN_MAX_BLOCK` in src/native/nn.rs), and the
// fewest lanes a warp has on any runtime (sizes the shared array indexed by warp).
#define NN_MAX_BLOCK 512
#define NN_MIN_WARP 32

// Entry points launched with up to NN_MAX_BLOCK threads: the bound keeps every variant within
// the registers such a block may use.
#define NN_KERNEL extern "C" __global__ void __launch_bounds__(NN_MAX_BLOCK)

// The lines of a launch: `count` lines of `size` elements, `inner` of them per outer index.
struct Lines {
  u64 count, size, inner, offset, so, ss, si;
};

// An optional per-element or per-channel parameter: its storage (0: absent), offset and stride.
struct Param {
  u64 ptr, offset, stride;
};

__device__ __forceinline__ float nn_exp(float v) { return expf(v); }
__device__ __forceinline__ double nn_exp(double v) { return exp(v); }
__device__ __forceinline__ float nn_log(float v) { return logf(v); }
__device__ __forceinline__ double nn_log(double v) { return log(v); }
__device__ __forceinline__ float nn_sqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ double nn_sqrt(double v) { return sqrt(v); }

// Element `j` of parameter `p`, of the dtype T, in the compute type.
template <class T>
__device__ __forceinline__ typename num<T>::C param(const Param& p, u64 j) {
  return num<T>::load(reinterpret_cast<const T*>(p.ptr)[p.offset + j * p.stride]);
}

// Combines `v` over each group of `group` consecutive threads (a power of two dividing the
// block); every thread of the block calls it, and every thread of a group gets the result.
template <class C, class F>
__device__ __forceinline__ C group_reduce(C v, u32 group, F join, C* shared) {
  const u32 warp = (u32)warpSize;
  const u32 width = group < warp ? group : warp;
  for (u32 m = width >> 1; m > 0; m >>= 1) v = join(v, shfl_xor(v, (int)m));
  if (group <= warp) return v;
  __syncthreads();  // an earlier call may still be reading `shared`
  if (threadIdx.x % warp == 0) shared[threadIdx.x / warp] = v;
  __syncthreads();
  const u32 per = group / warp, first = (threadIdx.x / group) * per;
  C r = shared[first];
  for (u32 w = 1; w < per; ++w) r = join(r, shared[first + w]);
  return r;
}

// Elements per 16-byte chunk of T, at most V (V = 0: no cap).
template <class T, int V>
struct chunk_of {
  static constexpr int full = RWO_VEC_BYTES / (int)sizeof(T);
  static constexpr int value = V > 0 && V < full ? V : full;
};

// This thread's elements of its line, moved in chunks of W elements: chunk c = lane + k *
// group holds elements c * W .. c * W + W. V > 0: the thread's V elements are kept in
// registers; V = 0: read again at every pass. W > 1 needs a contiguous line (ss = 1) of whole
// chunks starting on a 16-byte boundary.
template <class T, int V, int W>
struct Row {
  typedef typename num<T>::C C;
  static constexpr int K = V > 0 ? V / W : 1;
  const T* x;
  u64 base, ss;
  u32 len, lane, group;
  bool valid;
  C v[V > 0 ? V : 1];
  // The W elements of chunk c (inside the line) in the compute type.
  __device__ __forceinline__ void read(u32 c, C* out) const {
    if constexpr (W > 1) {
      Pack<T, W> p = *reinterpret_cast<const Pack<T, W>*>(x + base + (u64)c * W);
#pragma unroll
      for (int w = 0; w < W; ++w) out[w] = num<T>::load(p.v[w]);
    } else {
      out[0] = num<T>::load(x[base + (u64)c * ss]);
    }
  }
  __device__ __forceinline__ void load() {
    if constexpr (V > 0) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        u32 c = lane + k * group;
        if (valid && c * W < len) {
          read(c, v + k * W);
        } else {
#pragma unroll
          for (int w = 0; w < W; ++w) v[k * W + w] = (C)0;
        }
      }
    }
  }
  // Calls f(j, x_j) for each of this thread's elements.
  template <class F>
  __device__ __forceinline__ void each(F f) const {
    if (!valid) return;
    if constexpr (V > 0) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        u32 c = lane + k * group;
        if (c * W < len) {
#pragma unroll
          for (int w = 0; w < W; ++w) f(c * W + w, v[k * W + w]);
        }
      }
    } else {
      C buf[W];
      for (u32 c = lane; c * W < len; c += group) {
        read(c, buf);
#pragma unroll
        for (int w = 0; w < W; ++w) f(c * W + w, buf[w]);
      }
    }
  }
  // Writes g(j, x_j) for each of this thread's elements to the contiguous line at y.
  template <class G>
  __device__ __forceinline__ void store(T* y, G g) const {
    if (!valid) return;
    auto put = [&](u32 c, const C* in) {
      Pack<T, W> p;
#pragma unroll
      for (int w = 0; w < W; ++w) p.v[w] = num<T>::store(g(c * W + w, in[w]));
      if constexpr (W > 1) {
        *reinterpret_cast<Pack<T, W>*>(y + (u64)c * W) = p;
      } else {
        y[c] = p.v[0];
      }
    };
    if constexpr (V > 0) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        u32 c = lane + k * group;
        if (c * W < len) put(c, v + k * W);
      }
    } else {
      C buf[W];
      for (u32 c = lane; c * W < len; c += group) {
        read(c, buf);
        put(c, buf);
      }
    }
  }
};

struct softmax_op {
  enum { NORM = 0, LOG = 0, RMS = 0 };
};
struct log_softmax_op {
  enum { NORM = 0, LOG = 1, RMS = 0 };
};
struct layer_norm_op {
  enum { NORM = 1, LOG = 0, RMS = 0 };
};
struct rms_norm_op {
  enum { NORM = 1, LOG = 0, RMS = 1 };
};

// The storage offset of line `line`'s first element and its output offset.
__device__ __forceinline__ void line_start(const Lines& L, u64 line, u64& in, u64& out) {
  u64 o = L.inner == 1 ? line : line / L.inner, i = line - o * L.inner;
  in = L.offset + o * L.so + i * L.si;
  out = o * L.size * L.inner + i;
}

// The rows kernels (inner = 1: each output line is contiguous).
template <class Op, class T, int V, int W>
__device__ __forceinline__ void nn_rows(u64 l0, u32 group, const Lines& L, const T* x, T* y, const Param& w,
                                        const Param& b, double eps) {
  typedef typename num<T>::C C;
  __shared__ C shared[NN_MAX_BLOCK / NN_MIN_WARP];
  const u64 line = l0 + (u64)blockIdx.x * (blockDim.x / group) + threadIdx.x / group;
  Row<T, V, W> row;
  row.x = x;
  row.ss = L.ss;
  row.len = (u32)L.size;
  row.lane = threadIdx.x % group;
  row.group = group;
  row.valid = line < L.count;
  u64 out = 0;
  row.base = 0;
  if (row.valid) line_start(L, line, row.base, out);
  row.load();
  auto add = [](C a, C c) { return a + c; };
  if constexpr (Op::NORM) {
    // Sums of differences from the line's first value (0 for rms_norm, which takes no mean).
    const C shift = Op::RMS || !row.valid ? (C)0 : num<T>::load(x[row.base]);
    C mean = (C)0;
    if constexpr (!Op::RMS) {
      C sum = (C)0;
      row.each([&](u32, C a) { sum += a - shift; });
      mean = group_reduce(sum, group, add, shared) / (C)row.len;
    }
    C sq = (C)0;
    row.each([&](u32, C a) {
      C d = (a - shift) - mean;
      sq += d * d;
    });
    const C denom = nn_sqrt(group_reduce(sq, group, add, shared) / (C)row.len + (C)eps);
    row.store(y + out, [&](u32 j, C a) {
      C r = ((a - shift) - mean) / denom;
      if (w.ptr) r = r * param<T>(w, j);
      if (b.ptr) r = r + param<T>(b, j);
      return r;
    });
  } else {
    C m = neg_inf((C)0);
    row.each([&](u32, C a) { m = max_nan(m, a); });
    m = group_reduce(m, group, [](C a, C c) { return max_nan(a, c); }, shared);
    C s = (C)0;
    row.each([&](u32, C a) { s += nn_exp(a - m); });
    s = group_reduce(s, group, add, shared);
    const C ls = nn_log(s);
    row.store(y + out, [&](u32, C a) {
      C z = a - m;
      return Op::LOG ? z - ls : nn_exp(z) / s;
    });
  }
}

// Combines `v` over the block's `rows` rows of 32 threads (every thread calls it; each gets
// its column's result).
template <class C, class F>
__device__ __forceinline__ C across_rows(C v, F join, C* red, u32 rows) {
  const u32 tx = threadIdx.x % NN_MIN_WARP;
  __syncthreads();  // an earlier call may still be reading `red`
  red[threadIdx.x] = v;
  __syncthreads();
  C r = red[tx];
  for (u32 k = 1; k < rows; ++k) r = join(r, red[k * NN_MIN_WARP + tx]);
  return r;
}

// Softmax of lines across memory (inner > 1): 32 neighbouring lines per block (lane `tx`),
// the block's rows of threads (`ty`) splitting each line; three passes (max, sum, write), each
// combined across the rows through shared memory.
template <class Op, class T>
__device__ __forceinline__ void softmax_cols(u64 l0, const Lines& L, const T* x, T* y) {
  typedef typename num<T>::C C;
  __shared__ C red[NN_MAX_BLOCK];
  const u32 tx = threadIdx.x % NN_MIN_WARP, ty = threadIdx.x / NN_MIN_WARP, rows = blockDim.x / NN_MIN_WARP;
  const u64 line = l0 + (u64)blockIdx.x * NN_MIN_WARP + tx;
  const bool valid = line < L.count;
  u64 in = 0, out = 0;
  if (valid) line_start(L, line, in, out);
  C m = neg_inf((C)0), s = (C)0;
  if (valid) {
#pragma unroll 4
    for (u64 j = ty; j < L.size; j += rows) m = max_nan(m, num<T>::load(x[in + j * L.ss]));
  }
  m = across_rows(m, [](C a, C c) { return max_nan(a, c); }, red, rows);
  if (valid) {
#pragma unroll 4
    for (u64 j = ty; j < L.size; j += rows) s += nn_exp(num<T>::load(x[in + j * L.ss]) - m);
  }
  s = across_rows(s, [](C a, C c) { return a + c; }, red, rows);
  const C ls = nn_log(s);
  if (valid) {
#pragma unroll 4
    for (u64 j = ty; j < L.size; j += rows) {
      C z = num<T>::load(x[in + j * L.ss]) - m;
      y[out + j * L.inner] = num<T>::store(Op::LOG ? z - ls : nn_exp(z) / s);
    }
  }
}

// batch_norm over a strided walk of x (`Dims`, `View`): element i of the launch is element
// first + i of the contiguous output, of channel ((first + i) / inner) % channels.
template <class T>
__device__ __forceinline__ void batch_norm(const Dims& d, const View& v, const T* x, T* y, u64 first, u64 inner,
                                           u64 channels, const Param& mean, const Param& var, const Param& w,
                                           const Param& b, double eps) {
  typedef typename num<T>::C C;
  const bool narrow = first + d.n <= 0xffffffffull && inner <= 0xffffffffull && channels <= 0xffffffffull;
  for_each(d.n, [&](u32 i) {
    u64 g = first + i;
    // 32-bit division where the indices allow: several times cheaper.
    u64 ch = narrow ? (u64)(((u32)g / (u32)inner) % (u32)channels) : (g / inner) % channels;
    C r = (num<T>::load(x[at(v, d, i)]) - param<T>(mean, ch)) / nn_sqrt(param<T>(var, ch) + (C)eps);
    if (w.ptr) r = r * param<T>(w, ch);
    if (b.ptr) r = r + param<T>(b, ch);
    y[i] = num<T>::store(r);
  });
}

// b^e for local_response_norm: exp2(e log2 b) in f32, a few ulps from powf for the bases it sees
// (b >= 0) at a fraction of its instructions (the blocked kernel with powf and 64-bit index
// division was instruction-bound on an H200: SM busy 85%, the integer pipe 59%), with b^0 = 1
// for every b as pow has it; pow in f64.
__device__ __forceinline__ float lrn_pow(float b, float e) { return e == 0.0f ? 1.0f : exp2f(e * log2f(b)); }
__device__ __forceinline__ double lrn_pow(double b, double e) { return pow(b, e); }

// `struct LrnArgs` of src/native/nn.rs.
struct LrnArgs {
  u64 channels, inner, sc, size;
  double alpha, beta, k;
};

// local_response_norm over a strided walk of x: element i of the launch is element first + i of
// the contiguous output, in channel c = ((first + i) / inner) % channels; its window sums x^2
// over channels c - size / 2 ..= c + (size - 1) / 2 that exist, read at x's address for element
// i moved by whole channel strides.
template <class T>
__device__ __forceinline__ void lrn(const Dims& d, const View& v, const T* x, T* y, u64 first, const LrnArgs& a) {
  typedef typename num<T>::C C;
  for_each(d.n, [&](u32 i) {
    // 32-bit division where the indices allow: several times cheaper.
    const u64 g = first + i;
    const u64 c = g <= 0xffffffffull && a.inner <= 0xffffffffull && a.channels <= 0xffffffffull
                      ? (u64)(((u32)g / (u32)a.inner) % (u32)a.channels)
                      : (g / a.inner) % a.channels;
    const u64 xi = at(v, d, i), base = xi - c * a.sc;
    const u64 lo = c >= a.size / 2 ? c - a.size / 2 : 0;
    const u64 hi = c + (a.size - 1) / 2 < a.channels ? c + (a.size - 1) / 2 : a.channels - 1;
    // Four loads issued before their sum, in order: a thread waits on memory once per four
    // channels. A channel past the window reads channel hi again and adds +0, which changes no
    // sum (every partial sum is >= +0).
    C s = 0;
    for (u64 j = lo; j <= hi; j += 4) {
      C e[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) e[q] = num<T>::load(x[base + (j + q <= hi ? j + q : hi) * a.sc]);
#pragma unroll
      for (int q = 0; q < 4; ++q) s += j + q <= hi ? e[q] * e[q] : (C)0;
    }
    y[i] = num<T>::store(num<T>::load(x[xi]) / lrn_pow(s / (C)a.size * (C)a.alpha + (C)a.k, (C)a.beta));
  });
}

// Channels a thread of the blocked kernel takes, and the widest window it takes (`LRN_CB`,
// `LRN_MAXW` in src/native/nn.rs).
#define LRN_CB 8
#define LRN_MAXW 9

// `struct LrnBlockArgs` of src/native/nn.rs: x as (outer, C, P) at offset with strides.
struct LrnBlockArgs {
  u64 outer, channels, inner, size, offset, so, sc, sp;
  double alpha, beta, k;
};

// local_response_norm for windows of at most LRN_MAXW channels and x's dims after the channel
// merged into one stride: thread t takes LRN_CB neighbouring channels c0.. at one position p of
// one outer index o, loads the squares of the LRN_CB + size - 1 channels their windows cover
// once (0 outside [0, C)), and sums each window from them in the order `lrn` does (the same
// bits). The output is contiguous (outer, C, P).
template <class T>
__device__ __forceinline__ void lrn_blocked(const LrnBlockArgs& a, const T* x, T* y) {
  typedef typename num<T>::C C;
  // The host launches this only for outer * C * inner < 2^32: 32-bit division (64-bit division
  // is a software routine of many integer instructions).
  const u32 inner = (u32)a.inner, blocks = (u32)((a.channels + LRN_CB - 1) / LRN_CB);
  const u64 before = a.size / 2;
  for_each(a.outer * blocks * a.inner, [&](u32 t) {
    const u32 rest = t / inner;
    const u64 p = t - rest * inner, c0 = (u64)(rest % blocks) * LRN_CB, o = rest / blocks;
    const u64 base = a.offset + o * a.so + p * a.sp;
    C sq[LRN_CB + LRN_MAXW - 1];
#pragma unroll
    for (u64 k = 0; k < LRN_CB + LRN_MAXW - 1; ++k) {
      C v = 0;
      if (k < LRN_CB + a.size - 1 && c0 + k >= before && c0 + k - before < a.channels) {
        v = num<T>::load(x[base + (c0 + k - before) * a.sc]);
      }
      sq[k] = v * v;
    }
#pragma unroll
    for (u64 q = 0; q < LRN_CB; ++q) {
      const u64 c = c0 + q;
      if (c < a.channels) {
        C s = 0;
#pragma unroll
        for (u64 w = 0; w < LRN_MAXW; ++w) {
          if (w < a.size) s += sq[q + w];
        }
        const C d = lrn_pow(s / (C)a.size * (C)a.alpha + (C)a.k, (C)a.beta);
        y[(o * a.channels + c) * a.inner + p] = num<T>::store(num<T>::load(x[base + c * a.sc]) / d);
      }
    }
  });
}

// `struct CellArgs` of src/native/nn.rs.
struct CellArgs {
  u64 n, bh, h, gates, has_bias;
  u64 gxo, gxr, gxc, gho, ghr, ghc, so, sr, sc, bo, bs;
};

template <class C>
__device__ __forceinline__ C sigmoid_c(C v) {
  return (C)1 / ((C)1 + rwo_exp(-v));
}

// lstm_cell (4 gates) or gru_cell (3), elementwise over the output: element i of [2, B, H] (h'
// then c') or [B, H], from e = i % (B H), batch row e / H, column e % H; gate q of a row is
// column q H + j of gx and gh (plus the bias).
template <class T>
__device__ __forceinline__ void rnn_cell(const CellArgs& a, const T* gx, const T* gh, const T* bias, const T* st,
                                         T* y) {
  typedef typename num<T>::C C;
  for_each(a.n, [&](u32 i) {
    const u64 e = i % a.bh, b = e / a.h, j = e % a.h;
    C x[4], r[4];
    for (u64 q = 0; q < a.gates; ++q) {
      const u64 col = q * a.h + j;
      x[q] = num<T>::load(gx[a.gxo + b * a.gxr + col * a.gxc]);
      r[q] = num<T>::load(gh[a.gho + b * a.ghr + col * a.ghc]);
      if (a.has_bias) r[q] = r[q] + num<T>::load(bias[a.bo + col * a.bs]);
    }
    const C s = num<T>::load(st[a.so + b * a.sr + j * a.sc]);
    C out;
    if (a.gates == 4) {
      const C c = sigmoid_c(x[1] + r[1]) * s + sigmoid_c(x[0] + r[0]) * rwo_tanh(x[2] + r[2]);
      out = i < a.bh ? sigmoid_c(x[3] + r[3]) * rwo_tanh(c) : c;
    } else {
      const C z = sigmoid_c(x[1] + r[1]);
      const C n = rwo_tanh(x[2] + sigmoid_c(x[0] + r[0]) * r[2]);
      out = ((C)1 - z) * n + z * s;
    }
    y[i] = num<T>::store(out);
  });
}

#define RWO_NN_ROWS(op, T)                                                                                     \
  NN_KERNEL op##_##T(u64 l0, u32 group, Lines L, const T* x, T* y, Param w, Param b, double eps) {           \
    nn_rows<op##_op, T, 0, 1>(l0, group, L, x, y, w, b, eps);                                                 \
  }                                                                                                            \
  NN_KERNEL op##_##T##_vec(u64 l0, u32 group, Lines L, const T* x, T* y, Param w, Param b, double eps) {     \
    nn_rows<op##_op, T, 0, chunk_of<T, 0>::value>(l0, group, L, x, y, w, b, eps);                             \
  }                                                                                                            \
  NN_KERNEL op##_##T##_v4(u64 l0, u32 group, Lines L, const T* x, T* y, Param w, Param b, double eps) {      \
    nn_rows<op##_op, T, 4, 1>(l0, group, L, x, y, w, b, eps);                                                 \
  }                                                                                                            \
  NN_KERNEL op##_##T##_v4_vec(u64 l0, u32 group, Lines L, const T* x, T* y, Param w, Param b, double eps) {  \
    nn_rows<op##_op, T, 4, chunk_of<T, 4>::value>(l0, group, L, x, y, w, b, eps);                             \
  }                                                                                                            \
  NN_KERNEL op##_##T##_v16_vec(u64 l0, u32 group, Lines L, const T* x, T* y, Param w, Param b, double eps) { \
    nn_rows<op##_op, T, 16, chunk_of<T, 16>::value>(l0, group, L, x, y, w, b, eps);                           \
  }                                                                                                            \
  NN_KERNEL op##_##T##_v32_vec(u64 l0, u32 group, Lines L, const T* x, T* y, Param w, Param b, double eps) { \
    nn_rows<op##_op, T, 32, chunk_of<T, 32>::value>(l0, group, L, x, y, w, b, eps);                           \
  }
#define NN_ROWS(op, ...) RWO_EACH(RWO_NN_ROWS, op, __VA_ARGS__)

#define RWO_NN_COLS(op, T) \
  NN_KERNEL op##_##T##_cols(u64 l0, Lines L, const T* x, T* y) { softmax_cols<op##_op, T>(l0, L, x, y); }
#define NN_COLS(op, ...) RWO_EACH(RWO_NN_COLS, op, __VA_ARGS__)

#define RWO_BATCH_NORM(op, T)                                                                                  \
  NN_KERNEL op##_##T(Dims d, View v, const T* x, T* y, u64 first, u64 inner, u64 channels, Param mean,       \
                      Param var, Param w, Param b, double eps) {                                              \
    batch_norm<T>(d, v, x, y, first, inner, channels, mean, var, w, b, eps);                                  \
  }
#define BATCH_NORM(op, ...) RWO_EACH(RWO_BATCH_NORM, op, __VA_ARGS__)

#define RWO_LRN(op, T)                                                                        \
  NN_KERNEL op##_##T(Dims d, View v, const T* x, T* y, u64 first, LrnArgs a) { lrn<T>(d, v, x, y, first, a); }
#define LRN(op, ...) RWO_EACH(RWO_LRN, op, __VA_ARGS__)
#define RWO_LRN_BLOCKED(op, T) \
  NN_KERNEL op##_##T##_blocked(LrnBlockArgs a, const T* x, T* y) { lrn_blocked<T>(a, x, y); }
#define LRN_BLOCKED(op, ...) RWO_EACH(RWO_LRN_BLOCKED, op, __VA_ARGS__)

#define RWO_CELL(op, T)                                                                                        \
  NN_KERNEL op##_##T(CellArgs a, const T* gx, const T* gh, const T* bias, const T* st, T* y) {                \
    rnn_cell<T>(a, gx, gh, bias, st, y);                                                                      \
  }
#define CELL(op, ...) RWO_EACH(RWO_CELL, op, __VA_ARGS__)

NN_ROWS(softmax, f16, bf16, f32, f64)
NN_ROWS(log_softmax, f16, bf16, f32, f64)
NN_ROWS(layer_norm, f16, bf16, f32, f64)
NN_ROWS(rms_norm, f16, bf16, f32, f64)
NN_COLS(softmax, f16, bf16, f32, f64)
NN_COLS(log_softmax, f16, bf16, f32, f64)
BATCH_NORM(batch_norm, f16, bf16, f32, f64)
LRN(local_response_norm, f16, bf16, f32, f64)
CELL(lstm_cell, f16, bf16, f32, f64)
CELL(gru_cell, f16, bf16, f32, f64)
LRN_BLOCKED(local_response_norm, f16, bf16, f32, f64)
