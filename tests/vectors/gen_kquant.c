// Test vectors for the k-quant quantizers, from ggml's own C (built by gen_kquant.sh).
//
// Writes, into the directory given as the only argument:
//   kinput.f32     12 super-blocks of 256 values (f32 little-endian), one edge case each
//   {ty}.kquant    ggml's quantize_row_{ty}_ref of kinput.f32 as one row, for q2_K..q6_K
//
// The values come from an integer generator and float steps without libm: built without
// FMA contraction (as gen_kquant.sh builds it), the same on any machine.

#include "ggml-quants.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCKS 12
#define N (BLOCKS * QK_K)

static uint32_t state = 0x2545f491u;

// xorshift32, mapped to [0, 1)
static float uniform(void) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return (float)(state >> 8) / 16777216.0f;
}

// Irwin-Hall: the sum of four uniforms, centred; mean 0, variance 1/3
static float normalish(void) {
    return uniform() + uniform() + uniform() + uniform() - 2.0f;
}

static void fill(float * x) {
    static const float runs32[8] = { -0.5f, 2.0f, -3.25f, 0.125f, -1e-3f, 7.0f, -0.0625f, 1.0f };
    static const float tiny[8] = { 3e-5f, 1e-5f, 1e-6f, 1e-7f, 3e-4f, 1e-3f, 2e-5f, 5e-6f };
    static const float decades[8] = { 1e-4f, 1e-3f, 1e-2f, 1e-1f, 1.0f, 10.0f, 100.0f, 1000.0f };
    for (int i = 0; i < QK_K; ++i) {
        float * b = x + i;
        b[0 * QK_K] = 0.05f * normalish();                            // ordinary weights
        b[1 * QK_K] = 0.0f;                                           // all zero
        b[2 * QK_K] = 0.75f;                                          // constant
        b[3 * QK_K] = runs32[i / 32];                                 // a constant per run of 32
        b[4 * QK_K] = 0.01f * normalish();                            // small, outliers below
        b[5 * QK_K] = -(0.5f * (normalish() + 2.0f) + 0.01f);         // all negative
        b[6 * QK_K] = tiny[i / 32] * normalish();                     // scales below f16's normals
        b[7 * QK_K] = decades[(i / 16) % 8] * normalish();            // magnitudes per run of 16
        b[8 * QK_K] = (i / 16 == 1 || i / 16 == 4 || i / 16 == 5 || i / 16 == 14) ? 0.0f : normalish();
        b[9 * QK_K] = 2.0f * uniform() + 0.25f;                       // all positive
        b[10 * QK_K] = (float)(int)(normalish() * 64.0f) / 16.0f;     // multiples of 1/16: ties
        b[11 * QK_K] = 2e4f * uniform() - 1e4f;                       // wide
    }
    x[4 * QK_K + 77] = 1000.0f;
    x[4 * QK_K + 200] = -3.0f;
    // largest magnitudes tied between signs, the positive one first, then the negative one
    x[10 * QK_K + 3] = 9.0f;
    x[10 * QK_K + 9] = -9.0f;
    x[10 * QK_K + 20] = -9.0f;
    x[10 * QK_K + 27] = 9.0f;
}

static int write(const char * dir, const char * name, const void * data, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE * f = fopen(path, "wb");
    if (!f || fwrite(data, 1, bytes, f) != bytes || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        return 1;
    }
    return 0;
}

int main(int argc, char ** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
        return 2;
    }
    static float x[N];
    fill(x);
    static block_q2_K q2[BLOCKS];
    static block_q3_K q3[BLOCKS];
    static block_q4_K q4[BLOCKS];
    static block_q5_K q5[BLOCKS];
    static block_q6_K q6[BLOCKS];
    quantize_row_q2_K_ref(x, q2, N);
    quantize_row_q3_K_ref(x, q3, N);
    quantize_row_q4_K_ref(x, q4, N);
    quantize_row_q5_K_ref(x, q5, N);
    quantize_row_q6_K_ref(x, q6, N);
    return write(argv[1], "kinput.f32", x, sizeof x) || write(argv[1], "q2_K.kquant", q2, sizeof q2)
        || write(argv[1], "q3_K.kquant", q3, sizeof q3) || write(argv[1], "q4_K.kquant", q4, sizeof q4)
        || write(argv[1], "q5_K.kquant", q5, sizeof q5) || write(argv[1], "q6_K.kquant", q6, sizeof q6);
}
