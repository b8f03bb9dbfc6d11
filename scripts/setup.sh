#!/usr/bin/env bash
# Installs what vecswitch needs on a Debian 12 machine, and nothing that is already there.
# Run as root (CI and the lab do). Idempotent: a second run only checks.
set -euo pipefail

# Debian packages: the peers and tools the tests and the lab start themselves.
#   dpdk             DPDK runtime (Debian 12's `dpdk` alone does not ship dpdk-testpmd)
#   dpdk-dev         dpdk-testpmd: memif interop peer and speed-of-light forwarder
#   librte-net-memif23  DPDK's memif PMD (not pulled in with --no-install-recommends)
#   tshark           reads our pcap captures in tests
#   iproute2         ip netns / veth for the lab's namespaces
#   openvswitch-switch  Open vSwitch (userspace datapath) as a peer
#   bridge-utils     the Linux bridge peer's helpers (ip link works too)
#   busybox          ping inside namespaces (Debian's image has no ping)
#   valgrind         callgrind instruction counts for benchmarks
#   pkg-config, python3-venv: build helpers
pkgs=(dpdk dpdk-dev librte-net-memif23 tshark iproute2 openvswitch-switch bridge-utils busybox valgrind procps)
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

# PyPI: FD.io's MLRsearch library, the reference our MLRsearch is cross-checked against
# (crates/lab/tests/mlrsearch_pypi.rs).
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import MLRsearch' 2>/dev/null; then
  echo "setup: installing MLRsearch==1.2.1 (PyPI)"
  python3 -m pip install --quiet MLRsearch==1.2.1 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages MLRsearch==1.2.1
fi

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
