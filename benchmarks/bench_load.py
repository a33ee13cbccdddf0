# One module on purpose: one load benchmark, its shapes, series and report, read top to bottom.
"""Load over HTTP: gunicorn on production settings, requests/s and p50/p95/p99 per endpoint.

Run against PostgreSQL (creates and migrates the database, and seeds ``manage.py
seed_load`` data, when missing)::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_scale \\
        .venv/bin/python -m benchmarks.bench_load --learners 1000 --cards 1000

It starts ``gunicorn`` (``--workers`` sync workers, ``DJANGO_DEBUG=0``) serving the
service plus the hand-written baseline of ``benchmarks/baseline.py`` and the bare WSGI
floor of ``benchmarks/floor.py`` (``benchmarks/load_wsgi.py``), then drives each series
with ``--clients`` keep-alive connections for ``--seconds``, tokens rotating over 100
learners:

* ``baseline``: GET ``/bench/baseline-due/`` (a hand-written Django view: token, today,
  count, page);
* ``floor due``: GET ``/bench/floor/due/`` (no framework: psycopg, hand-written SQL,
  ``json.dumps``);
* ``due``: GET ``/api/v1/reviews/due/`` (page of 20);
* ``floor review``: POST ``/bench/floor/reviews/`` (the same conditional UPDATE and log
  INSERT as ``reviews/``, bare);
* ``review``: POST ``/api/v1/reviews/`` (a due recall card, ``pass``; each used once);
* ``exercise create``: POST ``/api/v1/exercises/`` (a default ``attention`` exercise);
* ``exercise submit``: POST ``/api/v1/exercises/{id}/submit/`` (a wrong answer, checked).

Rate limits are off, as the series would reach the per-learner ones; ``--user-limit``
keeps the default limit of scope ``user`` (every API series but exercise create and
submit) on, counted in Redis when ``REDIS_URL`` is set.

The baseline, the floor and the due queue alternate in rounds so all see the same
machine, and so do the two review series. The ratios printed: the due queue to the
baseline (target 0.8), the due queue to the floor and a review to the floor's review
(target 0.5 each). Exit status 1 when a request failed, a ratio misses its target or a
review series ran out of due cards before its time (its ratio is then not printed).

``--shapes 300x300,200x1000`` runs every series at each shape of learners x cards in
turn (the same gunicorn; the database reseeded to each shape) and ends with the ratios
of all of them. Each review moves a due card days ahead, so every run uses up due cards:
the data is reseeded (``seed_load --reset``) whenever it is not the shape asked for or
holds fewer due recall cards than a run can use (``review_targets_wanted``).

``--mixed`` runs a compressed study day instead (``benchmarks/load_mix.py``): every
endpoint a learner uses in its share of a day, paced at each of ``--rates`` requests/s,
printing the sustained rate and each endpoint's p50/p95/p99 per rate.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import threading
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studyapp.settings")

from benchmarks.load_client import Series, from_pool, rotating, start_gunicorn, wait_ready
from benchmarks.pg import ensure_database

ensure_database("bench_load")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.utils import timezone  # noqa: E402
from rest_framework.authtoken.models import Token  # noqa: E402

from cards.management.commands.seed_load import synthetic_decks, synthetic_users  # noqa: E402
from cards.models import Card, ReviewState  # noqa: E402
from exercises.services import exercise_create  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TOKENS = 100
TARGET_RATIO = 0.8
FLOOR_TARGET_RATIO = 0.5
# Requests/s the two review series are assumed to reach at most together, to size the
# due cards a run may use: the floor's fastest rate measured (about 1,000/s on a quiet
# machine) and the service's beside it, with room to spare.
REVIEW_RATE_BOUND = 2000


# --- data ---------------------------------------------------------------------------


def ensure_data(learners: int, cards: int, *, targets_wanted: int = 0) -> None:
    """Migrate, collect the static files once, and hold the synthetic data at exactly
    ``learners`` x ``cards`` with at least ``targets_wanted`` due recall cards to review,
    reseeding from scratch when it is not."""
    call_command("migrate", verbosity=0)
    # The pages (the mixed profile's dashboard) name their files through the manifest.
    if not (Path(settings.STATIC_ROOT) / "staticfiles.json").exists():
        env = {**os.environ, "DJANGO_DEBUG": "0"}
        env.setdefault("DJANGO_SECRET_KEY", "bench-load-" + "x" * 50)
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
            cwd=REPO,
            env=env,
            check=True,
        )
    have = (synthetic_users().count(), Card.objects.filter(deck__in=synthetic_decks()).count())
    if have == (learners, cards):
        left = len(review_targets(reviewing_learners(), targets_wanted))
        if left >= targets_wanted:
            return
        print(f"{left:,} due recall cards left, {targets_wanted:,} wanted: reseeding", flush=True)
    print(f"seeding {learners:,} learners x {cards:,} cards ...", flush=True)
    call_command("seed_load", learners=learners, cards=cards, reset=True, verbosity=0)


def review_targets_wanted(args) -> int:
    """Due recall cards a run's review series may use at ``REVIEW_RATE_BOUND``: each
    round runs the two for half of ``--seconds`` each."""
    return int(REVIEW_RATE_BOUND * args.seconds / 2 * args.rounds)


def learners_with_tokens() -> list[tuple[int, str]]:
    users = list(synthetic_users().order_by("id")[:TOKENS])
    return [(user.pk, Token.objects.get_or_create(user=user)[0].key) for user in users]


def reviewing_learners() -> list[tuple[int, str]]:
    """Every synthetic learner with a token: the review series draw due cards from all of
    them (the due page's series rotate over ``TOKENS`` of them)."""
    users = list(synthetic_users().order_by("id"))
    return [(user.pk, Token.objects.get_or_create(user=user)[0].key) for user in users]


def review_targets(learners: list[tuple[int, str]], limit: int) -> list[tuple[str, int]]:
    """Due recall cards of the token learners, each reviewed at most once by the run."""
    today = timezone.now().date() - dt.timedelta(days=1)  # every synthetic learner's today
    token_of = dict(learners)
    rows = (
        ReviewState.objects.filter(
            learner_id__in=list(token_of),
            due_on__lte=today,
            card__kind=Card.Kind.RECALL,
            card__is_active=True,
        )
        .order_by("card_id", "learner_id")
        .values_list("learner_id", "card_id")[:limit]
    )
    return [(token_of[learner], card) for learner, card in rows]


def exercise_pool(learners: list[tuple[int, str]], size: int) -> list[tuple[str, int, dict]]:
    """Fresh exercises owned by the token learners, with a wrong answer of the right shapes."""
    from django.contrib.auth import get_user_model

    users = get_user_model().objects.in_bulk([pk for pk, _ in learners])
    token_of = dict(learners)
    built = [
        exercise_create(owner=users[learners[i % len(learners)][0]], kind="attention", params={})
        for i in range(size)
    ]
    pool = []
    for exercise in built:
        answers = {ask["name"]: zeros(ask["shape"]) for ask in exercise.asks}
        pool.append((token_of[exercise.owner_id], exercise.pk, answers))
    return pool


def zeros(shape: list[int]):
    if not shape:
        return 0.0
    return [zeros(shape[1:]) for _ in range(shape[0])]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=1000)
    parser.add_argument("--cards", type=int, default=1000)
    parser.add_argument(
        "--shapes",
        type=parse_shapes,
        help="learners x cards to run in turn, e.g. 300x300,200x1000 (instead of "
        "--learners and --cards)",
    )
    parser.add_argument("--seconds", type=float, default=8.0, help="per series (and per round)")
    parser.add_argument("--rounds", type=int, default=2, help="baseline/due alternations")
    parser.add_argument("--clients", type=int, default=4, help="concurrent connections")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--exercises", type=int, default=2000, help="exercises made for the submit series"
    )
    parser.add_argument(
        "--user-limit",
        action="store_true",
        help="keep the default per-learner limit (scope user) on: its cost is in every API series",
    )
    parser.add_argument(
        "--mixed",
        action="store_true",
        help="run the compressed study day of benchmarks/load_mix.py instead of the series",
    )
    parser.add_argument(
        "--rates",
        type=lambda text: [float(r) for r in text.split(",")],
        default=[50.0, 100.0, 150.0, 200.0],
        help="--mixed: the paced rates, requests/s, comma-separated",
    )
    return parser.parse_args()


