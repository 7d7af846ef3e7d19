#!/usr/bin/env python3
"""The auto gate's N over time, as docs/admission.md shows it.

  admission-trace.py NATIVE_DIR OUT.png [LOCK] [--clients C] [--steady]

Runs the server workload with C clients (256) behind the auto gate, with I/O (200 us,
held inside the gate: no suspend) in every other 300 ms, and draws what the gate
measured and chose at each decision (every `interval_us`, 10 ms by default): N,
throughput, idle CPUs.  Prints the mean N and throughput of each phase.  --steady: no
I/O, one point of the concurrency preset (0.3 s of warm-up, 0.2 s measured); prints the
mean N and throughput of the measured part.
"""
import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

PHASE_MS = 300
STEADY_WARMUP_MS = 300


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("native", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("lock", nargs="?", default="pthread")
    ap.add_argument("--clients", type=int, default=256)
    ap.add_argument("--steady", action="store_true")
    args = ap.parse_args()
    if not 1 <= args.clients <= 4096:
        sys.exit(f"--clients wants 1..4096, got {args.clients}")
    native, out, lock = args.native, args.out, args.lock
    if args.steady:
        load = ["--duration", "0.2", "--warmup", str(STEADY_WARMUP_MS / 1000)]
    else:
        load = ["--workload-opts", f"io_us=200,io_phase_ms={PHASE_MS}",
                "--duration", "1.8", "--warmup", "0.1"]
    run = subprocess.run(
        [str(native / "locklab-bench"), "bench", "--workload", "server", "--lock", lock,
         "--threads", str(args.clients), "--gate", "auto", *load, "--gate-trace", "--json"],
        capture_output=True, text=True, timeout=120)
    if run.returncode:
        sys.exit(run.stderr.strip().splitlines()[-1] if run.stderr.strip() else
                 f"locklab-bench failed ({run.returncode})")
    trace = json.loads(run.stdout)["gate_trace"]
    # [t_ms, N, exits/s, process CPUs, idle CPUs, queued, inside]; I/O in odd phases.
    if args.steady:
        rows = [s for s in trace if s[0] >= STEADY_WARMUP_MS]
        print(f"{lock}, {args.clients} clients, {STEADY_WARMUP_MS}-{trace[-1][0]:.0f} ms: "
              f"mean N {statistics.mean(s[1] for s in rows):6.1f}, "
              f"{statistics.mean(s[2] for s in rows):9,.0f} queries/s")
    for phase in range(0 if args.steady else int(trace[-1][0] // PHASE_MS) + 1):
        rows = [s for s in trace if int(s[0] // PHASE_MS) == phase and s[0] > 30]
        if rows:
            print(f"{phase * PHASE_MS:5d}-{(phase + 1) * PHASE_MS:5d} ms "
                  f"{'I/O' if phase % 2 else 'CPU'}: mean N {statistics.mean(s[1] for s in rows):6.1f}, "
                  f"{statistics.mean(s[2] for s in rows):9,.0f} queries/s")

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 5), layout="constrained")
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True)
    t = [s[0] for s in trace]
    top.step(t, [s[1] for s in trace], where="post", color="C3", label="N (auto)")
    top.set_ylabel("N")
    top.set_yscale("log", base=2)
    bottom.plot(t, [s[2] for s in trace], color="C0", label="queries/s")
    bottom.set_ylabel("queries per second")
    idle = bottom.twinx()
    idle.plot(t, [s[4] for s in trace], color="C7", linestyle=":", label="idle CPUs")
    idle.set_ylabel("idle CPUs (system)")
    for ax in (top, bottom):
        if args.steady:
            ax.axvspan(0, STEADY_WARMUP_MS, color="0.9")
        for phase in range(1, 0 if args.steady else int(t[-1] // PHASE_MS) + 1, 2):
            ax.axvspan(phase * PHASE_MS, (phase + 1) * PHASE_MS, color="0.9")
        ax.grid(True, alpha=0.3)
    bottom.set_xlabel("ms since start (shaded: " + (
        "the warm-up; the sweep measures the rest)" if args.steady else
        "I/O phases, 200 us per query, inside the gate)"))
    top.set_title(f"auto gate, {args.clients} clients, {lock}")
    fig.legend(loc="outside lower center", ncols=3)
    fig.savefig(out, dpi=90)


if __name__ == "__main__":
    main()
