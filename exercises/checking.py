# One module on purpose: marking, follow-on credit and the diagnosis share the cell checks.
"""Checking a learner's answers against an exercise's solution, with a diagnosis.

Pure: no Django. A cell is right when ``|given - expected| <= atol + rtol * |expected|``.

An ask marked ``exact`` (a count, a shape) must be that integer exactly.

Error carried forward: a part the kind computes from earlier asked parts
(``kind.follow_on``) is also checked against what follows from the learner's own
earlier parts. When those earlier parts are right, a cell that follows from them is
right too, so rounding a step to three decimals never costs a later one. When they are
wrong and the part follows from them everywhere, the part ``follows``: it earns half
credit and stays not correct.

Score: the mean over parts of each part's credit, the share of its right cells (a number
is one cell), at least one half for a part that follows. ``correct`` means every cell of
every part is right.

Diagnosis: only the first wrong step (the first part that is neither right nor follows)
is diagnosed. A mistake of the kind (``kind.mistakes``, codes of ``MISTAKES``) is named
when the mistake changes that step at all and the learner's part matches that step done
the mistaken way, either from the learner's own earlier parts (``kind.follow_on(...,
recipe)``) or along the whole mistaken chain from the inputs (``kind.answers_under``)
whose earlier asked parts match the learner's too. So right weights followed by A^T V
are never blamed on a softmax down the columns, which would have changed the weights.

``variant_problems`` uses the same marking to decide whether a generated variant tells
right from wrong: every registered mistake of its kind, done exactly or rounding every
step to three decimals, must be marked not correct, and the right method rounded that way
must be marked correct.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

FOLLOW_CREDIT = 0.5  # the credit of a part that is right given the learner's own earlier parts


@dataclass(frozen=True)
class Mistake:
    code: str
    text: str
    # Passed to ``kind.answers_under``: how the mistaken computation differs.
    recipe: Mapping[str, Any]


MISTAKES: dict[str, Mistake] = {
    m.code: m
    for m in (
        Mistake(
            "no_scale",
            "This matches the scores without dividing by sqrt(d_k): scale Q K^T by 1/sqrt(d_k) "
            "before the softmax.",
            {"scale": "none"},
        ),
        Mistake(
            "scale_by_d_model",
            "This matches dividing by sqrt(d_model): each head divides by the square root of its "
            "own width, d_k = d_model / h.",
            {"scale": "sqrt_d_model"},
        ),
        Mistake(
            "no_mask",
            "This matches ignoring the mask: blocked scores become minus infinity before the "
            "softmax, so their weights are exactly 0.",
            {"mask": "ignored"},
        ),
        Mistake(
            "mask_after_softmax",
            "This matches zeroing the blocked weights after the softmax without renormalising: "
            "apply the mask to the scores (minus infinity) before the softmax, so each row "
            "still sums to 1.",
            {"mask": "zero_after"},
        ),
        Mistake(
            "mask_as_zero_score",
            "This matches setting blocked scores to 0 instead of minus infinity: a score of 0 "
            "still gets weight exp(0) = 1 before normalising.",
            {"mask": "zero_score"},
        ),
        Mistake(
            "softmax_over_queries",
            "This matches a softmax down each column: the softmax runs along each row, over the "
            "keys, so every row of the weights sums to 1.",
            {"softmax_axis": 0},
        ),
        Mistake(
            "scores_transposed",
            "This matches K Q^T, the product in the wrong order: score (i, j) is query i against "
            "key j, so compute Q K^T (rows are queries, columns keys).",
            {"scores": "k_q"},
        ),
        Mistake(
            "k_not_transposed",
            "This matches Q K without transposing K: the scores are Q K^T, each query dotted "
            "with each key's row.",
            {"scores": "q_k"},
        ),
        Mistake(
            "weights_transposed_in_output",
            "This matches A^T V: output row i mixes the value rows with row i of the weights, "
            "so compute A V.",
            {"mix": "a_t_v"},
        ),
        Mistake(
            "d_model_for_d_k",
            "This uses d_model where each head has d_k = d_model / h columns.",
            {"head_width": "d_model"},
        ),
        Mistake(
            "pe_concatenated",
            "This is the lab code's layout, all sines first and all cosines after them: the "
            "same encoding with the dimensions reordered, not a wrong one. This exercise asks "
            "for the paper's interleaved layout: sine on even dimensions 2i, cosine on odd "
            "ones 2i+1.",
            {"pe_layout": "sines_then_cosines"},
        ),
        Mistake(
            "pe_interleaved",
            "This is the paper's interleaved layout, sine on even dimensions and cosine on odd "
            "ones: the same encoding with the dimensions reordered, not a wrong one. This "
            "exercise asks for the lab code's layout: all sines first, then all cosines.",
            {"pe_layout": "interleaved"},
        ),
        Mistake(
            "pe_sin_cos_swapped",
            "This swaps sine and cosine: in the layout asked, the sine of each angle comes "
            "before its cosine.",
            {"pe_layout": "swapped"},
        ),
        Mistake(
            "sd_for_variance",
            "This is the standard deviation, sqrt(d_k); the variance of a sum of d_k "
            "independent unit-variance products is d_k.",
            {"scaling": "sd"},
        ),
        Mistake(
            "divided_by_d_k",
            "This matches dividing the scores by d_k: the scale is 1/sqrt(d_k), which keeps "
            "the scores' variance at 1 instead of shrinking it to 1/d_k.",
            {"scale": "d_k"},
        ),
        Mistake(
            "scale_swapped",
            "The scaled and unscaled weights are swapped: dividing by sqrt(d_k) makes the row "
            "flatter, not sharper.",
            {"scaling": "swapped"},
        ),
        Mistake(
            "bytes_one_head",
            "This counts one score matrix only: multiply by the heads and the layers too.",
            {"cost": "one_head"},
        ),
        Mistake(
            "high_weight_as_reliance",
            "This takes the highest attention weight as reliance: a high weight is not "
            "evidence that the model relies on the token. Judge by the change in the output "
            "when the token is removed: large and consistent across inputs, or not.",
            {"ablation": "weight_as_reliance"},
        ),
        Mistake(
            "ablation_masked_query",
            "This matches masking the token as a query (blocking its row): the [CLS] row that "
            "is read out does not change, so nothing does. Remove the token as a key: its "
            "column becomes minus infinity in the [CLS] row and the other weights renormalise.",
            {"ablation": "query_mask"},
        ),
        Mistake(
            "low_weight_as_decoration",
            "This dismisses the token because another token has more weight in some input: "
            "a lower weight is no evidence that the model ignores the token. Judge by the "
            "change in the output when the token is removed, not by its weight.",
            {"ablation": "low_weight_as_decoration"},
        ),
        Mistake(
            "mixed_as_decoration",
            "This calls large changes in opposite directions decoration: removing the token "
            "moves the prediction a lot, so the model does use it, though not as one "
            "consistent reason. Decoration means every change is small.",
            {"ablation": "mixed_as_decoration"},
        ),
        Mistake(
            "share_qk_only",
            "This counts only Q K^T in the n\N{MULTIPLICATION SIGN}n part: A V costs another n² d multiply-adds.",
            {"cost": "qk_only"},
        ),
        Mistake(
            "causal_mask_transposed",
            "This matches the causal mask transposed: each query read itself and the keys "
            "after it. A query may read itself and the keys before it; the keys after its own "
            "position are blocked.",
            {"mask": "transposed"},
        ),
        Mistake(
            "padding_on_queries",
            "This matches blocking the padded positions as queries (their rows left at 0) "
            "while the real tokens still read the padding: the padding mask blocks the padded "
            "keys, the columns, for every query.",
            {"mask": "queries"},
        ),
        Mistake(
            "w_q_w_k_swapped",
            "This matches swapping W_Q and W_K: the queries are X W_Q and the keys X W_K.",
            {"projection": "w_q_w_k_swapped"},
        ),
        Mistake(
            "sqrt_d_model_in_projection",
            "This matches dividing by sqrt(d_model), the width of the token vectors: the "
            "scale is 1/sqrt(d_k), the width of the queries and keys.",
            {"scale": "sqrt_d_model"},
        ),
        Mistake(
            "heads_concatenated_in_reverse",
            "This matches concatenating the heads' outputs in reverse: head 1's columns come "
            "first, then head 2's, and so on, before W_O.",
            {"concat": "reversed"},
        ),
        Mistake(
            "w_o_left_out",
            "This matches the heads' outputs concatenated without W_O: the block's output is "
            "that concatenation times W_O.",
            {"concat": "no_w_o"},
        ),
        Mistake(
            "params_without_w_o",
            "This counts W_Q, W_K and W_V only, 3 d_model²: the output projection W_O adds "
            "another d_model², 4 d_model² in all.",
            {"cost": "no_w_o"},
        ),
        Mistake(
            "ffn_one_matrix",
            "This counts one matrix of the feed-forward network, d_model \N{MULTIPLICATION SIGN} 4 d_model: "
            "it has two, up to 4 d_model and back, 8 d_model² in all.",
            {"cost": "ffn_one_matrix"},
        ),
        Mistake(
            "share_without_w_o",
            "This leaves W_O out of the per-token part: the projections W_Q, W_K, W_V and W_O "
            "take 4 n d² multiply-adds and the feed-forward network 8 n d², 12 n d² in all, "
            "so the share is n / (n + 6 d).",
            {"cost": "share_no_w_o"},
        ),
        Mistake(
            "params_with_biases",
            "This adds the biases: the question counts the weight matrices only, 4 d_model² "
            "for W_Q, W_K, W_V, W_O and 8 d_model² for the feed-forward network.",
            {"cost": "biases"},
        ),
    )
}


class AnswerError(ValueError):
    """Malformed answers: ``errors`` maps a part name to what was expected and what came."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


