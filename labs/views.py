"""Server-rendered lab pages: the list of labs and one lab with its editor and results.

Every page works without JavaScript: the form posts here and lands on the page of the new
submission, which offers a link to look again while it is queued or running. With
JavaScript (``static/js/lab.js``) the code goes to ``POST /api/v1/labs/<slug>/submissions/``
and the page polls ``submission_result``, the same result partial this module renders.
The learner's code is only ever stored and shown here; the sandbox runs it elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from labs import availability, results, reviews, selectors, services
from labs.forms import SubmissionForm
from labs.models import Submission
from labs.selectors import LabProgress, lab_progress
from labs.spec import Lab
from studyapp.common.ids import parse_id

# What a result shows of the printed output; the service caps what it keeps, and a page
# never needs more than a screenful or two of it.
OUTPUT_SHOWN = 20_000
# Earlier submissions listed under the editor.
HISTORY_SHOWN = 50

PENDING = (Submission.Status.QUEUED, Submission.Status.RUNNING)


# --- The list -----------------------------------------------------------------------

# A sentence ends at . ! or ? (maybe closing an *emphasis*) before a capital, code or math.
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?]\*))\s+(?=[A-Z(`$*])")


def lab_summary(prompt: str) -> str:
    """The first sentence of the prompt's first paragraph of text: what the lab asks.

    A sentence that runs on into a formula (ending in ``:`` or ``,``) ends there instead.
    """
    for block in re.split(r"\n\s*\n", prompt or ""):
        text = " ".join(block.split())
        if text and not text.startswith(("#", "```", "$$", "|", "- ", "* ")):
            sentence = _SENTENCE_END.split(text, maxsplit=1)[0]
            return sentence[:-1] + "." if sentence.endswith((":", ",")) else sentence
    return ""


def _status_words(progress: LabProgress | None) -> tuple[str, str]:
    """(css state, words) for the learner's best result on one lab."""
    if progress is None:
        return "untried", "Not tried"
    if progress.passed:
        return "passed", "Passed"
    if progress.failed:
        return "failed", "Last attempt failed"
    if progress.pending:
        return "pending", "Being checked"
    return "untried", "Not tried: the last submission could not be run"


@login_required
@require_GET
def lab_list(request: HttpRequest) -> HttpResponse:
    progress = lab_progress(learner=request.user)
    rows = []
    for lab in selectors.labs_list():
        state, words = _status_words(progress.get(lab.slug))
        rows.append(
            {"lab": lab, "summary": lab_summary(lab.prompt), "state": state, "words": words}
        )
    return render(request, "labs/lab_list.html", {"rows": rows})


# --- One lab ------------------------------------------------------------------------


def _lab_or_404(slug: str) -> Lab:
    try:
        return selectors.lab_get(slug)
    except LookupError:
        raise Http404("No such lab.") from None


def _owned_submission(request: HttpRequest, lab: Lab, pk: int) -> Submission:
    """The learner's own submission of this lab; anyone else's, or another lab's, is a 404."""
    if parse_id(pk) is None:
        raise Http404("No such submission.")
    try:
        submission = selectors.submission_for(learner=request.user, submission_id=pk)
    except Submission.DoesNotExist:
        raise Http404("No such submission.") from None
    if submission.lab != lab.slug:
        raise Http404("No such submission.")
    return submission


def result_context(submission: Submission | None) -> dict[str, Any] | None:
    """What ``labs/_result.html`` shows of one submission."""
    if submission is None:
        return None
    tests = results.tests(submission)
    state, headline = _headline(submission, tests)
    status = submission.status
    output = submission.output or ""
    review = (
        reviews.review_of(submission_id=submission.pk) if status == Submission.Status.DONE else None
    )
    return {
        "submission": submission,
        # The review of a lab card this submission recorded: "pass", "fail" or None.
        "review": review,
        "state": state,
        "pending": status in PENDING,
        "headline": headline,
        "tests": tests,
        "diagnosis": results.diagnosis(submission),
        "output": output[:OUTPUT_SHOWN],
        "output_cut": len(output) > OUTPUT_SHOWN,
        "duration_s": None if submission.duration_ms is None else submission.duration_ms / 1000,
    }


_STATUS_HEADLINES: dict[str, tuple[str, str]] = {
    Submission.Status.QUEUED: ("pending", "Queued: waiting for the sandbox to run your code."),
    Submission.Status.RUNNING: ("pending", "Running your code against the tests."),
    Submission.Status.FAILED: ("error", "Your code could not be run, so it was not judged."),
}


