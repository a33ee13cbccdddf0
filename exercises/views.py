"""Server-rendered exercise pages (the playground page is in ``exercises.playground_views``).

Answers arrive as one text input per cell, named as ``exercises.cells`` says. Cells
that do not parse are reported next to the grid and use no attempt. Submissions are
posted to the study core's submit page, which records the review of a review-bound
exercise. ``exercises`` never imports ``cards`` nor names its routes: the submit page,
the review page and an exercise's bound card come from the review side the study core
registers (``exercises.reviews``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from exercises import predictions, selectors, services
from exercises.cells import part_words
from exercises.kinds import KINDS, ParamError, UnknownKindError
from exercises.models import Attempt, Exercise
from exercises.reviews import review_side
from studyapp.common.ids import parse_id

# --- Exercise context shared by the exercise page and the review page --------------------


def token_labels(exercise: Exercise) -> list[str] | None:
    tokens = exercise.inputs.get("tokens") if isinstance(exercise.inputs, dict) else None
    return [str(t) for t in tokens] if isinstance(tokens, list) else None


def exercise_context(
    exercise: Exercise,
    *,
    submit_url: str,
    typed: dict | None = None,
    problems: dict | None = None,
    invalid: dict | None = None,
) -> dict[str, Any]:
    """What ``exercises/_exercise_body.html`` needs: parts with grids, feedback and heat maps."""
    last: Attempt | None = exercise.attempt_set.order_by("-number").first()
    result = last.result if last else None
    solution = services.solution_if_revealed(exercise, result)
    prediction = _prediction_context(exercise, last, problems, typed)
    parts = [
        _part_context(ask, last, result, solution, typed, problems, invalid)
        for ask in predictions.numeric_asks(exercise.asks)
    ]
    labels = token_labels(exercise)
    weights_map = _weights_map(exercise, solution, last, labels)
    remaining = max(exercise.max_attempts - exercise.attempts_used, 0)
    closed = services.closed_error(exercise)
    return {
        "exercise": exercise,
        # The prediction's question is asked in its own form below the prompt.
        "exercise_prompt": predictions.prompt_without_question(exercise.prompt, exercise.asks),
        "kind": KINDS.get(exercise.kind),
        "parts": parts,
        "result": None if problems else result,
        "first_wrong_label": part_words(str((result or {}).get("first_wrong") or "")),
        "problems": problems or {},
        "solution": solution,
        "remaining": remaining,
        "closed": closed is not None,
        "weights_map": weights_map,
        "steps": _steps_context(solution),
        "first_wrong_step": (result or {}).get("first_wrong_step") if solution else None,
        "labels": labels,
        "submit_url": submit_url,
        "review_page_url": review_side().review_page_url(),
        "prediction": prediction,
        "numbers_open": prediction is None or prediction["made"] is not None,
    }


def _part_context(
    ask: Mapping[str, Any],
    last: Attempt | None,
    result: dict[str, Any] | None,
    solution: dict[str, Any] | None,
    typed: dict[str, Any] | None,
    problems: dict[str, Any] | None,
    invalid: dict[str, Any] | None,
) -> dict[str, Any]:
    """One numeric part on the page: its grid, what was typed or submitted, its verdict."""
    name = ask["name"]
    marked = result or {}
    verdict = marked.get("parts", {}).get(name) if not problems else None
    # What was typed, else what was last submitted.
    source = typed if typed is not None else last.answers if last is not None else {}
    # Each diagnosis once, at its (first) step.
    diagnosis = [d for d in marked.get("diagnosis", []) if d.get("parts", [None])[0] == name]
    shown = verdict or {}
    return {
        "name": name,
        "label": part_words(name),
        "shape": ask["shape"],
        "values": source.get(name),
        "verdict": verdict,
        "follows": bool(shown.get("follows")),
        "follows_from": shown.get("follows_from") or "your earlier answers",
        "diagnosis": diagnosis if not problems else [],
        "wrong_cells": shown.get("wrong_cells", []),
        "problems": (problems or {}).get(name, []),
        "invalid_cells": (invalid or {}).get(name, []),
        "solution": solution.get(name) if solution else None,
        "choices": ask.get("choices"),
    }


def _steps_context(solution: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The worked solution's steps for the page: a vector as a one-row table."""
    out = []
    for s in (solution or {}).get("steps") or []:
        value = _blocked_as_minus_infinity(s["value"])
        rows = [value] if len(s["shape"]) == 1 else None
        out.append({**s, "value": value, "vector_rows": rows})
    return out


def _blocked_as_minus_infinity(value: Any) -> Any:
    """A step's JSON value with each blocked score (null) as minus infinity, shown "−∞"."""
    if isinstance(value, list):
        return [_blocked_as_minus_infinity(v) for v in value]
    return float("-inf") if value is None else value


def _weights_map(
    exercise: Exercise,
    solution: dict[str, Any] | None,
    last: Attempt | None,
    labels: list[str] | None,
) -> dict[str, Any] | None:
    """The heat map of the expected weights (once revealed), else of the learner's."""
    for source, caption in (
        (solution, "Expected weights"),
        (last.answers if last else None, "Your weights"),
    ):
        weights = (source or {}).get("weights")
        if isinstance(weights, list) and weights and isinstance(weights[0], list):
            weights_map = {
                "matrix": weights,
                "caption": caption,
                "row_labels": labels,
                "col_labels": labels,
                "row_axis": "query",
                "explain": "Rows are queries, columns are keys",
            }
            if exercise.kind == "ablation":
                # One row per input: the [CLS] query's weights over that input's tokens.
                weights_map.update(
                    row_labels=[f"input {m + 1}" for m in range(len(weights))],
                    col_labels=[f"token {j + 1}" for j in range(len(weights[0]))],
                    row_axis="input",
                    explain="Rows are inputs (the [CLS] query's weights in each), columns are "
                    "tokens as keys",
                )
            return weights_map
    return None


