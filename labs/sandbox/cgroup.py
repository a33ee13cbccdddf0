"""A cgroup per run: the whole run's memory and processes bounded, counted together.

``RLIMIT_AS`` bounds one process's mappings; a run of many processes could hold that
much in each, and memory outside any mapping (tmpfs pages, pipes, kernel buffers) in
none. A memory cgroup counts all of it, for every process of the run: the sandbox
joins its run's cgroup before bwrap starts (``join_command``), so bwrap, the runner
and everything they fork are charged to it.

Where the cgroups are made (``place``, found once per process):

- cgroup v2: under ``STUDY_LAB_CGROUP`` when set (a cgroup delegated to the labs
  worker: systemd's ``Delegate=yes`` unit, or a container's own cgroup namespace),
  else under this process's cgroup when it is the root of its cgroup namespace (a
  container's). A cgroup v2 that gives its children controllers holds no process, so
  its processes first move into ``service/`` inside it (systemd's delegation rule);
  the runs' cgroups go under ``labs/``, with ``memory`` and ``pids`` enabled.
- cgroup v1 (a host that mounts the memory controller alone): each run's memory
  cgroup under this process's, and its pids cgroup under this process's pids cgroup.

Per run: ``memory.max`` the run's memory limit, no swap, ``memory.oom.group`` so the
kernel stops the whole run at once, and ``pids.max``. Where neither version can be
used, ``place`` says why and a run keeps ``RLIMIT_AS`` per process and the seccomp
filter's refusals of shared memory (``labs.sandbox.memory_bound`` says so).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from labs.sandbox.limits import Limits

EXTRA_PROCESSES = 4  # bwrap, its pid 1 and the runner, beside the learner's own


@dataclass(frozen=True)
class Place:
    """Where runs' cgroups are made: one directory per controller hierarchy."""

    version: int
    memory: Path
    pids: Path | None  # v2: the same directory as memory


# --- finding where ------------------------------------------------------------------


def _mounts() -> dict[str, tuple[str, str]]:
    """{"cgroup2" | v1 controller: (mount root, mount point)} from /proc/self/mountinfo."""
    found: dict[str, tuple[str, str]] = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        if tail[0] == "cgroup2":
            found.setdefault("cgroup2", (fields[3], fields[4]))
        elif tail[0] == "cgroup":
            for option in tail[2].split(","):
                found.setdefault(option, (fields[3], fields[4]))
    return found


def _own_cgroups() -> dict[str, str]:
    """{"" (v2) | v1 controller: this process's cgroup path} from /proc/self/cgroup."""
    own: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            own[name] = path
    return own


def _directory(mount: tuple[str, str], path: str) -> Path:
    root, point = mount
    relative = os.path.relpath(path, root)
    if relative.startswith(".."):
        raise ValueError(f"the cgroup {path} lies outside the mounted tree {root}")
    return Path(point) if relative == "." else Path(point) / relative


def _v2_place(mounts: dict[str, tuple[str, str]], own: dict[str, str]) -> Place | str:
    configured = os.environ.get("STUDY_LAB_CGROUP")
    if configured:
        base = Path(configured)
    elif own.get("") == "/" and "cgroup2" in mounts:
        base = _directory(mounts["cgroup2"], "/")
    else:
        return (
            "cgroup v2: this process's cgroup is not delegated to the labs"
            " (set STUDY_LAB_CGROUP to one that is; docs/labs.md)"
        )
    controllers = (base / "cgroup.controllers").read_text().split()
    missing = {"memory", "pids"} - set(controllers)
    if missing:
        return f"cgroup v2: {base} lacks the {' and '.join(sorted(missing))} controller"
    _delegate(base)
    return Place(2, base / "labs", base / "labs")


