"""Password hashing bounded per process, so that log-ins wait their turn instead of
taking every CPU the reviews need.

A PBKDF2 hashing costs 240-250 ms of CPU (Django's 1,000,000 iterations); every log-in,
sign-up, password check and password change does one, and so does a log-in for an
unknown username (Django hashes once to answer in the same time). Here a process runs
``STUDY_HASH_CONCURRENCY`` (1) at once; up to ``STUDY_HASH_WAITING`` (2) more wait for
one in turn, and one more is ``HashingBusy``, which ``RequestGuardMiddleware`` answers
with a 503 and ``Retry-After`` before any password is compared (nothing is counted
against the username then). That bounds a threaded server (``runserver``, a threaded
worker); a sync gunicorn worker hashes one at a time by itself, and what keeps log-ins
from taking every worker is nginx in front, which passes the log-in paths' POSTs on at
``STUDY_PROXY_LOGINS_PER_SECOND``, all addresses together, and keeps the rest waiting
there, never in a worker (docs/security.md, "Cost bounds").

The hashes are Django's own (``pbkdf2_sha256``, the same iterations and format): only
where the work runs changes.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.core.signals import setting_changed
from django.dispatch import receiver

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 1
BUSY_DETAIL = (
    "Too many log-ins are being checked at once; nothing was checked or counted. "
    f"Try again in {RETRY_AFTER_SECONDS} s."
)


class HashingBusy(Exception):
    """Every hashing slot and waiting place of this process is taken."""


class HashingQueue:
    """At most ``concurrency`` hashings at once and ``waiting`` more in line."""

    def __init__(self, concurrency: int, waiting: int):
        self.concurrency, self.waiting = concurrency, waiting
        self._places = threading.BoundedSemaphore(concurrency + waiting)
        self._slots = threading.BoundedSemaphore(concurrency)

    def taken(self) -> int:
        """Hashings running or waiting in this process now."""
        return self.concurrency + self.waiting - self._places._value  # type: ignore[attr-defined]

    def run(self, work, *args):
        if not self._places.acquire(blocking=False):
            logger.warning(
                "Password hashing refused: %d running and %d waiting in this process",
                self.concurrency,
                self.waiting,
            )
            raise HashingBusy
        try:
            with self._slots:
                return work(*args)
        finally:
            self._places.release()


_queue: HashingQueue | None = None
_queue_lock = threading.Lock()


def hashing_queue() -> HashingQueue:
    global _queue
    with _queue_lock:
        if _queue is None:
            _queue = HashingQueue(
                max(1, settings.STUDY_HASH_CONCURRENCY), max(0, settings.STUDY_HASH_WAITING)
            )
        return _queue


@receiver(setting_changed)
def _hash_settings_changed(*, setting: str, **kwargs) -> None:
    global _queue
    if setting.startswith("STUDY_HASH_"):
        with _queue_lock:
            _queue = None


class QueuedPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """Django's PBKDF2-SHA256 hasher, run through the process's ``hashing_queue``."""

    def encode(self, password, salt, iterations=None):
        encode = super().encode
        return hashing_queue().run(encode, password, salt, iterations)
