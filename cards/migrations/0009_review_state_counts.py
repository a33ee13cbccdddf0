import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# The counts of scheduled review states per (learner, due_on, step, suspended), kept by
# triggers on cards_reviewstate so that every write path is counted: the services, the
# beat jobs' raw INSERT ... SELECT, cascading deletes, bulk loads, the admin, psql.
# A count that reaches zero is deleted by the trigger that brought it there.
# Written out: a migration does not import the app.

TABLE = "cards_reviewstatecount"
KEY = "learner_id, due_on, step, suspended"

# PostgreSQL: one statement-level trigger per event, over its transition tables. Each
# applies the statement's changes as one grouped upsert, the groups in key order so that
# concurrent statements lock the count rows in one order (no deadlock between them).
# An UPDATE's old rows count -1 and its new rows +1: a row that kept its key nets to 0
# and is skipped (a bury, a review of last_reviewed_at only), with no join by id.
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
    "insert": f"SELECT {KEY}, 1 AS d FROM new_states WHERE scheduled",
    "delete": f"SELECT {KEY}, -1 AS d FROM old_states WHERE scheduled",
    "update": (
        f"SELECT {KEY}, -1 AS d FROM old_states WHERE scheduled "
        f"UNION ALL SELECT {KEY}, 1 AS d FROM new_states WHERE scheduled"
    ),
}
PG_REFERENCING = {
    "insert": "NEW TABLE AS new_states",
    "delete": "OLD TABLE AS old_states",
    "update": "OLD TABLE AS old_states NEW TABLE AS new_states",
}


def _pg_forward() -> list[str]:
    statements = []
    for event, deltas in PG_DELTAS.items():
        name = f"{TABLE}_{event}"
        body = PG_APPLY.replace("{deltas}", deltas)
        statements += [
            f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $body${body}$body$",
            f"CREATE TRIGGER {name} AFTER {event.upper()} ON cards_reviewstate "
            f"REFERENCING {PG_REFERENCING[event]} FOR EACH STATEMENT EXECUTE FUNCTION {name}()",
        ]
    # TRUNCATE fires no DELETE trigger: empty the counts with the states.
    statements += [
        f"CREATE FUNCTION {TABLE}_truncate() RETURNS trigger LANGUAGE plpgsql AS "
        f"$body$ BEGIN DELETE FROM {TABLE}; RETURN NULL; END $body$",
        f"CREATE TRIGGER {TABLE}_truncate AFTER TRUNCATE ON cards_reviewstate "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {TABLE}_truncate()",
    ]
    return statements


def _pg_reverse() -> list[str]:
    statements = []
    for event in (*PG_DELTAS, "truncate"):
        name = f"{TABLE}_{event}"
        statements += [
            f"DROP TRIGGER IF EXISTS {name} ON cards_reviewstate",
            f"DROP FUNCTION IF EXISTS {name}()",
        ]
    return statements


# SQLite: row-level triggers doing the same with OLD and NEW (one writer at a time).
def _sqlite_add(row: str) -> str:
    return (
        f"INSERT INTO {TABLE} ({KEY}, n) "
        f"SELECT {row}.learner_id, {row}.due_on, {row}.step, {row}.suspended, 1 "
        f"WHERE {row}.scheduled "
        f"ON CONFLICT ({KEY}) DO UPDATE SET n = n + 1;"
    )


_SQLITE_OLD_KEY = (
    "learner_id = OLD.learner_id AND due_on = OLD.due_on AND step = OLD.step "
    "AND suspended = OLD.suspended"
)


def _sqlite_take_off_old() -> str:
    # An UPDATE, not an upsert of -1: Django's test flush may empty the counts before
    # the states, and must not leave negative rows behind.
    return (
        f"UPDATE {TABLE} SET n = n - 1 WHERE {_SQLITE_OLD_KEY} AND OLD.scheduled; "
        f"DELETE FROM {TABLE} WHERE {_SQLITE_OLD_KEY} AND n = 0;"
    )


_KEY_CHANGED = " OR ".join(
    f"OLD.{column} IS NOT NEW.{column}" for column in (*KEY.split(", "), "scheduled")
)
SQLITE_FORWARD = [
    f"CREATE TRIGGER {TABLE}_insert AFTER INSERT ON cards_reviewstate "
    f"BEGIN {_sqlite_add('NEW')} END",
    f"CREATE TRIGGER {TABLE}_delete AFTER DELETE ON cards_reviewstate "
    f"BEGIN {_sqlite_take_off_old()} END",
    f"CREATE TRIGGER {TABLE}_update AFTER UPDATE ON cards_reviewstate WHEN {_KEY_CHANGED} "
    f"BEGIN {_sqlite_take_off_old()} {_sqlite_add('NEW')} END",
]
SQLITE_REVERSE = [f"DROP TRIGGER IF EXISTS {TABLE}_{event}" for event in PG_DELTAS]

# After the triggers, in the same transaction: on PostgreSQL, CREATE TRIGGER waits for the
# writers in flight and holds new ones off until commit, so none is counted twice or missed.
BACKFILL = f"""
    INSERT INTO {TABLE} ({KEY}, n)
    SELECT {KEY}, COUNT(*) FROM cards_reviewstate WHERE scheduled
    GROUP BY {KEY}
"""


def _run(schema_editor, statements) -> None:
    for statement in statements:
        schema_editor.execute(statement, params=None)


def _statements(vendor: str, *, forward: bool) -> list[str]:
    if vendor == "postgresql":
        return [*_pg_forward(), BACKFILL] if forward else _pg_reverse()
    if vendor == "sqlite":
        return [*SQLITE_FORWARD, BACKFILL] if forward else SQLITE_REVERSE
    raise RuntimeError(f"No review-state count triggers for {vendor}: PostgreSQL or SQLite.")


def add_triggers(apps, schema_editor) -> None:
    _run(schema_editor, _statements(schema_editor.connection.vendor, forward=True))


def drop_triggers(apps, schema_editor) -> None:
    _run(schema_editor, _statements(schema_editor.connection.vendor, forward=False))


class Migration(migrations.Migration):
    dependencies = [
        ("cards", "0008_review_day"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ReviewStateCount",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("due_on", models.DateField()),
                ("step", models.PositiveSmallIntegerField()),
                ("suspended", models.BooleanField()),
                ("n", models.IntegerField()),
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
                "constraints": [
                    models.UniqueConstraint(
                        fields=("learner", "due_on", "step", "suspended"),
                        name="reviewstatecount_unique",
                    )
                ],
            },
        ),
        # by_step is read from the counts now; the index only cost the writes.
        migrations.RemoveIndex(model_name="reviewstate", name="reviewstate_steps"),
        migrations.AddIndex(
            model_name="reviewstate",
            index=models.Index(
                condition=models.Q(("buried_on__isnull", False)),
                fields=["learner", "buried_on"],
                name="reviewstate_buried",
            ),
        ),
        migrations.RunPython(add_triggers, drop_triggers),
    ]
