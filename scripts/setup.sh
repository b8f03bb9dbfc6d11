#!/usr/bin/env bash
# Installs what vecswitch needs on a Debian 12 machine, and nothing that is already there.
# Run as root (CI and the lab do). Idempotent: a second run only checks.
set -euo pipefail

# Debian packages: the peers and tools the tests and the lab start themselves.
#   dpdk             DPDK runtime (Debian 12's `dpdk` alone does not ship dpdk-testpmd)
#   dpdk-dev         dpdk-testpmd: memif interop peer and speed-of-light forwarder
#   librte-net-memif23  DPDK's memif PMD (not pulled in with --no-install-recommends)
#   librte-net-virtio23 DPDK's virtio-user PMD: the vhost-user frontend of the interop tests
#   tshark           reads our pcap captures in tests
#   iproute2         ip netns / veth for the lab's namespaces
#   openvswitch-switch  Open vSwitch (userspace datapath) as a peer
#   bridge-utils     the Linux bridge peer's helpers (ip link works too)
#   busybox          ping inside namespaces (Debian's image has no ping)
#   valgrind         callgrind instruction counts for benchmarks
#   ethtool          TSO/GSO off on the kernel TCP peers of crates/ports/tests/afpacket_tcp.rs
#   nftables         nft: the kernel masquerade/firewall oracle of crates/switch/tests/nat44_netns.rs
#   conntrack        conntrack -F: the kernel NAT DUT empties its table between new-session trials
#   qemu-system-x86  QEMU (TCG here) for the VM topologies' guests; cpio, xz-utils, file, kmod
#                    build their image (scripts/guest/build.sh, below)
#   gdb              the testbed tests' watchdog prints every thread's stack of a hung test
#   python3-prometheus-client  the Prometheus text parser that scrapes `vecswitch run`'s metrics
#                    endpoint in crates/cli/tests/metrics.rs (run with /usr/bin/python3)
#   nginx, vsftpd, dnsmasq-base  the L7 profile's real servers (HTTP, FTP, DNS; crates/testbed/src/l7,
#                    started by hand in a namespace, never as system services)
#   python3, python3-venv  Debian's python, into whose venv (.venv/ in the repo) the reference
#                    MLRsearch goes (crates/lab/tests/mlrsearch_pypi.rs runs .venv/bin/python3)
pkgs=(dpdk dpdk-dev librte-net-memif23 librte-net-virtio23 tshark iproute2 openvswitch-switch bridge-utils busybox valgrind procps ethtool nftables conntrack
  python3 python3-venv python3-prometheus-client qemu-system-x86 cpio xz-utils file kmod gdb nginx vsftpd dnsmasq-base)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  if [ "$(id -u)" != 0 ]; then
    echo "setup: need root to install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# PyPI: FD.io's MLRsearch library, pinned, the reference our MLRsearch is cross-checked against
# (crates/lab/tests/mlrsearch_pypi.rs). It goes into a venv of Debian's python3 at .venv/ in the
# repository: the test runs exactly that interpreter (not whichever python3 is first on PATH,
# e.g. a pyenv shim), and Debian's own python refuses system-wide pip installs (PEP 668).
MLRSEARCH_VERSION=1.2.1
repo=$(cd "$(dirname "$0")/.." && pwd)
venv="$repo/.venv"
mlr_version() {
  "$venv/bin/python3" -c 'import importlib.metadata as m; print(m.version("MLRsearch"))' 2>/dev/null || true
}
if [ "$(mlr_version)" != "$MLRSEARCH_VERSION" ]; then
  echo "setup: installing MLRsearch==$MLRSEARCH_VERSION (PyPI) into $venv"
  [ -x "$venv/bin/python3" ] || /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python3" -m pip install --quiet "MLRsearch==$MLRSEARCH_VERSION"
fi
got=$(mlr_version)
if [ "$got" != "$MLRSEARCH_VERSION" ]; then
  echo "setup: MLRsearch in $venv is '${got:-missing}', expected $MLRSEARCH_VERSION" >&2
  exit 1
fi

# The QEMU guest of the VM topologies (kernel + initramfs from Debian packages), cached in build/guest.
"$repo/scripts/guest/build.sh"

# The Rust toolchain is on the machine (rustup); make sure cargo is reachable.
if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    echo "setup: cargo is in \$HOME/.cargo/bin; add it to PATH" >&2
  else
    echo "setup: cargo not found; install Rust with rustup first" >&2
    exit 1
  fi
fi
# `make test` runs `cargo fmt --check` and `cargo clippy -- -D warnings`.
if command -v cargo >/dev/null 2>&1 && ! cargo clippy --version >/dev/null 2>&1; then
  rustup component add clippy
fi
if command -v cargo >/dev/null 2>&1 && ! cargo fmt --version >/dev/null 2>&1; then
  rustup component add rustfmt
fi
echo "setup: ok"
