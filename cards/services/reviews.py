"""Recording reviews: the ladder applied under a conditional UPDATE, and idempotency keys."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from studyapp.common.db import retried_on_conflict

from .. import ladder, selectors
from ..models import Card, IdempotencyKey, ReviewLog, ReviewState
from . import review_days
from .errors import ExerciseCardReview, IdempotencyConflict, NotDue, NotScheduled
from .locks import learner_lock_sql


def _advance(
    *, learner: Any, state: ReviewState, result: str, today: dt.date, at: dt.datetime, key: str
) -> ReviewLog:
    if state.due_on > today:
        raise NotDue(state.due_on)
    schedule = ladder.review(
        state.step, cast(ladder.Result, result), today, settings.STUDY_LADDER_DAYS
    )
    # Only the request that still sees the state it read may move it: a concurrent
    # submission for the same card matches zero rows here and is told it is not due.
    log = ReviewLog(
        learner=learner,
        card_id=state.card_id,
        reviewed_at=at,
        study_day=today,
        result=result,
        step_before=state.step,
        step_after=schedule.step,
        interval_days=schedule.interval_days,
        due_before=state.due_on,
        due_after=schedule.due_on,
        idempotency_key=key,
    )
    if connection.vendor == "postgresql":
        moved = _move_and_log(state=state, step=schedule.step, due_on=schedule.due_on, log=log)
    else:
        with transaction.atomic():
            moved = bool(
                ReviewState.objects.filter(
                    pk=state.pk, step=state.step, due_on=state.due_on
                ).update(step=schedule.step, due_on=schedule.due_on, last_reviewed_at=at)
            )
            if moved:
                log.save(force_insert=True)
                review_days.review_day_add(
                    learner_id=log.learner_id,
                    study_day=today,
                    passed=result == ReviewLog.Result.PASS,
                    due_before=state.due_on,
                )
    if not moved:
        current = ReviewState.objects.filter(pk=state.pk).values_list("due_on", flat=True).first()
        raise NotDue(current or schedule.due_on)
    return log


def _move_and_log(*, state: ReviewState, step: int, due_on: dt.date, log: ReviewLog) -> bool:
    """Move the state, append ``log`` and count it in its day, in one statement.

    Only the request that still sees the state it read may move it: a concurrent
    submission for the same card matches zero rows, inserts no log and counts nothing.
    The learner's lock comes first: the UPDATE's condition on it is a constant, which
    PostgreSQL checks once before it reads any state (a one-time filter).
    """
    ops = connection.ops
    fields = [f for f in ReviewLog._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(ops.quote_name(f.column) for f in fields)
    values = [f.get_db_prep_save(f.pre_save(log, True), connection) for f in fields]
    sql = f"""
        WITH locked AS ({learner_lock_sql()}), moved AS (
            UPDATE {ReviewState._meta.db_table}
            SET step = %s, due_on = %s, last_reviewed_at = %s, updated_at = %s
            WHERE id = %s AND step = %s AND due_on = %s AND EXISTS (SELECT FROM locked)
            RETURNING id
        ), logged AS (
            INSERT INTO {ReviewLog._meta.db_table} ({columns})
            SELECT {", ".join(["%s"] * len(fields))} FROM moved
            RETURNING id, learner_id, study_day, due_before
        ), counted AS (
            INSERT INTO {review_days.TABLE} ({review_days.COLUMNS})
            SELECT learner_id, study_day, 1, %s, due_before FROM logged
            {review_days.ON_CONFLICT_ADD}
        )
        SELECT id FROM logged
    """
    at = ops.adapt_datetimefield_value(log.reviewed_at)
    params = [
        log.learner_id,
        step,
        ops.adapt_datefield_value(due_on),
        at,
        ops.adapt_datetimefield_value(timezone.now()),
        state.pk,
        state.step,
        ops.adapt_datefield_value(state.due_on),
        *values,
        int(log.result == ReviewLog.Result.PASS),
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return False
    log.pk = row[0]
    log._state.adding = False
    return True


@retried_on_conflict
def review_record(
    *, learner: Any, card: Card | int, result: str, at: dt.datetime, idempotency_key: str = ""
) -> ReviewLog:
    """Record a pass or fail for a due recall or interview card and move it on the ladder.

    No transaction of its own: the state moves, the log is appended and the review is
    counted in its ``ReviewDay`` together in one conditional statement (or in one
    transaction where the database cannot do that). The statement takes the learner's
    lock before anything else, as every write to a learner's reviews does
    (``learner_lock``); one that still loses a deadlock is run again.
    """
    if result not in ReviewLog.Result.values:
        raise ValueError("result must be 'pass' or 'fail'")
    card_id = card.pk if isinstance(card, Card) else card
    state = selectors.scheduled_state(learner=learner, card_id=card_id)
    if state is None:
        raise NotScheduled()
    if state.card.kind == Card.Kind.EXERCISE:
        raise ExerciseCardReview()
    today = selectors.learner_today(learner=learner, at=at)
    return _advance(
        learner=learner, state=state, result=result, today=today, at=at, key=idempotency_key
    )


@transaction.atomic
def exercise_review_record(
    *, learner: Any, card_id: int, passed: bool, today: dt.date, at: dt.datetime
) -> ReviewLog:
    """Record the review of an exercise card from the first submission of its bound exercise.

    The caller's transaction holds the learner's lock (``learner_lock``) already.
    """
    state = selectors.scheduled_state(learner=learner, card_id=card_id)
    if state is None:
        raise NotScheduled()
    return _advance(
        learner=learner,
        state=state,
        result="pass" if passed else "fail",
        today=today,
        at=at,
        key="",
    )


# --- Idempotency keys ----------------------------------------------------------


def request_fingerprint(*, method: str, path: str, body: Any) -> str:
    canonical = json.dumps(
        {"method": method, "path": path, "body": body}, sort_keys=True, default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class Replay:
    """The stored answer of the first request with an Idempotency-Key."""

    status: int
    body: dict[str, Any]


@dataclass(frozen=True)
class Claim:
    """This request's hold on an Idempotency-Key; ``taken_over`` from a request that died."""

    record: IdempotencyKey
    taken_over: bool = False


