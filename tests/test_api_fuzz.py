"""Schemathesis over the whole OpenAPI schema, in-process, as a learner and as staff.

Every default check runs (no 5xx, responses and statuses as documented, bad input
rejected, auth enforced), seeded (the same examples on every run), with
``MAX_EXAMPLES`` per operation as a learner over every operation a learner may use, and
as staff over the operations whose answer depends on the role (cards and decks: staff
write cards and see inactive ones). The learner's run is split in two halves of the
schema, so two pytest workers share it.
"""

import datetime as dt

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from rest_framework.authtoken.models import Token
from schemathesis.specs.openapi.checks import positive_data_acceptance

from cards.models import Card, Deck, ReviewState
from cards.services import enroll

MAX_EXAMPLES = 25
# The operations where staff may do or see more than a learner.
STAFF_PATHS = r"^/api/v1/(cards|decks)/"
# The study core's operations; the other half is exercises, predictions and labs.
CORE_PATHS = r"^/api/v1/(auth|me|decks|cards|reviews|stats|reports)/"
# Writing cards is staff's alone: a learner's request is refused before its body is read
# (tests/cards/test_api_decks_cards.py), so the staff run alone fuzzes those bodies.
STAFF_WRITES = {
    "method": ["POST", "PUT", "PATCH", "DELETE"],
    "path_regex": r"^/api/v1/cards/(\{id\}/)?$",
}

# Schemathesis's coverage phase (boundary and negative cases drawn from the schema) runs
# on every operation but the playground's: its boundary is a body of eight 256 x 256
# matrices, whose drawing took 29 of the 40 s this file spent on the exercises half.
# Its fuzzing still runs, and tests/exercises/test_playground.py sends that boundary
# (256 rows and columns answered, 257 refused, naming the field).
FUZZ_CONFIG = schemathesis.config.SchemathesisConfig.from_dict(
    {
        "operations": [
            {"include-name": "POST /api/v1/attention/", "phases": {"coverage": {"enabled": False}}}
        ]
    }
)

# Requests that are valid against the schema and still rightly refused with a 400,
# because the answer depends on stored state or on rules JSON Schema cannot state:
# a taken username or a password Django's validators refuse; credentials that match
# no account; a deck slug that names no deck or a card key already used in it; a
# card that turns out to be an exercise card; answers that must match
# the stored exercise's parts and shapes; playground matrices whose shapes must agree
# and whose mask must leave a key open in every row; exercise parameters fixed at sizes
# where two answers coincide, so no variant can tell a right answer from a wrong one.
STATEFUL_400 = {
    ("POST", "/api/v1/auth/register/"),
    ("POST", "/api/v1/auth/token/"),
    ("POST", "/api/v1/cards/"),
    ("PUT", "/api/v1/cards/{id}/"),
    ("PATCH", "/api/v1/cards/{id}/"),
    ("POST", "/api/v1/reviews/"),
    ("POST", "/api/v1/exercises/{exercise_id}/submit/"),
    ("POST", "/api/v1/attention/"),
    # The current password (to change the e-mail, the password, or delete the
    # account) and a reset link's uid and token must match the stored account.
    ("PATCH", "/api/v1/me/"),
    ("DELETE", "/api/v1/me/"),
    ("POST", "/api/v1/me/password/"),
    ("POST", "/api/v1/auth/password-reset/confirm/"),
    # A fresh confirmation link needs an address on the account.
    ("POST", "/api/v1/me/email-confirmation/"),
    # Study controls: a report names an existing card (and an exercise of yours); a
    # pause starts today or later.
    ("POST", "/api/v1/reports/"),
    ("POST", "/api/v1/me/pause/"),
    ("POST", "/api/v1/exercises/"),
}
# 429: a username that earlier examples locked out by failing to log in.
ACCEPTED = {*range(200, 300), 401, 403, 404, 409, 422, 429}


