"""Deck files: validation names entry and field, import is all-or-nothing and idempotent,
edits never reset progress, export round-trips, and the commands behave."""

from __future__ import annotations

import copy
import datetime as dt
import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.utils import timezone
from kombu.exceptions import OperationalError

from cards import services, tasks
from cards.decks import (
    DeckFileError,
    deck_dump,
    deck_export,
    deck_import,
    deck_load,
)
from cards.models import Card, Deck, Enrollment, ReviewState, Tag

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]


def _doc(n: int = 3, slug: str = "toy-deck") -> dict:
    cards = [
        {
            "key": f"card-{i}",
            "kind": "recall",
            "prompt": f"Prompt {i}: what is $QK^\\top$?",
            "answer": f"Answer {i}: an $(n, n)$ matrix.",
            "tags": ["shapes", f"t{i % 2}"],
            "exercise": None,
            "active": True,
        }
        for i in range(n)
    ]
    cards.append(
        {
            "key": "hand-attention",
            "kind": "exercise",
            "prompt": "Attention by hand.",
            "answer": "",
            "tags": ["exercise"],
            "exercise": {"kind": "attention", "params": {"n": 3, "mask": "causal"}},
            "active": True,
        }
    )
    return {
        "format": 1,
        "deck": {"slug": slug, "title": "Toy deck", "description": "For tests."},
        "cards": cards,
    }


def _counts() -> tuple[int, int, int, int]:
    return (
        Deck.objects.count(),
        Card.objects.count(),
        Tag.objects.count(),
        Card.tags.through.objects.count(),
    )


# --- Validation: each kind of error names the entry and field, and imports nothing ----------


def _set(path, value):
    def mutate(doc):
        target = doc
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return mutate


def _drop(path):
    def mutate(doc):
        target = doc
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]

    return mutate


BAD_FILES = [
    (_set(["format"], 2), "format: expected 1, got 2"),
    (_set(["surprise"], 1), "surprise: unknown field"),
    (_set(["deck"], "toy"), "deck: expected a mapping"),
    (_set(["deck", "slug"], "Toy Deck!"), "deck.slug: expected a slug"),
    (_set(["deck", "title"], ""), "deck.title: expected text of 1 to 200 characters"),
    (_set(["cards"], {"a": 1}), "cards: expected a list, got a mapping"),
    (_set(["cards", 1], "just text"), "cards[1]: expected a mapping, got a string"),
    (_set(["cards", 2, "promt"], "typo"), "cards[2].promt: unknown field"),
    (
        _set(["cards", 1, "kind"], "quiz"),
        "cards[1].kind: expected one of recall, interview, exercise, lab, got 'quiz'",
    ),
    (_drop(["cards", 0, "prompt"]), "cards[0].prompt: expected Markdown text, got null"),
    (
        _set(["cards", 0, "prompt"], "   "),
        "cards[0].prompt: expected Markdown text, got an empty string",
    ),
    (_set(["cards", 0, "answer"], ["a"]), "cards[0].answer: expected Markdown text, got a list"),
    (_set(["cards", 2, "answer"], ""), "cards[2].answer: a recall card needs an answer"),
    (
        _set(["cards", 1, "prompt"], "Broken $x^$ math"),
        "cards[1].prompt: math does not render: $x^$",
    ),
    (_set(["cards", 0, "tags"], "shapes"), "cards[0].tags: expected a list of tag slugs"),
    (_set(["cards", 0, "tags"], ["ok", "not a slug"]), "cards[0].tags[1]: expected a slug"),
    (_set(["cards", 2, "key"], "card-0"), "cards[2].key: 'card-0' is already the key of cards[0]"),
    (_set(["cards", 1, "key"], "bad key"), "cards[1].key: expected a slug"),
    (_set(["cards", 1, "active"], "yes"), "cards[1].active: expected true or false, got 'yes'"),
    (
        _set(["cards", 3, "exercise"], None),
        "cards[3].exercise: an exercise card needs {kind, params}",
    ),
    (
        _set(["cards", 0, "exercise"], {"kind": "attention", "params": {}}),
        "cards[0].exercise: only exercise cards carry one; expected null for a recall card",
    ),
    (
        _set(["cards", 3, "exercise", "kind"], "telepathy"),
        "cards[3].exercise.kind: expected one of ablation, attention,",
    ),
    (
        _set(["cards", 3, "exercise", "params"], {"n": 99}),
        "cards[3].exercise.params.n: expected a value from 2",
    ),
    (
        _set(["cards", 3, "exercise", "params"], {"shape": 1}),
        "cards[3].exercise.params.shape: unknown parameter for kind 'attention'",
    ),
    (
        _set(["cards", 3, "exercise", "params"], {"seed": 7}),
        "cards[3].exercise.params.seed: remove the seed: an exercise card gets a fresh, server-chosen seed at every review",
    ),
    (_set(["cards", 3, "exercise", "params"], [1]), "cards[3].exercise.params: expected a mapping"),
]


