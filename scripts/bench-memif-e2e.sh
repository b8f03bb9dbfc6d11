#!/usr/bin/env bash
# End-to-end forwarding rate over memif: testpmd txonly -> DUT -> testpmd rxonly.
#
#   scripts/bench-memif-e2e.sh [SECONDS] [REPS]        (defaults 10 s, 5 repetitions)
#
# DUT cases (env CASES, default all four, run interleaved: rep 1 of each, rep 2 of each, ...):
#   xconnect    vecswitch, two memif ports cross-connected (E-Line)
#   bridge2     vecswitch bridge-domain; its MAC table holds 2 entries: the sender's MAC (learned)
#               and the receiver's (static, the destination of every frame)
#   bridge1m    the same bridge with 1,000,000 entries: the 2 above + 999,998 static entries that
#               never occur in the traffic, loaded from the config file at start-up
#   testpmd-io  DPDK testpmd --forward-mode=io between the same two memif ports (the
#               speed-of-light forwarder on this transport: no lookup, no copy beyond memif's)
#
# Placement (2 CPUs): both endpoints (txonly and rxonly testpmd, each with its two lcores) on
# CPU 0, the DUT on CPU 1. The endpoints share a core, so the rate can be endpoint-limited.
# The DUT's two memif ports are servers on two sockets; the endpoints are clients (they create the
# shared memory). Ring 1024, 2048-byte buffers, on both DUTs. Frames: txonly --txpkts=60 =
# 64-byte frames with FCS, one flow, dst 02:00:00:00:00:02, src 02:00:00:00:00:01.
#
# Rate: testpmd rxonly's Rx-pps (computed by testpmd from its own TSC), sampled once a second over
# the steady window after WARMUP (env, default 3 s); a run's rate is the mean of its samples.
# Statistics are read before anything is stopped (memif counters reset when the peer goes).
# Output: raw samples in results-bench/memif-e2e-*/samples.csv, a Markdown table on stdout (and in
# table.md there).
set -euo pipefail
source "$(dirname "$0")/bench-lib.sh"

SECS="${1:-10}"
REPS="${2:-5}"
WARMUP="${WARMUP:-3}"
CASES="${CASES:-xconnect bridge2 bridge1m testpmd-io}"
BIG_MACS="${BIG_MACS:-1000000}"
RING="${RING:-16384}"
case "$RING" in 256 | 512 | 1024 | 2048 | 4096 | 8192 | 16384) ;; *) die "RING = '$RING': accepted a power of two in 256..=16384" ;; esac
RSIZE=$(awk -v r="$RING" 'BEGIN { print int(log(r) / log(2) + 0.5) }')
[[ "$SECS" =~ ^[1-9][0-9]*$ ]] || die "SECONDS = '$SECS': accepted a whole number of seconds >= 1"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "REPS = '$REPS': accepted a whole number >= 1"
for c in $CASES; do
    case "$c" in xconnect | bridge2 | bridge1m | testpmd-io) ;;
    *) die "CASES contains '$c': accepted xconnect, bridge2, bridge1m, testpmd-io" ;;
    esac
done
command -v "$TESTPMD" >/dev/null || die "$TESTPMD not found (make setup installs dpdk-dev)"

bench_init memif-e2e
build_release
machine_info | tee "$RESULTS/machine.md" >&2

SRC_MAC=02:00:00:00:00:01
DST_MAC=02:00:00:00:00:02
SOCK_A="$RUN/a.sock"
SOCK_B="$RUN/b.sock"
CTL="$RUN/ctl.sock"

# ----- vecswitch configs (written once) -------------------------------------------------------
vs_config() { # MODE MACS
    local mode="$1" macs="$2" f="$RUN/$1-$2.toml"
    {
        echo "[switch]"
        echo "buffers = 16384"
        echo "control_socket = \"$CTL\""
        echo "worker_cpu = 1"
        if ((macs > 500000)); then echo "mac_table_entries = 2097152"; fi
        for p in 0 1; do
            local s="$SOCK_A"
            ((p == 1)) && s="$SOCK_B"
            printf '\n[[port]]\nname = "memif%d"\ntype = "memif"\nsocket = "%s"\nid = 0\nrole = "server"\nring_size = %d\nmode = "polling"\n' "$p" "$s" "$RING"
        done
        if [[ "$mode" == xconnect ]]; then
            printf '\n[[xconnect]]\nports = ["memif0", "memif1"]\n'
        else
            printf '\n[[bridge]]\nname = "bd1"\nports = ["memif0", "memif1"]\nlearn = true\nmac_age = 0\n'
            printf '\n[[bridge.static_mac]]\nmac = "%s"\nport = "memif1"\n' "$DST_MAC"
            # Fillers: 0a:xx:xx:xx:xx:xx (locally administered, unicast), never in the traffic,
            # half on each port.
            if ((macs > 2)); then
                awk -v n="$((macs - 2))" 'BEGIN {
                    for (i = 0; i < n; i++)
                        printf "\n[[bridge.static_mac]]\nmac = \"0a:00:%02x:%02x:%02x:%02x\"\nport = \"memif%d\"\n",
                            int(i / 16777216) % 256, int(i / 65536) % 256, int(i / 256) % 256, i % 256, i % 2
                }'
            fi
        fi
    } >"$f"
    echo "$f"
}

