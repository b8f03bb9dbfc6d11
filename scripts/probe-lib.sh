# Shared by the veth probe scripts (veth-loss-probe.sh, xdp-cost-probe.sh); source it, then call
# probe_lab. Root.
#
# probe_lab GEN_PREFIX DUT_PREFIX NAME: two namespaces of the caller's own ($GEN_PREFIX$$ for the
# generator, $DUT_PREFIX$$ for the DUT; IPv6 off, lo up), veth pairs gA-dA and gB-dB between them
# (all four ends up), the generator ends' receive work steered to CPU 0 (RPS), and a work
# directory /tmp/NAME.XXXXXX. Sets G, D, gA, gB, dA, dB, W. On exit the switch the caller started
# as $SW is stopped and both namespaces are deleted (with the veths in them); nothing else is
# touched.
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
