"""What a database error means for the request, and write transactions run again when
they lost a race to another writer.

PostgreSQL ends one of two transactions that wait on each other (a deadlock, SQLSTATE
40P01) and, at stricter isolation, one that read what another changed (a serialization
failure, 40001). Neither says anything about the database's health: the transaction,
rolled back whole, is simply run again. A statement cut by ``statement_timeout``
(57014) or ``lock_timeout`` (55P03) is a database too slow to answer in time.
"""

from __future__ import annotations

import functools
import logging
import random
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Literal, ParamSpec, TypeVar

from django.conf import settings
from django.db import DatabaseError, connections, transaction

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

Fault = Literal["conflict", "timeout", "unavailable"]

CONFLICT_SQLSTATES = frozenset({"40P01", "40001"})  # deadlock_detected, serialization_failure
TIMEOUT_SQLSTATES = frozenset({"57014", "55P03"})  # query_canceled, lock_not_available

# Runs of a write transaction in all, the first included, before the conflict is let go
# (then a 503 with a short Retry-After). A lost run costs a few milliseconds.
CONFLICT_ATTEMPTS = 4


def sqlstate(error: BaseException) -> str | None:
    """The SQLSTATE of a database error, or None when it carries none."""
    # Django re-raises the driver's error with the original as its cause; psycopg 3
    # names the code ``sqlstate``, psycopg2 ``pgcode``.
    for candidate in (error.__cause__, error):
        code = getattr(candidate, "sqlstate", None) or getattr(candidate, "pgcode", None)
        if code:
            return str(code)
    return None


def database_fault(error: BaseException) -> Fault:
    """Why a database error ended a request: a lost race, a timeout, or no database."""
    code = sqlstate(error)
    if code in CONFLICT_SQLSTATES:
        return "conflict"
    if code in TIMEOUT_SQLSTATES:
        return "timeout"
    return "unavailable"


def retried_on_conflict(func: Callable[P, R]) -> Callable[P, R]:
    """Run ``func`` (a whole transaction) again when it lost a deadlock or serialization race.

    Only the outermost transaction can be run again: inside a caller's ``atomic`` block
    the conflict has already doomed the caller's work, so it is raised at once. Put it
    outside ``@transaction.atomic``.
    """

    @functools.wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        attempt = 1
        while True:
            try:
                return func(*args, **kwargs)
            except DatabaseError as error:
                if (
                    database_fault(error) != "conflict"
                    or attempt >= CONFLICT_ATTEMPTS
                    or transaction.get_connection().in_atomic_block
                ):
                    raise
                logger.info(
                    "%s lost a write conflict (attempt %d of %d), running it again: %s",
                    func.__qualname__,
                    attempt,
                    CONFLICT_ATTEMPTS,
                    str(error).splitlines()[0] if str(error) else type(error).__name__,
                )
            # Jitter, so two losers of the same race do not meet again at once.
            time.sleep(random.uniform(0, 0.005 * 2**attempt))
            attempt += 1

    return run


# --- A client-side deadline for queries -------------------------------------------------
# statement_timeout and lock_timeout are kept by the server: a PostgreSQL that is stopped
# outright (SIGSTOP, a frozen VM) keeps none of them, while the kernel still accepts the
# query's bytes, so the client would wait on its socket for as long as the freeze lasts.
# A query that outlives its deadline has its socket shut down by a watchdog thread:
# the driver then fails it at once (a connection error, so a 503) and Django drops the
# connection at the end of the request.

WATCHDOG_TICK_SECONDS = 0.25


class QueryWatchdog:
    """Shuts down the socket of a query still running past its deadline."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[int, tuple[float, int]] = {}  # token -> (deadline, socket fd)
        self._next_token = 0
        self._thread: threading.Thread | None = None
        self.cut = 0  # queries cut so far (for tests and logs)

    def watch(self, fd: int, seconds: float) -> int:
        with self._lock:
            self._next_token += 1
            token = self._next_token
            self._running[token] = (time.monotonic() + seconds, fd)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._patrol, name="query-watchdog", daemon=True
                )
                self._thread.start()
        return token

    def release(self, token: int) -> None:
        with self._lock:
            self._running.pop(token, None)

    def _patrol(self) -> None:
        while True:
            time.sleep(WATCHDOG_TICK_SECONDS)
            now = time.monotonic()
            # Under the lock: a query released meanwhile keeps its socket, and a socket
            # is only shut down while its query still holds it open.
            with self._lock:
                for token, (deadline, fd) in list(self._running.items()):
                    if now >= deadline:
                        del self._running[token]
                        self._cut(fd)

    def _cut(self, fd: int) -> None:
        try:
            # A duplicate of the descriptor: shutting it down shuts the shared socket,
            # and closing the duplicate leaves the driver's descriptor to the driver.
            with socket.fromfd(fd, socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            return
        self.cut += 1
        logger.error("A database query outlived its deadline; its connection was cut")


watchdog = QueryWatchdog()


def query_deadline(seconds: float) -> Callable[..., Any]:
    """A Django ``execute_wrapper``: each query of the block ends within ``seconds``."""

    def wrapper(execute: Callable[..., Any], sql: Any, params: Any, many: bool, context: Any):
        raw = getattr(context["connection"], "connection", None)
        pgconn = getattr(raw, "pgconn", None)  # psycopg 3; other drivers are left alone
        if pgconn is None:
            return execute(sql, params, many, context)
        token = watchdog.watch(pgconn.socket, seconds)
        try:
            return execute(sql, params, many, context)
        finally:
            watchdog.release(token)

    return wrapper


# --- Statement timeouts by role -----------------------------------------------------------


def serve_requests_with_web_timeouts() -> None:
    """Switch this process's connections to the request statement timeout.

    Connections open with the job statement timeout (settings: tasks, commands, scripts
    run long statements); a process that serves requests calls this once, where it loads
    the WSGI application, before it serves any. Connections read their options when they
    open, so one already open (runserver's migration check) is closed, unless it is inside
    a transaction (a test that loads the application keeps its own).
    """
    web_options = getattr(settings, "STUDY_DB_WEB_OPTIONS", None)
    if web_options is None:  # not PostgreSQL
        return
    settings.DATABASES["default"]["OPTIONS"]["options"] = web_options
    for opened in connections.all(initialized_only=True):
        if not opened.in_atomic_block:
            opened.close()
