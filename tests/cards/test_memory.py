"""The pure memory figures: Wilson intervals, rung binning, FSRS replay, the time-series
split, calibration, the workload simulation and the suggested ladder."""

from __future__ import annotations

import itertools
import math

import fsrs_rs_python as fsrs
import numpy as np
import pytest

from cards import memory, memory_charts
from cards.memory_simulation import Items, simulate

LADDER = (1, 3, 7, 14, 30)


def log(*reviews: tuple[int, int, bool]):
    """Arrays for reviews given as (card, day, passed), in time order."""
    cards = np.array([r[0] for r in reviews], np.int64)
    days = np.array([r[1] for r in reviews], np.int64)
    passed = np.array([r[2] for r in reviews], bool)
    return cards, days, passed, np.arange(len(reviews), dtype=float)


@pytest.mark.parametrize(
    ("passed", "n", "low", "high"),
    [
        # The roots of (p_hat - p)^2 = z^2 p (1 - p) / n, solved apart as a quadratic.
        (8, 10, 0.4902, 0.9433),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (45, 50, 0.7864, 0.9565),
    ],
)
def test_wilson_interval_is_the_score_test_inversion(passed, n, low, high):
    got = memory.wilson(passed, n)
    assert got == pytest.approx((low, high), abs=1e-4)
    z, p_hat = memory.Z95, passed / n
    roots = np.roots([1 + z * z / n, -(2 * p_hat + z * z / n), p_hat * p_hat]).real
    assert got == pytest.approx(tuple(sorted(roots)), abs=1e-9)


def test_wilson_interval_with_no_reviews_is_everything_and_narrows_with_more():
    assert memory.wilson(0, 0) == (0.0, 1.0)
    widths = [memory.wilson(int(0.9 * n), n) for n in (10, 100, 1000)]
    spans = [high - low for low, high in widths]
    assert spans[0] > spans[1] > spans[2]


def test_a_late_review_is_binned_by_the_days_that_really_elapsed():
    cards, days, passed, _ = log(
        (1, 0, True),  # first sight: not counted
        (1, 3, True),  # 3 days: rung 3
        (1, 12, False),  # due after 7 days, taken after 9: rung 7 (7 <= 9 < 14)
        (1, 13, True),  # 1 day: rung 1
        (2, 0, True),
        (2, 40, True),  # 40 days: rung 30
    )
    assert list(memory.elapsed_days(cards, days)) == [-1, 3, 9, 1, -1, 40]
    figures = memory.rung_figures(cards=cards, days=days, passed=passed, ladder=LADDER, minimum=1)
    by_rung = {f["interval_days"]: (f["reviews"], f["passed"]) for f in figures}
    assert by_rung == {1: (1, 1), 3: (1, 1), 7: (1, 0), 14: (0, 0), 30: (1, 1)}


def test_a_rung_below_the_minimum_states_no_recall_but_its_count_and_interval():
    cards, days, passed, _ = log(*[(c, d, True) for c in range(5) for d in (0, 3)])
    figures = memory.rung_figures(cards=cards, days=days, passed=passed, ladder=LADDER)
    three = figures[1]
    assert three["reviews"] == 5 < memory.RUNG_MINIMUM
    assert three["recall"] is None
    assert (three["low"], three["high"]) == pytest.approx(memory.wilson(5, 5), abs=1e-4)


