# One module on purpose: the memory model's pure maths (Wilson, FSRS replay and step, calibration), read as one derivation.
"""Memory figures beside the ladder, as pure functions: no Django, no clock.

The ladder schedules; these functions only measure. A learner's review log, kept reviews
only and oldest first, comes in as four arrays of one length: ``cards`` (card ids),
``days`` (study days as ordinals), ``passed`` (booleans) and ``times`` (seconds since the
epoch, for the time-series split). From it:

* :func:`rung_figures`: the share of reviews passed at each ladder interval, binned by the
  days that really elapsed since the card's previous review (a late review counts where
  its elapsed days fall), with a 95 % Wilson interval (:func:`wilson`). A card's first
  review is its first sight of the card, not a test of memory, and is left out.
* FSRS memory states (``fsrs_rs_python``): the log replayed with pass as Good (3) and
  fail as Again (1); :func:`fit` fits parameters, :func:`predictions` gives each review's
  predicted recall from the parameters in force before it (the time-series split: the
  parameters fitted up to a moment predict only the reviews after it), and
  :func:`calibration` compares them with what happened.
* The forgetting curve and FSRS-6's state transitions in NumPy (:func:`retrievability`,
  :func:`first_state`, :func:`next_state`; held equal to the library by a test), for the
  workload simulation in ``cards.memory_simulation``, and one review's step
  (:func:`review_memory`), for the memory state a review stores on its card's state.

``w`` is an FSRS-6 parameter vector of 21 numbers, or an array ``(n, 21)`` of one per card.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import fsrs_rs_python as fsrs
import numpy as np
import numpy.typing as npt

DEFAULT_PARAMETERS: tuple[float, ...] = tuple(fsrs.DEFAULT_PARAMETERS)
PASS_RATING = 3  # Good
FAIL_RATING = 1  # Again

# Fewer reviews than this at a rung, and its recall is not stated (only its interval).
RUNG_MINIMUM = 20
# Fewer predicted reviews than this, and calibration states no log loss or RMSE.
CALIBRATION_MINIMUM = 100
# Reviews after a card's first (the ones FSRS learns from) before a learner's parameters
# are fitted; docs/memory.md says why 400.
FIT_MINIMUM = 400
CALIBRATION_BINS = 10
# The two-sided 95 % normal quantile.
Z95 = 1.959963984540054

S_MIN, S_MAX = 0.001, 36500.0


def wilson(passed: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for ``passed`` successes in ``n`` trials; (0, 1) for none."""
    if n <= 0:
        return 0.0, 1.0
    p = passed / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    return max(0.0, (centre - half) / scale), min(1.0, (centre + half) / scale)


def by_card(cards: np.ndarray) -> np.ndarray:
    """Indices ordering the log by card, oldest first within each card (a stable sort)."""
    return np.argsort(cards, kind="stable")


def elapsed_days(cards: np.ndarray, days: np.ndarray) -> np.ndarray:
    """Days since the same card's previous review, per review; -1 for a card's first."""
    order = by_card(cards)
    c, d = cards[order], days[order]
    gaps = np.full(len(c), -1, dtype=np.int64)
    if len(c) > 1:
        same = c[1:] == c[:-1]
        gaps[1:][same] = (d[1:] - d[:-1])[same]
    out = np.empty_like(gaps)
    out[order] = gaps
    return out


def rung_of(elapsed: np.ndarray, ladder: Sequence[int]) -> np.ndarray:
    """The rung a review's elapsed days fall on: the longest interval not above them
    (an elapsed time shorter than the first rung falls on it)."""
    index = np.searchsorted(np.asarray(ladder), elapsed, side="right") - 1
    return np.clip(index, 0, len(ladder) - 1)


def rung_figures(
    *,
    cards: np.ndarray,
    days: np.ndarray,
    passed: np.ndarray,
    ladder: Sequence[int],
    minimum: int = RUNG_MINIMUM,
) -> list[dict[str, Any]]:
    """Per ladder interval: reviews, passed, recall (None below ``minimum``), Wilson bounds."""
    elapsed = elapsed_days(cards, days)
    later = elapsed >= 0
    rung = rung_of(elapsed[later], ladder)
    ok = passed[later]
    figures = []
    for index, interval in enumerate(ladder):
        at = rung == index
        n, k = int(at.sum()), int(ok[at].sum())
        low, high = wilson(k, n)
        figures.append(
            {
                "interval_days": interval,
                "reviews": n,
                "passed": k,
                "recall": round(k / n, 4) if n >= minimum else None,
                "low": round(low, 4),
                "high": round(high, 4),
            }
        )
    return figures


