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
outside the sandbox. Kernel exploits are out of scope; containers add their own layer.

How. ``bwrap`` with every namespace unshared (no network at all, its own pids), an
unprivileged uid inside and outside (root hands over to a throwaway uid, so the process
limit counts), no capabilities, an empty environment, a root of its own holding only
read-only binds of the system libraries, the interpreter and its stdlib (site-packages
hidden), NumPy alone, and the runner; a fresh size-capped /tmp per run; rlimits for CPU,
memory, processes and file size; the parent kills the whole sandbox on wall time or
on too much output. Nothing ever runs outside it: without bwrap, ``run`` raises
``SandboxUnavailable``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labs import runner as codec
from labs.spec import Call, Returned, RunResult

RUNNER = Path(codec.__file__).resolve()
INSIDE_RUNNER = "/sandbox/runner.py"
INSIDE_LIB = codec.NUMPY_DIR
INSIDE_UID = 1000
INSIDE_GID = 1000
MAX_RESULT_BYTES = 16 * 1024 * 1024  # what the result channel may carry in one run
UNAVAILABLE_CACHE_SECONDS = 30.0


class SandboxUnavailable(RuntimeError):
    """No sandbox can start here; the reason says why in words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _env_number(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


@dataclass(frozen=True)
class Limits:
    """What one run may take. Defaults read STUDY_LAB_* environment variables."""

    cpu_seconds: int = 5  # RLIMIT_CPU of each process
    wall_seconds: float = 10.0  # the parent kills the sandbox after this
    memory_bytes: int = 512 * 1024 * 1024  # RLIMIT_AS
    processes: int = 32  # processes and threads together (RLIMIT_NPROC)
    file_bytes: int = 8 * 1024 * 1024  # RLIMIT_FSIZE, and the size of /tmp
    output_bytes: int = 64 * 1024  # stdout and stderr together; past it the run stops

    @classmethod
    def from_env(cls) -> Limits:
        return cls(
            cpu_seconds=int(_env_number("STUDY_LAB_CPU_SECONDS", cls.cpu_seconds)),
            wall_seconds=_env_number("STUDY_LAB_WALL_SECONDS", cls.wall_seconds),
            memory_bytes=int(_env_number("STUDY_LAB_MEMORY_MB", cls.memory_bytes / 2**20) * 2**20),
            processes=int(_env_number("STUDY_LAB_PROCESSES", cls.processes)),
            file_bytes=int(_env_number("STUDY_LAB_FILE_MB", cls.file_bytes / 2**20) * 2**20),
            output_bytes=int(_env_number("STUDY_LAB_OUTPUT_KB", cls.output_bytes / 1024) * 1024),
        )


DEFAULT_LIMITS = Limits.from_env()


# --- what the sandbox sees ----------------------------------------------------------


def interpreter() -> Path:
    """The Python that runs inside: STUDY_LAB_PYTHON, else the system's of this version.

    The same major.minor as the service's, so the service's NumPy build loads in it.
    """
    configured = os.environ.get("STUDY_LAB_PYTHON")
    if configured:
        return Path(configured).resolve()
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    found = shutil.which(version, path="/usr/local/bin:/usr/bin")
    if found is None:
        raise SandboxUnavailable(f"no system {version} (set STUDY_LAB_PYTHON)")
    return Path(found).resolve()


def numpy_dirs() -> list[Path]:
    """NumPy's package directory, and numpy.libs beside it when the wheel has one."""
    import numpy

    package = Path(numpy.__file__).resolve().parent
    return [path for path in (package, package.parent / "numpy.libs") if path.is_dir()]


