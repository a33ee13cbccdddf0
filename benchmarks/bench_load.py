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
(target 0.5 each). Exit status 1 when a request failed or a ratio misses its target.

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

from cards.management.commands.seed_load import synthetic_users  # noqa: E402
from cards.models import Card, ReviewState  # noqa: E402
from exercises.services import exercise_create  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TOKENS = 100
TARGET_RATIO = 0.8
FLOOR_TARGET_RATIO = 0.5


# --- data ---------------------------------------------------------------------------


def ensure_data(learners: int, cards: int) -> None:
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
    have = synthetic_users().count()
    if have < learners:
        print(f"seeding {learners} learners x {cards} cards ...", flush=True)
        call_command("seed_load", learners=learners, cards=cards, verbosity=0)


def learners_with_tokens() -> list[tuple[int, str]]:
    users = list(synthetic_users().order_by("id")[:TOKENS])
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
    # Alternate cards between the two, so neither reviews a card the other has moved.
    floor_calls = from_pool(
        targets[0::2], lambda t: ("POST", "/bench/floor/reviews/", t[0], review_body(t))
    )
    service_calls = from_pool(
        targets[1::2], lambda t: ("POST", "/api/v1/reviews/", t[0], review_body(t))
    )
    for _ in range(args.rounds):
        floor_review.run(args.port, args.clients, args.seconds / 2, floor_calls)
        review.run(args.port, args.clients, args.seconds / 2, service_calls)
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


def report(args, series: list[Series], tokens: list[str]) -> bool:
    """Prints the table and the ratios to the baseline and the floor; whether all went well."""
    by_name = {s.name: s for s in series}
    baseline = by_name["GET baseline (hand-written view)"]
    floor_due, due = by_name["GET floor due (bare WSGI)"], by_name["GET reviews/due/"]
    floor_review, review = by_name["POST floor reviews (bare WSGI)"], by_name["POST reviews/"]
    print(
        f"\ngunicorn {args.workers} sync workers, production settings, {args.clients} clients, "
        f"{args.learners:,} learners x {args.cards:,} cards, tokens over {len(tokens)} learners, "
        f"per-learner limit {'on' if args.user_limit else 'off'}, load average {load_average()}"
    )
    print_table(series)
    checks = [
        ("due queue / baseline", due, baseline, TARGET_RATIO),
        ("due queue / floor", due, floor_due, FLOOR_TARGET_RATIO),
        ("review / floor review", review, floor_review, FLOOR_TARGET_RATIO),
    ]
    met = True
    print()
    for label, ours, theirs, target in checks:
        ratio = ours.rate / theirs.rate if theirs.rate else 0.0
        verdict = "met" if ratio >= target else "MISSED"
        met = met and ratio >= target
        print(f"{label} requests/s: {ratio:.2f} (target >= {target}: {verdict})")
    return not any(s.errors for s in series) and met


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
    ensure_data(args.learners, args.cards)
    learners = learners_with_tokens()
    tokens = [token for _, token in learners]
    targets = review_targets(learners, 20_000)
    pool = exercise_pool(learners, args.exercises)

    proc = start_gunicorn(args.port, args.workers, args.user_limit)
    try:
        wait_ready(args.port, tokens[0], proc)
        if args.mixed:
            from benchmarks.load_mix import run_mixed

            print(
                f"gunicorn {args.workers} sync workers, production settings, {args.clients} "
                f"clients, {args.learners:,} learners x {args.cards:,} cards, "
                f"learners rotating over {len(learners)}, per-learner limit "
                f"{'on' if args.user_limit else 'off'}"
            )
            ok = run_mixed(args, learners, targets, pool, load_average)
        else:
            ok = report(args, run_series(args, tokens, targets, pool), tokens)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