# --- FSRS: replay, fitting, prediction ------------------------------------------------


def _histories(
    cards: np.ndarray, days: np.ndarray, passed: np.ndarray
) -> tuple[list[list[fsrs.FSRSReview]], np.ndarray, np.ndarray]:
    """Per card, its reviews as ``FSRSReview``s (the first at 0 days); the order that sorts
    the log by card, and the elapsed days in that order (-1 for a card's first)."""
    order = by_card(cards)
    c, d, ok = cards[order], days[order], passed[order]
    gaps = elapsed_days(c, d)  # already by card: the same order
    histories: list[list[fsrs.FSRSReview]] = []
    for i in range(len(c)):
        if gaps[i] < 0:
            histories.append([])
        rating = PASS_RATING if ok[i] else FAIL_RATING
        histories[-1].append(fsrs.FSRSReview(rating, max(int(gaps[i]), 0)))
    return histories, order, gaps


def training_items(cards: np.ndarray, days: np.ndarray, passed: np.ndarray) -> list[fsrs.FSRSItem]:
    """What FSRS learns from: one item per review after a card's first, its history up to it."""
    histories, _, _ = _histories(cards, days, passed)
    return [fsrs.FSRSItem(h[:n]) for h in histories for n in range(2, len(h) + 1)]


def fit(cards: np.ndarray, days: np.ndarray, passed: np.ndarray) -> list[float]:
    """FSRS parameters fitted to this log (``fsrs_rs_python``'s optimiser, no torch).

    Reviews on the ladder are never on the same day as the card's previous one, so the
    short-term parameters are not fitted.
    """
    items = training_items(cards, days, passed)
    model = fsrs.FSRS(list(DEFAULT_PARAMETERS))
    return [float(x) for x in model.compute_parameters(items, enable_short_term=False)]


def fit_cutoffs(times: np.ndarray, later: np.ndarray, minimum: int = FIT_MINIMUM) -> list[float]:
    """When to cut the log for a first fit: after half, three quarters and all of the
    reviews FSRS learns from (``later``), each kept only if it has ``minimum`` of them.

    Fitting at several cuts gives the calibration reviews predicted by a fitted model
    that never saw them, from the first week on.
    """
    n = int(later.sum())
    cuts: list[float] = []
    later_times = times[later]
    for share in (0.5, 0.75, 1.0):
        k = int(n * share)
        if k >= minimum:
            cuts.append(float(later_times[k - 1]))
    return sorted(set(cuts))


@dataclass(frozen=True)
class Period:
    """Parameters that predict the reviews after ``since`` (seconds; -inf for defaults)."""

    since: float
    parameters: Sequence[float]


@dataclass(frozen=True)
class Replay:
    """A log replayed with FSRS, in the log's by-card order (``order``).

    ``first`` marks each card's first review; ``s_before`` is the stability before each
    review (NaN before a first), ``stability`` and ``difficulty`` after it.
    """

    order: np.ndarray
    gaps: np.ndarray
    first: np.ndarray
    s_before: np.ndarray
    stability: np.ndarray
    difficulty: np.ndarray


