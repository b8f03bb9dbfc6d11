#!/usr/bin/env bash
# Runs every cargo-fuzz target of every crate for SECONDS each (default 20).
# Needs the nightly toolchain (rustup) and cargo-fuzz, which this installs if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
rustup toolchain list | grep -q nightly || rustup toolchain install nightly --profile minimal
cargo +nightly fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked
for d in crates/*/fuzz; do
  echo "=== $d"
  if [ -x "$d/run-all.sh" ]; then
    "$d/run-all.sh" "$secs"
  else
    (cd "$d" && for t in $(cargo +nightly fuzz list); do
       mkdir -p "corpus/$t"
       cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" >"corpus/$t.log" 2>&1 \
         || { tail -30 "corpus/$t.log"; exit 1; }
       grep -E "^Done" "corpus/$t.log" || true
     done)
  fi
done
