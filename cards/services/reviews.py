"""Recording reviews: the ladder applied under a conditional UPDATE, and idempotency keys."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from django.conf import settings
from django.db import transaction

from studyapp.common.db import retried_on_conflict

from .. import ladder, selectors
from ..db.reviews import insert_unless_taken, move_and_log
from ..models import Card, IdempotencyKey, ReviewLog, ReviewState
from .errors import (
    ExerciseCardReview,
    IdempotencyConflict,
    LabCardReview,
    NotDue,
    NotScheduled,
    WrittenAnswerRefused,
)
from .memory import memory_for_review, memory_state_refresh


def _advance(
    *,
    learner: Any,
    state: ReviewState,
    result: str,
    today: dt.date,
    at: dt.datetime,
    key: str,
    answer_text: str = "",
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
        answer_text=answer_text,
    )
    # The card's FSRS memory after this review, stored with the move for the due page.
    remembered = memory_for_review(state=state, passed=result == ReviewLog.Result.PASS, today=today)
    moved = move_and_log(
        state=state, step=schedule.step, due_on=schedule.due_on, log=log, memory=remembered
    )
    if not moved:
        current = ReviewState.objects.filter(pk=state.pk).values_list("due_on", flat=True).first()
        raise NotDue(current or schedule.due_on)
    return log


@retried_on_conflict
def review_record(
    *,
    learner: Any,
    card: Card | int,
    result: str,
    at: dt.datetime,
    idempotency_key: str = "",
    answer_text: str = "",
) -> ReviewLog:
    """Record a pass or fail for a due recall or interview card and move it on the ladder.

    ``answer_text`` is what the learner wrote before seeing an interview card's model
    answer, kept with the review; another kind of card takes none (``WrittenAnswerRefused``).

    No transaction of its own: the state moves (with the card's FSRS memory after the
    review, ``cards.services.memory.memory_for_review``), the log is appended and the
    review is counted in its ``ReviewDay`` together (``cards.db.reviews.move_and_log``: one
    conditional statement, or one transaction where the database cannot do that). The statement takes the learner's
    lock before anything else, as every write to a learner's reviews does
    (``learner_lock``); one that still loses a deadlock is run again.
    """
    if result not in ReviewLog.Result.values:
        raise ValueError("result must be 'pass' or 'fail'")
    if len(answer_text) > ReviewLog.MAX_ANSWER_TEXT_CHARS:
        raise ValueError(f"answer_text holds at most {ReviewLog.MAX_ANSWER_TEXT_CHARS} characters")
    card_id = card.pk if isinstance(card, Card) else card
    state = selectors.scheduled_state(learner=learner, card_id=card_id)
    if state is None:
        raise NotScheduled()
    if state.card.kind == Card.Kind.EXERCISE:
        raise ExerciseCardReview()
    if state.card.kind == Card.Kind.LAB:
        raise LabCardReview()
    if answer_text and state.card.kind != Card.Kind.INTERVIEW:
        raise WrittenAnswerRefused(state.card.kind)
    today = selectors.learner_today(learner=learner, at=at)
    return _advance(
        learner=learner,
        state=state,
        result=result,
        today=today,
        at=at,
        key=idempotency_key,
        answer_text=answer_text,
    )


@transaction.atomic
def exercise_review_record(
    *, learner: Any, card_id: int, passed: bool, today: dt.date, at: dt.datetime
) -> ReviewLog:
    """Record the review of an exercise card from the first submission of its bound exercise,
    or of a lab card from its bound lab submission (``cards.services.lab_reviews``).

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


def review_undone(*, learner: Any, card_id: int, at: dt.datetime) -> None:
    """What follows an undo of the learner's review of ``card_id`` (``cards.services.undo``
    calls it once the state is back): the card's FSRS memory stored again from its kept
    log, and the exercise the card's repeated review needs bound (its first one was spent
    on the review undone), so the due page, which only reads, has both."""
    from .due_exercises import queue_exercises_bind  # it imports this module

    memory_state_refresh(learner_id=learner.pk, card_id=card_id)
    queue_exercises_bind(learner=learner, today=selectors.learner_today(learner=learner, at=at))


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
class IdempotencyHold:
    """This request's hold on an Idempotency-Key (its in-flight row); ``taken_over`` when
    it was taken from a request that died."""

    record: IdempotencyKey
    taken_over: bool = False


