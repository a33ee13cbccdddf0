"""A study day of many learners, compressed: every endpoint in its share, at paced rates.

One learner's day (``DAY``): the dashboard page once, the due queue a page per 20
reviews, 40 reviews, four exercises made and answered, the statistics twice, the lab
list once, and one lab submitted (the ``softmax`` reference) and its result looked for
three times: 58 requests. The mix measures the web tier: no labs worker runs, so the
gradings it queues are dropped from the broker's ``labs`` queue after the run
(``bench_labs`` measures the grading itself). ``bench_load --mixed`` draws each request
from those shares, for learners rotating over the token learners, at each rate of
``--rates`` (requests/s, paced over ``--clients`` connections) and prints, per rate, the
sustained requests/s and each endpoint's p50/p95/p99. Latency counts from the moment a request was due to
be sent, so a server that falls behind shows it in the percentiles (no coordinated
omission). A few seconds at the first rate warm the workers first and are not counted.
The highest rate whose p95 stays under ``P95_BUDGET_MS``, over all requests and for
each endpoint with at least ``MIN_SAMPLES`` requests at that rate, is the machine's
capacity for this mix (docs/operations.md turns it into workers per learners).
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore

P95_BUDGET_MS = 100.0
MIN_SAMPLES = 20  # fewer requests than this say nothing about an endpoint's p95
WARM_SECONDS = 3.0

# One learner's study day: (endpoint, requests a day).
DAY = [
    ("GET dashboard page", 1),
    ("GET reviews/due/", 2),
    ("POST reviews/", 40),
    ("POST exercises/", 4),
    ("POST exercises/{id}/submit/", 4),
    ("GET stats/", 2),
    ("GET labs/", 1),
    ("POST labs/{slug}/submissions/", 1),
    ("GET labs/{slug}/submissions/", 3),
]
MIX_LAB = "softmax"
REQUESTS_PER_DAY = sum(n for _, n in DAY)


@dataclass
class Kind:
    name: str
    latencies: list[float] = field(default_factory=list)
    errors: int = 0

    def percentile(self, q: int) -> float:
        if len(self.latencies) < 2:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))] * 1000


def session_cookies(learner_ids: list[int]) -> dict[int, str]:
    """A logged-in session for each learner, as the log-in page leaves it."""
    users = get_user_model().objects.in_bulk(learner_ids)
    cookies = {}
    for pk, user in users.items():
        session = SessionStore()
        session[SESSION_KEY] = str(pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        cookies[pk] = f"sessionid={session.session_key}"
    return cookies


class Mix:
    """Draws the next request of the mix; the write pools are each used once."""

    def __init__(self, learners, cookies, targets, pool, seed: int = 7):
        self.learners = learners  # [(learner id, token)]
        self.cookies = cookies
        self.targets = iter(targets)  # [(token, card id)] due recall cards
        self.pool = iter(pool)  # [(token, exercise id, answers)]
        self.random = random.Random(seed)
        from labs.catalogue import LABS

        self.lab_code = LABS[MIX_LAB].reference
        self.lock = threading.Lock()
        self.names = [name for name, _ in DAY]
        self.weights = [n for _, n in DAY]
        # Draws of a write whose pool was used up, answered by the due queue instead: a
        # rate with any is not the study day's mix, and does not count as capacity.
        self.short: dict[str, int] = dict.fromkeys(self.names, 0)

    def next(self) -> tuple[str, str, str, dict[str, str], dict | None, int]:
        """(kind, method, path, headers, body, expected statuses)."""
        with self.lock:
            kind = self.random.choices(self.names, self.weights)[0]
            pk, token = self.learners[self.random.randrange(len(self.learners))]
            target = next(self.targets, None) if kind == "POST reviews/" else None
            exercise = next(self.pool, None) if kind == "POST exercises/{id}/submit/" else None
            if (kind == "POST reviews/" and target is None) or (
                kind == "POST exercises/{id}/submit/" and exercise is None
            ):
                self.short[kind] += 1
        auth = {"Authorization": f"Token {token}"}
        if kind == "GET dashboard page":
            return kind, "GET", "/", {"Cookie": self.cookies[pk]}, None, 200
        if kind == "POST reviews/" and target is not None:
            body = {"card": target[1], "result": "pass"}
            return (
                kind,
                "POST",
                "/api/v1/reviews/",
                {"Authorization": f"Token {target[0]}"},
                body,
                201,
            )
        if kind == "POST exercises/":
            body = {"kind": "attention", "params": {}}
            return kind, "POST", "/api/v1/exercises/", auth, body, 201
        if kind == "POST exercises/{id}/submit/" and exercise is not None:
            path = f"/api/v1/exercises/{exercise[1]}/submit/"
            headers = {"Authorization": f"Token {exercise[0]}"}
            return kind, "POST", path, headers, {"answers": exercise[2]}, 200
        if kind == "GET stats/":
            return kind, "GET", "/api/v1/stats/", auth, None, 200
        if kind == "GET labs/":
            return kind, "GET", "/api/v1/labs/", auth, None, 200
        if kind == "POST labs/{slug}/submissions/":
            path = f"/api/v1/labs/{MIX_LAB}/submissions/"
            # No labs worker runs, so a learner's first submission stays queued and the next
            # is refused: one submission in flight per learner (409 is the right answer).
            return kind, "POST", path, auth, {"code": self.lab_code}, (202, 409)
        if kind == "GET labs/{slug}/submissions/":
            return kind, "GET", f"/api/v1/labs/{MIX_LAB}/submissions/", auth, None, 200
        # The due queue, and what a write pool can no longer give.
        return "GET reviews/due/", "GET", "/api/v1/reviews/due/", auth, None, 200


def run_rate(port: int, clients: int, seconds: float, rate: float, mix: Mix) -> tuple[float, dict]:
    """Paced requests at ``rate`` per second for ``seconds``: (sustained rate, kinds)."""
    kinds = {name: Kind(name) for name, _ in DAY}
    lock = threading.Lock()
    interval = clients / rate
    start = time.perf_counter() + 0.05
    stop = start + seconds

    def client(n: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine: list[tuple[str, float, bool]] = []
        due_at = start + n / rate
        while due_at < stop:
            now = time.perf_counter()
            if now < due_at:
                time.sleep(due_at - now)
            kind, method, path, headers, body, expected = mix.next()
            allowed = expected if isinstance(expected, tuple) else (expected,)
            headers = {**headers, "Host": "127.0.0.1"}
            payload = None
            if body is not None:
                payload = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
            conn.request(method, path, body=payload, headers=headers)
            response = conn.getresponse()
            response.read()
            mine.append((kind, time.perf_counter() - due_at, response.status in allowed))
            due_at += interval
        conn.close()
        with lock:
            for kind, latency, ok in mine:
                kinds[kind].latencies.append(latency)
                kinds[kind].errors += not ok

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = max(time.perf_counter() - start, 1e-9)
    done = sum(len(k.latencies) for k in kinds.values())
    return done / elapsed, kinds


def report(
    rate: float, sustained: float, kinds: dict, load: str, short: dict[str, int] | None = None
) -> bool:
    """Prints one rate's table; whether the p95s stayed within the budget with the mix served."""
    overall = Kind("all", [t for k in kinds.values() for t in k.latencies])
    print(
        f"\npaced at {rate:.0f} requests/s: sustained {sustained:.1f}/s, all requests p50 "
        f"{overall.percentile(50):.1f} p95 {overall.percentile(95):.1f} p99 "
        f"{overall.percentile(99):.1f} ms, load average {load}"
    )
    print(
        f"{'endpoint':30} {'share':>6} {'requests':>9} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} errors"
    )
    within = True
    for name, per_day in DAY:
        k = kinds[name]
        print(
            f"{name:30} {per_day / REQUESTS_PER_DAY:>6.0%} {len(k.latencies):>9} "
            f"{k.percentile(50):>8.1f} {k.percentile(95):>8.1f} {k.percentile(99):>8.1f} "
            f"{k.errors:>6}"
        )
        if len(k.latencies) >= MIN_SAMPLES and not k.percentile(95) < P95_BUDGET_MS:
            within = False
    within = within and overall.percentile(95) < P95_BUDGET_MS
    print(
        f"p95 under {P95_BUDGET_MS:.0f} ms (all, and each endpoint with >= {MIN_SAMPLES} "
        f"requests): {'yes' if within else 'NO'}"
    )
    missing = {name: n for name, n in (short or {}).items() if n}
    if missing:
        said = ", ".join(f"{n} {name}" for name, n in missing.items())
        print(
            f"mix NOT served: {said} drawn with nothing left to write (no due card or exercise "
            "left), answered by the due queue instead; this rate does not count as capacity "
            "(seed more learners, or fewer --seconds or rates)"
        )
    return within and not missing


