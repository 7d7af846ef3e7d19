"""`locklab list`: the algorithms (mutexes, then rwlocks) and the admission gates'
policies, their knobs and defaults, as locklab-bench knows them; and what this build
left out (peer locks, the attach tracer), with why."""
from __future__ import annotations

import argparse
import json
import sys

from .. import native
from ..errors import LocklabError
from ..profile import attach


def flags(a: dict) -> str:
    """How an entry of `list --json` waits, as locklab-bench's text shows it:
    "rwlock, parks, FIFO, preemption-safe", or for a lock that survives
    preemption only with other options, "spins; preemption-safe with spin=yield
    or spin=auto"."""
    if a.get("kind") == "gate":
        return "gate"
    parts = ["rwlock"] if a.get("kind") == "rwlock" else []
    parts += ["parks" if a["parks"] else "spins"] + (["FIFO"] if a["fifo"] else [])
    text = ", ".join(parts)
    if a.get("preemption_safe"):
        return f"{text}, preemption-safe"
    safe = [f"{k['name']}={c}" for k in a["knobs"] for c in k.get("preemption_safe_choices", [])]
    return f"{text}; preemption-safe with {' or '.join(safe)}" if safe else text


def command(args: argparse.Namespace) -> int:
    if args.rwlock and args.gate:
        raise LocklabError("list: --rwlock and --gate exclude each other")
    kind = ("rwlock" if args.rwlock else "gate" if args.gate
            else "all" if not args.name else "mutex")
    algos = native.algorithms(args.name, args.lock_opts or args.gate_opts, unbuilt=True,
                              kind=kind)
    tracer = attach.unbuilt_entry() if kind == "all" else None
    if tracer:  # `locklab profile -p`'s
        algos.append(tracer)
    if args.json:
        json.dump(algos, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    unbuilt: dict[str, list[str]] = {}  # why -> the locks left out for it
    for a in algos:
        if not a.get("built", True):
            unbuilt.setdefault(a["note"], []).append(a["name"])
            continue
        print(f"{a['name']:<18} {a['summary']} [{flags(a)}]")
        for k in a["knobs"]:
            shown = f"{k['name']}={k['value']}"
            print(f"    {shown:<28} {k['help']}")
    for why, names in unbuilt.items():
        print(f"not built: {', '.join(names)} ({why})")
    return 0


def add_parser(sub) -> None:
    ls = sub.add_parser("list", help="algorithms (mutexes, then rwlocks) and admission gates' "
                        "policies, their knobs and defaults")
    ls.add_argument("name", nargs="?", help="one algorithm (with --gate, one policy) only")
    ls.add_argument("--lock-opts", help="K=V,... to check and show applied")
    ls.add_argument("--gate-opts", help="K=V,... for a gate policy (with --gate NAME)")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.add_argument("--rwlock", action="store_true",
                    help="read-write locks only; NAME is an rwlock's (pthread and ll are both)")
    ls.add_argument("--gate", action="store_true",
                    help="admission gates' policies only (innodb, fifo, auto); NAME is a policy")
    ls.set_defaults(func=command)
