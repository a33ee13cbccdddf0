"""Sequential lab gradings timed phase by phase (``bench_labs --breakdown N``).

The lab's calls, the sandbox's start, NumPy's import inside it, the calls, the judge, the
service's database writes, and the broker's hop through a labs worker of 1; the code
runs in the sandbox only.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from collections.abc import Callable

from benchmarks.labs_common import Source, loadavg, percentile, start_worker, stop


def timed(fn: Callable, *args, **kwargs) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - started, result


def bare_start(limits) -> float:
    """bwrap and the interpreter alone, started as the sandbox starts them, without the
    runner or NumPy."""
    from labs.sandbox import bwrap, mounts

    python = bwrap.interpreter()
    front = bwrap._launcher(limits, bwrap._outer_ids()) or []
    inside = mounts.inside_interpreter(python)
    command = [*front, *bwrap.bwrap_args(python, limits), inside, "-I", "-S", "-c", "pass"]
    started = time.perf_counter()
    subprocess.run(command, env={}, check=True, stdin=subprocess.DEVNULL)
    return time.perf_counter() - started


def _nothing() -> None:
    return None


def start_cost(fork: bool) -> float:
    """Starting ``true`` from this process: by fork (a ``preexec_fn``, as the sandbox
    started before ``prlimit``), or by vfork (as it starts now)."""
    started = time.perf_counter()
    subprocess.run(["true"], check=True, preexec_fn=_nothing if fork else None)
    return time.perf_counter() - started


def run_by_fork(code: str, calls, limits):
    """``sandbox.run`` with the uid change and limits set in a forked child (the way
    without ``setpriv`` and ``prlimit``)."""
    from labs.sandbox import bwrap
    from labs.sandbox import run as sandbox_run

    launcher = bwrap._launcher
    bwrap._launcher = lambda *_: None  # type: ignore[assignment]
    try:
        return sandbox_run(code, calls, limits=limits)
    finally:
        bwrap._launcher = launcher  # type: ignore[assignment]


STEPS = (
    "the lab's calls (inputs drawn)",
    "start of a program from a Django process: fork",
    "  the same by vfork (how the sandbox starts)",
    "bwrap + python -I -S",
    "+ the runner and NumPy's import",
    "+ the code loaded, the calls, the answer",
    "= sandbox.run",
    "  the same started by fork (preexec_fn)",
    "the judge",
    "the service's database (claim, read, store)",
    "= submission_grade in this process",
)


def graded_in_process(submission_id: int) -> tuple[float, float]:
    """``submission_grade`` in this process: its seconds, and those of ``grading.grade``
    within it (the rest is the service's database work)."""
    from labs import grading, services

    inner: list[float] = []
    original = grading.grade

    def grade(**kwargs):
        seconds, graded = timed(original, **kwargs)
        inner.append(seconds)
        return graded

    grading.grade = grade  # type: ignore[assignment]
    try:
        total, _ = timed(services.submission_grade, submission_id=submission_id)
    finally:
        grading.grade = original  # type: ignore[assignment]
    return total, sum(inner)


def breakdown(count: int, work: list[Source], learner_id: int) -> None:
    """``count`` sequential gradings, each phase timed in this process (the code runs in
    the sandbox only), then ``count`` through a worker of 1 for the broker's hop."""
    import numpy as np

    from labs import grading
    from labs.catalogue import LABS
    from labs.models import Submission
    from labs.sandbox import bwrap
    from labs.sandbox import run as sandbox_run

    limits = grading.lab_limits()
    python = bwrap.interpreter()
    empty = json.dumps({"code": "", "calls": []}).encode()
    rows: dict[str, list[float]] = {name: [] for name in STEPS}
    for i in range(count + 1):  # the first is a warm-up: imports, the sandbox probe
        source = work[i % len(work)]
        lab = LABS[source.slug]
        rng = np.random.default_rng(i)
        calls_seconds, made = timed(lab.calls, rng)
        calls = list(made)
        fork, vfork = start_cost(fork=True), start_cost(fork=False)
        bare = bare_start(limits)
        runner_seconds, _ = timed(bwrap.start, python, limits, empty)
        run_seconds, run = timed(sandbox_run, source.code, calls, limits=limits)
        forked_seconds, _ = timed(run_by_fork, source.code, calls, limits)
        judge_seconds, _ = timed(lab.judge, calls, run)
        submission = Submission.objects.create(
            learner_id=learner_id, lab=source.slug, code=source.code, seed=i
        )
        total, grade_seconds = graded_in_process(submission.pk)
        if not i:
            continue
        for name, seconds in zip(
            STEPS,
            (
                calls_seconds,
                fork,
                vfork,
                bare,
                runner_seconds - bare,
                run_seconds - runner_seconds,
                run_seconds,
                forked_seconds,
                judge_seconds,
                total - grade_seconds,
                total,
            ),
            strict=True,
        ):
            rows[name].append(seconds)
    print_breakdown(count, {**rows, **broker_hop(count, work, learner_id)})


def print_breakdown(count: int, rows: dict[str, list[float]]) -> None:
    print(
        f"\nbreakdown: {count} sequential gradings, phases timed in this process, the code "
        f"run in the sandbox (loadavg {loadavg()}); '+' rows are differences of runs"
    )
    print(f"  {'phase':46} {'median ms':>9} {'p95 ms':>8}")
    for name, values in rows.items():
        print(
            f"  {name:46} {statistics.median(values) * 1000:>9.1f} "
            f"{percentile(values, 95) * 1000:>8.1f}"
        )


def broker_hop(count: int, work: list[Source], learner_id: int) -> dict[str, list[float]]:
    """Sequential submissions through ``submission_create`` and a labs worker of 1: saved to
    claimed (commit, publish, Redis, the worker's claim), and claimed to stored."""
    from django.contrib.auth import get_user_model

    from labs import services
    from labs.models import Submission

    learner = get_user_model().objects.get(pk=learner_id)
    worker = start_worker(1)
    found: dict[str, list[float]] = {
        "through a worker of 1: saved to claimed": [],
        "through a worker of 1: claimed to stored": [],
        "through a worker of 1: its sandbox.run": [],
    }
    try:
        for i in range(count + 1):  # the first warms the pool process up
            source = work[i % len(work)]
            submission = services.submission_create(
                learner=learner, lab_slug=source.slug, code=source.code
            )
            deadline = time.monotonic() + 60
            while True:
                row = Submission.objects.get(pk=submission.pk)
                if row.status in ("done", "failed") or time.monotonic() > deadline:
                    break
                time.sleep(0.005)
            if i and row.started_at and row.finished_at:
                found["through a worker of 1: saved to claimed"].append(
                    (row.started_at - row.created_at).total_seconds()
                )
                found["through a worker of 1: claimed to stored"].append(
                    (row.finished_at - row.started_at).total_seconds()
                )
                found["through a worker of 1: its sandbox.run"].append(
                    (row.duration_ms or 0) / 1000
                )
    finally:
        stop(worker)
    return found
