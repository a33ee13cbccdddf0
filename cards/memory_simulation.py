"""The workload a schedule costs, simulated over the days ahead: pure, no Django, no clock.

Each item is one card of one learner, in the state the replay of their log leaves it
(``cards.memory.replay``): its stability and difficulty, the day of its last review and
its ladder step and due day; a card never reviewed yet waits for its first. Every policy
starts from the same items and is run with the same random draws:

* ``ladder``: the ladder as configured (a pass climbs a rung, a fail returns to the first);
* ``fsrs`` at a desired retention: the next review falls when the model's recall has
  dropped to it.

On each day every due item is reviewed (no backlog, no daily limit); it is passed with the
model's recall at that moment (a first review with ``first_pass``), and FSRS moves its
memory on whatever the policy. Days are offsets from today (0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .memory import FAIL_RATING, PASS_RATING, first_state, interval_for, next_state, retrievability

HORIZON_DAYS = 365
POLICIES: tuple[tuple[str, float | None], ...] = (
    ("ladder", None),
    ("fsrs", 0.80),
    ("fsrs", 0.90),
    ("fsrs", 0.95),
)


@dataclass(frozen=True)
class Items:
    """The items to simulate, one entry per (learner, card); days are offsets from today."""

    seen: np.ndarray  # bool: reviewed at least once
    stability: np.ndarray  # after the last review (ignored when not seen)
    difficulty: np.ndarray
    last: np.ndarray  # day of the last review (<= 0)
    step: np.ndarray  # ladder step
    due: np.ndarray  # the ladder's due day (>= 0)
    w: np.ndarray  # (21,) or (n, 21)
    first_pass: float  # chance of passing a card's first review

    def __len__(self) -> int:
        return len(self.seen)


@dataclass(frozen=True)
class Outcome:
    policy: str
    desired_retention: float | None
    daily: np.ndarray  # expected reviews on each day ahead
    recall: float | None  # expected share passed of the reviews after a card's first
    reviews: float  # expected reviews over the horizon


def simulate(
    items: Items,
    *,
    ladder: Sequence[int],
    rng: np.random.Generator,
    policies: Sequence[tuple[str, float | None]] = POLICIES,
    horizon: int = HORIZON_DAYS,
    runs: int = 4,
) -> list[Outcome]:
    """Each policy's reviews per day and recall over ``horizon`` days, the mean of ``runs``.

    The draws are made once and shared by every policy (common random numbers), so a
    difference between two policies is theirs, not the dice's. Every policy and run is
    one block of a single set of items, stepped through the days together.
    """
    n = len(items) * runs
    uniform = rng.random((horizon, n)) if n else np.zeros((horizon, 0))
    k = len(policies)
    block = np.repeat(np.arange(k), n)  # the policy of each simulated item
    is_ladder = np.array([p == "ladder" for p, _ in policies])[block]
    desired = np.array([r if r is not None else 0.9 for _, r in policies])[block]
    state = _tile(items, runs * k)
    daily, recall_sum, recall_n = _days(
        state, uniform, ladder=ladder, block=block, is_ladder=is_ladder, desired=desired, k=k
    )
    return [
        Outcome(
            policy=policy,
            desired_retention=retention,
            daily=daily[:, i] / runs,
            recall=float(recall_sum[i] / recall_n[i]) if recall_n[i] else None,
            reviews=float(daily[:, i].sum()) / runs,
        )
        for i, (policy, retention) in enumerate(policies)
    ]


def _tile(items: Items, times: int) -> Items:
    return Items(
        seen=np.tile(items.seen, times),
        stability=np.tile(items.stability, times),
        difficulty=np.tile(items.difficulty, times),
        last=np.tile(items.last, times),
        step=np.tile(items.step, times),
        due=np.tile(items.due, times),
        w=items.w if items.w.ndim == 1 else np.tile(items.w, (times, 1)),
        first_pass=items.first_pass,
    )


def _days(
    items: Items,
    uniform: np.ndarray,
    *,
    ladder: Sequence[int],
    block: np.ndarray,
    is_ladder: np.ndarray,
    desired: np.ndarray,
    k: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step every block through the days; reviews per day and recall sums per block."""
    rungs = np.asarray(ladder)
    per_item = items.w.ndim == 2
    seen, s, d = items.seen.copy(), items.stability.copy(), items.difficulty.copy()
    last, step, due = items.last.copy(), items.step.copy(), items.due.copy()
    fsrs_seen = seen & ~is_ladder
    if fsrs_seen.any():  # an FSRS policy reviews a card already seen when recall falls
        w_seen = items.w[fsrs_seen] if per_item else items.w
        gap = interval_for(s[fsrs_seen], desired[fsrs_seen], w_seen)
        due[fsrs_seen] = np.maximum(last[fsrs_seen] + gap, 0)
    horizon, n = uniform.shape
    daily = np.zeros((horizon, k))
    recall_sum, recall_n = np.zeros(k), np.zeros(k)
    columns = np.arange(len(seen)) % n
    for day in range(horizon):
        at = np.flatnonzero(due == day)
        if not len(at):
            continue
        daily[day] = np.bincount(block[at], minlength=k)
        old, new = at[seen[at]], at[~seen[at]]
        # A card seen before: recalled with the model's recall, its memory moved on.
        w = items.w[old] if per_item else items.w
        r = retrievability(day - last[old], s[old], w)
        ok_old = uniform[day, columns[old]] < r
        recall_sum += np.bincount(block[old], weights=r, minlength=k)
        recall_n += np.bincount(block[old], minlength=k)
        rating = np.where(ok_old, PASS_RATING, FAIL_RATING)
        s[old], d[old] = next_state(s[old], d[old], day - last[old], rating, w)
        # A first review: passed with the learner's share of first reviews passed.
        ok_new = uniform[day, columns[new]] < items.first_pass
        w_new = items.w[new] if per_item else items.w
        s[new], d[new] = first_state(np.where(ok_new, PASS_RATING, FAIL_RATING), w_new)
        seen[new] = True
        last[at] = day
        ok = np.empty(len(seen), bool)
        ok[old], ok[new] = ok_old, ok_new
        step[at] = np.where(ok[at], np.minimum(step[at] + 1, len(rungs) - 1), 0)
        on_ladder = at[is_ladder[at]]
        by_fsrs = at[~is_ladder[at]]
        due[on_ladder] = day + rungs[step[on_ladder]]
        w_fsrs = items.w[by_fsrs] if per_item else items.w
        due[by_fsrs] = day + interval_for(s[by_fsrs], desired[by_fsrs], w_fsrs)
    return daily, recall_sum, recall_n
