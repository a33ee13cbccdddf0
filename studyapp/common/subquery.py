"""A queryset as SQL to embed in a raw statement (``... IN (subquery)``).

Both apps need it (``cards.db.review_days`` rebuilds rows, ``labs.housekeeping`` deletes
old submissions), and it rests on Django's private ``Query.sql_with_params``: this is
the one place that calls it, and ``tests/cards/test_compiled_fence.py`` checks that it
still returns SQL whose placeholders match its parameters.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet


def subquery_sql(queryset: QuerySet[Any]) -> tuple[str, tuple[Any, ...]]:
    """``queryset`` as SQL and its parameters, to embed in a raw statement."""
    sql, params = queryset.query.sql_with_params()
    return sql, tuple(params)
