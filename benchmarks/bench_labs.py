"""Lab gradings end to end: gunicorn, a labs worker on Redis, the sandbox; 1 then 2 processes.

Needs PostgreSQL and Redis (the database is created and migrated when missing)::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_labs \\
    REDIS_URL=redis://127.0.0.1:6379/9 \\
        .venv/bin/python -m benchmarks.bench_labs --seconds 30 --lab softmax

It starts ``gunicorn`` (production settings, the ``lab_submit`` and ``user`` rate limits
off) and, for each of ``--workers`` (default 1 then 2), one labs worker
(``celery -A studyapp worker -Q labs --concurrency=N``) as deployed: one worker whose
prefork pool has N processes. ``--learners`` (8) learners then each, in a loop for
``--seconds``, POST a submission to ``/api/v1/labs/{slug}/submissions/`` and poll
``GET /api/v1/labs/submissions/{id}/`` every ``--poll`` seconds (0.05) until it is
``done`` or ``failed``. A latency is from the POST to the poll that sees the result,
so it is late by up to one poll interval; the output says so.

``--flood`` runs the flood scenario instead (``benchmarks/labs_flood.py``): one learner
submits sleeping code as fast as it is let while another's p95 is measured against a
quiet queue (target <= 2 s).

``--lab`` is a slug (``softmax`` by default), ``mixed`` (every lab's reference in turn)
or ``wrong`` (every lab's registered mistakes in turn); ``--wrong`` submits the chosen
lab's mistakes instead of its reference. A reference must come back passed, a mistake
failed; anything else counts as an error.

It prints, per worker size: gradings, gradings/s sustained, p50/p95/p99 from submit to
result, where the time went (waiting in the queue, grading in the worker, the run in the
sandbox, the poll that saw it, from the submissions' own timestamps), the CPU the web
server and the learners' threads used, and ``/proc/loadavg`` before and after. Then the
targets with 2 processes (p95 <= 2 s, >= 4 gradings/s) with the ratio to each and PASS
or MISS. ``--breakdown N`` first times N sequential gradings phase by phase (the lab's
calls, the sandbox's start, NumPy's import inside it, the calls, the judge, the
service's database writes, and the broker's hop through a worker of 1). Exit status 1
when a grading went wrong or a target is missed.

Why one worker of concurrency N rather than N workers of 1, and the figures:
docs/benchmarks.md, "Labs".
"""

from __future__ import annotations

import argparse
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


# --- where the time went, from the submissions' timestamps ------------------------------


def phases(series: Series) -> dict[str, list[float]]:
    """Seconds per submission: in the queue (saved to claimed), in the worker (claimed to
    stored), in the sandbox (its wall time), and stored to seen by a poll."""
    from labs.models import Submission

    rows = Submission.objects.filter(pk__in=list(series.seen)).values_list(
        "pk", "created_at", "started_at", "finished_at", "duration_ms"
    )
    found: dict[str, list[float]] = {"queue": [], "worker": [], "sandbox": [], "seen": []}
    for pk, created, started, finished, duration in rows:
        if started is None or finished is None:
            continue
        found["queue"].append((started - created).total_seconds())
        found["worker"].append((finished - started).total_seconds())
        found["sandbox"].append((duration or 0) / 1000)
        found["seen"].append(series.seen[pk] - finished.timestamp())
    return found