@dataclass
class PartResult:
    correct: bool
    wrong_cells: list[list[int]]
    message: str
    right_cells: int
    cells: int
    diagnosis: list[str] = field(default_factory=list)
    follows: bool = False
    follows_from: str | None = None

    @property
    def credit(self) -> float:
        share = self.right_cells / self.cells if self.cells else 0.0
        return max(share, FOLLOW_CREDIT) if self.follows else share

    def as_dict(self) -> dict[str, Any]:
        out = {
            "correct": self.correct,
            "wrong_cells": self.wrong_cells,
            "message": self.message,
            "follows": self.follows,
        }
        if self.follows:
            out["follows_from"] = self.follows_from
        return out


@dataclass
class CheckResult:
    correct: bool
    score: float
    parts: dict[str, PartResult]
    diagnosis: list[dict[str, Any]]
    first_wrong: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "correct": self.correct,
            "score": self.score,
            "parts": {name: part.as_dict() for name, part in self.parts.items()},
            "diagnosis": self.diagnosis,
            "first_wrong": self.first_wrong,
        }


def describe_shape(shape: Sequence[int]) -> str:
    """The JSON a part of ``shape`` takes, for the API's messages (pages use ``cells.shape_words``)."""
    if not shape:
        return "a number (shape [])"
    if len(shape) == 1:
        return f"a list of {shape[0]} numbers (shape [{shape[0]}])"
    return f"a {shape[0]}\N{MULTIPLICATION SIGN}{shape[1]} matrix: {shape[0]} rows of {shape[1]} numbers (shape [{shape[0]}, {shape[1]}])"


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "an object"
    return repr(value)