# A claim still in flight after this long belongs to a request that died (process
# killed, database gone before it could let go): a retry with the key takes it over.
IDEMPOTENCY_LEASE = dt.timedelta(seconds=60)


def idempotency_begin(
    *, learner: Any, key: str, fingerprint: str, at: dt.datetime | None = None
) -> Claim | Replay:
    """Claim ``key`` for this request, or return the stored answer of the first one.

    The claim commits on its own, so a second request with the same key sees it
    while the first is still running and gets a 409 instead of waiting. A claim
    older than ``IDEMPOTENCY_LEASE`` is taken over (``taken_over`` is then true):
    the caller checks whether the dead request recorded anything before running it
    again (see ``idempotency_recorded_review``).
    """
    record = _idempotency_claim(learner=learner, key=key, fingerprint=fingerprint)
    if record is not None:
        return Claim(record)
    existing = IdempotencyKey.objects.filter(learner=learner, key=key).first()
    if existing is None:  # purged between the insert and the read: try once more
        return Claim(
            IdempotencyKey.objects.create(learner=learner, key=key, request_hash=fingerprint)
        )
    if existing.request_hash != fingerprint:
        raise IdempotencyConflict(
            "This Idempotency-Key was already used with a different request body.",
            in_flight=False,
        )
    in_flight = existing.status == IdempotencyKey.Status.IN_FLIGHT
    if in_flight and at is not None and at - existing.created_at >= IDEMPOTENCY_LEASE:
        # Conditional: of two retries racing for a dead claim, one takes it.
        taken = IdempotencyKey.objects.filter(
            pk=existing.pk,
            status=IdempotencyKey.Status.IN_FLIGHT,
            created_at=existing.created_at,
        ).update(created_at=at)
        if taken:
            existing.created_at = at
            return Claim(existing, taken_over=True)
    if in_flight:
        raise IdempotencyConflict(
            "A request with this Idempotency-Key is still being processed; retry shortly.",
            in_flight=True,
        )
    # A finished claim always holds its answer (``idempotency_finish`` stores both).
    return Replay(
        status=cast(int, existing.response_status),
        body=cast(dict[str, Any], existing.response_body),
    )


def idempotency_recorded_review(*, learner: Any, key: str) -> ReviewLog | None:
    """The review a request with this key recorded, if it got that far before dying."""
    return ReviewLog.objects.filter(learner=learner, idempotency_key=key).order_by("id").first()


