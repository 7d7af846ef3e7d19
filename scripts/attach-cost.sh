#!/usr/bin/env bash
# What one traced futex call costs under locklab-attach: the ping-pong of
# tests/c/attach/pingpong.c (two threads, one futex word, each turn a wake and
# usually a wait) alone, then traced by each hook and stack mode.  Per mode:
# the round's wall time alone and traced, and the kernel's own count of the
# tracer's programs' time (kernel.bpf_stats_enabled, switched on for the run
# and back off): ns per call of the enter and exit programs, sampling included.
# Needs root.  Run on a quiet machine: the wall times are noise on a busy one.
#   env: BUILD (the build directory: build), ROUNDS (300000)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
rounds=${ROUNDS:-300000}
tracer=$build/locklab-attach
pingpong=$build/tests/c/attach/attach_pingpong
for f in "$tracer" "$pingpong"; do
  [ -x "$f" ] || { echo "attach-cost: $f: not built" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "attach-cost: needs root (BPF, bpf_stats)" >&2; exit 1; }

stats_before=$(cat /proc/sys/kernel/bpf_stats_enabled)
tmp=$(mktemp -d)
trap 'echo "$stats_before" > /proc/sys/kernel/bpf_stats_enabled; rm -rf "$tmp"' EXIT
echo 1 > /proc/sys/kernel/bpf_stats_enabled

round_ns() { sed -n 's/.*"ns_per_round": \([0-9]*\).*/\1/p' "$1"; }

"$pingpong" "$rounds" > "$tmp/alone"
echo "alone: $(round_ns "$tmp/alone") ns per round"
for hook in syscall raw; do
  for stacks in dwarf fp; do
    "$pingpong" "$rounds" wait > "$tmp/traced" &
    pp=$!
    # Started (its libc mapped): a tracer that came first would find no libc in its maps.
    for _ in $(seq 300); do
      grep -q ready "$tmp/traced" && break
      sleep 0.01
    done
    "$tracer" -p "$pp" --hook "$hook" --stacks "$stacks" -o "$tmp/report" 2> "$tmp/err" &
    tr=$!
    # Attached: its programs are listed (or it gave up: no tracefs for this hook).
    for _ in $(seq 300); do
      bpftool prog show 2>/dev/null | grep -qE "name (tp|raw)_(enter|exit)" && break
      kill -0 "$tr" 2>/dev/null || break
      sleep 0.1
    done
    kill -USR1 "$pp"
    sleep 1   # mid-run: the programs' counts so far
    stats=$(bpftool prog show 2>/dev/null | grep -E "name (tp|raw)_(enter|exit)[a-z_]* " || true)
    wait "$pp" || { echo "$hook/$stacks: the ping-pong failed" >&2; cat "$tmp/err" >&2; continue; }
    wait "$tr" || { echo "$hook/$stacks: the tracer failed" >&2; cat "$tmp/err" >&2; continue; }
    echo "$hook/$stacks: $(round_ns "$tmp/traced") ns per round traced"
    echo "$stats" | awk '/run_cnt/ { for (i = 1; i <= NF; i++) { if ($i == "name") n = $(i + 1);
      if ($i == "run_time_ns") t = $(i + 1); if ($i == "run_cnt") c = $(i + 1) }
      if (c > 0) printf "    %-22s %8.0f ns per call (%d calls)\n", n, t / c, c }'
  done
done
