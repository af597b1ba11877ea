#!/bin/sh
# Test vectors for the k-quant quantizers, from ggml's own C: builds gen_kquant.c with ggml's
# src/ggml-quants.c, unmodified, and writes tests/vectors/quant/kinput.f32 and {ty}.kquant.
#
# Needs a ggml checkout and gcc on a little-endian machine (x86-64). The committed vectors came
# from ggml commit d99724f2b141fed9e1a9f402213506c081433465:
#   git clone https://github.com/ggml-org/ggml /tmp/ggml
#   git -C /tmp/ggml checkout d99724f2b141fed9e1a9f402213506c081433465
#   sh tests/vectors/gen_kquant.sh /tmp/ggml
#
# -ffp-contract=off and no -march: no fused multiply-adds, every f32 step rounded as the C says,
# as the crate's Rust does it (a build with FMA contraction, e.g. -march=native, gives other
# q2_K..q6_K bytes in some blocks). -DNDEBUG as ggml's release builds. --gc-sections drops the
# parts of ggml-quants.c that call into the rest of ggml (never reached here).
set -eu
ggml=${1:?usage: gen_kquant.sh GGML_CHECKOUT}
here=$(cd "$(dirname "$0")" && pwd)
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
flags="-O2 -ffp-contract=off -DNDEBUG -ffunction-sections -fdata-sections"
flags="$flags -I$ggml/include -I$ggml/src -I$ggml/src/ggml-cpu"
gcc $flags -c "$ggml/src/ggml-quants.c" -o "$build/ggml-quants.o"
gcc $flags -c "$here/gen_kquant.c" -o "$build/gen_kquant.o"
gcc -Wl,--gc-sections "$build/gen_kquant.o" "$build/ggml-quants.o" -lm -o "$build/gen_kquant"
"$build/gen_kquant" "$here/quant"
