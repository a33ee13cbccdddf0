"""Lab cards on the ladder: a card of kind ``lab`` is reviewed by submitting its lab.

The first submission of the lab on a study day while the card is due records the
card's review, ``pass`` exactly when it passed; later ones that day are practice. The
sandbox is ``tiny_lab.FakeSandbox`` (it runs nothing); the tiny labs are the catalogue.
"""

from __future__ import annotations

import datetime as dt
import io
import sqlite3
import zipfile

import pytest
import time_machine
from django.core.management import call_command
from django.utils import timezone

from cards import anki
from cards.decks.exporting import deck_export
from cards.decks.format import DeckFileError
from cards.decks.importing import deck_import
from cards.models import Card, Deck, LabBinding, ReviewLog, ReviewState
from labs import reviews, services, tasks
from labs.catalogue import LABS
from labs.spec import RunResult

from .tiny_lab import FakeSandbox, install, right, wrong

pytestmark = pytest.mark.django_db

START = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)  # a Monday, noon UTC
DUE = START + dt.timedelta(days=1)
CODE = "def double(x):\n    return 2 * x\n"


@pytest.fixture
def sandbox(monkeypatch) -> FakeSandbox:
    fake = install(monkeypatch)
    monkeypatch.setattr(tasks.grade_submission, "delay", tasks.grade_submission)
    return fake


@pytest.fixture
def lab_deck(db):
    deck = Deck.objects.create(slug="labs-deck", title="Labs")
    Card.objects.create(deck=deck, key="tiny", kind="lab", lab="tiny", prompt="Do the tiny lab.")
    Card.objects.create(deck=deck, key="r", kind="recall", prompt="Recall", answer="it")
    return deck


@pytest.fixture
def enrolled(api, lab_deck):
    with time_machine.travel(START, tick=False):
        assert api.post("/api/v1/decks/labs-deck/enroll/").status_code == 200
    return Card.objects.get(kind="lab")


@pytest.fixture
def submit(django_capture_on_commit_callbacks):
    def post(client, at=DUE, lab="tiny"):
        with time_machine.travel(at, tick=False):
            with django_capture_on_commit_callbacks(execute=True):
                response = client.post(
                    f"/api/v1/labs/{lab}/submissions/", {"code": CODE}, format="json"
                )
            assert response.status_code == 202, response.json()
            return client.get(f"/api/v1/labs/submissions/{response.json()['id']}/").json()

    return post


def state_of(learner, card) -> ReviewState:
    return ReviewState.objects.get(learner=learner, card=card)


# --- the card ------------------------------------------------------------------------


def test_staff_create_a_lab_card_that_names_its_lab(staff_api, api, lab_deck, sandbox):
    body = {"deck": "labs-deck", "kind": "lab", "lab": {"slug": "tiny"}, "prompt": "Try it."}
    created = staff_api.post("/api/v1/cards/", body, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["lab"] == {"slug": "tiny"}
    assert created.json()["answer"] == ""  # a lab card is graded by its lab
    card = api.get(f"/api/v1/cards/{created.json()['id']}/").json()
    assert card["lab"] == {"slug": "tiny"} and card["kind"] == "lab"
    recall = Card.objects.get(kind="recall")
    assert api.get(f"/api/v1/cards/{recall.pk}/").json()["lab"] is None


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"kind": "lab", "lab": {"slug": "nope"}}, "lab", "got 'nope'"),
        ({"kind": "lab"}, "lab", "Expected the slug of a lab"),
        ({"kind": "lab", "lab": "tiny"}, "lab", "Expected {slug}"),
        ({"kind": "lab", "lab": {"slug": "tiny", "x": 1}}, "lab", "Expected {slug}"),
        ({"kind": "recall", "answer": "a", "lab": {"slug": "tiny"}}, "lab", "Only lab cards"),
    ],
)
def test_a_lab_card_without_a_known_lab_is_400(staff_api, lab_deck, sandbox, body, field, words):
    before = Card.objects.count()
    response = staff_api.post(
        "/api/v1/cards/", {"deck": "labs-deck", "prompt": "P", **body}, format="json"
    )
    assert response.status_code == 400
    assert words in " ".join(response.json()[field])
    assert Card.objects.count() == before


