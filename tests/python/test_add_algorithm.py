"""docs/locks.md's recipe holds: a new algorithm is one file and one registration line.

A copy of the tree gets tests/recipe/example.c as src/lib/locks/example.c and
`LL_ALGO(example, "example")` in algorithms.def, and nothing else; its build must list the
lock with its knob, run it in the benchmark with the exclusion check, and give it
the C tests every registered algorithm gets.
"""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(cmd, cwd, timeout=600):
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{' '.join(map(str, cmd))}:\n{out.stdout[-2000:]}{out.stderr[-2000:]}"
    return out.stdout


def test_one_file_and_one_line_add_an_algorithm(tmp_path):
    if not shutil.which("cmake") or not shutil.which("ninja"):
        pytest.skip("cmake and ninja are needed (make setup installs them)")
    tree = tmp_path / "tree"
    tree.mkdir()
    for part in ("CMakeLists.txt", "cmake", "include", "src", "tests/c", "tests/cpp",
                 "tests/packaging"):
        copy = shutil.copytree if (ROOT / part).is_dir() else shutil.copy
        (tree / part).parent.mkdir(parents=True, exist_ok=True)
        copy(ROOT / part, tree / part)
    shutil.copy(ROOT / "tests/recipe/example.c", tree / "src/lib/locks/example.c")
    registry = tree / "src/lib/locks/algorithms.def"
    registry.write_text(registry.read_text() + 'LL_ALGO(example, "example")\n')

    build = tmp_path / "build"
    run(["cmake", "-S", tree, "-B", build, "-G", "Ninja", "-DLL_WERROR=ON",
         "-DLL_WITH_CK=OFF", "-DLL_WITH_ABSL=OFF", "-DCMAKE_BUILD_TYPE=Release"], tmp_path)
    jobs = str(os.cpu_count() or 2)
    run(["cmake", "--build", build, "-j", jobs, "--target", "locklab-bench", "test_locks"],
        tmp_path)

    (listed,) = json.loads(run([build / "locklab-bench", "list", "example", "--json"], build))
    assert listed["name"] == "example" and [k["name"] for k in listed["knobs"]] == ["yield"]
    point = json.loads(run([build / "locklab-bench", "bench", "--lock", "example", "--threads",
                            "4", "--mutexes", "1", "--hold-ns", "100", "--duration", "0.2",
                            "--warmup", "0", "--json"], build))
    assert point["mutex_ok"] is True and point["iterations"] > 0
    # The ctest matrix reads the same file: the lock has its tests, and they pass.
    tests = run(["ctest", "-N", "-R", "/example$"], build)
    assert {"exclusion/example", "trylock/example", "timed/example"} <= set(
        re.findall(r"Test +#\d+: (\S+)", tests))
    run(["ctest", "-R", "^(exclusion|trylock|timed)/example$", "--output-on-failure"], build)
