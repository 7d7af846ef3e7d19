#!/usr/bin/env bash
# Figures on a machine with many cores, in one call: reduced peers, server-locks and rw
# presets, each stored and reported into one folder.  Meant for a machine that is at
# hand for minutes only: under 8 minutes on 16 CPUs, build included.
#
#   scripts/many-core-figures.sh OUT_DIR [NAME...]
#
# NAME (peers, server-locks, rw) runs only those; all three by default.
# OUT_DIR gets figures.db (the three runs), report-{peers,server-locks,rw}/ (each
# `locklab report`), {peers,server-locks,rw}.txt (the verdict as the terminal shows
# it), machine.txt, and reports.tar.gz (the three report folders together).
#
# It uses $LOCKLAB if set, else .venv/bin/locklab (make setup), else builds the package
# into a throwaway virtualenv that sees python3's own packages, with no network
# (pip --no-index --no-build-isolation: scikit-build-core, cmake, ninja, matplotlib and
# tqdm must be installed already).
set -euo pipefail

usage="usage: scripts/many-core-figures.sh OUT_DIR [peers|server-locks|rw ...]"
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
out=$1
shift
[ $# -gt 0 ] || set -- peers server-locks rw
wanted=("$@")
for name in "${wanted[@]}"; do
  case $name in peers|server-locks|rw) ;; *) echo "$usage" >&2; exit 2 ;; esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -e "$out/figures.db" ]; then
  echo "many-core-figures: $out/figures.db exists; give an empty folder" >&2
  exit 2
fi

locklab=${LOCKLAB:-}
if [ -z "$locklab" ] && [ -x "$root/.venv/bin/locklab" ]; then
  locklab=$root/.venv/bin/locklab
fi
if [ -z "$locklab" ]; then
  venv=$(mktemp -d /tmp/locklab-venv.XXXXXX)
  trap 'rm -rf "$venv"' EXIT
  echo "many-core-figures: building locklab into $venv"
  python3 -m venv "$venv"
  # The packages of the python3 on PATH, which may itself be a virtualenv's.
  python3 -c 'import site; print("\n".join(site.getsitepackages()))' \
    >"$("$venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')/outer.pth"
  (cd "$root" && "$venv/bin/pip" install -q --no-index --no-build-isolation --no-deps \
     -C cmake.define.LL_WERROR=OFF .)
  locklab=$venv/bin/locklab
fi

{
  echo "date     $(date -u +%FT%TZ)"
  echo "commit   $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "cpus     $(nproc)"
  echo "kernel   $(uname -r)"
  echo "cpu      $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "glibc    $(ldd --version 2>&1 | head -1)"
} >"$out/machine.txt"
cat "$out/machine.txt"

db=$out/figures.db
serial=()
command -v flock >/dev/null && serial=(flock /tmp/locklab-bench.lock)
# name, then the sweep's options: each a preset cut to its story's points.
# Thread counts reach 16x the CPUs at 256, as 32 threads do on 2 cores.
# The preset's locks, absl only where it was built.
server_locks=parks
"$locklab" list --json | python3 -c 'import json, sys
sys.exit(not any(a["name"] == "absl" and a.get("built", True) for a in json.load(sys.stdin)))' \
  && server_locks=parks,absl
sweeps=(
  "peers|--preset peers --threads 1,4,16,64,256 --hold-ns 0,1000 --duration 0.2 --warmup 0.1 --repeat 3 --timeout 10"
  "server-locks|--preset server-locks --locks $server_locks --threads 1,16,64,256 --mutexes 4 --hold-ns 1000 --outside-ns 500 --duration 0.3 --warmup 0.2 --repeat 3"
  "rw|--preset rw --threads 1,4,16,64 --read-pct 100,99,50 --hold-ns 0"
)
for entry in "${sweeps[@]}"; do
  name=${entry%%|*}
  [[ " ${wanted[*]} " == *" $name "* ]] || continue
  read -r -a opts <<<"${entry#*|}"
  echo "== $name: locklab sweep ${opts[*]}"
  start=$SECONDS
  # Timing runs never overlap another's on the same machine.
  "${serial[@]}" "$locklab" sweep --db "$db" "${opts[@]}"
  "$locklab" report latest --db "$db" --out "$out/report-$name" | tee "$out/$name.txt"
  echo "== $name: $((SECONDS - start)) s"
done
tar -C "$out" -czf "$out/reports.tar.gz" "${wanted[@]/#/report-}"
echo "many-core-figures: wrote $out"