def _delegate(base: Path) -> None:
    """Give ``base``'s children memory and pids, its processes moving to ``service/``."""
    subtree = base / "cgroup.subtree_control"
    # The root cgroup alone (no cgroup.type) may hold processes and give controllers.
    if {"memory", "pids"} - set(subtree.read_text().split()) and (base / "cgroup.type").exists():
        service = base / "service"
        service.mkdir(exist_ok=True)
        for pid in (base / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError, OSError):
                (service / "cgroup.procs").write_text(pid)
    if {"memory", "pids"} - set(subtree.read_text().split()):
        subtree.write_text("+memory +pids")
    labs = base / "labs"
    labs.mkdir(exist_ok=True)
    (labs / "cgroup.subtree_control").write_text("+memory +pids")


@functools.cache
def place() -> Place | str:
    """Where this process makes its runs' cgroups, or why it cannot (cached)."""
    try:
        mounts, own = _mounts(), _own_cgroups()
        if "memory" not in mounts or "memory" not in own:
            return _v2_place(mounts, own)
        memory = _directory(mounts["memory"], own["memory"])
        pids = _directory(mounts["pids"], own["pids"]) if "pids" in own else None
        for directory in (memory, pids):
            if directory is not None and not os.access(directory, os.W_OK):
                return f"cgroup v1: {directory} is not writable"
        return Place(1, memory, pids)
    except (OSError, ValueError) as exc:
        return f"no cgroup for the runs: {exc}"


# --- one run's cgroup ---------------------------------------------------------------


class RunGroup:
    """The cgroup(s) of one run: made with its limits, joined by the launcher, removed."""

    def __init__(self, where: Place, limits: Limits) -> None:
        self.version = where.version
        name = f"run-{os.getpid()}-{secrets.token_hex(4)}"
        self.memory = where.memory / name
        self.pids = where.pids / name if where.pids is not None else None
        self.memory.mkdir()
        try:
            if self.pids is not None and self.pids != self.memory:
                self.pids.mkdir()
            self._set(limits)
        except OSError:
            self.remove()
            raise

    def _set(self, limits: Limits) -> None:
        processes = str(limits.processes + EXTRA_PROCESSES)
        if self.version == 2:
            (self.memory / "memory.max").write_text(str(limits.memory_bytes))
            (self.memory / "memory.swap.max").write_text("0")
            (self.memory / "memory.oom.group").write_text("1")
            (self.memory / "pids.max").write_text(processes)
            return
        (self.memory / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
        swap = self.memory / "memory.memsw.limit_in_bytes"
        if swap.exists():  # swap accounting on: memory and swap together, the same bound
            swap.write_text(str(limits.memory_bytes))
        if self.pids is not None:
            (self.pids / "pids.max").write_text(processes)

    def procs_files(self) -> list[str]:
        """The files the launcher writes ``0`` to, joining every hierarchy."""
        groups = {self.memory, *([self.pids] if self.pids is not None else [])}
        return [str(group / "cgroup.procs") for group in sorted(groups)]

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the run for its memory limit."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in (self.memory / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key in ("oom_kill", "oom_group_kill") and int(value) > 0:
                    return True
        except (OSError, ValueError):
            return False
        return False

    def peak(self) -> int | None:
        """The most memory the run held at once, in bytes, where the kernel keeps it."""
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        try:
            return int((self.memory / name).read_text())
        except (OSError, ValueError):
            return None

    def _members(self) -> list[int]:
        pids: list[int] = []
        for group in {self.memory, *([self.pids] if self.pids else [])}:
            with contextlib.suppress(OSError, ValueError):
                pids += [int(p) for p in (group / "cgroup.procs").read_text().split()]
        return pids

    def remove(self, *, within: float = 5.0) -> None:
        """Kill what is left in the run's cgroups and remove them."""
        deadline = time.monotonic() + within
        for group in dict.fromkeys([self.memory, self.pids]):
            while group is not None:
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                        raise
                for pid in self._members():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                time.sleep(0.01)


def join_command(files: list[str]) -> list[str]:
    """A shell that moves itself into each cgroup, then execs the rest of the command.

    ``echo`` is the shell's own: the process that writes ``0`` is the one that becomes
    bwrap, so nothing of the run starts outside the cgroup.
    """
    script = 'while [ "$1" != -- ]; do echo 0 > "$1" || exit 125; shift; done; shift; exec "$@"'
    return ["/bin/sh", "-c", script, "lab-join", *files, "--"]
