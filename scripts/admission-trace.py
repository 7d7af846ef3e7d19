#!/usr/bin/env python3
"""The auto gate following a workload that changes, as docs/admission.md shows it.

  admission-trace.py NATIVE_DIR OUT.png [LOCK]

Runs the server workload with 256 clients behind the auto gate, with I/O (200 us,
held inside the gate: no suspend) in every other 300 ms, and draws what the gate
measured and chose at each decision (every 5 ms): N, throughput, idle CPUs.  Prints the
mean N and throughput of each phase.
"""
import json
import statistics
import subprocess
import sys
from pathlib import Path

PHASE_MS = 300


def main() -> None:
    native, out = Path(sys.argv[1]), Path(sys.argv[2])
    lock = sys.argv[3] if len(sys.argv) > 3 else "pthread"
    run = subprocess.run(
        [str(native / "locklab-bench"), "bench", "--workload", "server", "--lock", lock,
         "--threads", "256", "--gate", "auto",
         "--workload-opts", f"io_us=200,io_phase_ms={PHASE_MS}",
         "--duration", "1.8", "--warmup", "0.1", "--gate-trace", "--json"],
        capture_output=True, text=True, check=True, timeout=120)
    trace = json.loads(run.stdout)["gate_trace"]
    # [t_ms, N, exits/s, process CPUs, idle CPUs, queued, inside]; I/O in odd phases.
    for phase in range(int(trace[-1][0] // PHASE_MS) + 1):
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
        for phase in range(1, int(t[-1] // PHASE_MS) + 1, 2):
            ax.axvspan(phase * PHASE_MS, (phase + 1) * PHASE_MS, color="0.9")
        ax.grid(True, alpha=0.3)
    bottom.set_xlabel(f"ms since start (shaded: I/O phases, 200 us per query, inside the gate)")
    top.set_title(f"auto gate, 256 clients, {lock}")
    fig.legend(loc="outside lower center", ncols=3)
    fig.savefig(out, dpi=90)


if __name__ == "__main__":
    main()
