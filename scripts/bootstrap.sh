#!/usr/bin/env bash
# Installs every Debian package that forge's build, tests and demo need.
# Idempotent: when everything is present it changes nothing and says so.
set -euo pipefail

packages=(
  # build
  build-essential cmake pkg-config
  # libraries (see README "Dependencies" for why each)
  libcli11-dev nlohmann-json3-dev libfmt-dev libsqlite3-dev libcurl4-openssl-dev
  libssl-dev doctest-dev libtomlplusplus-dev libboost-dev libopenblas-dev libhnswlib-dev
  libxxhash-dev libzstd-dev libgoogle-perftools-dev
  # Harbor tasks' docker-compose.yaml (lib/tasks/compose.cpp)
  libyaml-cpp-dev
  # benchmarks only: bench-dedup_search compares with FAISS when this is present
  libfaiss-dev
  # runtime and tests
  sqlite3 curl jq python3 python3-numpy docker.io busybox-static
  openssl  # test certificates for the k8s backend's TLS tests
  # benchmarks only: the forge-proxy baseline and its fast client (bench/proxy_bench.sh)
  nginx wrk
  # the Node.js image for real harnesses in containers (scripts/make-node-image.sh)
  debootstrap
  # GUI tasks on the local backend: forge-launch --display starts Xvfb; the
  # tests read the screen back with xdpyinfo
  xvfb x11-utils
  # forge-launch --backend local --bubblewrap
  bubblewrap
  # tests/e2e/verify_html.sh renders forge-verify's HTML pages in headless
  # Chromium and checks the screenshot and the parsed DOM
  chromium
  # a real registry on 127.0.0.1 for forge-launch's image pulls (tests/e2e/launch_registry.sh)
  docker-registry
  # tests/e2e/fuzz_formats.sh: the libFuzzer targets (fuzz/) run for a bounded time
  clang-14 libclang-rt-14-dev
  # the fake Kubernetes API server's real mode (tests/support/k8s_fake.sh): pods'
  # namespaces, veths and NetworkPolicies as iptables rules
  iproute2 iptables util-linux
  # examples/loop (make -f Makefile.examples loop) and its test: the small policy's
  # server and trainer run on Debian's CPU torch (/usr/bin/python3)
  python3-torch
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# The harness tests need Node.js >= 20 with npm; the machine image ships one.
# Debian's own nodejs (18) is only a fallback when none is present.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)

if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#packages[@]} packages present"
  exit 0
fi

echo "bootstrap: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
