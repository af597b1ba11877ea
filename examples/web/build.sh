#!/usr/bin/env bash
# Builds the self-check page into examples/web/pkg/ (the wasm module and its JS glue). Then:
#   python3 -m http.server -d examples/web 8000   # and open http://localhost:8000/ (?quick: f32 only)
# Needs the wasm32 target and wasm-bindgen-cli at the version Cargo.lock resolves.
set -euo pipefail
cd "$(dirname "$0")/../.."
want=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/^version = "\(.*\)"$/\1/p')
if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $want" ]; then
  echo "needs wasm-bindgen $want: cargo install wasm-bindgen-cli --version $want" >&2
  exit 1
fi
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
cargo build --release --target wasm32-unknown-unknown --example web
target=${CARGO_TARGET_DIR:-target}
wasm-bindgen --target web --no-typescript --out-dir examples/web/pkg \
  "$target/wasm32-unknown-unknown/release/examples/web.wasm"
echo "built examples/web/pkg; serve with: python3 -m http.server -d examples/web 8000"
