"""The parser plumbing the commands share: one-line errors, the run database, the
program to run after `--`, the swapper's options of `run` and `profile`, and the
output files they write checked before anything runs."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..errors import LocklabError
from ..swap.settings import SwapSettings

RUN_HELP = "a run number, 'latest', or -N: the Nth last run (-1 the latest, -2 the one before)"


class Parser(argparse.ArgumentParser):
    """argparse, but bad input is one `locklab: ...` line, not usage plus an error."""

    def error(self, message: str):
        self.exit(2, f"locklab: {message}\n")


def database_options() -> Parser:
    """A parent parser: --db, the SQLite file of runs."""
    db = Parser(add_help=False)
    db.add_argument("--db", default="locklab.db", type=Path,
                    help="the SQLite file of runs (default ./locklab.db)")
    return db


def add_command(p: argparse.ArgumentParser) -> None:
    """The program to run and its arguments, everything after the options."""
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]",
                   help="the program to run and its arguments")


def command_of(args: argparse.Namespace) -> list[str]:
    """The program to run and its arguments, without the `--` before them."""
    return args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd


def add_swap_options(p: argparse.ArgumentParser, lock_help: str) -> None:
    """--lock, --lock-opts and --lock-for, as `run` and `profile` take them."""
    p.add_argument("--lock", metavar="NAME", help=lock_help)
    p.add_argument("--lock-opts", metavar="K=V,...", help="--lock's options")
    p.add_argument("--lock-for", action="append", default=[], metavar="SITE=NAME[:K=V,...]",
                   help="the mutexes named SITE (as `locklab profile` names a lock) get the "
                   "algorithm NAME, with its options after ':' (repeatable; the rest: --lock's, "
                   "or glibc's without --lock)")


def swap_settings(args: argparse.Namespace, **more) -> SwapSettings:
    """The swapper's settings the options give (add_swap_options'), with MORE."""
    return SwapSettings.given(lock=args.lock, lock_opts=args.lock_opts,
                              lock_for=args.lock_for, **more)


def check_writable(path: str, option: str) -> None:
    """Refuse, before the program runs, a file that cannot be written at its end."""
    if not path:
        raise LocklabError(f"{option} '': no file named")
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise LocklabError(f"{option} {path}: is a directory")
    if not parent.is_dir():
        raise LocklabError(f"{option} {path}: no such directory {parent}")
    if not os.access(p if p.exists() else parent, os.W_OK):
        raise LocklabError(f"{option} {path}: not writable")


def check_directory(path: str, option: str) -> None:
    """Refuse, before anything is read or written, a directory that cannot be made or
    written into: a new one is made with its missing parents."""
    if not path:
        raise LocklabError(f"{option} '': no directory named")
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise LocklabError(f"{option} {path}: not a directory")
    there = next(d for d in (p, *p.absolute().parents) if d.exists())
    if not there.is_dir():
        raise LocklabError(f"{option} {path}: {there} is not a directory")
    if not os.access(there, os.W_OK | os.X_OK):
        raise LocklabError(f"{option} {path}: {there} is not writable")