def _idempotency_claim(*, learner: Any, key: str, fingerprint: str) -> IdempotencyKey | None:
    """Insert the claim unless the key is taken (``ON CONFLICT DO NOTHING``): one statement."""
    record = IdempotencyKey(learner=learner, key=key, request_hash=fingerprint)
    fields = [f for f in IdempotencyKey._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {IdempotencyKey._meta.db_table} ({columns}) "
            f"VALUES ({', '.join(['%s'] * len(fields))}) "
            "ON CONFLICT (learner_id, key) DO NOTHING RETURNING id",
            [f.get_db_prep_save(f.pre_save(record, True), connection) for f in fields],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    record.pk = row[0]
    record._state.adding = False
    return record


def _held(record: IdempotencyKey) -> Any:
    # A claim is this request's while it carries the stamp it was claimed (or taken over)
    # with: a request that stalled past its lease has lost it to the retry that took over.
    return IdempotencyKey.objects.filter(
        pk=record.pk, status=IdempotencyKey.Status.IN_FLIGHT, created_at=record.created_at
    )


def idempotency_finish(*, record: IdempotencyKey, status: int, body: dict[str, Any]) -> None:
    """Store the answer under the key, unless another request took the claim over."""
    _held(record).update(
        status=IdempotencyKey.Status.DONE, response_status=status, response_body=body
    )


def idempotency_abandon(*, record: IdempotencyKey) -> None:
    """Forget a claim whose request failed, so the client may retry with the same key;
    a claim another request took over is that request's to finish."""
    _held(record).delete()


# --- Submitting a review: POST reviews/ -------------------------------------------


@dataclass(frozen=True)
class ReviewAnswer:
    """What a review submission answers: HTTP status and body (stored, or replayed)."""

    status: int
    body: dict[str, Any]
    replayed: bool = False


def review_submit(
    *,
    learner: Any,
    card: int,
    result: str,
    at: dt.datetime,
    present: Callable[[ReviewLog], dict[str, Any]],
    idempotency_key: str = "",
    path: str = "",
) -> ReviewAnswer:
    """Record a review as ``POST reviews/`` does, at most once per Idempotency-Key.

    ``present`` turns the recorded review into the response body, which is stored
    under the key. The same key with the same request (``path``, card and result)
    answers the stored body again and changes nothing. Raises ``IdempotencyConflict``
    (``in_flight``: 409, else 422 for a different body) and the ``ReviewError`` of
    ``review_record``; on any error the claim is let go, so the client may retry
    with the same key.
    """

    def record() -> ReviewAnswer:
        log = review_record(
            learner=learner, card=card, result=result, at=at, idempotency_key=idempotency_key
        )
        return ReviewAnswer(201, present(log))

    if not idempotency_key:
        return record()
    fingerprint = request_fingerprint(
        method="POST", path=path, body={"card": card, "result": result}
    )
    claim = idempotency_begin(learner=learner, key=idempotency_key, fingerprint=fingerprint, at=at)
    if isinstance(claim, Replay):
        return ReviewAnswer(claim.status, claim.body, replayed=True)
    try:
        answer = _record_once(
            learner=learner, key=idempotency_key, claim=claim, record=record, present=present
        )
    except BaseException:
        idempotency_abandon(record=claim.record)
        raise
    idempotency_finish(record=claim.record, status=answer.status, body=answer.body)
    return answer


def _record_once(
    *,
    learner: Any,
    key: str,
    claim: Claim,
    record: Callable[[], ReviewAnswer],
    present: Callable[[ReviewLog], dict[str, Any]],
) -> ReviewAnswer:
    """Record the review of a claimed key, or answer the one its first request recorded.

    A claim taken over belongs to a request that died or stalled past its lease. One
    that died may have recorded its review; one that stalled in the database may record
    it while this request runs, and this request's own move then finds the card not due.
    Either way the review under the key is the answer: 201, never a 409 for the client's
    own review.
    """
    if not claim.taken_over:
        return record()
    recorded = idempotency_recorded_review(learner=learner, key=key)
    if recorded is None:
        try:
            return record()
        except NotDue:
            recorded = idempotency_recorded_review(learner=learner, key=key)
            if recorded is None:
                raise
    return ReviewAnswer(201, present(recorded))
