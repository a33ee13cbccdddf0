"""The flood scenario of ``bench_labs`` (``--flood``): one learner floods, another waits.

One learner submits code that sleeps until the run's wall limit, again and again as fast
as the API lets it (a 409 while one of its submissions is in flight, then at once
again), for ``--seconds``. Meanwhile another learner submits the lab's reference one at
a time and waits for each result. Before the flood, the same learner grades on a quiet
queue. It prints both p95s from submit to result, the ratio of the flooded p95 to the
quiet one, what the flooder got (202s, 409s, gradings) and the target: the flooded p95
at most 2 s. Exit status 1 when a grading went wrong or the target is missed.

Without the rule of one submission in flight per learner, ten sleeping submissions a
minute (the default ``lab_submit`` budget) took 100 of the 120 worker-seconds a minute
at concurrency 2, and the other learner's grading waited 50.3 s.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

TARGET_FLOODED_P95_SECONDS = 2.0
SLEEPER = "import time\n\n\ndef {function}(*args, **kwargs):\n    time.sleep(3600)\n"


@dataclass
class Flooder:
    accepted: int = 0
    refused: int = 0
    other: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)


def flood(client, slug: str, function: str, flooder: Flooder) -> None:
    """Submit sleeping code until told to stop; a 409 is answered by submitting again."""
    code = SLEEPER.format(function=function)
    while not flooder.stop.is_set():
        status, body = client.request("POST", f"/api/v1/labs/{slug}/submissions/", {"code": code})
        if status == 202:
            flooder.accepted += 1
        elif status == 409:
            flooder.refused += 1
            time.sleep(0.05)  # as fast as a client that ignores Retry-After
        else:
            flooder.other.append(f"{status} {str(body)[:120]}")
            time.sleep(0.5)


def timed_gradings(client, source, args, count: int | None, until: float | None) -> tuple:
    """The victim's gradings one after another: (latencies, errors)."""
    from benchmarks.labs_common import grade_once

    latencies: list[float] = []
    errors: list[str] = []
    while (count is not None and len(latencies) + len(errors) < count) or (
        until is not None and time.monotonic() < until
    ):
        latency, _, _, error = grade_once(client, source, args.poll, args.give_up)
        if error:
            errors.append(error)
        else:
            latencies.append(latency)
    return latencies, errors


def run_flood(args, port: int, tokens: list[str], source) -> bool:
    """The quiet series, then the flooded one, on one labs worker of the last
    ``--workers`` concurrency; prints the figures and returns whether the target holds."""
    from benchmarks.labs_common import Client, loadavg, percentile, start_worker, stop

    concurrency = args.workers[-1]
    function = _first_function(source.slug) or "main"
    worker = start_worker(concurrency)
    victim = Client(port, tokens[1])
    flooder = Flooder()
    try:
        timed_gradings(victim, source, args, count=concurrency, until=None)  # warm-up
        load_quiet = loadavg()
        quiet, quiet_errors = timed_gradings(victim, source, args, count=args.quiet, until=None)
        thread = threading.Thread(
            target=flood, args=(Client(port, tokens[0]), source.slug, function, flooder)
        )
        thread.start()
        time.sleep(1.0)  # the flooder's first sleeper is running
        load_before = loadavg()
        flooded, flooded_errors = timed_gradings(
            victim, source, args, count=None, until=time.monotonic() + args.seconds
        )
        load_after = loadavg()
        flooder.stop.set()
        thread.join()
    finally:
        stop(worker)
    quiet_p95, flooded_p95 = percentile(quiet, 95), percentile(flooded, 95)
    print(
        f"\nflood: labs worker concurrency {concurrency}; one learner submits code that "
        f"sleeps to the wall limit for {args.seconds:g} s, as fast as it is let; another "
        f"submits {source.slug} {source.name} one at a time"
    )
    print(f"  {'series':10} {'gradings':>8} {'p50 s':>6} {'p95 s':>6} {'max s':>6}  loadavg")
    for name, values, load in (
        ("quiet", quiet, load_quiet),
        ("flooded", flooded, f"{load_before} -> {load_after}"),
    ):
        print(
            f"  {name:10} {len(values):>8} {percentile(values, 50):>6.2f} "
            f"{percentile(values, 95):>6.2f} {max(values, default=float('nan')):>6.2f}  {load}"
        )
    print(
        f"  the flooder: {flooder.accepted} accepted (202), {flooder.refused} refused (409), "
        f"{len(flooder.other)} other answers {flooder.other[:2]}"
    )
    ratio = flooded_p95 / quiet_p95 if quiet_p95 else float("nan")
    met = flooded_p95 <= TARGET_FLOODED_P95_SECONDS
    print(f"  flooded p95 / quiet p95: {ratio:.2f}")
    print(
        f"  target: flooded p95 <= {TARGET_FLOODED_P95_SECONDS:g} s: {flooded_p95:.2f} s, "
        f"ratio {flooded_p95 / TARGET_FLOODED_P95_SECONDS:.2f}  {'PASS' if met else 'MISS'}"
    )
    errors = quiet_errors + flooded_errors
    for error in errors[:5]:
        print(f"  error: {error}")
    return met and not errors


def _first_function(slug: str) -> str | None:
    """The name of the first function the lab calls (what the sleeper defines)."""
    import numpy as np

    from labs.catalogue import LABS

    calls = list(LABS[slug].calls(np.random.default_rng(0)))
    return calls[0].function if calls else None
