"""A deck's memory figures for staff: every learner's reviews of its cards together.

Each (learner, card) pair replays as its own card with its learner's parameters; the
calibration predicts each review with its learner's fits made before it, as
``cards.services.memory`` does for one learner.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
from django.conf import settings

from .. import memory, memory_charts
from ..db.memory import kept_log_columns
from ..models import Deck, MemoryParameters, ReviewState
from .memory import (
    DECK_SIMULATION_LEARNERS,
    Log,
    current_parameters,
    first_pass_share,
    last_states,
    log_arrays,
    periods,
    simulation_figures,
    simulation_items,
)


def _deck_predictions(log: Log, rows: dict[int, MemoryParameters]) -> np.ndarray:
    """Each review of a deck's log predicted by its learner's fits made before it.

    The k-th period of every learner is replayed at once (each pair with its learner's
    parameters), for k up to the longest history.
    """
    learner_periods = {learner: periods(rows.get(learner)) for learner in np.unique(log.learners)}
    which = np.zeros(len(log.cards), np.int64)
    for learner, ps in learner_periods.items():
        mine = log.learners == learner
        which[mine] = np.searchsorted([p.since for p in ps], log.times[mine], side="left") - 1
    predicted = np.full(len(log.cards), np.nan)
    pairs = log.pairs
    for k in np.unique(which):
        w = np.array(
            [
                list(learner_periods[int(x)][min(k, len(learner_periods[int(x)]) - 1)].parameters)
                for x in log.learners
            ]
        )
        played = memory.replay(cards=pairs, days=log.days, passed=log.passed, w=w)
        r = np.empty(len(pairs))
        r[played.order] = memory.retrievability(played.gaps, played.s_before, w[played.order])
        mine = which == k
        predicted[mine] = r[mine]
    return predicted


def _card_figures(log: Log, deck: Deck) -> list[dict[str, Any]]:
    later = memory.elapsed_days(log.pairs, log.days) >= 0
    out = []
    for card_id, key, prompt in deck.cards.order_by("position", "id").values_list(
        "id", "key", "prompt"
    ):
        at = later & (log.cards == card_id)
        n, k = int(at.sum()), int(log.passed[at].sum())
        low, high = memory.wilson(k, n)
        out.append(
            {
                "card": card_id,
                "key": key,
                "prompt": prompt[:120],
                "reviews": n,
                "passed": k,
                "recall": round(k / n, 4) if n >= memory.RUNG_MINIMUM else None,
                "low": round(low, 4),
                "high": round(high, 4),
            }
        )
    return out


def _suggested_ladder(rows: dict[int, MemoryParameters]) -> dict[str, Any]:
    """The ladder holding the target retention under the deck's fitted learners' models:
    each rung the median over them (each learner's ladder from ``memory.suggest_ladder``)."""
    fitted = [current_parameters(r) for r in rows.values() if r.fitted]
    rungs = len(settings.STUDY_LADDER_DAYS)
    if not fitted:
        return {"intervals": None, "learners": 0}
    each = np.array(
        [memory.suggest_ladder(w, settings.STUDY_TARGET_RETENTION, rungs) for w in fitted]
    )
    intervals: list[int] = []
    for days in np.median(each, axis=0):
        whole = max(round(float(days)), 1)
        intervals.append(max(whole, intervals[-1] + 1) if intervals else whole)
    return {"intervals": intervals, "learners": len(fitted)}


def deck_memory(*, deck: Deck, today: dt.date) -> dict[str, Any]:
    """``GET decks/{slug}/memory/`` and the admin page: the deck's learners together."""
    log = log_arrays(kept_log_columns(deck_id=deck.pk))
    rows = {
        r.learner_id: r
        for r in MemoryParameters.objects.filter(learner_id__in=set(log.learners.tolist()))
    }
    predicted = _deck_predictions(log, rows) if len(log.cards) else np.zeros(0)
    rungs = memory.rung_figures(
        cards=log.pairs, days=log.days, passed=log.passed, ladder=settings.STUDY_LADDER_DAYS
    )
    return {
        "deck": deck.slug,
        "today": today,
        "target_retention": settings.STUDY_TARGET_RETENTION,
        "minimum_reviews": memory.RUNG_MINIMUM,
        "learners": len(np.unique(log.learners)),
        "rungs": rungs,
        "fsrs": {
            "fitted_learners": sum(r.fitted for r in rows.values()),
            "fit_minimum": memory.FIT_MINIMUM,
        },
        "calibration": memory.calibration(predicted, log.passed),
        **_deck_simulation(deck=deck, log=log, rows=rows, today=today),
        "suggested_ladder": _suggested_ladder(rows),
        "cards": _card_figures(log, deck),
    }


def _deck_simulation(
    *, deck: Deck, log: Log, rows: dict[int, MemoryParameters], today: dt.date
) -> dict[str, Any]:
    """The deck's cards for up to ``DECK_SIMULATION_LEARNERS`` of its learners, each with
    their own model; reviews per day are per learner."""
    learners = sorted(
        set(
            ReviewState.objects.filter(card__deck=deck, scheduled=True, suspended=False)
            .values_list("learner_id", flat=True)
            .distinct()
        )
    )
    if len(learners) > DECK_SIMULATION_LEARNERS:
        stride = len(learners) / DECK_SIMULATION_LEARNERS
        learners = [learners[int(i * stride)] for i in range(DECK_SIMULATION_LEARNERS)]
    chosen = np.isin(log.learners, learners)
    sub = Log(*(getattr(log, f)[chosen] for f in ("learners", "cards", "days", "passed", "times")))
    w_rows = np.array([current_parameters(rows.get(int(x))) for x in sub.learners]).reshape(-1, 21)
    played = memory.replay(cards=sub.pairs, days=sub.days, passed=sub.passed, w=w_rows)
    states = [
        (learner * (1 << 32) + card, step, due)
        for learner, card, step, due in ReviewState.objects.filter(
            card__deck=deck, scheduled=True, suspended=False, learner_id__in=learners
        ).values_list("learner_id", "card_id", "step", "due_on")
    ]
    w_items = np.array([current_parameters(rows.get(key >> 32)) for key, _, _ in states]).reshape(
        -1, 21
    )
    items = simulation_items(
        states=states,
        memory_of=last_states(sub.pairs, sub.days, played),
        w=w_items,
        today=today,
        first_pass=first_pass_share(sub, played.first),
    )
    return {
        "simulation_learners": len(learners),
        "simulation": simulation_figures(items, seed=deck.pk, learners=max(len(learners), 1)),
    }


def deck_page_context(*, deck: Deck, today: dt.date) -> dict[str, Any]:
    figures = deck_memory(deck=deck, today=today)
    return {"memory": figures, "memory_charts": memory_charts.charts(figures)}
