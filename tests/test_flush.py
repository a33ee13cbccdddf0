"""The flush that ends every transactional test (``tests/conftest.py``) empties every table
and leaves the database as it found it: foreign keys and count triggers on again."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management.color import no_style
from django.db import IntegrityError, connection, transaction
from rest_framework.test import APIClient

from cards.models import Card, Deck, ReviewState, ReviewStateCount

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def enrolled(api) -> None:
    deck = Deck.objects.create(slug="attention", title="Attention")
    Card.objects.create(deck=deck, kind="recall", prompt="Why scale?", answer="Saturation.")
    assert api.post("/api/v1/decks/attention/enroll/").status_code == 200


def flush() -> None:
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    connection.ops.execute_sql_flush(connection.ops.sql_flush(no_style(), tables))


def test_the_flush_deletes_every_row_with_checks_and_triggers_off_for_itself_alone(api):
    statements = connection.ops.sql_flush(no_style(), ["cards_card"])
    assert statements[0].startswith("SET LOCAL session_replication_role")
    enrolled(api)
    assert ReviewStateCount.objects.get().n == 1

    flush()

    with connection.cursor() as cursor:
        for table in connection.introspection.django_table_names(only_existing=True):
            cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(table)}")
            assert cursor.fetchone()[0] == 0, table
        cursor.execute("SHOW session_replication_role")
        assert cursor.fetchone()[0] == "origin"
    # The count triggers fire again, and a dangling foreign key is refused again.
    user = get_user_model().objects.create_user("carol", password="s3cret-pass!")
    client = APIClient()
    client.force_authenticate(user)
    enrolled(client)
    assert ReviewStateCount.objects.get().n == ReviewState.objects.count() == 1
    with pytest.raises(IntegrityError, match="foreign key"), transaction.atomic():
        Card.objects.create(deck_id=999_999, kind="recall", prompt="Orphan")
