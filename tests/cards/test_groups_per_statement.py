"""The derived table of groups that the placement job and the reminder pass join holds
``GROUPS_PER_STATEMENT`` rows in one statement on either database (SQLite takes at most
500 ``SELECT``s in one ``UNION ALL``)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection

from cards.db.placement import GROUPS_PER_STATEMENT, groups_table

pytestmark = pytest.mark.django_db


def test_a_statement_takes_a_whole_slice_of_groups():
    rows = [
        (f"Zone/{n}", n % 24, (n * 7) % 24, dt.date(2026, 3, 2) + dt.timedelta(days=n % 3))
        for n in range(GROUPS_PER_STATEMENT)
    ]
    table, params = groups_table(rows, ("tz", "day_start", "hour", "study_day"))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*), COUNT(DISTINCT g.tz) FROM {table} g", params)
        assert cursor.fetchone() == (GROUPS_PER_STATEMENT, GROUPS_PER_STATEMENT)
