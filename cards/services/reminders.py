"""Daily review reminders by e-mail: at most one per learner per study day.

This module is the reminder pass's entry point; read it top to bottom from
:func:`reminder_pass_here`. The pass, step by step:

1. :func:`reminder_chunks` (the beat task ``send_due_reminders`` in ``cards/tasks.py``):
   nothing while no group's reminder hour has come; otherwise the recipients' ids cut
   into ranges of ~500 (``scheduling.id_ranges``), one chunk task each.
2. :func:`send_reminders_chunk`, for one range of learners (a worker each, or one after
   another in this process with :func:`reminder_pass_here`):

   a. ``reminder_claims.due_groups``: the ``(timezone, day_starts_at, reminder_hour)``
      groups among the chunk's recipients (reminders on, an active account, a confirmed
      address: ``reminder_claims.recipients``) whose reminder is due now, each with its
      study day (``ladder.reminder_day``: when a reminder is due is said there);
   b. ``cards.db.placement.groups_table``: up to ``GROUPS_PER_STATEMENT`` of them as a
      derived table, so each next step is one statement whatever the number of learners;
   c. ``reminder_claims.reclaim_stale``: take over the claims a crashed pass left
      unsent, counting the due cards afresh;
   d. ``reminder_claims.claim_new``: claim a reminder for every recipient of those
      groups with a card due (the count is ``cards.db.queue.due_count_sql``, the due
      queue of ``cards.due`` in SQL) and none claimed yet for the day;
   e. :func:`_send_claimed`, after each claim statement: send each claimed reminder
      (:func:`reminder_message`), renew the claims' lease while sending (:class:`_Lease`)
      and stamp ``sent_at`` on those sent (:class:`_Stamps`).

Exactly once
    A pass claims reminders by inserting the unique ``Reminder(learner,
    study_day)`` rows first (``INSERT ... SELECT ... ON CONFLICT DO NOTHING
    RETURNING``): only the rows this statement inserted come back, so two passes
    (a redelivered task, a second beat) never claim the same learner. ``created_at``
    of an unsent row is the time of its latest claim, a lease: while a pass works
    through its batch it renews the lease of the rows it still holds every quarter
    of ``retry_after`` with a compare-and-set on the value it wrote (a row whose
    value changed was taken over and is skipped), and stamps ``sent_at`` right
    after the sends, in small groups bounded by count and time (:class:`_Stamps`).
    A claim left unsent by a crash (``sent_at`` NULL) is taken over once its lease
    is ``retry_after`` old, by a conditional ``UPDATE`` only one pass can win; it
    counts the due cards afresh and skips a learner with none left. A failed send
    (an SMTP error) leaves its claim unsent, so it is retried that way; several
    failures in a row end the pass. A single send must take less than
    ``retry_after`` (set ``EMAIL_TIMEOUT``), or a slow pass and its successor may
    both send it.
    A crash between handing messages to the mail server and stamping their group
    sends that group twice (at most ``STUDY_REMINDER_STAMP_EVERY`` messages, sent
    within ``STUDY_REMINDER_STAMP_WITHIN_MS``); nothing can close that gap with SMTP.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import EmailMessage, get_connection
from django.template.loader import get_template
from django.urls import reverse

from ..db import reminders as reminder_rows
from ..db.placement import GROUPS_PER_STATEMENT, groups_table
from ..metrics import REMINDERS_SENT
from ..models import Reminder
from .reminder_claims import ReminderClaim, claim_new, due_groups, recipients, reclaim_stale
from .scheduling import id_ranges

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 500
# A chunk's time limits (the task cards.tasks.send_reminders_chunk): past the soft one
# it stops between two messages and stamps what it sent; at the hard one its worker is
# killed, and what it had claimed waits out the lease below.
CHUNK_SOFT_TIME_LIMIT = dt.timedelta(minutes=5)
CHUNK_TIME_LIMIT = dt.timedelta(minutes=6)
# A claim's lease, the pass's ``retry_after`` unless the beat's kwarg sets one. A live
# chunk renews it every quarter of this (90 s) between sends, so a slow pass is never
# overtaken. A chunk renews for CHUNK_TIME_LIMIT at most: killed then, having started
# within 3 minutes of its pass, its claims are past their lease by the next 15-minute
# pass (3 + 6 + 6 minutes), which takes its learners over (docs/operations.md).
DEFAULT_RETRY_AFTER = dt.timedelta(minutes=6)
# Failed sends in a row after which a pass stops: the mail server is most likely
# down, and every further try could wait out a whole connection timeout. The claims
# left unsent are retried after ``retry_after``, unclaimed learners by the next pass.
MAX_CONSECUTIVE_FAILURES = 3


class MailUnavailable(Exception):
    """Several sends in a row failed; ``sent`` counts what the batch sent before."""

    def __init__(self, sent: int):
        self.sent = sent
        super().__init__(f"{MAX_CONSECUTIVE_FAILURES} reminders in a row could not be sent")


Clock = Callable[[], dt.datetime]


@dataclass(frozen=True)
class ReminderTemplates:
    """The reminder's templates, compiled once per chunk rather than once per message."""

    subject: Any
    body: Any
    review_url: str
    profile_url: str

    @classmethod
    def load(cls) -> ReminderTemplates:
        return cls(
            subject=get_template("email/reminder_subject.txt"),
            body=get_template("email/reminder_body.txt"),
            review_url=settings.SITE_URL + reverse("review"),
            profile_url=settings.SITE_URL + reverse("profile"),
        )


