import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# The lapses per (learner, card): the failed entries of the review log net of undos
# (an entry with undo_of set cancels the review it undoes, so it counts -1), kept by
# triggers on cards_reviewlog so that every write path is counted: the review, undo and
# exercise services, account deletion moving the log to the deleted learners' account,
# bulk loads, psql. A count that reaches zero is deleted.
# Written out: a migration does not import the app.

TABLE = "cards_lapsecount"
KEY = "learner_id, card_id"
FAIL = "result = 'fail'"
LAPSE = "CASE WHEN undo_of_id IS NULL THEN 1 ELSE -1 END"

# PostgreSQL: one statement-level trigger per event over its transition tables, as for
# the review-state counts (0009): the statement's changes as one grouped upsert, groups
# in key order so that concurrent statements lock the count rows in one order. An
# UPDATE's old rows are taken off and its new rows added: a row that kept its key nets
# to 0 and is skipped; one moved to another learner moves its lapse with it.
PG_APPLY = f"""
DECLARE
    emptied bigint[];
BEGIN
    WITH applied AS (
        INSERT INTO {TABLE} AS t ({KEY}, n)
        SELECT {KEY}, SUM(d)::integer FROM ({{deltas}}) AS deltas
        GROUP BY {KEY} HAVING SUM(d) <> 0
        ORDER BY {KEY}
        ON CONFLICT ({KEY}) DO UPDATE SET n = t.n + EXCLUDED.n
        RETURNING t.id, t.n
    )
    SELECT array_agg(id) INTO emptied FROM applied WHERE n = 0;
    IF emptied IS NOT NULL THEN
        -- Rows this statement holds locked since the upsert: nobody changed them since.
        DELETE FROM {TABLE} WHERE id = ANY(emptied) AND n = 0;
    END IF;
    RETURN NULL;
END
"""
PG_DELTAS = {
    "insert": f"SELECT {KEY}, {LAPSE} AS d FROM new_logs WHERE {FAIL}",
    "delete": f"SELECT {KEY}, -{LAPSE} AS d FROM old_logs WHERE {FAIL}",
    "update": (
        f"SELECT {KEY}, -{LAPSE} AS d FROM old_logs WHERE {FAIL} "
        f"UNION ALL SELECT {KEY}, {LAPSE} AS d FROM new_logs WHERE {FAIL}"
    ),
}
PG_REFERENCING = {
    "insert": "NEW TABLE AS new_logs",
    "delete": "OLD TABLE AS old_logs",
    "update": "OLD TABLE AS old_logs NEW TABLE AS new_logs",
}


def _pg_forward() -> list[str]:
    statements = []
    for event, deltas in PG_DELTAS.items():
        name = f"{TABLE}_{event}"
        body = PG_APPLY.replace("{deltas}", deltas)
        statements += [
            f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $body${body}$body$",
            f"CREATE TRIGGER {name} AFTER {event.upper()} ON cards_reviewlog "
            f"REFERENCING {PG_REFERENCING[event]} FOR EACH STATEMENT EXECUTE FUNCTION {name}()",
        ]
    # TRUNCATE fires no DELETE trigger: empty the counts with the log.
    statements += [
        f"CREATE FUNCTION {TABLE}_truncate() RETURNS trigger LANGUAGE plpgsql AS "
        f"$body$ BEGIN DELETE FROM {TABLE}; RETURN NULL; END $body$",
        f"CREATE TRIGGER {TABLE}_truncate AFTER TRUNCATE ON cards_reviewlog "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {TABLE}_truncate()",
    ]
    return statements


def _pg_reverse() -> list[str]:
    statements = []
    for event in (*PG_DELTAS, "truncate"):
        name = f"{TABLE}_{event}"
        statements += [
            f"DROP TRIGGER IF EXISTS {name} ON cards_reviewlog",
            f"DROP FUNCTION IF EXISTS {name}()",
        ]
    return statements


# SQLite: row-level triggers that recount the one (learner, card) a row touched, from
# the log's fails index (a handful of rows). Not +1/-1 as for the state counts: deleting
# an undo entry adds a lapse back, so a decrement-only delete (what survives Django's
# test flush emptying the counts before the log) could not be exact, and an upsert of
# the delta would leave rows behind that flush. A recount is exact in any order.
def _sqlite_recount(row: str) -> str:
    where = f"learner_id = {row}.learner_id AND card_id = {row}.card_id"
    return (
        f"DELETE FROM {TABLE} WHERE {where}; "
        f"INSERT INTO {TABLE} ({KEY}, n) SELECT {row}.learner_id, {row}.card_id, lapses "
        f"FROM (SELECT SUM({LAPSE}) AS lapses FROM cards_reviewlog WHERE {where} AND {FAIL}) "
        f"WHERE lapses <> 0;"
    )


_CHANGED = " OR ".join(
    f"OLD.{column} IS NOT NEW.{column}"
    for column in ("learner_id", "card_id", "result", "undo_of_id")
)
SQLITE_FORWARD = [
    f"CREATE TRIGGER {TABLE}_insert AFTER INSERT ON cards_reviewlog "
    f"WHEN NEW.{FAIL} BEGIN {_sqlite_recount('NEW')} END",
    f"CREATE TRIGGER {TABLE}_delete AFTER DELETE ON cards_reviewlog "
    f"WHEN OLD.{FAIL} BEGIN {_sqlite_recount('OLD')} END",
    f"CREATE TRIGGER {TABLE}_update AFTER UPDATE ON cards_reviewlog "
    f"WHEN (OLD.{FAIL} OR NEW.{FAIL}) AND ({_CHANGED}) "
    f"BEGIN {_sqlite_recount('OLD')} {_sqlite_recount('NEW')} END",
]
SQLITE_REVERSE = [f"DROP TRIGGER IF EXISTS {TABLE}_{event}" for event in PG_DELTAS]

# After the triggers, in the same transaction: on PostgreSQL, CREATE TRIGGER waits for the
# writers in flight and holds new ones off until commit, so none is counted twice or missed.
BACKFILL = f"""
    INSERT INTO {TABLE} ({KEY}, n)
    SELECT {KEY}, SUM({LAPSE}) FROM cards_reviewlog WHERE {FAIL}
    GROUP BY {KEY} HAVING SUM({LAPSE}) <> 0
"""


def _run(schema_editor, statements) -> None:
    for statement in statements:
        schema_editor.execute(statement, params=None)


def _statements(vendor: str, *, forward: bool) -> list[str]:
    if vendor == "postgresql":
        return [*_pg_forward(), BACKFILL] if forward else _pg_reverse()
    if vendor == "sqlite":
        return [*SQLITE_FORWARD, BACKFILL] if forward else SQLITE_REVERSE
    raise RuntimeError(f"No lapse count triggers for {vendor}: PostgreSQL or SQLite.")


def add_triggers(apps, schema_editor) -> None:
    _run(schema_editor, _statements(schema_editor.connection.vendor, forward=True))


def drop_triggers(apps, schema_editor) -> None:
    _run(schema_editor, _statements(schema_editor.connection.vendor, forward=False))


class Migration(migrations.Migration):
    dependencies = [
        ("cards", "0009_review_state_counts"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="LapseCount",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("n", models.IntegerField()),
                (
                    "card",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="cards.card",
                    ),
                ),
                (
                    "learner",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(
                        fields=["learner", "n"], include=("card",), name="lapsecount_leeches"
                    )
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("learner", "card"), name="lapsecount_unique"
                    )
                ],
            },
        ),
        migrations.RunPython(add_triggers, drop_triggers),
    ]