def replay(
    *, cards: np.ndarray, days: np.ndarray, passed: np.ndarray, w: Sequence[float] | np.ndarray
) -> Replay:
    """Replay every card's history with FSRS-6 at once, one review position at a time.

    ``w`` is one parameter vector, or one row per review (each card's reviews share a
    row: a deck's pairs of learner and card, each with its learner's parameters).
    """
    order = by_card(cards)
    c, d, ok = cards[order], days[order], passed[order]
    gaps = elapsed_days(c, d)
    first = gaps < 0
    pair = np.cumsum(first) - 1
    starts = np.flatnonzero(first)
    position = np.arange(len(c)) - starts[pair] if len(c) else np.zeros(0, np.int64)
    weights = _w(w)
    per_row = weights.ndim == 2
    if per_row:
        weights = weights[order]
    rating = np.where(ok, PASS_RATING, FAIL_RATING)
    s_before = np.full(len(c), np.nan)
    s_after, d_after = np.empty(len(c)), np.empty(len(c))
    s_now, d_now = np.empty(len(starts)), np.empty(len(starts))
    by_position = np.argsort(position, kind="stable")
    bounds = np.searchsorted(position[by_position], np.arange(position.max() + 2 if len(c) else 1))
    for k in range(len(bounds) - 1):
        at = by_position[bounds[k] : bounds[k + 1]]
        who = pair[at]
        wk = weights[at] if per_row else weights
        if k == 0:
            s_new, d_new = first_state(rating[at], wk)
        else:
            s_before[at] = s_now[who]
            s_new, d_new = next_state(s_now[who], d_now[who], gaps[at], rating[at], wk)
        s_now[who], d_now[who] = s_new, d_new
        s_after[at], d_after[at] = s_new, d_new
    return Replay(order, gaps, first, s_before, s_after, d_after)


def predictions(
    *,
    cards: np.ndarray,
    days: np.ndarray,
    passed: np.ndarray,
    times: np.ndarray,
    periods: Sequence[Period],
) -> tuple[np.ndarray, np.ndarray]:
    """Each review's predicted recall, and the index of the period that predicted it.

    A review is predicted by the last period that began before it, replaying the card's
    history with that period's parameters; a card's first review gets NaN. ``periods``
    must start with one whose ``since`` is -inf (the defaults, fitted on no one's log).
    """
    predicted, period_of = np.full(len(cards), np.nan), np.zeros(len(cards), dtype=np.int64)
    if not len(cards):
        return predicted, period_of
    which = np.searchsorted([p.since for p in periods], times, side="left") - 1
    for index in np.unique(which):
        w = _w(periods[index].parameters)
        played = replay(cards=cards, days=days, passed=passed, w=w)
        r = np.empty(len(cards))
        r[played.order] = retrievability(played.gaps, played.s_before, w)
        mine = which == index
        predicted[mine] = r[mine]
    period_of[:] = which
    return predicted, period_of


def calibration(
    predicted: np.ndarray,
    passed: np.ndarray,
    *,
    bins: int = CALIBRATION_BINS,
    minimum: int = CALIBRATION_MINIMUM,
) -> dict[str, Any]:
    """Predicted recall against outcome: log loss, RMSE over bins and the bins' table.

    Bins split predicted recall into ``bins`` equal widths; the RMSE weighs each bin's
    (mean predicted - share passed) by its reviews. Below ``minimum`` reviews the log loss
    and RMSE are None; the table is given whatever the count.
    """
    keep = ~np.isnan(predicted)
    p, y = np.clip(predicted[keep], 1e-6, 1 - 1e-6), passed[keep].astype(float)
    n = len(p)
    index = np.minimum((p * bins).astype(int), bins - 1)
    table, squares = [], 0.0
    for b in range(bins):
        at = index == b
        count = int(at.sum())
        if count:
            mean_p, mean_y = float(p[at].mean()), float(y[at].mean())
            squares += count * (mean_p - mean_y) ** 2
            table.append(
                {"predicted": round(mean_p, 4), "observed": round(mean_y, 4), "count": count}
            )
    enough = n >= minimum
    log_loss = float(-(y * np.log(p) + (1 - y) * np.log(1 - p)).mean()) if n else 0.0
    return {
        "reviews": n,
        "log_loss": round(log_loss, 4) if enough else None,
        "rmse_bins": round(math.sqrt(squares / n), 4) if enough else None,
        "bins": table,
    }


# --- FSRS-6 in NumPy: the forgetting curve and one review's transition ---------------


def _w(w: Sequence[float] | np.ndarray) -> np.ndarray:
    return np.asarray(w, dtype=np.float64)


def retrievability(
    elapsed: npt.ArrayLike, stability: npt.ArrayLike, w: Sequence[float] | np.ndarray
) -> np.ndarray:
    """Predicted recall after ``elapsed`` days at ``stability``: FSRS-6's power curve,
    ``(1 + f t / S) ** -decay`` with ``f`` such that recall is 0.9 at ``t = S``."""
    return forgetting_curve(elapsed, stability, _w(w)[..., 20])


