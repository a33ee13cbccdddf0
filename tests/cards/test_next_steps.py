"""What next: the steps the dashboard and the "All done" page name, on histories built by hand."""

from __future__ import annotations

import datetime as dt

import pytest

from cards.models import Card, Deck, Enrollment, LessonSection, ReviewLog, ReviewState
from cards.next_steps import next_steps
from labs.models import Submission

from .conftest import START
from .test_topics import _card, _log, _state

pytestmark = pytest.mark.django_db

TODAY = START.date()


@pytest.fixture
def deck(learner):
    deck = Deck.objects.create(slug="heads", title="Heads")
    Enrollment.objects.create(learner=learner, deck=deck)
    for position, (key, title) in enumerate(
        [("shapes", "Shapes"), ("masks", "Masks"), ("cost", "Cost")]
    ):
        LessonSection.objects.create(
            deck=deck, key=key, title=title, body=f"About {key}.", position=position
        )
    return deck


def _steps(learner, forecast=None, today=TODAY):
    return {
        step.key: step
        for step in reversed(next_steps(learner=learner, today=today, forecast=forecast or []))
    }


def _keys(learner, **options):
    return [step.key for step in next_steps(learner=learner, today=TODAY, forecast=[], **options)]


def test_nothing_to_say_for_a_learner_without_decks(learner):
    assert next_steps(learner=learner, today=TODAY, forecast=[]) == []


def test_next_reviews_come_from_the_forecast(learner, deck):
    later = [
        {"date": TODAY, "count": 0},
        {"date": TODAY + dt.timedelta(days=1), "count": 0},
        {"date": TODAY + dt.timedelta(days=2), "count": 7},
    ]
    step = _steps(learner, later)["reviews"]
    assert step.text == "Next reviews: 7 cards on Wed 4 Mar."
    assert step.url == "/#forecast-heading"
    step = _steps(learner, [{"date": TODAY, "count": 1}])["reviews"]
    assert (step.text, step.url) == ("1 card due today.", "/review/")


def test_without_a_forecast_the_learners_own_is_read(learner, deck):
    card = _card(deck, "a", position=1)
    _state(learner, card, 1, due_on=TODAY + dt.timedelta(days=3))
    steps = next_steps(learner=learner, today=TODAY)
    assert steps[0].key == "reviews"
    assert steps[0].text == "Next reviews: 1 card on Thu 5 Mar."


def test_the_sections_behind_the_cards_missed_most(learner, other_learner, deck):
    masks = [_card(deck, f"m{i}", position=i, lesson_section="masks") for i in range(2)]
    cost = _card(deck, "c", position=5, lesson_section="cost")
    shapes = _card(deck, "s", position=6, lesson_section="shapes")
    for card in (*masks, cost, shapes):
        _state(learner, card, 0)
    _log(learner, masks[0], "fail", days_ago=1)
    _log(learner, masks[1], "fail", days_ago=2)
    _log(learner, masks[1], "fail", days_ago=3)
    _log(learner, cost, "fail", days_ago=4)
    _log(learner, shapes, "pass", days_ago=1)  # passed: not missed
    _log(learner, shapes, "fail", days_ago=45)  # too long ago
    undone = _log(learner, shapes, "fail", days_ago=1)
    _log(learner, shapes, "fail", days_ago=1, undo_of=undone)  # undone: not counted
    # Another learner's fails on the same deck never count for this one.
    Enrollment.objects.create(learner=other_learner, deck=deck)
    for _ in range(5):
        _log(other_learner, shapes, "fail", days_ago=1)

    lessons = [
        s for s in next_steps(learner=learner, today=TODAY, forecast=[]) if s.key == "lesson"
    ]
    assert [(s.url, s.text, s.link_text) for s in lessons] == [
        ("/decks/heads/lesson/#masks", "Missed 3 times lately:", "read “Masks” again"),
        ("/decks/heads/lesson/#cost", "Missed 1 time lately:", "read “Cost” again"),
    ]
    other = [s for s in next_steps(learner=other_learner, today=TODAY, forecast=[])]
    assert [s.url for s in other if s.key == "lesson"] == ["/decks/heads/lesson/#shapes"]


