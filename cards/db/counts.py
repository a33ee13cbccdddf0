# One module on purpose: every table the database keeps by trigger, declared once for the migrations.
"""The tables that count the review log and the review states, and what keeps them.

Five tables hold counts a page would otherwise compute from many rows:

- ``ReviewStateCount``: the scheduled review states per (learner, due date, rung,
  suspended), kept by triggers on ``cards_reviewstate`` (``REVIEW_STATE_COUNTS``);
- ``LapseCount``: the failed reviews per (learner, card), net of undos, kept by
  triggers on ``cards_reviewlog`` (``LAPSE_COUNTS``);
- ``ReviewDay``: the reviews and passes per (learner, study day), net of undos, kept by
  the writers of the log in the same statement or transaction (``review_day_add``,
  ``services/review_days.py``);
- ``LearnerCardFigures``: the reviews no undo cancelled per (learner, card), their passes,
  fails and whether the first passed, recounted per pair by triggers on
  ``cards_reviewlog`` (``LEARNER_CARD_FIGURES``);
- ``CardFigures``: those summed per (card, lapses), kept by triggers on
  ``cards_learnercardfigures`` (``CARD_FIGURES``); the staff's item analysis reads them.

Each trigger is declared here once, for both databases; the migrations that create
them (``0009_review_state_counts``, ``0010_lapse_counts`` and the squashed ``0001``)
import ``CountTriggers.create``/``drop``. A module of our own rather than
django-pgtrigger: that library declares PostgreSQL triggers only, and the project runs
on SQLite too.

An undo does not delete the review it cancels: it appends an entry with ``undo_of``
set, which counts -1 (``net``). Every count net of undos is written with ``net``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from .analysis import KIND_FIGURES_KEY, KIND_FIGURES_TABLE, pg_attempt_rows, sqlite_attempt_rows
from .dialect import PerDialect

# --- Net of undos ----------------------------------------------------------------------


def net(alias: str = "") -> str:
    """SQL: +1 for a review log entry, -1 for an undo entry (it cancels the review it undoes)."""
    column = f"{alias}.undo_of_id" if alias else "undo_of_id"
    return f"CASE WHEN {column} IS NULL THEN 1 ELSE -1 END"


def kept(alias: str, *, log_table: str = "cards_reviewlog") -> str:
    """SQL condition: the entry ``alias`` is a review that no undo cancelled (not an undo
    entry, not undone). The rows whose ``net`` sums stay after the pairs cancel out.

    The rule's one SQL form; its definition is the ORM's ``ReviewLog.objects.kept()``, and
    ``tests/cards/test_lapse_forms.py`` holds the two equal. An anti-join on the unique
    index of ``undo_of``, one probe per entry."""
    return (
        f"{alias}.undo_of_id IS NULL AND NOT EXISTS ("
        f"SELECT 1 FROM {log_table} u WHERE u.undo_of_id = {alias}.id)"
    )


# --- ReviewDay: kept by the writers of the log -------------------------------------------

REVIEW_DAY_TABLE = "cards_reviewday"
REVIEW_DAY_COLUMNS = "learner_id, study_day, reviews, passes, min_due_before"

# The earlier of the stored and the incoming ``min_due_before``; NULL means none yet.
_EARLIER = (
    f"CASE WHEN {REVIEW_DAY_TABLE}.min_due_before IS NULL "
    f"OR EXCLUDED.min_due_before < {REVIEW_DAY_TABLE}.min_due_before "
    f"THEN EXCLUDED.min_due_before ELSE {REVIEW_DAY_TABLE}.min_due_before END"
)

# Add rows to what is stored for the same (learner, study day).
REVIEW_DAY_ON_CONFLICT_ADD = f"""
    ON CONFLICT (learner_id, study_day) DO UPDATE SET
        reviews = {REVIEW_DAY_TABLE}.reviews + EXCLUDED.reviews,
        passes = {REVIEW_DAY_TABLE}.passes + EXCLUDED.passes,
        min_due_before = {_EARLIER}
"""


def review_days_from_log(log_table: str = "cards_reviewlog") -> str:
    """SQL: ``REVIEW_DAY_COLUMNS`` per learner and day from the log ``l`` (to be filtered and
    grouped by ``l.learner_id, l.study_day``). Each undo entry cancels the review it undoes,
    and only reviews not undone say since when their card had waited."""
    return f"""
    SELECT l.learner_id, l.study_day,
        SUM({net("l")}),
        SUM(CASE WHEN l.result = 'pass'
            THEN ({net("l")}) ELSE 0 END),
        MIN(CASE WHEN {kept("l", log_table=log_table)} THEN l.due_before END)
    FROM {log_table} l
