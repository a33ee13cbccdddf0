"""What the labs keep: each learner's latest submissions of a lab, and what a review refers to.

A submission holds up to 64 KiB of code and 20 KB of output (about 90 KB a row), and the
default rate limit lets one learner make hundreds a day. ``prune_submissions`` (the beat
job ``prune-lab-submissions``, hourly, on the labs queue) keeps, per learner and lab,
the ``keep`` newest (``KEEP_PER_LAB``, 20), and whatever the rest of the service refers
to, and deletes the others in one statement:

- newest by ``created_at``, then ``id`` (the order the learner's list shows);
- a submission queued or running is never deleted, wherever it ranks;
- a submission another table refers to is kept: the study core's ``LabBinding`` ties
  the submission that records a lab card's review to it (``labs.reviews``; the review
  it recorded, or the one it will record once graded). ``labs`` does not import the
  study core, so these references are found on the model's reverse relations: any
  table with a foreign key to ``Submission`` keeps the rows it points at, and the
  delete never has a reference left dangling nor a cascade to follow.

One ``DELETE ... WHERE id IN (SELECT ...)``: the newest are numbered by a window
function (``ROW_NUMBER() OVER (PARTITION BY learner, lab ORDER BY created_at DESC,
id DESC)``), the references are ``NOT EXISTS`` subqueries; the same SQL runs on
PostgreSQL and SQLite (3.25 and later), and no row is read into Python.
"""

from __future__ import annotations

import logging

from django.db import connections
from django.db.models import Exists, F, OuterRef, Q, QuerySet, Window
from django.db.models.functions import RowNumber

from studyapp.common.subquery import subquery_sql

from .models import Submission

logger = logging.getLogger(__name__)

KEEP_PER_LAB = 20
PENDING = (Submission.Status.QUEUED, Submission.Status.RUNNING)


def _referenced() -> Q:
    """Submissions a row of another table points at (a foreign key to ``Submission``)."""
    referenced = Q(pk__in=[])
    for relation in Submission._meta.related_objects:
        model = relation.related_model
        if relation.many_to_many or not isinstance(model, type) or model is Submission:
            continue
        rows = model._base_manager.filter(**{relation.field.name: OuterRef("pk")})
        referenced |= Q(Exists(rows))
    return referenced


def prunable(*, keep: int = KEEP_PER_LAB) -> QuerySet[Submission]:
    """The submissions ``prune_submissions`` deletes, as a queryset (not evaluated)."""
    if keep < 1:
        raise ValueError(f"keep must be at least 1 submission per learner and lab, not {keep}")
    ranked = (
        Submission.objects.order_by()
        .alias(
            rank=Window(
                RowNumber(),
                partition_by=[F("learner_id"), F("lab")],
                order_by=[F("created_at").desc(), F("id").desc()],
            )
        )
        .filter(rank__gt=keep)
        .values("pk")
    )
    return (
        Submission.objects.order_by()
        .filter(pk__in=ranked)
        .exclude(status__in=PENDING)
        .exclude(_referenced())
    )


def prune_submissions(*, keep: int = KEEP_PER_LAB) -> int:
    """Delete every submission beyond the ``keep`` newest of its learner and lab, except
    those queued or running and those another table refers to; returns how many."""
    doomed = prunable(keep=keep).values("pk")
    using = doomed.db
    connection = connections[using]
    select, params = subquery_sql(doomed)
    quote = connection.ops.quote_name
    table = quote(Submission._meta.db_table)
    pk = quote(Submission._meta.pk.column)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE {pk} IN ({select})", params)
        deleted = max(cursor.rowcount, 0)
    logger.info("Pruned %s lab submissions (kept the %s newest per learner and lab)", deleted, keep)
    return deleted
