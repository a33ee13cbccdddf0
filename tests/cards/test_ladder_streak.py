"""The streak rule on per-day rows, as a pure function (``ladder.streak_days``)."""

import datetime as dt

import pytest

from cards import ladder

D0 = dt.date(2026, 3, 2)


def day(n: int) -> dt.date:
    return D0 + dt.timedelta(days=n)


def streak(days: dict[int, int | None], today: int, still_due: int | None = None, pause=None):
    return ladder.streak_days(
        {day(d): None if due is None else day(due) for d, due in days.items()},
        today=day(today),
        still_due=None if still_due is None else day(still_due),
        pause=None if pause is None else (day(pause[0]), pause[1] - pause[0]),
    )


def test_no_reviews_no_streak():
    assert ladder.streak_days({}, today=D0, still_due=D0) == 0


def test_the_contract_walk_free_days_skip_missed_due_days_break():
    # One card: due day 1, passed -> due day 4, passed -> due day 11, passed on day 13.
    assert streak({1: 1}, today=3, still_due=4) == 1  # days 2, 3 had nothing due
    assert streak({1: 1, 4: 4}, today=4, still_due=11) == 2
    assert streak({1: 1, 4: 4}, today=5, still_due=11) == 2  # today still open
    # Due on day 11, reviewed on day 13: days 11 and 12 waited, so they break it.
    assert streak({1: 1, 4: 4, 13: 11}, today=13, still_due=43) == 1
    # Overdue and nothing reviewed yesterday: gone.
    assert streak({1: 1, 4: 4, 13: 11}, today=50, still_due=43) == 0


def test_consecutive_days_count_and_today_open_keeps_yesterdays_streak():
    rows = {1: 1, 2: 2, 3: 3}
    assert streak(rows, today=3, still_due=3) == 3
    assert streak(rows, today=4, still_due=4) == 3


def test_a_card_still_due_breaks_the_day_it_was_waiting():
    # Reviewed days 1 and 3; a card due since day 2 is still waiting: day 2 breaks.
    assert streak({1: 1, 3: 3}, today=3, still_due=2) == 1
    # Due only from day 3: day 2 was free.
    assert streak({1: 1, 3: 3}, today=3, still_due=3) == 2


def test_a_later_review_of_a_card_that_waited_breaks_the_day():
    # Day 3's review found a card due since day 2: day 2 was missed.
    assert streak({1: 1, 3: 2}, today=3, still_due=None) == 1
    # Nothing else waiting: day 2 was free.
    assert streak({1: 1, 3: 3}, today=3, still_due=None) == 2


def test_reviews_dated_after_today_count_as_later_reviews():
    # A study day ahead of today (the learner moved their time zone back): its card
    # had waited since day 2, so day 2 breaks the streak even though today is open.
    assert streak({1: 1, 5: 2}, today=3, still_due=None) == 0
    assert streak({1: 1, 5: 5}, today=3, still_due=None) == 1


def test_paused_days_neither_count_nor_break():
    # Reviewed day 1, paused days 2..6 with a card overdue since day 2, back on day 7.
    assert streak({1: 1, 7: 2}, today=7, still_due=2, pause=(2, 7)) == 2
    # The pause ended on day 5: days 5 and 6 break it.
    assert streak({1: 1, 7: 2}, today=7, still_due=2, pause=(2, 5)) == 1
    # Today while paused, nothing reviewed since day 1: the streak stands.
    assert streak({1: 1}, today=4, still_due=2, pause=(2, 7)) == 1


def test_a_day_without_a_known_due_date_reads_as_nothing_waited():
    assert streak({1: 1, 3: None}, today=3, still_due=None) == 2


@pytest.mark.parametrize("gap", [1, 10, 400])
def test_the_streak_stops_at_the_first_review(gap):
    assert streak({-gap: -gap, 0: 0}, today=0, still_due=None) == 2