"""


def review_day_add(
    *, learner_id: int, study_day: dt.date, passed: bool, due_before: dt.date
) -> None:
    """Count one review in its day's row (one statement; the caller's transaction)."""
    ops = connection.ops
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {REVIEW_DAY_TABLE} ({REVIEW_DAY_COLUMNS}) "
            f"VALUES (%s, %s, 1, %s, %s) {REVIEW_DAY_ON_CONFLICT_ADD}",
            [
                learner_id,
                ops.adapt_datefield_value(study_day),
                int(passed),
                ops.adapt_datefield_value(due_before),
            ],
        )


# --- Counts kept by triggers -------------------------------------------------------------

# PostgreSQL: one statement-level trigger per event, over its transition tables. Each
# applies the statement's changes as one grouped upsert, the groups in key order so that
# concurrent statements lock the count rows in one order (no deadlock between them).
# An UPDATE's old rows are taken off and its new rows added: a row that kept its key nets
# to 0 and is skipped (a bury, a review of last_reviewed_at only), with no join by id.
_PG_APPLY = """
DECLARE
    emptied bigint[];
BEGIN
    WITH applied AS (
        INSERT INTO {table} AS t ({key}, n)
        SELECT {key}, SUM(d)::integer FROM ({deltas}) AS deltas
        GROUP BY {key} HAVING SUM(d) <> 0
        ORDER BY {key}
        ON CONFLICT ({key}) DO UPDATE SET n = t.n + EXCLUDED.n
        RETURNING t.id, t.n
    )
    SELECT array_agg(id) INTO emptied FROM applied WHERE n = 0;
    IF emptied IS NOT NULL THEN
        -- Rows this statement holds locked since the upsert: nobody changed them since.
        DELETE FROM {table} WHERE id = ANY(emptied) AND n = 0;
    END IF;
    RETURN NULL;
END
"""
_EVENTS = ("insert", "delete", "update")


@dataclass(frozen=True)
class CountTriggers:
    """The triggers that keep ``table`` equal to a ``GROUP BY key`` of ``source``.

    ``pg_deltas`` gives, per event, the query of ``(key, d)`` rows over the transition
    tables ``new_rows``/``old_rows``; ``sqlite`` the row-level triggers' statements; the
    backfill counts the rows already there, after the triggers, in the same transaction
    (on PostgreSQL, CREATE TRIGGER waits for the writers in flight and holds new ones off
    until commit, so none is counted twice or missed). A count that reaches zero is
    deleted by the trigger that brought it there.
    """

    table: str
    source: str
    key: str
    pg_deltas: dict[str, str]
    sqlite: list[str]
    backfill: str
    transition: str = field(default="rows")  # the transition tables: new_<x>, old_<x>
    # SQLite's backfill, when its SQL differs from PostgreSQL's.
    sqlite_backfill: str | None = None
    # PostgreSQL: the function body run after an event, given the event and its
    # ``pg_deltas``; by default ``_PG_APPLY``, which adds the deltas to ``n``.
    pg_apply: Callable[[str, str], str] | None = None

    def pg_body(self, event: str) -> str:
        """The PL/pgSQL body of the function run after ``event``: apply its deltas."""
        if self.pg_apply is not None:
            return self.pg_apply(event, self.pg_deltas[event])
        return _PG_APPLY.format(table=self.table, key=self.key, deltas=self.pg_deltas[event])

    def pg_create(self) -> list[str]:
        referencing = {
            "insert": f"NEW TABLE AS new_{self.transition}",
            "delete": f"OLD TABLE AS old_{self.transition}",
            "update": f"OLD TABLE AS old_{self.transition} NEW TABLE AS new_{self.transition}",
        }
        statements = []
        for event in _EVENTS:
            name = f"{self.table}_{event}"
            body = self.pg_body(event)
            statements += [
                f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $body${body}$body$",
                f"CREATE TRIGGER {name} AFTER {event.upper()} ON {self.source} "
                f"REFERENCING {referencing[event]} FOR EACH STATEMENT EXECUTE FUNCTION {name}()",
            ]
        # TRUNCATE fires no DELETE trigger: empty the counts with the source.
        statements += [
            f"CREATE FUNCTION {self.table}_truncate() RETURNS trigger LANGUAGE plpgsql AS "
            f"$body$ BEGIN DELETE FROM {self.table}; RETURN NULL; END $body$",
            f"CREATE TRIGGER {self.table}_truncate AFTER TRUNCATE ON {self.source} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {self.table}_truncate()",
        ]
        return statements

    def pg_drop(self) -> list[str]:
        statements = []
        for event in (*_EVENTS, "truncate"):
            name = f"{self.table}_{event}"
            statements += [
                f"DROP TRIGGER IF EXISTS {name} ON {self.source}",
                f"DROP FUNCTION IF EXISTS {name}()",
            ]
        return statements

    def sqlite_create(self) -> list[str]:
        return list(self.sqlite)

    def sqlite_drop(self) -> list[str]:
        return [f"DROP TRIGGER IF EXISTS {self.table}_{event}" for event in _EVENTS]

    def backfills(self) -> PerDialect[str]:
        """The ``INSERT ... SELECT`` that counts the source's rows into the table."""
        sqlite = self.backfill if self.sqlite_backfill is None else self.sqlite_backfill
        return PerDialect(postgresql=self.backfill, sqlite=sqlite)

    def trigger_names(self) -> PerDialect[list[str]]:
        """The triggers that keep the table: one per event (and TRUNCATE on PostgreSQL)."""
        names = [f"{self.table}_{event}" for event in ("insert", "update", "delete")]
        return PerDialect(postgresql=[*names, f"{self.table}_truncate"], sqlite=names)

    def statements(self, *, forward: bool, db: Any = None) -> list[str]:
        """The statements that create (and backfill) or drop the triggers on the database
        of the connection ``db`` (the default one unless given)."""
        if forward:
            create = PerDialect(postgresql=self.pg_create, sqlite=self.sqlite_create)
            return [*create.here(db)(), self.backfills().here(db)]
        return PerDialect(postgresql=self.pg_drop, sqlite=self.sqlite_drop).here(db)()

    def create(self, apps, schema_editor) -> None:
        """A ``RunPython`` forward function: create the triggers and backfill the counts."""
        self._run(schema_editor, forward=True)

    def drop(self, apps, schema_editor) -> None:
        """A ``RunPython`` reverse function: drop the triggers (the table goes with its model)."""
        self._run(schema_editor, forward=False)

    def _run(self, schema_editor, *, forward: bool) -> None:
        for statement in self.statements(forward=forward, db=schema_editor.connection):
            schema_editor.execute(statement, params=None)


