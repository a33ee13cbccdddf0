"""Mail that a request asks for, sent by a worker after the answer.

A password reset answers 202 at once and the mail goes out here: the request does
the same work whether or not the address has an account (it only enqueues), so its
time says nothing about which addresses are known. The task may run twice (a
redelivery after a lost worker): that mails a second link, and either link works once.

Registered with Celery as ``cards.tasks`` are (``shared_task``); the worker imports
this module at start through ``CELERY_IMPORTS``, and the views that enqueue import it.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import transaction

from .services import accounts
from .services.scheduling import PUBLISH_ONCE

logger = logging.getLogger(__name__)


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=60, time_limit=90)
def send_password_reset_mail(email: str) -> int:
    """Mail a reset link to every active account with ``email``; the number sent."""
    return accounts.password_reset_mail_send(email=email)


def enqueue_password_reset_mail(*, email: str) -> None:
    """Ask a worker to mail the reset link once the current transaction commits.

    Never raises: with the broker down the request still answers, and the failure is
    logged (without the address) so the learner's retry is the way back.
    """
    transaction.on_commit(lambda: _publish(email))


def _publish(email: str) -> None:
    try:
        send_password_reset_mail.apply_async(
            kwargs={"email": email}, retry=True, retry_policy=PUBLISH_ONCE
        )
    except Exception as exc:
        logger.warning("Could not enqueue a password reset mail (%s: %s)", type(exc).__name__, exc)