declare -A CFG
for c in $CASES; do
    case "$c" in
    xconnect) CFG[$c]="$(vs_config xconnect 0)" ;;
    bridge2) CFG[$c]="$(vs_config bridge 2)" ;;
    bridge1m) CFG[$c]="$(vs_config bridge "$BIG_MACS")" ;;
    esac
done

# ----- one run ------------------------------------------------------------------------------------
DUT_PID=""
start_dut() { # CASE
    local c="$1" t0 i
    rm -f "$SOCK_A" "$SOCK_B" "$CTL"
    if [[ "$c" == testpmd-io ]]; then
        pmd_start dut 1 \
            "--vdev=net_memif0,role=server,socket=$SOCK_A,socket-abstract=no,id=0" \
            "--vdev=net_memif1,role=server,socket=$SOCK_B,socket-abstract=no,id=0" \
            -- --forward-mode=io
        pmd_cmd dut start
        return 0
    fi
    t0=$(date +%s.%N)
    bg_start "$RUN/dut.log" taskset -c 1 "$VECSWITCH" run --config "${CFG[$c]}"
    DUT_PID=$BG_PID
    # Ready when both memif sockets exist and the control socket reports the whole config applied:
    # for a bridge, every static MAC entry in its table.
    local want=0
    [[ "$c" == bridge2 ]] && want=1
    [[ "$c" == bridge1m ]] && want=$((BIG_MACS - 1))
    for ((i = 0; i < 1800; i++)); do
        if [[ -S "$SOCK_A" && -S "$SOCK_B" ]] &&
            "$VECSWITCH" ctl --socket "$CTL" --json show "$([[ $c == xconnect ]] && echo xconnect || echo bridge)" 2>/dev/null |
            python3 -c '
import json, sys
d = json.load(sys.stdin)["data"]
want = int(sys.argv[1])
sys.exit(0 if d and (want == 0 or d[0]["statics"] >= want) else 1)' "$want"; then
            DUT_READY_S=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
            return 0
        fi
        kill -0 "$DUT_PID" 2>/dev/null || { cat "$RUN/dut.log" >&2; die "vecswitch ($c) exited"; }
        sleep 0.1
    done
    die "vecswitch ($c) not ready after 180 s"
}

stop_dut() { # CASE
    if [[ "$1" == testpmd-io ]]; then
        pmd_quit dut
    else
        stop_pid "$DUT_PID" 5
    fi
}

echo "case,rep,run_mpps,sample_min_mpps,sample_max_mpps,rx_packets_window,tx_packets_total,dut_idle_polls_pct,dut_tx_drops_window,dut_graph_clocks_per_packet,samples" >"$RESULTS/samples.csv"

