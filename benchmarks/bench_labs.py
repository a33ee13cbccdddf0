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
import os
import statistics
import sys
from collections.abc import Sequence

from benchmarks.labs_breakdown import breakdown
from benchmarks.labs_common import (
    REPO,
    Series,
    Source,
    learners,
    loadavg,
    percentile,
    purge_labs_queue,
    run_series,
    sources,
    start_gunicorn,
    stop,
    verdicts,
)
from benchmarks.labs_flood import run_flood

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
