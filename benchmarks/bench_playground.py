"""Memory and latency of maximum playground requests through the whole Django stack.

    .venv/bin/python -m benchmarks.bench_playground [--parallel 12]

Runs in one process on a throw-away SQLite file. Prints the resident memory (RSS)
kept after sequential maximum requests, the peak while ``--parallel`` of them
arrive at once, and how long a small request takes meanwhile; each with the
playground's slot limit and memory release on, then off (the state before them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE / 2**20


def setup() -> str:
    folder = tempfile.mkdtemp(prefix="bench-playground-")
    os.environ["DATABASE_URL"] = f"sqlite:///{folder}/db.sqlite3"
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studyapp.settings")
    for scope in ("PLAYGROUND", "USER"):
        os.environ[f"STUDY_THROTTLE_{scope}"] = "off"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    user = get_user_model().objects.create_user("bench", password="bench-pass-123")
    return Token.objects.create(user=user).key


def body(n: int) -> bytes:
    import numpy as np

    rng = np.random.default_rng(0)
    mats = {name: (rng.standard_normal((n, n)) / 7).tolist() for name in ("X", "W_Q", "W_K", "W_V")}
    mats["mask"] = "causal"
    return json.dumps(mats).encode()


def run(token: str, payload: bytes, parallel: int, guarded: bool) -> dict:
    from django.test import Client

    from studyapp import middleware

    libc, slots = middleware._libc, middleware._playground_slots
    if not guarded:
        middleware._libc = None
        middleware._playground_slots = threading.BoundedSemaphore(10_000)
    headers = {"HTTP_AUTHORIZATION": f"Token {token}"}

    def big() -> int:
        return (
            Client()
            .post("/api/v1/attention/", payload, content_type="application/json", **headers)
            .status_code
        )

    try:
        start_rss = rss_mib()
        for _ in range(5):
            assert big() == 200
        after_sequential = rss_mib()

        peak = [rss_mib()]
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], rss_mib())
                time.sleep(0.01)

        sampler = threading.Thread(target=sample)
        sampler.start()
        statuses: list[int] = []
        threads = [threading.Thread(target=lambda: statuses.append(big())) for _ in range(parallel)]
        for thread in threads:
            thread.start()
        time.sleep(0.2)
        small = []
        for _ in range(5):
            t0 = time.perf_counter()
            Client().get("/api/v1/me/", **headers)
            small.append(time.perf_counter() - t0)
        for thread in threads:
            thread.join()
        stop.set()
        sampler.join()
        time.sleep(0.1)
        return {
            "start": start_rss,
            "after_sequential": after_sequential,
            "peak_parallel": peak[0],
            "after_parallel": rss_mib(),
            "small_median_ms": sorted(small)[len(small) // 2] * 1000,
            "statuses": sorted(set(statuses)),
        }
    finally:
        middleware._libc, middleware._playground_slots = libc, slots


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--parallel", type=int, default=12)
    parser.add_argument("--tokens", type=int, default=256)
    args = parser.parse_args()
    token = setup()
    payload = body(args.tokens)
    print(f"request body: {len(payload) / 1e6:.2f} MB ({args.tokens} tokens, X and three W's)")
    print(
        f"{'':10} {'start':>8} {'after 5':>8} {'peak':>8} {'after':>8} {'/me/ median':>12}  statuses"
    )
    for guarded in (True, False):
        result = run(token, payload, args.parallel, guarded)
        label = "guarded" if guarded else "unguarded"
        print(
            f"{label:10} {result['start']:7.0f}M {result['after_sequential']:7.0f}M "
            f"{result['peak_parallel']:7.0f}M {result['after_parallel']:7.0f}M "
            f"{result['small_median_ms']:10.0f}ms  {result['statuses']}"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