# ReviewStateCount: the scheduled review states per (learner, due_on, step, suspended),
# whoever writes them: the services, the beat jobs' raw INSERT ... SELECT, cascading
# deletes, bulk loads, the admin, psql.
_STATE_KEY = "learner_id, due_on, step, suspended"
_STATES = "cards_reviewstatecount"
_STATE_OLD_KEY = (
    "learner_id = OLD.learner_id AND due_on = OLD.due_on AND step = OLD.step "
    "AND suspended = OLD.suspended"
)


# SQLite: row-level triggers doing the same with OLD and NEW (one writer at a time).
def _state_add(row: str) -> str:
    return (
        f"INSERT INTO {_STATES} ({_STATE_KEY}, n) "
        f"SELECT {row}.learner_id, {row}.due_on, {row}.step, {row}.suspended, 1 "
        f"WHERE {row}.scheduled "
        f"ON CONFLICT ({_STATE_KEY}) DO UPDATE SET n = n + 1;"
    )


# An UPDATE, not an upsert of -1: Django's test flush may empty the counts before the
# states, and must not leave negative rows behind.
_STATE_TAKE_OFF_OLD = (
    f"UPDATE {_STATES} SET n = n - 1 WHERE {_STATE_OLD_KEY} AND OLD.scheduled; "
    f"DELETE FROM {_STATES} WHERE {_STATE_OLD_KEY} AND n = 0;"
)
_STATE_KEY_CHANGED = " OR ".join(
    f"OLD.{column} IS NOT NEW.{column}" for column in (*_STATE_KEY.split(", "), "scheduled")
)

