"""The house limits, kept: no function over 60 lines and no module over 400 lines without a
comment that says why, and pure cores that import no Django.

A function over the limit needs a comment starting ``# Over 60 lines on purpose:`` in the
comment block right above its ``def`` (or above its decorators); a module over the limit
needs ``# One module on purpose:`` as its first line. McCabe complexity is ruff's C901
(``[tool.ruff.lint.mccabe]`` in pyproject.toml).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cards", "exercises", "labs", "studyapp")
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400
FUNCTION_MARK = "# Over 60 lines on purpose:"
MODULE_MARK = "# One module on purpose:"
PURE_CORES = (
    "cards/ladder.py",
    "exercises/engine.py",
    "exercises/cells.py",
    "exercises/playground.py",
)
FORBIDDEN_IN_CORES = ("django", "rest_framework")


def comment_block_above(lines: list[str], lineno: int) -> list[str]:
    """The comment lines directly above line ``lineno`` (1-based), top first."""
    block: list[str] = []
    i = lineno - 2
    while i >= 0 and lines[i].strip().startswith("#"):
        block.append(lines[i].strip())
        i -= 1
    return block[::-1]


def long_functions(source: str) -> list[str]:
    """Functions over the limit without the mark, as ``name (lines N, line L)``."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        assert node.end_lineno is not None
        length = node.end_lineno - node.lineno + 1
        if length <= MAX_FUNCTION_LINES:
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        if not any(c.startswith(FUNCTION_MARK) for c in comment_block_above(lines, first)):
            found.append(f"{node.name} ({length} lines, line {node.lineno})")
    return found


def long_module(source: str) -> str | None:
    """``N lines`` when the module is over the limit without the mark, else None."""
    lines = source.splitlines()
    if len(lines) <= MAX_MODULE_LINES or lines[0].startswith(MODULE_MARK):
        return None
    return f"{len(lines)} lines"


def framework_imports(source: str) -> list[str]:
    """The modules of Django or DRF that ``source`` imports, anywhere in it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [n for n in names if n.split(".")[0] in FORBIDDEN_IN_CORES]
    return found


def modules(package: str) -> list[Path]:
    return sorted(
        p for p in (ROOT / package).rglob("*.py") if "migrations" not in p.relative_to(ROOT).parts
    )


def offenders(package: str) -> list[str]:
    out = []
    for path in modules(package):
        source = path.read_text(encoding="utf-8")
        name = path.relative_to(ROOT).as_posix()
        if problem := long_module(source):
            out.append(f"{name}: module of {problem} without '{MODULE_MARK}' as its first line")
        out += [f"{name}: {f} without '{FUNCTION_MARK}' above it" for f in long_functions(source)]
    return out


# --- the checkers on planted sources ---------------------------------------------------


def function_source(body_lines: int, above: str = "", decorator: str = "") -> str:
    body = "".join(f"    x{i} = {i}\n" for i in range(body_lines))
    return f"import functools\n\n\n{above}{decorator}def f():\n{body}"


def test_a_function_over_60_lines_is_caught():
    assert long_functions(function_source(60)) == ["f (61 lines, line 4)"]
    assert long_functions(function_source(59)) == []


def test_a_marked_function_passes_with_the_mark_above_the_def_or_its_decorators():
    mark = "# Over 60 lines on purpose: a table that reads best in one piece\n"
    two_lines = mark + "# and a second line of the reason.\n"
    assert long_functions(function_source(80, above=mark)) == []
    assert long_functions(function_source(80, above=two_lines)) == []
    decorated = function_source(80, above=mark, decorator="@functools.cache\n")
    assert long_functions(decorated) == []


def test_the_mark_must_be_right_above_and_say_so():
    separated = function_source(80, above="# Over 60 lines on purpose: a reason\n\n")
    assert long_functions(separated) == ["f (81 lines, line 6)"]
    vague = function_source(80, above="# Long on purpose.\n")
    assert long_functions(vague) == ["f (81 lines, line 5)"]
    # Above the decorator, not between it and the def.
    between = function_source(80, decorator="@functools.cache\n# Over 60 lines on purpose: x\n")
    assert long_functions(between) == ["f (81 lines, line 6)"]


def test_a_nested_function_over_60_lines_is_caught():
    source = "def outer():\n" + textwrap.indent(function_source(70), "    ")
    assert [f.split(" ")[0] for f in long_functions(source)] == ["outer", "f"]


def test_a_module_over_400_lines_needs_its_first_line():
    body = "x = 1\n" * 401
    assert long_module(body) == "401 lines"
    assert long_module("x = 1\n" * 400) is None
    assert long_module("# One module on purpose: one table.\n" + body) is None
    assert long_module('"""Docstring."""\n# One module on purpose: too late.\n' + body)


def test_framework_imports_are_found_at_top_and_inside_functions():
    source = (
        "import numpy as np\n"
        "import django.conf\n"
        "from rest_framework import serializers\n"
        "from . import sibling\n"
        "def f():\n"
        "    from django.db import models\n"
    )
    assert framework_imports(source) == ["django.conf", "rest_framework", "django.db"]
    assert framework_imports("import numpy as np\nfrom exercises import engine\n") == []


# --- the tree ----------------------------------------------------------------------------


# Benchmarks too: a reader must follow one to trust its figures.
@pytest.mark.parametrize("package", [*PACKAGES, "benchmarks"])
def test_functions_and_modules_keep_the_limits(package):
    assert offenders(package) == []


@pytest.mark.parametrize("core", PURE_CORES)
def test_the_pure_cores_import_no_framework(core):
    assert framework_imports((ROOT / core).read_text(encoding="utf-8")) == []


def test_the_pure_cores_import_no_framework_even_indirectly():
    cores = [c.removesuffix(".py").replace("/", ".") for c in PURE_CORES]
    script = (
        "import sys\n"
        f"for name in {cores!r}:\n"
        "    __import__(name)\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(FORBIDDEN_IN_CORES)!r}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
