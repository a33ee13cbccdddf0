"""``manage.py check_counts``: the tables kept by triggers against a recount of their
sources, the triggers' states, the repair; and SQLite's dropped triggers put back after
every migrate."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from cards import services
from cards.db import count_checks
from cards.db.counts import LAPSE_COUNTS, REVIEW_STATE_COUNTS
from cards.lapses import leech_card_ids
from cards.models import Card, LapseCount, ReviewLog, ReviewState

from .conftest import START, log_entry

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def reviewed(learner, other_learner, deck):
    """Two learners enrolled, with fails (one undone) and passes in the log."""
    for who in (learner, other_learner):
        services.enroll(learner=who, deck=deck, at=START)
    card = deck.cards.filter(kind=Card.Kind.RECALL).first()
    logs = ReviewLog.objects.bulk_create(
        [log_entry(learner, card, "fail") for _ in range(3)]
        + [log_entry(other_learner, card, "pass"), log_entry(other_learner, card, "fail")]
    )
    ReviewLog.objects.bulk_create([log_entry(learner, card, undo_of=logs[0])])
    return card


def add_lapse_row(learner, card, n: int) -> None:
    """A row written past the model, which refuses writes (the triggers keep the table)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO cards_lapsecount (learner_id, card_id, n) VALUES (%s, %s, %s)",
            [learner.pk, card.pk, n],
        )


def run(*args: str) -> tuple[str, str | None]:
    """The command's output, and its error when it ends with one."""
    out = io.StringIO()
    try:
        call_command("check_counts", *args, stdout=out)
    except CommandError as exc:
        return out.getvalue(), str(exc)
    return out.getvalue(), None


def switch_off(counts, event: str) -> None:
    """Stop one of the table's triggers as an operator might by hand."""
    name = f"{counts.table}_{event}"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no trigger events pending
            cursor.execute(f"ALTER TABLE {counts.source} DISABLE TRIGGER {name}")
        else:
            cursor.execute(f"DROP TRIGGER {name}")


def test_every_kept_table_is_sound_after_reviews(reviewed):
    results = count_checks.check_all()
    assert [r.table for r in results] == [c.table for c in count_checks.KEPT]
    assert all(r.sound for r in results), results
    lapses = next(r for r in results if r.table == LAPSE_COUNTS.table)
    assert lapses.rows == 2  # one learner 3 fails less 1 undone, the other 1 fail
    output, error = run()
    assert error is None
    assert output.count(": sound") == len(count_checks.KEPT)


def test_a_trigger_switched_off_is_found_with_the_rows_it_missed_and_repaired(
    reviewed, learner, settings
):
    settings.STUDY_LEECH_LAPSES = 3
    switch_off(LAPSE_COUNTS, "insert")
    ReviewLog.objects.bulk_create([log_entry(learner, reviewed, "fail") for _ in range(2)])
    assert LapseCount.objects.get(learner=learner, card=reviewed).n == 2  # missed two
    assert leech_card_ids(learner=learner) == set()  # so the leech is not seen

    result = count_checks.check(LAPSE_COUNTS)
    assert (result.missing, result.extra) == (1, 1)  # the pair's row differs
    expected_state = "disabled" if connection.vendor == "postgresql" else "missing"
    assert result.triggers[f"{LAPSE_COUNTS.table}_insert"] == expected_state
    assert not result.sound

    output, error = run()
    assert error == "Not sound: cards_lapsecount. Run again with --repair to rebuild them."
    assert "1 missing or different, 1 extra" in output
    assert f"trigger cards_lapsecount_insert {expected_state}" in output

    output, error = run("--repair")
    assert error is None, output
    assert "Rebuilt cards_lapsecount and its triggers." in output
    assert LapseCount.objects.get(learner=learner, card=reviewed).n == 4
    assert leech_card_ids(learner=learner) == {reviewed.pk}
    assert count_checks.check(LAPSE_COUNTS).sound
    # The trigger works again: the next fail is counted as it is written.
    ReviewLog.objects.bulk_create([log_entry(learner, reviewed, "fail")])
    assert LapseCount.objects.get(learner=learner, card=reviewed).n == 5


def test_rows_no_source_gives_are_extra(reviewed, learner):
    card = Card.objects.create(deck=reviewed.deck, kind="recall", prompt="Unreviewed")
    add_lapse_row(learner, card, 7)
    result = count_checks.check(LAPSE_COUNTS)
    assert (result.missing, result.extra) == (0, 1)
    assert result.triggers_sound and not result.sound


def test_one_table_can_be_checked_and_the_others_are_left_alone(reviewed, learner):
    switch_off(REVIEW_STATE_COUNTS, "update")
    ReviewState.objects.filter(learner=learner).update(step=2)
    add_lapse_row(learner, Card.objects.create(deck=reviewed.deck, prompt="x"), 1)
    output, error = run("--table", "cards_lapsecount", "--repair")
    assert error is None and "cards_reviewstatecount" not in output
    assert not count_checks.check(REVIEW_STATE_COUNTS).sound
    output, error = run("--repair")
    assert error is None
    assert all(result.sound for result in count_checks.check_all())


def test_a_fresh_sqlite_database_keeps_every_count_trigger(tmp_path):
    """The embedded default: a migration that adds a column to the log rebuilds the table
    on SQLite and drops its triggers; they are put back after migrate."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "STUDY_CACHE_URL"}
    }
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", STUDY_VAR_DIR=str(tmp_path))
    manage = [sys.executable, str(ROOT / "manage.py")]
    migrate = subprocess.run(
        [*manage, "migrate", "-v0"], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert migrate.returncode == 0, migrate.stderr
    checked = subprocess.run(
        [*manage, "check_counts"], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count(": sound") == len(count_checks.KEPT), checked.stdout