REVIEW_STATE_COUNTS = CountTriggers(
    table=_STATES,
    source="cards_reviewstate",
    key=_STATE_KEY,
    transition="states",
    pg_deltas={
        "insert": f"SELECT {_STATE_KEY}, 1 AS d FROM new_states WHERE scheduled",
        "delete": f"SELECT {_STATE_KEY}, -1 AS d FROM old_states WHERE scheduled",
        "update": (
            f"SELECT {_STATE_KEY}, -1 AS d FROM old_states WHERE scheduled "
            f"UNION ALL SELECT {_STATE_KEY}, 1 AS d FROM new_states WHERE scheduled"
        ),
    },
    sqlite=[
        f"CREATE TRIGGER {_STATES}_insert AFTER INSERT ON cards_reviewstate "
        f"BEGIN {_state_add('NEW')} END",
        f"CREATE TRIGGER {_STATES}_delete AFTER DELETE ON cards_reviewstate "
        f"BEGIN {_STATE_TAKE_OFF_OLD} END",
        f"CREATE TRIGGER {_STATES}_update AFTER UPDATE ON cards_reviewstate "
        f"WHEN {_STATE_KEY_CHANGED} "
        f"BEGIN {_STATE_TAKE_OFF_OLD} {_state_add('NEW')} END",
    ],
    backfill=f"""
    INSERT INTO {_STATES} ({_STATE_KEY}, n)
    SELECT {_STATE_KEY}, COUNT(*) FROM cards_reviewstate WHERE scheduled
    GROUP BY {_STATE_KEY}
""",
)


# LapseCount: the failed entries of the log per (learner, card), net of undos, whoever
# writes the log: the review, undo and exercise services, account deletion moving the log
# to the deleted learners' account, bulk loads, psql. An UPDATE that moves a row to
# another learner moves its lapse with it.
_LAPSE_KEY = "learner_id, card_id"
_LAPSES = "cards_lapsecount"
_FAIL = "result = 'fail'"
_LAPSE = net()


# SQLite: row-level triggers that recount the one (learner, card) a row touched, from
# the log's fails index (a handful of rows). Not +1/-1 as for the state counts: deleting
# an undo entry adds a lapse back, so a decrement-only delete (what survives Django's
# test flush emptying the counts before the log) could not be exact, and an upsert of
# the delta would leave rows behind that flush. A recount is exact in any order.
def _lapse_recount(row: str) -> str:
    where = f"learner_id = {row}.learner_id AND card_id = {row}.card_id"
    return (
        f"DELETE FROM {_LAPSES} WHERE {where}; "
        f"INSERT INTO {_LAPSES} ({_LAPSE_KEY}, n) SELECT {row}.learner_id, {row}.card_id, lapses "
        f"FROM (SELECT SUM({_LAPSE}) AS lapses FROM cards_reviewlog WHERE {where} AND {_FAIL}) "
        f"WHERE lapses <> 0;"
    )


_LAPSE_CHANGED = " OR ".join(
    f"OLD.{column} IS NOT NEW.{column}"
    for column in ("learner_id", "card_id", "result", "undo_of_id")
)

LAPSE_COUNTS = CountTriggers(
    table=_LAPSES,
    source="cards_reviewlog",
    key=_LAPSE_KEY,
    transition="logs",
    pg_deltas={
        "insert": f"SELECT {_LAPSE_KEY}, {_LAPSE} AS d FROM new_logs WHERE {_FAIL}",
        "delete": f"SELECT {_LAPSE_KEY}, -{_LAPSE} AS d FROM old_logs WHERE {_FAIL}",
        "update": (
            f"SELECT {_LAPSE_KEY}, -{_LAPSE} AS d FROM old_logs WHERE {_FAIL} "
            f"UNION ALL SELECT {_LAPSE_KEY}, {_LAPSE} AS d FROM new_logs WHERE {_FAIL}"
        ),
    },
    sqlite=[
        f"CREATE TRIGGER {_LAPSES}_insert AFTER INSERT ON cards_reviewlog "
        f"WHEN NEW.{_FAIL} BEGIN {_lapse_recount('NEW')} END",
        f"CREATE TRIGGER {_LAPSES}_delete AFTER DELETE ON cards_reviewlog "
        f"WHEN OLD.{_FAIL} BEGIN {_lapse_recount('OLD')} END",
        f"CREATE TRIGGER {_LAPSES}_update AFTER UPDATE ON cards_reviewlog "
        f"WHEN (OLD.{_FAIL} OR NEW.{_FAIL}) AND ({_LAPSE_CHANGED}) "
        f"BEGIN {_lapse_recount('OLD')} {_lapse_recount('NEW')} END",
    ],
    backfill=f"""
    INSERT INTO {_LAPSES} ({_LAPSE_KEY}, n)
    SELECT {_LAPSE_KEY}, SUM({_LAPSE}) FROM cards_reviewlog WHERE {_FAIL}
    GROUP BY {_LAPSE_KEY} HAVING SUM({_LAPSE}) <> 0
""",
)


# --- Plans sized for the statement -------------------------------------------------------