@pytest.mark.parametrize(("mutate", "message"), BAD_FILES)
def test_a_bad_file_names_entry_and_field_and_imports_nothing(mutate, message):
    deck_import(data=_doc(slug="other-deck"))  # something already in the database
    before = _counts()
    doc = _doc()
    mutate(doc)
    with pytest.raises(DeckFileError) as excinfo:
        deck_import(data=doc)
    assert any(error.startswith(message) for error in excinfo.value.errors), excinfo.value.errors
    assert _counts() == before


def test_every_problem_is_listed_and_a_bad_update_leaves_the_deck_untouched():
    deck_import(data=_doc())
    snapshot = deck_export(deck=Deck.objects.get(slug="toy-deck"))
    doc = _doc()
    doc["cards"][0]["prompt"] = "An edit that must not land."
    doc["cards"][1]["kind"] = "quiz"
    doc["cards"][2]["tags"] = [3]
    with pytest.raises(DeckFileError) as excinfo:
        deck_import(data=doc)
    assert [e.split(":")[0] for e in excinfo.value.errors] == ["cards[1].kind", "cards[2].tags[0]"]
    assert deck_export(deck=Deck.objects.get(slug="toy-deck")) == snapshot


def test_formula_errors_are_listed_with_the_other_problems():
    doc = _doc()
    doc["cards"][0]["answer"] = "Unbalanced $\\left( x$ here."
    doc["cards"][2]["kind"] = "quiz"
    with pytest.raises(DeckFileError) as excinfo:
        deck_import(data=doc)
    assert excinfo.value.errors == [
        "cards[0].answer: math does not render: $\\left( x$",
        "cards[2].kind: expected one of recall, interview, exercise, lab, got 'quiz'",
    ]


def test_only_new_or_edited_text_has_its_formulas_converted():
    deck_import(data=_doc())
    deck = Deck.objects.get(slug="toy-deck")
    # Text stored by other means (the admin) is taken as it is on re-import ...
    Card.objects.filter(key="card-0").update(answer="Stored $x^$ text.")
    doc = deck_export(deck=deck)
    assert deck_import(data=doc).unchanged == 4
    # ... while the same formula in new or edited text is refused.
    doc["cards"][1]["answer"] = "Edited $x^$ text."
    with pytest.raises(DeckFileError, match=r"cards\[1\]\.answer: math does not render: \$x\^\$"):
        deck_import(data=doc)


def test_syntax_errors_name_the_line():
    with pytest.raises(DeckFileError, match=r"not valid YAML: line 3 column"):
        deck_load("format: 1\ndeck:\n\tslug: x\n", name="x.yaml")
    with pytest.raises(DeckFileError, match=r"not valid JSON: line 2 column"):
        deck_load('{"format": 1,\n  "deck": }', name="x.json")


def test_a_document_that_is_not_a_mapping_is_refused():
    with pytest.raises(DeckFileError, match="expected a mapping with format, deck and cards, got a list"):  # fmt: skip
        deck_import(data="- 1\n- 2\n")


# --- Import semantics --------------------------------------------------------------------------


