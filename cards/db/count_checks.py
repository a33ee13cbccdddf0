"""Whether the tables kept by triggers say what their sources say, and rebuilding them.

The counts and figures of ``cards.db.counts`` are right as long as their triggers run.
A trigger disabled by hand (``ALTER TABLE ... DISABLE TRIGGER``, ``session_replication_role
= replica`` during a restore) or dropped leaves them wrong from then on, silently: the
due counts, leeches and the item analysis read them. ``check`` recounts a table from its
source with the backfill query its migration ran and compares, row for row, in one
statement (one snapshot: writers running meanwhile make no false difference);
``rebuild`` recreates the triggers and refills the table in one transaction, holding
the source's writers off until it commits. ``manage.py check_counts`` runs both.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from django.db import DEFAULT_DB_ALIAS, connection, transaction

from .counts import (
    CARD_FIGURES,
    KIND_FIGURES,
    LAPSE_COUNTS,
    LEARNER_CARD_FIGURES,
    REVIEW_STATE_COUNTS,
    CountTriggers,
)
from .dialect import PerDialect, is_sqlite

logger = logging.getLogger(__name__)

# In the order they are rebuilt: the card figures are summed from the pair figures.
KEPT: tuple[CountTriggers, ...] = (
    REVIEW_STATE_COUNTS,
    LAPSE_COUNTS,
    LEARNER_CARD_FIGURES,
    CARD_FIGURES,
    KIND_FIGURES,
)

_BACKFILL = re.compile(
    r"\s*INSERT INTO (?P<table>\w+) \((?P<columns>[^)]*)\)\s*(?P<select>SELECT\b.*)", re.S
)


@dataclass(frozen=True)
class CountCheck:
    table: str
    rows: int  # rows the table holds
    missing: int  # rows the source gives that the table lacks, or holds with other figures
    extra: int  # rows the table holds that the source does not give
    triggers: dict[str, str]  # each trigger: "enabled", "disabled" or "missing"

    @property
    def sound(self) -> bool:
        return not self.missing and not self.extra and self.triggers_sound

    @property
    def triggers_sound(self) -> bool:
        return all(state == "enabled" for state in self.triggers.values())


def _backfill(counts: CountTriggers) -> tuple[str, str]:
    """The columns and the SELECT of the table's backfill on this database."""
    match = _BACKFILL.match(counts.backfills().here())
    if match is None or match["table"] != counts.table:
        raise ValueError(f"the backfill of {counts.table} is not an INSERT ... SELECT into it")
    return match["columns"], match["select"].strip()


# The triggers on a table, by name, and whether each fires: on PostgreSQL 'O' fires in the
# normal mode and 'A' always ('D' never, 'R' only on a replica); SQLite has no switch, so a
# trigger it lists fires.
_TRIGGERS_ON = PerDialect(
    postgresql=(
        "SELECT t.tgname, t.tgenabled IN ('O', 'A') FROM pg_trigger t "
        "JOIN pg_class c ON c.oid = t.tgrelid "
        "WHERE c.relname = %s AND c.relnamespace = current_schema()::regnamespace "
        "AND NOT t.tgisinternal"
    ),
    sqlite="SELECT name, 1 FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s",
)


def trigger_states(counts: CountTriggers) -> dict[str, str]:
    """Each trigger the table needs on this database, by name: enabled, disabled or missing."""
    with connection.cursor() as cursor:
        cursor.execute(_TRIGGERS_ON.here(), [counts.source])
        found = {name: "enabled" if on else "disabled" for name, on in cursor.fetchall()}
    return {name: found.get(name, "missing") for name in counts.trigger_names().here()}


def check(counts: CountTriggers) -> CountCheck:
    """The table against a recount of its source, and the state of its triggers."""
    columns, select = _backfill(counts)
    table = counts.table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT COUNT(*) FROM {table}), "
            f"(SELECT COUNT(*) FROM (SELECT * FROM ({select}) AS fresh "
            f"EXCEPT SELECT {columns} FROM {table}) AS missing), "
            f"(SELECT COUNT(*) FROM (SELECT {columns} FROM {table} "
            f"EXCEPT SELECT * FROM ({select}) AS fresh) AS extra)"
        )
        rows, missing, extra = cursor.fetchone()
    return CountCheck(
        table=table, rows=rows, missing=missing, extra=extra, triggers=trigger_states(counts)
    )


def check_all() -> list[CountCheck]:
    return [check(counts) for counts in KEPT]


# What a rebuild does before it drops the triggers. PostgreSQL: a caller's deferred
# foreign key checks are made now (it will not drop a trigger from a table with trigger
# events still pending), and the source is locked against writes (SHARE: reads go on).
# SQLite has one writer at a time: the transaction holds the others off.
_BEFORE_REBUILD = PerDialect(
    postgresql=["SET CONSTRAINTS ALL IMMEDIATE", "LOCK TABLE {source} IN SHARE MODE"],
    sqlite=[],
)


def rebuild(counts: CountTriggers) -> None:
    """Recreate the table's triggers and refill it from its source, in one transaction.

    On PostgreSQL the source is locked against writes first (SHARE: reads go on), so no
    write lands between the recount and the triggers; it waits ``lock_timeout`` at most
    for the writers in flight, and then fails with nothing changed.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        for statement in _BEFORE_REBUILD.here():
            cursor.execute(statement.format(source=counts.source))
        for statement in counts.statements(forward=False):
            cursor.execute(statement)
        cursor.execute(f"DELETE FROM {counts.table}")
        # The triggers, then the backfill: what CountTriggers.create does in a migration.
        for statement in counts.statements(forward=True):
            cursor.execute(statement)


def restore_dropped_sqlite_triggers(*, using: str = DEFAULT_DB_ALIAS) -> list[str]:
    """On SQLite, rebuild every table whose triggers are gone; the tables rebuilt.

    SQLite cannot alter most of a table in place: Django's migrations copy it into a new
    table and drop the old one, and the old one's triggers go with it. A migration that
    adds a column to the log thus drops the LapseCount triggers, and the leeches stop
    being counted. Run after every ``migrate`` (``cards.apps``), this puts them back and
    recounts. PostgreSQL alters tables in place and keeps their triggers: nothing to do.
    """
    if using != DEFAULT_DB_ALIAS or not is_sqlite():
        return []
    existing = connection.introspection.table_names()
    rebuilt = []
    for counts in KEPT:
        if counts.table not in existing or counts.source not in existing:
            continue  # migrated part of the way (a test's migrate to an old state)
        if all(state == "enabled" for state in trigger_states(counts).values()):
            continue
        rebuild(counts)
        rebuilt.append(counts.table)
        logger.info("Put back the triggers of %s, which a table rebuild had dropped", counts.table)
    return rebuilt
