"""Starting bubblewrap: what the sandbox sees, its limits, and collecting a run, bounded.

``start`` returns only once nothing of the sandbox runs; ``labs.sandbox`` says why each
option is there (the threat model), docs/labs.md says it for operators.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import random
import resource
import select
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labs.sandbox import cgroup, mounts, seccomp
from labs.sandbox.limits import MAX_RESULT_BYTES, Limits, SandboxUnavailable
from labs.sandbox.mounts import INSIDE_RUNNER, interpreter, numpy_dirs

__all__ = ["Run", "bwrap_args", "interpreter", "numpy_dirs", "start"]

INSIDE_UID = 1000
INSIDE_GID = 1000
# The first of the throwaway outer uids of a service run as root (STUDY_LAB_UID_BASE).
UID_BASE = 1_800_000_000

logger = logging.getLogger(__name__)

# --- what the sandbox sees ----------------------------------------------------------


def bwrap_args(python: Path, limits: Limits) -> list[str]:
    """bwrap's options: the namespaces and identity, then what the sandbox sees."""
    return [*_identity_args(), *mounts.library_args(python), *_own_args(limits)]


def _identity_args() -> list[str]:
    return [
        "bwrap",
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--uid",
        str(INSIDE_UID),
        "--gid",
        str(INSIDE_GID),
        "--hostname",
        "lab",
        "--clearenv",
        *("--setenv", "OPENBLAS_NUM_THREADS", "1"),
        *("--setenv", "OMP_NUM_THREADS", "1"),
        *("--setenv", "MKL_NUM_THREADS", "1"),
        *("--setenv", "LC_ALL", "C.UTF-8"),
        *("--setenv", "HOME", "/tmp"),
    ]


def _own_args(limits: Limits) -> list[str]:
    """The runner, the sandbox's own /proc and minimal /dev, a fresh /tmp; the rest read-only."""
    return [
        *("--proc", "/proc"),
        *("--dev", "/dev"),
        *("--remount-ro", "/dev"),  # /dev/shm would be a second /tmp without a size cap
        *("--perms", "1777", "--size", str(limits.file_bytes), "--tmpfs", "/tmp"),
        *("--remount-ro", "/"),
        *("--chdir", "/tmp"),
    ]


def _outer_ids() -> tuple[int, int] | None:
    """A throwaway uid/gid for the sandbox when the service runs as root, else None.

    RLIMIT_NPROC does not bind processes owned by root, and counts per uid: a uid of
    its own per run makes the process limit hold, and keeps two runs from sharing it.
    """
    if os.geteuid() != 0:
        return None
    # Imported here: importing studyapp loads the Django settings, and the sandbox also
    # runs in a process without them (another user's, which could not make var/).
    from django.core.exceptions import ImproperlyConfigured

    from studyapp.common.environment import env_number

    try:
        base = int(env_number("STUDY_LAB_UID_BASE", UID_BASE))
    except ImproperlyConfigured as exc:
        raise SandboxUnavailable(str(exc)) from None
    uid = base + random.SystemRandom().randrange(100_000)
    return uid, uid


def _set_limits(limits: Limits, ids: tuple[int, int] | None, group: cgroup.RunGroup | None) -> None:
    """In the child before bwrap starts: the run's cgroup, every limit, then the uid.

    RLIMIT_NPROC is checked against the processes of the sandbox's user namespace and,
    with the limit its creator had, against every process of the outer uid. With a
    throwaway uid both counts are the sandbox's own. A service that is not root shares
    its uid with its other processes, so only the runner's limit inside applies there.
    The cgroup is joined first, while this child may still write its ``cgroup.procs``.
    """
    for procs in group.procs_files() if group is not None else []:
        with open(procs, "w") as handle:
            handle.write("0")
    cpu = max(1, limits.cpu_seconds)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    if ids is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        os.setgroups([])
        os.setregid(ids[1], ids[1])
        os.setreuid(ids[0], ids[0])