def _prediction_context(exercise: Exercise, last, problems, typed) -> dict[str, Any] | None:
    """The prediction asked first: the choice made, and once the numbers are in, the verdict."""
    ask = predictions.first_prediction(exercise.asks)
    if ask is None:
        return None
    made = exercise.predictions.filter(ask=ask["name"]).first()
    summary = None
    if made is not None and last is not None:
        summary = predictions.prediction_summary(ask, made.answer, made.expected, made.correct)
    return {
        "ask": ask,
        "made": made,
        "summary": summary,
        "problems": (problems or {}).get(ask["name"], []),
        "typed": (typed or {}).get(ask["name"]),
    }


# --- Pages --------------------------------------------------------------------------


def _param_value(spec, raw: str) -> Any:
    if spec.type == "bool":
        return raw in ("on", "true", "1")
    if spec.type == "choice":
        if raw == "":
            return spec.default  # a field the form did not send, like an empty number
        for choice in spec.choices or ():
            if str(choice) == raw:
                return choice
        return raw
    if raw.strip() == "":
        return spec.default
    try:
        return int(raw) if spec.type == "int" else float(raw)
    except ValueError:
        return raw  # the kind rejects it with a message naming the parameter


def kind_forms(selected: str = "", values=None, error: ParamError | None = None) -> list[dict]:
    forms = []
    for name, kind in KINDS.items():
        fields = []
        for pname, spec in kind.params.items():
            key = f"{name}-{pname}"
            current = values.get(key) if values is not None and name == selected else None
            if current is None:
                current = spec.default
            fields.append(
                {
                    "id": f"id_{key}",
                    "name": key,
                    "label": pname,
                    "spec": spec,
                    "value": current,
                    "checked": (current in (True, "on", "true", "1"))
                    if spec.type == "bool"
                    else False,
                    "error": error.message
                    if error and name == selected and error.field == pname
                    else "",
                }
            )
        forms.append(
            {"name": name, "title": kind.title, "description": kind.description, "fields": fields}
        )
    return forms


@login_required
@require_http_methods(["GET", "POST"])
def exercise_list(request: HttpRequest) -> HttpResponse:
    selected = (
        request.POST.get("kind", "") if request.method == "POST" else request.GET.get("kind", "")
    )
    error: ParamError | None = None
    kind_error = ""
    status = 200
    if request.method == "POST":
        kind = KINDS.get(selected)
        if kind is None:
            kind_error = f"Choose one of the exercise kinds; got {selected!r}."
        else:
            params = {
                pname: _param_value(spec, request.POST.get(f"{selected}-{pname}", ""))
                for pname, spec in kind.params.items()
            }
            try:
                exercise = services.exercise_create(
                    owner=request.user, kind=selected, params=params
                )
            except ParamError as exc:
                error = exc
            except UnknownKindError as exc:
                kind_error = exc.message
            else:
                messages.success(request, f"New exercise: {kind.title}.")
                return redirect("exercise-page", pk=exercise.pk)
        status = 400
    exercises = [
        (exercise, getattr(KINDS.get(exercise.kind), "title", exercise.kind))
        for exercise in selectors.exercises_for_owner(owner=request.user)[:50]
    ]
    return render(
        request,
        "exercises/exercise_list.html",
        {
            "exercises": exercises,
            "kind_forms": kind_forms(
                selected, request.POST if request.method == "POST" else None, error
            ),
            "selected": selected or next(iter(KINDS), ""),
            "kind_error": kind_error,
            "param_error": error,
        },
        status=status,
    )


def owned_exercise(request: HttpRequest, pk: int) -> Exercise:
    if parse_id(pk) is None:
        raise Http404("No such exercise.")
    try:
        return selectors.exercise_for_owner(owner=request.user, exercise_id=pk)
    except Exercise.DoesNotExist:
        raise Http404("No such exercise.") from None


def exercise_page_context(
    exercise: Exercise,
    *,
    from_review: bool,
    typed: dict | None = None,
    problems: dict | None = None,
    invalid: dict | None = None,
) -> dict[str, Any]:
    """What ``exercises/exercise_detail.html`` needs: the exercise, posted to the review
    side's submit page, and the card it was handed out for (to report a problem on)."""
    side = review_side()
    context = exercise_context(
        exercise,
        submit_url=side.submit_url(exercise.pk),
        typed=typed,
        problems=problems,
        invalid=invalid,
    )
    context["bound_card_id"] = side.bound_card_id(exercise.pk)
    context["from_review"] = from_review
    if from_review:
        # Later submissions come back here still offering to go on with the review.
        context["submit_url"] += "?from=review"
    return context


@login_required
@require_GET
def exercise_detail(request: HttpRequest, pk: int) -> HttpResponse:
    exercise = owned_exercise(request, pk)
    context = exercise_page_context(exercise, from_review=request.GET.get("from") == "review")
    return render(request, "exercises/exercise_detail.html", context)
