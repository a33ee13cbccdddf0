"""Daily review reminders by e-mail: at most one per learner per study day.

When a reminder is due
    A learner's study day ``D`` starts at local ``day_starts_at`` o'clock. Its
    reminder is due from the first time the local clock reads ``reminder_hour``
    on or after that start, until the day ends. With ``reminder_hour >=
    day_starts_at`` that is ``reminder_hour`` on the calendar date ``D``; with
    ``reminder_hour < day_starts_at`` (say 02:00 with days starting at 04:00) it
    is ``reminder_hour`` on the next calendar date, still inside study day ``D``.
    Equivalently: the local wall time, shifted back by ``day_starts_at`` hours,
    is at least ``(reminder_hour - day_starts_at) mod 24`` hours into ``D``.
    Wall time makes DST changes behave as a learner expects: a reminder hour
    skipped by a spring-forward goes out at the first pass after the gap, and a
    repeated hour in the autumn sends once. (A reminder hour that is skipped and
    also the last hour before the day starts has no instant in that study day;
    that one reminder is not sent.) A learner gets a reminder only with
    ``reminders`` on, an e-mail address, an active account, and at least one
    card due on ``D`` (active card, enrolled deck, ``due_on <= D``).

Exactly once
    A pass claims reminders by inserting the unique ``Reminder(learner,
    study_day)`` rows first (``INSERT ... SELECT ... ON CONFLICT DO NOTHING
    RETURNING``): only the rows this statement inserted come back, so two passes
    (a redelivered task, a second beat) never claim the same learner. ``created_at``
    of an unsent row is the time of its latest claim, a lease: while a pass works
    through its batch it renews the lease of the rows it still holds every quarter
    of ``retry_after`` with a compare-and-set on the value it wrote (a row whose
    value changed was taken over and is skipped), and stamps ``sent_at`` right
    after each send. A claim left unsent by a crash (``sent_at`` NULL) is taken
    over once its lease is ``retry_after`` old, by a conditional ``UPDATE`` only
    one pass can win; it counts the due cards afresh and skips a learner with
    none left. A failed send (an SMTP error) leaves its claim unsent, so it is
    retried that way; several failures in a row end the pass. A single send must take less than ``retry_after`` (set
    ``EMAIL_TIMEOUT``), or a slow pass and its successor may both send it.
    A crash between handing a message to the mail server and stamping ``sent_at``
    sends that one reminder twice; nothing can close that gap with SMTP.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import dataclass

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import EmailMessage, get_connection
from django.db import connection
from django.template.loader import render_to_string
from django.urls import reverse

from ..models import LearnerProfile, Reminder
from .scheduling import groups_table, id_ranges, zone_or_utc

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 500
# Far longer than sending one batch takes, so a slow pass is never overtaken.
DEFAULT_RETRY_AFTER = dt.timedelta(minutes=10)
GROUPS_PER_STATEMENT = 250
# Failed sends in a row after which a pass stops: the mail server is most likely
# down, and every further try could wait out a whole connection timeout. The claims
# left unsent are retried after ``retry_after``, unclaimed learners by the next pass.
MAX_CONSECUTIVE_FAILURES = 3


class MailUnavailable(Exception):
    """Several sends in a row failed; ``sent`` counts what the batch sent before."""

    def __init__(self, sent: int):
        self.sent = sent
        super().__init__(f"{MAX_CONSECUTIVE_FAILURES} reminders in a row could not be sent")


@dataclass(frozen=True)
class Claim:
    reminder_id: int
    learner_id: int
    study_day: dt.date
    due_count: int


def reminder_day(
    at: dt.datetime, tz: str | dt.tzinfo, day_starts_at: int, reminder_hour: int
) -> dt.date | None:
    """The study day whose reminder is due at ``at``, or None while it is not yet due.

    The same wall-time shift as :func:`cards.ladder.study_day`, so the day agrees.
    """
    zone = zone_or_utc(tz) if isinstance(tz, str) else tz
    shifted = at.astimezone(zone).replace(tzinfo=None) - dt.timedelta(hours=day_starts_at)
    day = shifted.date()
    into_day = shifted - dt.datetime.combine(day, dt.time())
    if into_day >= dt.timedelta(hours=(reminder_hour - day_starts_at) % 24):
        return day
    return None


def _recipients():
    return LearnerProfile.objects.filter(reminders=True, user__is_active=True).exclude(
        user__email=""
    )


def due_groups(*, at: dt.datetime) -> list[tuple[str, int, int, dt.date]]:
    """``(timezone, day_starts_at, reminder_hour, study_day)`` of every group whose reminder is due."""
    triples = _recipients().values_list("timezone", "day_starts_at", "reminder_hour").distinct()
    groups = []
    for tz_name, day_starts_at, reminder_hour in triples:
        day = reminder_day(at, tz_name, day_starts_at, reminder_hour)
        if day is not None:
            groups.append((tz_name, day_starts_at, reminder_hour, day))
    return groups


def _due_count_sql(learner: str, day: str) -> str:
    """SQL counting what :func:`cards.selectors.due_count` counts; one parameter (True).

    Active cards of enrolled decks due on or before ``day``: the number the e-mail gives.
    """
    return f"""(
        SELECT COUNT(*) FROM cards_reviewstate s
        JOIN cards_card c ON c.id = s.card_id AND c.is_active = %s
        JOIN cards_enrollment e ON e.learner_id = s.learner_id AND e.deck_id = c.deck_id
        WHERE s.learner_id = {learner} AND s.due_on <= {day}
    )"""


def _paused_sql(profile: str, day: str) -> str:
    """True when ``day`` falls inside the learner's pause: no reminders then."""
    if connection.vendor == "sqlite":
        end = f"date({profile}.pause_start, '+' || {profile}.pause_days || ' days')"
    else:
        end = f"({profile}.pause_start + {profile}.pause_days)"
    return f"""({profile}.pause_start IS NOT NULL
        AND {profile}.pause_start <= {day} AND {day} < {end})"""