def _number(value: Any, where: str) -> float:
    # JSON numbers only: a boolean is not a number here, nor is a numeric string.
    if type(value) is float:
        if math.isfinite(value):
            return value
        raise ValueError(f"{where} is {value!r}; only finite numbers are accepted")
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:
            raise ValueError(f"{where} is too large to be a number") from None
    raise ValueError(f"{where} is {_kind_of(value)}, not a number")


def parse_answer(value: Any, shape: Sequence[int]) -> list[float]:
    """``value`` as a flat list of floats in row-major order; ValueError says what is wrong."""
    if not shape:
        return [_number(value, "the value")]
    if not isinstance(value, list) or len(value) != shape[0]:
        raise ValueError(f"got {_kind_of(value)}")
    if len(shape) == 1:
        return [_number(v, f"entry [{i}]") for i, v in enumerate(value)]
    flat: list[float] = []
    width = shape[1]
    for r, row in enumerate(value):
        if not isinstance(row, list) or len(row) != width:
            raise ValueError(f"row {r} is {_kind_of(row)}")
        flat.extend(_number(v, f"entry [{r}, {c}]") for c, v in enumerate(row))
    return flat


def _transposed_hint(value: Any, shape: Sequence[int]) -> str:
    if (
        len(shape) == 2
        and shape[0] != shape[1]
        and isinstance(value, list)
        and len(value) == shape[1]
    ) and all(isinstance(row, list) and len(row) == shape[0] for row in value):
        return " It looks transposed."
    return ""