run_case() { # CASE REP
    local c="$1" rep="$2"
    log "run $rep/$REPS: $c"
    DUT_READY_S=""
    start_dut "$c"
    if [[ -n "$DUT_READY_S" ]]; then
        log "  vecswitch ready after $DUT_READY_S s"
        echo "$c,$rep,$DUT_READY_S" >>"$RESULTS/dut-ready-seconds.csv"
    fi
    pmd_start rx 0 "--vdev=net_memif0,role=client,socket=$SOCK_B,socket-abstract=no,id=0,rsize=$RSIZE" \
        -- --forward-mode=rxonly
    pmd_start tx 0 "--vdev=net_memif0,role=client,socket=$SOCK_A,socket-abstract=no,id=0,rsize=$RSIZE,mac=$SRC_MAC" \
        -- --forward-mode=txonly --txpkts=60 "--eth-peer=0,$DST_MAC"
    pmd_wait_link rx
    pmd_wait_link tx
    pmd_cmd rx start
    pmd_cmd tx start
    sleep "$WARMUP"
    # vecswitch's counters over the window only: idle polls show whether the DUT had headroom.
    [[ "$c" != testpmd-io ]] && "$VECSWITCH" ctl --socket "$CTL" clear counters >/dev/null
    sample_rx rx "$SECS"
    pmd_stats tx
    local txp=$PMD_TX idle="n/a" dutdrop="n/a" clk="n/a"
    if [[ "$c" != testpmd-io ]]; then
        "$VECSWITCH" ctl --socket "$CTL" show ports >"$RESULTS/dut-$c-$rep-ports.txt" 2>&1 || true
        "$VECSWITCH" ctl --socket "$CTL" show runtime >"$RESULTS/dut-$c-$rep-runtime.txt" 2>&1 || true
        "$VECSWITCH" ctl --socket "$CTL" show errors >"$RESULTS/dut-$c-$rep-errors.txt" 2>&1 || true
        [[ "$c" == bridge* ]] && "$VECSWITCH" ctl --socket "$CTL" show bridge >"$RESULTS/dut-$c-$rep-bridge.txt" 2>&1 || true
        "$VECSWITCH" ctl --socket "$CTL" --json show runtime >"$RESULTS/dut-$c-$rep-runtime.json" 2>&1 || true
        "$VECSWITCH" ctl --socket "$CTL" --json show ports >"$RESULTS/dut-$c-$rep-ports.json" 2>&1 || true
        # idle polls in percent of all polls; TX drops of memif1 (toward rxonly: its ring was full)
        # and the graph's clocks per packet (all nodes' time / packets received, at the TSC rate)
        read -r idle dutdrop clk < <(python3 -c '
import json, sys
try:
    rt = json.load(open(sys.argv[1]))["data"]
    loop = rt["loop"]
    ports = json.load(open(sys.argv[2]))["data"]
    drops = [p["stats"]["tx_dropped"] for p in ports if p["name"] == "memif1"][0]
    ns = sum(n["time_ns"] for n in rt["nodes"])
    clk = ns * rt["clock_hz"] / 1e9 / max(loop["rx_packets"], 1)
    print("%.0f %d %.0f" % (100.0 * loop["idle_polls"] / max(loop["polls"], 1), drops, clk))
except Exception:
    print("n/a n/a n/a")' "$RESULTS/dut-$c-$rep-runtime.json" "$RESULTS/dut-$c-$rep-ports.json")
    else
        pmd_cmd dut "show port stats all"
        sleep 0.3
    fi
    pmd_quit tx
    pmd_quit rx
    stop_dut "$c"
    cp "$RUN/rx.log" "$RESULTS/rx-$c-$rep.log"
    cp "$RUN/dut.log" "$RESULTS/dut-$c-$rep.log"
    rm -f "$RUN"/*.in
    local m smin smax
    m=$(mean "${SAMPLE_LIST[@]}")
    read -r _ smin smax < <(stats_line "${SAMPLE_LIST[@]}")
    echo "$c,$rep,$m,$smin,$smax,$((SAMPLE_RX1 - SAMPLE_RX0)),$txp,${idle:-n/a},${dutdrop:-n/a},${clk:-n/a},${SAMPLE_LIST[*]}" >>"$RESULTS/samples.csv"
    log "  $c: $m Mpps (per-second $smin .. $smax); DUT idle polls ${idle:-n/a} %, DUT tx drops ${dutdrop:-n/a}, graph ${clk:-n/a} clocks/packet"
}
for ((rep = 1; rep <= REPS; rep++)); do
    for c in $CASES; do run_isolated run_case "$c" "$rep" || log "run $rep of $c failed twice; left out"; done
done

# ----- table (from samples.csv) -----------------------------------------------------------------
{
    echo "memif end-to-end, 64-byte frames, testpmd txonly -> DUT -> testpmd rxonly; $REPS interleaved runs of ${SECS} s (after ${WARMUP} s warm-up) per case; memif rings of $RING descriptors; endpoints share CPU 0, DUT on CPU 1."
    echo
    python3 - "$RESULTS/samples.csv" "$CASES" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cases = sys.argv[2].split()
runs = {c: [r for r in rows if r["case"] == c] for c in cases}
med = {c: statistics.median(float(r["run_mpps"]) for r in rs) for c, rs in runs.items() if rs}
print("| DUT | median Mpps | min | max | × testpmd io (medians) | × bridge 2 MACs | bimodal? | runs (Mpps) | vecswitch idle polls % | vecswitch TX drops (window) | vecswitch graph clocks/pkt |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for c in cases:
    rs = runs[c]
    if not rs:
        print(f"| {c} | not measured (every run failed) | | | | | | | | | |")
        continue
    v = [float(r["run_mpps"]) for r in rs]
    ratio = f"{med[c] / med['testpmd-io']:.2f}" if c != "testpmd-io" and med.get("testpmd-io") else "—"
    r2 = f"{med[c] / med['bridge2']:.2f}" if c == "bridge1m" and med.get("bridge2") else "—"
    bi = "yes" if max(v) > 1.5 * min(v) else "no"
    within = [r["rep"] for r in rs if float(r["sample_max_mpps"]) > 1.5 * float(r["sample_min_mpps"])]
    if within:
        bi += f" (within run {','.join(within)})"
    idle = "/".join(r["dut_idle_polls_pct"] for r in rs)
    drops = "/".join(r["dut_tx_drops_window"] for r in rs)
    clk = "/".join(r["dut_graph_clocks_per_packet"] for r in rs)
    print(f"| {c} | {med[c]:.3f} | {min(v):.3f} | {max(v):.3f} | {ratio} | {r2} | {bi} | {'/'.join(f'{x:.3f}' for x in v)} | {idle} | {drops} | {clk} |")
PY
    echo
    [[ -f "$RESULTS/dut-ready-seconds.csv" ]] &&
        echo "vecswitch start-up until the config was applied (s, per run): $(awk -F, '{ printf "%s %s; ", $1, $3 }' "$RESULTS/dut-ready-seconds.csv")"
    ((FAILED_RUNS == 0)) || echo "failed runs (retried once; logs in results-bench): $FAILED_RUNS"
    echo
    machine_info "at the end (the benchmark's own busy pollers included)"
    grep -o 'load average [0-9. ]*' "$RESULTS/machine.md" | sed 's/^/- at start: /'
} | tee "$RESULTS/table.md"