def test_import_creates_then_reimport_is_a_no_op():
    first = deck_import(data=_doc())
    assert (first.deck_created, first.created, first.updated, first.unchanged) == (True, 4, 0, 0)
    deck = Deck.objects.get(slug="toy-deck")
    card = deck.cards.get(key="card-1")
    assert card.position == 1 and sorted(card.tags.values_list("name", flat=True)) == [
        "shapes",
        "t1",
    ]
    exercise = deck.cards.get(key="hand-attention")
    assert exercise.exercise == {"kind": "attention", "params": {"n": 3, "mask": "causal"}}

    stamps = dict(deck.cards.values_list("pk", "updated_at"))
    again = deck_import(data=_doc())
    assert (again.deck_created, again.created, again.updated, again.unchanged) == (False, 0, 0, 4)
    assert dict(deck.cards.values_list("pk", "updated_at")) == stamps


def test_editing_text_keeps_every_learners_progress(learner, other_learner):
    deck_import(data=_doc())
    deck = Deck.objects.get(slug="toy-deck")
    at = timezone.now()
    services.enroll(learner=learner, deck=deck, at=at)
    services.enroll(learner=other_learner, deck=deck, at=at)
    card = deck.cards.get(key="card-1")
    ReviewState.objects.filter(learner=learner, card=card).update(
        step=3, due_on=dt.date(2031, 5, 17), last_reviewed_at=at
    )
    states_before = {
        (s.learner_id, s.card_id): (s.step, s.due_on, s.last_reviewed_at)
        for s in ReviewState.objects.all()
    }

    doc = _doc()
    doc["cards"][1]["prompt"] = "Prompt 1, reworded: what shape is $QK^\\top$?"
    doc["cards"][1]["answer"] = "Square: $(n, n)$."
    doc["cards"][1]["tags"] = ["shapes", "edited"]
    doc["cards"][1]["kind"] = "interview"
    report = deck_import(data=doc)

    assert (report.created, report.updated, report.unchanged) == (0, 1, 3)
    card.refresh_from_db()
    assert card.prompt.startswith("Prompt 1, reworded") and card.kind == "interview"
    assert sorted(card.tags.values_list("name", flat=True)) == ["edited", "shapes"]
    states_after = {
        (s.learner_id, s.card_id): (s.step, s.due_on, s.last_reviewed_at)
        for s in ReviewState.objects.all()
    }
    assert states_after == states_before
    assert states_after[(learner.pk, card.pk)][:2] == (3, dt.date(2031, 5, 17))


def test_tag_only_edit_counts_as_an_update():
    deck_import(data=_doc())
    doc = _doc()
    doc["cards"][0]["tags"] = ["shapes"]
    report = deck_import(data=doc)
    assert (report.updated, report.unchanged) == (1, 3)
    assert list(Card.objects.get(key="card-0").tags.values_list("name", flat=True)) == ["shapes"]


def test_reordering_updates_positions_only():
    deck_import(data=_doc())
    doc = _doc()
    doc["cards"].reverse()
    report = deck_import(data=doc)
    assert report.created == 0
    assert list(Card.objects.order_by("position").values_list("key", flat=True)) == [
        "hand-attention",
        "card-2",
        "card-1",
        "card-0",
    ]


def test_retiring_and_reactivating_cards():
    deck_import(data=_doc())
    doc = _doc()
    doc["cards"][0]["active"] = False
    assert deck_import(data=doc).updated == 1
    assert not Card.objects.get(key="card-0").is_active

    doc["cards"][0]["active"] = True
    del doc["cards"][2]
    report = deck_import(data=doc)  # without deactivate_missing the absent card stays as it was
    # card-0 is back, and hand-attention moved up one position.
    assert (report.updated, report.deactivated) == (2, 0)
    assert Card.objects.filter(is_active=True).count() == 4

    report = deck_import(data=doc, deactivate_missing=True)
    assert report.deactivated == 1
    assert not Card.objects.get(key="card-2").is_active
    assert deck_import(data=doc, deactivate_missing=True).deactivated == 0