def drop_queued_gradings() -> int:
    """Empty the broker's ``labs`` queue of the gradings the mix's submissions queued."""
    from studyapp.celery import app

    with app.connection_for_write() as connection:
        return connection.default_channel.queue_purge("labs") or 0


def run_mixed(args, learners, targets, pool, load_average: Callable[[], str]) -> bool:
    cookies = session_cookies([pk for pk, _ in learners])
    mix = Mix(learners, cookies, targets, pool)
    best = None
    ok = True
    try:
        run_rate(args.port, args.clients, WARM_SECONDS, args.rates[0], mix)  # not counted
        for rate in args.rates:
            before = dict(mix.short)
            sustained, kinds = run_rate(args.port, args.clients, args.seconds, rate, mix)
            short = {name: mix.short[name] - before[name] for name in before}
            within = report(rate, sustained, kinds, load_average(), short)
            ok = ok and not any(k.errors for k in kinds.values())
            if within:
                best = sustained
    finally:
        print(f"\n{drop_queued_gradings():,} queued gradings dropped from the labs queue")
    if best is None:
        print(f"\nno rate kept the p95s under {P95_BUDGET_MS:.0f} ms")
    else:
        print(
            f"\ncapacity at p95 < {P95_BUDGET_MS:.0f} ms: {best:.0f} requests/s "
            f"({best * 3600 / REQUESTS_PER_DAY:,.0f} learner-days an hour)"
        )
    return ok
