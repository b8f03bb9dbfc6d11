#!/usr/bin/env bash
# Per-packet cost of the L2 graph alone (no I/O): cross-connect, and a bridge whose MAC table holds
# 2, 2k, 20k, 200k and 1M entries, with traffic spread over the whole table (see
# crates/switch/src/testing.rs, crates/switch/benches/l2.rs).
#
#   scripts/bench-nodes.sh [REPS]          (default 3)
#
# 1. Wall clock: `cargo bench -p vecswitch-switch --bench l2`, run REPS times (each run measures
#    every case in turn, so the cases are interleaved run by run); per run and case the criterion
#    median time per iteration / 256 packets = ns/packet. Table: median, min, max over the runs,
#    ratio to the cross-connect and, for the bridges, to the bridge with 2 MACs.
# 2. Instructions: `valgrind --tool=callgrind --cache-sim=yes --toggle-collect='*run_packets*'` on
#    crates/switch/examples/l2_packets with K packets (env K, default 102400, a multiple of 256);
#    instructions/packet = collected Ir / K, and the simulated data-cache misses per packet
#    (D1 = first level, LL = last level). Instruction counts do not depend on the host's load;
#    one run per case, repeated once (CALLGRIND_REPS, default 2) to show they are stable.
# 3. Wall clock, interleaved in one process: `l2_packets interleave ROUNDS` (env ROUNDS, default
#    200; 0 skips): the cross-connect and the bridges of 2, 20k and 1M MACs timed in turn, round
#    after round, so that a loaded host slows all alike; min and median ns/packet and the rate
#    relative to the bridge with 2 MACs (median of the per-round ratios).
# Results: results-bench/nodes-*/ (criterion outputs, callgrind summaries, table.md).
set -euo pipefail
source "$(dirname "$0")/bench-lib.sh"

REPS="${1:-3}"
K="${K:-102400}"
CALLGRIND_REPS="${CALLGRIND_REPS:-2}"
ROUNDS="${ROUNDS:-200}"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "REPS = '$REPS': accepted a whole number >= 1"
[[ "$ROUNDS" =~ ^[0-9]+$ ]] || die "ROUNDS = '$ROUNDS': accepted a whole number >= 0 (0 skips the interleaved run)"
[[ "$K" =~ ^[1-9][0-9]*$ ]] || die "K = '$K': accepted a whole number >= 1 (a multiple of 256 is exact)"
command -v valgrind >/dev/null || die "valgrind not found (apt-get install valgrind)"

bench_init nodes
machine_info | tee "$RESULTS/machine.md" >&2
CASES=(xconnect bridge/2 bridge/2000 bridge/20000 bridge/200000 bridge/1000000)

# ----- criterion -------------------------------------------------------------------------------
declare -A NS
for ((rep = 1; rep <= REPS; rep++)); do
    log "criterion run $rep/$REPS"
    (cd "$ROOT" && cargo bench -p vecswitch-switch --bench l2 -- --noplot) \
        >"$RESULTS/criterion-$rep.txt" 2>"$RESULTS/criterion-$rep.err" ||
        { tail -20 "$RESULTS/criterion-$rep.err" >&2; die "cargo bench failed"; }
    for c in "${CASES[@]}"; do
        est="$ROOT/target/criterion/l2/$c/new/estimates.json"
        [[ -f "$est" ]] || die "no criterion estimate $est"
        # median time per iteration (ns) of this run; an iteration is one vector of 256 packets.
        v=$(python3 -c 'import json,sys; print("%.3f" % (json.load(open(sys.argv[1]))["median"]["point_estimate"] / 256))' "$est")
        cp "$est" "$RESULTS/estimates-${c//\//-}-$rep.json"
        NS[$c]="${NS[$c]:-} $v"
        log "  $c: $v ns/packet"
    done
done