def bwrap_args(python: Path, limits: Limits) -> list[str]:
    prefix = python.parent.parent  # /usr or /usr/local
    stdlib = prefix / "lib" / python.name
    args = [
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
        "--setenv",
        "OPENBLAS_NUM_THREADS",
        "1",
        "--setenv",
        "OMP_NUM_THREADS",
        "1",
        "--setenv",
        "MKL_NUM_THREADS",
        "1",
        "--setenv",
        "LC_ALL",
        "C.UTF-8",
        "--setenv",
        "HOME",
        "/tmp",
    ]
    # The system's shared libraries (libc, libm, libz...), read-only.
    for top in ("/usr/lib", "/usr/lib64", "/usr/lib32"):
        if os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for link in ("/lib", "/lib64", "/lib32"):
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    if prefix != Path("/usr"):  # /usr/local: the interpreter's stdlib and libpython
        args += ["--ro-bind", str(prefix / "lib"), str(prefix / "lib")]
    args += ["--ro-bind", str(python), str(python)]
    # Installed packages stay out of reach: only the stdlib and NumPy are importable.
    for hidden in (stdlib / "site-packages", stdlib / "dist-packages", prefix / "lib/python3"):
        if hidden.is_dir():
            args += ["--tmpfs", str(hidden), "--remount-ro", str(hidden)]
    for path in numpy_dirs():
        args += ["--ro-bind", str(path), f"{INSIDE_LIB}/{path.name}"]
    args += [
        "--ro-bind",
        str(RUNNER),
        INSIDE_RUNNER,
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--remount-ro",  # /dev/shm would be a second /tmp without a size cap
        "/dev",
        "--perms",
        "1777",
        "--size",
        str(limits.file_bytes),
        "--tmpfs",
        "/tmp",
        "--remount-ro",
        "/",
        "--chdir",
        "/tmp",
    ]
    return args


def _outer_ids() -> tuple[int, int] | None:
    """A throwaway uid/gid for the sandbox when the service runs as root, else None.

    RLIMIT_NPROC does not bind processes owned by root, and counts per uid: a uid of
    its own per run makes the process limit hold, and keeps two runs from sharing it.
    """
    if os.geteuid() != 0:
        return None
    base = int(_env_number("STUDY_LAB_UID_BASE", 1_800_000_000))
    uid = base + random.SystemRandom().randrange(100_000)
    return uid, uid


def _set_limits(limits: Limits) -> None:
    """In the child before bwrap starts (after the uid change): every limit is inherited."""
    cpu = max(1, limits.cpu_seconds)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))


# --- starting it ------------------------------------------------------------------


@dataclass
class _Run:
    output: bytearray = dataclasses.field(default_factory=bytearray)
    results: bytearray = dataclasses.field(default_factory=bytearray)
    killed_for: str | None = None  # "time" or "output" or "results"
    returncode: int | None = None
    cpu_seconds: float = 0.0


def _start(
    python: Path, limits: Limits, request: bytes, *, timeout: float | None = None
) -> tuple[_Run, float]:
    """Run the runner in the sandbox with ``request`` on stdin; collect everything, bounded."""
    wall = timeout if timeout is not None else limits.wall_seconds
    ids = _outer_ids()
    read_results, write_results = os.pipe()
    run = _Run()
    started = time.monotonic()
    with tempfile.TemporaryFile() as stdin:
        stdin.write(request)
        stdin.seek(0)
        try:
            process = subprocess.Popen(
                [
                    *bwrap_args(python, limits),
                    str(python),
                    "-I",
                    "-S",
                    "-B",
                    INSIDE_RUNNER,
                    str(write_results),
                    str(limits.processes),
                ],
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(write_results,),
                env={},
                close_fds=True,
                start_new_session=True,
                user=ids[0] if ids else None,
                group=ids[1] if ids else None,
                extra_groups=[] if ids else None,
                preexec_fn=lambda: _set_limits(limits),  # rlimits only: nothing else
            )
        except OSError as exc:
            os.close(read_results)
            os.close(write_results)
            raise SandboxUnavailable(f"bubblewrap could not start: {exc}") from exc
    os.close(write_results)
    assert process.stdout is not None
    _collect(process, read_results, run, limits, deadline=started + wall)
    return run, time.monotonic() - started


def _kill(process: subprocess.Popen[bytes]) -> None:
    # bwrap leads its own process group; --die-with-parent takes the sandbox's pid
    # namespace (and everything in it) down with it.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()