def _expected_words(ask: Mapping[str, Any]) -> str:
    if ask.get("choices"):
        return describe_choices(ask["choices"])
    return describe_shape(ask["shape"])


def _parsed_part(ask: Mapping[str, Any], value: Any) -> np.ndarray:
    """One part's answer as an array of its shape (a choice as its index); ValueError says
    what is wrong, in the words of the part's message."""
    if ask.get("choices"):
        return choice_index(ask["choices"], value)
    shape = ask["shape"]
    try:
        flat = parse_answer(value, shape)
    except ValueError as exc:
        raise ValueError(
            f"Expected {describe_shape(shape)}: {exc}.{_transposed_hint(value, shape)}"
        ) from None
    return np.array(flat, dtype=float).reshape(shape)


def validate_answers(asks: Sequence[Mapping[str, Any]], answers: Any) -> dict[str, np.ndarray]:
    """Every asked part present, nothing else, each a finite number array of its shape."""
    if not isinstance(answers, Mapping):
        raise AnswerError(
            {
                "answers": f"Expected an object mapping part names to values, got {_kind_of(answers)}."
            }
        )
    shapes = {ask["name"]: ask["shape"] for ask in asks}
    errors: dict[str, str] = {}
    for name in answers:
        if name not in shapes:
            errors[str(name)] = (
                f"Unknown part {name!r}; this exercise asks for: {', '.join(shapes)}."
            )
    parsed: dict[str, np.ndarray] = {}
    for ask in asks:
        name = ask["name"]
        if name not in answers:
            errors[name] = f"Missing; expected {_expected_words(ask)}."
            continue
        try:
            parsed[name] = _parsed_part(ask, answers[name])
        except ValueError as exc:
            errors[name] = str(exc)
    if errors:
        raise AnswerError(errors)
    return parsed


def _exact_int(value: Any) -> int | None:
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, int | np.integer):
        return int(value)
    if (
        isinstance(value, float | np.floating)
        and math.isfinite(value)
        and float(value).is_integer()
    ):
        return int(value)
    return None


@np.errstate(invalid="ignore", over="ignore")
def _cells_ok(
    given: Any, expected: Any, *, exact: bool, rtol: float, atol: float, slack: Any = 0.0
) -> np.ndarray:
    """Per cell: is ``given`` right against ``expected``? Exact asks compare whole numbers."""
    if exact:
        g = np.asarray(given, dtype=object)
        e = np.asarray(expected, dtype=object)
        if g.shape != e.shape:
            return np.zeros(e.shape, dtype=bool)
        flat = [
            _exact_int(a) is not None and _exact_int(a) == _exact_int(b)
            for a, b in zip(g.ravel().tolist(), e.ravel().tolist(), strict=True)
        ]
        return np.array(flat, dtype=bool).reshape(e.shape)
    g = np.asarray(given, dtype=float)
    e = np.asarray(expected, dtype=float)
    if g.shape != e.shape:
        return np.zeros(e.shape, dtype=bool)
    close: np.ndarray = np.abs(g - e) <= atol + rtol * np.abs(e) + slack
    return close


