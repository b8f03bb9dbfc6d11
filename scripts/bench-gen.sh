#!/usr/bin/env bash
# The generator's maximum rate on one core, against DPDK testpmd txonly as the peer, same run,
# interleaved (A B A B ...):
#
#   scripts/bench-gen.sh [SECONDS] [REPS]          (defaults 10 s, 5 repetitions)
#
# memif (always): sender on CPU 0 (memif client), testpmd rxonly on CPU 1 (memif server, both
# lcores); the rate is rxonly's Rx-pps sampled once a second after WARMUP (env, default 3 s).
#   gen-64        vecswitch gen --size 64 --rate max                 (64-byte frames with FCS)
#   txonly-64     testpmd --forward-mode=txonly --txpkts=60          (the same 64-byte frames)
#   gen-imix      vecswitch gen --size imix --rate max               (64/570/1518 B, 7:4:1, mean 353.8 B)
#   txonly-350    testpmd txonly --txpkts=350: testpmd has no IMIX, so the peer sends frames of
#                 IMIX's mean size (354 B with FCS) — same bytes/s at the same frame rate, not
#                 the same size mix
# AF_PACKET over a veth pair (env AFP=1, default 1): a network namespace made by this script with
# a veth pair va <-> vb; receive side: testpmd rxonly on vb with DPDK's net_af_packet PMD on CPU 1,
# with RPS steering vb's receive work to CPU 1; senders on CPU 0 on va:
#   afp-gen-64    vecswitch gen --port afp:va@/run/netns/NS --size 64 --rate max
#   afp-txonly-64 testpmd txonly --txpkts=60 with net_af_packet on va (DPDK's own AF_PACKET sender:
#                 the same kernel interface, a different user-space sender)
#
# Output: results-bench/gen-*/samples.csv and table.md; a Markdown table on stdout.
set -euo pipefail
source "$(dirname "$0")/bench-lib.sh"

SECS="${1:-10}"
REPS="${2:-5}"
WARMUP="${WARMUP:-3}"
AFP="${AFP:-1}"
CASES="${CASES:-gen-64 txonly-64 gen-imix txonly-350}"
[[ "$AFP" == 1 ]] && CASES="$CASES afp-gen-64 afp-txonly-64"
[[ "$SECS" =~ ^[1-9][0-9]*$ ]] || die "SECONDS = '$SECS': accepted a whole number of seconds >= 1"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "REPS = '$REPS': accepted a whole number >= 1"
for c in $CASES; do
    case "$c" in gen-64 | txonly-64 | gen-imix | txonly-350 | afp-gen-64 | afp-txonly-64) ;;
    *) die "CASES contains '$c': accepted gen-64, txonly-64, gen-imix, txonly-350, afp-gen-64, afp-txonly-64" ;;
    esac
done
command -v "$TESTPMD" >/dev/null || die "$TESTPMD not found (make setup installs dpdk-dev)"

bench_init gen
build_release
machine_info | tee "$RESULTS/machine.md" >&2
SOCK="$RUN/g.sock"

NS="vsbench-gen-$$"
if [[ " $CASES " == *" afp-"* ]]; then
    ip netns add "$NS"
    BENCH_NETNS+=("$NS")
    ip -n "$NS" link add va type veth peer name vb
    ip -n "$NS" link set va up
    ip -n "$NS" link set vb up
    # RPS: the receive work of vb on CPU 1 (the receiver's CPU), not on the sender's CPU 0.
    ip netns exec "$NS" sh -c 'echo 2 > /sys/class/net/vb/queues/rx-0/rps_cpus'
fi

echo "case,rep,run_mpps,sample_min_mpps,sample_max_mpps,rx_packets_window,sender_offered_fps,tester_limited,samples" >"$RESULTS/samples.csv"