# PL/pgSQL keeps one plan per statement for the session, costed for the transition tables
# it first met. Planned for a bulk load (hash tables sized for 100,000 rows, JIT
# compilation), it would serve every single review after it at up to seconds each. So the item analysis's triggers run their statements as kept plans for a
# small statement, which is where those plans are made, and plan a large one afresh
# (EXECUTE), where planning costs nothing beside the work.
_LARGE_STATEMENT = 64
_PG_SIZED = """
DECLARE
    emptied bigint[];
BEGIN
    IF (SELECT COUNT(*) FROM (SELECT 1 FROM {rows} LIMIT {over}) AS s) > {large} THEN
{executed}
    ELSE
{kept}
    END IF;
{after}
    RETURN NULL;
END
"""


def _pg_sized(event: str, transition: str, statements: list[str], *, applied: str = "") -> str:
    """A trigger body running ``statements`` sized for the event's rows (``new_<x>`` or
    ``old_<x>``). With ``applied`` (a count column) the last statement is a ``WITH applied``
    upsert whose emptied rows are then deleted from that table, as ``_PG_APPLY`` does."""
    rows = f"new_{transition}" if event == "insert" else f"old_{transition}"
    executed = [f"EXECUTE $sql${sql}$sql$;" for sql in statements]
    kept = [f"{sql};" for sql in statements]
    after = ""
    if applied:
        table, column = applied.split(".")
        last = statements[-1]
        executed[-1] = f"EXECUTE $sql${last} SELECT array_agg(id) FROM applied WHERE {column} = 0"
        executed[-1] += "$sql$ INTO emptied;"
        kept[-1] = f"{last} SELECT array_agg(id) INTO emptied FROM applied WHERE {column} = 0;"
        after = (
            f"    IF emptied IS NOT NULL THEN\n"
            f"        DELETE FROM {table} WHERE id = ANY(emptied) AND {column} = 0;\n"
            f"    END IF;"
        )
    return _PG_SIZED.format(
        rows=rows,
        over=_LARGE_STATEMENT + 1,
        large=_LARGE_STATEMENT,
        executed="\n".join(executed),
        kept="\n".join(kept),
        after=after,
    )


def _pg_sized_apply(table: str, key: str, transition: str) -> Callable[[str, str], str]:
    """``_PG_APPLY`` (the deltas added to ``n``), sized for the statement."""
    upsert = f"""
    WITH applied AS (
        INSERT INTO {table} AS t ({key}, n)
        SELECT {key}, SUM(d)::integer FROM ({{deltas}}) AS deltas
        GROUP BY {key} HAVING SUM(d) <> 0
        ORDER BY {key}
        ON CONFLICT ({key}) DO UPDATE SET n = t.n + EXCLUDED.n
        RETURNING t.id, t.n
    )"""
    return lambda event, deltas: _pg_sized(
        event, transition, [upsert.replace("{deltas}", deltas)], applied=f"{table}.n"
    )


# --- The item analysis: LearnerCardFigures and CardFigures ------------------------------

# LearnerCardFigures: per (learner, card), the reviews that no undo cancelled (``kept``),
# their passes and fails, and whether the earliest of them passed. Not a sum of deltas:
# an undo can cancel a pair's first review, and which review is first then changes, so
# the triggers recount each pair a statement touched from the log (its (card, learner)
# index: the pair's handful of rows). A pair is touched by a row of it written, updated
# or deleted, and by an undo entry naming one of its reviews.
_PAIRS = "cards_learnercardfigures"
_PAIR_KEY = "learner_id, card_id"
_PAIR_COLUMNS = f"{_PAIR_KEY}, reviews, passes, lapses, first_pass"
_PAIR_KEPT = kept("l")
# A pair's figures over its kept reviews ``l``: reviews, passes, fails, and 1 when the
# first (the lowest id: the log is appended in time order) passed.
_PAIR_SUMS = """COUNT(*),
        COALESCE(SUM(CASE WHEN l.result = 'pass' THEN 1 ELSE 0 END), 0),
        COALESCE(SUM(CASE WHEN l.result = 'fail' THEN 1 ELSE 0 END), 0),
        CASE WHEN MIN(CASE WHEN l.result = 'pass' THEN l.id END) = MIN(l.id) THEN 1 ELSE 0 END"""
# PostgreSQL: those of the one pair ``t`` (a LATERAL subquery; zero reviews when none is left).
_PAIR_FIGURES = f"""
    SELECT {_PAIR_SUMS.replace("COUNT(*)", "COUNT(*) AS reviews")}
    FROM cards_reviewlog l
    WHERE l.learner_id = t.learner_id AND l.card_id = t.card_id AND {_PAIR_KEPT}"""


