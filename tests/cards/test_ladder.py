"""The ladder's rules, as the contract states them, on pure functions."""

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from cards import ladder

D = dt.date


def test_golden_walk_up_the_ladder_and_stay_at_the_top():
    enrolled = D(2026, 1, 1)
    first = ladder.first_schedule(enrolled)
    assert (first.step, first.interval_days, first.due_on) == (0, 1, D(2026, 1, 2))

    today, step = first.due_on, first.step
    seen = []
    for _ in range(6):
        nxt = ladder.review(step, "pass", today)
        seen.append((nxt.step, nxt.interval_days, (nxt.due_on - today).days))
        today, step = nxt.due_on, nxt.step
    # enrol -> 1 -> 3 -> 7 -> 14 -> 30 -> 30
    assert seen == [(1, 3, 3), (2, 7, 7), (3, 14, 14), (4, 30, 30), (4, 30, 30), (4, 30, 30)]


@pytest.mark.parametrize("step", [0, 1, 2, 3, 4])
def test_a_miss_at_any_rung_returns_to_one_day(step):
    today = D(2026, 3, 10)
    nxt = ladder.review(step, "fail", today)
    assert (nxt.step, nxt.interval_days, nxt.due_on) == (0, 1, D(2026, 3, 11))


def test_a_late_review_counts_from_the_day_it_is_done():
    # Due on the 5th at step 2, reviewed ten days late: 14 days from the 15th.
    nxt = ladder.review(2, "pass", D(2026, 5, 15))
    assert nxt.due_on == D(2026, 5, 29)


def test_custom_ladder_and_bad_input():
    assert ladder.review(0, "pass", D(2026, 1, 1), ladder=(2, 5)).due_on == D(2026, 1, 6)
    with pytest.raises(ValueError, match="step must be 0 or more"):
        ladder.review(-1, "pass", D(2026, 1, 1))
    with pytest.raises(ValueError):
        ladder.next_step(0, "maybe")


def at(y, m, d, h, mi=0, tz="UTC"):
    return dt.datetime(y, m, d, h, mi, tzinfo=ZoneInfo(tz))


@pytest.mark.parametrize(
    ("instant", "tz", "start", "expected"),
    [
        # 02:30 local with the default 04:00 start still belongs to the previous day.
        (at(2026, 6, 10, 2, 30, "Europe/Berlin"), "Europe/Berlin", 4, D(2026, 6, 9)),
        (at(2026, 6, 10, 4, 0, "Europe/Berlin"), "Europe/Berlin", 4, D(2026, 6, 10)),
        (at(2026, 6, 10, 3, 59, "Europe/Berlin"), "Europe/Berlin", 4, D(2026, 6, 9)),
        (at(2026, 6, 10, 0, 0, "UTC"), "UTC", 0, D(2026, 6, 10)),
        # The same instant is a different study day at the ends of the world.
        (at(2026, 6, 10, 15), "Pacific/Kiritimati", 4, D(2026, 6, 11)),
        (at(2026, 6, 10, 15), "Etc/GMT+12", 4, D(2026, 6, 9)),
    ],
)
def test_study_day(instant, tz, start, expected):
    assert ladder.study_day(instant, tz, start) == expected


def test_study_day_is_dst_safe():
    ny = "America/New_York"
    # Spring forward on 2026-03-08 at 02:00 (-> 03:00): the day still starts at 04:00 local.
    assert ladder.study_day(at(2026, 3, 8, 3, 59, ny), ny, 4) == D(2026, 3, 7)
    assert ladder.study_day(at(2026, 3, 8, 4, 0, ny), ny, 4) == D(2026, 3, 8)
    # Fall back on 2026-11-01 at 02:00 (-> 01:00): both 01:30s belong to the previous day.
    first = dt.datetime(2026, 11, 1, 1, 30, tzinfo=ZoneInfo(ny), fold=0)
    second = dt.datetime(2026, 11, 1, 1, 30, tzinfo=ZoneInfo(ny), fold=1)
    assert ladder.study_day(first, ny, 4) == ladder.study_day(second, ny, 4) == D(2026, 10, 31)
    assert ladder.study_day(at(2026, 11, 1, 4, 0, ny), ny, 4) == D(2026, 11, 1)


def test_study_day_start_round_trips_and_handles_the_gap():
    ny = "America/New_York"
    start = ladder.study_day_start(D(2026, 6, 1), ny, 4)
    assert start.hour == 4 and ladder.study_day(start, ny, 4) == D(2026, 6, 1)
    # 02:00 does not exist on 2026-03-08 in New York: the start moves to the first valid instant.
    gap = ladder.study_day_start(D(2026, 3, 8), ny, 2)
    assert ladder.study_day(gap, ny, 2) == D(2026, 3, 8)
    assert ladder.study_day(gap - dt.timedelta(minutes=1), ny, 2) == D(2026, 3, 7)


def test_study_day_rejects_naive_datetimes_and_bad_hours():
    with pytest.raises(ValueError):
        ladder.study_day(dt.datetime(2026, 1, 1, 12), "UTC", 4)
    with pytest.raises(ValueError):
        ladder.study_day(at(2026, 1, 1, 12), "UTC", 24)


P0 = dt.date(2026, 7, 1)


@pytest.mark.parametrize(
    ("start", "days", "end"),
    [
        (P0, 5, dt.date(2026, 7, 6)),
        (P0, 1, dt.date(2026, 7, 2)),
        (P0, 0, None),  # ended on the day it began: no pause
        (None, 5, None),
        (None, 0, None),
    ],
)
def test_pause_end(start, days, end):
    assert ladder.pause_end(start, days) == end


@pytest.mark.parametrize(
    ("offset", "inside"),
    [(-1, False), (0, True), (4, True), (5, False), (30, False)],
)
def test_a_pause_covers_its_days_from_start_to_before_its_end(offset, inside):
    day = P0 + dt.timedelta(days=offset)
    assert ladder.in_pause(day, P0, 5) is inside
    assert ladder.in_pause(day, P0, 0) is False
    assert ladder.in_pause(day, None, 5) is False
