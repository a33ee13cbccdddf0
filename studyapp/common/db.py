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
import time
from collections.abc import Callable
from typing import Literal, ParamSpec, TypeVar

from django.db import DatabaseError, transaction

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

Fault = Literal["conflict", "timeout", "unavailable"]

CONFLICT_SQLSTATES = frozenset({"40P01", "40001"})  # deadlock_detected, serialization_failure
TIMEOUT_SQLSTATES = frozenset({"57014", "55P03"})  # query_canceled, lock_not_available

# Runs of a write transaction in all, the first included, before the conflict is let go
# (then a 503 with a short Retry-After). A lost run costs a few milliseconds.
CONFLICT_ATTEMPTS = 4


def _sqlstate(error: BaseException) -> str | None:
    # Django re-raises the driver's error with the original as its cause; psycopg 3
    # names the code ``sqlstate``, psycopg2 ``pgcode``.
    for candidate in (error.__cause__, error):
        code = getattr(candidate, "sqlstate", None) or getattr(candidate, "pgcode", None)
        if code:
            return str(code)
    return None


def database_fault(error: BaseException) -> Fault:
    """Why a database error ended a request: a lost race, a timeout, or no database."""
    code = _sqlstate(error)
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