def _collect(
    process: subprocess.Popen[bytes], results_fd: int, run: _Run, limits: Limits, *, deadline: float
) -> None:
    assert process.stdout is not None
    streams = {process.stdout.fileno(): run.output, results_fd: run.results}
    caps = {process.stdout.fileno(): limits.output_bytes, results_fd: MAX_RESULT_BYTES}
    reasons = {process.stdout.fileno(): "output", results_fd: "results"}
    selector = selectors.DefaultSelector()
    for fd in streams:
        os.set_blocking(fd, False)
        selector.register(fd, selectors.EVENT_READ)
    try:
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                run.killed_for = "time"
                _kill(process)
                break
            for key, _ in selector.select(timeout=min(remaining, 0.5)):
                fd = key.fd
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(fd)
                    continue
                buffer = streams[fd]
                buffer += chunk[: caps[fd] + 1 - len(buffer)]
                if len(buffer) > caps[fd]:
                    run.killed_for = reasons[fd]
                    _kill(process)
                    selector.unregister(fd)
                    selector.close()
                    break
            else:
                continue
            break
    finally:
        selector.close()
        os.close(results_fd)
    try:
        remaining = max(0.1, deadline - time.monotonic())
        process.wait(timeout=remaining)
    except subprocess.TimeoutExpired:
        run.killed_for = run.killed_for or "time"
        _kill(process)
        process.wait()
    process.stdout.close()
    run.returncode = process.returncode


# --- reading what came back -------------------------------------------------------


def _limit_message(limit: str, limits: Limits) -> str:
    return {
        "time": (
            f"Stopped after {limits.wall_seconds:g} s: the code was still running"
            f" (a lab run may take {limits.cpu_seconds} s of CPU time and"
            f" {limits.wall_seconds:g} s in all). Look for a loop that never ends."
        ),
        "cpu": (
            f"Stopped after {limits.cpu_seconds} s of CPU time: the code was still"
            " computing. Look for a loop that never ends."
        ),
        "memory": (
            f"Stopped: the code used more than {limits.memory_bytes // 2**20} MB of memory."
        ),
        "processes": (
            f"Stopped: the code started more than {limits.processes} processes or threads."
        ),
        "output": (
            f"Stopped: the code printed more than {limits.output_bytes // 1024} KB."
            " Print less, or nothing."
        ),
        "results": (
            "Stopped: the functions returned more data than a lab allows"
            f" ({MAX_RESULT_BYTES // 2**20} MB)."
        ),
        "file size": (
            f"Stopped: the code wrote more than {limits.file_bytes // 2**20} MB to files."
        ),
    }[limit]


_PUBLIC_LIMIT = {"cpu": "time", "results": "output"}


class MalformedAnswer(ValueError):
    pass


class _Reader:
    """Reads the result channel strictly: events in order, known keys, each call once."""

    def __init__(self, calls: Sequence[Call]) -> None:
        self.keys = {call.key for call in calls}
        self.returned: dict[str, Returned] = {}
        self.loaded = False
        self.done = False
        self.current: str | None = None
        self.limit: str | None = None
        self.load_error: str | None = None

    def read(self, data: bytes, *, cut: bool) -> None:
        lines = data.split(b"\n")
        last = lines.pop()
        if last and not cut:
            raise MalformedAnswer("the lab runner's answer was cut short")
        for number, line in enumerate(lines, 1):
            try:
                event = json.loads(line.decode("utf-8"))
                if not isinstance(event, dict) or self.done:
                    raise ValueError(line)
                self.event(event)
            except (UnicodeDecodeError, ValueError, TypeError, RecursionError):
                raise MalformedAnswer(
                    f"the lab runner's answer is malformed (line {number})"
                ) from None

    def event(self, event: dict[str, Any]) -> None:
        kind, key, fields = event.get("event"), event.get("key"), set(event)
        if kind == "loaded" and fields == {"event"} and not self.loaded:
            self.loaded = True
        elif kind == "load_error" and fields == {"event", "message"} and not self.loaded:
            self.load_error = str(event["message"])[:2000]
        elif kind == "call" and fields == {"event", "key"} and self.loaded and self.fresh(key):
            self.current = key
        elif kind == "returned" and key is not None and key == self.current:
            self.returned[key] = self.one_returned(event)
            self.current = None
        elif kind == "limit" and event.get("limit") in ("memory", "file size", "processes"):
            self.limit = event["limit"]
        elif kind == "done" and fields == {"event"}:
            self.done = True
        else:
            raise ValueError(kind)

    def fresh(self, key: Any) -> bool:
        return key in self.keys and key not in self.returned

    @staticmethod
    def one_returned(event: dict[str, Any]) -> Returned:
        if set(event) == {"event", "key", "error"} and isinstance(event["error"], str):
            return Returned(error=event["error"][:2000])
        if set(event) == {"event", "key", "value"}:
            try:
                return Returned(value=codec.decode(event["value"]))
            except codec.EncodingError as exc:
                raise ValueError(str(exc)) from None
        raise ValueError("returned")