def reminder_message(
    *,
    learner: Any,
    claim: ReminderClaim,
    mail_connection: Any = None,
    templates: ReminderTemplates | None = None,
) -> EmailMessage:
    templates = templates or ReminderTemplates.load()
    context = {
        "learner": learner,
        "due_count": claim.due_count,
        "study_day": claim.study_day,
        "review_url": templates.review_url,
        "profile_url": templates.profile_url,
    }
    subject = " ".join(templates.subject.render(context).split())
    body = templates.body.render(context)
    return EmailMessage(
        subject=subject,
        body=body,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[learner.email],
        connection=mail_connection,
    )


def _renew(reminder_ids: list[int], *, lease: dt.datetime, now: dt.datetime) -> set[int]:
    """Move the lease of the claims still held under ``lease`` to ``now``; returns their ids.

    A claim another pass has taken over, or sent, is not renewed and drops out.
    """
    return reminder_rows.renew(reminder_ids, lease=lease, now=now)


def _close_quietly(mail: Any) -> None:
    try:
        mail.close()
    except Exception:
        logger.warning("Closing the mail connection failed", exc_info=True)


def _stamp(reminder_ids: list[int], *, at: dt.datetime) -> None:
    if reminder_ids:
        Reminder.objects.filter(pk__in=reminder_ids, sent_at__isnull=True).update(sent_at=at)


def _send_one(
    mail: Any, *, learner: Any, claim: ReminderClaim, templates: ReminderTemplates
) -> bool:
    """Hand one reminder to the mail server; False (logged, connection closed) if that failed."""
    try:
        mail.open()  # a no-op while open; reconnects after a failed send
        message = reminder_message(
            learner=learner, claim=claim, mail_connection=mail, templates=templates
        )
        mail.send_messages([message])
    except SoftTimeLimitExceeded:
        # The task must stop now; this claim is retried after retry_after.
        raise
    except Exception:
        logger.exception(
            "Reminder to learner %s for %s not sent; it will be retried",
            claim.learner_id,
            claim.study_day,
        )
        # A failed conversation can leave the connection unusable (SMTP keeps a
        # dropped socket), which would fail every later message.
        _close_quietly(mail)
        return False
    return True


@dataclass
class _Lease:
    """The claim time a pass wrote, and the claims it still holds under it."""

    at: dt.datetime
    every: dt.timedelta
    held: set[int]

    def renew(self, pending: Sequence[ReminderClaim], now: dt.datetime) -> None:
        """Past ``every`` since the last renewal, move the lease of ``pending`` to ``now``."""
        if now - self.at >= self.every:
            ids = [c.reminder_id for c in pending if c.reminder_id in self.held]
            self.held = _renew(ids, lease=self.at, now=now)
            self.at = now


@dataclass
class _Stamps:
    """Sent reminders awaiting their ``sent_at``, stamped together in one ``UPDATE``.

    A group is stamped once it holds ``every`` reminders or once ``within`` has
    passed since the first of them began sending, whichever comes first, and
    whatever is left when the batch stops (:meth:`flush`). A send slower than
    ``within`` is therefore stamped on its own as soon as the server takes it.
    """

    every: int
    within: dt.timedelta
    ids: list[int] = field(default_factory=list)
    since: dt.datetime | None = None

    def sending(self, now: dt.datetime) -> None:
        if self.since is None:
            self.since = now

    def sent(self, reminder_id: int, now: dt.datetime) -> None:
        self.ids.append(reminder_id)
        began = self.since or now
        if len(self.ids) >= self.every or now - began >= self.within:
            self.flush(now)

    def failed(self) -> None:
        if not self.ids:
            self.since = None

    def flush(self, now: dt.datetime) -> None:
        _stamp(self.ids, at=now)
        self.ids = []
        self.since = None


