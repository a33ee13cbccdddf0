"""A stored submission's results as a learner reads them, for the API and the pages alike.

Tests are stored as ``[{name, passed, message}]`` plus, on a failed test, ``expected``,
``got``, ``input``, ``hint`` and ``mistake`` (``labs.grading``). The mistake's code is a
machine field: the words a learner reads never carry it. Submissions judged before the
words were plain held the code in their text ("no_scale: This matches ...") and "ok" on
a passed test: ``tests`` and ``diagnosis`` read those as today's.
"""

from __future__ import annotations

import re
from typing import Any

from .judging import PASSED, mistake_codes
from .models import Submission

_CODE_PREFIX = re.compile(r"^([a-z][a-z0-9_]*): (.*)$", re.DOTALL)
DETAILS = ("expected", "got", "input", "hint")


def _split(text: str) -> tuple[str, str]:
    """``(code, words)`` of a text that starts with a registered mistake's code; else
    ``("", text)``."""
    found = _CODE_PREFIX.match(text or "")
    if found and found.group(1) in mistake_codes():
        return found.group(1), found.group(2)
    return "", text or ""


def tests(submission: Submission) -> list[dict[str, Any]]:
    """Each test with its message in words, and what a failed one shows beside it."""
    return [_shown(test) for test in submission.tests or [] if isinstance(test, dict)]


def _shown(test: dict[str, Any]) -> dict[str, Any]:
    passed = bool(test.get("passed"))
    message = str(test.get("message") or "")
    if passed and message.strip().lower() == "ok":
        message = PASSED
    entry: dict[str, Any] = {"name": str(test.get("name", "")), "passed": passed}
    entry["message"] = _split(message)[1]
    for key in DETAILS:
        entry[key] = str(test.get(key) or "")
    entry["mistake"] = str(test.get("mistake") or "") or None
    return entry


def mistake(submission: Submission) -> str | None:
    """The registered mistake the results look like (its code), or None."""
    if submission.status != Submission.Status.DONE:
        return None
    for test in submission.tests or []:
        if isinstance(test, dict) and not test.get("passed") and test.get("mistake"):
            return str(test["mistake"])
    return _split(submission.diagnosis)[0] or None


def diagnosis(submission: Submission) -> str:
    """What the mistake means, in words (or, for a failed submission, why it did not run)."""
    if submission.status != Submission.Status.DONE:
        return submission.diagnosis or ""
    return _split(submission.diagnosis)[1]