def parse_shapes(text: str) -> list[tuple[int, int]]:
    """``300x300,200x1000`` as ``[(300, 300), (200, 1000)]``."""
    shapes = []
    for part in text.split(","):
        learners, _, cards = part.strip().lower().partition("x")
        if not (learners.isdigit() and cards.isdigit()) or int(learners) < 1 or int(cards) < 1:
            raise argparse.ArgumentTypeError(
                f"expected LEARNERSxCARDS, e.g. 200x1000, got {part!r}"
            )
        shapes.append((int(learners), int(cards)))
    return shapes


class Pool:
    """The calls of one series, made from a ``supply`` of items that series may share with
    another; remembers whether the supply ran out, since a series stopped for want of due
    cards ran for less than its time and its rate is not comparable."""

    def __init__(self, supply, make):
        self.ran_out = False
        self.supply = supply
        self.make = make

    def __call__(self, n: int):
        item = self.supply()
        if item is None:
            self.ran_out = True
            return None
        return self.make(item)


def supply_of(items: list):
    """Hands out each of ``items`` once, to any of the client threads, then None."""
    it = iter(items)
    lock = threading.Lock()

    def take():
        with lock:
            return next(it, None)

    return take


def run_series(args, tokens: list[str], targets: list, pool: list) -> list[Series]:
    """Every series against the running server: baseline, floor and due queue alternating
    in rounds, the floor's review and the service's alternating, then the exercises."""
    baseline = Series("GET baseline (hand-written view)", 200)
    floor_due = Series("GET floor due (bare WSGI)", 200)
    due = Series("GET reviews/due/", 200)
    for _ in range(args.rounds):
        baseline.run(
            args.port, args.clients, args.seconds, rotating(tokens, "GET", "/bench/baseline-due/")
        )
        floor_due.run(
            args.port, args.clients, args.seconds, rotating(tokens, "GET", "/bench/floor/due/")
        )
        due.run(
            args.port, args.clients, args.seconds, rotating(tokens, "GET", "/api/v1/reviews/due/")
        )
    floor_review = Series("POST floor reviews (bare WSGI)", 201)
    review = Series("POST reviews/", 201)
    # One pool of due cards for the two, each card drawn once: neither reviews a card the
    # other has moved, and the faster series does not run out before the slower one.
    shared = supply_of(targets)
    floor_calls = Pool(shared, lambda t: ("POST", "/bench/floor/reviews/", t[0], review_body(t)))
    service_calls = Pool(shared, lambda t: ("POST", "/api/v1/reviews/", t[0], review_body(t)))
    for _ in range(args.rounds):
        floor_review.run(args.port, args.clients, args.seconds / 2, floor_calls)
        review.run(args.port, args.clients, args.seconds / 2, service_calls)
    floor_review.ran_out, review.ran_out = floor_calls.ran_out, service_calls.ran_out
    create = Series("POST exercises/", 201)
    tokens_iter = rotating(tokens, "POST", "/api/v1/exercises/")
    create.run(
        args.port,
        args.clients,
        args.seconds,
        lambda n: (*tokens_iter(n), {"kind": "attention", "params": {}}),
    )
    submit = Series("POST exercises/{id}/submit/", 200)
    submit.run(
        args.port,
        args.clients,
        args.seconds,
        from_pool(
            pool,
            lambda e: ("POST", f"/api/v1/exercises/{e[1]}/submit/", e[0], {"answers": e[2]}),
        ),
    )
    return [baseline, floor_due, due, floor_review, review, create, submit]