def test_the_lab_not_yet_passed(learner, other_learner, deck):
    _card(deck, "lab-softmax", position=1, kind="lab", lab="softmax")
    _card(deck, "lab-attention", position=2, kind="lab", lab="attention")
    step = _steps(learner)["lab"]
    assert (step.text, step.url) == ("A lab you have not tried yet:", "/labs/softmax/")
    Submission.objects.create(
        learner=learner, lab="softmax", code="x", seed=1, status="done", passed=False
    )
    step = _steps(learner)["lab"]
    assert (step.text, step.url) == ("A lab not passed yet:", "/labs/softmax/")
    Submission.objects.create(
        learner=learner, lab="softmax", code="x", seed=2, status="done", passed=True
    )
    # Another learner passing the second lab changes nothing here.
    Submission.objects.create(
        learner=other_learner, lab="attention", code="x", seed=3, status="done", passed=True
    )
    step = _steps(learner)["lab"]
    assert step.url == "/labs/attention/"
    Submission.objects.create(
        learner=learner, lab="attention", code="x", seed=4, status="done", passed=True
    )
    assert "lab" not in _steps(learner)


def test_a_practice_exercise_of_the_weakest_kind(learner, deck):
    attention = _card(
        deck, "e1", position=1, kind="exercise", exercise={"kind": "attention", "params": {}}
    )
    heads = _card(
        deck, "e2", position=2, kind="exercise", exercise={"kind": "multi_head", "params": {}}
    )
    _log(learner, attention, "pass", days_ago=1)
    # multi_head was never reviewed: it comes first.
    step = _steps(learner)["exercise"]
    assert step.url == "/exercises/?kind=multi_head"
    assert step.text == "An exercise kind you have not practised lately:"
    _log(learner, heads, "pass", days_ago=1)
    _log(learner, heads, "fail", days_ago=2)
    step = _steps(learner)["exercise"]
    assert step.url == "/exercises/?kind=multi_head"
    assert step.text == "Your weakest exercise kind (50 % passed):"
    for _ in range(3):
        _log(learner, attention, "fail", days_ago=1)
    assert _steps(learner)["exercise"].url == "/exercises/?kind=attention"
    # Every kind passed every time: nothing to suggest.
    ReviewState.objects.all().delete()
    ReviewLog.objects.filter(result="fail").update(result="pass")
    assert "exercise" not in _steps(learner)


def test_the_interview_question_due_soonest(learner, deck):
    later = _card(deck, "i1", position=1, kind="interview", lesson_section="masks")
    sooner = _card(deck, "i2", position=2, kind="interview")
    suspended = _card(deck, "i3", position=3, kind="interview")
    _state(learner, later, 1, due_on=TODAY + dt.timedelta(days=5))
    _state(learner, sooner, 1, due_on=TODAY + dt.timedelta(days=2))
    ReviewState.objects.create(
        learner=learner, card=suspended, step=1, due_on=TODAY, suspended=True
    )
    step = _steps(learner)["interview"]
    assert step.text == "The next interview question, due Wed 4 Mar:"
    assert (step.prompt, step.url) == ("i2", f"/cards/{sooner.pk}/notes/")
    ReviewState.objects.filter(card=sooner).delete()
    step = _steps(learner)["interview"]
    assert step.url == "/decks/heads/lesson/#masks"
    ReviewState.objects.filter(card=later).update(due_on=TODAY)
    step = _steps(learner)["interview"]
    assert (step.text, step.url) == ("An interview question is due today:", "/review/")


def test_the_steps_read_in_a_fixed_number_of_queries(learner, deck, django_assert_max_num_queries):
    for i in range(40):
        kind = ("recall", "interview", "exercise", "lab")[i % 4]
        extra = {"exercise": {"kind": "attention", "params": {}}} if kind == "exercise" else {}
        if kind == "lab":
            extra = {"lab": ("softmax", "attention")[i % 2]}
        card = _card(deck, f"k{i}", position=i, kind=kind, lesson_section="masks", **extra)
        _state(learner, card, i % 5)
        _log(learner, card, "fail" if i % 3 else "pass", days_ago=i % 10)
    learner.profile  # noqa: B018 - read once, as the page's request has
    with django_assert_max_num_queries(9):
        steps = next_steps(learner=learner, today=TODAY, forecast=[])
    assert {step.key for step in steps} == {"lesson", "lab", "exercise", "interview"}
    assert Card.objects.count() == 40
