// Matrix-vector products on the native backend (src/native/matvec.rs): y [R, N] = x [R, K] W
// for a few rows R of x (1 to 4), W read once as 16-byte words, f32 sums, each result rounded
// once to T and handed to the kernel's epilogue `put(value, i, pre)` (i = r N + n), which stores
// it or runs an elementwise program over it first; `pre = fetch(i)`, the program's other
// operands at i, is loaded when the kernel starts (its latency hidden by the products'). Not a
// family: the host generates each kernel's entry (its epilogue) after this text, and NVRTC or
// hiprtc compiles the two at first use.
//
// Two layouts of W, the host picks by its strides:
// - columns (`matvec_cols`): W [K, N] with N contiguous. A block's threads are CG column words
//   (V = 16 / sizeof(T) columns each; 8 words, 128 bytes of a row, where N has them) times
//   S = blockDim.x / CG slices of K; a thread sums rows k = s, s + S, ... of its word (of its
//   block's chunk of K: few column words split K over blocks), U rows' loads in flight at once
//   (up to 24: a block's share of the weight is in flight at once, as a pipelined GEMM's). The
//   slices of a warp meet by shuffles (lanes CG apart), the warps' sums in shared memory, the
//   chunks' sums in `parts` (added by the chunk that finishes last, a counter a column run):
//   each in a fixed order.
// - rows (`matvec_rows`): W [N, K] with K contiguous (a transposed weight, tied embeddings). A
//   warp takes MV_ROWS columns n, its lanes 16-byte words of K, meeting by shuffles.
// x is read through its strides, element by element: by the columns walk into shared memory a
// step of rows at a time, by the rows walk from the cache.

struct MvArgs {
  u64 k, n;
  // x's offset, stride between its rows and along K.
  u64 x_off, x_row, x_k;
  // W's offset and its stride between rows (columns: along K; rows: along N).
  u64 w_off, w_ld;
  // Column words a block (columns layout; a power of two, at most MV_MAX_CG), and rows of K a
  // block (grid.y splits K in chunks of kc).
  u64 cg, kc;
};

#define MV_ROWS 2
#define MV_MAX_WARPS 8
// Column words a block at most, and rows of a block's step (U x its slices) at most: the host
// plans within them (src/native/matvec.rs).
#define MV_MAX_CG 8
#define MV_STEP_ROWS 1024
// x's values a thread stages a step, per row of x (MV_STEP_ROWS over a block of 256 threads).
#define MV_XS_PER 4

template <class T, int R>
__device__ __forceinline__ void mv_x(const MvArgs& a, const T* x, u64 k, float* xv) {
#pragma unroll
  for (int r = 0; r < R; ++r) xv[r] = num<T>::load(x[a.x_off + (u64)r * a.x_row + k * a.x_k]);
}