def _send_claimed(
    claims: list[ReminderClaim],
    *,
    lease: dt.datetime,
    clock: Clock,
    retry_after: dt.timedelta,
) -> int:
    """Send each claimed reminder and stamp it; a failed send stays claimed for a retry.

    ``lease`` is the claim time this pass wrote. While the batch is being sent,
    the claims not yet sent are renewed every quarter of ``retry_after``, so no
    other pass sees them as abandoned, and any row found taken over is skipped.
    One mail connection and one compilation of the templates serve the batch, one
    ``send_messages`` call each message (so a failure names its message). Sent
    reminders are stamped in groups (:class:`_Stamps`) of at most
    ``STUDY_REMINDER_STAMP_EVERY`` messages sent within
    ``STUDY_REMINDER_STAMP_WITHIN_MS``: a worker killed outright resends at most
    the one group it had not stamped. ``MAX_CONSECUTIVE_FAILURES`` failed sends in a
    row raise ``MailUnavailable``.
    """
    if not claims:
        return 0
    users = get_user_model().objects.in_bulk([c.learner_id for c in claims])
    templates = ReminderTemplates.load()
    hold = _Lease(at=lease, every=retry_after / 4, held={c.reminder_id for c in claims})
    stamps = _Stamps(
        every=settings.STUDY_REMINDER_STAMP_EVERY,
        within=dt.timedelta(milliseconds=settings.STUDY_REMINDER_STAMP_WITHIN_MS),
    )
    sent = failures = 0
    mail = get_connection()
    try:
        for position, claim in enumerate(claims):
            hold.renew(claims[position:], clock())
            learner = users.get(claim.learner_id)
            if learner is None or claim.reminder_id not in hold.held:
                continue
            stamps.sending(clock())
            if not _send_one(mail, learner=learner, claim=claim, templates=templates):
                stamps.failed()
                failures += 1
                if failures >= MAX_CONSECUTIVE_FAILURES:
                    raise MailUnavailable(sent)
                continue
            failures = 0
            sent += 1
            stamps.sent(claim.reminder_id, clock())
    finally:
        stamps.flush(clock())
        _close_quietly(mail)
    REMINDERS_SENT.inc(sent)
    return sent


def running_clock(at: dt.datetime) -> Clock:
    """A pass's own time line: ``at`` plus the time spent since this call."""
    started = time.monotonic()

    def clock() -> dt.datetime:
        return at + dt.timedelta(seconds=time.monotonic() - started)

    return clock


def reminder_chunks(
    *, at: dt.datetime, chunk_size: int = DEFAULT_BATCH_SIZE
) -> list[tuple[int, int | None]]:
    """Ranges ``(after, up_to]`` of learner ids, ~``chunk_size`` recipients each, for a pass.

    Empty while no group's reminder is due, so an idle beat enqueues nothing.
    """
    if not due_groups(at=at):
        return []
    return list(id_ranges(recipients(), "user_id", chunk_size))


def send_reminders_chunk(
    *,
    at: dt.datetime,
    after: int,
    up_to: int | None,
    retry_after: dt.timedelta = DEFAULT_RETRY_AFTER,
    clock: Clock | None = None,
) -> int:
    """Send the reminders due at ``at`` to learners with ``after < id <= up_to``; returns how many.

    Per group statement: one takeover of stale claims and one claim of new ones
    (each counting the due cards in the same statement), then the sends. Any worker
    may run any chunk, concurrently or twice: the claims keep each reminder to one.
    """
    groups = due_groups(at=at, after=after, up_to=up_to)
    clock = clock or running_clock(at)
    sent = 0
    for start in range(0, len(groups), GROUPS_PER_STATEMENT):
        table, table_params = groups_table(
            groups[start : start + GROUPS_PER_STATEMENT],
            ("tz", "day_start", "hour", "study_day"),
        )
        lease = clock()
        stale = reclaim_stale(
            table=table,
            table_params=table_params,
            at=lease,
            retry_after=retry_after,
            after=after,
            up_to=up_to,
        )
        sent += _send_claimed(stale, lease=lease, clock=clock, retry_after=retry_after)
        lease = clock()
        claims = claim_new(
            table=table, table_params=table_params, at=lease, after=after, up_to=up_to
        )
        sent += _send_claimed(claims, lease=lease, clock=clock, retry_after=retry_after)
    return sent


def reminder_pass_here(
    *,
    at: dt.datetime,
    batch_size: int = DEFAULT_BATCH_SIZE,
    retry_after: dt.timedelta = DEFAULT_RETRY_AFTER,
) -> int:
    """Send every reminder due at ``at`` in this process, chunk after chunk; returns how many.

    The beat task fans the same chunks out to the workers instead. Safe to run
    concurrently and to rerun.
    """
    clock = running_clock(at)
    sent = 0
    try:
        for after, up_to in reminder_chunks(at=at, chunk_size=batch_size):
            sent += send_reminders_chunk(
                at=at, after=after, up_to=up_to, retry_after=retry_after, clock=clock
            )
    except MailUnavailable as exc:
        sent += exc.sent
        logger.error(
            "Stopped the reminder pass after %s; unsent claims are retried after %s",
            exc,
            retry_after,
        )
    if sent:
        logger.info("Sent %d review reminders", sent)
    return sent