def _as_claims(rows) -> list[Claim]:
    # SQLite hands dates back as ISO strings from a raw cursor.
    return [
        Claim(
            reminder_id=row[0],
            learner_id=row[1],
            study_day=row[2] if isinstance(row[2], dt.date) else dt.date.fromisoformat(row[2]),
            due_count=row[3],
        )
        for row in rows
    ]


def _claim_new(*, table: str, table_params: list, at, after: int, up_to: int | None) -> list[Claim]:
    ops = connection.ops
    user_table = get_user_model()._meta.db_table
    upper = "AND p.user_id <= %s" if up_to is not None else ""
    sql = f"""
        INSERT INTO cards_reminder (learner_id, study_day, due_count, sent_at, created_at)
        SELECT learner_id, study_day, due_count, NULL, %s FROM (
            SELECT p.user_id AS learner_id, g.study_day AS study_day,
                {_due_count_sql("p.user_id", "g.study_day")} AS due_count
            FROM cards_learnerprofile p
            JOIN {user_table} u ON u.id = p.user_id
            JOIN {table} g ON g.tz = p.timezone AND g.day_start = p.day_starts_at
                AND g.hour = p.reminder_hour
            WHERE p.reminders = %s AND u.is_active = %s AND u.email <> ''
              AND p.user_id > %s {upper}
              AND NOT {_paused_sql("p", "g.study_day")}
              AND NOT EXISTS (
                  SELECT 1 FROM cards_reminder r
                  WHERE r.learner_id = p.user_id AND r.study_day = g.study_day
              )
        ) candidates
        WHERE due_count > 0
        ON CONFLICT (learner_id, study_day) DO NOTHING
        RETURNING id, learner_id, study_day, due_count
    """
    params = [ops.adapt_datetimefield_value(at), True, *table_params, True, True, after]
    if up_to is not None:
        params.append(up_to)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return _as_claims(cursor.fetchall())