def report(all_series: list[Series], args, work: list[Source]) -> bool:
    what = ", ".join(sorted({f"{s.slug} {s.name}" for s in work}))
    if len(what) > 100:
        what = f"{len(work)} sources over {len({s.slug for s in work})} labs"
    print(
        f"\n{args.learners} learners submitting in a loop for {args.seconds:g} s each series, "
        f"polling every {args.poll * 1000:g} ms (latencies are late by up to one poll); "
        f"submitting: {what}; gunicorn {args.web_workers} sync workers; lab_submit limit off"
    )
    print(
        f"{'labs worker':22} {'gradings':>8} {'per s':>6} {'p50 s':>6} {'p95 s':>6} "
        f"{'p99 s':>6} {'errors':>6} {'polls/s':>7} {'web CPU':>7} {'own CPU':>7}  "
        "loadavg before -> after"
    )
    for s in all_series:
        lat = s.latencies
        print(
            f"{'concurrency ' + str(s.workers):22} {len(lat):>8} {s.rate:>6.2f} "
            f"{percentile(lat, 50):>6.2f} {percentile(lat, 95):>6.2f} {percentile(lat, 99):>6.2f} "
            f"{len(s.errors):>6} {s.polls / s.seconds:>7.0f} {s.web_cpu / s.seconds:>7.0%} "
            f"{s.own_cpu / s.seconds:>7.0%}  "
            f"{s.load_before} -> {s.load_after}"
        )
    print("\nwhere a grading's time went (median / p95, seconds, from the submissions' rows):")
    for s in all_series:
        parts = phases(s)
        cells = "  ".join(
            f"{name} {statistics.median(v):.3f} / {percentile(v, 95):.3f}"
            for name, v in parts.items()
            if v
        )
        print(f"  concurrency {s.workers}: {cells}")
    print(
        "  (queue: saved to claimed by a worker; worker: claimed to stored; sandbox: the "
        "run's wall time, inside worker; seen: stored to the poll that saw it)\n"
        "  (web CPU: gunicorn's, own CPU: the learners' threads here, as shares of one core)"
    )
    ok = True
    for s in all_series:
        for error in s.errors[:5]:
            print(f"  error (concurrency {s.workers}): {error}")
        ok = ok and not s.errors
    last = all_series[-1]
    print(f"\ntargets, labs worker concurrency {last.workers}:")
    for name, measured, ratio, met in verdicts(percentile(last.latencies, 95), last.rate):
        print(f"  {name:34} {measured:>9}  ratio {ratio:.2f}  {'PASS' if met else 'MISS'}")
        ok = ok and met
    return ok


# --- the breakdown: sequential gradings, phase by phase ------------------------------------


def timed(fn: Callable, *args, **kwargs) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - started, result


def bare_start(limits) -> float:
    """bwrap and the interpreter alone, started as the sandbox starts them, without the
    runner or NumPy."""
    from labs.sandbox import bwrap

    python = bwrap.interpreter()
    front = bwrap._launcher(limits, bwrap._outer_ids()) or []
    command = [*front, *bwrap.bwrap_args(python, limits), str(python), "-I", "-S", "-c", "pass"]
    started = time.perf_counter()
    subprocess.run(command, env={}, check=True, stdin=subprocess.DEVNULL)
    return time.perf_counter() - started


def _nothing() -> None:
    return None


def start_cost(fork: bool) -> float:
    """Starting ``true`` from this process: by fork (a ``preexec_fn``, as the sandbox
    started before ``prlimit``), or by vfork (as it starts now)."""
    started = time.perf_counter()
    subprocess.run(["true"], check=True, preexec_fn=_nothing if fork else None)
    return time.perf_counter() - started


def run_by_fork(code: str, calls, limits):
    """``sandbox.run`` with the uid change and limits set in a forked child (the way
    without ``setpriv`` and ``prlimit``)."""
    from labs.sandbox import bwrap
    from labs.sandbox import run as sandbox_run

    launcher = bwrap._launcher
    bwrap._launcher = lambda *_: None  # type: ignore[assignment]
    try:
        return sandbox_run(code, calls, limits=limits)
    finally:
        bwrap._launcher = launcher  # type: ignore[assignment]


STEPS = (
    "the lab's calls (inputs drawn)",
    "start of a program from a Django process: fork",
    "  the same by vfork (how the sandbox starts)",
    "bwrap + python -I -S",
    "+ the runner and NumPy's import",
    "+ the code loaded, the calls, the answer",
    "= sandbox.run",
    "  the same started by fork (preexec_fn)",
    "the judge",
    "the service's database (claim, read, store)",
    "= submission_grade in this process",
)