@schemathesis.check
def positive_data_accepted_unless_state_says_no(ctx, response, case):
    """ST202 with one difference: the operations above may also answer 400."""
    if case.meta is None or not case.meta.generation.mode.is_positive:
        return None
    key = (case.operation.method.upper(), case.operation.path)
    allowed = ACCEPTED | ({400} if key in STATEFUL_400 else set())
    if response.status_code not in allowed:
        raise AssertionError(
            f"Schema-valid request rejected with {response.status_code}: {response.text[:300]}"
        )
    return None


def validate(case, token):
    key = (case.operation.method.upper(), case.operation.path)
    if key in STATEFUL_400:
        case.call_and_validate(
            headers={"Authorization": f"Token {token}"},
            excluded_checks=[positive_data_acceptance],
            additional_checks=[positive_data_accepted_unless_state_says_no],
        )
    else:
        case.call_and_validate(headers={"Authorization": f"Token {token}"})


@pytest.fixture
def api_schema(db):
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    from studyapp.wsgi import application

    # As Django's test client does: keep the test's connection (and its
    # transaction) open across the in-process WSGI calls.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield schemathesis.openapi.from_wsgi("/api/schema/", application, config=FUZZ_CONFIG)
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def seeded(db, make_user):
    """A deck with every card kind, a learner with due cards, and a staff user."""
    deck = Deck.objects.create(slug="attention", title="Attention")
    for i, kind in enumerate(["recall", "interview"]):
        Card.objects.create(deck=deck, kind=kind, prompt=f"Prompt {i}", answer="Answer", position=i)
    Card.objects.create(
        deck=deck,
        kind="exercise",
        prompt="Compute the weights",
        exercise={"kind": "attention", "params": {}},
        position=9,
    )
    learner = make_user("fuzz-learner")
    staff = make_user("fuzz-staff", staff=True)
    past = dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC)
    for user in (learner, staff):
        enroll(learner=user, deck=deck, at=past)
    ReviewState.objects.update(due_on=dt.date(2026, 1, 2))
    return {
        "learner": Token.objects.create(user=learner).key,
        "staff": Token.objects.create(user=staff).key,
    }


schema = schemathesis.pytest.from_fixture("api_schema")


FUZZ_SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)


@pytest.mark.slow
@schema.include(path_regex=CORE_PATHS).exclude(**STAFF_WRITES).parametrize()
@FUZZ_SETTINGS
def test_the_study_core_conforms_to_its_schema_as_a_learner(case, seeded):
    validate(case, seeded["learner"])


@pytest.mark.slow
@schema.exclude(path_regex=CORE_PATHS).parametrize()
@FUZZ_SETTINGS
def test_exercises_and_labs_conform_to_their_schema_as_a_learner(case, seeded):
    validate(case, seeded["learner"])


@pytest.mark.slow
@schema.include(path_regex=STAFF_PATHS).parametrize()
@FUZZ_SETTINGS
def test_cards_and_decks_conform_to_their_schema_as_staff(case, seeded):
    validate(case, seeded["staff"])


def test_schema_documents_every_operation_and_its_errors(client):
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    for path in [
        "/api/v1/auth/register/",
        "/api/v1/auth/token/",
        "/api/v1/me/",
        "/api/v1/decks/",
        "/api/v1/decks/{slug}/",
        "/api/v1/decks/{slug}/enroll/",
        "/api/v1/cards/",
        "/api/v1/cards/{id}/",
        "/api/v1/reviews/",
        "/api/v1/reviews/due/",
        "/api/v1/stats/",
    ]:
        assert path in paths, path
    submit = paths["/api/v1/reviews/"]["post"]["responses"]
    assert {"201", "400", "401", "404", "409", "422"} <= set(submit)
    assert "401" in paths["/api/v1/stats/"]["get"]["responses"]
    assert client.get("/api/docs/").status_code == 200
    # JSON only: no form encodings advertised.
    body_types = {
        media
        for item in paths.values()
        for op in item.values()
        if isinstance(op, dict) and "requestBody" in op
        for media in op["requestBody"]["content"]
    }
    assert body_types == {"application/json"}
