"""What the PostgreSQL benchmarks share: their own database, and raw statements."""

from __future__ import annotations

import os
import sys


def ensure_database(script: str) -> None:
    """Create the database named by ``DATABASE_URL`` when missing; PostgreSQL only."""
    import dj_database_url
    import psycopg

    url = os.environ.get("DATABASE_URL", "")
    cfg = dj_database_url.parse(url) if url else {"ENGINE": ""}
    if "postgresql" not in cfg["ENGINE"]:
        sys.exit(f"{script} needs PostgreSQL: set DATABASE_URL=postgres://...")
    admin = psycopg.connect(
        host=cfg["HOST"] or "127.0.0.1",
        port=cfg["PORT"] or 5432,
        user=cfg["USER"],
        password=cfg["PASSWORD"] or None,
        dbname="postgres",
        autocommit=True,
    )
    with admin:
        exists = admin.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [cfg["NAME"]]
        ).fetchone()
        if not exists:
            admin.execute(f'CREATE DATABASE "{cfg["NAME"]}"')


def prepare(name: str) -> None:
    """Set up Django for a PostgreSQL benchmark on its own database ``name`` (unless
    ``DATABASE_URL`` names another), created when missing and migrated."""
    os.environ.setdefault("DATABASE_URL", f"postgres://postgres@127.0.0.1:5432/{name}")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studyapp.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("DJANGO_DEBUG", "0")
    os.environ.setdefault("DJANGO_SECRET_KEY", "benchmark-only")
    ensure_database(name)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def sql(statement: str, params=()) -> int:
    """Run one statement on Django's connection; returns the rows it touched."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.rowcount