# A claim still in flight after this long belongs to a request that died (process
# killed, database gone before it could let go): a retry with the key takes it over.
IDEMPOTENCY_LEASE = dt.timedelta(seconds=60)


def idempotency_begin(
    *, learner: Any, key: str, fingerprint: str, at: dt.datetime | None = None
) -> IdempotencyHold | Replay:
    """Claim ``key`` for this request, or return the stored answer of the first one.

    The claim commits on its own, so a second request with the same key sees it
    while the first is still running and gets a 409 instead of waiting. A claim
    older than ``IDEMPOTENCY_LEASE`` is taken over (``taken_over`` is then true):
    the caller checks whether the dead request recorded anything before running it
    again (see ``idempotency_recorded_review``).
    """
    record = _idempotency_claim(learner=learner, key=key, fingerprint=fingerprint)
    if record is not None:
        return IdempotencyHold(record)
    existing = IdempotencyKey.objects.filter(learner=learner, key=key).first()
    if existing is None:  # purged between the insert and the read: try once more
        return IdempotencyHold(
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
            return IdempotencyHold(existing, taken_over=True)
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
    return insert_unless_taken(IdempotencyKey(learner=learner, key=key, request_hash=fingerprint))


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

# What an Idempotency-Key stores as the status of its answer. The only answer a key
# ever stores is a recorded review (a refusal lets the claim go), which the API
# answers 201 (Created); a replay answers what was stored, as the first request did.
RECORDED_STATUS = 201


@dataclass(frozen=True)
class Recorded:
    """A review submission's answer: the recorded review presented as the response body.

    ``replayed``: the body is the stored answer of an earlier request with the same
    Idempotency-Key, and nothing was recorded now.
    """

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
    answer_text: str = "",
) -> Recorded:
    """Record a review as ``POST reviews/`` does, at most once per Idempotency-Key.

    ``present`` turns the recorded review into the response body, which is stored
    under the key. The same key with the same request (``path``, card, result and
    written answer) answers the stored body again (``replayed``) and changes nothing. Raises
    ``IdempotencyConflict`` (``in_flight`` or a different body) and the
    ``ReviewError`` of ``review_record``; on any error the claim is let go, so the
    client may retry with the same key.
    """

    def record() -> Recorded:
        log = review_record(
            learner=learner,
            card=card,
            result=result,
            at=at,
            idempotency_key=idempotency_key,
            answer_text=answer_text,
        )
        return Recorded(present(log))

    if not idempotency_key:
        return record()
    body: dict[str, Any] = {"card": card, "result": result}
    if answer_text:  # a review without one fingerprints as it always has
        body["answer_text"] = answer_text
    fingerprint = request_fingerprint(method="POST", path=path, body=body)
    hold = idempotency_begin(learner=learner, key=idempotency_key, fingerprint=fingerprint, at=at)
    if isinstance(hold, Replay):
        return Recorded(hold.body, replayed=True)
    try:
        answer = _record_once(
            learner=learner, key=idempotency_key, hold=hold, record=record, present=present
        )
    except BaseException:
        idempotency_abandon(record=hold.record)
        raise
    idempotency_finish(record=hold.record, status=RECORDED_STATUS, body=answer.body)
    return answer


def _record_once(
    *,
    learner: Any,
    key: str,
    hold: IdempotencyHold,
    record: Callable[[], Recorded],
    present: Callable[[ReviewLog], dict[str, Any]],
) -> Recorded:
    """Record the review of a held key, or answer the one its first request recorded.

    A hold taken over belongs to a request that died or stalled past its lease. One
    that died may have recorded its review; one that stalled in the database may record
    it while this request runs, and this request's own move then finds the card not due.
    Either way the review under the key is the answer, never a refusal of the client's
    own review.
    """
    if not hold.taken_over:
        return record()
    recorded = idempotency_recorded_review(learner=learner, key=key)
    if recorded is None:
        try:
            return record()
        except NotDue:
            recorded = idempotency_recorded_review(learner=learner, key=key)
            if recorded is None:
                raise
    return Recorded(present(recorded))
