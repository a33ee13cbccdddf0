"""What a frozen PostgreSQL costs each request, from outside, with and without the breaker.

    DATABASE_URL=postgres://... [REDIS_URL=redis://...] \\
        .venv/bin/python -m benchmarks.bench_frozen_db [--freeze 40] [--learners 8] [--runs 1]

The production stack: ``gunicorn studyapp.wsgi:application`` with ``--workers`` sync
workers and docker-compose's ``--timeout 30``, ``DJANGO_DEBUG=0``, production's database
timeouts, Redis when ``REDIS_URL`` is set. Its database connections go through a TCP
relay to PostgreSQL (``tests/freezing_relay.py``) that can *freeze* as a SIGSTOPped server does: the kernel still
completes new connections and takes the bytes sent, and no answer comes (the shared
PostgreSQL itself is never stopped). ``--learners`` clients, each with a token of its
own, ask ``GET /api/v1/reviews/due/`` back to back: ``--warm`` seconds answered, then
``--freeze`` seconds frozen, then ``--after`` seconds thawed.

Printed per mode (``STUDY_DB_BREAKER_SECONDS`` 5, and 0 for the breaker off): the
first 503 after the freeze began; the requests answered during the freeze and their
statuses; what a client waited (median, p95, max: what it sees, queueing for a worker
included); what a 503 held its worker (the server's own time, from gunicorn's access
log); and how long after the thaw the first 200 came.
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tests.freezing_relay import FreezingRelay

REPO = Path(__file__).resolve().parent.parent
DATABASE_NAME = "bench_frozen_db"
PATH = "/api/v1/reviews/due/"


@dataclass
class Answer:
    began: float
    ended: float
    status: int  # 0: the connection failed


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--freeze", type=float, default=40, help="seconds frozen")
    parser.add_argument("--warm", type=float, default=5, help="seconds answered before")
    parser.add_argument("--after", type=float, default=15, help="seconds answered after")
    parser.add_argument("--learners", type=int, default=8, help="clients, one learner each")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers")
    parser.add_argument("--runs", type=int, default=1, help="runs of each mode")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--modes", default="5,0", help="STUDY_DB_BREAKER_SECONDS of each mode (0: off)"
    )
    return parser.parse_args(argv)


def seed(learners: int) -> tuple[dict, list[str]]:
    """The benchmark's database migrated, a small deck and a token per learner."""
    from benchmarks import pg

    pg.prepare(DATABASE_NAME)
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.utils import timezone
    from rest_framework.authtoken.models import Token

    from cards import services
    from cards.models import Card, Deck

    deck, _ = Deck.objects.get_or_create(slug="frozen-bench", defaults={"title": "Frozen"})
    for i in range(20):
        Card.objects.get_or_create(
            deck=deck, position=i, defaults={"kind": "recall", "prompt": f"P{i}", "answer": "A"}
        )
    tokens = []
    for i in range(learners):
        user, _ = get_user_model().objects.get_or_create(username=f"frozen-{i}")
        services.enroll(learner=user, deck=deck, at=timezone.now())
        tokens.append(Token.objects.get_or_create(user=user)[0].key)
    return settings.DATABASES["default"], tokens