def graded_in_process(submission_id: int) -> tuple[float, float]:
    """``submission_grade`` in this process: its seconds, and those of ``grading.grade``
    within it (the rest is the service's database work)."""
    from labs import grading, services

    inner: list[float] = []
    original = grading.grade

    def grade(**kwargs):
        seconds, graded = timed(original, **kwargs)
        inner.append(seconds)
        return graded

    grading.grade = grade  # type: ignore[assignment]
    try:
        total, _ = timed(services.submission_grade, submission_id=submission_id)
    finally:
        grading.grade = original  # type: ignore[assignment]
    return total, sum(inner)


def breakdown(count: int, work: list[Source], learner_id: int) -> None:
    """``count`` sequential gradings, each phase timed in this process (the code runs in
    the sandbox only), then ``count`` through a worker of 1 for the broker's hop."""
    import numpy as np

    from labs import grading
    from labs.catalogue import LABS
    from labs.models import Submission
    from labs.sandbox import bwrap
    from labs.sandbox import run as sandbox_run

    limits = grading.lab_limits()
    python = bwrap.interpreter()
    empty = json.dumps({"code": "", "calls": []}).encode()
    rows: dict[str, list[float]] = {name: [] for name in STEPS}
    for i in range(count + 1):  # the first is a warm-up: imports, the sandbox probe
        source = work[i % len(work)]
        lab = LABS[source.slug]
        rng = np.random.default_rng(i)
        calls_seconds, made = timed(lab.calls, rng)
        calls = list(made)
        fork, vfork = start_cost(fork=True), start_cost(fork=False)
        bare = bare_start(limits)
        runner_seconds, _ = timed(bwrap.start, python, limits, empty)
        run_seconds, run = timed(sandbox_run, source.code, calls, limits=limits)
        forked_seconds, _ = timed(run_by_fork, source.code, calls, limits)
        judge_seconds, _ = timed(lab.judge, calls, run)
        submission = Submission.objects.create(
            learner_id=learner_id, lab=source.slug, code=source.code, seed=i
        )
        total, grade_seconds = graded_in_process(submission.pk)
        if not i:
            continue
        for name, seconds in zip(
            STEPS,
            (
                calls_seconds,
                fork,
                vfork,
                bare,
                runner_seconds - bare,
                run_seconds - runner_seconds,
                run_seconds,
                forked_seconds,
                judge_seconds,
                total - grade_seconds,
                total,
            ),
            strict=True,
        ):
            rows[name].append(seconds)
    hop = broker_hop(count, work, learner_id)
    print(
        f"\nbreakdown: {count} sequential gradings, phases timed in this process, the code "
        f"run in the sandbox (loadavg {loadavg()}); '+' rows are differences of runs"
    )
    print(f"  {'phase':46} {'median ms':>9} {'p95 ms':>8}")
    for name, values in [*rows.items(), *hop.items()]:
        print(
            f"  {name:46} {statistics.median(values) * 1000:>9.1f} "
            f"{percentile(values, 95) * 1000:>8.1f}"
        )


