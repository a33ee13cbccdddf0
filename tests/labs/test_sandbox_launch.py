"""How the sandbox is started: ``setpriv`` and ``prlimit`` in front of bwrap where they are
installed (no fork of the service's process), a forked child setting the same where not.

Either way the sandbox runs with the same limits: each test reads them from inside, in
``/proc/self/limits``, as the code the learner submits would.
"""

from __future__ import annotations

import re

import pytest

from labs import sandbox
from labs.sandbox import bwrap

from . import require_sandbox

LIMITS = sandbox.Limits(
    cpu_seconds=3, wall_seconds=8, memory_bytes=300 * 2**20, processes=12, file_bytes=2**20
)
SHOW = "print(open('/proc/self/limits').read())\n"


def limits_inside(output: str) -> dict[str, tuple[str, str]]:
    """``/proc/self/limits`` as printed: {name: (soft, hard)}."""
    found = {}
    for line in output.splitlines()[1:]:
        match = re.match(r"(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)", line)
        if match:
            found[match[1]] = (match[2], match[3])
    return found


def expected() -> dict[str, tuple[str, str]]:
    return {
        "Max cpu time": ("3", "4"),
        "Max address space": (str(300 * 2**20), str(300 * 2**20)),
        "Max file size": (str(2**20), str(2**20)),
        "Max core file size": ("0", "0"),
        "Max open files": ("64", "64"),
    }


def test_the_launcher_carries_every_limit_and_the_uid_only_when_root(monkeypatch):
    monkeypatch.setattr(bwrap.shutil, "which", lambda name, **kw: f"/usr/bin/{name}")
    as_root = bwrap._launcher(LIMITS, (1_800_000_007, 1_800_000_007))
    assert as_root == [
        "/usr/bin/setpriv",
        "--reuid=1800000007",
        "--regid=1800000007",
        "--clear-groups",
        "/usr/bin/prlimit",
        "--cpu=3:4",
        f"--as={300 * 2**20}:{300 * 2**20}",
        f"--fsize={2**20}:{2**20}",
        "--core=0:0",
        "--nofile=64:64",
        "--nproc=12:12",
    ]
    not_root = bwrap._launcher(LIMITS, None)
    assert not_root == as_root[4:-1]  # no uid change, the process limit set inside


def test_without_prlimit_or_setpriv_the_child_sets_the_limits(monkeypatch):
    installed = {"prlimit", "setpriv"}
    monkeypatch.setattr(
        bwrap.shutil,
        "which",
        lambda name, **kw: f"/usr/bin/{name}" if name in installed else None,
    )
    installed.discard("setpriv")
    assert bwrap._launcher(LIMITS, (1_800_000_007, 1_800_000_007)) is None
    assert bwrap._launcher(LIMITS, None) is not None
    installed.discard("prlimit")
    assert bwrap._launcher(LIMITS, None) is None


@pytest.mark.sandbox
@pytest.mark.parametrize("launcher", ["setpriv and prlimit", "a forked child"])
def test_the_code_runs_under_the_same_limits_however_the_sandbox_starts(monkeypatch, launcher):
    require_sandbox()
    if launcher == "a forked child":
        monkeypatch.setattr(bwrap, "_launcher", lambda *_: None)
    elif bwrap._launcher(LIMITS, bwrap._outer_ids()) is None:
        pytest.skip("prlimit (or, as root, setpriv) is not installed")
    run = sandbox.run(SHOW, [], limits=LIMITS)
    assert run.failure is None and run.load_error is None, run
    inside = limits_inside(run.output)
    assert {name: inside.get(name) for name in expected()} == expected()
    # As root each run has a uid of its own with the process limit on it; otherwise the
    # runner sets it inside. Either way the code sees it.
    assert inside["Max processes"] == ("12", "12")