template <class T, int R, int U, class Fetch, class Put>
__device__ __forceinline__ void matvec_cols(const MvArgs& a, const T* x, const T* w, float* parts, u32* counts,
                                            Fetch fetch, Put put) {
  constexpr int V = 16 / (int)sizeof(T);
  // x's rows of a step while the products run, then the warps' sums (a barrier between).
  constexpr int XS = MV_STEP_ROWS * R, PART = MV_MAX_WARPS * MV_MAX_CG * R * V;
  __shared__ float smem[XS > PART ? XS : PART];
  __shared__ bool last;
  float* xs = smem;
  float* part = smem;
  const u32 warp = (u32)warpSize, cg = (u32)a.cg, slices = blockDim.x / cg;
  const u32 c = threadIdx.x % cg, s = threadIdx.x / cg;
  const u64 n0 = ((u64)blockIdx.x * cg + c) * V;
  const u64 k1 = min(a.k, (u64)(blockIdx.y + 1) * a.kc);
  // The result this thread puts (if any), and its epilogue's operands, loaded first.
  const u32 e = threadIdx.x, cc = e / (R * V), orow = e / V % R, ov = e % V;
  const u64 n = ((u64)blockIdx.x * cg + cc) * V + ov;
  const bool mine = e < cg * R * V && n < a.n;
  const u32 out = mine ? (u32)(orow * a.n + n) : 0u;
  const auto pre = fetch(out);
  float acc[R][V];
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int v = 0; v < V; ++v) acc[r][v] = 0.0f;
  }
  // Steps of U rows a thread: its weight words' loads issued first, then x's values of
  // the step's rows staged in shared memory by the whole block (read once, not once a column
  // word), then the products. Rows past the chunk and columns past N load nothing (zeros: they
  // add 0 x 0).
  const uint4* col = reinterpret_cast<const uint4*>(w + a.w_off + min(n0, a.n - V));
  const u64 ld = a.w_ld / V, step = U * (u64)slices;
  for (u64 k = (u64)blockIdx.y * a.kc; k < k1; k += step) {
    uint4 wv[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const u64 ku = k + s + u * (u64)slices;
      wv[u] = ku < k1 && n0 < a.n ? col[ku * ld] : make_uint4(0u, 0u, 0u, 0u);
    }
    // x's values: every load issued before the first store (a loop storing each as it lands
    // waits on the cache once a value), in 32-bit index arithmetic (a step is at most
    // MV_STEP_ROWS rows).
    const u32 st = (u32)step;
    T xr[MV_XS_PER * R];
#pragma unroll
    for (int q = 0; q < MV_XS_PER * R; ++q) {
      const u32 j = threadIdx.x + (u32)q * blockDim.x, jr = j / st, kk = j - jr * st;
      xr[q] = j < st * R && k + kk < k1 ? x[a.x_off + (u64)jr * a.x_row + (k + kk) * a.x_k] : T{};
    }
#pragma unroll
    for (int q = 0; q < MV_XS_PER * R; ++q) {
      const u32 j = threadIdx.x + (u32)q * blockDim.x;
      if (j < st * R) xs[j] = k + (j % st) < k1 ? num<T>::load(xr[q]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const T* we = reinterpret_cast<const T*>(&wv[u]);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float xv = xs[r * step + s + u * slices];
#pragma unroll
        for (int v = 0; v < V; ++v) acc[r][v] = fmaf(xv, num<T>::load(we[v]), acc[r][v]);
      }
    }
    __syncthreads();
  }
  // The warp's slices (lanes cg apart), then the warps' in order.
  for (u32 o = cg; o < warp; o <<= 1) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int v = 0; v < V; ++v) acc[r][v] += shfl_xor(acc[r][v], (int)o);
    }
  }
  const u32 wi = threadIdx.x / warp, lane = threadIdx.x % warp, warps = blockDim.x / warp;
  if (lane < cg) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int v = 0; v < V; ++v) part[((wi * cg + c) * R + r) * V + v] = acc[r][v];
    }
  }
  __syncthreads();
  float sum = 0.0f;
  if (mine) {
    for (u32 i = 0; i < warps; ++i) sum += part[((i * cg + cc) * R + orow) * V + ov];
  }
  if (gridDim.y == 1) {
    if (mine) put(num<T>::store(sum), out, pre);
    return;
  }
  // K in gridDim.y chunks: each block's sums to `parts`; the last block of a column run to
  // finish adds them in chunk order and puts them (and leaves its counter at 0 again).
  if (mine) parts[((u64)blockIdx.y * R + orow) * a.n + n] = sum;
  count_fence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&counts[blockIdx.x], 1u) == gridDim.y - 1;
  __syncthreads();
  if (!last) return;
  count_fence();
  if (mine) {
    const volatile float* p = parts;
    float t = 0.0f;
    for (u32 j = 0; j < gridDim.y; ++j) t += p[((u64)j * R + orow) * a.n + n];
    put(num<T>::store(t), out, pre);
  }
  if (threadIdx.x == 0) counts[blockIdx.x] = 0u;
}

template <class T, int R, class Fetch, class Put>
__device__ __forceinline__ void matvec_rows(const MvArgs& a, const T* x, const T* w, Fetch fetch, Put put) {
  constexpr int V = 16 / (int)sizeof(T);
  const u32 warp = (u32)warpSize, lane = threadIdx.x % warp;
  const u64 n0 = ((u64)blockIdx.x * (blockDim.x / warp) + threadIdx.x / warp) * MV_ROWS;
  if (n0 >= a.n) return;
  // Lane j R + r puts row r of column n0 + j: its epilogue's operands, loaded first.
  const u64 mj = lane / R % MV_ROWS, mr = lane % R;
  const bool mine = lane < MV_ROWS * R && n0 + mj < a.n;
  const auto pre = fetch(mine ? (u32)(mr * a.n + n0 + mj) : 0u);
  // Rows past N (the last warp's) read row N - 1 again and write nothing.
  const T* rows[MV_ROWS];
#pragma unroll
  for (int j = 0; j < MV_ROWS; ++j) rows[j] = w + a.w_off + min(n0 + j, a.n - 1) * a.w_ld;
  float acc[MV_ROWS][R];
#pragma unroll
  for (int j = 0; j < MV_ROWS; ++j) {
#pragma unroll
    for (int r = 0; r < R; ++r) acc[j][r] = 0.0f;
  }
#pragma unroll 2
  for (u64 k = (u64)lane * V; k < a.k; k += (u64)warp * V) {
    Pack<T, V> wv[MV_ROWS];
#pragma unroll
    for (int j = 0; j < MV_ROWS; ++j) wv[j] = *(const Pack<T, V>*)(rows[j] + k);
#pragma unroll
    for (int v = 0; v < V; ++v) {
      float xv[R];
      mv_x<T, R>(a, x, k + v, xv);
#pragma unroll
      for (int j = 0; j < MV_ROWS; ++j) {
#pragma unroll
        for (int r = 0; r < R; ++r) acc[j][r] = fmaf(xv[r], num<T>::load(wv[j].v[v]), acc[j][r]);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < MV_ROWS; ++j) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      for (u32 o = warp >> 1; o > 0; o >>= 1) acc[j][r] += shfl_xor(acc[j][r], (int)o);
      if (mine && lane == (u32)(j * R + r)) put(num<T>::store(acc[j][r]), (u32)(r * a.n + n0 + j), pre);
    }
  }
}
