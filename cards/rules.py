"""The rules every card obeys, wherever it is written: the API, the admin and deck files.

Each check returns problems as ``{field: [message, ...]}`` with dotted field names
(``exercise.params.n``), so the API, the admin form and a deck file can each put a
message beside the field it is about. Nothing here touches the database; the one
rule that needs it (a key unique within its deck) takes the clashing card's
existence as an argument.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from exercises.kinds import KINDS, ParamError, UnknownKindError, get_kind
from labs import selectors as lab_selectors
from studyapp.common.rendering import formula_renders, formulas

from .figures import figure_problems

CARD_KINDS = ("recall", "interview", "exercise", "lab")
ANSWERED_KINDS = ("recall", "interview")
MAX_TEXT_CHARS = 20_000
# An interview card's key points: a short checklist, ticked against a written answer.
MAX_POINTS = 12
MAX_POINT_CHARS = 200
KEY_MAX = 100
TAG_MAX = 50
EXERCISE_FIELDS = ("kind", "params")

SEED_MESSAGE = (
    "Remove the seed: an exercise card gets a fresh, server-chosen seed at every review, "
    "so a seed on the card would never be used."
)

Problems = dict[str, list[str]]


def type_name(value: Any) -> str:
    """How a value reads in an error message: "a string", "a list", "null"."""
    if value is None:
        return "null"
    names = {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a mapping",
    }
    return names.get(type(value), type(value).__name__)


# Django's slug pattern (django.core.validators.slug_re), compiled once: a deck file
# checks one per key and tag, and the lazy validator costs ten times as much.
_SLUG = re.compile(r"[-a-zA-Z0-9_]+\Z")


def is_slug(value: Any, max_length: int) -> bool:
    return (
        isinstance(value, str) and 0 < len(value) <= max_length and _SLUG.match(value) is not None
    )


def _add(problems: Problems, field: str, message: str) -> None:
    problems.setdefault(field, []).append(message)


def exercise_problems(spec: Any) -> Problems:
    """Problems of an exercise spec ``{kind, params}``, keyed ``kind``, ``params``, ``params.<name>``.

    A seed is refused: reviews always draw a fresh variant with a server-chosen seed.
    """
    problems: Problems = {}
    if not isinstance(spec, Mapping):
        _add(problems, "", f"Expected a mapping {{kind, params}}, got {type_name(spec)}.")
        return problems
    for name in sorted(set(spec) - set(EXERCISE_FIELDS), key=str):
        _add(problems, str(name), "Unknown field; an exercise has only kind and params.")
    kind_name = spec.get("kind")
    params = spec.get("params")
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        _add(problems, "params", f"Expected a mapping, got {type_name(params)}.")
    if not isinstance(kind_name, str) or not kind_name:
        _add(problems, "kind", f"Expected an exercise kind name, got {type_name(kind_name)}.")
        return problems
    try:
        kind = get_kind(kind_name)
    except UnknownKindError:
        _add(problems, "kind", f"Expected one of {', '.join(sorted(KINDS))}, got {kind_name!r}.")
        return problems
    if isinstance(params, Mapping):
        if "seed" in params:
            _add(problems, "params.seed", SEED_MESSAGE)
            params = {name: value for name, value in params.items() if name != "seed"}
        try:
            kind.normalize_params(dict(params))
        except ParamError as exc:
            _add(problems, f"params.{exc.field}", exc.message)
    return problems


def card_problems(
    *, kind: Any, prompt: Any, answer: Any, exercise: Any, lab: Any = None, points: Any = ()
) -> Problems:
    """Problems of a card's content, keyed by field (``exercise.*`` for the exercise spec;
    ``lab`` for a lab card's lab slug; ``points.<i>`` for one key point)."""
    problems: Problems = {}
    if kind not in CARD_KINDS:
        _add(problems, "kind", f"Expected one of {', '.join(CARD_KINDS)}, got {kind!r}.")
    for name, value in (("prompt", prompt), ("answer", answer)):
        _text_problems(problems, name, value)
    if isinstance(prompt, str) and not prompt.strip() and "prompt" not in problems:
        _add(problems, "prompt", "Expected Markdown text, got an empty string.")
    if kind in ANSWERED_KINDS and isinstance(answer, str) and not answer.strip():
        # A recall or interview card is graded against its answer.
        article = "An" if kind == "interview" else "A"
        _add(problems, "answer", f"{article} {kind} card needs an answer (Markdown).")
    _card_exercise_problems(problems, kind, exercise)
    _card_lab_problems(problems, kind, lab)
    _points_problems(problems, kind, points)
    return problems


def _points_problems(problems: Problems, kind: Any, points: Any) -> None:
    """An interview card's key points: a list of short distinct texts; other kinds carry none.

    Only an interview card is answered in writing, so only its points have something to
    be ticked against.
    """
    if points is None or (isinstance(points, (list, tuple)) and not points):
        return
    if not isinstance(points, (list, tuple)):
        _add(problems, "points", f"Expected a list of short texts, got {type_name(points)}.")
        return
    if kind in CARD_KINDS and kind != "interview":
        _add(
            problems,
            "points",
            f"Only interview cards carry key points; expected an empty list for a {kind} card.",
        )
        return
    if len(points) > MAX_POINTS:
        _add(problems, "points", f"Expected at most {MAX_POINTS} key points, got {len(points)}.")
    seen: set[str] = set()
    for index, point in enumerate(points):
        problem = _point_problem(point, seen)
        if problem:
            _add(problems, f"points.{index}", problem)


