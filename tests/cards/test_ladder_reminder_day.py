"""``ladder.reminder_day``: which study day's reminder is due at an instant, as a pure function."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cards import ladder

MON = dt.date(2026, 3, 2)
SUN = dt.date(2026, 3, 1)


def utc(*args) -> dt.datetime:
    return dt.datetime(*args, tzinfo=dt.UTC)


GOLDEN = [
    # (time zone, day start, reminder hour, instant, study day whose reminder is due or None)
    ("UTC", 4, 9, utc(2026, 3, 2, 8, 59), None),
    ("UTC", 4, 9, utc(2026, 3, 2, 9, 0), MON),
    ("UTC", 4, 9, utc(2026, 3, 3, 3, 59), MON),  # still Monday's study day
    ("UTC", 4, 4, utc(2026, 3, 2, 4, 0), MON),  # the hour the day starts
    ("UTC", 4, 4, utc(2026, 3, 2, 3, 59), SUN),  # end of Sunday's study day
    ("UTC", 0, 0, utc(2026, 3, 2, 0, 0), MON),  # midnight start, midnight reminder
    ("UTC", 0, 23, utc(2026, 3, 2, 22, 59), None),
    ("UTC", 0, 23, utc(2026, 3, 2, 23, 0), MON),
    # Reminder hour before the day start: 02:00 of the next calendar date, same study day.
    ("UTC", 4, 2, utc(2026, 3, 2, 4, 0), None),
    ("UTC", 4, 2, utc(2026, 3, 2, 23, 59), None),
    ("UTC", 4, 2, utc(2026, 3, 3, 1, 59), None),
    ("UTC", 4, 2, utc(2026, 3, 3, 2, 0), MON),
    ("UTC", 4, 2, utc(2026, 3, 3, 3, 59), MON),
    # The extremes of the clock: UTC+14 and UTC-12, 26 hours apart.
    ("Pacific/Kiritimati", 4, 9, utc(2026, 3, 1, 18, 59), None),
    ("Pacific/Kiritimati", 4, 9, utc(2026, 3, 1, 19, 0), MON),
    ("Etc/GMT+12", 4, 9, utc(2026, 3, 2, 20, 59), None),
    ("Etc/GMT+12", 4, 9, utc(2026, 3, 2, 21, 0), MON),
    ("Asia/Kolkata", 4, 9, utc(2026, 3, 2, 3, 29), None),  # 08:59 IST
    ("Asia/Kolkata", 4, 9, utc(2026, 3, 2, 3, 30), MON),  # 09:00 IST
    # New York springs forward at 02:00 on Sunday 8 March 2026: 02:00 never happens.
    ("America/New_York", 0, 2, utc(2026, 3, 8, 6, 59), None),  # 01:59 EST
    ("America/New_York", 0, 2, utc(2026, 3, 8, 7, 0), dt.date(2026, 3, 8)),  # 03:00 EDT
    # Berlin falls back at 03:00 on Sunday 25 October 2026: 02:00 happens twice.
    ("Europe/Berlin", 0, 2, utc(2026, 10, 24, 23, 59), None),  # 01:59 CEST
    ("Europe/Berlin", 0, 2, utc(2026, 10, 25, 0, 0), dt.date(2026, 10, 25)),  # 02:00 CEST
    ("Europe/Berlin", 0, 2, utc(2026, 10, 25, 1, 0), dt.date(2026, 10, 25)),  # 02:00 CET
]


@pytest.mark.parametrize(("tz", "day_starts_at", "hour", "at", "expected"), GOLDEN)
def test_golden_table_by_zone_name(tz, day_starts_at, hour, at, expected):
    assert ladder.reminder_day(at, tz, day_starts_at, hour) == expected


@pytest.mark.parametrize(("tz", "day_starts_at", "hour", "at", "expected"), GOLDEN)
def test_golden_table_by_zone_object(tz, day_starts_at, hour, at, expected):
    assert ladder.reminder_day(at, ZoneInfo(tz), day_starts_at, hour) == expected


def test_the_instant_may_be_given_in_any_offset():
    tokyo = dt.datetime(2026, 3, 2, 18, 0, tzinfo=ZoneInfo("Asia/Tokyo"))  # 09:00 UTC
    assert ladder.reminder_day(tokyo, "UTC", 4, 9) == MON
    assert ladder.reminder_day(tokyo - dt.timedelta(minutes=1), "UTC", 4, 9) is None


@pytest.mark.parametrize("hour", [-1, 24])
def test_a_reminder_hour_off_the_clock_is_refused(hour):
    with pytest.raises(ValueError, match="reminder_hour"):
        ladder.reminder_day(utc(2026, 3, 2, 9, 0), "UTC", 4, hour)


def test_a_day_start_off_the_clock_is_refused():
    with pytest.raises(ValueError, match="day_starts_at"):
        ladder.reminder_day(utc(2026, 3, 2, 9, 0), "UTC", 24, 9)


def test_a_naive_instant_is_refused():
    with pytest.raises(ValueError, match="aware"):
        ladder.reminder_day(dt.datetime(2026, 3, 2, 9, 0), "UTC", 4, 9)


ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Pacific/Kiritimati"]
instants = st.datetimes(
    min_value=dt.datetime(2025, 1, 1),
    max_value=dt.datetime(2027, 12, 31),
    timezones=st.just(dt.UTC),
)


@given(
    at=instants,
    tz=st.sampled_from(ZONES),
    day_starts_at=st.integers(0, 23),
    hour=st.integers(0, 23),
)
def test_the_day_is_the_study_day_and_stays_due_until_the_day_ends(at, tz, day_starts_at, hour):
    day = ladder.reminder_day(at, tz, day_starts_at, hour)
    today = ladder.study_day(at, tz, day_starts_at)
    assert day in (None, today)
    if day is not None:
        # Due once is due for the rest of that study day.
        end = ladder.study_day_start(today + dt.timedelta(days=1), tz, day_starts_at)
        last = end - dt.timedelta(minutes=1)
        assert ladder.reminder_day(max(at, last), tz, day_starts_at, hour) == today