def _parse(run: _Run, calls: Sequence[Call], limits: Limits, duration: float) -> RunResult:
    output = run.output[: limits.output_bytes].decode("utf-8", errors="replace")
    duration_ms = int(duration * 1000)
    reader = _Reader(calls)
    try:
        reader.read(bytes(run.results), cut=run.killed_for is not None)
    except MalformedAnswer as exc:
        return RunResult(output=output, duration_ms=duration_ms, failure=str(exc))
    limit = run.killed_for or reader.limit
    if limit is None and not reader.done:
        limit = _exit_limit(run)
        if limit is None and not reader.loaded and reader.load_error is None:
            detail = output.strip().splitlines()[-1:] or [_exit_words(run.returncode)]
            return RunResult(
                output=output,
                duration_ms=duration_ms,
                failure=f"the sandbox stopped before the code loaded: {detail[0][:300]}",
            )
        if limit is None and reader.current is not None:
            what = _exit_words(run.returncode)
            reader.returned[reader.current] = Returned(error=f"The process ended abruptly: {what}.")
    return RunResult(
        returned=reader.returned,
        output=output,
        duration_ms=duration_ms,
        limit=_PUBLIC_LIMIT.get(limit, limit) if limit else None,
        limit_message=_limit_message(limit, limits) if limit else None,
        load_error=reader.load_error,
    )


def _exit_limit(run: _Run) -> str | None:
    code = run.returncode
    if code is None:
        return None
    signum = -code if code < 0 else code - 128 if code > 128 else None
    if signum == signal.SIGXCPU or (signum == signal.SIGKILL and run.killed_for is None):
        return "cpu"
    if signum == signal.SIGXFSZ:
        return "file size"
    return None


def _exit_words(code: int | None) -> str:
    if code is None:
        return "no exit status"
    signum = -code if code < 0 else code - 128 if code > 128 else None
    if signum:
        try:
            return f"signal {signal.Signals(signum).name}"
        except ValueError:
            return f"signal {signum}"
    return f"exit status {code}"


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
                        "kwargs": {name: codec.encode(v) for name, v in _items(call.kwargs)},
                    }
                    for call in calls
                ],
            }
        ).encode("utf-8", errors="surrogatepass")
    except (codec.EncodingError, TypeError) as exc:
        return RunResult(failure=f"a call's arguments cannot be sent to the sandbox: {exc}")
    run_, duration = _start(python, limits, request)
    try:
        return _parse(run_, calls, limits, duration)
    except Exception as exc:  # a parse bug must not become the learner's 500
        return RunResult(failure=f"the lab runner's answer could not be read: {exc}")


def _items(mapping: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return list(mapping.items())


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
        run_, _ = _start(
            python, Limits(), json.dumps({"code": "", "calls": []}).encode(), timeout=10.0
        )
    except SandboxUnavailable as exc:
        return exc.reason
    if run_.results.startswith(b'{"event":"loaded"}'):
        return None
    said = run_.output.decode("utf-8", errors="replace").strip().splitlines()
    detail = said[-1] if said else _exit_words(run_.returncode)
    if "namespace" in detail.lower() or "permission" in detail.lower():
        return f"user namespaces are disabled or refused here: {detail}"[:300]
    return f"the sandbox did not start: {detail}"[:300]