run_case() { # CASE REP
    local c="$1" rep="$2" gen_pid="" offered="" limited="" secs_total
    log "run $rep/$REPS: $c"
    rm -f "$SOCK"
    secs_total=$((WARMUP + SECS + 3))
    if [[ "$c" == afp-* ]]; then
        PMD_WRAP=(ip netns exec "$NS")
        pmd_start rx 1 "--vdev=net_af_packet0,iface=vb,framecnt=8192" -- --forward-mode=rxonly
    else
        PMD_WRAP=()
        pmd_start rx 1 "--vdev=net_memif0,role=server,socket=$SOCK,socket-abstract=no,id=0" \
            -- --forward-mode=rxonly
    fi
    pmd_cmd rx start
    case "$c" in
    gen-64 | gen-imix)
        local size=64
        [[ "$c" == gen-imix ]] && size=imix
        bg_start "$RUN/gen.json" taskset -c 0 "$VECSWITCH" gen --port "memif:$SOCK:0:client" \
            --size "$size" --rate max --duration "${secs_total}s" --drain 100ms --json
        gen_pid=$BG_PID
        ;;
    afp-gen-64)
        bg_start "$RUN/gen.json" taskset -c 0 "$VECSWITCH" gen --port "afp:va@/run/netns/$NS" \
            --size 64 --rate max --duration "${secs_total}s" --drain 100ms --json
        gen_pid=$BG_PID
        ;;
    txonly-64 | txonly-350)
        local len=60
        [[ "$c" == txonly-350 ]] && len=350
        pmd_start tx 0 "--vdev=net_memif0,role=client,socket=$SOCK,socket-abstract=no,id=0" \
            -- --forward-mode=txonly "--txpkts=$len"
        pmd_cmd tx start
        ;;
    afp-txonly-64)
        pmd_start tx 0 "--vdev=net_af_packet0,iface=va,framecnt=8192" -- --forward-mode=txonly --txpkts=60
        pmd_cmd tx start
        ;;
    esac
    [[ "$c" == afp-* ]] || pmd_wait_link rx
    sleep "$WARMUP"
    [[ -z "$gen_pid" ]] && pmd_stats tx # baseline of the sender's Tx-pps over the same window
    sample_rx rx "$SECS"
    if [[ -n "$gen_pid" ]]; then
        # Let the generator finish its trial to get its report (offered rate, tester-limited).
        local i
        for ((i = 0; i < 100; i++)); do kill -0 "$gen_pid" 2>/dev/null || break; sleep 0.1; done
        stop_pid "$gen_pid" 2
        cp "$RUN/gen.json" "$RESULTS/gen-$c-$rep.json"
        read -r offered limited < <(python3 -c '
import json, sys
t = open(sys.argv[1]).read()
try:
    r = json.loads(t[t.index("{"):])
    print("%.0f %s" % (sum(p["offered_fps"] for p in r["ports"]), r["tester_limited"]))
except Exception:
    print("nan unknown")' "$RUN/gen.json")
    else
        pmd_stats tx
        offered="$PMD_TXPPS"
        limited="n/a"
        pmd_quit tx
        cp "$RUN/tx.log" "$RESULTS/tx-$c-$rep.log"
    fi
    pmd_quit rx
    cp "$RUN/rx.log" "$RESULTS/rx-$c-$rep.log"
    rm -f "$RUN"/*.in
    local m smin smax
    m=$(mean "${SAMPLE_LIST[@]}")
    read -r _ smin smax < <(stats_line "${SAMPLE_LIST[@]}")
    echo "$c,$rep,$m,$smin,$smax,$((SAMPLE_RX1 - SAMPLE_RX0)),$offered,$limited,${SAMPLE_LIST[*]}" >>"$RESULTS/samples.csv"
    log "  $c: $m Mpps received (per-second $smin .. $smax); sender offered $offered fps"
}

for ((rep = 1; rep <= REPS; rep++)); do
    for c in $CASES; do run_isolated run_case "$c" "$rep" || log "run $rep of $c failed twice; left out"; done
done

# ----- table (from samples.csv) -----------------------------------------------------------------
{
    echo "Generator maximum rate, $REPS interleaved runs of ${SECS} s (after ${WARMUP} s warm-up) per case; sender on CPU 0, testpmd rxonly on CPU 1. Rate = what rxonly received."
    echo
    python3 - "$RESULTS/samples.csv" "$CASES" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cases = sys.argv[2].split()
runs = {c: [r for r in rows if r["case"] == c] for c in cases}
med = {c: statistics.median(float(r["run_mpps"]) for r in rs) for c, rs in runs.items() if rs}
peer = {"gen-64": "txonly-64", "gen-imix": "txonly-350", "afp-gen-64": "afp-txonly-64"}
size = {"gen-imix": 4246 / 12, "txonly-350": 354}
print("| sender | transport | median Mpps | min | max | Gbit/s L2 (median) | ratio to peer (medians) | bimodal? | runs (Mpps) | sender's own count, Mfps (median) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for c in cases:
    rs = runs[c]
    if not rs:
        print(f"| {c} | | not measured (every run failed) | | | | | | | |")
        continue
    v = [float(r["run_mpps"]) for r in rs]
    p = peer.get(c)
    ratio = f"{med[c] / med[p]:.2f} (vs {p})" if p and med.get(p) else "—"
    bi = "yes" if max(v) > 1.5 * min(v) else "no"
    within = [r["rep"] for r in rs if float(r["sample_max_mpps"]) > 1.5 * float(r["sample_min_mpps"])]
    if within:
        bi += f" (within run {','.join(within)})"
    gbps = med[c] * size.get(c, 64) * 8 / 1000
    transport = "AF_PACKET/veth" if c.startswith("afp-") else "memif"
    sent = [float(r["sender_offered_fps"]) / 1e6 for r in rs if r["sender_offered_fps"] not in ("", "nan")]
    lim = f"{statistics.median(sent):.3f}" if sent else "n/a"
    print(f"| {c} | {transport} | {med[c]:.3f} | {min(v):.3f} | {max(v):.3f} | {gbps:.2f} | {ratio} | {bi} | {'/'.join(f'{x:.3f}' for x in v)} | {lim} |")
PY
    echo
    ((FAILED_RUNS == 0)) || echo "failed runs (retried once; logs in results-bench): $FAILED_RUNS"
    echo
    machine_info "at the end (the benchmark's own busy pollers included)"
    grep -o 'load average [0-9. ]*' "$RESULTS/machine.md" | sed 's/^/- at start: /'
} | tee "$RESULTS/table.md"
