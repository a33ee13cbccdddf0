"""What one address can cost everyone else: CPU per hostile request, other learners'
latency under each hog, /healthz under connections that never send a head.

    .venv/bin/python -m benchmarks.bench_costs [--seconds 20] [--parts stack,cpu]

``stack``: the production stack of tests/production_stack.py (nginx, gunicorn's 2 sync
workers, DEBUG off; PostgreSQL when DATABASE_URL names it). A learner (``demo``) asks
for the due page (GET reviews/due/), one request at a time, for ``--seconds`` in
each phase, ten a second at most, and the phase's p50 and p95 are printed beside the quiet phase's:

- quiet: nothing else;
- log-ins: 20 addresses (127.0.0.2 to .21) each at its log-in limit (30 a minute: a
  POST auth/token/ every 2 s, an unknown username each time, so each costs a hashing);
- playground: three learners (three addresses), each at its limit: the largest
  playground request (X and the W's, 256 x 256) once a second (the playground scope's
  60 a minute), whatever the last one answered;
- idle: one address (127.0.0.2) holding 2,100 connections that never send a head
  (opened again as nginx resets them), and /healthz from another address.

``cpu``: ``benchmarks.cost_bodies``, in process: CPU per hostile body, bounded and with
the bounds lifted.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import secrets
import socket
import threading
import time

import numpy as np

from tests.production_stack import request, running_stack

LOGIN_ADDRESSES = 20
LOGIN_EVERY_SECONDS = 2.0  # 30 a minute, the login scope's default
PLAYGROUND_HOGS = 3
PLAYGROUND_EVERY_SECONDS = 1.0  # 60 a minute, the playground scope's default
IDLE = 2_100
PROBE_EVERY_SECONDS = 0.1  # 600 a minute: under the user scope's 1,200


def _figures(seconds: list[float]) -> tuple[float, float]:
    ms = np.array(seconds) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def _probe(stack, seconds: float, path: str = "/api/v1/reviews/due/") -> list[float]:
    auth = {"Authorization": f"Token {stack.tokens['demo']}"}
    took: list[float] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status, body, elapsed = request(stack.port, "GET", path, headers=auth, timeout=60)
        assert status == 200, (status, body[:300])
        took.append(elapsed)
        time.sleep(max(0.0, PROBE_EVERY_SECONDS - elapsed))  # a learner's pace, under "user"
    return took


class Hog(threading.Thread):
    """Sends ``send()`` until stopped, counting the answers by status."""

    def __init__(self, send, every: float = 0.0):
        super().__init__(daemon=True)
        self.send, self.every = send, every
        self.stop = threading.Event()
        self.statuses: dict[int, int] = {}

    def run(self) -> None:
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                status = self.send()
            except OSError:
                status = 0
            self.statuses[status] = self.statuses.get(status, 0) + 1
            self.stop.wait(max(0.0, self.every - (time.monotonic() - started)))


def _raw_post(port: int, path: str, body: bytes, source: str, token: str | None = None) -> int:
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    if token:
        head += f"Authorization: Token {token}\r\n"
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=60, source_address=(source, 0)) as c:
        c.sendall(head.encode() + body)
        first = c.recv(65536)
        # The rest (13 MB for the largest answer) is read into one buffer and dropped:
        # the client must not spend this process's time, which the probe shares.
        sink = bytearray(1 << 20)
        while c.recv_into(sink):
            pass
    return int(first.split(b" ", 2)[1]) if first else 0


def login_hogs(stack) -> list[Hog]:
    counter = iter(range(10**9))

    def sender(source: str):
        def send() -> int:
            body = json.dumps({"username": f"guess-{next(counter)}", "password": "guess-123"})
            return _raw_post(stack.port, "/api/v1/auth/token/", body.encode(), source)

        return send

    return [
        Hog(sender(f"127.0.0.{2 + n}"), every=LOGIN_EVERY_SECONDS) for n in range(LOGIN_ADDRESSES)
    ]


def playground_hogs(stack) -> list[Hog]:
    rng = np.random.default_rng(0)
    largest = {
        n: (rng.standard_normal((256, 256)) / 7).tolist() for n in ("X", "W_Q", "W_K", "W_V")
    }
    body = json.dumps(largest).encode()
    hogs = []
    # Addresses of this run's own: the sign-up limit (20 an hour per address) is kept in
    # Redis, which outlives a run.
    network = f"127.{secrets.randbelow(200) + 2}.{secrets.randbelow(250)}"
    for n in range(PLAYGROUND_HOGS):
        source = f"{network}.{2 + n}"
        signup = json.dumps({"username": f"hog{n}", "password": "hog-pass-4821-x"}).encode()
        connection = http.client.HTTPConnection(
            "127.0.0.1", stack.port, timeout=60, source_address=(source, 0)
        )
        connection.request(
            "POST", "/api/v1/auth/register/", signup, {"Content-Type": "application/json"}
        )
        answer = connection.getresponse()
        content = answer.read()
        connection.close()
        assert answer.status == 201, content[:300]
        token = json.loads(content)["token"]
        hogs.append(
            Hog(
                lambda token=token, source=source: _raw_post(
                    stack.port, "/api/v1/attention/", body, source, token
                ),
                every=PLAYGROUND_EVERY_SECONDS,
            )
        )
    return hogs


class IdleConnections(threading.Thread):
    """``count`` connections from one address that never send a head, reopened as nginx
    resets them."""

    def __init__(self, port: int, count: int):
        super().__init__(daemon=True)
        self.port, self.count = port, count
        self.stop = threading.Event()
        self.held: list[socket.socket] = []
        self.statuses: dict[int, int] = {}

    def _open(self) -> socket.socket:
        return socket.create_connection(
            ("127.0.0.1", self.port), timeout=10, source_address=("127.0.0.2", 0)
        )

    def run(self) -> None:
        while not self.stop.is_set():
            alive = []
            for connection in self.held:
                connection.setblocking(False)
                try:
                    connection.recv(1, socket.MSG_PEEK)
                    connection.close()  # answered or closed: reopen
                except BlockingIOError:
                    alive.append(connection)
                except OSError:
                    connection.close()
            with contextlib.suppress(OSError):
                alive.extend(self._open() for _ in range(self.count - len(alive)))
            self.held = alive
            self.stop.wait(0.5)
        for connection in self.held:
            connection.close()


def _phase(stack, name: str, hogs: list, seconds: float) -> tuple[str, list[float]]:
    for hog in hogs:
        hog.start()
    try:
        time.sleep(min(5.0, seconds / 4))  # the hogs under way: a pace, not a wait for state
        took = _probe(stack, seconds)
    finally:
        for hog in hogs:
            hog.stop.set()
        for hog in hogs:
            hog.join(timeout=120)
    answered: dict[int, int] = {}
    for hog in hogs:
        for status, count in hog.statuses.items():
            answered[status] = answered.get(status, 0) + count
    return f"{name} (hogs answered {dict(sorted(answered.items()))})", took


def measure_stack(seconds: float) -> list[str]:
    lines = []
    with running_stack(STUDY_PROXY_CONN_PER_CLIENT="64") as stack:
        quiet = _probe(stack, seconds)
        phases = [("quiet", quiet)]
        phases.append(_phase(stack, "20 log-in addresses", login_hogs(stack), seconds))
        phases.append(_phase(stack, "3 playground hogs", playground_hogs(stack), seconds))
        base95 = _figures(quiet)[1]
        lines.append("A learner's due page through nginx (ms): p50, p95, p95 / quiet p95")
        for name, took in phases:
            p50, p95 = _figures(took)
            lines.append(f"  {name:<60} {p50:7.1f} {p95:7.1f} {p95 / base95:6.2f}x  n={len(took)}")
        idle = IdleConnections(stack.port, IDLE)
        idle.start()
        try:
            time.sleep(2.0)
            health = _probe(stack, seconds / 2, "/healthz")
            held = len(idle.held)
        finally:
            idle.stop.set()
            idle.join(timeout=60)
        p50, p95 = _figures(health)
        lines.append(
            f"/healthz with {held:,} idle connections from one address: p50 {p50:.1f} ms, "
            f"p95 {p95:.1f} ms, max {max(health) * 1000:.1f} ms (n={len(health)}); "
            f"nginx: {'worker_connections are not enough' in stack.log('nginx')=}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="per phase")
    parser.add_argument("--parts", default="stack,cpu")
    args = parser.parse_args()
    parts = args.parts.split(",")
    if "stack" in parts:
        print("\n".join(measure_stack(args.seconds)), flush=True)
    if "cpu" in parts:
        from benchmarks import cost_bodies

        print("\n".join(cost_bodies.measure()), flush=True)


if __name__ == "__main__":
    main()
