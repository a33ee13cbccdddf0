"""``cards.db.dialect``: a rule's form for the connection at hand, and no other database."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.db import connection

from cards.db.dialect import PerDialect, is_postgres, is_sqlite


def test_the_form_is_the_connections():
    forms = PerDialect(postgresql="on postgres", sqlite="on sqlite")
    expected = "on postgres" if connection.vendor == "postgresql" else "on sqlite"
    assert forms.here() == expected
    assert is_postgres() is (connection.vendor == "postgresql")
    assert is_sqlite() is (connection.vendor == "sqlite")


def test_a_given_connection_is_asked_not_the_default_one():
    forms = PerDialect(postgresql=1, sqlite=2)
    assert forms.here(SimpleNamespace(vendor="postgresql")) == 1
    assert forms.here(SimpleNamespace(vendor="sqlite")) == 2


def test_a_database_with_no_sql_here_is_refused():
    with pytest.raises(RuntimeError, match="PostgreSQL or SQLite, not on mysql"):
        PerDialect(postgresql=1, sqlite=2).here(SimpleNamespace(vendor="mysql"))
