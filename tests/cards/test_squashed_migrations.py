"""The squashed migrations build the schema the old chain builds, and replace it.

A fresh database runs ``cards/migrations/0001_squashed_0010_study_core`` and
``exercises/migrations/0001_squashed_0003_exercises_and_predictions``; one that ran the
old chain (0001-0010, 0001-0003) must end with the same tables, columns, indexes,
constraints and triggers, and must see the squashes as applied. Each test migrates
databases of its own beside the test database, on the backend the suite runs on:
SQLite files, or PostgreSQL schemas in the test database.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.migrations.executor import MigrationExecutor

from .old_chain import chain_executor

CARDS_SQUASH = ("cards", "0001_squashed_0010_study_core")
EXERCISES_SQUASH = ("exercises", "0001_squashed_0003_exercises_and_predictions")
CHAIN_ENDS = [("cards", "0010_lapse_counts"), ("exercises", "0003_prediction")]
APPS = ("cards_", "exercises_")

# The old chain's 0004 marks states through the default database (a RunPython over
# historical models): it finds no rows there, but needs access to it.
pytestmark = pytest.mark.django_db


@contextmanager
def database(name: str, tmp_path) -> Iterator[BaseDatabaseWrapper]:
    """A connection to an empty database ``name`` on the suite's backend."""
    settings = {**connection.settings_dict, "OPTIONS": {**connection.settings_dict["OPTIONS"]}}
    if connection.vendor == "sqlite":
        settings["NAME"] = str(tmp_path / f"{name}.sqlite3")
    else:
        base = settings["OPTIONS"].get("options", "")
        settings["OPTIONS"]["options"] = f"{base} -c search_path={name}".strip()
    other = type(connections[DEFAULT_DB_ALIAS])(settings, alias=name)
    # Reachable by its alias (the schema editor's transactions look it up), but not one
    # of the configured databases, which the test case keeps to the test database.
    connections[name] = other
    try:
        if connection.vendor == "postgresql":
            with other.cursor() as cursor:
                cursor.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
                cursor.execute(f"CREATE SCHEMA {name}")
        yield other
    finally:
        if connection.vendor == "postgresql":
            with other.cursor() as cursor:
                cursor.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        other.close()
        del connections[name]


def schema(db: BaseDatabaseWrapper) -> dict[str, Any]:
    """Every table of the two apps with its columns, constraints and indexes; every
    trigger by name; and the SQL of every index and trigger (SQLite) or of every trigger
    and trigger function (PostgreSQL)."""
    introspection = db.introspection
    with db.cursor() as cursor:
        tables = sorted(
            t.name for t in introspection.get_table_list(cursor) if t.name.startswith(APPS)
        )
        found: dict[str, Any] = {
            table: {
                # By name: the chain's merged branches may add columns in either order.
                "columns": sorted(
                    tuple(column) for column in introspection.get_table_description(cursor, table)
                ),
                "constraints": sorted(introspection.get_constraints(cursor, table).items()),
            }
            for table in tables
        }
        if db.vendor == "sqlite":
            cursor.execute(
                "SELECT name, tbl_name, sql FROM sqlite_master WHERE type IN ('index', 'trigger') "
                "AND (tbl_name LIKE 'cards%' OR tbl_name LIKE 'exercises%') ORDER BY name"
            )
            found["sqlite_master"] = cursor.fetchall()
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
        else:
            cursor.execute(
                "SELECT p.proname, p.prosrc FROM pg_proc p "
                "WHERE p.pronamespace = current_schema()::regnamespace ORDER BY p.proname"
            )
            found["functions"] = cursor.fetchall()
            cursor.execute(
                "SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t "
                "JOIN pg_class c ON c.oid = t.tgrelid "
                "WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace "
                "ORDER BY t.tgname"
            )
            found["trigger_definitions"] = cursor.fetchall()
            cursor.execute(
                "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                "WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace "
                "ORDER BY t.tgname"
            )
        found["triggers"] = [name for (name,) in cursor.fetchall()]
    return found


def without_schema_name(found: dict[str, Any], name: str) -> str:
    # PostgreSQL names the schema in index and trigger definitions.
    return re.sub(rf"\b{name}\.", "", repr(found))


def test_a_fresh_database_gets_the_old_chains_schema_triggers_included(tmp_path):
    with database("squashed", tmp_path) as fresh, database("chained", tmp_path) as chained:
        executor = MigrationExecutor(fresh)
        executor.migrate([CARDS_SQUASH, EXERCISES_SQUASH])
        # A fresh database runs the squashes, not the chain.
        applied = {key for key, _ in executor.recorder.applied_migrations().items()}
        assert {CARDS_SQUASH, EXERCISES_SQUASH} <= applied
        chain_executor(chained).migrate(CHAIN_ENDS)

        squashed, chain = schema(fresh), schema(chained)

    events = ("insert", "delete", "update") + (
        ("truncate",) if connection.vendor == "postgresql" else ()
    )
    assert squashed["triggers"] == sorted(
        f"{table}_{event}"
        for table in ("cards_lapsecount", "cards_reviewstatecount")
        for event in events
    )
    assert {
        "cards_reviewday",
        "cards_reviewstatecount",
        "cards_lapsecount",
        "exercises_prediction",
    } <= set(squashed)
    assert "reviewstate_steps" not in dict(squashed["cards_reviewstate"]["constraints"])
    assert without_schema_name(squashed, "squashed") == without_schema_name(chain, "chained")


def test_a_database_at_the_end_of_the_old_chain_has_nothing_to_migrate(tmp_path):
    with database("chained", tmp_path) as chained:
        chain_executor(chained).migrate(CHAIN_ENDS)
        recorded = set(chain_executor(chained).recorder.applied_migrations())
        assert CARDS_SQUASH not in recorded and EXERCISES_SQUASH not in recorded

        executor = MigrationExecutor(chained)
        assert CARDS_SQUASH in executor.loader.applied_migrations
        assert EXERCISES_SQUASH in executor.loader.applied_migrations
        assert executor.migration_plan([CARDS_SQUASH, EXERCISES_SQUASH]) == []