def test_the_database_keeps_lab_iff_kind_lab(lab_deck):
    from django.db import IntegrityError, transaction

    for kind, lab in (("lab", None), ("lab", ""), ("recall", "tiny")):
        with pytest.raises(IntegrityError), transaction.atomic():
            Card.objects.create(deck=lab_deck, kind=kind, lab=lab, prompt="P", answer="a")


def test_deck_files_carry_lab_cards_both_ways(lab_deck, sandbox):
    document = deck_export(deck=lab_deck)
    entry = next(e for e in document["cards"] if e["kind"] == "lab")
    assert entry["lab"] == "tiny"
    assert "lab" not in next(e for e in document["cards"] if e["kind"] == "recall")
    document["deck"]["slug"] = "copy"
    deck_import(data=document)
    assert Card.objects.get(deck__slug="copy", kind="lab").lab == "tiny"
    entry["lab"] = "nope"
    document["deck"]["slug"] = "broken"
    with pytest.raises(DeckFileError) as excinfo:
        deck_import(data=document)
    assert any(
        e.startswith("cards[0].lab: expected the slug of a lab") for e in excinfo.value.errors
    )
    assert not Deck.objects.filter(slug="broken").exists()


def test_the_starter_deck_has_one_lab_card_per_lab():
    call_command("load_starter_content", verbosity=0)
    cards = Card.objects.filter(deck__slug="attention-and-transformers", kind="lab")
    assert sorted(cards.values_list("lab", flat=True)) == sorted(LABS)


def test_the_anki_export_shows_the_prompt_and_the_reference_solution(lab_deck, sandbox, tmp_path):
    data = anki.deck_apkg(deck=lab_deck)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        (tmp_path / "c.anki2").write_bytes(archive.read("collection.anki2"))
    notes = {
        guid: flds.split("\x1f")
        for guid, flds in sqlite3.connect(tmp_path / "c.anki2").execute(
            "SELECT guid, flds FROM notes"
        )
    }
    front, back, kind = notes[anki.genanki.guid_for("labs-deck", "tiny")]
    assert "Do the tiny lab." in front and "Double and halve" in front
    assert "Reference solution" in back and "return 2 * x" in back
    assert kind == "Lab"


# --- the review ----------------------------------------------------------------------


def test_the_due_page_carries_the_lab_card(api, enrolled, sandbox):
    with time_machine.travel(DUE, tick=False):
        due = api.get("/api/v1/reviews/due/").json()
    item = next(i for i in due["results"] if i["card"]["kind"] == "lab")
    assert item["card"]["lab"] == {"slug": "tiny"}
    assert item.get("exercise") is None


def test_the_first_submission_of_the_day_records_the_review(
    api, learner, enrolled, sandbox, submit
):
    result = submit(api)
    assert result["passed"] is True
    log = ReviewLog.objects.get(learner=learner, card=enrolled)
    assert (log.result, log.step_before, log.step_after) == ("pass", 0, 1)
    assert state_of(learner, enrolled).due_on == dt.date(2026, 3, 6)
    # A second submission that day is practice: even a failing one changes nothing.
    sandbox.reply = wrong
    assert submit(api)["passed"] is False
    assert ReviewLog.objects.filter(learner=learner, card=enrolled).count() == 1
    assert state_of(learner, enrolled).step == 1


def test_a_failing_first_submission_records_a_fail(api, learner, enrolled, sandbox, submit):
    sandbox.reply = wrong
    submit(api)
    log = ReviewLog.objects.get(learner=learner, card=enrolled)
    assert log.result == "fail" and log.step_after == 0
    assert state_of(learner, enrolled).due_on == dt.date(2026, 3, 4)


