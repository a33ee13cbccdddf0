"""The limits of a lab run are stated once (``labs.sandbox.limits.LIMITS``): ``Limits``, the
settings, ``labs.grading.lab_limits`` and docs/labs.md's table all read that schema."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from labs import grading, sandbox
from labs.sandbox import bwrap
from labs.sandbox.limits import LIMITS, MAX_RESULT_BYTES, Limits, limits_from
from studyapp.configuration import VARIABLE

ROOT = Path(__file__).resolve().parents[2]
LABS_DOC = ROOT / "docs" / "labs.md"


def limits_table() -> list[list[str]]:
    """The rows of docs/labs.md's "Limits" table, each as its cells."""
    text = LABS_DOC.read_text()
    section = text[text.index("\n### Limits\n") :]
    section = section[: section.index("\n### ", 1)]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    assert rows[0].startswith("| variable | default | limit |"), rows[0]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def shown(amount: int, unit: str) -> str:
    return f"{amount} {unit}" if unit else str(amount)


def test_every_field_of_limits_has_one_entry_in_the_schema():
    assert [limit.field for limit in LIMITS] == [f.name for f in dataclasses.fields(Limits)]
    assert len({limit.variable for limit in LIMITS}) == len(LIMITS)


def test_the_defaults_of_limits_are_the_schemas():
    default = Limits()
    for limit in LIMITS:
        assert getattr(default, limit.field) == limit.value(limit.default), limit.field
    assert default == sandbox.DEFAULT_LIMITS


def test_an_amount_is_converted_to_the_fields_unit():
    amounts = {"STUDY_LAB_CPU_SECONDS": 2.4, "STUDY_LAB_MEMORY_MB": 256, "STUDY_LAB_OUTPUT_KB": 8}
    limits = limits_from(lambda variable: amounts.get(variable, 0.25))
    assert (limits.cpu_seconds, limits.memory_bytes, limits.output_bytes) == (2, 2**28, 8192)
    # A whole limit is never 0, whatever fraction came; the wall time keeps its fraction.
    assert (limits.processes, limits.wall_seconds) == (1, 0.25)


def test_the_settings_read_each_variable_of_the_schema_with_its_default():
    for limit in LIMITS:
        variable = VARIABLE[limit.variable]
        assert variable.read({}) == limit.default, limit.variable
        assert variable.read({limit.variable: "3"}) == 3.0
        for bad in ("0", "-5", "lots"):
            with pytest.raises(ImproperlyConfigured, match=f"^{limit.variable}="):
                variable.read({limit.variable: bad})


def test_the_limits_come_from_the_settings_through_the_schema(settings):
    for limit in LIMITS:
        setattr(settings, limit.variable, limit.default * 2)
    doubled = grading.lab_limits()
    for limit in LIMITS:
        assert getattr(doubled, limit.field) == limit.value(limit.default * 2), limit.field


def test_the_docs_table_states_the_schema():
    rows = limits_table()
    stated = {row[0].strip("`"): row[1:3] for row in rows if row[0]}
    assert stated == {
        limit.variable: [shown(limit.default, limit.unit), limit.meaning] for limit in LIMITS
    }
    (returned,) = [row for row in rows if not row[0]]
    assert returned[1] == shown(MAX_RESULT_BYTES // 2**20, "MB")


def test_the_docs_messages_quote_the_default_limits():
    # What the learner reads, as the table quotes it, holds the schema's default.
    for row in limits_table():
        if row[0]:
            amount = re.match(r"\d+", row[1])
            assert amount is not None and amount[0] in row[4], row


def test_the_throwaway_uids_start_at_their_setting(monkeypatch):
    monkeypatch.setattr(bwrap.os, "geteuid", lambda: 0)
    monkeypatch.setenv("STUDY_LAB_UID_BASE", "2000000000")
    uid, gid = bwrap._outer_ids()
    assert uid == gid and 2_000_000_000 <= uid < 2_000_100_000
    monkeypatch.setenv("STUDY_LAB_UID_BASE", "")
    assert bwrap.UID_BASE <= bwrap._outer_ids()[0] < bwrap.UID_BASE + 100_000
    # A bad value starts no run, and says why.
    monkeypatch.setenv("STUDY_LAB_UID_BASE", "root")
    with pytest.raises(sandbox.SandboxUnavailable, match="STUDY_LAB_UID_BASE='root'"):
        bwrap._outer_ids()