def _pg_touched(rows: str) -> str:
    """The pairs of ``rows`` ``(learner_id, card_id, undo_of_id)``, and of the reviews their
    undo entries name."""
    return (
        f"SELECT learner_id, card_id FROM ({rows}) AS r "
        f"UNION SELECT x.learner_id, x.card_id FROM ({rows}) AS r CROSS JOIN LATERAL "
        f"(SELECT learner_id, card_id FROM cards_reviewlog WHERE id = r.undo_of_id OFFSET 0) x "
        f"WHERE r.undo_of_id IS NOT NULL"
    )


def _pg_pair_recount(event: str, touched: str) -> str:
    # Each pair, and each row to delete, is reached by a LATERAL lookup by index.
    fresh = (
        f"SELECT t.learner_id, t.card_id, f.* "
        f"FROM ({touched}) AS t CROSS JOIN LATERAL ({_PAIR_FIGURES}) AS f"
    )
    delete = f"""
    DELETE FROM {_PAIRS} WHERE id = ANY (ARRAY(
        SELECT x.id FROM ({fresh}) AS g CROSS JOIN LATERAL (
            SELECT id FROM {_PAIRS}
            WHERE learner_id = g.learner_id AND card_id = g.card_id OFFSET 0) AS x
        WHERE g.reviews = 0))"""
    upsert = f"""
    INSERT INTO {_PAIRS} AS p ({_PAIR_COLUMNS})
    SELECT * FROM ({fresh}) AS g WHERE g.reviews > 0 ORDER BY 1, 2
    ON CONFLICT ({_PAIR_KEY}) DO UPDATE SET
        reviews = EXCLUDED.reviews, passes = EXCLUDED.passes, lapses = EXCLUDED.lapses,
        first_pass = EXCLUDED.first_pass
    WHERE (p.reviews, p.passes, p.lapses, p.first_pass)
        IS DISTINCT FROM (EXCLUDED.reviews, EXCLUDED.passes, EXCLUDED.lapses, EXCLUDED.first_pass)"""
    return _pg_sized(event, "logs", [delete, upsert])


# An UPDATE touches only the rows whose pair, result or undo changed (a review of
# idempotency_key only costs a join of the transition tables).
_LOG_FIELDS = "learner_id, card_id, result, undo_of_id"
_LOG_CHANGED = (
    "SELECT {a}.learner_id, {a}.card_id, {a}.undo_of_id FROM {a_rows} {a} "
    "LEFT JOIN {b_rows} {b} ON {b}.id = {a}.id "
    f"WHERE {{b}}.id IS NULL OR ({', '.join('{a}.' + c for c in _LOG_FIELDS.split(', '))}) "
    f"IS DISTINCT FROM ({', '.join('{b}.' + c for c in _LOG_FIELDS.split(', '))})"
)
_LOG_UPDATED = (
    _LOG_CHANGED.format(a="o", b="n", a_rows="old_logs", b_rows="new_logs")
    + " UNION ALL "
    + _LOG_CHANGED.format(a="n", b="o", a_rows="new_logs", b_rows="old_logs")
)


# SQLite: row-level triggers recounting the pair of the row, and of the review it undoes.
def _sqlite_pair_recount(learner: str, card: str) -> str:
    where = f"learner_id = {learner} AND card_id = {card}"
    return (
        f"DELETE FROM {_PAIRS} WHERE {where}; "
        f"INSERT INTO {_PAIRS} ({_PAIR_COLUMNS}) "
        f"SELECT l.learner_id, l.card_id, {_PAIR_SUMS} FROM cards_reviewlog l "
        f"WHERE l.learner_id = {learner} AND l.card_id = {card} AND {_PAIR_KEPT} "
        f"GROUP BY l.learner_id, l.card_id;"
    )


def _sqlite_pairs_of(row: str) -> str:
    undone = f"FROM cards_reviewlog WHERE id = {row}.undo_of_id"
    return _sqlite_pair_recount(f"{row}.learner_id", f"{row}.card_id") + _sqlite_pair_recount(
        f"(SELECT learner_id {undone})", f"(SELECT card_id {undone})"
    )


_LOG_ROW_CHANGED = " OR ".join(
    f"OLD.{column} IS NOT NEW.{column}" for column in ("id", *_LOG_FIELDS.split(", "))
)