def _launcher(limits: Limits, ids: tuple[int, int] | None) -> list[str] | None:
    """``setpriv`` (the throwaway uid, when root) and ``prlimit`` (every limit) in front of
    bwrap, or None when either is missing (``_set_limits`` then sets them in the child).

    The same uid change and limits as ``_set_limits``, made by two small programs before
    they exec bwrap, so starting a run needs no ``preexec_fn`` nor uid change in this
    process's child: Python then starts it with vfork instead of copying the worker's
    page tables with fork (10-20 ms of a large process; docs/benchmarks.md, "Labs").
    """
    prlimit = shutil.which("prlimit", path="/usr/bin:/bin")
    setpriv = shutil.which("setpriv", path="/usr/bin:/bin") if ids else None
    if prlimit is None or (ids is not None and setpriv is None):
        return None
    cpu = max(1, limits.cpu_seconds)
    front = []
    if ids is not None and setpriv is not None:
        front = [setpriv, f"--reuid={ids[0]}", f"--regid={ids[1]}", "--clear-groups"]
    front += [
        prlimit,
        f"--cpu={cpu}:{cpu + 1}",
        f"--as={limits.memory_bytes}:{limits.memory_bytes}",
        f"--fsize={limits.file_bytes}:{limits.file_bytes}",
        "--core=0:0",
        "--nofile=64:64",
    ]
    if ids is not None:
        front.append(f"--nproc={limits.processes}:{limits.processes}")
    return front


# --- starting it ------------------------------------------------------------------


@dataclass
class Run:
    output: bytearray = dataclasses.field(default_factory=bytearray)
    results: bytearray = dataclasses.field(default_factory=bytearray)
    info: bytearray = dataclasses.field(default_factory=bytearray)
    killed_for: str | None = None  # "time", "output", "results" or "memory"
    returncode: int | None = None
    init_pidfd: int | None = None  # the sandbox's pid 1, as bwrap's --info-fd names it
    group: cgroup.RunGroup | None = None  # the run's cgroup, where the machine has one
    peak_memory: int | None = None  # the most the whole run held, from its cgroup


def start(
    python: Path, limits: Limits, request: bytes, *, timeout: float | None = None
) -> tuple[Run, float]:
    """Run the runner in the sandbox with ``request`` on stdin; collect everything, bounded."""
    wall = timeout if timeout is not None else limits.wall_seconds
    filter_fd = seccomp.program_fd()  # SandboxUnavailable before anything starts
    args = bwrap_args(python, limits)
    read_results, write_results = os.pipe()
    read_info, write_info = os.pipe()
    run = Run()
    started = time.monotonic()
    command = [
        *args,
        *("--info-fd", str(write_info)),
        # Loaded last, just before the runner starts: bwrap's own setup is not filtered.
        *("--seccomp", str(filter_fd)),
        mounts.inside_interpreter(python),
        # Unbuffered: what the code printed before a limit stopped it still reaches the
        # learner, who needs it most then.
        *("-I", "-S", "-B", "-u"),
        *(INSIDE_RUNNER, str(write_results), str(limits.processes)),
    ]
    try:
        run.group = _run_group(limits)
        with tempfile.TemporaryFile() as stdin:
            stdin.write(request)
            stdin.seek(0)
            fds = (write_results, write_info, filter_fd)
            process = _spawn(command, stdin, limits, run.group, fds)
    except (OSError, SandboxUnavailable) as exc:
        for fd in (read_results, read_info):
            os.close(fd)
        _forget_group(run)
        if isinstance(exc, SandboxUnavailable):
            raise
        raise SandboxUnavailable(f"bubblewrap could not start: {exc}") from exc
    finally:
        for fd in (write_results, write_info, filter_fd):
            os.close(fd)
    try:
        pipes = {read_results: run.results, read_info: run.info}
        _collect(process, pipes, run, limits, started + wall)
    finally:
        _finish(process, run, deadline=started + wall)
        _forget_group(run)
    return run, time.monotonic() - started


_warned: set[str] = set()


def _run_group(limits: Limits) -> cgroup.RunGroup | None:
    """A cgroup of the run's own, or None where the machine gives none (said once)."""
    where = cgroup.place()
    if isinstance(where, str):
        if where not in _warned:
            _warned.add(where)
            logger.warning("Lab runs have no memory cgroup, RLIMIT_AS alone: %s", where)
        return None
    try:
        return cgroup.RunGroup(where, limits)
    except OSError as exc:
        raise SandboxUnavailable(f"the run's cgroup could not be made: {exc}") from exc


