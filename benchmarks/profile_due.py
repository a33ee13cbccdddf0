"""Where one due-queue request's time goes, at a shape of learners x cards: cProfile.

Run against the PostgreSQL database of ``bench_load`` (reseeded to each shape asked for)::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_load \\
        .venv/bin/python -m benchmarks.profile_due --shapes 300x300,200x1000 --requests 500

For each shape it calls the WSGI application ``bench_load`` serves (production settings,
``DJANGO_DEBUG=0``, limits off) in process with the environ gunicorn would pass, for
``GET /api/v1/reviews/due/`` (a page of 20 with tags) and for the bare floor's
``GET /bench/floor/due/`` beside it; prints the mean microseconds per request of both,
each statement's mean round trip, and cProfile's top functions of the service's requests
by cumulative and by own time (``--top``). cProfile is the standard library's: nothing
to install. The profiler slows what it watches, so its times are read as shares.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import time
from collections import defaultdict

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.load_settings")
os.environ.setdefault("DJANGO_DEBUG", "0")
os.environ.setdefault("DJANGO_SECRET_KEY", "profile-due-" + "x" * 50)
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost")
os.environ.setdefault("DJANGO_SECURE_SSL_REDIRECT", "0")
for _scope in ("USER", "EXERCISE_CREATE", "EXERCISE_SUBMIT", "LOGIN", "PLAYGROUND"):
    os.environ[f"STUDY_THROTTLE_{_scope}"] = "off"

from benchmarks import bench_load  # noqa: E402  (sets Django up on the database)
from benchmarks.profile_requests import call, environ  # noqa: E402

DUE = "/api/v1/reviews/due/"
FLOOR_DUE = "/bench/floor/due/"
WARM = 50


def timed_statements(totals: dict[str, list[float]]):
    """A ``connection.execute_wrapper`` that adds each statement's time to ``totals``."""

    def wrapper(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            key = " ".join(sql.split())[:72]
            totals[key].append(time.perf_counter() - started)

    return wrapper


def seed(shape: tuple[int, int], job_options: str | None) -> None:
    """``bench_load.ensure_data`` on a connection with the jobs' statement timeout: the
    application, once loaded, gives this process's connections the requests' shorter one."""
    from django.conf import settings
    from django.db import connection

    options = settings.DATABASES["default"].setdefault("OPTIONS", {})
    served = options.get("options")
    options["options"] = job_options
    connection.close()
    try:
        bench_load.ensure_data(*shape)
    finally:
        options["options"] = served
        connection.close()


def profile_shape(application, shape: tuple[int, int], requests: int, top: int) -> None:
    from django.db import connection

    tokens = [token for _, token in bench_load.learners_with_tokens()]

    def get(path: str, i: int) -> None:
        call(application, environ("GET", path, tokens[i % len(tokens)]), 200)

    for i in range(WARM):  # compiled queries, prepared statements, imports
        get(DUE, i)
        get(FLOOR_DUE, i)
    spent = {DUE: 0.0, FLOOR_DUE: 0.0}
    for block in range(0, requests, 25):  # alternating blocks: both see the same machine
        for path in (DUE, FLOOR_DUE):
            started = time.perf_counter()
            for i in range(block, min(block + 25, requests)):
                get(path, i)
            spent[path] += time.perf_counter() - started
    statements: dict[str, list[float]] = defaultdict(list)
    with connection.execute_wrapper(timed_statements(statements)):
        for i in range(requests):
            get(DUE, i)
    profiler = cProfile.Profile()
    profiler.enable()
    for i in range(requests):
        get(DUE, i)
    profiler.disable()

    service, floor = (spent[p] / requests * 1e6 for p in (DUE, FLOOR_DUE))
    print(f"\n{shape[0]:,} learners x {shape[1]:,} cards, {requests} requests each, in process")
    print(
        f"  GET reviews/due/ {service:8.0f} µs   floor {floor:8.0f} µs   floor/service {floor / service:.2f}"
    )
    print("  statements (mean round trip, µs):")
    for sql, times in sorted(statements.items(), key=lambda kv: -sum(kv[1])):
        print(f"    {sum(times) / requests * 1e6:7.0f}  {len(times) / requests:.0f}x  {sql}")
    for order in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(top)
        print(f"\n  cProfile, top {top} by {order}:")
        print(out.getvalue().split("\n\n", 1)[-1].rstrip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", type=bench_load.parse_shapes, default=[(300, 300)])
    parser.add_argument("--requests", type=int, default=500, help="per series")
    parser.add_argument("--top", type=int, default=25, help="cProfile rows shown per order")
    args = parser.parse_args()
    from django.conf import settings

    job_options = settings.DATABASES["default"].get("OPTIONS", {}).get("options")
    from benchmarks.load_wsgi import application

    for shape in args.shapes:
        seed(shape, job_options)
        profile_shape(application, shape, args.requests, args.top)


if __name__ == "__main__":
    main()
