"""What a paused Redis costs each request's rate-limit check, with and without the breaker.

    .venv/bin/python -m benchmarks.bench_cache_faults [--requests 40] [--timeout 0.5]

A paused Redis is a socket that accepts connections and never answers. Each row is
one cache configured as the settings configure it (``STUDY_REDIS_TIMEOUT`` socket
timeouts), pointed at such a socket: Django's plain ``RedisCache`` pool, then the
``CircuitBreakerPool`` of ``studyapp.common.cache``. Every "request" makes the one
Redis round trip a throttle check makes; the figures are the mean and worst time a
request waited (median, mean, worst) and the implied requests per second of one
process over the run (the breaker's one timeout included).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import sys
import time
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--timeout", type=float, default=0.5, help="socket timeout, seconds")
    return parser.parse_args(argv)


def _paused_redis() -> tuple[socket.socket, str]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1024)  # the kernel completes the handshakes; nobody reads
    return server, f"redis://127.0.0.1:{server.getsockname()[1]}/0"


def _run(cache, requests: int) -> list[float]:
    waits = []
    for _ in range(requests):
        began = time.perf_counter()
        with contextlib.suppress(Exception):  # the throttle fails open on any cache error
            cache.get("throttle:user:1")
        waits.append(time.perf_counter() - began)
    return waits


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studyapp.settings")
    import django

    django.setup()
    from django.core.cache.backends.redis import RedisCache

    server, location = _paused_redis()
    base = {"socket_timeout": args.timeout, "socket_connect_timeout": args.timeout}
    rows = [
        ("RedisCache (no breaker)", base),
        (
            "CircuitBreakerPool, 5 s cooldown",
            {
                **base,
                "pool_class": "studyapp.common.cache.CircuitBreakerPool",
                "circuit_cooldown": 5,
            },
        ),
    ]
    print(f"Paused Redis, socket timeout {args.timeout:g} s, {args.requests} requests per row")
    print(f"{'pool':<36} {'median ms':>9} {'mean ms':>9} {'worst ms':>9} {'req/s':>9}")
    try:
        for name, options in rows:
            cache = RedisCache(location, {"OPTIONS": options})
            waits = _run(cache, args.requests)
            mean = statistics.fmean(waits)
            median = statistics.median(waits)
            print(
                f"{name:<36} {median * 1000:>9.3f} {mean * 1000:>9.2f} "
                f"{max(waits) * 1000:>9.1f} {1 / mean:>9.1f}"
            )
    finally:
        server.close()


if __name__ == "__main__":
    main()