def test_dry_run_reports_exact_counts_and_saves_nothing():
    deck_import(data=_doc())
    before = _counts()
    doc = _doc(n=5)
    doc["cards"][0]["answer"] = "Changed."
    report = deck_import(data=doc, dry_run=True)
    # card-3 and card-4 are new; card-0's answer changed and hand-attention moved to the end.
    assert (report.dry_run, report.created, report.updated, report.unchanged) == (True, 2, 2, 2)
    assert _counts() == before
    assert Card.objects.get(key="card-0").answer.startswith("Answer 0")


def test_cards_without_keys_get_stable_derived_keys():
    doc = _doc()
    for card in doc["cards"]:
        del card["key"]
    doc["cards"].append(dict(doc["cards"][0], answer="A second card with the same prompt."))
    first = deck_import(data=doc)
    assert first.created == 5
    keys = list(Card.objects.order_by("position").values_list("key", flat=True))
    assert keys[0] == "prompt-0-what-is-qktop" and keys[4] == "prompt-0-what-is-qktop-2"
    assert len(set(keys)) == 5
    second = deck_import(data=doc)
    assert (second.created, second.unchanged) == (0, 5)


def test_keyless_cards_made_in_the_admin_are_adopted_not_duplicated(learner):
    deck_import(data=_doc())
    deck = Deck.objects.get(slug="toy-deck")
    handmade = Card.objects.create(deck=deck, kind="recall", prompt="Why mask?", answer="No peeking.", position=9)  # fmt: skip
    services.enroll(learner=learner, deck=deck, at=timezone.now())
    ReviewState.objects.filter(card=handmade).update(step=2)

    doc = deck_export(deck=deck)
    assert doc["cards"][-1]["key"] == "why-mask"
    report = deck_import(data=doc)
    assert report.created == 0
    handmade.refresh_from_db()
    assert handmade.key == "why-mask"
    assert ReviewState.objects.get(card=handmade).step == 2
    assert deck_import(data=doc).unchanged == 5