def _forget_group(run: Run) -> None:
    if run.group is None:
        return
    run.peak_memory = run.group.peak()
    try:
        run.group.remove()
    except OSError:
        logger.exception("A lab run's cgroup could not be removed: %s", run.group.memory)
    run.group = None


def _spawn(
    command: list[str],
    stdin: Any,
    limits: Limits,
    group: cgroup.RunGroup | None,
    fds: tuple[int, ...],
) -> subprocess.Popen[bytes]:
    """Start bwrap: behind ``setpriv``/``prlimit`` (and the cgroup's join) where they are
    installed, else from a forked child that sets the same (``_set_limits``)."""
    ids = _outer_ids()
    front = _launcher(limits, ids)
    options: dict[str, Any] = {
        "stdin": stdin,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.STDOUT,
        "pass_fds": fds,
        "env": {},
        "close_fds": True,
        "start_new_session": True,
    }
    if front is not None:
        join = cgroup.join_command(group.procs_files()) if group is not None else []
        return subprocess.Popen([*join, *front, *command], **options)
    return subprocess.Popen(command, preexec_fn=lambda: _set_limits(limits, ids, group), **options)


def _note_init(run: Run) -> None:
    """Hold the sandbox's pid 1 by a pidfd as soon as bwrap names it."""
    if run.init_pidfd is not None or not run.info.rstrip().endswith(b"}"):
        return
    try:
        pid = int(json.loads(run.info.decode())["child-pid"])
        run.init_pidfd = os.pidfd_open(pid)
    except (ValueError, KeyError, TypeError, OSError):
        return


def _kill(process: subprocess.Popen[bytes], run: Run) -> None:
    # The sandbox's pid 1 takes every process of its pid namespace with it; bwrap
    # (leading its own process group) follows, and --die-with-parent covers the rest.
    if run.init_pidfd is not None:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(run.init_pidfd, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()


def _collect(
    process: subprocess.Popen[bytes],
    pipes: dict[int, bytearray],
    run: Run,
    limits: Limits,
    deadline: float,
) -> None:
    """Read stdout, the results and bwrap's info until all close, within every cap."""
    assert process.stdout is not None
    pipes = {process.stdout.fileno(): run.output, **pipes}
    caps = {id(run.output): limits.output_bytes, id(run.results): MAX_RESULT_BYTES}
    reasons = {id(run.output): "output", id(run.results): "results"}
    with selectors.DefaultSelector() as selector:
        for fd in pipes:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map() and run.killed_for is None:
            run.killed_for = _stopped(run, deadline)
            if run.killed_for is not None:
                break
            remaining = deadline - time.monotonic()
            for key, _ in selector.select(timeout=max(0.0, min(remaining, 0.5))):
                buffer = pipes[key.fd]
                cap = caps.get(id(buffer), 4096)
                with contextlib.suppress(BlockingIOError):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fd)
                    buffer += chunk[: cap + 1 - len(buffer)]
                if len(buffer) > cap:
                    run.killed_for = reasons.get(id(buffer), "output")
                    break
                _note_init(run)
    for fd in pipes:
        if fd != process.stdout.fileno():
            os.close(fd)


def _stopped(run: Run, deadline: float) -> str | None:
    """The limit that stops the run now: its wall time, or its cgroup's memory (the kernel
    killed one of its processes for it: the rest goes too), else None."""
    if time.monotonic() >= deadline:
        return "time"
    if run.group is not None and run.group.oom_killed():
        return "memory"
    return None


def _finish(process: subprocess.Popen[bytes], run: Run, *, deadline: float) -> None:
    """Stop what is left, and return only once nothing of the sandbox runs."""
    if run.killed_for is not None:
        _kill(process, run)
    try:
        process.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        run.killed_for = run.killed_for or "time"
        _kill(process, run)
        process.wait()
    assert process.stdout is not None
    process.stdout.close()
    run.returncode = process.returncode
    if run.killed_for is None and run.group is not None and run.group.oom_killed():
        run.killed_for = "memory"
    if run.init_pidfd is not None:
        # Readable once pid 1 has exited, which the kernel lets happen only after
        # every other process of its namespace is gone.
        with contextlib.suppress(OSError):
            select.select([run.init_pidfd], [], [], 5.0)
        os.close(run.init_pidfd)
        run.init_pidfd = None
