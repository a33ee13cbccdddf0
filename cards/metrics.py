"""Prometheus metrics of the study service, shared by web processes and workers.

With ``PROMETHEUS_MULTIPROC_DIR`` set (gunicorn with several workers, Celery's
prefork pool), each process writes its samples there and ``/metrics`` adds them up.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

from prometheus_client import Counter, Histogram

REQUEST_LATENCY = Histogram(
    "study_request_seconds",
    "Time to answer a request, by view.",
    ["view", "method", "status"],
    buckets=(0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5),
)
BEAT_JOB_SECONDS = Histogram(
    "study_beat_job_seconds",
    "Duration of one run of a periodic job (or one chunk of it).",
    ["job"],
    buckets=(0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 900),
)
BEAT_JOB_ROWS = Counter(
    "study_beat_job_rows", "Rows written by periodic jobs (placed states, reminders).", ["job"]
)
REMINDERS_SENT = Counter("study_reminders_sent", "Review reminders handed to the mail server.")
EXERCISE_CHECKS = Counter(
    "study_exercise_checks", "Exercise submissions checked, by outcome.", ["outcome"]
)


@contextmanager
def beat_job(job: str):
    """Time a periodic job; the body sets ``rows[0]`` to the rows it wrote."""
    rows = [0]
    started = time.perf_counter()
    try:
        yield rows
    finally:
        BEAT_JOB_SECONDS.labels(job).observe(time.perf_counter() - started)
        BEAT_JOB_ROWS.labels(job).inc(rows[0])
