"""Where a request's time goes: the due queue and a review submission, layer by layer.

Run against the PostgreSQL database of ``bench_load`` (seeded by it)::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_load \\
        .venv/bin/python -m benchmarks.profile_requests --requests 2000

It loads the WSGI application gunicorn serves in ``bench_load`` (production settings,
``DJANGO_DEBUG=0``, limits off unless ``--user-limit``) and calls it in process, with
the environ gunicorn's sync worker would pass, so what it measures is the whole request
path less the HTTP parsing. For each endpoint it prints the mean microseconds per
request spent in

* each middleware, its own share (a timing probe sits between every two of them);
* the ``process_view`` hooks, one by one;
* the view, split into DRF's authentication, permissions, throttles, content
  negotiation, the handler (the service, the ORM and the database), rendering, and
  the database itself (each statement's round trip, timed at the cursor);

and the same work served by the bare floor (``benchmarks.floor``), in alternating blocks
of 25 requests so both see the same machine. ``--cprofile
FILE`` also writes cProfile's top functions (by own time) to ``FILE``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import time
from collections import defaultdict

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.load_settings")
os.environ.setdefault("DJANGO_DEBUG", "0")
os.environ.setdefault("DJANGO_SECRET_KEY", "profile-requests-" + "x" * 50)
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost")
os.environ.setdefault("DJANGO_SECURE_SSL_REDIRECT", "0")

TIMES: dict[str, float] = defaultdict(float)
PHASE = ["handler"]  # the DRF step running now, to which a statement's time belongs


class Probe:
    """A middleware that only times what is inside it; ``settings.MIDDLEWARE`` gets one
    before every middleware and one innermost."""

    count = 0

    def __init__(self, get_response):
        self.get_response = get_response
        self.index = Probe.count
        Probe.count += 1

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        TIMES[f"probe {self.index}"] += time.perf_counter() - started
        return response


def _timed(name: str, func):
    def run(*args, **kwargs):
        PHASE.append(name)
        started = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            TIMES[name] += time.perf_counter() - started
            PHASE.pop()

    return run


def _instrument(middleware: list[str]):
    """Probes between the middleware, and timers on DRF's steps; the settings' list."""
    from rest_framework.views import APIView

    for method in (
        "perform_authentication",
        "check_permissions",
        "check_throttles",
        "perform_content_negotiation",
        "finalize_response",
    ):
        setattr(APIView, method, _timed(f"drf {method}", getattr(APIView, method)))
    from rest_framework.response import Response

    Response.rendered_content = property(  # type: ignore[method-assign,assignment]
        _timed("render", Response.rendered_content.fget)
    )
    probed = []
    for name in middleware:
        probed += ["benchmarks.profile_requests.Probe", name]
    return [*probed, "benchmarks.profile_requests.Probe"]


def _db_timer(execute, sql, params, many, context):
    started = time.perf_counter()
    try:
        return execute(sql, params, many, context)
    finally:
        spent = time.perf_counter() - started
        TIMES["database"] += spent
        TIMES[f"database in {PHASE[-1]}"] += spent
        TIMES["statements"] += 1


def environ(method: str, path: str, token: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else b""
    env = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1",
        "HTTP_AUTHORIZATION": f"Token {token}",
        "wsgi.input": io.BytesIO(data),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }
    if body is not None:
        env["CONTENT_TYPE"] = "application/json"
        env["CONTENT_LENGTH"] = str(len(data))
    return env


def call(app, env: dict, expected: int) -> None:
    statuses = []
    chunks = app(env, lambda status, headers, exc_info=None: statuses.append(status))
    b"".join(chunks)
    if hasattr(chunks, "close"):
        chunks.close()
    if not statuses[0].startswith(str(expected)):
        raise SystemExit(f"{env['REQUEST_METHOD']} {env['PATH_INFO']}: {statuses[0]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000, help="per endpoint")
    parser.add_argument("--user-limit", action="store_true")
    parser.add_argument("--cprofile", help="write cProfile's top functions here")
    args = parser.parse_args()
    for scope in ("USER", "EXERCISE_CREATE", "EXERCISE_SUBMIT", "LOGIN", "PLAYGROUND"):
        if not (args.user_limit and scope == "USER"):
            os.environ[f"STUDY_THROTTLE_{scope}"] = "off"

    from django.conf import settings
    from django.db import connection

    import benchmarks.profile_requests as probes  # what settings.MIDDLEWARE imports
    from benchmarks import bench_load  # sets Django up on the database

    probes.TIMES = TIMES  # run as __main__: one dict for both copies of the module
    names = list(settings.MIDDLEWARE)
    settings.MIDDLEWARE = _instrument(names)
    from benchmarks.load_wsgi import application
    from studyapp.wsgi import application as handler

    # Django calls the process_view hooks from this list, innermost handler first.
    handler._view_middleware = [
        _timed(f"hook {hook.__self__.__class__.__name__}.process_view", hook)
        for hook in handler._view_middleware
    ]

    learners = bench_load.learners_with_tokens()
    tokens = [token for _, token in learners]
    targets = bench_load.review_targets(learners, 4 * args.requests + 200)
    if len(targets) < 4 * args.requests + 200:
        raise SystemExit(f"only {len(targets)} due recall cards: seed more or ask fewer requests")
    service_targets, floor_targets = iter(targets[0::2]), iter(targets[1::2])

    endpoints = [
        (
            "GET reviews/due/",
            lambda i: environ("GET", "/api/v1/reviews/due/", tokens[i % len(tokens)]),
            lambda i: environ("GET", "/bench/floor/due/", tokens[i % len(tokens)]),
            200,
        ),
        (
            "POST reviews/",
            lambda i: _review(next(service_targets), "/api/v1/reviews/"),
            lambda i: _review(next(floor_targets), "/bench/floor/reviews/"),
            201,
        ),
    ]
    profiler = cProfile.Profile() if args.cprofile else None
    with connection.execute_wrapper(_db_timer):
        for endpoint in endpoints:
            measure(application, endpoint, names, args.requests, profiler)
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(40)
        with open(args.cprofile, "w") as f:
            f.write(out.getvalue())
        print(f"\ncProfile's top functions by own time: {args.cprofile}")


def measure(application, endpoint, names: list[str], n: int, profiler) -> None:
    """Times ``n`` requests of the service and ``n`` of the floor, and prints the split."""
    title, service_env, floor_env, expected = endpoint
    for i in range(50):  # warm: compiled queries, prepared statements, imports
        call(application, service_env(i), expected)
        call(application, floor_env(i), expected)
    TIMES.clear()
    service_total = floor_total = 0.0
    measured: dict[str, float] = defaultdict(float)
    for block in range(50, 50 + n, 25):  # alternating blocks: both see the same machine
        stop = min(block + 25, 50 + n)
        TIMES.clear()
        started = time.perf_counter()
        for i in range(block, stop):
            call(application, service_env(i), expected)
        service_total += time.perf_counter() - started
        for key, value in TIMES.items():
            measured[key] += value
        started = time.perf_counter()
        for i in range(block, stop):
            call(application, floor_env(i), expected)
        floor_total += time.perf_counter() - started
    print_breakdown(title, names, measured, service_total, floor_total, n)
    if profiler:  # a pass of its own: the profiler slows what it watches
        profiler.enable()
        for i in range(50 + n, 50 + 2 * n):
            call(application, service_env(i), expected)
        profiler.disable()


def _review(target: tuple[str, int], path: str) -> dict:
    return environ("POST", path, target[0], {"card": target[1], "result": "pass"})


def print_breakdown(title, names, times, service_total, floor_total, n) -> None:
    def us(seconds: float) -> str:
        return f"{seconds / n * 1e6:>8.0f}"

    print(f"\n{title}: {n} requests in process, µs per request (probes included)")
    print(f"  {'whole request (WSGI call)':44} {us(service_total)}")
    print(f"  {'bare floor, same work':44} {us(floor_total)}")
    # Django builds the chain from the innermost middleware out: probe 0 is innermost.
    inclusive = [times.get(f"probe {len(names) - i}", 0.0) for i in range(len(names) + 1)]
    for i, name in enumerate(names):
        print(f"  middleware {name.rsplit('.', 1)[-1]:33} {us(inclusive[i] - inclusive[i + 1])}")
    inner = inclusive[-1]
    print(f"  {'inside the middleware (URL, hooks, view)':44} {us(inner)}")
    hooks = sorted(k for k in times if k.startswith("hook "))
    for key in hooks:
        print(f"    {key:42} {us(times[key])}")
    drf = [k for k in times if k.startswith("drf ")]
    for key in drf:
        own = times[key] - times.get(f"database in {key}", 0.0)
        print(f"    {key:42} {us(own)}")
    print(f"    {'rendering (JSON)':42} {us(times.get('render', 0.0))}")
    rest = inner - sum(times[k] for k in hooks + drf) - times.get("render", 0.0)
    rest -= times.get("database in handler", 0.0)
    print(f"    {'the rest: URL, view, service, ORM':42} {us(rest)}")
    print(f"    {'database, every statement (round trips)':42} {us(times.get('database', 0.0))}")
    for key in sorted(k for k in times if k.startswith("database in ")):
        print(f"      {key:40} {us(times[key])}")
    print(f"    {'statements per request':42} {times.get('statements', 0) / n:>8.1f}")


if __name__ == "__main__":
    main()
