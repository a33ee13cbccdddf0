"""Bulk synthetic data for load tests: learners × cards review states in a few set-based statements.

Every synthetic learner (``load-000001`` …, e-mail ``@load.invalid``) is enrolled in every
synthetic deck (``load-deck-1`` …), so ``--learners 1000 --cards 1000`` makes 1,000,000
review states. The states and logs are inserted by ``cards.db.bulk``: on PostgreSQL by
``INSERT ... SELECT`` over a cross join of the synthetic users and cards, on SQLite in
batches placed in Python.

Where a state sits is a deterministic function of (learner id, card id, ``--seed``)
(``cards.synthetic``): every learner gets close to exactly ``--due-fraction`` of their
cards due today or overdue, and the rest spread over the ladder steps.

A re-run without ``--reset`` tops up: only missing users, profiles, decks, cards,
enrolments, states and logs are created.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.utils import timezone

from cards import ladder
from cards.db.bulk import (
    check_constraints_per_statement,
    insert_synthetic_logs,
    insert_synthetic_states,
    refresh_statistics,
)
from cards.models import (
    Card,
    Deck,
    Enrollment,
    LearnerProfile,
    ReviewDay,
    ReviewLog,
    ReviewState,
    Tag,
)
from cards.services.memory import memory_states_rebuild_for
from cards.services.review_days import review_days_rebuild
from cards.synthetic import (
    CARD_TAG,
    DECK_PREFIX,
    EMAIL_DOMAIN,
    USER_PREFIX,
    synthetic_decks,
    synthetic_users,
    username_for,
)

BATCH = 10_000


class Command(BaseCommand):
    help = (
        "Create synthetic learners, decks, cards, enrolments, review states and review logs "
        "in bulk for load testing (names start with 'load-'); --reset removes them first."
    )

    def add_arguments(self, parser):
        parser.add_argument("--learners", type=int, default=100, help="Synthetic learners.")
        parser.add_argument(
            "--cards", type=int, default=100, help="Cards in total, split over the decks."
        )
        parser.add_argument("--decks", type=int, default=1, help="Synthetic decks (default 1).")
        parser.add_argument(
            "--due-fraction",
            type=float,
            default=0.2,
            help="Share of each learner's cards due today or overdue (0 <= F < 1).",
        )
        parser.add_argument(
            "--log-fraction",
            type=float,
            default=0.1,
            help="Share of reviewed states (step > 0) that also get their last review logged.",
        )
        parser.add_argument("--seed", type=int, default=0, help="Varies the placement.")
        parser.add_argument(
            "--reset", action="store_true", help="Delete earlier synthetic data first."
        )
        parser.add_argument(
            "--reset-only", action="store_true", help="Delete synthetic data and create nothing."
        )

    def handle(self, *args, **opts):
        _check_options(opts)
        self.started = time.perf_counter()
        if opts["reset"] or opts["reset_only"]:
            with transaction.atomic(), self.phase("reset"):
                self.reset()
            if opts["reset_only"]:
                self.finish()
                return
        now = timezone.now()
        # Synthetic learners keep the profile defaults, so they share one study day.
        today = ladder.study_day(
            now,
            LearnerProfile._meta.get_field("timezone").default,
            LearnerProfile._meta.get_field("day_starts_at").default,
        )
        with transaction.atomic():
            self.create(opts, now=now, today=today)
        with self.phase("analyze"):
            refresh_statistics((ReviewState, ReviewLog, ReviewDay, Enrollment, Card))
        with self.phase("count"):
            self.summary(today)
        self.finish()

    def create(self, opts: dict, *, now: dt.datetime, today: dt.date) -> None:
        """Every phase of the top-up, in one transaction."""
        steps = tuple(settings.STUDY_LADDER_DAYS)
        # Each phase's time includes its foreign key checks, instead of the COMMIT.
        check_constraints_per_statement()
        with self.phase("users and profiles"):
            user_ids = self.create_users(opts["learners"], now)
        with self.phase("decks and cards"):
            deck_ids = self.create_decks(opts["decks"], opts["cards"])
        with self.phase("enrolments"):
            self.create_enrollments(user_ids, deck_ids, now)
        with self.phase("review states"):
            states = insert_synthetic_states(
                user_ids=user_ids,
                seed=opts["seed"],
                due=opts["due_fraction"],
                today=today,
                steps=steps,
                now=now,
            )
            self.stdout.write(f"  inserted {states} review states")
        with self.phase("review logs"):
            logs = insert_synthetic_logs(
                seed=opts["seed"], fraction=opts["log_fraction"], steps=steps
            )
            self.stdout.write(f"  inserted {logs} review logs")
        with self.phase("review days"):
            # The stats read the log per day: recount the synthetic learners' days.
            review_days_rebuild(learners=synthetic_users())
        with self.phase("memories"):
            # The due page reads each state's FSRS memory: store what the new log gives.
            memory_states_rebuild_for(user_ids)

    def summary(self, today: dt.date) -> None:
        states = ReviewState.objects.filter(learner__in=synthetic_users()).count()
        due = ReviewState.objects.filter(learner__in=synthetic_users(), due_on__lte=today).count()
        self.stdout.write(
            f"synthetic data: {synthetic_users().count()} learners, "
            f"{synthetic_decks().count()} decks, "
            f"{Card.objects.filter(deck__in=synthetic_decks()).count()} cards, "
            f"{states} review states ({due} due on {today}), "
            f"{ReviewLog.objects.filter(learner__in=synthetic_users()).count()} review logs"
        )

    # --- phases -------------------------------------------------------------------

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self.stdout.write(f"  {name:<20} {time.perf_counter() - start:8.2f} s")

    def finish(self) -> None:
        self.stdout.write(
            self.style.SUCCESS(f"seed_load done in {time.perf_counter() - self.started:.2f} s")
        )

    def reset(self) -> None:
        users = synthetic_users()
        deck_cards = Card.objects.filter(deck__in=synthetic_decks())
        user_table = get_user_model()._meta.db_table
        # Plain DELETEs for the two big tables: the ORM would load every review log
        # into memory first (ExerciseBinding.review is SET_NULL).
        synthetic_user_ids = f"SELECT id FROM {user_table} WHERE username LIKE %s AND email LIKE %s"
        like = (USER_PREFIX + "%", "%" + EMAIL_DOMAIN)
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {_table('ExerciseBinding')} SET review_id = NULL WHERE review_id IN "
                f"(SELECT id FROM {ReviewLog._meta.db_table} WHERE learner_id IN "
                f"({synthetic_user_ids}))",
                like,
            )
            for model in (ReviewLog, ReviewDay):
                cursor.execute(
                    f"DELETE FROM {model._meta.db_table} WHERE learner_id IN ({synthetic_user_ids})",
                    like,
                )
            cursor.execute(
                f"DELETE FROM {ReviewState._meta.db_table} WHERE learner_id IN ({synthetic_user_ids})",
                like,
            )
        # Other learners' states on synthetic cards go with the cards (cascade).
        deck_cards.delete()
        synthetic_decks().delete()
        Tag.objects.filter(name=CARD_TAG).delete()
        users.delete()

    def create_users(self, learners: int, now: dt.datetime) -> list[int]:
        User = get_user_model()
        # One unusable password for all: synthetic learners never log in by password.
        password = make_password(None)
        User.objects.bulk_create(
            (
                User(
                    username=username_for(i),
                    email=f"{username_for(i)}{EMAIL_DOMAIN}",
                    password=password,
                    date_joined=now,
                )
                for i in range(1, learners + 1)
            ),
            batch_size=BATCH,
            ignore_conflicts=True,
        )
        user_ids = list(
            synthetic_users()
            .filter(username__in=[username_for(i) for i in range(1, learners + 1)])
            .order_by("id")
            .values_list("id", flat=True)
        )
        # bulk_create skips post_save, so the profiles the signal would make are made here.
        LearnerProfile.objects.bulk_create(
            (LearnerProfile(user_id=uid) for uid in user_ids),
            batch_size=BATCH,
            ignore_conflicts=True,
        )
        return user_ids

    def create_decks(self, decks: int, cards: int) -> list[int]:
        Deck.objects.bulk_create(
            (
                Deck(
                    slug=f"{DECK_PREFIX}{d}",
                    title=f"Load deck {d}",
                    description="Synthetic deck for load testing.",
                )
                for d in range(1, decks + 1)
            ),
            ignore_conflicts=True,
        )
        deck_ids = list(
            synthetic_decks()
            .filter(slug__in=[f"{DECK_PREFIX}{d}" for d in range(1, decks + 1)])
            .order_by("id")
            .values_list("id", flat=True)
        )

        def new_cards() -> Iterator[Card]:
            # Contiguous split: the first ``cards % decks`` decks hold one card more.
            per_deck, extra = divmod(cards, decks)
            number = 0
            for index, deck_id in enumerate(deck_ids):
                for position in range(per_deck + (index < extra)):
                    number += 1
                    yield Card(
                        deck_id=deck_id,
                        key=f"load-{number}",
                        kind=Card.Kind.INTERVIEW if number % 5 == 0 else Card.Kind.RECALL,
                        prompt=f"Synthetic prompt {number}: what does $QK^T$ measure?",
                        answer=f"Synthetic answer {number}: query\N{EN DASH}key similarity.",
                        position=position,
                    )

        Card.objects.bulk_create(new_cards(), batch_size=BATCH, ignore_conflicts=True)
        tag, _ = Tag.objects.get_or_create(name=CARD_TAG)
        card_ids = Card.objects.filter(deck_id__in=deck_ids).values_list("id", flat=True)
        Through = Card.tags.through
        Through.objects.bulk_create(
            (Through(card_id=cid, tag_id=tag.id) for cid in card_ids.iterator(chunk_size=BATCH)),
            batch_size=BATCH,
            ignore_conflicts=True,
        )
        return deck_ids

    def create_enrollments(self, user_ids: list[int], deck_ids: list[int], now) -> None:
        Enrollment.objects.bulk_create(
            (Enrollment(learner_id=u, deck_id=d) for u in user_ids for d in deck_ids),
            batch_size=BATCH,
            ignore_conflicts=True,
        )


def _table(model_name: str) -> str:
    from django.apps import apps

    return apps.get_model("cards", model_name)._meta.db_table


def _check_options(opts: dict) -> None:
    learners, cards, decks = opts["learners"], opts["cards"], opts["decks"]
    due_fraction, log_fraction = opts["due_fraction"], opts["log_fraction"]
    if learners < 0:
        raise CommandError(f"--learners: expected an integer >= 0, got {learners}.")
    if cards < 0:
        raise CommandError(f"--cards: expected an integer >= 0, got {cards}.")
    if decks < 1 or (cards and decks > cards):
        raise CommandError(f"--decks: expected an integer between 1 and --cards, got {decks}.")
    if not 0.0 <= due_fraction < 1.0:
        raise CommandError(f"--due-fraction: expected 0 <= F < 1, got {due_fraction}.")
    if not 0.0 <= log_fraction <= 1.0:
        raise CommandError(f"--log-fraction: expected 0 <= F <= 1, got {log_fraction}.")
