"""The API under load: a gunicorn of the benchmark's settings, and clients that time it.

``start_gunicorn``/``wait_ready`` serve the site the way ``bench_load`` measures it (sync
workers, ``DEBUG`` off, the throttles off unless asked); a ``Series`` runs one request
kind over several client connections and keeps each request's latency.
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


# --- server -------------------------------------------------------------------------


def start_gunicorn(port: int, workers: int, user_limit: bool = False) -> subprocess.Popen:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="benchmarks.load_settings",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY=env.get("DJANGO_SECRET_KEY", "bench-load-" + "x" * 50),
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        DJANGO_SECURE_SSL_REDIRECT="0",
        PYTHONPATH=str(REPO),
    )
    for scope in (
        "USER",
        "EXERCISE_CREATE",
        "EXERCISE_SUBMIT",
        "LAB_SUBMIT",
        "LOGIN",
        "PLAYGROUND",
    ):
        env[f"STUDY_THROTTLE_{scope}"] = "off"
    if user_limit:  # production's per-learner limit, counted in the cache (Redis with REDIS_URL)
        env.pop("STUDY_THROTTLE_USER")
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    with tempfile.NamedTemporaryFile(prefix="bench-gunicorn-", suffix=".log", delete=False) as log:
        proc = subprocess.Popen(
            [
                gunicorn,
                "--workers",
                str(workers),
                "--worker-class",
                "sync",
                "--bind",
                f"127.0.0.1:{port}",
                "--access-logfile",
                "-" if os.environ.get("BENCH_ACCESS_LOG") else "/dev/null",
                "benchmarks.load_wsgi:application",
            ],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    proc.log_path = log.name
    return proc


def wait_ready(port: int, token: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"gunicorn exited:\n{Path(proc.log_path).read_text()[-3000:]}")
        try:
            status, _ = request(
                http.client.HTTPConnection("127.0.0.1", port, timeout=5),
                "GET",
                "/api/v1/reviews/due/",
                token,
            )
            if status == 200:
                return
        except OSError:
            pass
        time.sleep(0.3)
    sys.exit("gunicorn did not answer within 60 s")


# --- load ---------------------------------------------------------------------------


def request(conn, method: str, path: str, token: str, body=None) -> tuple[int, bytes]:
    headers = {"Authorization": f"Token {token}", "Host": "127.0.0.1"}
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=payload, headers=headers)
    response = conn.getresponse()
    return response.status, response.read()


class Series:
    def __init__(self, name: str, expected: int):
        self.name = name
        self.expected = expected
        self.latencies: list[float] = []
        self.errors = 0
        self.seconds = 0.0
        self.lock = threading.Lock()

    def run(self, port: int, clients: int, seconds: float, next_call: Callable) -> None:
        stop = time.monotonic() + seconds

        def client(n: int) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            mine, errors = [], 0
            while time.monotonic() < stop:
                call = next_call(n)
                if call is None:
                    break
                started = time.perf_counter()
                status, _ = request(conn, *call)
                mine.append(time.perf_counter() - started)
                if status != self.expected:
                    errors += 1
            conn.close()
            with self.lock:
                self.latencies.extend(mine)
                self.errors += errors

        threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.seconds += time.monotonic() - started

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        if len(self.latencies) < 2:
            return float("nan")
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[q - 1] * 1000


def rotating(tokens: list[str], method: str, path: str) -> Callable:
    counter = iter(range(10**12))
    lock = threading.Lock()

    def next_call(_):
        with lock:
            i = next(counter)
        return method, path, tokens[i % len(tokens)]

    return next_call


def from_pool(items: list, make: Callable) -> Callable:
    it = iter(items)
    lock = threading.Lock()

    def next_call(_):
        with lock:
            item = next(it, None)
        return None if item is None else make(item)

    return next_call
