"""ORM queries compiled to SQL once per connection and run again with new values.

Building and compiling a queryset costs a millisecond or more of Python; for the
queries every request makes (the token, the due queue) that is several times what the
database takes to answer them. A ``CompiledQuery`` builds its queryset once, from the
same code that defines it, with stand-in values no row has; each compiled parameter
equal to a stand-in becomes a slot, filled on each call. Rows go through the
queryset's own converters, so they equal what the queryset returns (the tests of the
due queue and of authentication compare the two).

The fence: this is the one module of the project that reaches into Django's private
API (``Query.get_compiler``, ``SQLCompiler.as_sql``/``results_iter``/``select``/
``klass_info``/``annotation_col_map``, ``Query.selected`` and ``get_related_populators``;
``Query.sql_with_params`` is used by ``studyapp.common.subquery`` alone).
``tests/cards/test_compiled_fence.py`` checks each of them, so a Django upgrade that
changes one fails there, loudly, rather than in the due queue. And if compiling still
fails at run time, a query given its ``plain`` queryset logs the failure once and
serves the plain queryset's rows: slower, the same rows.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators  # type: ignore[attr-defined]
from django.db.models.sql.compiler import SQLCompiler

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Slot:
    name: str


@dataclass(frozen=True)
class _Plan:
    sql: str
    params: tuple  # each a constant or a _Slot
    names: tuple[str, ...]  # column names of a .values() queryset
    compiler: SQLCompiler


def _adapt(db, value):
    # Dates are the one kind of slot value a backend rewrites (SQLite binds text).
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return db.ops.adapt_datefield_value(value)
    return value


class CompiledQuery:
    """``build()`` compiled once per thread's connection, run with ``slots`` filled in.

    ``slots`` names each stand-in value that ``build`` puts in its queryset. With
    ``paged``, ``LIMIT %s`` is appended, and ``OFFSET %s`` past the first row: PostgreSQL
    keeps a prepared statement's generic plan only where its cost does not depend on
    an unknown offset, so a first page with ``OFFSET $n`` was planned again on every run
    (about half a millisecond of the due page). ``plain(**values)``, when given,
    is the same queryset for the slots' values: what is served, the failure logged
    once, if compiling fails (a Django that changed the internals used here).
    """

    def __init__(
        self,
        build: Callable[[], QuerySet],
        *,
        slots: dict[str, Any],
        paged: bool = False,
        plain: Callable[..., QuerySet] | None = None,
    ):
        self.build = build
        self.slots = slots
        self.paged = paged
        self.plain = plain
        self._local = threading.local()
        self._failed = False  # logged once per query object, then silent

    def _compiled(self) -> _Plan | None:
        """The plan, or None (logged once) when compiling fails and ``plain`` can serve."""
        if self._failed:
            return None
        try:
            return self.plan()
        except ImproperlyConfigured:
            raise  # a slot the query does not use: a mistake in the caller, not in Django
        except Exception:
            if self.plain is None:
                raise
            self._failed = True
            logger.exception(
                "Compiling a query failed; serving its plain queryset from now on (slower, "
                "same rows). Check tests/cards/test_compiled_fence.py against this Django."
            )
            return None

    def _plain(self, limit: int | None, offset: int, values: dict) -> QuerySet:
        assert self.plain is not None
        queryset = self.plain(**values)
        if self.paged:
            queryset = queryset[offset : None if limit is None else offset + limit]
        return queryset

    def plan(self) -> _Plan:
        plan = getattr(self._local, "plan", None)
        if plan is not None and plan.compiler.connection is connections[plan.compiler.using]:
            return plan
        queryset = self.build()
        query = queryset.query
        compiler = query.get_compiler(queryset.db)
        sql, params = compiler.as_sql()
        stand_ins = {_adapt(compiler.connection, v): _Slot(k) for k, v in self.slots.items()}
        slotted = tuple(stand_ins.get(p, p) if _hashable(p) else p for p in params)
        missing = set(self.slots) - {p.name for p in slotted if isinstance(p, _Slot)}
        if missing:
            raise ImproperlyConfigured(f"No parameter for {sorted(missing)} in: {sql}")
        if query.selected:
            names = tuple(query.selected)
        else:
            names = (*query.extra_select, *query.values_select, *query.annotation_select)
        plan = _Plan(sql=sql, params=slotted, names=names, compiler=compiler)
        self._local.plan = plan
        return plan

    def _fetch(self, plan: _Plan, values: dict, limit: int | None, offset: int) -> list[Any]:
        db = plan.compiler.connection
        params = [_adapt(db, values[p.name]) if isinstance(p, _Slot) else p for p in plan.params]
        sql = plan.sql
        if self.paged:
            sql += " LIMIT %s OFFSET %s" if offset else " LIMIT %s"
            params += [limit, offset] if offset else [limit]
        with db.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    def rows(self, *, limit: int | None = None, offset: int = 0, **values) -> list[Any]:
        """The rows as lists, converted as the queryset converts them."""
        plan = self._compiled()
        if plan is None:
            # A .values() queryset yields dicts, in its columns' order.
            return [list(row.values()) for row in self._plain(limit, offset, values)]
        fetched = self._fetch(plan, values, limit, offset)
        return list(plan.compiler.results_iter(results=[fetched]))

    def dicts(self, **kwargs) -> list[dict]:
        """The rows of a ``.values()`` queryset, as it returns them."""
        plan = self._compiled()
        if plan is None:
            limit, offset = kwargs.pop("limit", None), kwargs.pop("offset", 0)
            return list(self._plain(limit, offset, kwargs))
        names = plan.names
        return [dict(zip(names, row, strict=True)) for row in self.rows(**kwargs)]

    def instances(self, **values) -> list[Model]:
        """Model instances, ``select_related`` ones attached, as the queryset returns them."""
        plan = self._compiled()
        if plan is None:
            return list(self._plain(None, 0, values))
        compiler = plan.compiler
        db = compiler.using
        klass_info = compiler.klass_info
        assert klass_info is not None, "instances() needs a queryset of model instances"
        start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        init_list = [s[0].target.attname for s in compiler.select[start:end]]
        populators = get_related_populators(klass_info, compiler.select, db)
        objects = []
        for row in compiler.results_iter(results=[self._fetch(plan, values, None, 0)]):
            obj = klass_info["model"].from_db(db, init_list, row[start:end])
            for populator in populators:
                populator.populate(row, obj)
            for name, pos in compiler.annotation_col_map.items():
                setattr(obj, name, row[pos])
            objects.append(obj)
        return objects


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
