#!/usr/bin/env bash
# Where the DUT CPU's cycles go with vecswitch AF_XDP over veth (issue 8; docs/BENCHMARKS.md §5
# "Where vecswitch AF_XDP's cycles go"). Root. Builds two namespaces of its own (names with this
# shell's pid), veth pairs gA-dA and gB-dB, the DUT on CPU 1 placed as the lab places it, the
# generator on CPU 0 (AF_XDP, SKB mode, RPS on CPU 0, 64 B, one way gA -> gB) for 7 s, and reads
# every counter at t = 2.5 s and 5.5 s (a 3 s window in steady state): /proc/stat of both CPUs,
# the worker thread's and the NAPI threads' schedstat, the switch's show runtime / show ports,
# /proc/softirqs and /proc/interrupts of CPU 1; prints one JSON line of per-packet figures
# (cycles at the CPU's nominal rate) and the generator's loss and latency.
# usage: xdp-cost-probe.sh BIN CASE RATE [extra af_xdp/af_packet port keys, TOML lines]
#   CASE  xdp     vecswitch xconnect, af_xdp ports, threaded NAPI kthreads on CPU 1 at FIFO 20 (the lab's)
#         xdpskb  the same with RPS of dA/dB on CPU 1 and no threaded NAPI (pass 'mode = "skb"')
#         afp     vecswitch xconnect, af_packet ports, RPS of dA/dB on CPU 0 (the lab's)
#         bridge  a Linux bridge over dA/dB, RPS on CPU 1 (the lab's)
#   env   WIDLE=poll|sleep (the worker idle policy), PERF=1 (perf record -g of CPU 1 over the window)
# e.g.   sudo scripts/xdp-cost-probe.sh target/release/vecswitch xdp 150kpps
set -u
BIN=$1; CASE=$2; RATE=$3; EXTRA=${4:-}; PERF=${PERF:-0}
. "$(dirname "$0")/probe-lib.sh"
probe_lab xg xd xdp-cost-probe
KIND=af_xdp
case $CASE in afp) KIND=af_packet;; esac
if [ $CASE = bridge ]; then
  ip -n $D link add br0 type bridge; ip -n $D link set br0 up
  ip -n $D link set $dA master br0; ip -n $D link set $dB master br0
  ip netns exec $D sh -c "echo 2 > /sys/class/net/$dA/queues/rx-0/rps_cpus; echo 2 > /sys/class/net/$dB/queues/rx-0/rps_cpus"
else
probe_switch $BIN $KIND "${WIDLE:-poll}" "$EXTRA"
sleep 0.5
if [ $CASE = xdpskb ]; then
  for i in $dA $dB; do ip netns exec $D sh -c "echo 2 > /sys/class/net/$i/queues/rx-0/rps_cpus"; done
elif [ $KIND = af_xdp ]; then
  for i in $dA $dB; do ip netns exec $D sh -c "echo 2 > /sys/class/net/$i/queues/rx-0/rps_cpus; echo 1 > /sys/class/net/$i/threaded"; done
  sleep 0.3
  for p in $(pgrep -f "napi/d[ab]$T-"); do taskset -p -c 1 $p >/dev/null; chrt -f -p 20 $p; done
else
  for i in $dA $dB; do ip netns exec $D sh -c "echo 1 > /sys/class/net/$i/queues/rx-0/rps_cpus"; done