def test_a_card_not_due_is_not_recorded(api, learner, enrolled, sandbox, submit):
    submit(api, at=START + dt.timedelta(hours=1))  # enrolled today: due tomorrow
    assert not ReviewLog.objects.filter(learner=learner).exists()
    assert not LabBinding.objects.exists()
    # ... and that practice does not spend tomorrow's first submission.
    submit(api)
    assert ReviewLog.objects.get(learner=learner, card=enrolled).result == "pass"


def test_a_submission_the_sandbox_could_not_run_frees_the_day(
    api, learner, enrolled, sandbox, submit
):
    sandbox.reply = lambda calls: RunResult(failure="the runner died")
    assert submit(api)["status"] == "failed"
    assert not ReviewLog.objects.filter(learner=learner).exists()
    assert not LabBinding.objects.exists()
    sandbox.reply = wrong
    submit(api)  # the next submission counts
    assert ReviewLog.objects.get(learner=learner, card=enrolled).result == "fail"


def test_a_malformed_answer_is_a_failed_attempt_that_counts(
    api, learner, enrolled, sandbox, submit
):
    # The code garbled its result channel, as code that checks its own answer first and
    # fails on purpose could: a judged attempt that failed, not a fault that frees the day.
    bad = "the lab runner's answer is malformed (line 3)"
    sandbox.reply = lambda calls: RunResult(failure=bad, malformed=bad)
    result = submit(api)
    assert (result["status"], result["passed"]) == ("done", False)
    assert all(bad in test["message"] for test in result["tests"])
    assert ReviewLog.objects.get(learner=learner, card=enrolled).result == "fail"
    sandbox.reply = right
    submit(api)  # practice now: the day's review is recorded
    assert ReviewLog.objects.filter(learner=learner, card=enrolled).count() == 1


def _lost(api, learner):
    """A submission posted on the due day whose grading started and whose worker died."""
    with time_machine.travel(DUE, tick=False):
        response = api.post("/api/v1/labs/tiny/submissions/", {"code": CODE}, format="json")
        assert response.status_code == 202
        pk = response.json()["id"]
        assert services._claim(pk) == 1  # the worker claimed it, then was killed
    return pk


def test_a_grading_taken_over_records_the_review_once(api, learner, enrolled, sandbox, monkeypatch):
    monkeypatch.setattr(tasks.grade_submission, "delay", lambda pk: None)
    pk = _lost(api, learner)
    after = DUE + dt.timedelta(seconds=services.lease_seconds() + 1)
    with time_machine.travel(after, tick=False):
        assert tasks.grade_submission(pk) == "done"  # the sweep's resend, taken over
        assert tasks.grade_submission(pk) is None  # a duplicate message: nothing
        reviews.graded(submission_id=pk, passed=True, at=after)  # and a late repeat
    assert ReviewLog.objects.filter(learner=learner, card=enrolled).count() == 1
    assert LabBinding.objects.get().submission_id == pk


def test_a_grading_lost_twice_frees_the_day_for_the_next_submission(
    api, learner, enrolled, sandbox, monkeypatch, submit
):
    monkeypatch.setattr(tasks.grade_submission, "delay", lambda pk: None)
    pk = _lost(api, learner)
    with time_machine.travel(DUE + dt.timedelta(seconds=services.lease_seconds() + 1)):
        assert services._claim(pk) == 2  # taken over; that worker is killed as well
    with time_machine.travel(DUE + dt.timedelta(seconds=3 * services.lease_seconds())):
        assert services.submissions_sweep(at=timezone.now())["failed"] == 1
    lost = api.get(f"/api/v1/labs/submissions/{pk}/").json()
    assert (lost["status"], lost["passed"]) == ("failed", None)
    assert "does not count" in lost["diagnosis"]
    assert not LabBinding.objects.exists() and not ReviewLog.objects.exists()
    monkeypatch.setattr(tasks.grade_submission, "delay", tasks.grade_submission)
    sandbox.reply = wrong
    result = submit(api, at=DUE + dt.timedelta(hours=1))
    assert ReviewLog.objects.get(learner=learner, card=enrolled).result == "fail"
    assert LabBinding.objects.get().submission_id == result["id"]


