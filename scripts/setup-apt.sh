#!/usr/bin/env bash
# Installs the Debian packages locklab builds and runs with, if any is missing.
# Called by `make setup`; safe to run again (does nothing when all are there).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config   # the C build
  python3 python3-venv python3-dev               # the CLI's virtualenv
  libck-dev libabsl-dev g++                      # the benchmark's peer locks (ck, absl::Mutex)
  libdw-dev                                      # the profiler's file:line (locklab-lines)
  clang libbpf-dev bpftool                       # the attach tracer (locklab-attach): eBPF
  memcached libmemcached-tools                   # the profiler's test: memcached under memcaslap
  libjemalloc2 libtcmalloc-minimal4              # ... and programs on other allocators
  mariadb-server mariadb-client sysbench         # the program sweep: MariaDB under sysbench
  chromium chromium-driver                       # the report's test in a real browser
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null; then
  sudo=(sudo)
else
  echo "setup: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
