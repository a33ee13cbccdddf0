"""The production stack as it runs: nginx in front of gunicorn's sync workers, DEBUG off,
the static files collected with the production storage (tests/production_stack.py).

Slow clients: a hundred connections trickling request bodies one byte a second are
held by nginx, which passes a request on only once it has all of it, so /healthz and a
learner's review still answer at once. Without nginx the same hundred connections made
/healthz wait more than 30 s (``benchmarks/bench_proxy.py`` measures both).

Needs nginx (Debian's package; ``.ci/run`` installs it): skipped without it, except
under ``REQUIRE_SERVICES=1``, where its absence fails the run.
"""

from __future__ import annotations

import json
import os
import re
import socket

import pytest

from tests.production_stack import (
    Trickle,
    add_proxy,
    free_port,
    nginx_binary,
    request,
    running_stack,
    wait_for,
)

pytestmark = [pytest.mark.slow]

# Far from the failure guarded against (31 s without the proxy), far above the figures
# (benchmarks/bench_proxy.py: tens of milliseconds).
ANSWERED_WITHIN_SECONDS = 5.0
TRICKLING = 100


@pytest.fixture(scope="module")
def stack():
    if nginx_binary() is None:
        if os.environ.get("REQUIRE_SERVICES") == "1":
            pytest.fail("REQUIRE_SERVICES=1 but nginx is not installed")
        pytest.skip("nginx is not installed (apt-get install nginx)")
    with running_stack() as running:
        yield running


def _answer(connection: socket.socket, raw: bytes) -> tuple[bytes, bytes]:
    """Send ``raw`` and read the answer until the server closes (or resets, as nginx
    may after refusing a body it will not read): its head and body."""
    connection.sendall(raw)
    answer = b""
    try:
        while chunk := connection.recv(65536):
            answer += chunk
    except ConnectionResetError:
        pass
    head, _, body = answer.partition(b"\r\n\r\n")
    return head, body


def _gunicorn_saw(stack, method: str, path: str) -> int:
    return len(re.findall(rf'"{method} {re.escape(path)} HTTP', stack.log("gunicorn")))


def test_trickling_clients_hold_nginx_not_gunicorn(stack):
    reviews_before = _gunicorn_saw(stack, "POST", "/api/v1/reviews/")
    with Trickle(stack.port, TRICKLING) as trickle:
        wait_for(lambda: trickle.sent_rounds >= 2, what="the trickle to be under way")
        for _ in range(5):
            status, body, seconds = request(stack.port, "GET", "/healthz")
            assert (status, json.loads(body)) == (200, {"status": "ok"})
            assert seconds < ANSWERED_WITHIN_SECONDS
        status, seconds = stack.review_once()
        assert status == 201, stack.log("gunicorn")[-3000:]
        assert seconds < ANSWERED_WITHIN_SECONDS
        # Every trickling connection is still open and waiting: nginx took them all and
        # passed none of them on (gunicorn saw the one review above and nothing else).
        assert trickle.still_held() == TRICKLING
        wait_for(
            lambda: _gunicorn_saw(stack, "POST", "/api/v1/reviews/") > reviews_before,
            what="gunicorn's access log line of the review",
        )
        assert _gunicorn_saw(stack, "POST", "/api/v1/reviews/") == reviews_before + 1


def test_one_address_is_held_to_its_connections(stack):
    # STUDY_PROXY_CONN_PER_CLIENT (64 here) connections from one address; the next is a 429.
    with Trickle(stack.port, 64, sources=1) as trickle:
        wait_for(lambda: trickle.sent_rounds >= 1, what="the trickle to be under way")
        extra = socket.create_connection(
            ("127.0.0.1", stack.port), timeout=10, source_address=("127.0.0.2", 0)
        )
        with extra:
            head, body = _answer(
                extra, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            )
        assert head.startswith(b"HTTP/1.1 429"), head
        assert json.loads(body) == {"detail": "Too many connections from this address."}
        # Other addresses are served meanwhile.
        assert request(stack.port, "GET", "/healthz")[0] == 200


def test_a_body_over_the_service_limit_is_refused_by_nginx_with_the_same_json(stack):
    limit = int(os.environ.get("STUDY_MAX_BODY_BYTES", str(8 * 1024 * 1024)))
    connection = socket.create_connection(("127.0.0.1", stack.port), timeout=10)
    with connection:
        head, body = _answer(
            connection,
            f"POST /api/v1/attention/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {limit + 1}\r\n"
            "Connection: close\r\n\r\n".encode(),
        )
    assert head.startswith(b"HTTP/1.1 413"), head
    assert b"application/json" in head
    assert json.loads(body)["detail"] == (
        f"The request body is larger than the {limit} bytes accepted."
    )
    assert _gunicorn_saw(stack, "POST", "/api/v1/attention/") == 0
    # A body of exactly the limit passes nginx and the service's own guard, and reaches
    # the view (which asks who is sending it).
    status, body, _ = request(
        stack.port,
        "POST",
        "/api/v1/attention/",
        body=b"{}".rjust(limit),
        headers={"Content-Type": "application/json"},
    )
    assert status in (401, 403), body[:300]
    wait_for(
        lambda: _gunicorn_saw(stack, "POST", "/api/v1/attention/") == 1,
        what="gunicorn's access log line of the request at the limit",
    )


def test_the_service_worker_and_every_file_it_keeps_answer_through_the_proxy(stack):
    status, body, _ = request(stack.port, "GET", "/sw.js")
    assert status == 200, body[:500]
    kept = set(re.findall(r'"(/static/[^"]+)"', body.decode()))
    assert kept and all(re.search(r"\.[0-9a-f]{12}\.", name) for name in kept), kept
    manifest = json.loads((stack.root / "static" / "staticfiles.json").read_text())
    webmanifest = "/static/" + manifest["paths"]["manifest.webmanifest"]
    for name in sorted(kept | {webmanifest}):
        status, content, _ = request(stack.port, "GET", name)
        assert status == 200 and content, name
    assert " ERROR " not in stack.log("gunicorn")


def _secure(port: int, forwarded_proto: str) -> bool:
    # Django's SecurityMiddleware sends HSTS only to a request it takes for HTTPS.
    connection = socket.create_connection(("127.0.0.1", port), timeout=10)
    with connection:
        head, _ = _answer(
            connection,
            f"GET /login/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"X-Forwarded-Proto: {forwarded_proto}\r\nConnection: close\r\n\r\n".encode(),
        )
    assert head.startswith(b"HTTP/1.1 200"), head
    return b"strict-transport-security" in head.lower()


def test_a_clients_forwarded_scheme_counts_only_from_a_trusted_tls_proxy(stack):
    # This nginx is the edge: a client saying "https" over plain HTTP is not believed.
    assert not _secure(stack.port, "https")
    # Behind a TLS proxy that sets the header (STUDY_PROXY_TRUST_FORWARDED=on) it is.
    behind = add_proxy(stack, "nginx-behind-tls", free_port(), STUDY_PROXY_TRUST_FORWARDED="on")
    assert _secure(behind, "https")
    assert not _secure(behind, "http")
