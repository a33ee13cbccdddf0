"""What one address can cost everyone else, through the production layout: nginx in front
of gunicorn's sync workers, DEBUG off (tests/production_stack.py), with gunicorn reached
over TCP as compose reaches it (``web:8000``) as well as over the stack's unix socket.

- connections that never send a head: /healthz from another address answers while 2,100
  of them are held, and nginx resets them after ``client_header_timeout``;
- the log-in paths take a few KiB: more is nginx's 413, and a refusal the service makes
  before reading a body (a 401, a 415) reaches the client as itself, never as a 502,
  because the service reads the rest of a refused body before it closes (sent straight
  to gunicorn on a socket too small to hold it, the body goes through with no reset);
- TRACE is a 405 that says what is allowed; /healthz says ``nosniff``, and HSTS behind
  a TLS proxy.

The figures (CPU per hostile body, other learners' p95 under each hog, /healthz under
the idle connections): ``python -m benchmarks.bench_costs``.
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Iterator

import pytest

from tests.production_stack import (
    _spawn,
    add_proxy,
    free_port,
    gunicorn_command,
    nginx_binary,
    request,
    running_stack,
    wait_for,
)

pytestmark = [pytest.mark.slow]

IDLE = 2_100
AUTH_LIMIT = 4096


@pytest.fixture(scope="module")
def stack():
    if nginx_binary() is None:
        if os.environ.get("REQUIRE_SERVICES") == "1":
            pytest.fail("REQUIRE_SERVICES=1 but nginx is not installed")
        pytest.skip("nginx is not installed (apt-get install nginx)")
    with running_stack(STUDY_AUTH_MAX_BODY_BYTES=str(AUTH_LIMIT)) as running:
        yield running


# The TCP upstream's receive buffer: fixed, where the kernel would grow it to hold a whole
# body that no one reads (up to tcp_rmem's maximum, 32 MiB here). Then a gunicorn that
# answered without reading the body would leave most of it unsent, and close on it.
UPSTREAM_RECEIVE_BUFFER = 64 * 1024


@pytest.fixture(scope="module")
def upstream_tcp(stack) -> Iterator[int]:
    """A gunicorn on a TCP port, as compose runs it (``web:8000``): its port."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, UPSTREAM_RECEIVE_BUFFER)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.set_inheritable(True)
    fd = listener.fileno()
    with listener:
        _spawn(stack, "gunicorn-tcp", gunicorn_command(f"fd://{fd}"), pass_fds=(fd,))
        yield listener.getsockname()[1]


@pytest.fixture(scope="module")
def over_tcp(stack, upstream_tcp) -> int:
    """An nginx in front of that gunicorn, as in compose: its port."""
    return add_proxy(
        stack, "nginx-tcp", free_port(), STUDY_PROXY_UPSTREAM=f"127.0.0.1:{upstream_tcp}"
    )


