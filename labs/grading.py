"""Grading one submission: the lab's calls, the sandbox's run, the lab's judge.

Only the middle step touches the learner's code, and only inside the sandbox
(``labs.sandbox``); this module sees what came back and turns it into what a
submission stores (``Graded``). It reads no clock and writes nothing: the service
(``labs.services.submission_grade``) claims the submission and stores the result.

``sandbox_run`` is the one way to the sandbox, a module-level name so that a test can
put a sandbox of its own in its place (one that runs nothing and hands back a
``RunResult`` it was given).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings

from . import availability, sandbox
from .sandbox.limits import limits_from
from .spec import Call, Lab, RunResult, TestOutcome, Verdict

logger = logging.getLogger(__name__)

LIMITS_TEST = "limits"
FAULT = (
    "The lab's checks failed on this submission; it was not judged. "
    "Submit again, and report it if it happens again."
)


class RunnerUnavailable(Exception):
    """No sandbox could start: nothing ran, and nothing will run outside one."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def lab_limits() -> sandbox.Limits:
    """The limits of one run, each from its setting (``STUDY_LAB_*``, whose defaults are
    ``labs.sandbox.limits.LIMITS``')."""
    return limits_from(lambda variable: getattr(settings, variable))


def sandbox_unavailable() -> str | None:
    """Why lab code cannot be graded now, in words; None when it can
    (``labs.availability``: a sandbox here, or a labs worker reporting one)."""
    return availability.sandbox_problem()


def sandbox_run(code: str, calls: Sequence[Call]) -> RunResult:
    """Run ``code`` in the sandbox and make ``calls``; ``RunnerUnavailable`` without one."""
    try:
        return sandbox.run(code, calls, limits=lab_limits())
    except sandbox.SandboxUnavailable as exc:
        raise RunnerUnavailable(exc.reason) from exc


@dataclass(frozen=True)
class Graded:
    """What a submission stores once graded: ``done`` (judged) or ``failed`` (not run)."""

    status: str
    passed: bool | None = None
    tests: list[dict[str, Any]] = field(default_factory=list)
    diagnosis: str = ""
    output: str = ""
    duration_ms: int | None = None


def clean_text(text: Any) -> str:
    """Text a database column can hold: a string, no NUL, no lone surrogates."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def capped_output(output: Any, limit: int | None = None) -> str:
    """What the code printed, cut at ``STUDY_LAB_OUTPUT_CHARS`` with a note saying so."""
    limit = settings.STUDY_LAB_OUTPUT_CHARS if limit is None else limit
    text = clean_text(output)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… (output cut at {limit:,} characters)"


# What a failed test shows beside its message (each only when there is something to show).
DETAILS = ("expected", "got", "input", "hint", "mistake")


def _outcome(test: TestOutcome) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": clean_text(test.name),
        "passed": bool(test.passed),
        "message": clean_text(test.message),
    }
    for field_name in DETAILS:
        value = getattr(test, field_name)
        if value and not test.passed:
            entry[field_name] = clean_text(value)
    return entry


def _failed(reason: str, run: RunResult | None = None) -> Graded:
    return Graded(
        status="failed",
        diagnosis=clean_text(reason),
        output=capped_output(run.output if run else ""),
        duration_ms=run.duration_ms if run else None,
    )


def _malformed(lab: Lab, run: RunResult) -> Graded:
    """A run whose answer broke the result channel's protocol: the learner's code can
    write there, so this is a judged attempt that failed every test, not a fault."""
    message = clean_text(
        "Your code wrote to the channel that carries its results, and what it wrote "
        f"could not be read ({run.malformed}). Return values from your functions; "
        "do not write to that channel."
    )
    tests = [{"name": name, "passed": False, "message": message} for name in lab.tests]
    return Graded("done", False, tests, "", capped_output(run.output), run.duration_ms)


def _did_not_load(lab: Lab, run: RunResult) -> list[dict[str, Any]]:
    message = f"Your code did not load: {run.load_error}"
    return [{"name": name, "passed": False, "message": clean_text(message)} for name in lab.tests]


def _with_limit(
    lab: Lab, calls: Sequence[Call], run: RunResult, verdict: Verdict
) -> list[dict[str, Any]]:
    """The judged tests with the limit put where the run stopped: on the test whose call
    did not come back (a call key starts with its test's name) or, failing that, on a
    test of its own named ``limits``."""
    message = run.limit_message or f"Your code broke the {run.limit} limit."
    tests = [_outcome(t) for t in verdict.tests]
    stopped = next((c.key for c in calls if c.key not in run.returned), "")
    running = next((name for name in lab.tests if stopped.split("/")[0] == name), None)
    for test in tests:
        if running is not None and test["name"] == running:
            test["passed"] = False
            test["message"] = clean_text(message)
            for shown in ("expected", "got", "input", "mistake"):  # the call never came back
                test.pop(shown, None)
            return tests
    return [{"name": LIMITS_TEST, "passed": False, "message": clean_text(message)}, *tests]


def grade(*, lab: Lab, code: str, seed: int) -> Graded:
    """Grade ``code`` against ``lab`` on the inputs ``seed`` makes.

    ``done`` when the sandbox ran the code, whatever the code did (a load error, an
    exception, a broken limit, an answer it garbled on the result channel: each a
    failing test that says so); ``failed`` only when the sandbox could not run it, or
    the lab's own checks broke (``diagnosis`` says which): faults of the service, which
    do not count as the learner's attempt.
    """
    calls = list(lab.calls(np.random.default_rng(seed)))
    try:
        run = sandbox_run(code, calls)
    except RunnerUnavailable as exc:
        return _failed(f"No sandbox could run your code: {exc.reason}")
    except Exception:
        logger.exception("The sandbox failed on a submission of lab %s", lab.slug)
        return _failed("The sandbox failed while running your code; submit again later.")
    if run.malformed:
        return _malformed(lab, run)
    if run.failure:
        return _failed(f"The sandbox could not run your code: {run.failure}", run)
    output, duration = capped_output(run.output), run.duration_ms
    if run.load_error and not run.limit:
        tests = _did_not_load(lab, run)
        return Graded("done", False, tests, "", output, duration)
    try:
        verdict = lab.judge(calls, run)
    except Exception:
        logger.exception("The judge of lab %s failed", lab.slug)
        return _failed(FAULT, run)
    if run.limit:
        tests = _with_limit(lab, calls, run, verdict)
        return Graded("done", False, tests, clean_text(verdict.diagnosis), output, duration)
    tests = [_outcome(t) for t in verdict.tests]
    return Graded("done", verdict.passed, tests, clean_text(verdict.diagnosis), output, duration)
