"""Whether lab code can be graded: a sandbox here, or a labs worker that reports one.

Submissions are refused with 503 when no sandbox can run them. The web process asks
``sandbox_problem()``:

1. a sandbox this process can start (``labs.sandbox.unavailable``, a real start, cached
   briefly) answers at once: the embedded default and a single machine;
2. otherwise the labs workers' reports, kept in the shared cache: in a deployment where
   only the labs worker may start bubblewrap (the compose file gives the seccomp and
   AppArmor settings bwrap needs to ``lab-worker`` alone), the web container cannot
   start one itself, yet the worker grades.

A labs worker (one that consumes the ``labs`` queue) reports on a heartbeat of its own:
``Heartbeat``, a thread started when the worker is ready (``labs.tasks``), checks the
sandbox and writes the answer every ``STUDY_LAB_HEARTBEAT_SECONDS`` (15), whether or
not beat runs. Two entries: ``READY_KEY``, the last time any labs worker could start a
sandbox, and ``REPORT_KEY``, the last report of any labs worker with its reason. A
report older than ``fresh_seconds()`` (four heartbeats) no longer counts, so a stopped
worker turns submissions away within a minute instead of letting them queue for ever,
and the refusal says which it is: "no labs worker has reported for N s", or the
worker's own reason ("bubblewrap (bwrap) is not installed on the labs worker").
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from typing import Any

from django.conf import settings
from django.core.cache import cache

from . import sandbox

logger = logging.getLogger(__name__)

REPORT_KEY = "labs:sandbox-report"  # {"reason": str | None, "at": float, "worker": str}
READY_KEY = "labs:sandbox-ready"  # {"at": float, "worker": str}: the last worker that can
# Kept well past freshness, so a refusal can say how long the workers have been silent.
KEEP_SECONDS = 24 * 60 * 60
DEFAULT_HEARTBEAT_SECONDS = 15.0
FRESH_HEARTBEATS = 4


def heartbeat_seconds() -> float:
    """How often a labs worker reports (``STUDY_LAB_HEARTBEAT_SECONDS``)."""
    value = getattr(settings, "STUDY_LAB_HEARTBEAT_SECONDS", DEFAULT_HEARTBEAT_SECONDS)
    return max(float(value), 0.1)


def retry_after_seconds() -> int:
    """The ``Retry-After`` of a refusal for want of a sandbox: one heartbeat, by when a
    labs worker that came back has reported."""
    return math.ceil(heartbeat_seconds())


def fresh_seconds() -> float:
    """How long a report counts: four heartbeats, so one late beat never refuses work."""
    return FRESH_HEARTBEATS * heartbeat_seconds()


def local_problem() -> str | None:
    """Why no sandbox can start in this process, in words; None when one can."""
    try:
        reason = sandbox.unavailable()
    except Exception:
        logger.exception("The sandbox check failed")
        return "the sandbox check failed; see the service's log"
    return None if reason is None else str(reason)


def report(*, now: float | None = None, worker: str = "") -> str | None:
    """Check the sandbox here and keep the answer for the web processes (the labs worker)."""
    reason = local_problem()
    stamp = time.time() if now is None else now
    kept: dict[str, Any] = {REPORT_KEY: {"reason": reason, "at": stamp, "worker": worker}}
    if reason is None:
        kept[READY_KEY] = {"at": stamp, "worker": worker}
    try:
        cache.set_many(kept, timeout=KEEP_SECONDS)
    except Exception:  # the cache is down: the web processes fall back on their own check
        logger.warning("Could not keep the sandbox report in the cache", exc_info=True)
    return reason


def _entry(kept: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = kept.get(key)
    if not isinstance(value, dict) or not isinstance(value.get("at"), int | float):
        return None
    return value


def worker_problem(*, now: float | None = None) -> tuple[str | None, bool]:
    """Why no labs worker can grade, from their reports (None when one reported it can),
    and whether that reason is a worker's own (it reported, and cannot start a sandbox)."""
    stamp = time.time() if now is None else now
    try:
        kept = cache.get_many([READY_KEY, REPORT_KEY])
    except Exception as exc:
        return f"the labs workers' reports cannot be read ({type(exc).__name__}: {exc})", False
    ready, last = _entry(kept, READY_KEY), _entry(kept, REPORT_KEY)
    fresh = fresh_seconds()
    if ready is not None and stamp - ready["at"] <= fresh:
        return None, False
    if last is not None and stamp - last["at"] <= fresh:
        if last.get("reason") is None:
            return None, False
        return f"{last['reason']} on the labs worker", True
    return _silence(stamp, ready, last), False


def _silence(stamp: float, *entries: dict[str, Any] | None) -> str:
    """How long no labs worker has reported, from the newest of their stale reports."""
    heard = max((entry["at"] for entry in entries if entry is not None), default=None)
    if heard is None:
        return "no labs worker has reported"
    return f"no labs worker has reported for {max(int(stamp - heard), 0)} s"


def sandbox_problem(*, now: float | None = None) -> str | None:
    """Why lab code cannot be graded now, in words; None when it can."""
    local = local_problem()
    if local is None:
        return None
    remote, said_by_worker = worker_problem(now=now)
    if remote is None or said_by_worker:
        return remote
    return f"{remote}, and this process cannot start a sandbox: {local}"


# --- the labs worker's heartbeat ------------------------------------------------------

# Held for a whole beat. A worker forks new pool processes from its main thread: the fork
# waits for a beat in progress to end, so no child starts with the sandbox check's lock
# (or the cache client's) held by a thread it does not have.
_beating = threading.Lock()
_fork_guarded = False


def _guard_forks() -> None:
    global _fork_guarded
    if not _fork_guarded and hasattr(os, "register_at_fork"):
        os.register_at_fork(
            before=_beating.acquire,
            after_in_parent=_beating.release,
            after_in_child=_beating.release,
        )
        _fork_guarded = True


class Heartbeat:
    """Reports this labs worker's sandbox now and then every ``interval`` seconds, from a
    daemon thread, until ``stop()``."""

    def __init__(self, *, worker: str, interval: float | None = None):
        self.worker = worker
        self.interval = heartbeat_seconds() if interval is None else interval
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.beats = 0

    def beat(self) -> str | None:
        with _beating:
            try:
                return report(worker=self.worker)
            except Exception:  # never let one bad beat end the heartbeat
                logger.exception("The labs worker's sandbox report failed")
                return "the report failed"
            finally:
                self.beats += 1

    def start(self) -> None:
        _guard_forks()
        reason = self.beat()  # at once, not an interval later
        logger.info(
            "Labs heartbeat every %.0f s from %s: %s",
            self.interval,
            self.worker or "this worker",
            "a sandbox starts" if reason is None else reason,
        )
        self._thread = threading.Thread(target=self._run, name="labs-heartbeat", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.wait(self.interval):
            self.beat()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


_heartbeat: Heartbeat | None = None


def start_heartbeat(*, worker: str) -> Heartbeat:
    """Start this process's heartbeat (once; a second call returns the running one)."""
    global _heartbeat
    if _heartbeat is None or not _heartbeat.alive:
        _heartbeat = Heartbeat(worker=worker)
        _heartbeat.start()
    return _heartbeat


def stop_heartbeat() -> None:
    global _heartbeat
    if _heartbeat is not None:
        _heartbeat.stop()
        _heartbeat = None