def _point_problem(point: Any, seen: set[str]) -> str | None:
    """What is wrong with one key point, if anything; ``seen`` holds the points before it."""
    if not isinstance(point, str):
        return f"Expected a short text, got {type_name(point)}."
    if not point.strip():
        return "Expected a short text, got an empty string."
    if len(point) > MAX_POINT_CHARS:
        return f"Expected at most {MAX_POINT_CHARS} characters, got {len(point)}."
    if "\x00" in point:
        return "Contains a NUL character (\\x00); remove it."
    if point.strip() in seen:
        return f"The key point {point.strip()!r} is given twice; keep one."
    seen.add(point.strip())
    return None


def clean_points(points: Any) -> list[str]:
    """Key points as stored: each stripped of surrounding spaces (they passed the rules)."""
    return [point.strip() for point in points or ()]


def _text_problems(problems: Problems, name: str, value: Any) -> None:
    if not isinstance(value, str):
        _add(problems, name, f"Expected Markdown text, got {type_name(value)}.")
    elif len(value) > MAX_TEXT_CHARS:
        _add(problems, name, f"Expected at most {MAX_TEXT_CHARS} characters, got {len(value)}.")
    elif "\x00" in value:
        # PostgreSQL text cannot hold NUL.
        _add(problems, name, "Contains a NUL character (\\x00); remove it.")


def _card_exercise_problems(problems: Problems, kind: Any, exercise: Any) -> None:
    """An exercise card needs its spec, valid; another kind of card carries none."""
    if kind == "exercise":
        if exercise is None:
            _add(problems, "exercise", "An exercise card needs {kind, params}.")
        else:
            for field, messages in exercise_problems(exercise).items():
                for message in messages:
                    _add(problems, f"exercise.{field}" if field else "exercise", message)
    elif exercise is not None and kind in CARD_KINDS:
        _add(
            problems,
            "exercise",
            f"Only exercise cards carry one; expected null for a {kind} card.",
        )


def lab_problems(slug: Any) -> list[str]:
    """Problems of a lab card's lab: the slug of a lab the catalogue offers."""
    labs = lab_selectors.catalogue()
    if not isinstance(slug, str) or not slug:
        return [f"Expected the slug of a lab ({', '.join(labs)}), got {type_name(slug)}."]
    if slug not in labs:
        return [f"Expected the slug of a lab ({', '.join(labs)}), got {slug!r}."]
    return []


def _card_lab_problems(problems: Problems, kind: Any, lab: Any) -> None:
    """A lab card names its lab; another kind of card names none."""
    if kind == "lab":
        for message in lab_problems(lab):
            _add(problems, "lab", message)
    elif lab is not None and kind in CARD_KINDS:
        _add(problems, "lab", f"Only lab cards name a lab; expected null for a {kind} card.")


def key_problems(key: Any, *, taken: bool = False) -> Problems:
    """A card's key: a slug, unique within its deck (``taken`` says another card has it)."""
    if key in (None, ""):
        return {}
    if not is_slug(key, KEY_MAX):
        return {
            "key": [f"Expected a slug (letters, digits, '-', '_'; at most {KEY_MAX}), got {key!r}."]
        }
    if taken:
        return {
            "key": [
                f"Another card in this deck already has the key {key!r}; "
                "keys are unique within a deck, so choose another one."
            ]
        }
    return {}


# --- The lesson: its sections, and the section a card points to ---------------------------

SECTION_KEY_MAX = 80
SECTION_TITLE_MAX = 200
MAX_SECTIONS = 100


def section_problems(*, key: Any, title: Any, body: Any) -> Problems:
    """Problems of one lesson section: a slug key, a title, a Markdown body whose
    ``{{figure:NAME}}`` lines name figures that exist. Its math is checked apart
    (``broken_formula``): a deck file refuses broken TeX, the admin warns."""
    problems: Problems = {}
    if not is_slug(key, SECTION_KEY_MAX):
        _add(
            problems,
            "key",
            f"Expected a slug (letters, digits, '-', '_'; at most {SECTION_KEY_MAX}), got {key!r}.",
        )
    if not isinstance(title, str) or not title.strip() or len(title) > SECTION_TITLE_MAX:
        _add(
            problems,
            "title",
            f"Expected text of 1 to {SECTION_TITLE_MAX} characters, got {title!r}.",
        )
    elif "\x00" in title:
        _add(problems, "title", "Contains a NUL character (\\x00); remove it.")
    _text_problems(problems, "body", body)
    if isinstance(body, str) and "body" not in problems:
        if not body.strip():
            _add(problems, "body", "Expected Markdown text, got an empty string.")
        for message in figure_problems(body):
            _add(problems, "body", message)
    return problems


def lesson_section_problems(section: Any, keys: Any) -> Problems:
    """A card's ``lesson_section``: null, or the key of a section of its deck's lesson."""
    if section is None:
        return {}
    keys = list(keys)
    if not isinstance(section, str) or section not in keys:
        offered = ", ".join(keys) if keys else "none: the deck has no lesson sections"
        shown = repr(section) if isinstance(section, str) else type_name(section)
        return {
            "lesson_section": [
                f"Expected null or the key of a section of the deck's lesson ({offered}), "
                f"got {shown}."
            ]
        }
    return {}


def broken_formula(text: str) -> str | None:
    """The first ``$...$`` formula in ``text`` that the renderer cannot convert, if any."""
    if "$" not in (text or ""):
        return None
    for tex, display in formulas(text):
        if not formula_renders(tex, display):
            return tex
    return None


def math_warnings(**texts: str) -> Problems:
    """``{field: ["The formula $...$ does not render ..."]}`` for each text with broken TeX."""
    problems: Problems = {}
    for field, text in texts.items():
        bad = broken_formula(text)
        if bad is not None:
            _add(problems, field, f"Math does not render: ${bad}$")
    return problems