LEARNER_CARD_FIGURES = CountTriggers(
    table=_PAIRS,
    source="cards_reviewlog",
    key=_PAIR_KEY,
    transition="logs",
    pg_deltas={
        "insert": _pg_touched("SELECT learner_id, card_id, undo_of_id FROM new_logs"),
        "delete": _pg_touched("SELECT learner_id, card_id, undo_of_id FROM old_logs"),
        "update": _pg_touched(_LOG_UPDATED),
    },
    sqlite=[
        f"CREATE TRIGGER {_PAIRS}_insert AFTER INSERT ON cards_reviewlog "
        f"BEGIN {_sqlite_pairs_of('NEW')} END",
        f"CREATE TRIGGER {_PAIRS}_delete AFTER DELETE ON cards_reviewlog "
        f"BEGIN {_sqlite_pairs_of('OLD')} END",
        f"CREATE TRIGGER {_PAIRS}_update AFTER UPDATE ON cards_reviewlog "
        f"WHEN {_LOG_ROW_CHANGED} "
        f"BEGIN {_sqlite_pairs_of('OLD')} {_sqlite_pairs_of('NEW')} END",
    ],
    backfill=f"""
    INSERT INTO {_PAIRS} ({_PAIR_COLUMNS})
    SELECT l.learner_id, l.card_id, {_PAIR_SUMS}
    FROM cards_reviewlog l WHERE {_PAIR_KEPT} GROUP BY l.learner_id, l.card_id
""",
    # Its pg_deltas are the pairs touched, each recounted.
    pg_apply=_pg_pair_recount,
)


# CardFigures: LearnerCardFigures summed per (card, lapses). PostgreSQL applies each
# statement's rows as deltas, as the counts above (in key order; a group that empties
# is deleted); SQLite recounts the one (card, lapses) a row left and the one it joined,
# from the pairs' (card, lapses) index, which is exact in any order (Django's test flush).
_CARDS = "cards_cardfigures"
_CARD_KEY = "card_id, lapses"
_CARD_SUMS = {  # column -> the pairs' column it sums
    "learners": "1",
    "reviews": "reviews",
    "passes": "passes",
    "first_passes": "first_pass",
}
_PG_CARD_UPSERT = f"""
    WITH applied AS (
        INSERT INTO {_CARDS} AS t ({_CARD_KEY}, {", ".join(_CARD_SUMS)})
        SELECT {_CARD_KEY}, {", ".join(f"SUM(d * {pair})::integer" for pair in _CARD_SUMS.values())}
        FROM ({{deltas}}) AS deltas
        GROUP BY {_CARD_KEY}
        HAVING {" OR ".join(f"SUM(d * {pair}) <> 0" for pair in _CARD_SUMS.values())}
        ORDER BY {_CARD_KEY}
        ON CONFLICT ({_CARD_KEY}) DO UPDATE SET
            {", ".join(f"{column} = t.{column} + EXCLUDED.{column}" for column in _CARD_SUMS)}
        RETURNING t.id, t.learners
    )"""


def _pg_card_apply(event: str, deltas: str) -> str:
    upsert = _PG_CARD_UPSERT.replace("{deltas}", deltas)
    return _pg_sized(event, "pairs", [upsert], applied=f"{_CARDS}.learners")


_PAIR_DELTA = "card_id, lapses, reviews, passes, first_pass"


def _sqlite_card_recount(row: str) -> str:
    where = f"card_id = {row}.card_id AND lapses = {row}.lapses"
    sums = ", ".join("COUNT(*)" if pair == "1" else f"SUM({pair})" for pair in _CARD_SUMS.values())
    return (
        f"DELETE FROM {_CARDS} WHERE {where}; "
        f"INSERT INTO {_CARDS} ({_CARD_KEY}, {', '.join(_CARD_SUMS)}) "
        f"SELECT {_CARD_KEY}, {sums} FROM {_PAIRS} WHERE {where} GROUP BY {_CARD_KEY};"
    )


_PAIR_ROW_CHANGED = " OR ".join(
    f"OLD.{column} IS NOT NEW.{column}" for column in _PAIR_DELTA.split(", ")
)

