"""The fence around Django's private API: every internal ``cards.db.compiled`` uses.

A Django upgrade that renames, re-signs or reshapes one of them fails here, by name,
instead of slowing or breaking the due queue and token authentication. When one
fails: read the new Django's ``django/db/models/sql/compiler.py`` and ``query.py``,
adapt ``cards/db/compiled.py``, and update this file. Until then a query given its
``plain`` queryset serves it (the last tests here).
"""

from __future__ import annotations

import datetime as dt
import inspect
import logging
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections
from django.db.models import Model
from django.db.models.query import get_related_populators  # type: ignore[attr-defined]
from django.db.models.sql.compiler import SQLCompiler
from django.db.models.sql.query import Query
from rest_framework.authtoken.models import Token

from cards.db.compiled import CompiledQuery, _adapt
from studyapp.common.subquery import subquery_sql

pytestmark = pytest.mark.django_db

STAND_IN_PK = -5
STAND_IN_DAY = dt.date(1, 2, 3)


def _parameters(function) -> list[str]:
    return list(inspect.signature(function).parameters)


def test_the_compiler_methods_keep_their_names_and_signatures():
    assert _parameters(Query.get_compiler)[:2] == ["self", "using"]
    assert _parameters(SQLCompiler.as_sql)[0] == "self"
    assert "results" in _parameters(SQLCompiler.results_iter)
    assert _parameters(get_related_populators) == ["klass_info", "select", "db"]
    assert _parameters(Model.from_db) == ["db", "field_names", "values"]


def test_a_values_query_compiles_to_sql_and_flat_params_holding_the_stand_ins():
    users = get_user_model().objects
    queryset = users.filter(pk=STAND_IN_PK, last_login__date=STAND_IN_DAY).values("username")
    compiler = queryset.query.get_compiler(queryset.db)
    sql, params = compiler.as_sql()
    assert isinstance(sql, str) and sql.count("%s") == len(params)
    # Each stand-in is one parameter, as the backend binds it: the slots are found by value.
    assert STAND_IN_PK in params
    assert _adapt(compiler.connection, STAND_IN_DAY) in params
    # plan() keys its per-thread cache on these two.
    assert compiler.using == queryset.db and compiler.connection is connections[compiler.using]
    # The column names of a .values() queryset.
    assert tuple(queryset.query.selected) == ("username",)
    assert isinstance(queryset.query.extra_select, dict)
    assert isinstance(queryset.query.annotation_select, dict)


def test_results_iter_converts_fetched_rows_as_the_queryset_does(learner):
    queryset = get_user_model().objects.filter(pk=learner.pk).values("date_joined")
    compiler = queryset.query.get_compiler(queryset.db)
    sql, params = compiler.as_sql()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    rows = list(compiler.results_iter(results=[fetched]))
    assert [row[0] for row in rows] == [learner.date_joined]


def test_select_related_leaves_what_instances_reads_on_the_compiler(learner):
    queryset = Token.objects.select_related("user").filter(key="stand-in")
    compiler = queryset.query.get_compiler(queryset.db)
    compiler.as_sql()
    info = compiler.klass_info
    assert info["model"] is Token
    assert list(info["select_fields"]) == sorted(info["select_fields"])
    start, end = info["select_fields"][0], info["select_fields"][-1] + 1
    assert all(hasattr(s[0].target, "attname") for s in compiler.select[start:end])
    assert isinstance(compiler.annotation_col_map, dict)
    populators = get_related_populators(info, compiler.select, queryset.db)
    assert len(populators) == 1 and hasattr(populators[0], "populate")


def test_compiled_instances_equal_the_orm(learner):
    key = Token.objects.create(user=learner).key
    query = CompiledQuery(
        lambda: Token.objects.select_related("user").filter(key="stand-in"),
        slots={"key": "stand-in"},
    )
    (token,) = query.instances(key=key)
    assert token == Token.objects.get(key=key)
    assert token.user == learner and "user" in token._state.fields_cache


# --- The fallback ---------------------------------------------------------------------


def _broken_compiler(monkeypatch):
    def as_sql(self, *args, **kwargs):
        raise AttributeError("a Django that changed its compiler")

    monkeypatch.setattr(SQLCompiler, "as_sql", as_sql)


def test_a_failed_compile_serves_the_plain_queryset_and_logs_once(make_user, monkeypatch, caplog):
    users = [make_user(f"f{i}") for i in range(4)]
    model = get_user_model()
    page = CompiledQuery(
        lambda: model.objects.filter(pk__gt=STAND_IN_PK).order_by("username").values("username"),
        slots={"pk": STAND_IN_PK},
        paged=True,
        plain=lambda pk: model.objects.filter(pk__gt=pk).order_by("username").values("username"),
    )
    expected = page.dicts(pk=users[0].pk, limit=2, offset=1)
    assert expected == [{"username": "f2"}, {"username": "f3"}]
    page = CompiledQuery(page.build, slots=page.slots, paged=True, plain=page.plain)
    # Compiling fails, not the ORM: the plain queryset still runs.
    monkeypatch.setattr(page, "plan", lambda: _raise(AttributeError("changed")))
    with caplog.at_level(logging.ERROR, logger="cards.db.compiled"):
        assert page.dicts(pk=users[0].pk, limit=2, offset=1) == expected
        assert page.rows(pk=users[0].pk, limit=1, offset=0) == [["f1"]]
    assert len([r for r in caplog.records if r.name == "cards.db.compiled"]) == 1


def test_a_failed_compile_serves_plain_instances(learner, monkeypatch):
    key = Token.objects.create(user=learner).key
    query = CompiledQuery(
        lambda: Token.objects.select_related("user").filter(key="stand-in"),
        slots={"key": "stand-in"},
        plain=lambda key: Token.objects.select_related("user").filter(key=key),
    )
    monkeypatch.setattr(query, "plan", lambda: _raise(AttributeError("changed")))
    assert query.instances(key=key) == [Token.objects.get(key=key)]


def test_without_a_plain_queryset_a_failed_compile_raises(monkeypatch):
    _broken_compiler(monkeypatch)
    query = CompiledQuery(
        lambda: get_user_model().objects.filter(pk=STAND_IN_PK).values("username"),
        slots={"pk": STAND_IN_PK},
    )
    with pytest.raises(AttributeError, match="changed its compiler"):
        query.dicts(pk=1)


def _raise(error: Exception):
    raise error


def test_a_queryset_becomes_a_subquery_whose_placeholders_match_its_params():
    assert _parameters(Query.sql_with_params) == ["self"]
    users = get_user_model().objects.filter(pk__gt=STAND_IN_PK, username="x").values("pk")
    sql, params = subquery_sql(users)
    assert sql.lstrip().upper().startswith("SELECT")
    assert sql.count("%s") == len(params) == 2
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM ({sql}) picked", params)
        assert cursor.fetchone() == (0,)


def test_no_module_outside_the_fence_calls_the_private_query_api():
    root = Path(__file__).resolve().parents[2]
    private = ("get_compiler", "sql_with_params", "get_related_populators", "results_iter")
    callers = sorted(
        str(path.relative_to(root))
        for package in ("cards", "exercises", "labs", "studyapp")
        for path in (root / package).rglob("*.py")
        if any(name in path.read_text(encoding="utf-8") for name in private)
    )
    assert callers == ["cards/db/compiled.py", "studyapp/common/subquery.py"]