def review_body(target: tuple[str, int]) -> dict:
    return {"card": target[1], "result": "pass"}


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def report(args, series: list[Series], tokens: list[str], shape: tuple[int, int]) -> dict:
    """Prints the table and the ratios to the baseline and the floor; returns the ratios
    (None for one not measured) and whether all went well (``ok``)."""
    by_name = {s.name: s for s in series}
    baseline = by_name["GET baseline (hand-written view)"]
    floor_due, due = by_name["GET floor due (bare WSGI)"], by_name["GET reviews/due/"]
    floor_review, review = by_name["POST floor reviews (bare WSGI)"], by_name["POST reviews/"]
    print(
        f"\ngunicorn {args.workers} sync workers, production settings, {args.clients} clients, "
        f"{shape[0]:,} learners x {shape[1]:,} cards, tokens over {len(tokens)} learners, "
        f"per-learner limit {'on' if args.user_limit else 'off'}, load average {load_average()}"
    )
    print_table(series)
    checks = [
        ("due queue / baseline", due, baseline, TARGET_RATIO),
        ("due queue / floor", due, floor_due, FLOOR_TARGET_RATIO),
        ("review / floor review", review, floor_review, FLOOR_TARGET_RATIO),
    ]
    ok = not any(s.errors for s in series)
    ratios: dict = {}
    print()
    for label, ours, theirs, target in checks:
        short = [s.name for s in (ours, theirs) if getattr(s, "ran_out", False) or not s.rate]
        if short:
            # A series cut short by its due cards measured less than its time: no ratio.
            ratios[label] = None
            ok = False
            print(
                f"{label} requests/s: not measured ({', '.join(short)} ran out of due cards; "
                "rerun: the data is reseeded when short)"
            )
            continue
        ratio = ours.rate / theirs.rate
        ratios[label] = ratio
        ok = ok and ratio >= target
        verdict = "met" if ratio >= target else "MISSED"
        print(f"{label} requests/s: {ratio:.2f} (target >= {target}: {verdict})")
    return {"ratios": ratios, "ok": ok}


