"""Decks as Anki packages and the review log as CSV for FSRS tools."""

from __future__ import annotations

import csv
import datetime as dt
import io
import sqlite3
import zipfile
from pathlib import Path

import pytest
import time_machine
from django.core.management import call_command
from django.test import Client

from cards import anki, services
from cards.models import Card, Deck, ReviewLog

from .conftest import START

pytestmark = pytest.mark.django_db


@pytest.fixture
def anki_deck(db):
    deck = Deck.objects.create(slug="heads", title="Heads", description="One head by hand")
    Card.objects.create(
        deck=deck,
        key="why-scale",
        kind="recall",
        prompt=r"Why divide by $\sqrt{d_k}$?",
        answer="So that $$\\mathrm{softmax}(QK^T)$$ does not saturate; see **variance**.",
        position=0,
    )
    Card.objects.create(
        deck=deck, key="explain", kind="interview", prompt="Explain attention", answer="Q, K, V"
    )
    Card.objects.create(
        deck=deck,
        key="by-hand",
        kind="exercise",
        prompt="Compute one head.",
        exercise={"kind": "attention", "params": {"n": 2, "d_k": 2, "d_v": 2}},
    )
    Card.objects.create(
        deck=deck, key="gone", kind="recall", prompt="Old", answer="x", is_active=False
    )
    return deck


def open_apkg(data: bytes, tmp_path: Path) -> sqlite3.Connection:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert "collection.anki2" in archive.namelist()
        path = tmp_path / "collection.anki2"
        path.write_bytes(archive.read("collection.anki2"))
    return sqlite3.connect(path)


def notes_of(db: sqlite3.Connection) -> dict[str, list[str]]:
    return {guid: flds.split("\x1f") for guid, flds in db.execute("SELECT guid, flds FROM notes")}


def test_the_package_holds_one_basic_note_and_card_per_active_card(anki_deck, tmp_path):
    db = open_apkg(anki.deck_apkg(deck=anki_deck), tmp_path)
    notes = notes_of(db)
    assert len(notes) == 3
    assert db.execute("SELECT COUNT(*) FROM cards").fetchone()[0] == 3
    front, back, kind = notes[anki.genanki.guid_for("heads", "why-scale")]
    assert r"\(\sqrt{d_k}\)" in front and "$" not in front
    assert r"\[\mathrm{softmax}(QK^T)\]" in back and "<strong>variance</strong>" in back
    assert kind == "Recall"
    _, back, kind = notes[anki.genanki.guid_for("heads", "explain")]
    assert back == "<p>Q, K, V</p>" and kind == "Interview question"
    # The exercise: a worked example of one fixed variant with its solution.
    front, back, kind = notes[anki.genanki.guid_for("heads", "by-hand")]
    assert "Worked example" in front and "Compute one head." in front
    assert "Solution" in back and r"\[\begin{pmatrix}" in back
    assert kind == "Exercise"
    deck_names = db.execute("SELECT decks FROM col").fetchone()[0]
    assert "Heads" in deck_names


def test_a_re_export_keeps_note_ids_and_the_variant(anki_deck, tmp_path):
    first = notes_of(open_apkg(anki.deck_apkg(deck=anki_deck), tmp_path))
    Card.objects.filter(key="explain").update(answer="Queries, keys, values")
    (tmp_path / "again").mkdir()
    second = notes_of(open_apkg(anki.deck_apkg(deck=anki_deck), tmp_path / "again"))
    assert set(first) == set(second)
    guid = anki.genanki.guid_for("heads", "explain")
    assert second[guid][1] == "<p>Queries, keys, values</p>"
    by_hand = anki.genanki.guid_for("heads", "by-hand")
    assert first[by_hand] == second[by_hand]


