"""Hourly clean-up: expired idempotency keys and stale, never-attempted exercises."""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings

from exercises.models import Exercise

from ..models import IdempotencyKey

logger = logging.getLogger(__name__)

DEFAULT_CHUNK_SIZE = 1000
# A learner's study day lies within two calendar days of the UTC date (UTC-12 with a
# late day start is ~35 hours behind); a binding this recent may still be today's.
BINDING_GRACE = dt.timedelta(days=2)


def purge_idempotency_keys(*, older_than: dt.datetime) -> int:
    # Nothing references the keys, so Django issues one DELETE ... WHERE.
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=older_than).delete()
    return deleted


def purge_stale_exercises(
    *, older_than: dt.datetime, at: dt.datetime, chunk_size: int = DEFAULT_CHUNK_SIZE
) -> int:
    """Delete exercises never attempted and created before ``older_than``; returns how many.

    An exercise bound to a review is kept while its study day may still be today
    for its learner. Deleted in chunks of ids, one short transaction each, so the
    purge never holds the table nor loads it into memory.
    """
    keep_bound_from = (at - BINDING_GRACE).date()
    stale = (
        Exercise.objects.unattempted()
        .filter(created_at__lt=older_than)
        .exclude(binding__study_day__gte=keep_bound_from)
        .order_by("id")
    )
    purged = 0
    after = 0
    while True:
        ids = list(stale.filter(id__gt=after).values_list("id", flat=True)[:chunk_size])
        if not ids:
            return purged
        after = ids[-1]
        # Re-checked here: an attempt may have arrived since the read. Loading only ids
        # keeps the cascade (attempts, bindings) to one DELETE per table.
        _, per_model = Exercise.objects.unattempted().filter(id__in=ids).only("id").delete()
        deleted = per_model.get(Exercise._meta.label, 0)
        purged += deleted


def housekeeping(*, at: dt.datetime) -> dict[str, int]:
    """Purge what has outlived its settings-defined lifetime; returns counts by kind."""
    counts = {
        "idempotency_keys": purge_idempotency_keys(
            older_than=at - dt.timedelta(hours=settings.STUDY_IDEMPOTENCY_TTL_HOURS)
        ),
        "exercises": purge_stale_exercises(
            older_than=at - dt.timedelta(days=settings.STUDY_EXERCISE_TTL_DAYS), at=at
        ),
    }
    logger.info("Housekeeping purged %s", counts)
    return counts