def test_new_cards_for_enrolled_learners_are_queued_after_commit(
    learner, monkeypatch, django_capture_on_commit_callbacks
):
    calls = []
    monkeypatch.setattr(
        tasks.schedule_new_cards, "apply_async", lambda **kw: calls.append(kw["kwargs"])
    )
    deck_import(data=_doc())
    deck = Deck.objects.get(slug="toy-deck")
    with django_capture_on_commit_callbacks(execute=True):
        assert deck_import(data=_doc(n=4)).scheduling == ""  # nobody enrolled yet
    assert calls == []

    services.enroll(learner=learner, deck=deck, at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        report = deck_import(data=_doc(n=6), dry_run=True)
    assert (report.created, report.scheduling, calls) == (2, "", [])

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        report = deck_import(data=_doc(n=6))
        assert calls == []  # nothing before the commit
    assert (report.created, report.scheduling) == (2, "enqueued")
    assert len(callbacks) == 1 and calls == [{"deck_id": deck.pk}]


def test_with_the_broker_down_the_import_commits_and_the_beat_job_places_new_cards(
    learner, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    def broker_down(**kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:1. Connection refused.")

    monkeypatch.setattr(tasks.schedule_new_cards, "apply_async", broker_down)
    deck_import(data=_doc())
    services.enroll(learner=learner, deck=Deck.objects.get(slug="toy-deck"), at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        assert deck_import(data=_doc(n=4)).created == 1
    assert Card.objects.filter(deck__slug="toy-deck").count() == 5
    assert "the beat job will place its cards" in caplog.text


def test_ten_thousand_cards_import_in_chunks():
    doc = _doc(n=2_000)
    seen = []
    report = deck_import(data=doc, progress=seen.append)
    assert report.created == 2_001
    assert seen == [500, 500, 500, 500, 1]
    assert Card.tags.through.objects.count() == 2 * 2_000 + 1
    doc["cards"][1_234]["answer"] = "Edited deep in the file."
    report = deck_import(data=doc)
    assert (report.updated, report.unchanged) == (1, 2_000)


# --- Export and round trips ------------------------------------------------------------------


def test_export_import_export_round_trips_into_a_fresh_deck():
    call_command("load_starter_content", stdout=io.StringIO())
    original = deck_export(deck=Deck.objects.get(slug="attention-and-transformers"))
    copy_doc = copy.deepcopy(original)
    copy_doc["deck"]["slug"] = "attention-copy"
    report = deck_import(data=copy_doc)
    assert report.created == len(original["cards"])
    again = deck_export(deck=Deck.objects.get(slug="attention-copy"))
    assert again == copy_doc


def test_round_trip_into_an_empty_database_through_yaml_and_json():
    call_command("load_starter_content", stdout=io.StringIO())
    original = deck_export(deck=Deck.objects.get(slug="attention-and-transformers"))
    for fmt, name in (("yaml", "deck.yaml"), ("json", "deck.json")):
        text = deck_dump(original, fmt=fmt)
        Deck.objects.all().delete()
        Tag.objects.all().delete()
        assert Card.objects.count() == 0
        deck_import(data=io.StringIO(text), name=name)
        assert deck_export(deck=Deck.objects.get(slug="attention-and-transformers")) == original


def test_format_is_detected_by_content_when_the_name_says_nothing():
    doc = _doc()
    assert deck_load(json.dumps(doc)) == doc
    assert deck_load(deck_dump(doc, fmt="yaml")) == doc
    assert deck_load(deck_dump(doc, fmt="json").encode()) == doc


def test_yaml_export_writes_multiline_text_as_block_literals():
    call_command("load_starter_content", stdout=io.StringIO())
    text = deck_dump(deck_export(deck=Deck.objects.get(slug="attention-and-transformers")))
    assert "  prompt: |" in text
    multiline = [
        event
        for event in yaml.parse(text)
        if isinstance(event, yaml.ScalarEvent) and "\n" in event.value
    ]
    assert multiline and all(event.style == "|" for event in multiline)


# --- Commands ----------------------------------------------------------------------------------


def _write(tmp_path: Path, doc: dict, name: str = "deck.yaml") -> Path:
    path = tmp_path / name
    path.write_text(deck_dump(doc, fmt="json" if name.endswith(".json") else "yaml"))
    return path


def test_import_deck_command_prints_a_summary(tmp_path):
    path = _write(tmp_path, _doc())
    out = io.StringIO()
    call_command("import_deck", str(path), stdout=out, stderr=io.StringIO())
    assert (
        "deck 'toy-deck' (new): 4 created, 0 updated, 0 unchanged, 0 deactivated" in out.getvalue()
    )

    out = io.StringIO()
    call_command("import_deck", str(path), "--dry-run", stdout=out)
    assert out.getvalue().startswith("Dry run, nothing saved. deck 'toy-deck': 0 created")


def test_import_deck_command_refuses_a_bad_file_and_imports_nothing(tmp_path):
    doc = _doc()
    doc["cards"][1]["kind"] = "quiz"
    doc["cards"][0]["tags"] = "shapes"
    path = _write(tmp_path, doc, "bad.json")
    before = _counts()
    with pytest.raises(CommandError) as excinfo:
        call_command("import_deck", str(path), stdout=io.StringIO())
    message = str(excinfo.value)
    assert "2 problem(s); nothing was imported" in message
    assert "cards[1].kind: expected one of recall, interview, exercise, lab, got 'quiz'" in message
    assert "cards[0].tags: expected a list of tag slugs, got a string" in message
    assert excinfo.value.returncode == 1
    assert _counts() == before

    with pytest.raises(CommandError, match="no such file"):
        call_command("import_deck", str(tmp_path / "missing.yaml"))


def test_import_deck_exits_non_zero_from_the_shell(tmp_path):
    doc = _doc()
    doc["format"] = 7
    path = _write(tmp_path, doc)
    result = subprocess.run(
        [sys.executable, "manage.py", "import_deck", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "format: expected 1, got 7" in result.stderr


def test_progress_bar_on_a_large_file_when_forced(tmp_path):
    path = _write(tmp_path, _doc(n=499))
    err = io.StringIO()
    call_command("import_deck", str(path), "--progress", stdout=io.StringIO(), stderr=err)
    assert "Importing" in err.getvalue() and "500/500" in err.getvalue()

    quiet = io.StringIO()  # not a terminal: no bar unless asked
    call_command("import_deck", str(path), stdout=io.StringIO(), stderr=quiet)
    assert quiet.getvalue() == ""

    small = io.StringIO()  # small files never get a bar
    call_command("import_deck", str(_write(tmp_path, _doc(n=3), "small.yaml")), "--progress", stderr=small, stdout=io.StringIO())  # fmt: skip
    assert small.getvalue() == ""


def test_export_deck_command_to_stdout_and_to_a_file(tmp_path):
    deck_import(data=_doc())
    out = io.StringIO()
    call_command("export_deck", "toy-deck", stdout=out)
    assert yaml.safe_load(out.getvalue()) == deck_export(deck=Deck.objects.get(slug="toy-deck"))

    target = tmp_path / "toy.json"
    call_command("export_deck", "toy-deck", "-o", str(target), stderr=io.StringIO())
    assert json.loads(target.read_text()) == _doc()

    target = tmp_path / "toy.txt"
    call_command("export_deck", "toy-deck", "-o", str(target), "--format", "json", stderr=io.StringIO())  # fmt: skip
    assert json.loads(target.read_text()) == _doc()

    with pytest.raises(CommandError, match=re.escape("No deck with slug 'nope'. Decks: toy-deck")):
        call_command("export_deck", "nope")


def test_enrollments_survive_a_reimport(learner, tmp_path):
    deck_import(data=_doc())
    deck = Deck.objects.get(slug="toy-deck")
    services.enroll(learner=learner, deck=deck, at=timezone.now())
    call_command("import_deck", str(_write(tmp_path, _doc())), stdout=io.StringIO())
    assert Enrollment.objects.filter(learner=learner, deck=deck).exists()
    assert ReviewState.objects.filter(learner=learner).count() == 4


# A "billion laughs" file: ten nested levels of nine aliases each, under 1 KB of text
# that a YAML loader would expand to 9**10 (about 3.5 billion) strings.
ALIAS_BOMB = "format: 1\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10)
)
SELF_ALIAS = "format: 1\ndeck: &deck\n  slug: loop\n  title: Loop\n  itself: *deck\ncards: []\n"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (ALIAS_BOMB, "l1[0] is an alias of the content anchored at line 2 column 5"),
        (SELF_ALIAS, "deck.itself is an alias of the content anchored at line 2 column 7"),
    ],
    ids=["alias-bomb", "self-referencing-alias"],
)
def test_import_deck_refuses_yaml_aliases_quickly_and_without_a_traceback(tmp_path, text, where):
    assert len(text.encode()) < 1024
    path = tmp_path / "aliases.yaml"
    path.write_text(text)
    before = _counts()
    started = time.perf_counter()
    with pytest.raises(CommandError) as excinfo:
        call_command("import_deck", str(path), stdout=io.StringIO())
    assert time.perf_counter() - started < 1.0
    message = str(excinfo.value)
    assert "1 problem(s); nothing was imported" in message
    assert "YAML anchors and aliases are not allowed in deck files" in message
    assert where in message
    assert "Traceback" not in message
    assert _counts() == before


def test_import_deck_from_the_shell_refuses_an_alias_bomb_with_one_clear_line(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB)
    result = subprocess.run(
        [sys.executable, "manage.py", "import_deck", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "YAML anchors and aliases are not allowed in deck files" in result.stderr
    assert "Traceback" not in result.stderr


def test_export_deck_takes_another_format_from_its_table_of_writers(tmp_path, monkeypatch):
    from cards.management.commands import export_deck

    deck_import(data=_doc())
    monkeypatch.setitem(export_deck.WRITERS, "bin", lambda deck: deck.slug.encode() + b"\x00")
    monkeypatch.setitem(export_deck.SUFFIXES, ".bin", "bin")
    target = tmp_path / "toy.bin"
    call_command("export_deck", "toy-deck", "-o", str(target), stderr=io.StringIO())
    assert target.read_bytes() == b"toy-deck\x00"
    with pytest.raises(CommandError, match="binary: give a file with -o"):
        call_command("export_deck", "toy-deck", "--format", "bin", stdout=io.StringIO())
