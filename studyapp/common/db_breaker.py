"""A circuit breaker for a database that stopped answering: 503 at once, probed in the background.

A frozen PostgreSQL (a SIGSTOP, a VM paused, a network path that drops packets) makes
every new connection wait libpq's ``connect_timeout`` (``STUDY_DB_CONNECT_TIMEOUT``,
3 s) before it fails, and every query on a kept connection wait its client deadline
(``studyapp.common.db.query_deadline``). Each request would hold a worker that long
only to answer 503. After one such failure this process's breaker *opens*: requests
answer 503 with ``Retry-After`` without touching the database
(``studyapp.middleware.DatabaseOutageMiddleware``), and one probe thread per process
tries a fresh connection every ``STUDY_DB_BREAKER_SECONDS`` (5 s). The first probe that
connects and runs ``SELECT 1`` closes the breaker; a probe that fails keeps it open for
another window. Each opening is logged once, at ERROR, and the recovery at INFO;
``/readyz`` reports an open breaker without asking the database.

A probe in the background rather than a half-open trial request: against a frozen
server the trial itself waits the whole connect timeout, so one request every window
would still hold a worker for 3 s and its client for longer. The probe pays that wait
on a thread of its own, and requests never do.

What opens the breaker (:func:`is_connection_failure`): a connection that could not be
made or was lost (no SQLSTATE, or class 08, a server shutting down or starting, too
many connections), on PostgreSQL. A statement or lock timeout, a conflict, a full disk
or a constraint say nothing of whether the server answers, and leave it closed. The
state lives in the process: each gunicorn worker learns of an outage by its own first
failure, and SQLite, a file beside the process, has no breaker.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

from django.db import DatabaseError, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from studyapp.common.db import query_deadline, sqlstate

logger = logging.getLogger(__name__)

# PostgreSQL's answers that mean "no connection": connection exceptions (class 08),
# admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections.
CONNECTION_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300"})
# A probe's SELECT 1 on a connection that opened and then froze ends within this.
PROBE_QUERY_SECONDS = 2.0


def is_connection_failure(error: BaseException, wrapper: BaseDatabaseWrapper) -> bool:
    """Whether ``error``, met on ``wrapper`` (Django's connection), says the database could
    not be reached: a PostgreSQL error of a connection (see the module docstring) whose
    connection never opened or is now broken. An error raised on a sound connection (a
    test's stand-in, a driver's bug) opens nothing."""
    if wrapper.vendor != "postgresql":
        return False
    code = sqlstate(error)
    if not (code is None or code.startswith("08") or code in CONNECTION_SQLSTATES):
        return False
    raw = wrapper.connection
    return raw is None or bool(getattr(raw, "broken", False) or getattr(raw, "closed", False))


class DatabaseBreaker:
    """Open from a connection failure until a probe reaches the database again.

    ``clock`` is a monotonic clock in seconds (passed in so tests can move time).
    """

    def __init__(self, *, alias: str = "default", clock: Callable[[], float] = time.monotonic):
        self.alias = alias
        self.clock = clock
        self._lock = threading.Lock()
        self._opened_at: float | None = None  # None: closed
        self._next_probe_at = 0.0
        self._window = 0.0
        self.openings = 0
        self.refused = 0  # requests answered without the database, while open
        self.last_error = ""

    @property
    def is_open(self) -> bool:
        return self._opened_at is not None

    def retry_after(self) -> int | None:
        """None while closed; while open, whole seconds until the next probe (at least 1)."""
        if self._opened_at is None:
            return None
        with self._lock:
            self.refused += 1
        return max(1, math.ceil(self._next_probe_at - self.clock()))

    def trip(self, error: BaseException, *, window: float) -> bool:
        """Open (or keep open) after ``error``; True when this call opened it."""
        with self._lock:
            now = self.clock()
            opening = self._opened_at is None
            if opening:
                # A failure met while open (a request begun before) does not put the
                # probe off.
                self._opened_at = now
                self.openings += 1
                self._window = window
                self._next_probe_at = now + window
            self.last_error = f"{type(error).__name__}: {error}".strip()[:200]
        if opening:
            logger.error(
                "Database %r unreachable (%s); answering 503 without asking it, probing every %g s",
                self.alias,
                self.last_error,
                window,
            )
        return opening

    def seconds_to_probe(self) -> float:
        return max(0.0, self._next_probe_at - self.clock())

    def probe_failed(self, error: BaseException) -> None:
        with self._lock:
            self._next_probe_at = self.clock() + self._window
            self.last_error = f"{type(error).__name__}: {error}".strip()[:200]
        logger.warning("Database %r still unreachable: %s", self.alias, self.last_error)

    def close(self) -> None:
        with self._lock:
            opened_at, self._opened_at = self._opened_at, None
        if opened_at is not None:
            logger.info(
                "Database %r answers again after %.1f s; %d requests were answered 503 meanwhile",
                self.alias,
                self.clock() - opened_at,
                self.refused,
            )

    def describe(self) -> str:
        """Why the breaker is open, for /readyz."""
        opened_at = self._opened_at
        if opened_at is None:
            return "closed"
        return (
            f"unreachable for {self.clock() - opened_at:.0f} s ({self.last_error}); "
            f"requests answer 503 until a probe reaches it, next in "
            f"{self.seconds_to_probe():.0f} s"
        )


def run_probes(
    breaker: DatabaseBreaker,
    probe: Callable[[], None],
    *,
    wait: Callable[[float], object] = time.sleep,
) -> None:
    """Probe until the database answers: the probe thread's loop (tests pass ``wait``)."""
    while breaker.is_open:
        wait(breaker.seconds_to_probe())
        try:
            probe()
        except Exception as error:
            breaker.probe_failed(error)
        else:
            breaker.close()


def probe_database(alias: str = "default") -> None:
    """Open a fresh connection to ``alias`` as requests do, run ``SELECT 1``, close it.

    A connection of its own, not the thread's: the probe runs beside requests. The
    query has a client-side deadline too, for a server that froze once connected.
    """
    probe = connections.create_connection(alias)
    try:
        with probe.execute_wrapper(query_deadline(PROBE_QUERY_SECONDS)), probe.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    finally:
        try:
            probe.close()
        except DatabaseError:
            logger.debug("Closing the probe's connection failed", exc_info=True)


class ProcessBreaker:
    """The breaker of one alias in this process, with its probe thread."""

    def __init__(
        self,
        *,
        alias: str = "default",
        clock: Callable[[], float] = time.monotonic,
        probe: Callable[[], None] | None = None,
    ) -> None:
        self.breaker = DatabaseBreaker(alias=alias, clock=clock)
        self._probe = probe or (lambda: probe_database(alias))
        self._thread: threading.Thread | None = None
        self._thread_lock = threading.Lock()

    def failed(self, error: BaseException, *, window: float) -> None:
        """A request met ``error``, a connection failure: open, and make sure a probe runs."""
        self.breaker.trip(error, window=window)
        with self._thread_lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._probe_until_closed,
                    name=f"db-breaker-probe-{self.breaker.alias}",
                    daemon=True,
                )
                self._thread.start()

    def _probe_until_closed(self) -> None:
        while True:
            run_probes(self.breaker, self._probe)
            # Under the lock: a trip that came after the last probe closed the breaker
            # either finds this thread still here (and it probes again) or none.
            with self._thread_lock:
                if not self.breaker.is_open:
                    self._thread = None
                    return

    def join(self, timeout: float | None = None) -> None:
        """Wait for the probe thread to end (tests)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    @property
    def probing(self) -> bool:
        return self._thread is not None


default = ProcessBreaker()