def _resolve_kind(kind: Any) -> Any:
    if isinstance(kind, str):
        from exercises.kinds import KINDS

        return KINDS.get(kind)
    return kind


# A learner's numbers can be anything finite: a kind's recomputation may then fail. That
# only means nothing follows from them; it is never an error.
_RECOMPUTE_ERRORS = (ValueError, KeyError, TypeError, IndexError, ZeroDivisionError, OverflowError)


def _follow_on(
    kind: Any, inputs: Any, given: Mapping[str, Any], recipe: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    if kind is None or inputs is None:
        return {}
    try:
        with np.errstate(all="ignore"):
            follows: dict[str, Any] = kind.follow_on(inputs, given, recipe)
            return follows
    except _RECOMPUTE_ERRORS:
        return {}


def _wrong_message(exact: bool, shape: Sequence[int], cells: int, right: int) -> str:
    if exact:
        if shape:
            return f"{cells - right} of {cells} entries are not the exact whole number expected."
        return "Not the exact whole number expected."
    if shape:
        return f"{cells - right} of {cells} entries are outside the tolerance."
    return "Not within the tolerance of the expected value."


def _against_own(
    ask: Mapping[str, Any],
    value: Any,
    follow: Any,
    parts: Mapping[str, PartResult],
    floats: Mapping[str, np.ndarray],
    ok: np.ndarray,
    rtol: float,
    atol: float,
    expected: Any,
) -> tuple[np.ndarray, bool]:
    """A part checked against what follows from the learner's earlier parts (``follow``):
    the cells now accepted, and whether the whole part follows from wrong earlier parts
    (or, for a part judged on its own size, from right ones that carry it too far)."""
    exact = bool(ask.get("exact"))
    own = _cells_ok(
        value, _cells(ask, follow.value), exact=exact, rtol=rtol, atol=atol, slack=follow.slack
    )
    if all(parts[u].correct for u in follow.uses):
        if follow.own_size:
            # A difference or ratio: right earlier parts carry only their rounding into it.
            near = ok | _cells_ok(
                value, _cells(ask, expected), exact=exact, rtol=rtol, atol=atol, slack=follow.slack
            )
            return near, bool(own.all() and not near.all())
        return ok | own, False  # right from right earlier parts: their rounding is carried
    # An earlier step left at zero is no step to follow from: all-zero weights give an
    # all-zero output, which earns nothing.
    return ok, bool(own.all() and any(np.any(floats[u]) for u in follow.uses))


def mark(
    *,
    asks: Sequence[Mapping[str, Any]],
    solution: Mapping[str, Any],
    given: Mapping[str, Any],
    rtol: float,
    atol: float,
    inputs: Mapping[str, Any] | None = None,
    kind: Any = None,
) -> tuple[dict[str, PartResult], str | None]:
    """Per-part verdicts of well-formed answers, and the first wrong step (None when right).

    ``given`` maps each asked part to an array of its shape (exact parts may hold Python
    integers, which stay exact beyond a float's 2**53).
    """
    kind = _resolve_kind(kind)
    floats = {name: np.asarray(value, dtype=float) for name, value in given.items()}
    follows = _follow_on(kind, inputs, floats)
    parts: dict[str, PartResult] = {}
    first_wrong: str | None = None
    for ask in asks:
        name, shape, exact = ask["name"], ask["shape"], bool(ask.get("exact"))
        ok = _cells_ok(given[name], _cells(ask, solution[name]), exact=exact, rtol=rtol, atol=atol)
        follow = follows.get(name)
        follows_part = False
        if not ok.all() and follow is not None and all(u in parts for u in follow.uses):
            ok, follows_part = _against_own(
                ask, given[name], follow, parts, floats, ok, rtol, atol, solution[name]
            )
        cells = ok.size
        right = int(ok.sum())
        if right == cells:
            parts[name] = PartResult(True, [], "Correct.", right, cells)
            continue
        wrong_cells = [[]] if not shape else np.argwhere(~ok).tolist()
        if follows_part and follow is not None:
            message = (
                f"Wrong against the expected answer, but it follows from {follow.words}: "
                "right given your own earlier step, half credit."
            )
            parts[name] = PartResult(
                False, wrong_cells, message, right, cells, follows=True, follows_from=follow.words
            )
            continue
        message = (
            "Not the choice the numbers support."
            if ask.get("choices")
            else _wrong_message(exact, shape, cells, right)
        )
        parts[name] = PartResult(False, wrong_cells, message, right, cells)
        if first_wrong is None:
            first_wrong = name
    return parts, first_wrong


def check_given(
    *,
    asks: Sequence[Mapping[str, Any]],
    solution: Mapping[str, Any],
    given: Mapping[str, Any],
    rtol: float,
    atol: float,
    inputs: Mapping[str, Any] | None = None,
    kind: Any = None,
    diagnose: bool = True,
) -> CheckResult:
    """Mark well-formed answers, try the whole answers the prompt also allows, diagnose."""
    kind = _resolve_kind(kind)
    parts, first_wrong = mark(
        asks=asks, solution=solution, given=given, rtol=rtol, atol=atol, inputs=inputs, kind=kind
    )
    if first_wrong is not None and kind is not None and inputs is not None:
        for label, other in kind.accepted_alternatives(inputs):
            alt_parts, _ = mark(
                asks=asks,
                solution=other,
                given=given,
                rtol=rtol,
                atol=atol,
                inputs=inputs,
                kind=kind,
            )
            if all(p.correct for p in alt_parts.values()):
                for part in alt_parts.values():
                    part.message = f"Correct: {label}."
                parts, first_wrong = alt_parts, None
                break
    correct = all(p.correct for p in parts.values())
    diagnosis: list[dict[str, Any]] = []
    if diagnose and first_wrong is not None and kind is not None and inputs is not None:
        diagnosis = _diagnose(kind, inputs, asks, solution, given, parts, first_wrong, rtol, atol)
        part = parts[first_wrong]
        part.message = f"{part.message} This is the first wrong step."
    score = sum(p.credit for p in parts.values()) / len(parts) if parts else 0.0
    return CheckResult(
        correct=correct,
        score=round(score, 4),
        parts=parts,
        diagnosis=diagnosis,
        first_wrong=first_wrong,
    )


def check_answers(
    *,
    asks: Sequence[Mapping[str, Any]],
    solution: Mapping[str, Any],
    answers: Any,
    rtol: float,
    atol: float,
    inputs: Mapping[str, Any] | None = None,
    kind: Any = None,
) -> CheckResult:
    """Check ``answers`` (part -> JSON value); raises ``AnswerError`` when malformed.

    ``kind`` (an ``ExerciseKind`` or its name) and ``inputs`` enable error carried
    forward, accepted alternatives and the diagnosis.
    """
    given: dict[str, Any] = dict(validate_answers(asks, answers))
    for ask in asks:
        if ask.get("exact"):
            # The JSON value itself: a count beyond 2**53 stays exact.
            given[ask["name"]] = np.asarray(answers[ask["name"]], dtype=object)
    return check_given(
        asks=asks, solution=solution, given=given, rtol=rtol, atol=atol, inputs=inputs, kind=kind
    )


def _answers_under(kind: Any, inputs: Any, recipe: Mapping[str, Any]) -> Any:
    """The kind's whole mistaken chain, or None where it cannot be recomputed."""
    try:
        with np.errstate(all="ignore"):
            return kind.answers_under(inputs, recipe)
    except _RECOMPUTE_ERRORS:
        return None


def _agree(
    ask: Mapping[str, Any], cells: Any, alt: Any, rtol: float, atol: float, slack: Any = 0.0
) -> bool:
    """Every cell of ``cells`` (already in the part's cell form) matches ``alt``."""
    ok = _cells_ok(
        cells, _cells(ask, alt), exact=bool(ask.get("exact")), rtol=rtol, atol=atol, slack=slack
    )
    return bool(ok.all())


def _diagnose(
    kind: Any,
    inputs: Any,
    asks: Sequence[Mapping[str, Any]],
    solution: Mapping[str, Any],
    given: Mapping[str, Any],
    parts: dict[str, PartResult],
    step: str,
    rtol: float,
    atol: float,
) -> list[dict[str, Any]]:
    """The kind's mistakes that explain the first wrong step ``step``.

    A mistake explains it when the learner's part matches that step done the mistaken way
    (a) from the learner's own earlier parts, or (b) from the inputs along the whole
    mistaken chain whose earlier asked parts also match the learner's; and the mistake
    changes the step at all.
    """
    ask_of = {a["name"]: a for a in asks}
    names = list(ask_of)
    earlier = names[: names.index(step)]
    floats = {name: np.asarray(value, dtype=float) for name, value in given.items()}
    right_follow = _follow_on(kind, inputs, floats).get(step)

    def matches(alt: Any, slack: Any = 0.0) -> bool:
        return _agree(ask_of[step], given[step], alt, rtol, atol, slack)

    def same(name: str, a: Any, b: Any) -> bool:
        return _agree(ask_of[name], _cells(ask_of[name], a), b, rtol, atol)

    later = names[names.index(step) + 1 :]
    found: list[tuple[dict[str, Any], bool]] = []
    for code in kind.mistakes:
        mistake = MISTAKES[code]
        explained = False
        follow = _follow_on(kind, inputs, floats, mistake.recipe).get(step)
        if (
            follow is not None
            and right_follow is not None
            and all(parts.get(u) and parts[u].correct for u in follow.uses)
            and not same(step, follow.value, right_follow.value)
        ):
            explained = matches(follow.value, follow.slack)
        chain = _answers_under(kind, inputs, mistake.recipe)
        if not explained:
            explained = bool(
                chain
                and step in chain
                and not same(step, chain[step], solution[step])
                and all(same(n, given[n], chain[n]) for n in earlier if n in chain)
                and matches(chain[step])
            )
        if explained:
            # Does the mistake explain the later parts too, the way they were written?
            whole = bool(chain) and all(same(n, given[n], chain[n]) for n in later if n in chain)
            found.append(({"code": code, "parts": [step], "text": mistake.text}, whole))
    return _named(found, parts[step])


def _named(found: list[tuple[dict[str, Any], bool]], part: PartResult) -> list[dict[str, Any]]:
    """The diagnosis of ``part`` from ``(entry, explains the later parts too)`` pairs.

    Two mistakes can make the same first wrong step (the scaled weights left unscaled, or
    both rows swapped): the one that also explains the later parts is the one made.
    """
    if any(whole for _, whole in found):
        found = [(entry, whole) for entry, whole in found if whole]
    part.diagnosis.extend(entry["code"] for entry, _ in found)
    return [entry for entry, _ in found]


# --- Does a variant tell right from wrong? ---------------------------------------------


def variant_problems(kind: Any, generated: Any, decimals: int = 3) -> list[str]:
    """Why ``generated`` may not be offered; empty when it tells right from wrong.

    It is degenerate, or the right method with every step rounded to ``decimals`` is not
    accepted, or some registered mistake of the kind, done exactly or rounding that way, is.
    """
    kind = _resolve_kind(kind)
    reason = kind.degenerate(generated)
    if reason:
        return [reason]
    problems = []
    right = kind.answers_under(generated.inputs, {}, decimals)
    if not accepted(kind, generated, right):
        problems.append(f"the right method rounded to {decimals} decimals is rejected")
    problems += close_input_problems(kind, generated)
    for code in kind.mistakes:
        for step_decimals in (None, decimals):
            answers = kind.answers_under(generated.inputs, MISTAKES[code].recipe, step_decimals)
            if answers is None:
                break  # the mistake cannot be made on these inputs
            if accepted(kind, generated, answers):
                problems.append(f"{code} is accepted")
                break
    return problems


def close_input_problems(kind: Any, generated: Any) -> list[str]:
    """A part judged on its own size (``Follow.own_size``: a difference or ratio of earlier
    parts) must not be accepted off that size because its inputs were close: with its
    earlier parts moved to the edges of their tolerance, each way, and the part computed
    from them, the answer is marked correct only where the part is still within its own
    tolerance (and the rounding the follow carries) of the expected value."""
    right = kind.answers_under(generated.inputs, {})
    floats = {
        ask["name"]: np.asarray(_cells(ask, right[ask["name"]]), dtype=float)
        for ask in generated.asks
        if ask["name"] in right
    }
    problems = []
    for name, follow in _follow_on(kind, generated.inputs, floats).items():
        if not follow.own_size or not follow.uses:
            continue
        for signs in itertools.product((1.0, -1.0), repeat=len(follow.uses)):
            moved = dict(floats)
            for use, sign in zip(follow.uses, signs, strict=True):
                edge = generated.atol + generated.rtol * np.abs(floats[use])
                moved[use] = floats[use] + sign * EDGE * edge
            carried = _follow_on(kind, generated.inputs, moved).get(name)
            if carried is None:
                continue
            moved[name] = np.asarray(carried.value, dtype=float)
            off = not _cells_ok(
                moved[name],
                generated.solution[name],
                exact=False,
                rtol=generated.rtol,
                atol=generated.atol,
                slack=follow.slack,
            ).all()
            if off and accepted(kind, generated, {**right, **moved}):
                problems.append(f"a wrong {name} is accepted because its inputs were close")
                break
    return problems


EDGE = 0.99  # how far into its tolerance an earlier part is moved by ``close_input_problems``


def accepted(kind: Any, generated: Any, answers: Mapping[str, Any]) -> bool:
    """Would these answers (a value per asked part) be marked correct?"""
    # A prediction asked first is answered on its own and marked apart from the numbers.
    asks = (
        generated.asks[1:]
        if generated.asks and generated.asks[0].get("choices")
        else generated.asks
    )
    given = {}
    for ask in asks:
        value = _cells(ask, answers[ask["name"]])
        given[ask["name"]] = (
            np.asarray(value, dtype=object) if ask.get("exact") else np.asarray(value, dtype=float)
        )
        if not ask.get("exact") and not np.isfinite(given[ask["name"]]).all():
            return False
    result = check_given(
        asks=asks,
        solution=generated.solution,
        given=given,
        rtol=generated.rtol,
        atol=generated.atol,
        inputs=generated.inputs,
        kind=kind,
        diagnose=False,
    )
    return result.correct


# --- Parts answered with one of a list of choices ---------------------------------------
# An ask with ``choices`` (a list of strings) takes one of them. It is checked like a
# number: its answer and the expected choice become their positions in the list, so
# the score, ``wrong_cells`` ([[]]) and the diagnosis treat it as one cell.


def describe_choices(choices: Sequence[str]) -> str:
    return "one of " + ", ".join(repr(c) for c in choices)


def choice_index(choices: Sequence[str], value: Any) -> np.ndarray:
    """The position of ``value`` among ``choices``; ValueError names what came and what fits."""
    if isinstance(value, str) and value in choices:
        return np.asarray(float(list(choices).index(value)))
    got = repr(value) if isinstance(value, str) else _kind_of(value)
    raise ValueError(f"Expected {describe_choices(choices)}; got {got}.")


def _cells(ask: Mapping[str, Any], value: Any) -> Any:
    """``value`` as the cells it is marked by: a choice (a string) becomes its position."""
    if ask.get("choices") and isinstance(value, str):
        return choice_index(ask["choices"], value) if value in ask["choices"] else np.nan
    return value
