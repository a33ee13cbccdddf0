"""Model rows as raw ``INSERT`` text: for the statements the ORM cannot write.

The one-statement writes (a CTE that moves a state and logs the review, an insert of
variants feeding their bindings, ``ON CONFLICT DO NOTHING RETURNING``) insert model
rows in SQL of their own. Their columns and values come from here, from the model's
fields as ``Model.save`` would write them (``pre_save``: ``auto_now_add`` and the
like; ``get_db_prep_save``: the backend's value), so a field added to the model is
written by every one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Model

M = TypeVar("M", bound=Model)


@dataclass(frozen=True)
class RawInsert:
    """``INSERT INTO {table} ({columns}) VALUES {rows}`` with ``params``, for ``objs``.

    ``placeholders`` is one row's ``%s, ...`` without parentheses (for ``SELECT``).
    """

    table: str
    columns: str
    placeholders: str
    rows: str
    params: list[Any]


def raw_insert(model: type[Model], objs: Sequence[Model]) -> RawInsert:
    """The columns, ``VALUES`` rows and parameters to insert ``objs`` (every concrete
    field but the primary key, as ``save`` would write it)."""
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    ops = connection.ops
    placeholders = ", ".join(["%s"] * len(fields))
    return RawInsert(
        table=model._meta.db_table,
        columns=", ".join(ops.quote_name(f.column) for f in fields),
        placeholders=placeholders,
        rows=", ".join([f"({placeholders})"] * len(objs)),
        params=[
            f.get_db_prep_save(f.pre_save(obj, True), connection) for obj in objs for f in fields
        ],
    )


def inserted(obj: M, pk: Any) -> M:
    """Mark ``obj`` as the saved row ``pk`` that a raw insert wrote."""
    obj.pk = pk
    obj._state.adding = False
    return obj