def test_grading_twice_records_once(api, learner, enrolled, sandbox, submit):
    result = submit(api)
    with time_machine.travel(DUE, tick=False):
        tasks.grade_submission(result["id"])
        reviews.graded(submission_id=result["id"], passed=True, at=DUE)
    assert ReviewLog.objects.filter(learner=learner, card=enrolled).count() == 1


def test_a_card_reviewed_before_grading_ends_is_not_reviewed_again(
    api, learner, enrolled, sandbox, django_capture_on_commit_callbacks
):
    with time_machine.travel(DUE, tick=False):
        with django_capture_on_commit_callbacks(execute=False) as queued:
            response = api.post("/api/v1/labs/tiny/submissions/", {"code": CODE}, format="json")
        # The learner leaves the deck while the submission waits: no review is recorded.
        assert api.delete("/api/v1/decks/labs-deck/enroll/").status_code == 204
        for callback in queued:
            callback()
    assert api.get(f"/api/v1/labs/submissions/{response.json()['id']}/").json()["passed"]
    assert not ReviewLog.objects.filter(learner=learner).exists()


def test_another_learners_submission_never_reviews_my_card(
    api, other_api, learner, other_learner, enrolled, sandbox, submit
):
    with time_machine.travel(DUE, tick=False):
        other_api.post("/api/v1/decks/labs-deck/enroll/")  # due for them tomorrow
    result = submit(other_api)  # their submission, on the day my card is due
    assert not ReviewLog.objects.exists()
    assert not LabBinding.objects.exists()
    assert api.get(f"/api/v1/labs/submissions/{result['id']}/").status_code == 404
    submit(api)
    assert ReviewLog.objects.get().learner == learner


def test_a_lab_card_cannot_be_reviewed_directly(api, enrolled, sandbox):
    with time_machine.travel(DUE, tick=False):
        response = api.post(
            "/api/v1/reviews/", {"card": enrolled.pk, "result": "pass"}, format="json"
        )
    assert response.status_code == 400
    assert "lab card" in response.json()["card"][0]
    assert not ReviewLog.objects.exists()


def test_the_review_page_links_to_the_lab(client, learner, lab_deck, sandbox):
    client.force_login(learner)
    with time_machine.travel(START, tick=False):
        client.post("/api/v1/decks/labs-deck/enroll/")
    ReviewState.objects.filter(card__kind="recall").delete()
    with time_machine.travel(DUE, tick=False):
        page = client.get("/review/").content.decode()
    assert "Do the tiny lab." in page
    assert 'href="/labs/tiny/"' in page and "Open the lab" in page
    assert 'id="grade-form"' not in page


def test_stats_forecast_counts_lab_cards(api, enrolled, sandbox):
    with time_machine.travel(START, tick=False):
        stats = api.get("/api/v1/stats/").json()
    day = stats["forecast"][1]
    assert (day["date"], day["count"]) == ("2026-03-03", 2)
    with time_machine.travel(DUE, tick=False):
        assert api.get("/api/v1/stats/").json()["due_today"] == 2


def test_the_admin_card_editor_offers_the_catalogues_labs(lab_deck, sandbox):
    from cards.forms import CardAdminForm

    def form(**values):
        data = {
            "deck": lab_deck.pk,
            "key": "",
            "kind": "lab",
            "position": 0,
            "is_active": "on",
            "prompt": "A lab card",
            "answer": "",
            "exercise": "null",
            **values,
        }
        return CardAdminForm(data=data)

    good = form(lab="tiny")
    assert good.is_valid(), good.errors
    assert good.save().lab == "tiny"
    assert "tiny" in str(good["lab"])  # offered in the select
    unknown = form(lab="nope")
    assert not unknown.is_valid() and "got 'nope'" in unknown.errors["lab"][0]
    missing = form(lab="")
    assert not missing.is_valid() and "lab" in missing.errors
    on_recall = form(kind="recall", answer="a", lab="tiny")
    assert not on_recall.is_valid() and "Only lab cards" in on_recall.errors["lab"][0]


