# Shared by the veth probe scripts (veth-loss-probe.sh, xdp-cost-probe.sh); source it, then call
# probe_lab. Root.
#
# probe_lab GEN_PREFIX DUT_PREFIX NAME: two namespaces of the caller's own ($GEN_PREFIX$$ for the
# generator, $DUT_PREFIX$$ for the DUT; IPv6 off, lo up), veth pairs gA-dA and gB-dB between them
# (all four ends up), the generator ends' receive work steered to CPU 0 (RPS), and a work
# directory /tmp/NAME.XXXXXX. Sets G, D, gA, gB, dA, dB, W. On exit the switch the caller started
# as $SW is stopped and both namespaces are deleted (with the veths in them); nothing else is
# touched.
#
# probe_switch BIN KIND WIDLE [EXTRA]: `vecswitch run` in the DUT namespace on CPU 1 (fifo:10,
# idle policy WIDLE, or the switch's default when empty) cross-connecting dA and dB as ports of type KIND (EXTRA: more TOML lines for
# both ports); sets SW and returns once the control socket answers (10 s at most).
probe_switch() {
  cat > "$W/dut.toml" <<T2
[switch]
control_socket = "$W/ctl"
worker_cpu = 1
[[port]]
name = "a"
type = "$2"
interface = "$dA"
${4:-}
[[port]]
name = "b"
type = "$2"
interface = "$dB"
${4:-}
[[xconnect]]
ports = ["a", "b"]
T2
  ip netns exec "$D" taskset -c 1 "$1" run --config "$W/dut.toml" --worker-priority fifo:10 ${3:+--worker-idle "$3"} > "$W/sw.log" 2>&1 &
  SW=$!
  for _ in $(seq 100); do [ -S "$W/ctl" ] && "$1" ctl --socket "$W/ctl" show ports >/dev/null 2>&1 && break; sleep 0.1; done
}

probe_lab() {
  T=$$; G=$1$T; D=$2$T; W=$(mktemp -d "/tmp/$3.XXXXXX")
  gA=ga$T; gB=gb$T; dA=da$T; dB=db$T
  trap probe_cleanup EXIT
  ip netns add "$G"; ip netns add "$D"
  for ns in "$G" "$D"; do
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    ip -n "$ns" link set lo up
  done
  ip link add "$gA" netns "$G" type veth peer name "$dA" netns "$D"
  ip link add "$gB" netns "$G" type veth peer name "$dB" netns "$D"
  for i in "$gA" "$gB"; do ip -n "$G" link set "$i" up; done
  for i in "$dA" "$dB"; do ip -n "$D" link set "$i" up; done
  ip netns exec "$G" sh -c "echo 1 > /sys/class/net/$gA/queues/rx-0/rps_cpus; echo 1 > /sys/class/net/$gB/queues/rx-0/rps_cpus"
}

probe_cleanup() {
  [ -n "${SW:-}" ] && { kill "$SW" 2>/dev/null; wait "$SW" 2>/dev/null; }
  ip netns del "$G" 2>/dev/null
  ip netns del "$D" 2>/dev/null
}
