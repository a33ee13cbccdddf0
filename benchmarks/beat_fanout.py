"""The fan-out part of ``benchmarks/bench_beat.py``: the beat task's reminder pass through
real Celery workers on Redis, with 1 and then 2 worker processes.

Imported by ``bench_beat.main`` after ``django.setup()``; the data comes from
``benchmarks/beat_seed.py``.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from django.conf import settings

from benchmarks.beat_seed import seed_due_reminders
from benchmarks.pg import sql
from cards import tasks
from cards.models import Reminder
from cards.services import reminders

REPO = Path(__file__).resolve().parents[1]
TIMEOUT_SECONDS = 1800


def start_worker(queue: str, processes: int, log_path: Path) -> subprocess.Popen:
    env = dict(os.environ)
    env.update(
        DJANGO_EMAIL_BACKEND="benchmarks.mail.BuildOnlyBackend",
        PYTHONPATH=str(REPO),
        LOG_LEVEL="WARNING",
    )
    celery = str(Path(sys.executable).with_name("celery"))
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [
            celery,
            "-A",
            "studyapp",
            "worker",
            "--pool=prefork",
            f"--concurrency={processes}",
            "-Q",
            queue,
            "-n",
            f"{queue}-{processes}@%h",
            "--loglevel=INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while b"ready." not in log_path.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"the worker did not start:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.2)
    return proc


def time_fanout(learners: int, processes: int) -> tuple[float, int]:
    """Seconds until every reminder is sent by a worker of ``processes`` processes, and the
    number of chunks the pass was cut into."""
    sql("DELETE FROM cards_reminder")
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    log_path = Path(tempfile.gettempdir()) / f"{queue}.log"
    worker = start_worker(queue, processes, log_path)
    try:
        chunks = len(
            reminders.reminder_chunks(
                at=dt.datetime.now(dt.UTC), chunk_size=settings.STUDY_REMINDER_CHUNK
            )
        )
        if not chunks:
            sys.exit("no reminder is due: check the recipients' conditions against the seed")
        started = time.monotonic()  # the beat task cuts the pass into chunks on its own
        tasks.send_due_reminders.apply_async(queue=queue)
        done = 0
        while done < learners:
            if time.monotonic() - started > TIMEOUT_SECONDS:
                sys.exit(f"timed out at {done} of {learners} reminders")
            time.sleep(0.25)
            done = Reminder.objects.filter(sent_at__isnull=False).count()
        return time.monotonic() - started, chunks
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=60)


def bench_fanout(learners: int) -> None:
    """The beat task's reminder pass through real workers on Redis, with 1 and 2 processes."""
    if not os.environ.get("REDIS_URL"):
        sys.exit("--fanout needs Redis: set REDIS_URL=redis://...")
    seed_due_reminders(learners)
    timings = {}
    for processes in (1, 2):
        timings[processes], chunks = time_fanout(learners, processes)
        print(
            f"  {learners:,} learners, {processes} worker process(es), {chunks} chunks: "
            f"{timings[processes]:6.2f} s ({learners / timings[processes]:,.0f} reminders/s)"
        )
    speedup = timings[1] / timings[2]
    efficiency = speedup / 2
    million_8 = timings[1] * (1_000_000 / learners) / (8 * efficiency)
    print(
        f"  speedup with 2 processes: {speedup:.2f}x (target >= 1.7); projection for "
        f"1,000,000 learners on 8 worker processes at the same per-process efficiency "
        f"({efficiency:.0%}): {million_8:,.0f} s ({million_8 / 60:.1f} min)"
    )