def random_histories(rng, cards=40, reviews=8):
    rows = []
    for card in range(cards):
        day = 0
        for _ in range(reviews):
            rows.append((card, day, bool(rng.random() < 0.75)))
            day += int(rng.choice([1, 2, 3, 7, 10, 14, 30, 45]))
    rows.sort(key=lambda r: (r[1], r[0]))
    return log(*rows)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_numpy_replay_equals_fsrs_rs(seed):
    rng = np.random.default_rng(seed)
    cards, days, passed, _ = random_histories(rng)
    w = np.array(memory.DEFAULT_PARAMETERS)
    if seed:  # parameters fitted to the histories, away from the defaults
        w = np.array(memory.fit(cards, days, passed))
        assert not np.allclose(w, memory.DEFAULT_PARAMETERS)
    played = memory.replay(cards=cards, days=days, passed=passed, w=w)
    model = fsrs.FSRS(list(w))
    c, d, ok = cards[played.order], days[played.order], passed[played.order]
    for card in np.unique(c):
        mine = c == card
        gaps = np.diff(d[mine], prepend=d[mine][0])
        item = fsrs.FSRSItem(
            [fsrs.FSRSReview(3 if p else 1, int(g)) for p, g in zip(ok[mine], gaps, strict=True)]
        )
        states = model.historical_memory_states(item)
        assert played.stability[mine] == pytest.approx([s.stability for s in states], rel=1e-4)
        assert played.difficulty[mine] == pytest.approx([s.difficulty for s in states], rel=1e-4)


def test_the_forgetting_curve_is_0_9_at_the_stability_and_falls():
    w = memory.DEFAULT_PARAMETERS
    assert memory.retrievability(5.0, 5.0, w) == pytest.approx(0.9)
    r = memory.retrievability(np.array([0, 1, 5, 30]), 5.0, w)
    assert r[0] == 1 and all(np.diff(r) < 0)
    # The interval for desired retention 0.9 is the stability itself.
    assert int(memory.interval_for(np.array(12.0), 0.9, w)) == 12


