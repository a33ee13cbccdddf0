"""The OpenAPI schema says what the server refuses: a body that refuses unknown fields
declares ``additionalProperties: false`` and answers one with the 400 naming it; a body
that declares nothing lets one through; a string that refuses NUL carries the pattern
that excludes it and answers a NUL with the 400 naming the field."""

from __future__ import annotations

import datetime as dt
import functools
import re

import pytest
from drf_spectacular.generators import SchemaGenerator

from cards.models import Card, Deck, ReviewState
from cards.services import enroll
from studyapp.schema import NUL_PATTERN

UNKNOWN = "zz_unknown"


@functools.cache
def schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def request_body(method: str, path: str) -> dict:
    """The JSON schema of an operation's request body, its reference resolved."""
    body = schema()["paths"][path][method]["requestBody"]["content"]["application/json"]
    ref = body["schema"]["$ref"]
    return schema()["components"]["schemas"][ref.rsplit("/", 1)[1]]


def strict_operations() -> set[tuple[str, str]]:
    return {
        (method, path)
        for path, item in schema()["paths"].items()
        for method, operation in item.items()
        if isinstance(operation, dict)
        and "requestBody" in operation
        and request_body(method, path).get("additionalProperties") is False
    }


@pytest.fixture
def world(db, learner, staff):
    deck = Deck.objects.create(slug="attention", title="Attention")
    card = Card.objects.create(deck=deck, kind="recall", prompt="P", answer="A")
    enroll(learner=learner, deck=deck, at=dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC))
    ReviewState.objects.update(due_on=dt.date(2020, 1, 2))
    return card


# (method, schema path, URL, client fixture, a body the server takes or refuses for
# reasons of its own): the bodies of every operation the server checks strictly, and
# of the study API's most used writes, which let an unknown field through.
def bodies(card: Card) -> list[tuple[str, str, str, str, dict]]:
    card_url = f"/api/v1/cards/{card.pk}/"
    full_card = {"deck": "attention", "kind": "recall", "prompt": "Q", "answer": "A"}
    return [
        ("post", "/api/v1/labs/{slug}/submissions/", "/api/v1/labs/softmax/submissions/",
         "api", {"code": "x = 1"}),
        ("post", "/api/v1/exercises/", "/api/v1/exercises/", "api",
         {"kind": "attention", "params": {}}),
        ("post", "/api/v1/attention/", "/api/v1/attention/", "api",
         {"Q": [[1.0]], "K": [[1.0]], "V": [[1.0]]}),
        ("post", "/api/v1/attention/predictions/", "/api/v1/attention/predictions/", "api",
         {"preset": "bag", "answer": "bag"}),
        ("post", "/api/v1/reviews/", "/api/v1/reviews/", "api",
         {"card": card.pk, "result": "pass"}),
        ("patch", "/api/v1/cards/{id}/", card_url, "staff_api", {"prompt": "Q2"}),
        ("put", "/api/v1/cards/{id}/", card_url, "staff_api", full_card),
        ("post", "/api/v1/reports/", "/api/v1/reports/", "api", {"card": card.pk, "text": "t"}),
        ("patch", "/api/v1/me/", "/api/v1/me/", "api", {"timezone": "Europe/Berlin"}),
        ("post", "/api/v1/decks/{slug}/learn-more/", "/api/v1/decks/attention/learn-more/",
         "api", {"count": 1}),
    ]  # fmt: skip


def test_the_strict_bodies_are_the_ones_probed(world):
    probed = {(method, path) for method, path, *_ in bodies(world)}
    assert strict_operations() <= probed
    assert {
        ("post", "/api/v1/labs/{slug}/submissions/"),
        ("post", "/api/v1/exercises/"),
        ("post", "/api/v1/attention/"),
    } <= strict_operations()


@pytest.mark.parametrize("index", range(10))
def test_an_unknown_field_gets_the_answer_the_schema_predicts(request, world, index):
    method, path, url, client_name, body = bodies(world)[index]
    client = request.getfixturevalue(client_name)
    response = getattr(client, method)(url, {**body, UNKNOWN: 1}, format="json")
    if (method, path) in strict_operations():
        assert response.status_code == 400, response.content
        assert UNKNOWN in response.json(), response.content
    else:
        # Let through and ignored: whatever the answer, the field is not named in it.
        assert UNKNOWN not in response.content.decode(), response.content
        assert response.status_code < 500


# (method, schema path, URL, client fixture, body, the field a NUL is put in)
def nul_cases(card: Card) -> list[tuple[str, str, str, str, dict, str]]:
    card_url = f"/api/v1/cards/{card.pk}/"
    return [
        ("post", "/api/v1/labs/{slug}/submissions/", "/api/v1/labs/softmax/submissions/",
         "api", {"code": "x = 1"}, "code"),
        ("post", "/api/v1/reviews/", "/api/v1/reviews/", "api",
         {"card": card.pk, "result": "pass", "answer_text": "a"}, "answer_text"),
        ("patch", "/api/v1/cards/{id}/", card_url, "staff_api", {"prompt": "Q"}, "prompt"),
        ("patch", "/api/v1/cards/{id}/", card_url, "staff_api", {"answer": "A"}, "answer"),
        ("patch", "/api/v1/cards/{id}/", card_url, "staff_api", {"deck": "attention"}, "deck"),
        ("post", "/api/v1/reports/", "/api/v1/reports/", "api",
         {"card": card.pk, "text": "t"}, "text"),
        ("post", "/api/v1/auth/token/", "/api/v1/auth/token/", "anon_api",
         {"username": "alice", "password": "p"}, "username"),
        ("post", "/api/v1/auth/register/", "/api/v1/auth/register/", "anon_api",
         {"username": "newcomer", "password": "a long pass phrase"}, "password"),
        ("patch", "/api/v1/me/", "/api/v1/me/", "api", {"password": "p"}, "password"),
    ]  # fmt: skip


@pytest.mark.parametrize("index", range(9))
def test_a_nul_gets_the_400_the_schema_predicts(request, world, index):
    method, path, url, client_name, body, field = nul_cases(world)[index]
    declared = request_body(method, path)["properties"][field]
    assert declared["pattern"] == NUL_PATTERN
    assert not re.search(NUL_PATTERN, "a\x00b") and re.search(NUL_PATTERN, "a b\n")
    client = request.getfixturevalue(client_name)
    response = getattr(client, method)(url, {**body, field: "a\x00b"}, format="json")
    assert response.status_code == 400, response.content
    answer = response.json()
    # A lookup reaching PostgreSQL is refused by the error handler, which names no field.
    assert field in answer or "NUL" in answer.get("detail", ""), answer
    assert Card.objects.get(pk=world.pk).prompt == "P"


def test_every_plain_request_string_that_refuses_nul_says_so():
    """Every request string without a format, pattern or enum of its own is one of the
    fields that refuse NUL, and carries the pattern."""
    for name, component in schema()["components"]["schemas"].items():
        if not name.endswith("Request"):
            continue
        for field, declared in component.get("properties", {}).items():
            if declared.get("type") == "string" and "format" not in declared:
                assert "pattern" in declared or "enum" in declared, f"{name}.{field}"
