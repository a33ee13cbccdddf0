"""The migrations as they stood before the squash, for tests that migrate inside them.

``cards/migrations/0001_squashed_0010_study_core`` and
``exercises/migrations/0001_squashed_0003_exercises_and_predictions`` replace the old
chains, so Django's migration graph no longer holds a step such as ``0008_review_day``.
The tests that migrate back to a step, and forward again through the next one, run on
the old chain with ``chain_executor``, and finish with ``migrate_to_latest``.
"""

from __future__ import annotations

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader


def chain_executor(connection: BaseDatabaseWrapper) -> MigrationExecutor:
    """An executor whose graph is the old chain alone, as Django saw the migrations before
    the squash existed: without the squashed nodes (``replace_migrations=False`` would keep
    them beside the chain) and without recording them as applied when the chain ends."""
    executor = MigrationExecutor(connection)
    loader = MigrationLoader(connection, replace_migrations=False)
    for key, squashed in loader.replacements.items():
        loader.graph.remove_replacement_node(key, squashed.replaces)
    loader.replacements = {}
    executor.loader = loader
    return executor


def migrate_to_latest(connection: BaseDatabaseWrapper) -> None:
    """Migrate to the latest state as ``manage.py migrate`` does, triggers included.

    On SQLite a migration that rebuilds a kept table (a column added or altered, a
    constraint changed) drops the table's triggers with the old copy. ``migrate`` puts
    them back in its ``post_migrate`` handler (``cards.apps``); an executor run sends no
    signal, so this calls the same repair.
    """
    from cards.db.count_checks import restore_dropped_sqlite_triggers

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    restore_dropped_sqlite_triggers(using=connection.alias)
