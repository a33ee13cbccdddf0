"""Run a learner's lab code in a bubblewrap sandbox and hand back what its functions returned.

Threat model. The submitted code is hostile and runs with the full power of Python
and NumPy inside the sandbox: it may loop, allocate, fork, write, print without end,
read any file it can see, open sockets, signal any process it can see, patch the
runner that hosts it and write anything to the result channel. The sandbox must keep
it from (1) reading or changing anything of the service (settings, .env, the database,
other learners' data, the service's environment), (2) reaching any network, (3)
touching any process outside the sandbox, (4) outliving its run or leaving anything
for the next one, and (5) taking more CPU, memory, processes, disk or output than
``Limits`` allows. What it hands back is data, checked strictly here: the learner can
claim any value it could have returned anyway, and the judge compares those values
outside the sandbox. Kernel exploits are out of scope, but the kernel's surface is cut
down: a seccomp filter refuses the calls a lab never needs (``labs.sandbox.seccomp``).

How. ``bwrap`` with every namespace unshared (no network at all, its own pids), an
unprivileged uid inside and outside (root hands over to a throwaway uid, so the process
limit counts), no capabilities, an empty environment, a root of its own holding only
what a run needs, read-only and at neutral paths (``mounts``): the interpreter and its
stdlib under /sandbox/python (site-packages hidden), NumPy alone and the runner under
/sandbox, and each shared library they link, listed from their real dependencies, so
no other program exists inside and /proc/self/mountinfo names no path of the checkout
or the virtualenv; a seccomp filter (ptrace, keyrings, bpf, perf, userfaultfd, io_uring
and the like refused; memory held outside the mappings refused: System V and POSIX IPC,
memfd, AIO; sockets of any family but AF_UNIX refused; another ABI kills); a fresh
size-capped /tmp per run; a cgroup per run bounding the whole run's memory (every
process, tmpfs included) and processes, where the machine gives one (``cgroup``; else
``memory_bound`` says why, and RLIMIT_AS per process remains); rlimits for CPU, memory,
processes and file size; the parent kills the whole sandbox on wall time, on too much
output, or when the kernel killed a process of the run for memory. Nothing ever runs
outside it: without bwrap, ``run`` raises ``SandboxUnavailable``.

Here: ``run``, ``unavailable`` and ``memory_bound``; ``limits`` holds ``Limits``; ``seccomp``
the filter; ``mounts`` what a run sees; ``cgroup`` a run's cgroup; ``bwrap`` starts the
sandbox and collects a run; ``answer`` reads what came back; ``labs/runner.py`` is
what runs inside.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Sequence
from typing import Any

from labs import runner as codec
from labs.sandbox import cgroup
from labs.sandbox.answer import exit_words, parse
from labs.sandbox.bwrap import interpreter, start
from labs.sandbox.limits import DEFAULT_LIMITS, Limits, SandboxUnavailable
from labs.spec import Call, RunResult

__all__ = [
    "DEFAULT_LIMITS",
    "Limits",
    "SandboxUnavailable",
    "memory_bound",
    "run",
    "unavailable",
]

UNAVAILABLE_CACHE_SECONDS = 30.0

# --- the public interface ---------------------------------------------------------


def run(code: str, calls: Sequence[Call], *, limits: Limits = DEFAULT_LIMITS) -> RunResult:
    """Load ``code`` in a fresh sandbox, make ``calls``, and hand back what came back.

    Never raises for anything the code does; raises ``SandboxUnavailable`` when no
    sandbox can start (and then nothing ran).
    """
    reason = unavailable()
    if reason is not None:
        raise SandboxUnavailable(reason)
    python = interpreter()
    try:
        request = json.dumps(
            {
                "code": code,
                "calls": [
                    {
                        "key": call.key,
                        "function": call.function,
                        "args": [codec.encode(arg) for arg in call.args],
                        "kwargs": {name: codec.encode(v) for name, v in call.kwargs.items()},
                    }
                    for call in calls
                ],
            }
        ).encode("utf-8", errors="surrogatepass")
    except (codec.EncodingError, TypeError) as exc:
        return RunResult(failure=f"a call's arguments cannot be sent to the sandbox: {exc}")
    run_, duration = start(python, limits, request)
    try:
        return parse(run_, calls, limits, duration)
    except Exception as exc:  # a parse bug must not become the learner's 500
        return RunResult(failure=f"the lab runner's answer could not be read: {exc}")


def memory_bound() -> str | None:
    """None when each run's memory is bounded as a whole by a cgroup of its own; else what
    bounds it instead (``RLIMIT_AS`` per process, and the seccomp filter's refusals of
    shared memory), and why no cgroup, in words."""
    where = cgroup.place()
    return f"RLIMIT_AS per process only: {where}" if isinstance(where, str) else None


_checked: dict[str, Any] = {"at": -1e9, "reason": None}
_lock = threading.Lock()


def unavailable() -> str | None:
    """None when a sandbox can start here, else why not (checked by starting one; cached)."""
    with _lock:
        if time.monotonic() - _checked["at"] < UNAVAILABLE_CACHE_SECONDS:
            return _checked["reason"]
        reason = _probe()
        _checked.update(at=time.monotonic(), reason=reason)
        return reason


def _probe() -> str | None:
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        python = interpreter()
    except SandboxUnavailable as exc:
        return exc.reason
    try:
        run_, _ = start(
            python, Limits(), json.dumps({"code": "", "calls": []}).encode(), timeout=10.0
        )
    except SandboxUnavailable as exc:
        return exc.reason
    if b'{"event":"loaded"}' in run_.results:
        return None
    said = run_.output.decode("utf-8", errors="replace").strip().splitlines()
    detail = said[-1] if said else exit_words(run_.returncode)
    # bwrap's own refusal to make the namespaces; not a file the run cannot read (the
    # interpreter's "can't open file ...: Permission denied", a bind's source path).
    lowered = detail.lower()
    own = detail.startswith("bwrap:") and "source path" not in lowered
    if own and ("namespace" in lowered or "permission" in lowered):
        return f"user namespaces are disabled or refused here: {detail}"[:300]
    return f"the sandbox did not start: {detail}"[:300]