def broker_hop(count: int, work: list[Source], learner_id: int) -> dict[str, list[float]]:
    """Sequential submissions through ``submission_create`` and a labs worker of 1: saved to
    claimed (commit, publish, Redis, the worker's claim), and claimed to stored."""
    from django.contrib.auth import get_user_model

    from labs import services
    from labs.models import Submission

    learner = get_user_model().objects.get(pk=learner_id)
    worker = start_worker(1)
    found: dict[str, list[float]] = {
        "through a worker of 1: saved to claimed": [],
        "through a worker of 1: claimed to stored": [],
        "through a worker of 1: its sandbox.run": [],
    }
    try:
        for i in range(count + 1):  # the first warms the pool process up
            source = work[i % len(work)]
            submission = services.submission_create(
                learner=learner, lab_slug=source.slug, code=source.code
            )
            deadline = time.monotonic() + 60
            while True:
                row = Submission.objects.get(pk=submission.pk)
                if row.status in ("done", "failed") or time.monotonic() > deadline:
                    break
                time.sleep(0.005)
            if i and row.started_at and row.finished_at:
                found["through a worker of 1: saved to claimed"].append(
                    (row.started_at - row.created_at).total_seconds()
                )
                found["through a worker of 1: claimed to stored"].append(
                    (row.finished_at - row.started_at).total_seconds()
                )
                found["through a worker of 1: its sandbox.run"].append(
                    (row.duration_ms or 0) / 1000
                )
    finally:
        stop(worker)
    return found


# --- main -------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="per worker size")
    parser.add_argument(
        "--lab", default="softmax", help="a lab's slug, mixed (every lab) or wrong (every mistake)"
    )
    parser.add_argument("--wrong", action="store_true", help="submit the lab's mistakes")
    parser.add_argument("--learners", type=int, default=8, help="learners submitting at once")
    parser.add_argument("--poll", type=float, default=0.05, help="seconds between polls")
    parser.add_argument(
        "--workers", default="1,2", help="labs worker concurrencies, one series each"
    )
    parser.add_argument("--web-workers", type=int, default=2, help="gunicorn sync workers")
    parser.add_argument("--port", type=int, default=8776)
    parser.add_argument("--give-up", type=float, default=120.0, help="seconds per grading")
    parser.add_argument(
        "--breakdown", type=int, default=0, metavar="N", help="time N gradings phase by phase"
    )
    parser.add_argument(
        "--breakdown-only", action="store_true", help="the breakdown alone, no series"
    )
    parser.add_argument(
        "--flood",
        action="store_true",
        help="instead of the series: one learner floods, another's p95 (benchmarks.labs_flood)",
    )
    parser.add_argument("--quiet", type=int, default=20, help="--flood: gradings on a quiet queue")
    args = parser.parse_args(argv)
    args.workers = [int(n) for n in str(args.workers).split(",") if n.strip()]
    return args


def setup(args: argparse.Namespace) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studyapp.settings")
    if not os.environ.get("REDIS_URL"):
        sys.exit("bench_labs needs Redis as the broker: set REDIS_URL=redis://...")
    from benchmarks.pg import ensure_database

    ensure_database("bench_labs")
    import django

    django.setup()
    from django.core.management import call_command

    from labs.catalogue import LABS

    if args.lab not in {*LABS, "mixed", "wrong"}:
        sys.exit(f"--lab: expected one of {', '.join(LABS)}, mixed or wrong; got {args.lab!r}")
    call_command("migrate", verbosity=0)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    setup(args)
    from labs.sandbox import unavailable

    reason = unavailable()
    if reason is not None:
        sys.exit(f"no sandbox starts here: {reason}")
    work = sources(args.lab, args.wrong)
    people = learners(max(args.learners, 2) if args.flood else args.learners)
    purge_labs_queue()
    print(f"loadavg at start: {loadavg()} ({os.cpu_count()} cores)")
    if args.breakdown:
        breakdown(args.breakdown, work, people[0][0])
    if args.breakdown_only:
        return
    tokens = [token for _, token in people]
    gunicorn = start_gunicorn(args.port, args.web_workers, tokens[0])
    if args.flood:
        from benchmarks.labs_flood import run_flood

        try:
            met = run_flood(args, args.port, tokens, work[0])
        finally:
            stop(gunicorn)
        sys.exit(0 if met else 1)
    try:
        all_series = [run_series(n, args.port, gunicorn, tokens, work, args) for n in args.workers]
    finally:
        stop(gunicorn)
    if not report(all_series, args, work):
        sys.exit(1)


if __name__ == "__main__":
    main()
