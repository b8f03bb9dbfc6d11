#!/usr/bin/env bash
# `make demo`: the default benchmark (docs/suites/demo.toml) on the built-in lab — phy2phy over
# memif and over veth, vecswitch vs testpmd, the Linux bridge and Open vSwitch — then the
# reports. Writes results/demo-<UTC date-time>/{results.json,report.html,report.md,report.csv}
# and prints the report's path and its summary table.
#
# Needs root (network namespaces) and the release binary (`make demo` builds it first).
# Ctrl-C stops after the current trial, tears the lab down and still writes the reports of
# what was measured. Environment: SUITE (default docs/suites/demo.toml), BIN, RESULTS_DIR.
set -euo pipefail

cd "$(dirname "$0")/.."
SUITE=${SUITE:-docs/suites/demo.toml}
BIN=${BIN:-target/release/vecswitch}
RESULTS_DIR=${RESULTS_DIR:-results}

if [ ! -x "$BIN" ]; then
  echo "demo: $BIN not found; build it with: cargo build --release --bin vecswitch (make demo does)" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "demo: needs root (the lab creates network namespaces and veth pairs)" >&2
  exit 1
fi

# The demo's figures are only as quiet as the machine: say so up front when something else is
# running (the bench also checks the measuring CPUs before every test and records it).
read -r load1 _ < /proc/loadavg
if awk -v l="$load1" 'BEGIN { exit !(l > 0.5) }'; then
  echo "demo: warning: load average $load1 — other processes are running; results may not repeat:" >&2
  ps -eo pid,pcpu,comm --sort=-pcpu | head -6 >&2
fi

out="$RESULTS_DIR/demo-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
echo "demo: suite $SUITE -> $out (progress below; Ctrl-C stops and keeps what was measured)"
start=$(date +%s)

# The first Ctrl-C goes to the bench (it stops cleanly); this script carries on to the reports.
trap 'echo "demo: interrupt: waiting for the bench to stop and save" >&2' INT
status=0
"$BIN" bench "$SUITE" -o "$out/results.json" || status=$?
trap - INT

if [ ! -s "$out/results.json" ]; then
  echo "demo: the bench wrote no results (exit status $status)" >&2
  exit 1
fi
"$BIN" report html "$out/results.json" -o "$out/report.html"
"$BIN" report md "$out/results.json" -o "$out/report.md"
"$BIN" report csv "$out/results.json" -o "$out/report.csv"

secs=$(( $(date +%s) - start ))
echo
# The summary section of the Markdown report (up to the first per-test section).
awk '/^## Summary/{on=1} on && /^## / && !/^## Summary/{exit} on' "$out/report.md"
grep -E '^> \*\*(Stopped early|Not measured)' "$out/report.md" || true
# NDR/PDR over each cell's rounds (each on a freshly started device) and repeated searches:
# median [min, max], as the summary table and `vecswitch report agree` merge them; and the tests
# that ran beside a busy CPU.
python3 - "$out/results.json" <<'PY' || true
import json, sys
run = json.load(open(sys.argv[1]))
print("\nNDR / PDR, median [min, max] over the rounds (Mfps):")
busy, cells = [], {}
for t in run.get("tests", []):
    o = t["outcome"]
    check = (t.get("setup") or {}).get("cpu_check")
    if check and check.get("flagged"):
        busy.append(f'{t["vswitch"]} {t.get("topology", "")} {t["frame_size"]} B {t["id"]}')
    if o["procedure"] != "mlrsearch":
        continue
    r = o["result"]
    spread = {g["name"]: g["lower_bounds_fps"] for g in (r.get("repeated") or {}).get("goals", [])}
    key = (t["vswitch"], t.get("topology", ""), t["frame_size"])
    for g in r["goals"]:
        name = g["goal"]["name"]
        cells.setdefault(key, {}).setdefault(name, []).extend(
            spread.get(name, [g["relevant_lower_bound_fps"]]))
for (dev, topo, size), goals in cells.items():
    out = []
    for name, lbs in goals.items():
        # The lower median, a search without a lower bound counting as the lowest.
        ordered = sorted(lbs, key=lambda x: float("-inf") if x is None else x)
        m, found = ordered[(len(ordered) - 1) // 2], [x for x in lbs if x is not None]
        out.append(f"{name} none" if m is None else
                   f"{name} {m/1e6:.3f} [{min(found)/1e6:.3f}, {max(found)/1e6:.3f}] ({len(lbs)})")
    print(f"  {dev:<20} {topo:<14} {size:>5} B  " + "  ".join(out))
if busy:
    print(f"\n{len(busy)} tests started while another process used a measuring CPU (> 10 %):")
    for b in busy:
        print("  " + b)
PY
echo
echo "demo: ran $((secs / 60)) min $((secs % 60)) s (bench exit status $status$([ "$status" != 0 ] && echo ": stopped or failed, partial results"))"
echo "demo: report: $out/report.html"
echo "demo: also $out/report.md, $out/report.csv, $out/results.json"
exit "$status"