CARD_FIGURES = CountTriggers(
    table=_CARDS,
    source=_PAIRS,
    key=_CARD_KEY,
    transition="pairs",
    pg_deltas={
        "insert": f"SELECT {_PAIR_DELTA}, 1 AS d FROM new_pairs",
        "delete": f"SELECT {_PAIR_DELTA}, -1 AS d FROM old_pairs",
        "update": (
            f"SELECT {_PAIR_DELTA}, -1 AS d FROM old_pairs "
            f"UNION ALL SELECT {_PAIR_DELTA}, 1 AS d FROM new_pairs"
        ),
    },
    sqlite=[
        f"CREATE TRIGGER {_CARDS}_insert AFTER INSERT ON {_PAIRS} "
        f"BEGIN {_sqlite_card_recount('NEW')} END",
        f"CREATE TRIGGER {_CARDS}_delete AFTER DELETE ON {_PAIRS} "
        f"BEGIN {_sqlite_card_recount('OLD')} END",
        f"CREATE TRIGGER {_CARDS}_update AFTER UPDATE ON {_PAIRS} "
        f"WHEN {_PAIR_ROW_CHANGED} "
        f"BEGIN {_sqlite_card_recount('OLD')} {_sqlite_card_recount('NEW')} END",
    ],
    backfill=f"""
    INSERT INTO {_CARDS} ({_CARD_KEY}, {", ".join(_CARD_SUMS)})
    SELECT {_CARD_KEY}, COUNT(*), SUM(reviews), SUM(passes), SUM(first_pass)
    FROM {_PAIRS} GROUP BY {_CARD_KEY}
""",
    pg_apply=_pg_card_apply,
)


# ExerciseKindFigures: the attempts' verdicts counted per exercise kind (the sections of
# ``cards.db.analysis``), whoever writes the attempts: the exercise service, account
# deletion (Django deletes a learner's attempts before their exercises, so the kind is
# still there to read), bulk loads. Attempts are written once and never changed; an
# UPDATE is counted all the same.
_KINDS = KIND_FIGURES_TABLE
_KIND_KEY = KIND_FIGURES_KEY
_KIND_MATCH = " AND ".join(f"u.{column} = {_KINDS}.{column}" for column in _KIND_KEY.split(", "))


def _kind_add(row: str) -> str:
    # WHERE true: SQLite would read ON CONFLICT as the join's ON without it.
    return (
        f"INSERT INTO {_KINDS} ({_KIND_KEY}, n) SELECT {_KIND_KEY}, 1 "
        f"FROM ({sqlite_attempt_rows(row)}) WHERE true "
        f"ON CONFLICT ({_KIND_KEY}) DO UPDATE SET n = n + 1;"
    )


# An UPDATE that never inserts, as for the state counts: Django's test flush may empty the
# counts before the attempts, and must leave no negative rows behind.
def _kind_take_off(row: str) -> str:
    rows = sqlite_attempt_rows(row)
    return (
        f"UPDATE {_KINDS} SET n = n - (SELECT COUNT(*) FROM ({rows}) u WHERE {_KIND_MATCH}) "
        f"WHERE EXISTS (SELECT 1 FROM ({rows}) u WHERE {_KIND_MATCH}); "
        f"DELETE FROM {_KINDS} WHERE n <= 0;"
    )


KIND_FIGURES = CountTriggers(
    pg_apply=_pg_sized_apply(_KINDS, _KIND_KEY, "attempts"),
    table=_KINDS,
    source="exercises_attempt",
    key=_KIND_KEY,
    transition="attempts",
    pg_deltas={
        "insert": pg_attempt_rows("new_attempts", "1"),
        "delete": pg_attempt_rows("old_attempts", "-1"),
        "update": (
            f"{pg_attempt_rows('old_attempts', '-1')} UNION ALL "
            f"{pg_attempt_rows('new_attempts', '1')}"
        ),
    },
    sqlite=[
        f"CREATE TRIGGER {_KINDS}_insert AFTER INSERT ON exercises_attempt "
        f"BEGIN {_kind_add('NEW')} END",
        f"CREATE TRIGGER {_KINDS}_delete AFTER DELETE ON exercises_attempt "
        f"BEGIN {_kind_take_off('OLD')} END",
        f"CREATE TRIGGER {_KINDS}_update AFTER UPDATE ON exercises_attempt "
        f"BEGIN {_kind_take_off('OLD')} {_kind_add('NEW')} END",
    ],
    backfill=f"""
    INSERT INTO {_KINDS} ({_KIND_KEY}, n)
    SELECT {_KIND_KEY}, SUM(d) FROM ({pg_attempt_rows("exercises_attempt", "1")}) AS rows
    GROUP BY {_KIND_KEY}
""",
    sqlite_backfill=f"""
    INSERT INTO {_KINDS} ({_KIND_KEY}, n)
    SELECT {_KIND_KEY}, COUNT(*) FROM ({sqlite_attempt_rows("a", every=True)}) AS rows
    GROUP BY {_KIND_KEY}
""",
)
