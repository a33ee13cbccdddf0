"""The learner pages under hostile or stale input: never a 500, never another learner's data.

Each case posts what a browser with an old page, a double click or a hand-made
form would send, and checks both the answer and that nothing changed that should
not have. The query-count tests compare one deck, card or attempt with many.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from cards import selectors, services
from cards.models import (
    Card,
    Deck,
    Enrollment,
    ExerciseBinding,
    LearnerProfile,
    ReviewLog,
    ReviewState,
    Tag,
)
from exercises import services as exercise_services
from exercises.models import Attempt, Exercise

pytestmark = pytest.mark.django_db

JUNK = [
    "",
    "abc",
    "-1",
    "0",
    "1.5",
    "nan",
    "NaN",
    "inf",
    "-Infinity",
    "1e400",
    "9" * 30,
    "1" * 5000,
    "²",
    "\N{ARABIC-INDIC DIGIT ONE}",
    "🙂",
    "a\x00b",
    "<script>alert(1)</script>",
]
JUNK_IDS = [repr(j)[:16] for j in JUNK]


@pytest.fixture
def client_for():
    def make(user) -> Client:
        # Report a server error as a 500 response instead of re-raising it, as production does.
        client = Client(raise_request_exception=False)
        client.force_login(user)
        return client

    return make


def _today(user) -> dt.date:
    return selectors.learner_today(learner=user, at=timezone.now())


def _enrol_due(client, user, deck) -> None:
    assert client.post(f"/decks/{deck.slug}/enroll/").status_code == 302
    ReviewState.objects.filter(learner=user, card__deck=deck).update(due_on=_today(user))


def _cells(exercise: Exercise, values: dict | None = None, fill: str | None = None) -> dict:
    """Form fields for every cell of every asked part: ``values`` by part, or ``fill`` everywhere."""
    fields = {}
    for ask in exercise.asks:
        name, shape = ask["name"], ask["shape"]
        source = (values or exercise.solution)[name]
        if not shape:
            fields[f"answer-{name}"] = fill if fill is not None else f"{source:.4f}"
        elif len(shape) == 1:
            for i in range(shape[0]):
                fields[f"answer-{name}-{i}"] = fill if fill is not None else f"{source[i]:.4f}"
        else:
            for r in range(shape[0]):
                for c in range(shape[1]):
                    fields[f"answer-{name}-{r}-{c}"] = (
                        fill if fill is not None else f"{source[r][c]:.4f}"
                    )
    return fields


def _snapshot(user) -> tuple:
    return (
        list(ReviewLog.objects.filter(learner=user).values_list("id", flat=True)),
        list(ReviewState.objects.filter(learner=user).values_list("card_id", "step", "due_on")),
        list(Exercise.objects.filter(owner=user).values_list("id", "attempts_used", "solved")),
        list(Enrollment.objects.filter(learner=user).values_list("deck_id", flat=True)),
        LearnerProfile.objects.filter(user=user).values().first(),
    )


# --- Malformed posts: a 4xx or a redirect with a message, and nothing changes ---------------


@pytest.mark.parametrize("junk", JUNK, ids=JUNK_IDS)
def test_malformed_review_posts_are_400_and_record_nothing(client_for, learner, deck, junk):
    client = client_for(learner)
    _enrol_due(client, learner, deck)
    recall = deck.cards.get(key="why-scale")
    before = _snapshot(learner)
    attempts = [{"card": str(recall.pk), "result": junk}, {"card": junk}, {"result": "pass"}, {}]
    if not junk.strip().isdecimal():  # the Arabic-Indic digit one is the id 1, a real card
        attempts.append({"card": junk, "result": "pass"})
    for data in attempts:
        response = client.post("/review/", data)
        assert response.status_code in (302, 400), (data, response.status_code)
    assert _snapshot(learner) == before


@pytest.mark.parametrize("card_id", ["2147483648", str(2**63 - 1)])
def test_review_of_an_unknown_card_id_is_a_message(client_for, learner, deck, card_id):
    client = client_for(learner)
    _enrol_due(client, learner, deck)
    response = client.post("/review/", {"card": card_id, "result": "pass"}, follow=True)
    assert response.status_code == 200
    assert "not in your review queue" in response.content.decode()
    assert not ReviewLog.objects.exists()


@pytest.mark.parametrize("card_id", [str(2**63), str(2**64), "9" * 40, "1" * 5000], ids=len)
def test_review_of_an_id_beyond_any_row_is_400_not_a_500(client_for, learner, deck, card_id):
    # On SQLite such an id used to overflow in the query.
    client = client_for(learner)
    _enrol_due(client, learner, deck)
    response = client.post("/review/", {"card": card_id, "result": "pass"})
    assert response.status_code == 400
    assert b"card: " in response.content
    assert not ReviewLog.objects.exists()


@pytest.mark.parametrize("junk", JUNK, ids=JUNK_IDS)
def test_malformed_profile_posts_are_400_and_change_nothing(client_for, learner, junk):
    client = client_for(learner)
    before = _snapshot(learner)
    response = client.post(
        "/profile/",
        {"email": junk, "timezone": junk, "day_starts_at": junk, "reminder_hour": junk},
    )
    assert response.status_code == 400
    assert _snapshot(learner) == before


@pytest.mark.parametrize("junk", JUNK, ids=JUNK_IDS)
def test_malformed_exercise_forms_are_400_and_create_nothing(client_for, learner, junk):
    client = client_for(learner)
    for data in (
        {"kind": junk},
        {
            "kind": "attention",
            "attention-n": junk,
            "attention-d_k": "2",
            "attention-max_abs": junk,
            "attention-mask": junk,
        },
        {"kind": "attention", "attention-max_abs": junk},
    ):
        response = client.post("/exercises/", data)
        assert response.status_code in (302, 400), (data, response.status_code)
        if response.status_code == 302:
            # Only a value the kind accepts may create an exercise (e.g. a blank means the default).
            Exercise.objects.filter(owner=learner).delete()
    assert not Exercise.objects.filter(owner=learner).exists()


@pytest.mark.parametrize("junk", JUNK, ids=JUNK_IDS)
def test_malformed_answer_cells_are_400_and_use_no_attempt(client_for, learner, junk):
    exercise = exercise_services.exercise_create(owner=learner, kind="attention", params={"n": 2})
    client = client_for(learner)
    response = client.post(f"/exercises/{exercise.pk}/submit/", _cells(exercise, fill=junk))
    exercise.refresh_from_db()
    if junk in ("-1", "0", "1.5", "9" * 30, "\N{ARABIC-INDIC DIGIT ONE}"):
        # Plain numbers, in any script's digits, are a (wrong) attempt.
        assert response.status_code == 302
        assert exercise.attempts_used == 1
    else:
        assert response.status_code == 400
        assert exercise.attempts_used == 0
        assert not Attempt.objects.filter(exercise=exercise).exists()


def test_an_over_long_cell_is_refused_not_read_as_its_prefix(client_for, learner):
    exercise = exercise_services.exercise_create(owner=learner, kind="attention", params={"n": 2})
    fields = _cells(exercise)
    # The right value followed by 70 more digits is a different number.
    fields["answer-weights-0-0"] += "7" * 70
    response = client_for(learner).post(f"/exercises/{exercise.pk}/submit/", fields)
    assert response.status_code == 400
    assert "weights row 1 column 1 is longer than 64 characters" in response.content.decode()
    assert response.context["parts"][1]["invalid_cells"] == [[0, 0]]
    exercise.refresh_from_db()
    assert exercise.attempts_used == 0


def test_an_over_long_playground_cell_is_reported(client_for, learner):
    long = "1" + "0" * 70
    response = client_for(learner).get(
        f"/playground/?mode=qkv&Q-rows=1&Q-cols=1&Q-0-0={long}&K-rows=1&K-cols=1&V-rows=1&V-cols=1"
    )
    assert response.status_code == 400
    assert "Q row 1, column 1: expected a number" in response.content.decode()


def test_huge_finite_answers_are_wrong_not_a_500(client_for, learner):
    exercise = exercise_services.exercise_create(owner=learner, kind="attention", params={"n": 2})
    client = client_for(learner)
    for value in ("1e308", "-1.7e308", "4.9e-324"):
        response = client.post(f"/exercises/{exercise.pk}/submit/", _cells(exercise, fill=value))
        assert response.status_code == 302
    exercise.refresh_from_db()
    assert (exercise.attempts_used, exercise.solved) == (3, False)
    assert client.get(f"/exercises/{exercise.pk}/").status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/exercises/1/submit/",
        "/decks/attention-basics/enroll/",
        "/decks/attention-basics/unenroll/",
        "/logout/",
    ],
)
def test_get_on_post_only_views_is_405(client_for, learner, deck, path):
    assert client_for(learner).get(path).status_code == 405


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
@pytest.mark.parametrize("path", ["/review/", "/profile/", "/exercises/", "/playground/"])
def test_other_methods_on_pages_are_405(client_for, learner, path, method):
    assert getattr(client_for(learner), method)(path).status_code == 405


@pytest.mark.parametrize(
    "pk", ["0", "999999", "2147483648", str(2**63), "9" * 40, "1" * 5000], ids=len
)
def test_exercise_pages_of_ids_no_row_has_are_404(client_for, learner, pk):
    client = client_for(learner)
    assert client.get(f"/exercises/{pk}/").status_code == 404
    assert client.post(f"/exercises/{pk}/submit/", {"answer-weights-0-0": "1"}).status_code == 404


@pytest.mark.parametrize("slug", ["no-such-deck", "a" * 300, "%C3%A9t%C3%A9"])
def test_enrolling_in_an_unknown_deck_is_404(client_for, learner, slug):
    client = client_for(learner)
    assert client.post(f"/decks/{slug}/enroll/").status_code == 404
    assert client.post(f"/decks/{slug}/unenroll/").status_code == 404
    assert not Enrollment.objects.exists()


# --- Stale pages: the card or exercise changed between showing and answering --------------


def test_grading_a_card_deactivated_since_it_was_shown_records_nothing(client_for, learner, deck):
    client = client_for(learner)
    _enrol_due(client, learner, deck)
    recall = deck.cards.get(key="why-scale")
    assert client.get("/review/").context["card"] == recall
    services.cards_set_active(card_ids=[recall.pk], active=False)
    response = client.post("/review/", {"card": recall.pk, "result": "pass"}, follow=True)
    assert "not in your review queue" in response.content.decode()
    assert not ReviewLog.objects.exists()
    assert ReviewState.objects.get(learner=learner, card=recall).step == 0


def test_grading_after_leaving_the_deck_records_nothing(client_for, learner, deck):
    client = client_for(learner)
    _enrol_due(client, learner, deck)
    recall = deck.cards.get(key="why-scale")
    client.get("/review/")
    assert client.post(f"/decks/{deck.slug}/unenroll/").status_code == 302
    response = client.post("/review/", {"card": recall.pk, "result": "fail"}, follow=True)
    assert "not in your review queue" in response.content.decode()
    assert not ReviewLog.objects.exists()


def test_posting_a_grade_twice_records_it_once(client_for, learner, deck):
    client = client_for(learner)
    _enrol_due(client, learner, deck)
    recall = deck.cards.get(key="why-scale")
    first = client.post("/review/", {"card": recall.pk, "result": "pass"})
    second = client.post("/review/", {"card": recall.pk, "result": "fail"}, follow=True)
    assert first.status_code == 302 and second.status_code == 200
    assert "already reviewed" in second.content.decode()
    log = ReviewLog.objects.get(learner=learner)
    assert (log.result, log.step_after) == ("pass", 1)


def test_posting_an_exercise_card_as_a_grade_is_refused(client_for, learner, deck):
    client = client_for(learner)
    _enrol_due(client, learner, deck)
    exercise_card = deck.cards.get(key="weights-by-hand")
    response = client.post("/review/", {"card": exercise_card.pk, "result": "pass"}, follow=True)
    assert "reviewed by submitting their exercise" in response.content.decode()
    assert not ReviewLog.objects.exists()


def _review_bound_exercise(client, learner, deck) -> Exercise:
    """Show the review page with only the exercise card due; return its bound exercise."""
    _enrol_due(client, learner, deck)
    ReviewState.objects.filter(learner=learner, card__kind=Card.Kind.RECALL).update(
        due_on=_today(learner) + dt.timedelta(days=3)
    )
    page = client.get("/review/")
    assert page.status_code == 200
    return page.context["exercise"]


def test_answering_a_review_exercise_after_leaving_the_deck_is_practice(client_for, learner, deck):
    client = client_for(learner)
    exercise = _review_bound_exercise(client, learner, deck)
    client.post(f"/decks/{deck.slug}/unenroll/")
    response = client.post(f"/exercises/{exercise.pk}/submit/", _cells(exercise))
    assert response.status_code == 302
    assert "from=review" not in response["Location"]
    exercise.refresh_from_db()
    assert exercise.solved and exercise.attempts_used == 1
    assert not ReviewLog.objects.exists()


def test_answering_a_review_exercise_of_a_deactivated_card_is_practice(client_for, learner, deck):
    client = client_for(learner)
    exercise = _review_bound_exercise(client, learner, deck)
    services.cards_set_active(
        card_ids=list(Card.objects.filter(key="weights-by-hand").values_list("pk", flat=True)),
        active=False,
    )
    assert client.post(f"/exercises/{exercise.pk}/submit/", _cells(exercise)).status_code == 302
    assert not ReviewLog.objects.exists()


def test_a_review_exercise_submitted_twice_records_one_review(client_for, learner, deck):
    client = client_for(learner)
    exercise = _review_bound_exercise(client, learner, deck)
    wrong = _cells(exercise, fill="7")
    assert client.post(f"/exercises/{exercise.pk}/submit/", wrong).status_code == 302
    assert client.post(f"/exercises/{exercise.pk}/submit/", _cells(exercise)).status_code == 302
    log = ReviewLog.objects.get(learner=learner)
    assert (log.result, log.step_after) == ("fail", 0)
    assert ExerciseBinding.objects.get(exercise=exercise).review == log


def test_a_closed_exercise_refuses_any_further_submission(client_for, learner):
    exercise = exercise_services.exercise_create(owner=learner, kind="attention", params={"n": 2})
    client = client_for(learner)
    for _ in range(exercise.max_attempts):
        client.post(f"/exercises/{exercise.pk}/submit/", _cells(exercise, fill="7"))
    exercise.refresh_from_db()
    assert exercise.attempts_used == exercise.max_attempts
    # Like the API's 409, a closed exercise is closed whatever the cells hold: a right
    # answer and an unparsable one both get the same plain message and use nothing.
    for fields in (_cells(exercise), _cells(exercise, fill="x"), {}):
        response = client.post(f"/exercises/{exercise.pk}/submit/", fields, follow=True)
        assert response.status_code == 200
        assert response.redirect_chain[-1][0] == f"/exercises/{exercise.pk}/"
        assert "attempts of this exercise are used" in response.content.decode()
    exercise.refresh_from_db()
    assert (exercise.attempts_used, exercise.solved) == (exercise.max_attempts, False)
    assert Attempt.objects.filter(exercise=exercise).count() == exercise.max_attempts


def test_an_exercise_purged_between_showing_and_answering_is_404(client_for, learner, monkeypatch):
    exercise = exercise_services.exercise_create(owner=learner, kind="attention", params={"n": 2})
    client = client_for(learner)
    fields = _cells(exercise)
    real_submit = exercise_services.attempt_submit

    def purge_then_submit(**kwargs):
        Exercise.objects.filter(pk=exercise.pk).delete()
        return real_submit(**kwargs)

    monkeypatch.setattr("cards.services.exercise_reviews.attempt_submit", purge_then_submit)
    assert client.post(f"/exercises/{exercise.pk}/submit/", fields).status_code == 404


def test_a_broken_exercise_card_does_not_block_the_rest_of_the_queue(client_for, learner, deck):
    client = client_for(learner)
    _enrol_due(client, learner, deck)
    broken = deck.cards.get(key="weights-by-hand")
    Card.objects.filter(pk=broken.pk).update(exercise={"kind": "no-such-kind", "params": {}})
    recall = deck.cards.get(key="why-scale")
    # The broken card is the oldest due, so it comes first.
    ReviewState.objects.filter(learner=learner, card=broken).update(
        due_on=_today(learner) - dt.timedelta(days=2)
    )
    page = client.get("/review/")
    assert page.status_code == 200
    assert page.context["card"] == recall
    assert "1 exercise card cannot be reviewed right now" in page.content.decode()
    assert client.post("/review/", {"card": recall.pk, "result": "pass"}).status_code == 302
    # With only the broken card left, the page says so plainly instead of looping.
    page = client.get("/review/")
    assert page.status_code == 200
    assert page.context["card"] == broken
    assert page.context["exercise_unavailable"]
    assert "could not generate its exercise" in page.content.decode()


def test_an_exercise_card_answered_while_out_of_the_queue_comes_back_with_a_fresh_exercise(
    client_for, learner, deck
):
    client = client_for(learner)
    exercise = _review_bound_exercise(client, learner, deck)
    # Left the deck, answered (practice), came back the same study day.
    client.post(f"/decks/{deck.slug}/unenroll/")
    client.post(f"/exercises/{exercise.pk}/submit/", _cells(exercise, fill="7"))
    client.post(f"/decks/{deck.slug}/enroll/")
    ReviewState.objects.filter(learner=learner, card__key="weights-by-hand").update(
        due_on=_today(learner) - dt.timedelta(days=2)
    )
    page = client.get("/review/")
    assert page.context["card"].key == "weights-by-hand"
    fresh = page.context["exercise"]
    assert fresh != exercise and fresh.attempts_used == 0
    assert "Your first submission records this review" in page.content.decode()


# --- Other learners' data ----------------------------------------------------------------


def test_another_learners_review_exercise_is_404_on_every_page(
    client_for, learner, other_learner, deck
):
    theirs = _review_bound_exercise(client_for(other_learner), other_learner, deck)
    mine = client_for(learner)
    assert mine.get(f"/exercises/{theirs.pk}/").status_code == 404
    assert mine.get(f"/exercises/{theirs.pk}/?from=review").status_code == 404
    assert mine.post(f"/exercises/{theirs.pk}/submit/", _cells(theirs)).status_code == 404
    theirs.refresh_from_db()
    assert theirs.attempts_used == 0
    assert not ReviewLog.objects.exists()
    listing = mine.get("/exercises/").content.decode()
    assert f"/exercises/{theirs.pk}/" not in listing


def test_grading_another_learners_due_card_changes_nothing_of_theirs(
    client_for, learner, other_learner, deck
):
    _enrol_due(client_for(other_learner), other_learner, deck)
    recall = deck.cards.get(key="why-scale")
    before = _snapshot(other_learner)
    response = client_for(learner).post(
        "/review/", {"card": recall.pk, "result": "fail"}, follow=True
    )
    assert "not in your review queue" in response.content.decode()
    assert _snapshot(other_learner) == before


def test_pages_show_only_the_learners_own_numbers(client_for, learner, other_learner, deck):
    other = client_for(other_learner)
    _enrol_due(other, other_learner, deck)
    recall = deck.cards.get(key="why-scale")
    other.post("/review/", {"card": recall.pk, "result": "pass"})
    LearnerProfile.objects.filter(user=other_learner).update(timezone="Asia/Tokyo")
    other_learner.email = "bob@example.org"
    other_learner.save()

    mine = client_for(learner)
    dashboard = mine.get("/")
    stats = dashboard.context["stats"]
    assert (stats["due_today"], stats["reviewed_today"], stats["streak_days"]) == (0, 0, 0)
    assert dashboard.context["calendar"] == {}
    assert mine.get("/review/").context["next_due_on"] is None
    profile = mine.get("/profile/").content.decode()
    assert "bob@example.org" not in profile
    assert 'value="Asia/Tokyo" selected' not in profile
    mine.post(
        "/profile/",
        {"email": "a@example.org", "timezone": "UTC", "day_starts_at": "4", "reminder_hour": "9"},
    )
    assert LearnerProfile.objects.get(user=other_learner).timezone == "Asia/Tokyo"
    other_learner.refresh_from_db()
    assert other_learner.email == "bob@example.org"


# --- Query counts do not grow with decks, cards or attempts ------------------------------


def _study_load(client, user, n: int) -> None:
    """``n`` decks of ``n`` tagged recall cards and one exercise card, all enrolled and due."""
    for d in range(n):
        deck = Deck.objects.create(slug=f"deck-{n}-{d}", title=f"Deck {d}", description="x")
        for i in range(n):
            card = Card.objects.create(
                deck=deck,
                key=f"r{i}",
                kind=Card.Kind.RECALL,
                prompt=f"p{i}",
                answer="a",
                position=i,
            )
            card.tags.add(Tag.objects.get_or_create(name=f"tag-{i}")[0])
        Card.objects.create(
            deck=deck,
            key="ex",
            kind=Card.Kind.EXERCISE,
            prompt="By hand.",
            exercise={"kind": "attention", "params": {"n": 2}},
            position=n,
        )
        assert client.post(f"/decks/{deck.slug}/enroll/").status_code == 302
    ReviewState.objects.filter(learner=user).update(due_on=_today(user))
    # A history to draw: one review per recall card on earlier days.
    for state in ReviewState.objects.filter(learner=user, card__kind=Card.Kind.RECALL):
        day = _today(user) - dt.timedelta(days=state.card.position + 1)
        ReviewLog.objects.create(
            learner=user,
            card_id=state.card_id,
            reviewed_at=timezone.now() - dt.timedelta(days=state.card.position + 1),
            study_day=day,
            result="pass",
            step_before=0,
            step_after=1,
            interval_days=3,
            due_before=day,
            due_after=day + dt.timedelta(days=3),
        )


def _queries(client, path: str) -> int:
    client.get(path)  # warm caches that are filled once (content types, the exercise binding)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    assert response.status_code == 200, (path, response.status_code)
    return len(captured)


@pytest.mark.parametrize("path", ["/", "/review/", "/exercises/", "/profile/"])
def test_page_queries_do_not_grow_with_decks_and_cards(client_for, make_user, path):
    counts = []
    for n in (1, 6):
        user = make_user()
        client = client_for(user)
        _study_load(client, user, n)
        for _ in range(n):
            exercise_services.exercise_create(owner=user, kind="attention", params={"n": 2})
        counts.append(_queries(client, path))
    assert counts[0] == counts[1], counts


def test_review_page_queries_do_not_grow_for_an_exercise_card(client_for, make_user):
    counts = []
    for n in (1, 6):
        user = make_user()
        client = client_for(user)
        _study_load(client, user, n)
        ReviewState.objects.filter(learner=user, card__kind=Card.Kind.RECALL).update(
            due_on=_today(user) + dt.timedelta(days=1)
        )
        counts.append(_queries(client, "/review/"))
        assert client.get("/review/").context["exercise"] is not None
    assert counts[0] == counts[1], counts


def test_exercise_page_queries_do_not_grow_with_attempts(client_for, learner):
    counts = []
    for attempts in (1, 3):
        exercise = exercise_services.exercise_create(
            owner=learner, kind="attention", params={"n": 3}
        )
        client = client_for(learner)
        for _ in range(attempts):
            client.post(f"/exercises/{exercise.pk}/submit/", _cells(exercise, fill="7"))
        assert Attempt.objects.filter(exercise=exercise).count() == attempts
        counts.append(_queries(client, f"/exercises/{exercise.pk}/"))
    assert counts[0] == counts[1], counts
