# One module on purpose: the memory figures' reads and the memory each review state keeps, beside one fit.
"""Memory beside the ladder: the figures' reads, the memory each review state keeps, and
the weekly fitting of FSRS parameters.

The figures' reads (``stats/memory/``, a deck's figures for staff) load the kept review
log and hand it to the pure functions of ``cards.memory`` and ``cards.memory_simulation``;
they never fit. Each review state keeps its card's FSRS memory (stability, difficulty, the
day of its last kept review): a recorded review stores it (:func:`memory_for_review`),
a new fit stores every state's again (:func:`memory_states_rebuild`), an undo its card's
(:func:`memory_state_refresh`), so the due page and card states read today's
retrievability from it (:func:`page_retrievability`) instead of replaying the log; a
memory left behind by a write that did not store it reads as not current and is replayed.
Fitting is the beat job's: the weekly ``refresh_memory_parameters`` task fans
``memory_refresh_chunks`` out on the queue, as the reminder pass does, and each chunk fits
its learners (:func:`fit_learner`), storing each fit in ``MemoryParameters.history`` so
that the calibration predicts a review only with the fits made before it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import transaction

from .. import memory, memory_charts
from ..db.memory import (
    Learners,
    MovedMemory,
    fitted_parameters,
    kept_log_columns,
    learner_fit,
    learner_states,
    memories_store,
    page_memory,
)
from ..memory_simulation import Items, simulate
from ..models import MemoryParameters, ReviewState
from .scheduling import id_ranges

# The fits a learner's history keeps (the oldest go first); reviews before the oldest
# kept fit are predicted by the defaults, which saw none of them.
HISTORY_FITS = 8
# The share of first reviews passed assumed for a learner with fewer than
# memory.RUNG_MINIMUM of their own (a first review is a first sight: FSRS cannot tell).
FIRST_PASS_DEFAULT = 0.8
# The deck page simulates at most this many learners, spread over the deck's ids.
DECK_SIMULATION_LEARNERS = 200
DEFAULT_CHUNK = 200
SIMULATED_CARDS = 2000
SIMULATION_CACHE_SECONDS = 24 * 3600


@dataclass(frozen=True)
class Log:
    """A slice of the kept review log, oldest first, as the arrays ``cards.memory`` takes."""

    learners: np.ndarray
    cards: np.ndarray
    days: np.ndarray
    passed: np.ndarray
    times: np.ndarray

    @property
    def pairs(self) -> np.ndarray:
        """One id per (learner, card): a deck's log replays each pair as its own card."""
        return np.asarray(self.learners * (1 << 32) + self.cards, dtype=np.int64)


def log_arrays(columns: Sequence[Sequence[float]]) -> Log:
    """``cards.db.memory.kept_log_columns`` as arrays, oldest first (time, then id)."""
    times, ids = np.asarray(columns[4], np.float64), np.asarray(columns[5], np.int64)
    order = np.lexsort((ids, times))
    return Log(
        learners=np.asarray(columns[0], np.int64)[order],
        cards=np.asarray(columns[1], np.int64)[order],
        days=np.asarray(columns[2], np.int64)[order],
        passed=np.asarray(columns[3], np.int64)[order] > 0,
        times=times[order],
    )


def learner_log(*, learner_id: int, card_ids: Sequence[int] | None = None) -> Log:
    return log_arrays(kept_log_columns(learner_id=learner_id, card_ids=card_ids))


def _parameters_row(learner_id: int) -> MemoryParameters | None:
    return MemoryParameters.objects.filter(learner_id=learner_id).first()


def current_parameters(row: MemoryParameters | None) -> list[float]:
    """The parameters in force: the latest fit, or the defaults."""
    if row is not None and row.fitted and row.parameters:
        return [float(x) for x in row.parameters]
    return list(memory.DEFAULT_PARAMETERS)


def periods(row: MemoryParameters | None) -> list[memory.Period]:
    """The defaults from the start, then each stored fit from the last review it saw."""
    out = [memory.Period(-math.inf, memory.DEFAULT_PARAMETERS)]
    for fit in (row.history if row is not None else None) or []:
        out.append(memory.Period(float(fit["since"]), [float(x) for x in fit["parameters"]]))
    return out


