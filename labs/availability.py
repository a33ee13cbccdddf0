"""Whether lab code can be graded: a sandbox here, or a labs worker that reports one.

Submissions are refused with 503 when no sandbox can run them. The web process asks
``sandbox_problem()``:

1. a sandbox this process can start (``labs.sandbox.unavailable``, a real start, cached
   briefly) answers at once: the embedded default and a single machine;
2. otherwise the labs worker's last report, kept in the shared cache: in a deployment
   where only the labs worker may start bubblewrap (the compose file gives the seccomp and
   AppArmor settings bwrap needs to ``lab-worker`` alone), the web container cannot start
   one itself, yet the worker grades. The worker reports on start and every minute
   (``labs.tasks.report_sandbox``, a beat job routed to the labs queue); a report older
   than ``REPORT_FRESH_SECONDS`` no longer counts, so a stopped worker turns submissions
   away within a few minutes instead of letting them queue for ever.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.core.cache import cache

from . import sandbox

logger = logging.getLogger(__name__)

REPORT_KEY = "labs:sandbox-report"
REPORT_FRESH_SECONDS = 5 * 60


def local_problem() -> str | None:
    """Why no sandbox can start in this process, in words; None when one can."""
    try:
        reason = sandbox.unavailable()
    except Exception:
        logger.exception("The sandbox check failed")
        return "the sandbox check failed; see the service's log"
    return None if reason is None else str(reason)


def report(*, now: float | None = None) -> str | None:
    """Check the sandbox here and keep the answer for the web processes (the labs worker)."""
    reason = local_problem()
    stamp = time.time() if now is None else now
    try:
        cache.set(REPORT_KEY, {"reason": reason, "at": stamp}, timeout=REPORT_FRESH_SECONDS)
    except Exception:  # the cache is down: the web processes fall back on their own check
        logger.warning("Could not keep the sandbox report in the cache", exc_info=True)
    return reason


def worker_report(*, now: float | None = None) -> dict[str, Any] | None:
    """The labs worker's last report, when fresh: ``{"reason": str | None, "at": float}``."""
    try:
        kept = cache.get(REPORT_KEY)
    except Exception:
        return None
    if not isinstance(kept, dict) or not isinstance(kept.get("at"), int | float):
        return None
    stamp = time.time() if now is None else now
    if stamp - kept["at"] > REPORT_FRESH_SECONDS:
        return None
    return kept


def sandbox_problem(*, now: float | None = None) -> str | None:
    """Why lab code cannot be graded now, in words; None when it can."""
    local = local_problem()
    if local is None:
        return None
    kept = worker_report(now=now)
    if kept is None:
        return local
    if kept.get("reason") is None:
        return None
    return str(kept["reason"])
