"""The pace: new cards per day, through the services, the beat job and the API.

A deck of 69 cards (the starter deck's size) and the default of 20 new cards a day:
enrolling places 20 due tomorrow and leaves 49 waiting; each study day on which the
learner reviews, the beat job places the next 20 due the day after; a day without
reviews places none; "learn more today" places a batch due at once.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.db.models import Count

from cards import stats
from cards.models import Card, Deck, Enrollment, LearnerProfile, ReviewDay, ReviewState
from cards.services import enroll, learn_more, review_record
from cards.services.scheduling import schedule_new_cards

# Monday 2026-03-02 12:00 UTC: study day 2026-03-02 for a UTC learner starting at 04:00.
DAY0 = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)
TODAY = DAY0.date()


def at(day: int, hour: int = 12) -> dt.datetime:
    return DAY0 + dt.timedelta(days=day, hours=hour - 12)


def day(n: int) -> dt.date:
    return TODAY + dt.timedelta(days=n)


@pytest.fixture
def big_deck(db) -> Deck:
    deck = Deck.objects.create(slug="big", title="Big deck")
    Card.objects.bulk_create(
        Card(deck=deck, key=f"c{i}", kind="recall", prompt=f"P{i}", answer=f"A{i}", position=i)
        for i in range(69)
    )
    return deck


def positions(learner, **filters) -> list[int]:
    return sorted(
        ReviewState.objects.filter(learner=learner, **filters).values_list(
            "card__position", flat=True
        )
    )


def review_all_due(learner, when: dt.datetime) -> int:
    due = list(ReviewState.objects.filter(learner=learner, due_on__lte=when.date()))
    for state in due:
        review_record(learner=learner, card=state.card, result="pass", at=when)
    return len(due)


def test_enrolling_places_the_first_twenty_in_deck_order_and_the_rest_wait(learner, big_deck):
    result = enroll(learner=learner, deck=big_deck, at=DAY0)

    assert (result.scheduled, result.waiting, result.first_due_on) == (20, 49, day(1))
    assert positions(learner) == list(range(20))
    assert set(
        ReviewState.objects.filter(learner=learner).values_list("step", "due_on", "placed_on")
    ) == {(0, day(1), TODAY)}


def test_a_repeat_enrolment_places_nothing_more(learner, big_deck):
    enroll(learner=learner, deck=big_deck, at=DAY0)
    again = enroll(learner=learner, deck=big_deck, at=at(3))

    assert (again.scheduled, again.waiting) == (0, 49)
    assert ReviewState.objects.filter(learner=learner).count() == 20


def test_the_beat_places_the_next_batch_only_on_a_day_the_learner_reviewed(learner, big_deck):
    enroll(learner=learner, deck=big_deck, at=DAY0)
    # Day 0: enrolment spent the day's allowance; day 1 before any review: nothing.
    assert schedule_new_cards(at=DAY0) == 0
    assert schedule_new_cards(at=at(1, 9)) == 0
    assert ReviewState.objects.filter(learner=learner, due_on__lte=day(1)).count() == 20

    assert review_all_due(learner, at(1, 10)) == 20
    assert schedule_new_cards(at=at(1, 11)) == 20
    assert schedule_new_cards(at=at(1, 12)) == 0  # the day's allowance is spent
    assert positions(learner, placed_on=day(1)) == list(range(20, 40))
    assert set(
        ReviewState.objects.filter(learner=learner, placed_on=day(1)).values_list("due_on")
    ) == {(day(2),)}


def test_an_absence_adds_no_wall(learner, big_deck):
    enroll(learner=learner, deck=big_deck, at=DAY0)
    review_all_due(learner, at(1))
    schedule_new_cards(at=at(1, 13))
    # Ten days away: the job runs every day and places nothing.
    for n in range(2, 12):
        assert schedule_new_cards(at=at(n)) == 0
    # Back on day 12: what is due is what was on the ladder, never the 29 waiting.
    due = ReviewState.objects.filter(learner=learner, due_on__lte=day(12)).count()
    assert due == 40
    assert stats.learner_stats(learner=learner, today=day(12))["waiting"] == 29


def test_a_day_whose_last_reviews_came_after_the_jobs_last_run_is_placed_the_next_day(
    learner, big_deck
):
    enroll(learner=learner, deck=big_deck, at=DAY0)
    # Reviews at 03:50 on day 2, which still belongs to study day 1 (days start at 04:00).
    review_all_due(learner, at(2, 3) + dt.timedelta(minutes=50))
    assert ReviewDay.objects.get(learner=learner).study_day == day(1)

    # The next run falls on study day 2: it places day 1's allowance, due day 2 (today).
    assert schedule_new_cards(at=at(2, 4)) == 20
    assert set(
        ReviewState.objects.filter(learner=learner, placed_on=day(1)).values_list("due_on")
    ) == {(day(2),)}
    assert schedule_new_cards(at=at(2, 5)) == 0


def test_the_limit_is_the_learners_and_zero_adds_nothing(learner, big_deck):
    LearnerProfile.objects.filter(user=learner).update(new_cards_per_day=0)
    learner.refresh_from_db()
    result = enroll(learner=learner, deck=big_deck, at=DAY0)
    assert (result.scheduled, result.waiting) == (0, 69)

    ReviewDay.objects.create(learner=learner, study_day=TODAY, reviews=1, passes=1)
    assert schedule_new_cards(at=DAY0) == 0

    LearnerProfile.objects.filter(user=learner).update(new_cards_per_day=7)
    assert schedule_new_cards(at=DAY0) == 7
    assert positions(learner) == list(range(7))


def test_learn_more_places_a_batch_due_today_and_counts_against_the_day(learner, big_deck):
    enroll(learner=learner, deck=big_deck, at=DAY0)
    learner.refresh_from_db()

    more = learn_more(learner=learner, deck=big_deck, at=at(1))
    assert (more.scheduled, more.waiting) == (20, 29)
    assert positions(learner, placed_on=day(1)) == list(range(20, 40))
    assert ReviewState.objects.filter(learner=learner, due_on=day(1)).count() == 40

    # The day's reviews do not bring a further beat batch: the ask spent the allowance.
    review_all_due(learner, at(1, 13))
    assert schedule_new_cards(at=at(1, 14)) == 0

    # An explicit count, past the limit, and to the end of the line.
    assert learn_more(learner=learner, deck=big_deck, at=at(1), count=25).scheduled == 25
    last = learn_more(learner=learner, deck=big_deck, at=at(1), count=25)
    assert (last.scheduled, last.waiting) == (4, 0)
    assert learn_more(learner=learner, deck=big_deck, at=at(1)).scheduled == 0


def test_cards_added_later_join_the_same_line(learner, big_deck):
    enroll(learner=learner, deck=big_deck, at=DAY0)
    late = Card.objects.create(deck=big_deck, kind="recall", prompt="Late", answer="A", position=99)
    other = Deck.objects.create(slug="other", title="Other")
    Card.objects.create(deck=other, kind="recall", prompt="O", answer="A", position=0)
    enroll(learner=learner, deck=other, at=DAY0)  # a second deck: its own first batch

    ReviewDay.objects.create(learner=learner, study_day=day(1), reviews=1, passes=1)
    LearnerProfile.objects.filter(user=learner).update(new_cards_per_day=60)
    assert schedule_new_cards(at=at(1)) == 50  # the 49 waiting of the first deck, then the late one
    assert ReviewState.objects.filter(learner=learner, card=late, placed_on=day(1)).exists()


def test_existing_states_keep_their_schedules(learner, big_deck):
    Enrollment.objects.create(learner=learner, deck=big_deck)
    # A learner from before the pace: every card placed, placed_on unknown.
    ReviewState.objects.bulk_create(
        ReviewState(learner=learner, card=card, step=2, due_on=day(5))
        for card in big_deck.cards.all()
    )
    ReviewDay.objects.create(learner=learner, study_day=TODAY, reviews=1, passes=1)

    assert schedule_new_cards(at=DAY0) == 0
    assert set(ReviewState.objects.filter(learner=learner).values_list("step", "due_on")) == {
        (2, day(5))
    }
    assert enroll(learner=learner, deck=big_deck, at=DAY0).scheduled == 0


def test_stats_give_waiting_and_the_new_cards_of_each_forecast_day(learner, big_deck):
    enroll(learner=learner, deck=big_deck, at=DAY0)

    result = stats.learner_stats(learner=learner, today=TODAY)

    assert result["waiting"] == 49
    forecast = {row["date"]: (row["count"], row["new"]) for row in result["forecast"]}
    assert forecast[day(0)] == (0, 0)
    assert forecast[day(1)] == (20, 0)  # enrolment spent today's allowance
    assert forecast[day(2)] == (0, 20)
    assert forecast[day(3)] == (0, 20)
    assert forecast[day(4)] == (0, 9)
    assert sum(new for _, new in forecast.values()) == 49


def test_no_learner_is_placed_twice_across_many_runs(learner, other_learner, big_deck):
    for person in (learner, other_learner):
        enroll(learner=person, deck=big_deck, at=DAY0)
    for n in range(1, 6):
        for person in (learner, other_learner):
            review_all_due(person, at(n))
        schedule_new_cards(at=at(n, 13))
        schedule_new_cards(at=at(n, 14))

    per_day = ReviewState.objects.values("learner", "placed_on").annotate(n=Count("id")).order_by()
    assert max(row["n"] for row in per_day) == 20
    assert ReviewState.objects.filter(learner=learner).count() == 69


# --- The API -----------------------------------------------------------------------


def test_enrol_answers_scheduled_waiting_and_first_due(api, big_deck):
    body = api.post(f"/api/v1/decks/{big_deck.slug}/enroll/").json()
    assert set(body) == {"deck", "scheduled", "waiting", "first_due_on"}
    assert (body["scheduled"], body["waiting"]) == (20, 49)

    again = api.post(f"/api/v1/decks/{big_deck.slug}/enroll/").json()
    assert (again["scheduled"], again["waiting"]) == (0, 49)


def test_learn_more_through_the_api(api, big_deck):
    url = f"/api/v1/decks/{big_deck.slug}/learn-more/"
    refused = api.post(url, {}, format="json")
    assert refused.status_code == 400
    assert "deck" in refused.json()
    assert not ReviewState.objects.exists()

    api.post(f"/api/v1/decks/{big_deck.slug}/enroll/")
    body = api.post(url, {"count": 5}, format="json").json()
    assert (body["scheduled"], body["waiting"]) == (5, 44)
    assert api.post(url, format="json").json()["scheduled"] == 20


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"count": 0}, "count"),
        ({"count": 1001}, "count"),
        ({"count": "5"}, "count"),
        ({"count": True}, "count"),
        ({"cnt": 5}, "cnt"),
    ],
)
def test_learn_more_refuses_a_bad_count_and_changes_nothing(api, big_deck, body, field):
    api.post(f"/api/v1/decks/{big_deck.slug}/enroll/")
    answer = api.post(f"/api/v1/decks/{big_deck.slug}/learn-more/", body, format="json")
    assert answer.status_code == 400
    assert field in answer.json()
    assert ReviewState.objects.count() == 20


def test_learn_more_of_an_unknown_deck_is_404_and_needs_credentials(api, client, big_deck):
    assert api.post("/api/v1/decks/nope/learn-more/").status_code == 404
    assert client.post(f"/api/v1/decks/{big_deck.slug}/learn-more/").status_code == 401


def test_the_profile_carries_the_pace(api):
    assert api.get("/api/v1/me/").json()["new_cards_per_day"] == 20
    assert api.patch("/api/v1/me/", {"new_cards_per_day": 0}, format="json").status_code == 200
    assert api.get("/api/v1/me/").json()["new_cards_per_day"] == 0
    assert api.patch("/api/v1/me/", {"new_cards_per_day": 1000}, format="json").status_code == 200


@pytest.mark.parametrize("value", [-1, 1001, "20", 2.5, None, True])
def test_a_bad_pace_is_refused_naming_the_field(api, value):
    answer = api.patch("/api/v1/me/", {"new_cards_per_day": value}, format="json")
    assert answer.status_code == 400
    assert "new_cards_per_day" in answer.json()
    assert api.get("/api/v1/me/").json()["new_cards_per_day"] == 20


def test_stats_api_carries_waiting_and_new(api, big_deck):
    api.post(f"/api/v1/decks/{big_deck.slug}/enroll/")
    body = api.get("/api/v1/stats/").json()
    assert body["waiting"] == 49
    assert all("new" in row for row in body["forecast"])
    assert sum(row["new"] for row in body["forecast"]) == 49


def test_the_learn_more_page_places_a_batch_and_opens_the_review(learner, big_deck, client):
    client.force_login(learner)
    client.post(f"/decks/{big_deck.slug}/enroll/")
    answer = client.post(f"/decks/{big_deck.slug}/learn-more/")
    assert answer.status_code == 302
    assert answer["Location"] == "/review/"
    assert ReviewState.objects.filter(learner=learner).count() == 40