def fsrs_summary(row: MemoryParameters | None) -> dict[str, Any]:
    return {
        "parameters": [round(x, 4) for x in current_parameters(row)],
        "fitted": bool(row is not None and row.fitted),
        "reviews_used": row.reviews_used if row is not None else 0,
        "fitted_at": row.fitted_at if row is not None else None,
        "fit_minimum": memory.FIT_MINIMUM,
    }


def last_states(
    log_cards: np.ndarray, log_days: np.ndarray, played: memory.Replay
) -> dict[int, tuple[float, float, int]]:
    """Each card's stability, difficulty and day after its last review, by card id."""
    c = log_cards[played.order]
    if not len(c):
        return {}
    last = np.r_[np.flatnonzero(played.first)[1:] - 1, len(c) - 1]
    d = log_days[played.order]
    return {
        int(c[i]): (float(played.stability[i]), float(played.difficulty[i]), int(d[i]))
        for i in last
    }


def simulation_items(
    *,
    states: Sequence[tuple[int, int, dt.date]],
    memory_of: dict[int, tuple[float, float, int]],
    w: np.ndarray,
    today: dt.date,
    first_pass: float,
) -> Items:
    """Simulation items from ``(key, step, due_on)`` states and their memory by key."""
    n, origin = len(states), today.toordinal()
    known = [memory_of.get(key) for key, _, _ in states]
    return Items(
        seen=np.array([k is not None for k in known], bool),
        stability=np.array([k[0] if k else 1.0 for k in known], float),
        difficulty=np.array([k[1] if k else 5.0 for k in known], float),
        last=np.array([k[2] - origin if k else 0 for k in known], np.int64),
        step=np.fromiter(
            (min(step, len(settings.STUDY_LADDER_DAYS) - 1) for _, step, _ in states), np.int64, n
        ),
        due=np.fromiter((max(due.toordinal() - origin, 0) for _, _, due in states), np.int64, n),
        w=w,
        first_pass=first_pass,
    )


def first_pass_share(log: Log, first: np.ndarray) -> float:
    ok = log.passed[np.argsort(log.pairs, kind="stable")][first]
    return float(ok.mean()) if len(ok) >= memory.RUNG_MINIMUM else FIRST_PASS_DEFAULT


def _simulation_key(items: Items, *, seed: int, learners: int) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for part in (items.seen, items.stability, items.difficulty, items.last, items.step):
        digest.update(np.ascontiguousarray(part).tobytes())
    digest.update(np.ascontiguousarray(items.due).tobytes())
    digest.update(np.ascontiguousarray(items.w).tobytes())
    digest.update(repr((items.first_pass, seed, learners, settings.STUDY_LADDER_DAYS)).encode())
    return f"memory-simulation:{digest.hexdigest()}"