fi
WT=$(for t in /proc/$SW/task/*; do c=$(cat $t/comm); case $c in vecswitch-worke*) basename $t;; esac; done | head -1)
fi
snap() { # prints key=value lines
  echo "t=$(date +%s.%N)"
  awk '/^cpu1 /{print "cpu1_user="$2+$3, "cpu1_sys="$4, "cpu1_idle="$5, "cpu1_irq="$7, "cpu1_softirq="$8}' /proc/stat
  awk '/^cpu0 /{print "cpu0_user="$2+$3, "cpu0_sys="$4, "cpu0_idle="$5, "cpu0_irq="$7, "cpu0_softirq="$8}' /proc/stat
  echo "dA_rx=$(ip -n $D -s -j link show $dA | jq '.[0].stats64.rx.packets') dB_tx=$(ip -n $D -s -j link show $dB | jq '.[0].stats64.tx.packets')"
  if [ -n "${WT:-}" ]; then echo "worker_ns=$(cut -d' ' -f1 /proc/$SW/task/$WT/schedstat) worker_slices=$(cut -d' ' -f3 /proc/$SW/task/$WT/schedstat)"
    $BIN ctl --socket $W/ctl --json show runtime | jq -r '.data.loop | "busy_ns=\(.busy_ns) polls=\(.polls) idle_polls=\(.idle_polls) rx_packets=\(.rx_packets) rt_breaks=\(.rt_breaks)"'
    $BIN ctl --socket $W/ctl show ports | grep -o 'tx kicks [0-9]* rx wake-ups [0-9]*' | awk '{k+=$3; w+=$6} END{print "kicks="k+0, "wakeups="w+0}'
  fi
  n=0; for p in $(pgrep -f "napi/d[ab]$T-"); do n=$((n+$(cut -d' ' -f1 /proc/$p/schedstat))); done; echo "napi_ns=$n"
  awk 'NR==1{next} {gsub(":","",$1); print "si_"$1"_cpu1="$3}' /proc/softirqs | grep -E 'NET_RX|NET_TX|TIMER|HRTIMER|SCHED'
  awk '/^ *(CAL|RES|LOC):/{gsub(":","",$1); print "irq_"$1"_cpu1="$3}' /proc/interrupts
}
[ -n "${WT:-}" ] && { echo "worker tid $WT $(cat /proc/$SW/task/$WT/comm) $(chrt -p $WT | tr "\n" " ")"; for t in /proc/$SW/task/*; do echo "thr $(basename $t) $(cat $t/comm)"; done; }
taskset -c 0 $BIN gen --port afxdp:$gA@/run/netns/$G,mode=skb --port afxdp:$gB@/run/netns/$G,mode=skb --size 64 --rate $RATE --duration 7s --warmup 500ms --json > $W/gen.json 2> $W/gen.err &
GP=$!
sleep 2.5; snap > $W/s1
if [ "$PERF" = 1 ]; then perf record -q -C 1 -g -o $W/perf.data -- sleep 3 2>/dev/null >/dev/null; elif [ "$PERF" = 2 ]; then perf stat -C 1 -e 'syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,napi:napi_poll,sched:sched_switch,irq:softirq_entry' -x, -o $W/pstat -- sleep 3; else sleep 3; fi
snap > $W/s2
$BIN ctl --socket $W/ctl show ports > $W/ports.txt 2>&1; wait $GP
python3 - $W <<'PY'
import sys,json,re
w=sys.argv[1]
def kv(f):
    d={}
    for tok in open(f).read().split():
        if '=' in tok:
            k,v=tok.split('=',1)
            try: d[k]=float(v)
            except: pass
    return d
a,b=kv(w+'/s1'),kv(w+'/s2')
d={k:b[k]-a[k] for k in a if k in b}
dt=d['t']; pk=d['dA_rx']; hz=2.6e9
try: hz=float(open('/proc/cpuinfo').read().split('cpu MHz')[1].split(':')[1].split()[0])*1e6
except: pass
tick=100.0
out={}
out['pps']=pk/dt
cpu1busy=(d['cpu1_user']+d['cpu1_sys']+d['cpu1_irq']+d['cpu1_softirq'])/tick
out['cpu1_busy_frac']=cpu1busy/dt
out['cpu1_user_frac']=d['cpu1_user']/tick/dt
out['cpu1_sys_frac']=d['cpu1_sys']/tick/dt
out['cpu1_si_frac']=(d['cpu1_softirq']+d['cpu1_irq'])/tick/dt
out['cpu0_idle_frac']=d['cpu0_idle']/tick/dt
if pk>0:
    out['cpu1_cyc_per_pkt']=cpu1busy*hz/pk
    out['cpu1_kernel_cyc_per_pkt']=(d['cpu1_sys']+d['cpu1_irq']+d['cpu1_softirq'])/tick*hz/pk
    if 'busy_ns' in d:
        out['worker_busy_cyc_per_pkt']=d['busy_ns']/1e9*hz/pk
        out['worker_cpu_cyc_per_pkt']=d['worker_ns']/1e9*hz/pk
        out['napi_cyc_per_pkt']=d['napi_ns']/1e9*hz/pk
        out['lab_cost_cyc_per_pkt']=(d['busy_ns']+d['napi_ns'])/1e9*hz/pk
        out['new_cost_cyc_per_pkt']=(min(d['busy_ns'],d['worker_ns'])+d['napi_ns'])/1e9*hz/pk
        out['dut_cpu_cyc_per_pkt']=(d['worker_ns']+d['napi_ns'])/1e9*hz/pk
        out['idle_poll_frac']=d['idle_polls']/max(d['polls'],1)
        out['pkts_per_busy_poll']=d['rx_packets']/max(d['polls']-d['idle_polls'],1)
        out['worker_slices_per_pkt']=d['worker_slices']/pk
        out['kicks_per_pkt']=d['kicks']/pk
        out['wakeups_per_pkt']=d['wakeups']/pk
        out['worker_frac']=d['worker_ns']/1e9/dt
        out['napi_frac']=d['napi_ns']/1e9/dt
        out['busy_frac']=d['busy_ns']/1e9/dt
    for k in d:
        if k.startswith('si_') or k.startswith('irq_'): out[k+'_per_pkt']=d[k]/pk
try:
    g=json.load(open(w+'/gen.json'))
    s=g['streams'][0]
    out['gen_tx']=g.get('tx'); out['gen_rx']=g.get('rx'); out['lost']=s.get('lost')
    lat=s.get('latency') or {}
    for k in ('p50_ns','p99_ns','max_ns','avg_ns','p50','p99','max'):
        if k in lat: out['lat_'+k]=lat[k]
except Exception as e:
    out['gen_err']=str(e)+open(w+'/gen.err').read()[-300:]
print(json.dumps({k:(round(v,3) if isinstance(v,float) else v) for k,v in out.items()}))
PY
echo "dir=$W"