def test_each_review_is_predicted_only_by_parameters_in_force_before_it():
    rng = np.random.default_rng(3)
    cards, days, passed, times = random_histories(rng)
    cut = float(times[len(times) // 2])
    fitted = memory.fit(cards[times <= cut], days[times <= cut], passed[times <= cut])
    periods = [memory.Period(-math.inf, memory.DEFAULT_PARAMETERS), memory.Period(cut, fitted)]
    predicted, which = memory.predictions(
        cards=cards, days=days, passed=passed, times=times, periods=periods
    )
    assert set(which[times <= cut]) == {0} and set(which[times > cut]) == {1}
    first = memory.elapsed_days(cards, days) < 0
    assert np.isnan(predicted[first]).all() and not np.isnan(predicted[~first]).any()
    # The defaults' half equals a replay with the defaults alone.
    alone, _ = memory.predictions(
        cards=cards, days=days, passed=passed, times=times, periods=periods[:1]
    )
    early = (times <= cut) & ~first
    assert predicted[early] == pytest.approx(alone[early])
    assert not np.allclose(predicted[(times > cut) & ~first], alone[(times > cut) & ~first])


def test_calibration_bins_log_loss_and_rmse_by_hand():
    predicted = np.array([np.nan, 0.95, 0.95, 0.55, 0.55, 0.55, 0.55])
    passed = np.array([True, True, False, True, True, False, False])
    got = memory.calibration(predicted, passed, minimum=1)
    assert got["reviews"] == 6
    assert got["bins"] == [
        {"predicted": 0.55, "observed": 0.5, "count": 4},
        {"predicted": 0.95, "observed": 0.5, "count": 2},
    ]
    assert got["rmse_bins"] == pytest.approx(math.sqrt((4 * 0.05**2 + 2 * 0.45**2) / 6), abs=1e-4)
    loss = -(2 * math.log(0.55) + 2 * math.log(0.45) + math.log(0.95) + math.log(0.05)) / 6
    assert got["log_loss"] == pytest.approx(loss, abs=1e-4)
    few = memory.calibration(predicted, passed)
    assert few["log_loss"] is None and few["rmse_bins"] is None and few["bins"] == got["bins"]


def test_fit_cutoffs_need_the_minimum_before_each_cut():
    later = np.ones(1000, bool)
    times = np.arange(1000, dtype=float)
    assert memory.fit_cutoffs(times, later) == [499.0, 749.0, 999.0]
    assert memory.fit_cutoffs(times[:600], later[:600]) == [449.0, 599.0]
    assert memory.fit_cutoffs(times[:399], later[:399]) == []


def items(n=50, **over):
    fields = {
        "seen": np.ones(n, bool),
        "stability": np.full(n, 10.0),
        "difficulty": np.full(n, 5.0),
        "last": np.zeros(n, np.int64),
        "step": np.full(n, 2, np.int64),
        "due": np.full(n, 7, np.int64),
        "w": np.array(memory.DEFAULT_PARAMETERS),
        "first_pass": 0.8,
    }
    fields.update(over)
    return Items(**fields)


def test_simulation_costs_more_reviews_for_higher_desired_retention():
    out = simulate(items(), ladder=LADDER, rng=np.random.default_rng(1))
    assert [(o.policy, o.desired_retention) for o in out] == [
        ("ladder", None),
        ("fsrs", 0.8),
        ("fsrs", 0.9),
        ("fsrs", 0.95),
    ]
    fsrs_runs = out[1:]
    assert fsrs_runs[0].reviews < fsrs_runs[1].reviews < fsrs_runs[2].reviews
    # Reviewed when recall has fallen to the desired retention: the recall at review is it.
    for o in fsrs_runs:
        assert o.recall == pytest.approx(o.desired_retention, abs=0.02)
    assert all(len(o.daily) == 365 for o in out)
    assert all(o.daily.sum() == pytest.approx(o.reviews) for o in out)


def test_the_ladder_policy_reviews_on_the_ladder_when_every_review_passes():
    # Recall 1 at every review (a huge stability): 7, then 14 and 30 days after.
    out = simulate(
        items(n=1, stability=np.array([1e6]), step=np.array([2]), due=np.array([7])),
        ladder=LADDER,
        rng=np.random.default_rng(0),
        policies=[("ladder", None)],
        runs=1,
    )[0]
    assert list(np.flatnonzero(out.daily)) == [
        7,
        21,
        51,
        81,
        111,
        141,
        171,
        201,
        231,
        261,
        291,
        321,
        351,
    ]


def test_a_card_never_reviewed_waits_for_its_first_review_on_its_due_day():
    out = simulate(
        items(n=1, seen=np.array([False]), due=np.array([3]), step=np.array([0])),
        ladder=LADDER,
        rng=np.random.default_rng(0),
        policies=[("ladder", None)],
        runs=1,
        horizon=4,
    )[0]
    assert list(out.daily) == [0, 0, 0, 1]
    assert out.recall is None  # a first review is no test of memory


def test_suggested_ladder_holds_the_target_for_a_card_passed_at_every_rung():
    w = np.array(memory.DEFAULT_PARAMETERS)
    suggested = memory.suggest_ladder(w, 0.9, 5)
    assert len(suggested) == 5 and all(b > a for a, b in itertools.pairwise(suggested))
    s, d = memory.first_state(memory.PASS_RATING, w)
    for days in suggested:
        assert memory.retrievability(days, s, w) == pytest.approx(0.9, abs=0.03)
        s, d = memory.next_state(s, d, days, memory.PASS_RATING, w)
    assert memory.suggest_ladder(w, 0.95, 5)[-1] < suggested[-1]


def test_charts_place_points_on_the_plot_and_name_every_line():
    figures = {
        "calibration": {"bins": [{"predicted": 0.0, "observed": 1.0, "count": 30}]},
        "simulation": [
            {"policy": "ladder", "desired_retention": None, "daily_reviews": [1.0] * 365},
            {"policy": "fsrs", "desired_retention": 0.9, "daily_reviews": [2.0] * 365},
        ],
    }
    charts = memory_charts.charts(figures)
    point = charts["calibration"]["points"][0]
    assert (point["x"], point["y"]) == (charts["plot"]["left"], charts["plot"]["top"])
    lines = charts["workload"]["lines"]
    assert [line["label"] for line in lines] == ["ladder", "FSRS 0.90"]
    assert lines[0]["dash"] != lines[1]["dash"]  # told apart without colour
    assert abs(lines[0]["label_y"] - lines[1]["label_y"]) >= memory_charts.LABEL_GAP