def _raw(port: int, head: bytes, body: bytes = b"") -> tuple[bytes, bytes]:
    """Send a request on a fresh connection and read until the server closes: the answer's
    head and body (a reset after the answer is the server's way to close, too)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        answer = b""
        try:
            connection.sendall(head + body)
            while chunk := connection.recv(65536):
                answer += chunk
        except (ConnectionResetError, BrokenPipeError):
            pass
    status_and_headers, _, content = answer.partition(b"\r\n\r\n")
    return status_and_headers, content


def _post_head(path: str, length: int, content_type: str = "application/json") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {length}\r\nConnection: close\r\n\r\n"
    ).encode()


def _gunicorn_saw(stack, path: str) -> int:
    logs = stack.log("gunicorn") + stack.log("gunicorn-tcp")
    return len(re.findall(rf'"POST {re.escape(path)} HTTP', logs))


def _held(connections: list[socket.socket]) -> int:
    """Connections the server neither answered nor closed."""
    held = 0
    for connection in connections:
        connection.setblocking(False)
        try:
            connection.recv(1, socket.MSG_PEEK)
        except BlockingIOError:
            held += 1
        except OSError:
            pass
    return held


def test_healthz_answers_while_one_address_holds_2100_connections_without_a_head(stack):
    idle = []
    try:
        for _ in range(IDLE):
            idle.append(
                socket.create_connection(
                    ("127.0.0.1", stack.port), timeout=10, source_address=("127.0.0.2", 0)
                )
            )
        status, body, _ = request(stack.port, "GET", "/healthz", timeout=10)
        assert (status, json.loads(body)) == (200, {"status": "ok"})
        # Every idle connection was still open when /healthz answered: nginx had room.
        assert _held(idle) == IDLE
        # None of them sends a head: each is reset after client_header_timeout.
        wait_for(lambda: _held(idle) == 0, what="nginx to drop the idle connections", timeout=60)
        assert "worker_connections are not enough" not in stack.log("nginx")
    finally:
        for connection in idle:
            connection.close()


@pytest.mark.parametrize("path", ["/api/v1/auth/token/", "/login/", "/api/v1/auth/register/"])
def test_a_log_in_body_over_its_bound_is_refused_by_nginx(stack, path):
    seen = _gunicorn_saw(stack, path)
    head, body = _raw(stack.port, _post_head(path, AUTH_LIMIT + 1), b"x" * (AUTH_LIMIT + 1))
    assert head.startswith(b"HTTP/1.1 413"), head
    assert json.loads(body)["detail"] == (
        f"The request body is larger than the {AUTH_LIMIT} bytes accepted on this path."
    )
    assert _gunicorn_saw(stack, path) == seen


def test_a_log_in_body_at_its_bound_reaches_the_service(stack):
    fields = json.dumps({"username": "demo", "password": "not-the-password"}).encode()
    body = fields[:-1] + b" " * (AUTH_LIMIT - len(fields)) + b"}"
    status, answer, _ = request(
        stack.port,
        "POST",
        "/api/v1/auth/token/",
        body=body,
        headers={"Content-Type": "application/json"},
    )
    assert status == 400, answer[:300]  # a wrong password, answered by the service


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        ("text/plain", 401),  # who is asking, before the body is read
        ("application/json; charset=punycode", 415),  # refused before a byte is decoded
    ],
)
def test_a_refusal_of_an_unread_body_arrives_as_itself_never_a_502(over_tcp, content_type, status):
    body = b'{"Q": [' + b"1," * (3 * 1024 * 1024) + b"1]}"
    for _ in range(3):
        head, answer = _raw(
            over_tcp, _post_head("/api/v1/attention/", len(body), content_type), body
        )
        assert head.startswith(f"HTTP/1.1 {status}".encode()), head + answer[:300]


@pytest.mark.parametrize(
    ("content_type", "status"),
    [("text/plain", 401), ("application/json; charset=punycode", 415)],
)
def test_the_service_reads_a_body_it_refuses_before_it_closes(
    over_tcp, upstream_tcp, content_type, status
):
    """What keeps nginx from a 502: a gunicorn that answered and closed with the body unread
    would reset the connection while most of the body is still being sent (a proxy then
    sees the reset, often before the answer). Sent straight to gunicorn, the whole body
    goes through and the answer comes after it, on a connection closed cleanly."""
    body = b'{"Q": [' + b"1," * (3 * 1024 * 1024) + b"1]}"
    with socket.create_connection(("127.0.0.1", upstream_tcp), timeout=30) as connection:
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 * 1024)
        connection.sendall(_post_head("/api/v1/attention/", len(body), content_type) + body)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    assert answer.startswith(f"HTTP/1.1 {status}".encode()), answer[:300]


def test_a_hostile_body_is_refused_cheaply_on_every_path(over_tcp):
    empties = b"[" + b",".join([b"[]"] * (2 * 1024 * 1024)) + b"]"  # 6 MiB of [],
    head, _ = _raw(over_tcp, _post_head("/api/v1/auth/token/", len(empties)), empties)
    assert head.startswith(b"HTTP/1.1 413"), head
    head, answer = _raw(over_tcp, _post_head("/api/v1/reviews/", len(empties)), empties)
    assert head.startswith(b"HTTP/1.1 400"), head
    assert "values, keys and separators" in json.loads(answer)["detail"]


def test_trace_is_a_405_with_allow(stack):
    head, _ = _raw(stack.port, b"TRACE / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 405"), head
    allow = re.search(rb"\r\nAllow: ([^\r]+)", head)
    assert allow and b"GET" in allow.group(1) and b"TRACE" not in allow.group(1), head


def test_healthz_says_nosniff_and_hsts_behind_a_tls_proxy(stack):
    head, _ = _raw(
        stack.port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    assert head.startswith(b"HTTP/1.1 200") and b"X-Content-Type-Options: nosniff" in head, head
    assert b"Strict-Transport-Security" not in head  # plain HTTP at the edge
    behind = add_proxy(stack, "nginx-behind-tls", free_port(), STUDY_PROXY_TRUST_FORWARDED="on")
    head, _ = _raw(
        behind,
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-Proto: https\r\n"
        b"Connection: close\r\n\r\n",
    )
    assert b"X-Content-Type-Options: nosniff" in head, head
    assert b"Strict-Transport-Security: max-age=" in head, head


def test_the_schema_is_served_as_built_once(stack):
    first = request(stack.port, "GET", "/api/schema/")
    again = request(stack.port, "GET", "/api/schema/?version=2&lang=fr")
    assert first[0] == again[0] == 200 and first[1] == again[1]
