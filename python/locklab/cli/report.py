"""`locklab report RUN`: a run's graphs, tables and data, and its verdict and targets
printed; for a run of `locklab advise`, its verdict, candidates and profile."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..advise import output as advise_output
from ..advise.plan import is_advise
from ..studies import admission, ll_targets
from ..sweep import store
from .parser import RUN_HELP, check_directory

# The studies whose sections a report includes, in this order.
STUDIES = (admission, ll_targets)


def command(args: argparse.Namespace) -> int:
    if args.out is not None:
        check_directory(args.out, "--out")
    conn = store.connect(args.db, write=False)
    run_id = store.resolve_run(conn, args.run)
    out = Path(args.out if args.out is not None else f"locklab-report-{run_id}")
    if is_advise(store.get_run(conn, run_id, grid=False)["spec"]):
        print(advise_output.write(conn, run_id, str(args.db), out))
        print((out / advise_output.VERDICT_FILE).read_text(encoding="utf-8"), end="")
        return 0
    # Imported here, once the input is known good: matplotlib takes a good part of a
    # second to load, which every other command, and every refusal, would pay for nothing.
    from ..report import index

    page = index.write(conn, run_id, out, STUDIES)
    print(page)
    for name in index.target_files(STUDIES):  # a server or rw run's targets, met or MISSED
        checked = page.parent / name
        if checked.exists():
            print(checked.read_text(encoding="utf-8"), end="")
    return 0


def add_parser(sub, db) -> None:
    rp = sub.add_parser("report", parents=[db], help="graphs, tables and data of a run")
    rp.add_argument("run", metavar="RUN", help=RUN_HELP)
    rp.add_argument("--out", help="directory (default ./locklab-report-RUN)")
    rp.set_defaults(func=command)
