# shellcheck shell=bash
# Shared helpers of the scripts/bench-*.sh benchmark harnesses (sourced, not run).
#
# - Process tracking: every background process a script starts goes through `bg_start`, which
#   records its pid; `bench_cleanup` (installed by `bench_init` as the EXIT/INT/TERM trap) sends
#   SIGTERM to each recorded pid, waits briefly, then SIGKILL, and removes the run's socket
#   directory. Nothing is ever killed by name.
# - testpmd driven interactively: `pmd_start NAME ARGS...` runs `dpdk-testpmd ... -i` with its
#   stdin on a fifo (fd kept open by us) and its output in $RUN/NAME.log; `pmd_cmd NAME LINE`
#   writes a command; `pmd_stats NAME PORT` asks `show port stats all` and waits for the answer.
# - Statistics: `stats_line V...` prints "median min max" of the values given.
# - Provenance: `machine_info` prints CPU model, cores, kernel, load average, git revision, date.
#
# DPDK testpmd facts used here (DESIGN.md, crates/ports/src/memif/mod.rs): it needs
# `--no-huge -m 1024 --no-pci --iova-mode=va --file-prefix=UNIQUE --total-num-mbufs=32768`; it
# needs two lcores (main + forwarding), which `--lcores=0@C,1@C` puts on one CPU C; memif
# statistics reset when the peer disconnects, so they are read before anything is stopped.

BENCH_PIDS=()
BENCH_FIFOS=()
BENCH_NETNS=()
RUN=""
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VECSWITCH="$ROOT/target/release/vecswitch"
TESTPMD="${TESTPMD:-dpdk-testpmd}"
EAL_COMMON=(--no-huge -m 1024 --no-pci --iova-mode=va)
PMD_COMMON=(--total-num-mbufs=32768)
PMD_WRAP=() # a command prefix for testpmd, e.g. (ip netns exec NS)

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# bench_init NAME: makes the scratch socket dir and results dir, installs the cleanup trap.
bench_init() {
    local name="$1"
    RUN="$(mktemp -d "/tmp/vsbench-${name}.XXXXXX")"
    RESULTS="$ROOT/results-bench/${name}-$(date -u +%Y%m%dT%H%M%SZ)"
    mkdir -p "$RESULTS"
    trap bench_cleanup EXIT
    trap 'log "interrupted"; exit 130' INT TERM
    # A write to the fifo of a testpmd that died fails (EPIPE) instead of killing the script.
    trap '' PIPE
    log "scratch $RUN, results $RESULTS"
}

# bg_start LOGFILE CMD...: starts CMD in the background with stdout+stderr to LOGFILE.
# Sets BG_PID.
bg_start() {
    local logf="$1"
    shift
    "$@" >"$logf" 2>&1 &
    BG_PID=$!
    BENCH_PIDS+=("$BG_PID")
    echo "$BG_PID" >>"$RUN/pids"
}

