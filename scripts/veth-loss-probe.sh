#!/usr/bin/env bash
# Where do frames go through vecswitch over veth with the lab's DUT-CPU placement (issue 8;
# docs/BENCHMARKS.md §5 "Where the frames lost with the placement went"). Root. Builds two
# namespaces of its own (names with this shell's pid), veth pairs gA-dA and gB-dB, `vecswitch run`
# cross-connecting dA/dB on CPU 1 at fifo:10, optionally the lab's placement (threaded NAPI on
# dA/dB, kthreads on CPU 1 at FIFO 20), then `vecswitch gen` on CPU 0 over AF_XDP (skb mode), and
# prints every counter before and after: ip -s link of the four ends, ethtool -S of the DUT ends,
# /proc/net/softnet_stat, the switch's show ports/errors, the NAPI threads' schedstat. Removes
# its namespaces on exit. Does not touch anything else.
# usage: veth-loss-probe.sh BIN RATE DURATION [placement=1|0] [dut port type=af_xdp|af_packet] [gro on DUT ends=0|1]
# e.g.   sudo scripts/veth-loss-probe.sh target/release/vecswitch 300kpps 4s 1 af_xdp 0
set -u
BIN=$1; RATE=$2; DUR=$3; PLACE=${4:-1}; KIND=${5:-af_xdp}; GRO=${6:-0}
. "$(dirname "$0")/probe-lib.sh"
probe_lab afg afd veth-loss-probe
if [ "$GRO" = 1 ]; then ip netns exec $D ethtool -K $dA gro on; ip netns exec $D ethtool -K $dB gro on; ip netns exec $G ethtool -K $gA tso off; ip netns exec $G ethtool -K $gB tso off; fi
probe_switch $BIN $KIND ""
sleep 1
if [ "$PLACE" = 1 ]; then
  for i in $dA $dB; do ip netns exec $D sh -c "echo 2 > /sys/class/net/$i/queues/rx-0/rps_cpus; echo 1 > /sys/class/net/$i/threaded" || echo "no threaded on $i"; done
  sleep 0.3
  for p in $(pgrep -f "napi/d[ab]$T-"); do taskset -p -c 1 $p >/dev/null; chrt -f -p 20 $p; echo "napi $p $(cat /proc/$p/comm)"; done
fi
snap() {
  for i in $gA $gB; do echo "$i $(ip -n $G -s -j link show $i | jq -c '.[0].stats64 | {rxp:.rx.packets,rxd:.rx.dropped,txp:.tx.packets,txd:.tx.dropped}')"; done
  for i in $dA $dB; do echo "$i $(ip -n $D -s -j link show $i | jq -c '.[0].stats64 | {rxp:.rx.packets,rxd:.rx.dropped,txp:.tx.packets,txd:.tx.dropped}')"; echo "$i ethtool $(ip netns exec $D ethtool -S $i | grep -v ': 0$' | tr -s ' \n' ' ')"; done
  echo "softnet(hex processed dropped squeezed) $(cut -d" " -f1-3 /proc/net/softnet_stat | tr "\n" "|")"
  echo "ports $($BIN ctl --socket $W/ctl show ports 2>&1 | tr -s ' \n' ' ')"
  echo "errors $($BIN ctl --socket $W/ctl show errors 2>&1 | tr -s ' \n' ' ')"
  for p in $(pgrep -f "napi/d[ab]$T-"); do echo "napi $p schedstat $(cat /proc/$p/schedstat)"; done
}
echo "== before"; snap
taskset -c 0 $BIN gen --port afxdp:$gA@/run/netns/$G,mode=skb --port afxdp:$gB@/run/netns/$G,mode=skb --size 64 --rate $RATE --duration $DUR --warmup 500ms --json > $W/gen.json 2> $W/gen.err
echo "== gen"; jq -c "{tx:.tx, rx:.rx, lost:.streams[0].lost, gen_ports:[.ports[].port_stats]}" $W/gen.json 2>/dev/null || (head -c 3000 $W/gen.json; cat $W/gen.err | tail -5)
echo "== after"; snap
