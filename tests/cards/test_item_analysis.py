"""Item analysis for staff: per-card figures and per-kind mistakes, set-based."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from cards import item_analysis, services
from cards.models import Card, Deck, Report, ReviewLog, ReviewState, Tag
from exercises.services import attempt_submit, exercise_create

pytestmark = pytest.mark.django_db
DAY = dt.date(2026, 3, 2)


def log(learner, card, result, day, *, undo_of=None):
    at = dt.datetime.combine(DAY + dt.timedelta(days=day), dt.time(12), tzinfo=dt.UTC)
    return ReviewLog.objects.create(
        learner=learner,
        card=card,
        reviewed_at=at + dt.timedelta(minutes=1 if undo_of else 0),
        study_day=at.date(),
        result=result,
        step_before=0,
        step_after=0,
        interval_days=1,
        due_before=at.date(),
        due_after=at.date(),
        undo_of=undo_of,
    )


@pytest.fixture
def content(db, make_user, settings):
    settings.STUDY_LEECH_LAPSES = 2
    deck = Deck.objects.create(slug="a", title="A")
    other = Deck.objects.create(slug="b", title="B")
    hard = Card.objects.create(deck=deck, key="hard", prompt="Hard one", answer="x")
    easy = Card.objects.create(deck=deck, key="easy", kind="interview", prompt="Easy one")
    elsewhere = Card.objects.create(deck=other, key="else", prompt="Elsewhere", answer="y")
    hard.tags.add(Tag.objects.create(name="softmax"))
    ann, ben, cat = make_user("ann"), make_user("ben"), make_user("cat")
    # hard: ann fails twice (a leech) then passes; ben fails, passes; cat's fail is undone.
    log(ann, hard, "fail", 0)
    log(ann, hard, "fail", 1)
    log(ann, hard, "pass", 2)
    log(ben, hard, "fail", 0)
    log(ben, hard, "pass", 1)
    undone = log(cat, hard, "fail", 0)
    log(cat, hard, "fail", 0, undo_of=undone)
    # easy: both pass first time.
    log(ann, easy, "pass", 0)
    log(ben, easy, "pass", 0)
    Report.objects.create(learner=ann, card=hard, text="typo")
    Report.objects.create(learner=ben, card=hard, text="done", resolved=True)
    return {"hard": hard, "easy": easy, "elsewhere": elsewhere}


def by_card(rows):
    return {row.card: row for row in rows}


def test_per_card_figures_are_net_of_undos(content):
    rows, total = item_analysis.card_analysis()
    assert total == 3
    hard = by_card(rows)[content["hard"].pk]
    assert (hard.learners, hard.reviews, hard.lapses, hard.leeches, hard.open_reports) == (
        2,
        5,
        3,
        1,
        1,
    )
    assert hard.first_pass_rate == 0.0 and hard.first_reviews == 2
    assert hard.later_reviews == 3 and hard.later_pass_rate == pytest.approx(2 / 3)
    easy = by_card(rows)[content["easy"].pk]
    assert (easy.first_pass_rate, easy.later_pass_rate, easy.lapses) == (1.0, None, 0)
    untouched = by_card(rows)[content["elsewhere"].pk]
    assert (untouched.reviews, untouched.first_pass_rate) == (0, None)


def test_sorting_filtering_and_paging(content):
    rows, _ = item_analysis.card_analysis(order="-lapses")
    assert rows[0].card == content["hard"].pk
    rows, _ = item_analysis.card_analysis(order="first_pass_rate")
    assert rows[0].card == content["elsewhere"].pk  # no reviews sorts first ascending
    assert [r.card for r in item_analysis.card_analysis(deck="b")[0]] == [content["elsewhere"].pk]
    assert [r.card for r in item_analysis.card_analysis(kind="interview")[0]] == [
        content["easy"].pk
    ]
    assert [r.card for r in item_analysis.card_analysis(tag="softmax")[0]] == [content["hard"].pk]
    page2, total = item_analysis.card_analysis(order="card", limit=2, offset=2)
    assert total == 3 and [r.card for r in page2] == [content["elsewhere"].pk]
    assert item_analysis.card_analysis(limit=2, offset=10) == ([], 3)
    with pytest.raises(ValueError):
        item_analysis.card_analysis(order="prompt; DROP TABLE x")


def test_one_statement_per_page_whatever_the_learners(content, make_user):
    for i in range(30):
        log(make_user(f"extra{i}"), content["hard"], "fail", 0)
    with CaptureQueriesContext(connection) as queries:
        rows, _ = item_analysis.card_analysis()
    # The figures, read from what the database keeps: no grouping of the log to tune for.
    assert len(queries) == 1
    assert by_card(rows)[content["hard"].pk].lapses == 33


def test_exercise_kinds_show_mistakes_and_wrong_cells(make_user):
    learner = make_user("solver")
    exercise = exercise_create(owner=learner, kind="attention", params={"seed": 3})
    answers = {}
    for ask in exercise.asks:
        value = exercise.solution[ask["name"]]
        answers[ask["name"]] = value
    # Wrong weights: cell [0, 0] off; all else right.
    weights = [row[:] for row in exercise.solution["weights"]]
    weights[0][0] += 0.5
    attempt_submit(
        owner=learner,
        exercise_id=exercise.pk,
        answers={**answers, "weights": weights},
        at=timezone.now(),
    )
    attempt_submit(owner=learner, exercise_id=exercise.pk, answers=answers, at=timezone.now())
    with CaptureQueriesContext(connection) as queries:
        kinds = item_analysis.exercise_kind_analysis()
    assert len(queries) == 1  # the counts the database keeps per kind
    (attention,) = kinds
    assert attention["kind"] == "attention"
    assert attention["attempts"] == 2 and attention["correct_rate"] == 0.5
    weights_part = next(p for p in attention["parts"] if p["name"] == "weights")
    assert weights_part["wrong"] == 1
    assert {"cell": [0, 0], "count": 1} in weights_part["cells"]


def test_exercise_kinds_count_diagnosed_mistakes(make_user):
    learner = make_user("unscaled")
    exercise = exercise_create(owner=learner, kind="attention", params={"seed": 5})
    # The unscaled mistake: scores without dividing by sqrt(d_k), and what follows.
    from exercises.kinds import get_kind

    kind = get_kind("attention")
    from exercises.checking import MISTAKES

    code = next(c for c in kind.mistakes if "scale" in c)
    variant = kind.answers_under(exercise.inputs, MISTAKES[code].recipe)
    answers = {a["name"]: exercise.solution[a["name"]] for a in exercise.asks}
    answers.update({k: v.tolist() for k, v in variant.items() if k in answers})
    attempt_submit(owner=learner, exercise_id=exercise.pk, answers=answers, at=timezone.now())
    (attention,) = item_analysis.exercise_kind_analysis()
    assert any(m["code"] == code and m["count"] == 1 for m in attention["mistakes"])


def test_admin_pages(content, staff):
    staff.is_superuser = True
    staff.save()
    client = Client()
    client.force_login(staff)
    index = client.get("/admin/").content.decode()
    assert "/admin/cards/cardanalysis/" in index
    page = client.get("/admin/cards/cardanalysis/?o=-lapses&deck=a").content.decode()
    assert "Hard one" in page and "Elsewhere" not in page
    assert f"/admin/cards/card/{content['hard'].pk}/change/" in page
    assert client.get("/admin/cards/cardanalysis/?o=bogus&p=x").status_code == 200
    kinds = client.get("/admin/cards/cardanalysis/kinds/")
    assert kinds.status_code == 200
    reports = client.get("/admin/cards/report/").content.decode()
    assert "typo" in reports
    report = Report.objects.get(text="typo")
    response = client.post(
        "/admin/cards/report/",
        {"action": "mark_resolved", "_selected_action": [report.pk]},
    )
    assert response.status_code == 302
    report.refresh_from_db()
    assert report.resolved


def test_report_admin_shows_the_learners_answer(make_user, staff, content):
    staff.is_superuser = True
    staff.save()
    learner = make_user("answerer")
    exercise = exercise_create(owner=learner, kind="attention", params={"seed": 1})
    answers = {a["name"]: exercise.solution[a["name"]] for a in exercise.asks}
    attempt_submit(owner=learner, exercise_id=exercise.pk, answers=answers, at=timezone.now())
    report = services.report_create(
        learner=learner, card_id=content["hard"].pk, exercise_id=exercise.pk, text="checker odd"
    )
    client = Client()
    client.force_login(staff)
    page = client.get(f"/admin/cards/report/{report.pk}/change/").content.decode()
    assert "checker odd" in page and "weights" in page


def test_learners_cannot_see_the_analysis(content, learner):
    client = Client()
    client.force_login(learner)
    assert client.get("/admin/cards/cardanalysis/").status_code == 302
    assert ReviewState.objects.count() == 0