# ----- callgrind -------------------------------------------------------------------------------
log "cargo build --release -p vecswitch-switch --example l2_packets"
(cd "$ROOT" && cargo build --release -p vecswitch-switch --example l2_packets) >&2
EX="$ROOT/target/release/examples/l2_packets"
declare -A IR D1 LL
for ((rep = 1; rep <= CALLGRIND_REPS; rep++)); do
    for c in "${CASES[@]}"; do
        mode=${c%%/*}
        entries=2
        [[ "$c" == */* ]] && entries=${c#*/}
        out="$RESULTS/callgrind-${c//\//-}-$rep"
        log "callgrind $c ($K packets), run $rep/$CALLGRIND_REPS"
        valgrind --tool=callgrind --cache-sim=yes --toggle-collect='*run_packets*' \
            --callgrind-out-file="$out.out" "$EX" "$mode" "$entries" "$K" >"$out.stdout" 2>"$out.stderr" ||
            { tail -20 "$out.stderr" >&2; die "callgrind run of $c failed"; }
        # "Events    : Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw" / "Collected : ..."
        read -r ir d1 ll < <(awk -v k="$K" '
            /Events *:/ { for (i = 3; i <= NF; i++) ev[i] = $i }
            /Collected *:/ { for (i = 3; i <= NF; i++) c[ev[i]] = $i }
            END { printf "%.1f %.3f %.3f\n", c["Ir"] / k, (c["D1mr"] + c["D1mw"]) / k, (c["DLmr"] + c["DLmw"]) / k }
        ' <(sed 's/^==[0-9]*== //' "$out.stderr"))
        IR[$c]="${IR[$c]:-} $ir"
        D1[$c]="${D1[$c]:-} $d1"
        LL[$c]="${LL[$c]:-} $ll"
        log "  $c: $ir instructions/packet, D1 misses $d1, LL misses $ll per packet"
        rm -f "$out.out"
    done
done

# ----- interleaved wall clock ------------------------------------------------------------------
if ((ROUNDS > 0)); then
    log "l2_packets interleave $ROUNDS"
    "$EX" interleave "$ROUNDS" >"$RESULTS/interleave.md" 2>"$RESULTS/interleave.err" ||
        { tail -20 "$RESULTS/interleave.err" >&2; die "l2_packets interleave failed"; }
fi

# ----- table ---------------------------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "—" }'; }
# shellcheck disable=SC2086
read -r xc _ _ < <(stats_line ${NS[xconnect]})
# shellcheck disable=SC2086
read -r b2 _ _ < <(stats_line ${NS[bridge/2]})
# shellcheck disable=SC2086
read -r ixc _ _ < <(stats_line ${IR[xconnect]})
# shellcheck disable=SC2086
read -r ib2 _ _ < <(stats_line ${IR[bridge/2]})
{
    echo "L2 graph alone (loopback replay ports, 64-byte frames, one vector = 256 packets)."
    echo
    echo "Wall clock: \`cargo bench -p vecswitch-switch --bench l2\` × $REPS runs; per run the criterion median; ns/packet (lower is better)."
    echo
    echo "| case | median ns/pkt | min | max | Mpps (1/median) | × xconnect | × bridge 2 MACs | runs |"
    echo "|---|---|---|---|---|---|---|---|"
    for c in "${CASES[@]}"; do
        # shellcheck disable=SC2086
        read -r med mn mx < <(stats_line ${NS[$c]})
        rb="—"
        [[ "$c" == bridge/* ]] && rb=$(ratio "$med" "$b2")
        echo "| $c | $med | $mn | $mx | $(awk -v m="$med" 'BEGIN { printf "%.1f", 1000 / m }') | $(ratio "$med" "$xc") | $rb | $(echo ${NS[$c]} | tr ' ' '/') |"
    done
    echo
    echo "Instructions: \`valgrind --tool=callgrind --cache-sim=yes --toggle-collect='*run_packets*' target/release/examples/l2_packets MODE ENTRIES $K\`, $CALLGRIND_REPS runs per case (per-packet figures = collected events / $K)."
    echo
    echo "| case | instructions/pkt | × xconnect | × bridge 2 MACs | D1 misses/pkt (sim.) | LL misses/pkt (sim.) | runs (Ir/pkt) |"
    echo "|---|---|---|---|---|---|---|"
    for c in "${CASES[@]}"; do
        # shellcheck disable=SC2086
        read -r med _ _ < <(stats_line ${IR[$c]})
        # shellcheck disable=SC2086
        read -r d1 _ _ < <(stats_line ${D1[$c]})
        # shellcheck disable=SC2086
        read -r ll _ _ < <(stats_line ${LL[$c]})
        rb="—"
        [[ "$c" == bridge/* ]] && rb=$(ratio "$med" "$ib2")
        echo "| $c | $med | $(ratio "$med" "$ixc") | $rb | $d1 | $ll | $(echo ${IR[$c]} | tr ' ' '/') |"
    done
    if ((ROUNDS > 0)); then
        echo
        echo "Wall clock, interleaved: \`target/release/examples/l2_packets interleave $ROUNDS\` (one sample = 64 vectors of 256 packets per case per round)."
        echo
        cat "$RESULTS/interleave.md"
    fi
    echo
    machine_info "at the end (the benchmark's own busy pollers included)"
    grep -o 'load average [0-9. ]*' "$RESULTS/machine.md" | sed 's/^/- at start: /'
} | tee "$RESULTS/table.md"