def start_gunicorn(args, database: dict, relay: FreezingRelay, breaker: str, log: Path):
    env = dict(os.environ)
    env.update(
        DATABASE_URL=(f"postgres://{database['USER']}@127.0.0.1:{relay.port}/{database['NAME']}"),
        DJANGO_SETTINGS_MODULE="studyapp.settings",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY=env.get("DJANGO_SECRET_KEY", "bench-frozen-" + "x" * 50),
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        DJANGO_SECURE_SSL_REDIRECT="0",
        STUDY_DB_BREAKER_SECONDS=breaker,
        STUDY_THROTTLE_USER="off",
        PYTHONPATH=str(REPO),
    )
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    return subprocess.Popen(
        [
            gunicorn,
            "studyapp.wsgi:application",
            f"--workers={args.workers}",
            "--worker-class=sync",
            f"--bind=127.0.0.1:{args.port}",
            "--timeout=30",
            "--graceful-timeout=30",
            f"--access-logfile={log}",
            # status, then the server's own time in microseconds
            '--access-logformat=%(s)s %(D)s "%(r)s"',
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def ask(port: int, token: str, timeout: float = 60) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", PATH, headers={"Authorization": f"Token {token}"})
        response = conn.getresponse()
        response.read()
        return response.status
    except OSError:
        return 0
    finally:
        conn.close()


def wait_ready(port: int, token: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit("gunicorn exited before it served")
        if ask(port, token, timeout=5) == 200:
            return
        time.sleep(0.3)
    sys.exit("gunicorn did not answer within 60 s")


def drive(port: int, tokens: list[str], stop: threading.Event) -> list[Answer]:
    answers: list[Answer] = []
    lock = threading.Lock()

    def learner(token: str) -> None:
        while not stop.is_set():
            began = time.monotonic()
            status = ask(port, token)
            with lock:
                answers.append(Answer(began, time.monotonic(), status))

    threads = [threading.Thread(target=learner, args=(t,), daemon=True) for t in tokens]
    for thread in threads:
        thread.start()
    stop.wait()
    for thread in threads:
        thread.join(timeout=90)
    return answers


def held_by_503(log: Path) -> list[float]:
    """Seconds each 503 held its worker, from the access log."""
    held = []
    for line in log.read_text().splitlines():
        status, micros, *_ = line.split(" ", 2)
        if status == "503":
            held.append(int(micros) / 1e6)
    return held


def one_run(args, database: dict, tokens: list[str], breaker: str) -> dict:
    relay = FreezingRelay(database["HOST"] or "127.0.0.1", int(database["PORT"] or 5432))
    with tempfile.NamedTemporaryFile(prefix="bench-frozen-", suffix=".log", delete=False) as f:
        log = Path(f.name)
    proc = start_gunicorn(args, database, relay, breaker, log)
    try:
        wait_ready(args.port, tokens[0], proc)
        stop = threading.Event()
        result: list[list[Answer]] = []
        driver = threading.Thread(
            target=lambda: result.append(drive(args.port, tokens, stop)), daemon=True
        )
        driver.start()
        time.sleep(args.warm)
        log.write_text("")  # the access log from the freeze on
        frozen_at = time.monotonic()
        relay.frozen.set()
        time.sleep(args.freeze)
        relay.frozen.clear()
        thawed_at = time.monotonic()
        time.sleep(args.after)
        stop.set()
        driver.join(timeout=120)
        time.sleep(0.5)  # gunicorn writes the last lines
        return summarize(result[0], frozen_at, thawed_at, held_by_503(log))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        relay.close()
        log.unlink(missing_ok=True)


def summarize(answers: list[Answer], frozen_at: float, thawed_at: float, held: list[float]):
    during = [a for a in answers if frozen_at <= a.began < thawed_at]
    waits = sorted(a.ended - a.began for a in during)
    first_503 = min(
        (a.ended for a in answers if a.status == 503 and a.ended >= frozen_at), default=None
    )
    first_200_after = min(
        (a.ended for a in answers if a.status == 200 and a.began >= thawed_at), default=None
    )
    statuses: dict[int, int] = {}
    for a in during:
        statuses[a.status] = statuses.get(a.status, 0) + 1
    return {
        "first_503": None if first_503 is None else first_503 - frozen_at,
        "answered": len(during),
        "statuses": statuses,
        "wait_median": statistics.median(waits) if waits else None,
        "wait_p95": waits[int(0.95 * (len(waits) - 1))] if waits else None,
        "wait_max": waits[-1] if waits else None,
        "held_median": statistics.median(held) if held else None,
        "held_max": max(held) if held else None,
        "recovered": None if first_200_after is None else first_200_after - thawed_at,
    }


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sys.path.insert(0, str(REPO))
    database, tokens = seed(args.learners)
    print(
        f"gunicorn {args.workers} sync workers, production settings, {args.learners} learners "
        f"asking {PATH} back to back; database frozen {args.freeze:g} s"
    )
    print(
        "breaker_s  run  first_503_s  answered  statuses            wait_median  wait_p95  "
        "wait_max  503_held_median  503_held_max  first_200_after_thaw_s"
    )
    for breaker in args.modes.split(","):
        for run in range(1, args.runs + 1):
            r = one_run(args, database, tokens, breaker.strip())
            statuses = ",".join(f"{k}:{v}" for k, v in sorted(r["statuses"].items()))
            print(
                f"{breaker:>9}  {run:>3}  {_s(r['first_503']):>11}  {r['answered']:>8}  "
                f"{statuses:<18}  {_s(r['wait_median']):>11}  {_s(r['wait_p95']):>8}  "
                f"{_s(r['wait_max']):>8}  {_s(r['held_median']):>15}  {_s(r['held_max']):>12}  "
                f"{_s(r['recovered']):>22}",
                flush=True,
            )


if __name__ == "__main__":
    main()