# stop_pid PID [GRACE_SECONDS]: SIGTERM, wait up to GRACE, then SIGKILL. Only pids we started.
stop_pid() {
    local pid="$1" grace="${2:-3}" i
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < grace * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

bench_cleanup() {
    local rc=$? pid fd ns
    trap - EXIT INT TERM
    for pid in "${BENCH_PIDS[@]}"; do stop_pid "$pid" 2; done
    # Processes started inside run_isolated subshells are recorded in $RUN/pids as well.
    if [[ -n "$RUN" && -f "$RUN/pids" ]]; then
        # Only a process whose command line names this run (socket dir, file prefix, netns), so a
        # recycled pid of someone else's process is never touched.
        while read -r pid; do
            tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qE "vsb-$$-|$RUN|vsbench-" && stop_pid "$pid" 2
        done <"$RUN/pids"
    fi
    for fd in "${BENCH_FIFOS[@]}"; do eval "exec ${fd}>&-" 2>/dev/null || true; done
    for ns in "${BENCH_NETNS[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
    if [[ -n "$RUN" && -d "$RUN" ]]; then
        # testpmd runtime dirs of our file prefixes
        rm -rf "$RUN"
    fi
    rm -rf /var/run/dpdk/vsb-"$$"-* 2>/dev/null || true
    exit "$rc"
}

# run_isolated FUNC ARGS...: runs FUNC in a subshell with `set -e`; when it fails (a testpmd
# crash, a timeout), the processes it started are stopped, its logs are kept in
# $RESULTS/failed-N/, and it is run once more. Returns 1 when the retry failed too. Results of a
# run must therefore be written to files (samples.csv), not to shell variables.
FAILED_RUNS=0
run_isolated() {
    local attempt rc
    for attempt in 1 2; do
        set +e
        (
            set -e
            trap run_cleanup EXIT
            trap 'exit 130' INT TERM
            "$@"
        )
        rc=$?
        set -e
        ((rc == 0)) && return 0
        ((rc == 130)) && exit 130
        FAILED_RUNS=$((FAILED_RUNS + 1))
        mkdir -p "$RESULTS/failed-$FAILED_RUNS"
        cp "$RUN"/*.log "$RESULTS/failed-$FAILED_RUNS/" 2>/dev/null || true
        echo "$* (attempt $attempt): exit $rc" >"$RESULTS/failed-$FAILED_RUNS/what.txt"
        log "run '$*' failed (exit $rc, attempt $attempt); logs in $RESULTS/failed-$FAILED_RUNS"
        rm -f "$RUN"/*.log "$RUN"/*.in "$RUN"/*.sock
    done
    return 1
}

# run_cleanup: stops what one run_isolated run started (its subshell's pids and fifos).
run_cleanup() {
    local rc=$? pid fd
    trap - EXIT
    for fd in "${BENCH_FIFOS[@]}"; do eval "exec ${fd}>&-" 2>/dev/null || true; done
    for pid in "${BENCH_PIDS[@]}"; do stop_pid "$pid" 2; done
    : >"$RUN/pids"
    exit "$rc"
}

# build_release: cargo build --release of the vecswitch binary (SKIP_BUILD=1: use the one built).
build_release() {
    if [[ -n "${SKIP_BUILD:-}" ]]; then
        [[ -x "$VECSWITCH" ]] || die "SKIP_BUILD set but no $VECSWITCH"
        log "SKIP_BUILD: using the existing $VECSWITCH"
        return 0
    fi
    log "cargo build --release --bin vecswitch"
    (cd "$ROOT" && cargo build --release --bin vecswitch) >&2
    [[ -x "$VECSWITCH" ]] || die "no $VECSWITCH after the build"
}

# machine_info [WHEN]: CPU, cores, kernel, load average (labelled WHEN, default "at start"), git
# revision and date.
machine_info() {
    local when="${1:-at start}" cpu load rev dirty
    cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    load="$(cut -d' ' -f1-3 /proc/loadavg)"
    rev="$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    dirty="$(cd "$ROOT" && git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo ' (+ uncommitted changes in the tree)' || true)"
    echo "- machine: $cpu, $(nproc) CPUs, kernel $(uname -r), load average $load $when"
    echo "- git revision: $rev$dirty; date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
}

# stats_line V...: "median min max" (median of an even count = mean of the two middle values).
stats_line() {
    printf '%s\n' "$@" | sort -g | awk '
        { v[NR] = $1 }
        END {
            if (NR == 0) { print "nan nan nan"; exit }
            if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%.3f %.3f %.3f\n", m, v[1], v[NR]
        }'
}

# ---------------------------------------------------------------------------------------------
# testpmd, interactive over a fifo

# pmd_start NAME CPU VDEV_ARGS... -- PMD_ARGS...: starts testpmd with both lcores on CPU (run
# under the PMD_WRAP prefix when set).
pmd_start() {
    local name="$1" cpu="$2"
    shift 2
    local eal=() pmd=()
    while [[ $# -gt 0 && "$1" != "--" ]]; do eal+=("$1"); shift; done
    [[ $# -gt 0 ]] && shift
    pmd=("$@")
    local fifo="$RUN/$name.in"
    mkfifo "$fifo"
    # The redirections happen in the child: opening the fifo for reading blocks until we open it
    # for writing below. stdbuf -oL: testpmd prints with stdio, fully buffered into a file otherwise.
    "${PMD_WRAP[@]}" stdbuf -oL "$TESTPMD" "--lcores=0@$cpu,1@$cpu" "${EAL_COMMON[@]}" "--file-prefix=vsb-$$-$name" \
        "${eal[@]}" -- -i "${PMD_COMMON[@]}" "${pmd[@]}" <"$fifo" >"$RUN/$name.log" 2>&1 &
    BG_PID=$!
    BENCH_PIDS+=("$BG_PID")
    echo "$BG_PID" >>"$RUN/pids"
    # Keep the fifo open for writing on a fresh fd so testpmd never sees EOF.
    local fd
    exec {fd}>"$fifo"
    BENCH_FIFOS+=("$fd")
    eval "PMD_FD_${name//-/_}=$fd"
    eval "PMD_PID_${name//-/_}=$BG_PID"
    # Wait for the prompt (EAL init, port start).
    local i
    for ((i = 0; i < 200; i++)); do
        grep -q 'testpmd>' "$RUN/$name.log" 2>/dev/null && return 0
        kill -0 "$BG_PID" 2>/dev/null || { cat "$RUN/$name.log" >&2; die "testpmd $name exited"; }
        sleep 0.1
    done
    cat "$RUN/$name.log" >&2
    die "testpmd $name: no prompt after 20 s"
}

pmd_cmd() {
    local name="$1"
    shift
    local fdvar="PMD_FD_${name//-/_}"
    printf '%s\n' "$*" >&"${!fdvar}"
}

# pmd_stats NAME: sends `show port stats all` and waits for its answer; sets PMD_RX (RX-packets
# of the first port), PMD_TX (TX-packets of the first port), PMD_RXPPS (Rx-pps since the last
# show, computed by testpmd from its own TSC), PMD_TXPPS.
pmd_stats() {
    local name="$1" logf="$RUN/$1.log" before i chunk
    before=$(wc -l <"$logf")
    pmd_cmd "$name" "show port stats all"
    for ((i = 0; i < 100; i++)); do
        chunk="$(tail -n +"$((before + 1))" "$logf")"
        if grep -q 'Tx-pps' <<<"$chunk"; then
            PMD_RX=$(awk '/RX-packets:/ { print $2; exit }' <<<"$chunk")
            PMD_TX=$(awk '/TX-packets:/ { print $2; exit }' <<<"$chunk")
            PMD_RXPPS=$(awk '/Rx-pps:/ { print $2; exit }' <<<"$chunk")
            PMD_TXPPS=$(awk '/Tx-pps:/ { print $2; exit }' <<<"$chunk")
            return 0
        fi
        sleep 0.05
    done
    tail -30 "$logf" >&2
    die "testpmd $name: no answer to show port stats all"
}

# pmd_quit NAME: quit testpmd politely, then make sure it is gone.
pmd_quit() {
    local name="$1" pidvar="PMD_PID_${1//-/_}"
    pmd_cmd "$name" "stop" 2>/dev/null || true
    pmd_cmd "$name" "quit" 2>/dev/null || true
    local i
    for ((i = 0; i < 50; i++)); do
        kill -0 "${!pidvar}" 2>/dev/null || break
        sleep 0.1
    done
    stop_pid "${!pidvar}" 2
}

# pmd_wait_link NAME: waits until testpmd reports port 0's link up (memif connected).
pmd_wait_link() {
    local name="$1" i before chunk
    for ((i = 0; i < 50; i++)); do
        before=$(wc -l <"$RUN/$name.log")
        pmd_cmd "$name" "show port info 0"
        sleep 0.2
        chunk="$(tail -n +"$((before + 1))" "$RUN/$name.log")"
        grep -q 'Link status: up' <<<"$chunk" && return 0
    done
    tail -20 "$RUN/$name.log" >&2
    die "testpmd $name: link of port 0 not up after 10 s"
}

# sample_rx NAME SECONDS: after a baseline `show`, takes one Rx-pps sample per second for SECONDS
# seconds; prints the samples (Mpps, one per line) and sets SAMPLE_RX0/SAMPLE_RX1 (RX-packets at
# the start and end of the window).
sample_rx() {
    local name="$1" secs="$2" s
    pmd_stats "$name"
    SAMPLE_RX0=$PMD_RX
    SAMPLE_LIST=()
    for ((s = 0; s < secs; s++)); do
        sleep 1
        pmd_stats "$name"
        SAMPLE_LIST+=("$(awk -v p="$PMD_RXPPS" 'BEGIN { printf "%.3f", p / 1e6 }')")
    done
    SAMPLE_RX1=$PMD_RX
}

# mean V...
mean() { printf '%s\n' "$@" | awk '{ s += $1 } END { if (NR) printf "%.3f\n", s / NR; else print "nan" }'; }

# bimodal_flag V...: "yes" when max > 1.5 × min (the memif ≈ 6 vs ≈ 20 Mpps modes), else "no".
bimodal_flag() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR && v[NR] > 1.5 * v[1]) ? "yes" : "no" }'
}
