"""/healthz and a learner's review while slow clients hold connections, with nginx in front
of gunicorn and without it.

Starts the production stack of tests/production_stack.py (collectstatic, DEBUG off, the
compose file's gunicorn command with 2 sync workers, nginx from deploy/nginx/), opens N
connections that each send a request body one byte a second short of its
Content-Length, and meanwhile times ``--probes`` requests of /healthz and as many
reviews (the due page, then a pass) one after another. A probe that takes longer than
``--timeout`` is counted as timed out and ends its series. Needs nginx for the proxy
mode. Prints p50, p95 and max in milliseconds.

    .venv/bin/python -m benchmarks.bench_proxy --trickle 100 --probes 20
"""

from __future__ import annotations

import argparse

import numpy as np

from tests.production_stack import Trickle, request, running_stack, wait_for


def _series(probe, count: int, timeout: float) -> tuple[list[float], int]:
    """Seconds of each probe; a probe past ``timeout`` ends the series (counted)."""
    seconds: list[float] = []
    for _ in range(count):
        try:
            seconds.append(probe(timeout))
        except TimeoutError:
            return seconds, 1
    return seconds, 0


def _figures(name: str, seconds: list[float], timed_out: int, timeout: float) -> str:
    if not seconds:
        return f"  {name:<8} no answer within {timeout:.0f} s"
    ms = np.array(seconds) * 1000
    text = (
        f"  {name:<8} p50 {np.percentile(ms, 50):8.1f} ms   p95 {np.percentile(ms, 95):8.1f} ms"
        f"   max {ms.max():8.1f} ms   ({len(ms)} answered"
    )
    return text + (f", then one past {timeout:.0f} s)" if timed_out else ")")


def measure(*, proxy: bool, trickle: int, probes: int, timeout: float) -> list[str]:
    with running_stack(proxy=proxy, STUDY_PROXY_CONN_PER_CLIENT="1000") as stack:
        # A socket's timeout is a TimeoutError, which ends the series.
        def healthz(limit: float) -> float:
            status, _, took = request(stack.port, "GET", "/healthz", timeout=limit)
            assert status == 200, status
            return took

        def review(limit: float) -> float:
            status, took = stack.review_once(timeout=limit)
            assert status == 201, status
            return took

        lines = [f"{'nginx in front' if proxy else 'gunicorn alone'}, {trickle} trickling:"]
        with Trickle(stack.port, trickle) as held:
            wait_for(lambda: held.sent_rounds >= 2, what="the trickle to be under way")
            lines.append(_figures("healthz", *_series(healthz, probes, timeout), timeout))
            lines.append(_figures("review", *_series(review, probes, timeout), timeout))
        return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trickle", type=int, default=100, help="slow connections held")
    parser.add_argument("--probes", type=int, default=20, help="requests timed per series")
    parser.add_argument("--timeout", type=float, default=40.0, help="seconds a probe may take")
    parser.add_argument("--modes", default="proxy,direct", help="proxy, direct or both")
    args = parser.parse_args()
    for mode in args.modes.split(","):
        lines = measure(
            proxy=mode == "proxy", trickle=args.trickle, probes=args.probes, timeout=args.timeout
        )
        print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
