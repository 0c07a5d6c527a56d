#!/usr/bin/env bash
# Installs exactly the Debian 12 packages dpquic needs to build, test and
# benchmark. Idempotent: installed packages are skipped, and `apt-get update`
# runs only when something is missing. Works as root, or via sudo otherwise.
set -euo pipefail

packages=(
  # Offline Bazel 4.2.3 and the rule sets the WORKSPACE points at.
  bazel-bootstrap bazel-rules-cc bazel-rules-java bazel-platforms bazel-skylib
  # Data path and protocol libraries.
  libdpdk-dev dpdk
  libipsec-mb-dev
  android-libboringssl-dev
  # The production binaries' malloc (dataplane, quicload).
  libmimalloc2.0
  libnghttp3-dev
  # The HTTP server of the dataplane's Prometheus endpoint (--metrics).
  libmicrohttpd-dev
  # Tests and benchmarks.
  googletest libgtest-dev libbenchmark-dev
  pkg-config
  # Reference QUIC peers for interop tests.
  ngtcp2-client ngtcp2-server
  # quinn, the benchmark's second peer: its crates and Debian's cargo and
  # rustc. The benchmark compiles tools/bench/quinn_perf offline on first use
  # (minutes on 2 cores), so neither setup nor CI builds it.
  cargo rustc librust-quinn-dev librust-rustls-pemfile-dev
  # Fuzzing and sanitizers (--config=fuzz, --config=asan).
  clang-14 libclang-rt-14-dev
  # Network namespaces for tests that leave loopback; ping for the DPDK
  # backend's ICMP test; dpdk-telemetry.py (dpdk-dev) reads its counters.
  iproute2 iputils-ping dpdk-dev
  # The load balancer of docs/fleet.md (nftables), checked by its test.
  nftables
  # A real Prometheus scrapes the fleet test's hosts (tests/dataplane/fleet).
  prometheus
  # Benchmark charts (tools/bench/charts.py).
  gnuplot-nox
  # Profiles of the server during handshakes (tools/bench/handshake_profile.py).
  linux-perf
  # The HTTP/3 file server's MIME map (/etc/mime.types).
  media-types
  # The browser test: headless Chromium driven over the DevTools protocol
  # (python3-websocket), its certificate's SPKI hash from openssl.
  chromium python3-websocket openssl
)

if [[ $# -gt 0 ]]; then
  case "$1" in
    -h|--help)
      echo "usage: tools/setup.sh"
      echo "Installs the Debian 12 packages dpquic needs (skips installed ones):"
      printf '  %s\n' "${packages[@]}"
      exit 0 ;;
    *) echo "setup.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
fi

if [[ "$(uname -s)" != Linux ]] || ! command -v dpkg-query >/dev/null; then
  echo "setup.sh: needs Debian 12 (dpkg and apt-get); this system has neither" >&2
  exit 2
fi

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
  [[ "$status" == ii* ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "setup.sh: all ${#packages[@]} packages present"
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null; then
  as_root=(sudo)
else
  echo "setup.sh: missing ${missing[*]}; run as root or install sudo" >&2
  exit 2
fi

echo "setup.sh: installing ${missing[*]}"
"${as_root[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -q \
  --no-install-recommends "${missing[@]}"
echo "setup.sh: done"