def print_summary(results: list[tuple[tuple[int, int], dict]]) -> None:
    """Every shape's ratios, one line each."""
    print("\nshape (learners x cards)   due/floor   due/baseline   review/floor")
    for (learners, cards), result in results:
        r = result["ratios"]
        cells = [
            "n/a" if r[k] is None else f"{r[k]:.2f}"
            for k in ("due queue / floor", "due queue / baseline", "review / floor review")
        ]
        print(f"{learners:>7,} x {cards:<14,} {cells[0]:>9} {cells[1]:>14} {cells[2]:>14}")


def print_table(series: list[Series]) -> None:
    print(
        f"{'series':34} {'requests':>9} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} errors"
    )
    for s in series:
        print(
            f"{s.name:34} {len(s.latencies):>9} {s.rate:>8.1f} {s.percentile(50):>8.1f} "
            f"{s.percentile(95):>8.1f} {s.percentile(99):>8.1f} {s.errors:>6}"
        )


def main() -> None:
    args = parse_args()
    if args.mixed:
        ok = run_mixed_profile(args)
    else:
        shapes = args.shapes or [(args.learners, args.cards)]
        results = []
        proc = None
        try:
            for shape in shapes:
                ensure_data(*shape, targets_wanted=review_targets_wanted(args))
                learners = learners_with_tokens()
                tokens = [token for _, token in learners]
                targets = review_targets(reviewing_learners(), review_targets_wanted(args))
                pool = exercise_pool(learners, args.exercises)
                if proc is None:
                    proc = start_gunicorn(args.port, args.workers, args.user_limit)
                wait_ready(args.port, tokens[0], proc)
                series = run_series(args, tokens, targets, pool)
                results.append((shape, report(args, series, tokens, shape)))
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)
        if len(results) > 1:
            print_summary(results)
        ok = all(result["ok"] for _, result in results)
    if not ok:
        sys.exit(1)


def run_mixed_profile(args) -> bool:
    """``--mixed``: the compressed study day of ``benchmarks/load_mix.py``, one shape."""
    from benchmarks.load_mix import run_mixed

    ensure_data(args.learners, args.cards)
    learners = learners_with_tokens()
    targets = review_targets(learners, 20_000)
    pool = exercise_pool(learners, args.exercises)
    proc = start_gunicorn(args.port, args.workers, args.user_limit)
    try:
        wait_ready(args.port, learners[0][1], proc)
        print(
            f"gunicorn {args.workers} sync workers, production settings, {args.clients} "
            f"clients, {args.learners:,} learners x {args.cards:,} cards, "
            f"learners rotating over {len(learners)}, per-learner limit "
            f"{'on' if args.user_limit else 'off'}"
        )
        return run_mixed(args, learners, targets, pool, load_average)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