def simulation_figures(items: Items, *, seed: int, learners: int = 1) -> list[dict[str, Any]]:
    """The policies' figures, kept a day in the cache under a digest of what they are
    simulated from: the same items, model and day give the same figures, so a page seen
    again skips the simulation (about half a ``stats/memory/`` of 2,000 cards)."""
    key = _simulation_key(items, seed=seed, learners=learners)
    try:
        kept = cache.get(key)
    except Exception:  # a cache that does not answer only costs the simulation
        kept = None
    if kept is not None:
        return cast(list[dict[str, Any]], kept)
    # Fewer runs for more cards: the mean over 2,000 simulated cards is smooth enough.
    runs = int(np.clip(SIMULATED_CARDS // max(len(items), 1), 1, 4))
    outcomes = simulate(
        items, ladder=settings.STUDY_LADDER_DAYS, rng=np.random.default_rng(seed), runs=runs
    )
    figures = [
        {
            "policy": o.policy,
            "desired_retention": o.desired_retention,
            "reviews_per_day": round(float(o.daily.mean()) / learners, 2),
            "recall": None if o.recall is None else round(o.recall, 4),
            "reviews": round(o.reviews / learners, 1),
            "daily_reviews": [round(float(x) / learners, 2) for x in o.daily],
        }
        for o in outcomes
    ]
    with contextlib.suppress(Exception):  # as for the read
        cache.set(key, figures, SIMULATION_CACHE_SECONDS)
    return figures


def calibration_figures(
    predicted: np.ndarray, passed: np.ndarray, period_of: np.ndarray
) -> dict[str, Any]:
    """The calibration of every prediction, and of those a fitted model made
    (``by_fitted_model``: period past the defaults, each on reviews its fit never saw)."""
    figures = memory.calibration(predicted, passed)
    fitted = period_of > 0
    part = memory.calibration(predicted[fitted], passed[fitted])
    figures["by_fitted_model"] = {k: part[k] for k in ("reviews", "log_loss", "rmse_bins")}
    return figures


def memory_stats(*, learner: Any, today: dt.date) -> dict[str, Any]:
    """``GET stats/memory/``: the learner's rungs, FSRS, calibration and simulation."""
    row = _parameters_row(learner.pk)
    log = learner_log(learner_id=learner.pk)
    w = np.asarray(current_parameters(row))
    rungs = memory.rung_figures(
        cards=log.cards, days=log.days, passed=log.passed, ladder=settings.STUDY_LADDER_DAYS
    )
    predicted, period_of = memory.predictions(
        cards=log.cards, days=log.days, passed=log.passed, times=log.times, periods=periods(row)
    )
    played = memory.replay(cards=log.cards, days=log.days, passed=log.passed, w=w)
    states = list(
        ReviewState.objects.filter(learner=learner, scheduled=True, suspended=False).values_list(
            "card_id", "step", "due_on"
        )
    )
    items = simulation_items(
        states=states,
        memory_of=last_states(log.cards, log.days, played),
        w=w,
        today=today,
        first_pass=first_pass_share(log, played.first),
    )
    return {
        "today": today,
        "target_retention": settings.STUDY_TARGET_RETENTION,
        "minimum_reviews": memory.RUNG_MINIMUM,
        "rungs": rungs,
        "fsrs": fsrs_summary(row),
        "calibration": calibration_figures(predicted, log.passed, period_of),
        "simulation_cards": len(items),
        "simulation": simulation_figures(items, seed=learner.pk),
    }


# --- Retrievability: the due page and card states ------------------------------------


def retrievability_of(*, log: Log, w: Sequence[float], today: dt.date) -> dict[int, float]:
    """Today's predicted recall of each card in ``log`` (one learner's), by card id."""
    played = memory.replay(cards=log.cards, days=log.days, passed=log.passed, w=w)
    last = last_states(log.cards, log.days, played)
    if not last:
        return {}
    keys = list(last)
    s = np.array([last[k][0] for k in keys])
    gap = np.array([max(today.toordinal() - last[k][2], 0) for k in keys], float)
    r = memory.retrievability(gap, s, np.asarray(w))
    return {key: round(float(x), 4) for key, x in zip(keys, r, strict=True)}


def recall_from_memory(
    rows: Sequence[tuple[Any, ...]], *, today: dt.date
) -> tuple[dict[int, float], list[int]]:
    """From ``cards.db.memory.page_memory`` rows: today's predicted recall of each card
    whose state keeps a current memory, and the cards whose kept memory is not current
    (a review or an undo moved the state since it was stored). A card never reviewed
    has neither."""
    current = [row for row in rows if row[3] and row[1] is not None]
    stale = [row[0] for row in rows if not row[3]]
    if not current:
        return {}, stale
    decay = next((row[4] for row in rows if row[4] is not None), memory.DEFAULT_PARAMETERS[20])
    origin = today.toordinal()
    gap = np.array([max(origin - row[2].toordinal(), 0) for row in current], float)
    r = memory.forgetting_curve(gap, np.array([row[1] for row in current], float), decay)
    return {row[0]: round(float(x), 4) for row, x in zip(current, r, strict=True)}, stale


def page_retrievability(
    *, learner: Any, card_ids: Sequence[int], today: dt.date
) -> dict[int, float]:
    """Today's predicted recall of the cards on a due page, from the memory their states
    keep: one statement (``cards.db.memory.page_memory``), no log and no replay.

    A state whose kept memory is not current is replayed from its log (two statements
    more, for those cards only); nothing is written.
    """
    if not card_ids:
        return {}
    recall, stale = recall_from_memory(
        page_memory(learner_id=learner.pk, card_ids=list(card_ids)), today=today
    )
    if stale:
        w = current_parameters(_parameters_row(learner.pk))
        log = learner_log(learner_id=learner.pk, card_ids=stale)
        recall.update(retrievability_of(log=log, w=w, today=today))
    return recall


def card_retrievability(*, learner: Any, card_id: int, today: dt.date) -> float | None:
    return page_retrievability(learner=learner, card_ids=[card_id], today=today).get(card_id)


# --- The memory each review state keeps ---------------------------------------------------


def memory_for_review(*, state: ReviewState, passed: bool, today: dt.date) -> MovedMemory:
    """The card's memory after a review of ``state`` on ``today``, for the move that
    records it to store (``cards.db.reviews.move_and_log``).

    One step (``cards.memory.review_memory``) from the memory ``state`` keeps when that is
    current; otherwise from a replay of the card's kept log. Under the learner's fit, read
    here (one statement; two more for the replay): should a new fit be stored before the
    move, the move leaves the memory not current, for the next review or fit to store.
    """
    fit = learner_fit(state.learner_id)
    w = fit[0] if fit is not None else list(memory.DEFAULT_PARAMETERS)
    previous: tuple[float, float] | None = None
    last_day = None
    if state.memory_as_of == state.last_reviewed_at:
        if state.stability is not None and state.difficulty is not None:
            previous, last_day = (state.stability, state.difficulty), state.last_review_day
    else:
        card_log = learner_log(learner_id=state.learner_id, card_ids=[state.card_id])
        played = memory.replay(
            cards=card_log.cards, days=card_log.days, passed=card_log.passed, w=w
        )
        kept = last_states(card_log.cards, card_log.days, played).get(state.card_id)
        if kept is not None:
            previous, last_day = (kept[0], kept[1]), dt.date.fromordinal(kept[2])
    elapsed = 0 if last_day is None else (today - last_day).days
    s, d = memory.review_memory(previous, elapsed, passed, w)
    return MovedMemory(s, d, today, fit[1] if fit is not None else None)


def memory_states_rebuild(
    *,
    learner_id: int | None = None,
    card_ids: Sequence[int] | None = None,
    learners: Learners | None = None,
) -> int:
    """Store the memory of every state that matches (one learner's, or those of its
    ``card_ids``, or a range of learners') from a replay of its kept log under its
    learner's parameters in force; a state with no kept review gets none. Returns the
    states stored.

    What a new fit, the migration that added the memory and a bulk load of the log run.
    A state reviewed or undone while this runs is left for that write to keep.
    """
    log = log_arrays(kept_log_columns(learner_id=learner_id, card_ids=card_ids, learners=learners))
    states = learner_states(learner_id=learner_id, card_ids=card_ids, learners=learners)
    fitted = fitted_parameters(learner_id=learner_id, learners=learners)
    return _memories_store(log=log, states=states, fitted=fitted)


def _memories_store(
    *,
    log: Log,
    states: Sequence[tuple[int, int, int, dt.datetime | None]],
    fitted: dict[int, list[float]],
) -> int:
    """Store ``states``' memories from a replay of ``log`` (their learners' kept log),
    each learner's under ``fitted[learner]`` or the defaults."""
    last: dict[int, tuple[float, float, int]] = {}
    if len(log.cards):
        default = list(memory.DEFAULT_PARAMETERS)
        learners = np.unique(log.learners)
        w: np.ndarray | list[float]
        if len(learners) == 1:  # one vector for the whole log
            w = fitted.get(int(learners[0]), default)
        else:
            w = np.array([fitted.get(int(k), default) for k in log.learners], float)
        played = memory.replay(cards=log.pairs, days=log.days, passed=log.passed, w=w)
        last = last_states(log.pairs, log.days, played)
    rows: list[tuple[int, float | None, float | None, dt.date | None, dt.datetime | None]] = []
    for state_id, learner, card, reviewed_at in states:
        kept = last.get(learner * (1 << 32) + card)
        if kept is None:
            rows.append((state_id, None, None, None, reviewed_at))
        else:
            rows.append((state_id, kept[0], kept[1], dt.date.fromordinal(kept[2]), reviewed_at))
    return memories_store(rows)


def memory_states_rebuild_for(learner_ids: Sequence[int], *, chunk: int = DEFAULT_CHUNK) -> int:
    """:func:`memory_states_rebuild` for these learners and those between them, a range of
    ``chunk`` ids at a time (what a bulk load of the log and the migration run)."""
    if not learner_ids:
        return 0
    stored, after, last = 0, min(learner_ids) - 1, max(learner_ids)
    while after < last:
        up_to = min(after + chunk, last)
        stored += memory_states_rebuild(learners=(after, up_to))
        after = up_to
    return stored


def memory_state_refresh(*, learner_id: int, card_id: int) -> int:
    """Store one card's memory again from its kept log: what an undo calls once it has
    put the state back, so that the memory follows the review the undo left last."""
    return memory_states_rebuild(learner_id=learner_id, card_ids=[card_id])


# --- The learner's progress page ---------------------------------------------------


def memory_page_context(*, learner: Any, today: dt.date) -> dict[str, Any]:
    """What ``templates/cards/_memory.html`` draws: the figures and their charts."""
    figures = memory_stats(learner=learner, today=today)
    return {"memory": figures, "memory_charts": memory_charts.charts(figures)}


# --- Fitting: the weekly beat job -------------------------------------------------------


def memory_refresh_chunks(*, chunk_size: int = DEFAULT_CHUNK) -> list[tuple[int, int | None]]:
    """Ranges ``(after, up_to]`` of learner ids, ~``chunk_size`` learners each."""
    learners = get_user_model().objects.filter(is_active=True)
    return list(id_ranges(learners, "id", chunk_size))


def memory_refresh_chunk(*, after: int, up_to: int | None, at: dt.datetime) -> int:
    """Fit the learners with ``after < id <= up_to``; returns how many were fitted."""
    learners = get_user_model().objects.filter(is_active=True, id__gt=after)
    if up_to is not None:
        learners = learners.filter(id__lte=up_to)
    return sum(fit_learner(learner_id=pk, at=at) for pk in learners.values_list("id", flat=True))


def fit_learner(*, learner_id: int, at: dt.datetime) -> bool:
    """Fit a learner's parameters from their kept log and store the fit; True if fitted.

    Below ``memory.FIT_MINIMUM`` reviews (after cards' first) nothing is fitted. A first
    fit is made at several cuts of the log (``memory.fit_cutoffs``), so that the
    calibration has fitted predictions of reviews no fit saw; later fits add one fit
    over the whole log, unless the log is as the last fit found it. Run twice, the second run
    finds nothing new and changes nothing. A new fit stores the learner's states' memories
    under it, in the same transaction.
    """
    log = learner_log(learner_id=learner_id)
    later = memory.elapsed_days(log.cards, log.days) >= 0
    used = int(later.sum())
    row = _parameters_row(learner_id)
    if used < memory.FIT_MINIMUM:
        if row is not None and row.reviews_used != used and not row.fitted:
            MemoryParameters.objects.filter(pk=row.pk).update(reviews_used=used)
        return False
    history = list(row.history) if row is not None else []
    last_time = float(log.times[later][-1])
    if history and history[-1]["reviews"] == used and float(history[-1]["since"]) >= last_time:
        return False  # nothing new since the last fit
    cuts = [last_time] if history else memory.fit_cutoffs(log.times, later)
    for cut in cuts:
        upto = log.times <= cut
        w = memory.fit(log.cards[upto], log.days[upto], log.passed[upto])
        history.append({"since": cut, "parameters": w, "reviews": int((later & upto).sum())})
    history = history[-HISTORY_FITS:]
    with transaction.atomic():  # the new parameters and the memories they give, together
        MemoryParameters.objects.update_or_create(
            learner_id=learner_id,
            defaults={
                "parameters": history[-1]["parameters"],
                "fitted": True,
                "reviews_used": used,
                "fitted_at": at,
                "history": history,
            },
        )
        # The log read above is the whole kept log: replayed again under the new fit.
        _memories_store(
            log=log,
            states=learner_states(learner_id=learner_id),
            fitted={learner_id: [float(x) for x in history[-1]["parameters"]]},
        )
    return True