def forgetting_curve(
    elapsed: npt.ArrayLike, stability: npt.ArrayLike, decay: npt.ArrayLike
) -> np.ndarray:
    """:func:`retrievability` given the curve's ``decay`` (``w[20]``) alone."""
    decay = np.asarray(decay, float)
    f = 0.9 ** (-1.0 / decay) - 1.0
    ratio = np.asarray(elapsed, float) / np.asarray(stability, float)
    return np.asarray((1.0 + f * ratio) ** (-decay), dtype=np.float64)


def review_memory(
    previous: tuple[float, float] | None,
    elapsed: int,
    passed: bool,
    w: Sequence[float] | np.ndarray,
) -> tuple[float, float]:
    """Stability and difficulty after one more review: a card's first (``previous`` is
    None) or one ``elapsed`` days after the last, whose ``(stability, difficulty)`` was
    ``previous``. The step :func:`replay` takes at each review, so a state kept review by
    review equals the replay of its log."""
    rating = PASS_RATING if passed else FAIL_RATING
    if previous is None:
        s, d = first_state(rating, w)
    else:
        s, d = next_state(previous[0], previous[1], elapsed, rating, w)
    return float(s), float(d)


def interval_for(
    stability: npt.ArrayLike, desired: npt.ArrayLike, w: Sequence[float] | np.ndarray
) -> np.ndarray:
    """Days until recall falls to ``desired``, whole and at least 1 (FSRS's next interval)."""
    w = _w(w)
    decay = w[..., 20]
    f = 0.9 ** (-1.0 / decay) - 1.0
    days = np.asarray(stability, float) / f * (np.asarray(desired, float) ** (-1.0 / decay) - 1.0)
    return np.clip(np.rint(days), 1, S_MAX).astype(np.int64)


def _raw_difficulty(rating, w: np.ndarray):
    return w[..., 4] - np.exp(w[..., 5] * (rating - 1)) + 1


def first_state(rating, w: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stability and difficulty after a card's first review rated ``rating`` (1 or 3)."""
    w = _w(w)
    rating = np.asarray(rating)
    s = np.where(rating == FAIL_RATING, w[..., 0], w[..., 2])
    return np.clip(s, S_MIN, S_MAX), np.clip(_raw_difficulty(rating, w), 1, 10)


def next_state(stability, difficulty, elapsed, rating, w: Sequence[float] | np.ndarray):
    """Stability and difficulty after a review rated ``rating`` (1 or 3) ``elapsed`` days
    after the previous one (FSRS-6, long-term)."""
    w = _w(w)
    s, d, rating = np.asarray(stability), np.asarray(difficulty), np.asarray(rating)
    r = retrievability(elapsed, s, w)
    damped = d + (-w[..., 6] * (rating - 3)) * (10 - d) / 9
    # Mean reversion toward the unclamped difficulty of an Easy first review, as fsrs-rs.
    d_next = np.clip(w[..., 7] * _raw_difficulty(4, w) + (1 - w[..., 7]) * damped, 1, 10)
    grown = s * (
        1 + np.exp(w[..., 8]) * (11 - d) * s ** (-w[..., 9]) * (np.exp(w[..., 10] * (1 - r)) - 1)
    )
    lapsed = w[..., 11] * d ** (-w[..., 12]) * ((s + 1) ** w[..., 13] - 1)
    lapsed = np.minimum(lapsed * np.exp(w[..., 14] * (1 - r)), s / np.exp(w[..., 17] * w[..., 18]))
    s_next = np.where(rating == FAIL_RATING, lapsed, grown)
    return np.clip(s_next, S_MIN, S_MAX), d_next


def suggest_ladder(w: Sequence[float] | np.ndarray, target: float, rungs: int) -> list[int]:
    """The ladder that holds ``target`` recall for a card passed at every rung: each
    interval is the days until the model's recall falls to ``target``, then the pass at
    that recall moves the card to the next. Each rung is at least one day longer than
    the one before, as a ladder must be."""
    w = _w(w)
    s, d = first_state(PASS_RATING, w)
    ladder: list[int] = []
    for _ in range(rungs):
        days = int(interval_for(s, target, w))
        if ladder and days <= ladder[-1]:
            days = ladder[-1] + 1
        ladder.append(days)
        s, d = next_state(s, d, days, PASS_RATING, w)
    return ladder
