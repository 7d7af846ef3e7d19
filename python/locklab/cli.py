"""The `locklab` command."""
from __future__ import annotations

import argparse
import json
import sys

from . import __version__, native


def cmd_list(args: argparse.Namespace) -> int:
    algos = native.algorithms(args.name, args.lock_opts)
    if args.json:
        json.dump(algos, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    for a in algos:
        kind = "parks" if a["parks"] else ("spins, FIFO" if a["fifo"] else "spins")
        print(f"{a['name']:<18} {a['summary']} [{kind}]")
        for k in a["knobs"]:
            shown = f"{k['name']}={k['value']}"
            print(f"    {shown:<28} {k['help']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="locklab", description=__doc__)
    p.add_argument("--version", action="version", version=f"locklab {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    ls = sub.add_parser("list", help="algorithms, their knobs and defaults")
    ls.add_argument("name", nargs="?", help="one algorithm only")
    ls.add_argument("--lock-opts", help="K=V,... to check and show applied")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.set_defaults(func=cmd_list)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except native.NativeError as e:
        print(f"locklab: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("locklab: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