def test_an_interview_note_carries_the_key_points_after_the_answer(anki_deck, tmp_path):
    card = Card.objects.get(key="explain")
    card.points = [
        "Scores are $QK^T$ scaled by $\\sqrt{d_k}$",
        " ",
        "Weights sum to 1<script>alert(1)</script>",
    ]
    card.save()
    notes = notes_of(open_apkg(anki.deck_apkg_cached(deck=anki_deck), tmp_path))
    _, back, _ = notes[anki.genanki.guid_for("heads", "explain")]
    assert back.startswith("<p>Q, K, V</p>")
    assert "<strong>Key points</strong>" in back
    items = back.split("<li>")[1:]
    assert len(items) == 2  # the blank point is left out
    assert r"\(QK^T\)" in items[0] and r"\(\sqrt{d_k}\)" in items[0]
    assert "<script" not in back and "Weights sum to 1" in items[1]
    # A recall card's back stays its answer alone, whatever its points field holds.
    Card.objects.filter(key="why-scale").update(points=["not shown"])
    (tmp_path / "again").mkdir()
    notes = notes_of(open_apkg(anki.deck_apkg(deck=anki_deck), tmp_path / "again"))
    assert "not shown" not in notes[anki.genanki.guid_for("heads", "why-scale")][1]


def test_the_api_serves_the_package(api, anki_deck, tmp_path):
    response = api.get("/api/v1/decks/heads/export.apkg")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/apkg"
    assert 'filename="heads.apkg"' in response["Content-Disposition"]
    assert len(notes_of(open_apkg(response.content, tmp_path))) == 3
    assert api.get("/api/v1/decks/nope/export.apkg").status_code == 404


def test_export_deck_command_writes_apkg(anki_deck, tmp_path):
    out = tmp_path / "heads.apkg"
    call_command("export_deck", "heads", "--output", str(out))
    assert len(notes_of(open_apkg(out.read_bytes(), tmp_path))) == 3
    out2 = tmp_path / "explicit.bin"
    call_command("export_deck", "heads", "--format", "apkg", "-o", str(out2))
    assert zipfile.is_zipfile(out2)
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="give a file with -o"):
        call_command("export_deck", "heads", "--format", "apkg")


def test_admin_action_downloads_the_package(anki_deck, staff, tmp_path):
    staff.is_superuser = True
    staff.save()
    client = Client()
    client.force_login(staff)
    response = client.post(
        "/admin/cards/deck/",
        {"action": "export_apkg", "_selected_action": [anki_deck.pk]},
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "application/apkg"
    assert len(notes_of(open_apkg(response.content, tmp_path))) == 3


# --- review log as CSV ---------------------------------------------------------------


def test_reviews_csv_in_the_fsrs_layout_net_of_undos(api, learner, anki_deck):
    cards = list(anki_deck.cards.filter(kind="recall", is_active=True))
    card = cards[0]
    with time_machine.travel(START, tick=False) as traveller:
        services.enroll(learner=learner, deck=anki_deck, at=START)
        day1 = START + dt.timedelta(days=1)
        traveller.move_to(day1)
        services.review_record(learner=learner, card=card, result="fail", at=day1)
        day2 = START + dt.timedelta(days=2)
        traveller.move_to(day2)
        undone = services.review_record(learner=learner, card=card, result="pass", at=day2)
        services.review_undo(learner=learner, review_id=undone.pk, at=day2)
        later = day2 + dt.timedelta(minutes=5)
        services.review_record(learner=learner, card=card, result="pass", at=later)
        response = api.get("/api/v1/me/reviews.csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == ["card_id", "review_time", "review_rating", "review_state", "review_duration"]
    ms = lambda at: str(int(at.timestamp() * 1000))  # noqa: E731
    assert rows[1:] == [
        [str(card.pk), ms(day1), "1", "0", "0"],
        [str(card.pk), ms(later), "3", "3", "0"],
    ]
    assert ReviewLog.objects.count() == 4  # the log itself keeps every entry


def test_reviews_csv_is_private(api, other_api, learner, anki_deck):
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        services.enroll(learner=learner, deck=anki_deck, at=START)
        card = anki_deck.cards.get(key="why-scale")
        services.review_record(
            learner=learner, card=card, result="pass", at=START + dt.timedelta(days=1)
        )
    assert len(api.get("/api/v1/me/reviews.csv").content.decode().splitlines()) == 2
    assert len(other_api.get("/api/v1/me/reviews.csv").content.decode().splitlines()) == 1
