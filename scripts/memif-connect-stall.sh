#!/bin/bash
# docs/BENCHMARKS.md §14: the worker's longest port-control step and poll gap while two 4096-slot
# memif client ports connect to a generator (as the lab's DUT does) and disconnect. Root (fifo:10).
# ROLE=server: the switch's ports are the servers and the generator's the clients (BENCHMARKS §1's
# topology), so the switch maps the peer's region instead of building its own.
# Usage: [ROLE=client|server] scripts/memif-connect-stall.sh [BIN]
B=${1:-target/release/vecswitch}; D=$(mktemp -d)
ROLE=${ROLE:-client}; case $ROLE in client) PEER=server ;; server) PEER=client ;;
  *) echo "ROLE=$ROLE: accepted are client, server" >&2; exit 2 ;; esac
cat > $D/sw.toml <<T
[switch]
control_socket = "$D/ctl.sock"
[[port]]
name = "memif0"
type = "memif"
socket = "$D/memif.sock"
id = 0
role = "$ROLE"
ring_size = 4096
[[port]]
name = "memif1"
type = "memif"
socket = "$D/memif.sock"
id = 1
role = "$ROLE"
ring_size = 4096
[[xconnect]]
ports = ["memif0", "memif1"]
T
taskset -c 1 $B run --config $D/sw.toml --worker-priority fifo:10 --worker-idle busy >/dev/null 2>&1 & S=$!
sleep 1
$B ctl --socket $D/ctl.sock clear counters >/dev/null
P="memif:$D/memif.sock"
taskset -c 0 $B gen --port $P:0:$PEER:4096 --port $P:1:$PEER:4096 --rate 10kpps --duration 1s --json > $D/g.json 2>/dev/null
$B ctl --socket $D/ctl.sock --json show runtime | python3 -c "
import json,sys; d=json.load(sys.stdin)['data']; l=d['loop']
print('max_port_control_ms %.3f max_poll_gap_ms %.3f' % (l['max_port_control_ns']/1e6, l['max_poll_gap_ns']/1e6))"
python3 -c "import json; r=json.load(open('$D/g.json')); print('  gen tx',r['tx'],'rx',r['rx'],'lost',r['lost'])"
kill $S; wait 2>/dev/null; rm -rf $D
