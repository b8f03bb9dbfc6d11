#!/usr/bin/env bash
# Fuzz campaigns (docs/FUZZING.md). Runs every cargo-fuzz target of every crates/*/fuzz for SECONDS
# each (default 60), seeded from the checked-in corpus (fuzz/seeds/<target>) and from the working
# corpus of earlier runs (fuzz/corpus/<target>, not in git, kept between runs).
#
#   scripts/fuzz.sh [--merge] [--crate CRATE] [SECONDS] [TARGET...]
#
# --merge      after the run, add the working-corpus inputs that reach new coverage to the checked-in
#              corpus (libFuzzer -merge=1 into fuzz/seeds/<target>); only then does git see them.
# --crate C    only crates/C/fuzz.
# TARGET...    only these targets.
#
# Each run appends "date crate target seconds executions exec/s crashed artifact" to
# results/fuzz/runs.tsv and prints the same table. A crash stops nothing else: every target runs, the
# script exits non-zero at the end, and the crashing input is in fuzz/artifacts/<target>/; once the
# bug is fixed, copy it to fuzz/regressions/<target>/ (named after the bug) so that `make test`
# replays it forever (crates/<crate>/tests/fuzz_corpus.rs).
#
# Needs the nightly toolchain and cargo-fuzz; installs both if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
merge=0
only_crate=""
secs=60
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --merge) merge=1 ;;
        --crate) only_crate="$2"; shift ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        [0-9]*) secs="$1" ;;
        *) targets+=("$1") ;;
    esac
    shift
done

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
cargo +nightly fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked

# Longest input per crate: a header, a frame, a ring image, a capture file, a request line.
max_len() {
    case "$1" in
        wire) echo 512 ;;
        gen) echo 2048 ;;
        control) echo 4096 ;;
        *) echo 8192 ;;
    esac
}

mkdir -p results/fuzz
log="$root/results/fuzz/runs.tsv"
[ -s "$log" ] || printf 'date\tcrate\ttarget\tseconds\texecutions\texec_per_s\tcrashed\tartifact\n' >"$log"
failed=0
for d in crates/*/fuzz; do
    crate=$(basename "$(dirname "$d")")
    [ -z "$only_crate" ] || [ "$crate" = "$only_crate" ] || continue
    for f in "$d"/fuzz_targets/*.rs; do
        t=$(basename "$f" .rs)
        if [ ${#targets[@]} -gt 0 ] && ! printf '%s\n' "${targets[@]}" | grep -qx "$t"; then
            continue
        fi
        mkdir -p "$d/corpus/$t" "$d/seeds/$t"
        dict=()
        [ -f "$d/$crate.dict" ] && dict=(-dict="$crate.dict")
        echo "=== $crate/$t: ${secs}s"
        out="$d/corpus/$t.log"
        crashed=no
        (cd "$d" && cargo +nightly fuzz run "$t" "corpus/$t" "seeds/$t" -- \
            -max_total_time="$secs" -max_len="$(max_len "$crate")" "${dict[@]}" -print_final_stats=1) \
            >"$out" 2>&1 || crashed=yes
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -1)
        rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out" | tail -1)
        artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$out" | tail -1)
        if [ "$crashed" = yes ]; then
            failed=1
            grep -E "panicked|ERROR|SUMMARY|Test unit" "$out" | head -10 || tail -20 "$out"
            [ -n "$artifact" ] && echo "crashing input: $d/$artifact (fix, then copy to $d/regressions/$t/)"
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$crate" "$t" "$secs" \
            "${execs:-?}" "${rate:-?}" "$crashed" "${artifact:+$d/$artifact}" | tee -a "$log"
        if [ "$merge" = 1 ] && [ "$crashed" = no ]; then
            before=$(ls "$d/seeds/$t" | wc -l)
            (cd "$d" && cargo +nightly fuzz run "$t" "seeds/$t" "corpus/$t" -- -merge=1 \
                -max_len="$(max_len "$crate")" >"corpus/$t.merge.log" 2>&1)
            echo "merged into $d/seeds/$t: $before -> $(ls "$d/seeds/$t" | wc -l) inputs ($(du -sh "$d/seeds/$t" | cut -f1))"
        fi
    done
done
echo "runs recorded in results/fuzz/runs.tsv"
exit "$failed"