def _reclaim_stale(*, table: str, table_params: list, at, retry_after: dt.timedelta) -> list[Claim]:
    """Take over claims left unsent for ``retry_after``, for reminders still due today.

    The condition on ``created_at`` is re-checked under the row lock, so of two
    passes racing here only the first re-stamps (and sends) a given row. The count
    is taken afresh, as the learner may have reviewed since the claim; a claim with
    nothing due any more is left alone (and sent should cards fall due again that day).
    """
    ops = connection.ops
    user_table = get_user_model()._meta.db_table
    learner, day = "cards_reminder.learner_id", "cards_reminder.study_day"
    sql = f"""
        UPDATE cards_reminder
        SET created_at = %s, due_count = {_due_count_sql(learner, day)}
        WHERE sent_at IS NULL AND created_at < %s
          AND {_due_count_sql(learner, day)} > 0
          AND EXISTS (
              SELECT 1 FROM cards_learnerprofile p
              JOIN {user_table} u ON u.id = p.user_id
              JOIN {table} g ON g.tz = p.timezone AND g.day_start = p.day_starts_at
                  AND g.hour = p.reminder_hour
              WHERE p.user_id = cards_reminder.learner_id
                AND g.study_day = cards_reminder.study_day
                AND p.reminders = %s AND u.is_active = %s AND u.email <> ''
          )
        RETURNING id, learner_id, study_day, due_count
    """
    params = [
        ops.adapt_datetimefield_value(at),
        True,
        ops.adapt_datetimefield_value(at - retry_after),
        True,
        *table_params,
        True,
        True,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return _as_claims(cursor.fetchall())


def reminder_message(*, learner, claim: Claim, mail_connection=None) -> EmailMessage:
    context = {
        "learner": learner,
        "due_count": claim.due_count,
        "study_day": claim.study_day,
        "review_url": settings.SITE_URL + reverse("review"),
        "profile_url": settings.SITE_URL + reverse("profile"),
    }
    subject = " ".join(render_to_string("email/reminder_subject.txt", context).split())
    body = render_to_string("email/reminder_body.txt", context)
    return EmailMessage(
        subject=subject,
        body=body,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[learner.email],
        connection=mail_connection,
    )


def _renew(reminder_ids: list[int], *, lease: dt.datetime, now: dt.datetime) -> set[int]:
    """Move the lease of the claims still held under ``lease`` to ``now``; returns their ids.

    A compare-and-set on the claim time: a row another pass has taken over (its
    ``created_at`` changed) or sent is not renewed and drops out.
    """
    if not reminder_ids:
        return set()
    ops = connection.ops
    marks = ", ".join(["%s"] * len(reminder_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE cards_reminder SET created_at = %s
            WHERE id IN ({marks}) AND sent_at IS NULL AND created_at = %s
            RETURNING id
            """,
            [
                ops.adapt_datetimefield_value(now),
                *reminder_ids,
                ops.adapt_datetimefield_value(lease),
            ],
        )
        return {row[0] for row in cursor.fetchall()}


def _close_quietly(mail) -> None:
    try:
        mail.close()
    except Exception:
        logger.warning("Closing the mail connection failed", exc_info=True)


def _deliver(claims: list[Claim], *, lease: dt.datetime, clock, retry_after: dt.timedelta) -> int:
    """Send each claimed reminder and stamp it; a failed send stays claimed for a retry.

    ``lease`` is the claim time this pass wrote. While the batch is being sent,
    the claims not yet sent are renewed every quarter of ``retry_after``, so no
    other pass sees them as abandoned, and any row found taken over is skipped.
    A failed send closes the connection, so the next message gets a fresh one;
    ``MAX_CONSECUTIVE_FAILURES`` in a row raise ``MailUnavailable``.
    """
    if not claims:
        return 0
    users = get_user_model().objects.in_bulk([c.learner_id for c in claims])
    held = {c.reminder_id for c in claims}
    renew_every = retry_after / 4
    sent = failures = 0
    mail = get_connection()
    try:
        for position, claim in enumerate(claims):
            now = clock()
            if now - lease >= renew_every:
                held = _renew(
                    [c.reminder_id for c in claims[position:] if c.reminder_id in held],
                    lease=lease,
                    now=now,
                )
                lease = now
            learner = users.get(claim.learner_id)
            if learner is None or claim.reminder_id not in held:
                continue
            try:
                mail.open()  # a no-op while open; reconnects after a failed send
                reminder_message(learner=learner, claim=claim, mail_connection=mail).send()
            except SoftTimeLimitExceeded:
                # The task must stop now; this claim is retried after retry_after.
                raise
            except Exception:
                logger.exception(
                    "Reminder to learner %s for %s not sent; it will be retried",
                    claim.learner_id,
                    claim.study_day,
                )
                # A failed conversation can leave the connection unusable (SMTP
                # keeps a dropped socket), which would fail every later message.
                _close_quietly(mail)
                failures += 1
                if failures >= MAX_CONSECUTIVE_FAILURES:
                    raise MailUnavailable(sent) from None
                continue
            failures = 0
            # Stamped one by one: a crash mid-batch then resends at most one message.
            Reminder.objects.filter(pk=claim.reminder_id, sent_at__isnull=True).update(
                sent_at=clock()
            )
            sent += 1
    finally:
        _close_quietly(mail)
    return sent


def send_due_reminders(
    *,
    at: dt.datetime,
    batch_size: int = DEFAULT_BATCH_SIZE,
    retry_after: dt.timedelta = DEFAULT_RETRY_AFTER,
) -> int:
    """Send every reminder due at ``at`` that no pass has sent yet; returns how many were sent.

    Learners are visited in ranges of ~``batch_size`` ids: one claiming statement
    per range, then the sends. Safe to run concurrently and to rerun.
    """
    groups = due_groups(at=at)
    if not groups:
        return 0
    started = time.monotonic()

    def clock() -> dt.datetime:
        # The pass's own time line: ``at`` plus the time spent so far.
        return at + dt.timedelta(seconds=time.monotonic() - started)

    sent = 0
    try:
        for start in range(0, len(groups), GROUPS_PER_STATEMENT):
            table, table_params = groups_table(
                groups[start : start + GROUPS_PER_STATEMENT],
                ("tz", "day_start", "hour", "study_day"),
            )
            lease = clock()
            stale = _reclaim_stale(
                table=table, table_params=table_params, at=lease, retry_after=retry_after
            )
            sent += _deliver(stale, lease=lease, clock=clock, retry_after=retry_after)
            for after, up_to in id_ranges(_recipients(), "user_id", batch_size):
                lease = clock()
                claims = _claim_new(
                    table=table, table_params=table_params, at=lease, after=after, up_to=up_to
                )
                sent += _deliver(claims, lease=lease, clock=clock, retry_after=retry_after)
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