def test_staff_read_submissions_in_the_admin_and_cannot_change_them(
    admin_client, api, enrolled, sandbox, submit
):
    result = submit(api)
    listing = admin_client.get("/admin/labs/submission/", {"lab": "tiny", "status": "done"})
    assert listing.status_code == 200 and "alice" in listing.content.decode()
    assert admin_client.get("/admin/labs/submission/", {"q": "alice"}).status_code == 200
    page = admin_client.get(f"/admin/labs/submission/{result['id']}/change/")
    assert page.status_code == 200 and "return 2 * x" in page.content.decode()
    assert admin_client.get("/admin/labs/submission/add/").status_code == 403
    deleted = admin_client.post(f"/admin/labs/submission/{result['id']}/delete/", {"post": "yes"})
    assert deleted.status_code == 403


def test_my_submissions_are_in_my_export_and_go_with_my_account(
    api, learner, enrolled, sandbox, submit
):
    result = submit(api)
    exported = api.get("/api/v1/me/export/").json()["lab_submissions"]
    assert [(s["id"], s["lab"], s["code"], s["passed"]) for s in exported] == [
        (result["id"], "tiny", CODE, True)
    ]
    from labs.models import Submission

    learner.delete()
    assert not Submission.objects.exists() and not LabBinding.objects.exists()


def test_the_lab_page_says_when_a_submission_reviews_the_card(
    client, learner, lab_deck, sandbox, django_capture_on_commit_callbacks
):
    client.force_login(learner)
    with time_machine.travel(START, tick=False):
        client.post("/api/v1/decks/labs-deck/enroll/")
        assert "lab-review-due" not in client.get("/labs/tiny/").content.decode()  # not yet due

    def submit_on_page() -> str:
        with time_machine.travel(DUE, tick=False):
            with django_capture_on_commit_callbacks(execute=True):
                response = client.post("/labs/tiny/", {"code": CODE})
            assert response.status_code == 302
            return client.get(response["Location"]).content.decode()

    with time_machine.travel(DUE, tick=False):
        page = client.get("/labs/tiny/").content.decode()
    assert "This lab is due in your review today" in page
    first = submit_on_page()
    assert "This submission recorded your review of this lab: <strong>Good</strong>" in first
    assert 'href="/review/">Continue reviewing</a>' in first
    assert "lab-review-due" not in first  # recorded: nothing waits any more
    # A second submission the same day is practice, and says nothing of the review.
    sandbox.reply = wrong
    second = submit_on_page()
    assert "Failed:" in second and 'id="lab-review"' not in second
    # The polled result of the first still says what it recorded.
    first_id = LabBinding.objects.get(learner=learner).submission_id
    with time_machine.travel(DUE, tick=False):
        polled = client.get(f"/labs/tiny/submissions/{first_id}/result/").content.decode()
    assert "recorded your review of this lab: <strong>Good</strong>" in polled


def test_a_failed_first_submission_says_again(
    client, learner, lab_deck, sandbox, django_capture_on_commit_callbacks
):
    client.force_login(learner)
    with time_machine.travel(START, tick=False):
        client.post("/api/v1/decks/labs-deck/enroll/")
    sandbox.reply = wrong
    with time_machine.travel(DUE, tick=False):
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post("/labs/tiny/", {"code": CODE})
        page = client.get(response["Location"]).content.decode()
    assert "recorded your review of this lab: <strong>Again</strong>" in page
    # Without the study core's side (labs alone), a lab page says nothing of reviews.
    assert reviews.ReviewSide().due(learner=learner, lab_slug="tiny", at=DUE) is False
    assert reviews.ReviewSide().review_of(submission_id=1) is None
