"""What one request may cost before and after authentication: the body of the log-in
paths, the JSON guard's element count, the schema built once, the password hashings at
once, the playground's budget counted in cost, and the health answers' headers.

The same bounds through nginx and gunicorn: tests/test_production_costs.py; the figures:
``python -m benchmarks.bench_costs``.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import numpy as np
import pytest
from axes.models import AccessAttempt, AccessFailureLog
from django.test import Client

from exercises.playground import playground_cost
from studyapp import hashing, request_bounds, schema_view
from studyapp.common.budget import one_at_a_time
from studyapp.common.jsonscan import json_shape
from tests.production_stack import wait_for

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "/api/v1/auth/token/"
PASSWORD = "s3cret-pass!"


# --- The log-in paths' bodies ------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path", ["/api/v1/auth/token/", "/api/v1/auth/register/", "/api/v1/auth/password-reset/"]
)
def test_a_log_in_body_over_a_few_kib_is_a_413_and_counts_no_attempt(anon_api, settings, path):
    limit = settings.STUDY_AUTH_MAX_BODY_BYTES
    assert 1024 <= limit <= 16 * 1024
    body = json.dumps({"username": "ada", "password": "x" * limit}).encode()
    attempts = AccessAttempt.objects.count(), AccessFailureLog.objects.count()
    response = anon_api.post(path, body, content_type="application/json")
    assert response.status_code == 413, response.content
    assert response.json()["detail"] == (
        f"The request body is {len(body):,} bytes; at most {limit:,} are accepted."
    )
    assert (AccessAttempt.objects.count(), AccessFailureLog.objects.count()) == attempts


@pytest.mark.django_db
def test_a_log_in_at_the_limit_is_read_as_usual(anon_api, make_user, settings):
    make_user("ada", password=PASSWORD)
    body = json.dumps({"username": "ada", "password": PASSWORD}).encode()
    body = body[:-1] + b" " * (settings.STUDY_AUTH_MAX_BODY_BYTES - len(body)) + b"}"
    assert len(body) == settings.STUDY_AUTH_MAX_BODY_BYTES
    response = anon_api.post(TOKEN, body, content_type="application/json")
    assert response.status_code == 200, response.content


@pytest.mark.django_db
def test_the_web_log_in_form_has_the_same_bound(settings):
    response = Client().post(
        "/login/", {"username": "ada", "password": "x" * settings.STUDY_AUTH_MAX_BODY_BYTES}
    )
    assert response.status_code == 413
    assert response["Content-Type"].startswith("text/plain")


def test_nginx_bounds_the_same_paths_as_the_service():
    template = (ROOT / "deploy" / "nginx" / "default.conf.template").read_text()
    (pattern,) = re.findall(r"location ~ \^/\(([^)]*)\) \{", template)
    assert tuple("/" + p for p in pattern.split("|")) == request_bounds.AUTH_PATHS
    block = template.split(f"location ~ ^/({pattern}) {{", 1)[1].split("\n        }", 1)[0]
    assert "client_max_body_size ${STUDY_AUTH_MAX_BODY_BYTES};" in block


# --- The JSON guard's element count --------------------------------------------------------


def reference_elements(text: bytes) -> int:
    """One byte at a time: [ { , : outside strings."""
    count = 0
    in_string = escaped = False
    for byte in text:
        was_escaped, escaped = escaped, False
        if byte == ord("\\") and not was_escaped:
            escaped = True
        elif byte == ord('"') and not was_escaped:
            in_string = not in_string
        elif not in_string and byte in b"[{,:":
            count += 1
    return count


def test_the_scan_counts_elements_as_a_byte_by_byte_reference_does():
    rng = np.random.default_rng(44)
    alphabet = np.frombuffer(b'[]{},:""\\\\a1', dtype=np.uint8)
    for _ in range(500):
        text = rng.choice(alphabet, size=rng.integers(0, 80)).tobytes()
        assert json_shape(text).elements == reference_elements(text), text
    value = {"a": [1, [2, 3], {"b": "x,y:[z"}], "c": []}
    text = json.dumps(value).encode()
    assert json_shape(text) == (3, reference_elements(text))
    # UTF-16 code units read in place count the same.
    units = np.frombuffer(json.dumps(value).encode("utf-16-le"), dtype="<u2")
    assert json_shape(units) == json_shape(text)


@pytest.mark.django_db
def test_a_body_of_many_empty_arrays_is_refused_before_any_parser_reads_it(api, monkeypatch):
    parsed = []
    real_loads = json.loads
    monkeypatch.setattr(json, "loads", lambda *a, **k: parsed.append(1) or real_loads(*a, **k))
    body = b"[" + b",".join([b"[]"] * 100_000) + b"]"
    response = api.patch("/api/v1/me/", body, content_type="application/json")
    assert parsed == []
    assert response.status_code == 400
    assert response.json()["detail"] == (
        "JSON parse error: the body holds 200,000 values, keys and separators; at most "
        "20,000 are accepted here."
    )


@pytest.mark.django_db
def test_the_playground_takes_its_largest_body_and_no_more(api, settings):
    settings.STUDY_THROTTLE_RATES = {**settings.STUDY_THROTTLE_RATES, "playground_cost": None}
    rng = np.random.default_rng(0)
    largest = {n: rng.standard_normal((256, 256)).round(3).tolist() for n in ("X", "W_Q", "W_K")}
    largest["W_V"] = largest["W_K"]
    largest["mask"] = (np.triu(np.ones((256, 256)), 1) > 0).tolist()
    body = json.dumps(largest).encode()
    assert json_shape(body).elements <= settings.STUDY_PLAYGROUND_MAX_ELEMENTS
    response = api.post("/api/v1/attention/", body, content_type="application/json")
    assert response.status_code == 200, response.content[:300]
    hostile = b"[" + b",".join([b"[]"] * settings.STUDY_PLAYGROUND_MAX_ELEMENTS) + b"]"
    response = api.post("/api/v1/attention/", hostile, content_type="application/json")
    assert response.status_code == 400
    assert "values, keys and separators" in response.json()["detail"]


# --- The schema, once per process -------------------------------------------------------


@pytest.mark.django_db
def test_the_schema_is_built_once_per_process_whatever_the_query(anon_api, monkeypatch):
    schema_view.clear_schema()
    builds = []
    generator = schema_view.SchemaOnceView.generator_class
    real = generator.get_schema
    monkeypatch.setattr(
        generator, "get_schema", lambda self, **kw: builds.append(1) or real(self, **kw)
    )
    first = anon_api.get("/api/schema/")
    assert first.status_code == 200 and first["Content-Type"].startswith(
        "application/vnd.oai.openapi"
    )
    for query in ("", "?version=9", "?lang=de", "?x=1"):
        again = anon_api.get(f"/api/schema/{query}")
        assert again.status_code == 200 and again.content == first.content
    as_json = anon_api.get("/api/schema/?format=json")
    assert as_json["Content-Type"].startswith("application/vnd.oai.openapi+json")
    assert json.loads(as_json.content)["openapi"].startswith("3.")
    assert builds == [1]
    assert "/api/schema/" not in json.loads(as_json.content)["paths"]


# --- Password hashings at once -------------------------------------------------------------


def test_hashings_beyond_the_slot_and_its_waiting_places_are_refused_at_once():
    queue = hashing.HashingQueue(concurrency=1, waiting=1)
    release = threading.Event()
    started = threading.Semaphore(0)
    results: list[str] = []

    def slow(tag: str) -> str:
        started.release()
        release.wait(30)
        return tag

    threads = [
        threading.Thread(target=lambda tag=tag: results.append(queue.run(slow, tag)))
        for tag in ("first", "second")
    ]
    threads[0].start()
    assert started.acquire(timeout=30)  # the first one hashes
    threads[1].start()  # the second takes the waiting place
    wait_for(lambda: queue.taken() == 2, what="the second hashing to wait")
    with pytest.raises(hashing.HashingBusy):
        queue.run(slow, "third")
    release.set()
    for thread in threads:
        thread.join(30)
    assert sorted(results) == ["first", "second"]
    assert queue.taken() == 0


@pytest.mark.django_db
def test_a_log_in_that_finds_the_hashings_taken_is_a_503_and_counts_nothing(
    anon_api, make_user, settings, monkeypatch
):
    make_user("ada", password=PASSWORD)
    settings.PASSWORD_HASHERS = ["studyapp.hashing.QueuedPBKDF2PasswordHasher"]

    def busy(self, work, *args):
        raise hashing.HashingBusy

    monkeypatch.setattr(hashing.HashingQueue, "run", busy)
    attempts = AccessAttempt.objects.count(), AccessFailureLog.objects.count()
    response = anon_api.post(TOKEN, {"username": "ada", "password": "wrong"}, format="json")
    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    assert "log-ins" in response.json()["detail"]
    assert (AccessAttempt.objects.count(), AccessFailureLog.objects.count()) == attempts


@pytest.mark.django_db
def test_the_queued_hasher_writes_and_reads_djangos_own_hashes(settings):
    from django.contrib.auth.hashers import PBKDF2PasswordHasher, check_password, make_password

    settings.PASSWORD_HASHERS = ["studyapp.hashing.QueuedPBKDF2PasswordHasher"]
    plain = PBKDF2PasswordHasher()
    stored = plain.encode(PASSWORD, plain.salt(), iterations=1000)
    assert check_password(PASSWORD, stored) and not check_password("wrong", stored)
    made = make_password(PASSWORD)
    assert made.startswith("pbkdf2_sha256$") and plain.verify(PASSWORD, made)


# --- The playground's budget -----------------------------------------------------------------


def test_the_playground_cost_grows_with_the_head_and_its_answer():
    def head(n: int, d: int) -> dict:
        return {name: np.zeros((n, d)) for name in ("Q", "K", "V")}

    small, large = playground_cost(head(4, 4)), playground_cost(head(256, 256))
    assert small < 100 < 200_000 < large < 300_000
    wide = playground_cost(head(256, 1))  # the scores and weights alone are 2 x 65,536
    assert 90_000 < wide < large
    projected = {"X": np.zeros((256, 256)), **{w: np.zeros((256, 256)) for w in ("W_Q", "W_K")}}
    projected["W_V"] = np.zeros((256, 256))
    assert large < playground_cost(projected) < 600_000  # the largest request
    assert playground_cost({}, elements=400_000) == 100_000


@pytest.mark.django_db
def test_the_playground_budget_is_counted_in_cost_per_learner(api, other_api, limits):
    limits(playground_cost="300000/minute")
    head = {name: np.ones((256, 128)).tolist() for name in ("Q", "K", "V")}
    first = api.post("/api/v1/attention/", head, format="json")
    assert first.status_code == 200
    refused = api.post("/api/v1/attention/", head, format="json")
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) >= 1
    assert re.match(r"This request costs [\d,]+ units", refused.json()["detail"])
    # Small requests still fit what is left; the other learner has a budget of their own.
    tiny = {"Q": [[1, 0]], "K": [[1, 0]], "V": [[1, 2]]}
    assert api.post("/api/v1/attention/", tiny, format="json").status_code == 200
    assert other_api.post("/api/v1/attention/", head, format="json").status_code == 200


@pytest.mark.django_db
def test_a_second_playground_request_of_one_learner_at_once_is_a_409(api, other_api, learner):
    tiny = {"Q": [[1, 0]], "K": [[1, 0]], "V": [[1, 2]]}
    with one_at_a_time(f"playground:turn:{learner.pk}") as mine:
        assert mine  # as a computation of this learner's in flight holds it
        refused = api.post("/api/v1/attention/", tiny, format="json")
        assert refused.status_code == 409 and refused["Retry-After"] == "1"
        assert "Another playground computation" in refused.json()["detail"]
        assert other_api.post("/api/v1/attention/", tiny, format="json").status_code == 200
    assert api.post("/api/v1/attention/", tiny, format="json").status_code == 200


@pytest.mark.django_db
def test_past_the_services_playground_slots_is_a_503_at_once(api, settings):
    settings.STUDY_PLAYGROUND_SLOTS = 1
    tiny = {"Q": [[1, 0]], "K": [[1, 0]], "V": [[1, 2]]}
    with one_at_a_time("playground:slot:0") as held:
        assert held  # as another learner's computation holds it
        refused = api.post("/api/v1/attention/", tiny, format="json")
        assert refused.status_code == 503
        assert "busy" in refused.json()["detail"] and int(refused["Retry-After"]) >= 1
    assert api.post("/api/v1/attention/", tiny, format="json").status_code == 200


# --- Health answers and TRACE -----------------------------------------------------------------


def test_healthz_carries_nosniff_and_hsts_over_https_in_production(settings):
    settings.SECURE_CONTENT_TYPE_NOSNIFF = True
    settings.SECURE_HSTS_SECONDS = 3600
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    from django.test import Client as PlainClient

    plain = PlainClient().get("/healthz")
    assert plain.status_code == 200 and plain["X-Content-Type-Options"] == "nosniff"
    assert "Strict-Transport-Security" not in plain  # HSTS means nothing over plain HTTP
    secure = PlainClient().get("/healthz", HTTP_X_FORWARDED_PROTO="https")
    assert secure["Strict-Transport-Security"].startswith("max-age=3600")


def test_trace_is_a_405_that_says_what_is_allowed():
    response = Client().generic("TRACE", "/healthz")
    assert response.status_code == 405 and response["Allow"] == "GET"
