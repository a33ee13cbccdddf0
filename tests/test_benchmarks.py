"""The benchmark scripts as modules: no import cycle between them, and the beat benchmark's
modules change nothing (``sys.path``, the environment) when imported; ``main`` does that.

The benchmarks themselves print figures and are not run here (docs/benchmarks.md).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "benchmarks"


def benchmark_imports(name: str, source: str) -> set[str]:
    """The modules of ``benchmarks`` that module ``benchmarks.<name>`` imports, anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative to the package
                base = PACKAGE if node.level == 1 else ""
                module = f"{base}.{node.module}" if node.module else base
                modules = [module] if node.module else [f"{base}.{a.name}" for a in node.names]
            else:
                modules = [node.module or ""]
                if node.module == PACKAGE:
                    modules = [f"{PACKAGE}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {m.split(".")[1] for m in modules if m.startswith(f"{PACKAGE}.")}
    return found - {name}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each cycle of ``graph`` once, as the modules around it from its smallest name."""
    cycles: set[tuple[str, ...]] = set()

    def walk(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                cycle = path[path.index(nxt) :]
                turn = cycle.index(min(cycle))
                cycles.add(tuple(cycle[turn:] + cycle[:turn]))
            else:
                walk(nxt, [*path, nxt])

    for start in sorted(graph):
        walk(start, [start])
    return [list(c) for c in sorted(cycles)]


def tree_graph() -> dict[str, set[str]]:
    return {
        path.stem: benchmark_imports(path.stem, path.read_text(encoding="utf-8"))
        for path in sorted((ROOT / PACKAGE).glob("*.py"))
        if path.stem != "__init__"
    }


# --- the checkers on planted sources ---------------------------------------------------


def test_imports_of_the_package_are_found_in_every_form():
    source = (
        "import os\n"
        "import benchmarks.pg\n"
        "from benchmarks.beat_seed import seed\n"
        "from benchmarks import mail\n"
        "from .baseline import baseline_due\n"
        "from . import load_urls\n"
        "def main():\n"
        "    from benchmarks.beat_fanout import bench_fanout\n"
    )
    assert benchmark_imports("x", source) == {
        "pg",
        "beat_seed",
        "mail",
        "baseline",
        "load_urls",
        "beat_fanout",
    }
    assert benchmark_imports("pg", "from benchmarks.pg import sql\n") == set()


def test_a_cycle_is_found_once_however_long():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert import_cycles({"bench": {"fanout"}, "fanout": {"bench", "pg"}, "pg": set()}) == [
        ["bench", "fanout"]
    ]
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]


# --- the tree ----------------------------------------------------------------------------


def test_no_benchmark_module_imports_one_that_imports_it_back():
    graph = tree_graph()
    assert {"bench_beat", "beat_fanout", "beat_seed"} <= set(graph)
    assert import_cycles(graph) == []


def test_importing_the_beat_benchmark_changes_neither_the_path_nor_the_environment():
    # After django.setup(), as bench_beat.main imports the fan-out part.
    script = (
        "import json, os, sys\n"
        "import django\n"
        "django.setup()\n"
        "path, environ = list(sys.path), dict(os.environ)\n"
        "import benchmarks.bench_beat, benchmarks.beat_seed, benchmarks.beat_fanout\n"
        "print(json.dumps({\n"
        "    'path_unchanged': sys.path == path,\n"
        "    'environ': sorted(k for k in os.environ if os.environ[k] != environ.get(k)),\n"
        "}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in {"LOG_LEVEL", "DJANGO_DEBUG"}}
    env["DJANGO_SETTINGS_MODULE"] = "studyapp.settings"
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout.splitlines()[-1]) == {"path_unchanged": True, "environ": []}