def _headline(submission: Submission, tests: list[dict[str, Any]]) -> tuple[str, str]:
    """The result's state ("pending", "error", "passed" or "failed") and its headline."""
    if submission.status in _STATUS_HEADLINES:
        return _STATUS_HEADLINES[submission.status]
    count = len(tests)
    plural = "s" if count != 1 else ""
    if submission.passed:
        return "passed", f"Passed: all {count} test{plural}."
    failing = sum(1 for t in tests if not t["passed"])
    return "failed", f"Failed: {failing} of {count} test{plural} did not pass."


def _tzname(request: HttpRequest) -> str:
    """The learner's time zone, in which the pages show when code was submitted."""
    profile = getattr(request.user, "profile", None)
    return getattr(profile, "timezone", "") or "UTC"


def _history(request: HttpRequest, lab: Lab) -> Iterable[Submission]:
    return selectors.submissions_of(learner=request.user, lab_slug=lab.slug)[:HISTORY_SHOWN]


def _render_lab(
    request: HttpRequest,
    lab: Lab,
    *,
    submission: Submission | None,
    code: str,
    form: SubmissionForm | None = None,
    unavailable: str = "",
    pending: Submission | None = None,
    status: int = 200,
) -> HttpResponse:
    context = {
        "lab": lab,
        "code": code,
        "form": form,
        "unavailable": unavailable,
        # The submission still queued or running that refused this one (one at a time).
        "pending": pending,
        "result": result_context(submission),
        "history": _history(request, lab),
        "current": submission,
        "tzname": _tzname(request),
        # A card of this lab waits in today's review: the next submission records it.
        "review_due": reviews.due(learner=request.user, lab_slug=lab.slug, at=timezone.now()),
    }
    return render(request, "labs/lab_detail.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def lab_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """The lab with the learner's latest submission (or the starter code); POST hands code in."""
    lab = _lab_or_404(slug)
    if request.method == "POST":
        return _submit(request, lab)
    latest = None if request.GET.get("starter") else _history(request, lab)
    submission = next(iter(latest), None) if latest is not None else None
    code = submission.code if submission is not None else lab.starter_code
    return _render_lab(request, lab, submission=submission, code=code)


def sentence(reason: str) -> str:
    """A reason as the sandbox gives it ("bwrap is not installed") as a sentence."""
    text = " ".join(str(reason).split()) or "No sandbox is available"
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def _submit(request: HttpRequest, lab: Lab) -> HttpResponse:
    form = SubmissionForm(request.POST)
    typed = request.POST.get("code", "")
    if not form.is_valid():
        return _render_lab(request, lab, submission=None, code=typed, form=form, status=400)
    try:
        submission = services.submission_create(
            learner=request.user, lab_slug=lab.slug, code=form.cleaned_data["code"]
        )
    except services.LabsUnavailable as exc:
        # Nothing was saved; the code stays in the editor for when the sandbox is back.
        response = _render_lab(
            request, lab, submission=None, code=typed, unavailable=sentence(exc.reason), status=503
        )
        response["Retry-After"] = str(availability.retry_after_seconds())
        return response
    except services.CodeInvalid as exc:
        form.add_error("code", str(exc))
        return _render_lab(request, lab, submission=None, code=typed, form=form, status=400)
    except services.SubmissionPending as exc:
        # Nothing was saved: the learner's earlier submission is still being graded.
        response = _render_lab(
            request, lab, submission=None, code=typed, pending=exc.submission, status=409
        )
        response["Retry-After"] = str(exc.retry_after)
        return response
    return redirect("lab-submission", slug=lab.slug, pk=submission.pk)


@login_required
@require_GET
def submission_detail(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """The lab page showing one submission: its code in the editor and its result."""
    lab = _lab_or_404(slug)
    submission = _owned_submission(request, lab, pk)
    return _render_lab(request, lab, submission=submission, code=submission.code)


@login_required
@require_GET
def submission_result(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """The result and the list of submissions, as the page's script polls them."""
    lab = _lab_or_404(slug)
    submission = _owned_submission(request, lab, pk)
    context = {
        "lab": lab,
        "result": result_context(submission),
        "history": _history(request, lab),
        "current": submission,
        "tzname": _tzname(request),
    }
    response = render(request, "labs/_submission.html", context)
    response["Cache-Control"] = "no-store"
    return response
