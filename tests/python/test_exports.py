"""liblocklab exports exactly what its public headers mark LL_API (locklab/bits/api.h)."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from locklab import native

INCLUDE = Path(__file__).resolve().parents[2] / "include" / "locklab"


def declared() -> set[str]:
    """Every name an LL_API declaration under include/locklab/ gives."""
    names = set()
    for header in INCLUDE.rglob("*.h"):
        text = header.read_text()
        # From LL_API to the declaration's end, attributes left out: the name is the
        # first ll_ word followed by '(' (a function, maybe in parentheses), '[' or ';'.
        for decl in re.findall(r"LL_API\b([^;]*;)", text):
            decl = re.sub(r"__attribute__\s*\(\(.*?\)\)", "", decl, flags=re.S)
            name = re.search(r"\b(ll_\w+)\s*\)?\s*[(\[;]", decl)
            if name:
                names.add(name.group(1))
    return names


def exported(library: Path) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True,
                         text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def test_the_library_exports_its_public_api_only():
    if not shutil.which("nm"):
        pytest.skip("nm (binutils) is not installed")
    library = next(native.native_dir().glob("liblocklab.so*"), None)
    assert library, f"no liblocklab.so in {native.native_dir()}"
    public = declared()
    assert {"ll_mutex_destroy", "ll_gate_create", "ll_spin_policy_names",
            "ll_mon_tid", "ll_error_unknown"} <= public
    # The dynamic linker's own entries (_init, _fini) aside.
    ours = {name for name in exported(library) if not name.startswith("_")}
    assert ours - public == set(), "exported but not LL_API in include/locklab"
    assert public - ours == set(), "LL_API in include/locklab but not exported"
