#!/usr/bin/env bash
# Run the switch's fuzz target for SECONDS (default 20) each, seeded from seeds/<target>; stops
# with a non-zero status at the first crash (the input lands in artifacts/<target>).
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-20}"
for t in l2_frames; do
    mkdir -p "corpus/$t"
    echo "== $t"
    if ! cargo +nightly fuzz run "$t" "corpus/$t" "seeds/$t" -- -max_total_time="$secs" -max_len=8192 >"corpus/$t.log" 2>&1; then
        grep -E "ERROR|panicked|SUMMARY|Test unit" "corpus/$t.log" || tail -20 "corpus/$t.log"
        exit 1
    fi
    grep -E "^Done" "corpus/$t.log"
done
