"""The labs benchmarks' shared parts: the learners and what they submit, the processes
(gunicorn, a labs worker), and the client that submits and polls.

``bench_labs`` (the series), ``labs_breakdown`` (phase by phase) and ``labs_flood`` (one
learner flooding) are built from these.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_P95_SECONDS = 2.0
TARGET_RATE = 4.0
PASSWORDLESS = "!"  # the learners log in by token only
LEARNER_PREFIX = "bench-labs-"


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def percentile(values: Sequence[float], q: int) -> float:
    """The q-th percentile (inclusive method); nan below two values."""
    if len(values) < 2:
        return float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def verdicts(p95: float, rate: float) -> list[tuple[str, str, float, bool]]:
    """The targets: (what, measured, ratio to the target, met). A p95 ratio of at most 1
    and a rate ratio of at least 1 meet them."""
    p95_ratio = p95 / TARGET_P95_SECONDS
    rate_ratio = rate / TARGET_RATE
    return [
        (
            f"p95 submit to result <= {TARGET_P95_SECONDS:g} s",
            f"{p95:.2f} s",
            p95_ratio,
            p95_ratio <= 1.0,
        ),
        (f"gradings/s >= {TARGET_RATE:g}", f"{rate:.2f}/s", rate_ratio, rate_ratio >= 1.0),
    ]


# --- what is submitted ---------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    slug: str
    name: str  # "reference" or the mistake's name
    code: str
    passes: bool


def sources(lab: str, wrong: bool) -> list[Source]:
    """What the learners submit, in turn: references, or registered mistakes."""
    from labs.catalogue import LABS

    if lab == "wrong":
        lab, wrong = "mixed", True
    chosen = list(LABS.values()) if lab == "mixed" else [LABS[lab]]
    if not wrong:
        return [Source(each.slug, "reference", each.reference, True) for each in chosen]
    return [
        Source(each.slug, name, code, False)
        for each in chosen
        for name, code in sorted(each.mistakes.items())
    ]


# --- data -----------------------------------------------------------------------------


def learners(count: int) -> list[tuple[int, str]]:
    """``count`` learners of the benchmark with their tokens; their earlier submissions go."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from labs.models import Submission

    user_model = get_user_model()
    found = []
    for i in range(count):
        user, created = user_model.objects.get_or_create(username=f"{LEARNER_PREFIX}{i:02d}")
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        found.append((user.pk, Token.objects.get_or_create(user=user)[0].key))
    Submission.objects.filter(learner__username__startswith=LEARNER_PREFIX).delete()
    return found


def purge_labs_queue() -> None:
    """Tasks left in the ``labs`` queue by an interrupted run would be graded first."""
    from studyapp.celery import app

    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge("labs")


# --- processes ------------------------------------------------------------------------


def service_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="studyapp.settings",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY=env.get("DJANGO_SECRET_KEY", "bench-labs-" + "x" * 50),
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        DJANGO_SECURE_SSL_REDIRECT="0",
        PYTHONPATH=str(REPO),
        LOG_LEVEL="WARNING",
        STUDY_THROTTLE_LAB_SUBMIT="off",
        STUDY_THROTTLE_USER="off",
    )
    return env


def _wait_for(proc: subprocess.Popen, log: Path, ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 120
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            sys.exit(f"{what} did not start:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.2)


def start_gunicorn(port: int, workers: int, token: str) -> subprocess.Popen:
    log = Path(tempfile.gettempdir()) / f"bench-labs-gunicorn-{port}.log"
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                gunicorn,
                *("--workers", str(workers), "--worker-class", "sync"),
                *("--bind", f"127.0.0.1:{port}", "--access-logfile", "/dev/null"),
                "studyapp.wsgi:application",
            ],
            cwd=REPO,
            env=service_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def answers() -> bool:
        try:
            status, _ = Client(port, token).request("GET", "/api/v1/labs/")
        except OSError:
            return False
        return status == 200

    _wait_for(proc, log, answers, "gunicorn")
    return proc


def start_worker(concurrency: int) -> subprocess.Popen:
    """One labs worker, its prefork pool of ``concurrency`` processes, as compose runs it."""
    log = Path(tempfile.gettempdir()) / f"bench-labs-worker-{concurrency}.log"
    celery = str(Path(sys.executable).with_name("celery"))
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                celery,
                *("-A", "studyapp", "worker", "-Q", "labs", "--pool=prefork"),
                f"--concurrency={concurrency}",
                *("-n", f"bench-labs-{concurrency}@%h", "--loglevel=INFO"),
                *("--without-gossip", "--without-mingle", "--without-heartbeat"),
            ],
            cwd=REPO,
            env=service_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _wait_for(proc, log, lambda: b"ready." in log.read_bytes(), "the labs worker")
    return proc


def stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def cpu_seconds(pid: int) -> float:
    """User and system CPU of ``pid`` and its live children (gunicorn's workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for each in pids:
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


# --- load -----------------------------------------------------------------------------


class Client:
    """One keep-alive connection as one learner (gunicorn's sync workers close it; it
    reopens)."""

    def __init__(self, port: int, token: str):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"Authorization": f"Token {token}", "Host": "127.0.0.1"}

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        headers = dict(self.headers)
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            self.conn.request(method, path, body=payload, headers=headers)
            response = self.conn.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            self.conn.close()  # closed between two requests: once more on a new one
            self.conn.request(method, path, body=payload, headers=headers)
            response = self.conn.getresponse()
        raw = response.read()
        try:
            return response.status, json.loads(raw) if raw else {}
        except ValueError:
            return response.status, {"raw": raw[:200].decode(errors="replace")}


@dataclass
class Series:
    workers: int
    latencies: list[float] = field(default_factory=list)
    seen: dict[int, float] = field(default_factory=dict)  # submission id -> wall clock seen
    errors: list[str] = field(default_factory=list)
    polls: int = 0
    seconds: float = 0.0
    web_cpu: float = 0.0
    own_cpu: float = 0.0  # this process: the learners' threads
    load_before: str = ""
    load_after: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0


def grade_once(client: Client, source: Source, poll: float, give_up: float) -> tuple:
    """Submit ``source`` and poll until it is judged: (latency, id, polls, error or None)."""
    started = time.perf_counter()
    status, body = client.request(
        "POST", f"/api/v1/labs/{source.slug}/submissions/", {"code": source.code}
    )
    if status != 202:
        return None, None, 0, f"POST {source.slug}: {status} {body}"
    path = f"/api/v1/labs/submissions/{body['id']}/"
    polls = 0
    while True:
        time.sleep(poll)
        status, result = client.request("GET", path)
        polls += 1
        if status != 200:
            return None, body["id"], polls, f"GET {path}: {status} {result}"
        if result["status"] in ("done", "failed"):
            break
        if time.perf_counter() - started > give_up:
            return None, body["id"], polls, f"{path} still {result['status']} after {give_up} s"
    latency = time.perf_counter() - started
    if result["status"] != "done" or result["passed"] is not source.passes:
        wanted = "passed" if source.passes else "failed"
        got = f"{result['status']}, passed={result['passed']}, {result['diagnosis'][:120]!r}"
        return (
            latency,
            body["id"],
            polls,
            f"{source.slug} {source.name}: {wanted} expected, got {got}",
        )
    return latency, body["id"], polls, None


def drive(series: Series, port: int, tokens: list[str], work: list[Source], args) -> None:
    """``len(tokens)`` learners submit in a loop until ``args.seconds`` have passed; each
    waits for its last result."""
    turn = itertools.count()
    turn_lock = threading.Lock()

    def learner(token: str, stop_at: float) -> None:
        client = Client(port, token)
        while time.monotonic() < stop_at:
            with turn_lock:
                source = work[next(turn) % len(work)]
            latency, sid, polls, error = grade_once(client, source, args.poll, args.give_up)
            with series.lock:
                series.polls += polls
                if latency is not None:
                    series.latencies.append(latency)
                    series.seen[sid] = time.time()
                if error:
                    series.errors.append(error)
        client.conn.close()

    started = time.monotonic()
    stop_at = started + args.seconds
    threads = [threading.Thread(target=learner, args=(t, stop_at)) for t in tokens]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    series.seconds = time.monotonic() - started


def warm_up(port: int, token: str, work: list[Source], args, count: int) -> None:
    """A grading per pool process first, so the first run's imports are not a latency."""
    client = Client(port, token)
    done = [grade_once(client, source, args.poll, args.give_up) for source in work[:1] * count]
    errors = [error for *_, error in done if error]
    if errors:
        sys.exit(f"the warm-up grading went wrong: {errors[0]}")


def run_series(workers: int, port: int, gunicorn: subprocess.Popen, tokens, work, args) -> Series:
    series = Series(workers)
    worker = start_worker(workers)
    try:
        warm_up(port, tokens[0], work, args, workers)
        series.load_before = loadavg()
        cpu_before, own_before = cpu_seconds(gunicorn.pid), time.process_time()
        drive(series, port, tokens, work, args)
        series.web_cpu = cpu_seconds(gunicorn.pid) - cpu_before
        series.own_cpu = time.process_time() - own_before
        series.load_after = loadavg()
    finally:
        stop(worker)
    return series
