"""Lab: the lesson's last step, removing the residual connection, as a question whose
answer is checked against what the learner's own block does."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from labs.catalogue.block import HINTS as BLOCK_HINTS
from labs.catalogue.block import block_source, output, right_block
from labs.catalogue.references import block, block_variants, head_weights, multi_head_variants
from labs.judging import CallProblem, Failure, LabTest, Results, judge, layer_norm_forms
from labs.spec import Call, Lab, RunResult, Verdict
from labs.values import TOLERANCE, as_number, describe, first_match, matches

STATEMENTS = {
    1: (
        "Nothing measurable changes: LayerNorm still gives every row mean 0 and variance 1, "
        "and each output row follows its own input token as closely as before."
    ),
    2: (
        "Every row still has mean 0 and variance 1, but the outputs stop tracking their own "
        "input tokens: the correlation of each output row with its input row falls, because "
        "attention alone only mixes the value vectors."
    ),
    3: (
        "The rows are no longer normalised: their means drift away from 0, since nothing is "
        "added back before the LayerNorm."
    ),
    4: "The output changes shape: without the input added back, it stays (n, d_k).",
}
RIGHT = 2
# How far the mean correlation of output rows with input rows must fall without the
# residual for statement 2 to hold; the lab's inputs are drawn so the reference falls by
# at least DRAWN_DROP (over 300 random draws it never fell by less than 0.29).
MIN_DROP = 0.15
DRAWN_DROP = 0.3

_choices = "\n".join(f"{k}. {text}" for k, text in STATEMENTS.items())
PROMPT = rf"""
The lesson's lab ends: *remove the residual connection and describe what changes in the
output statistics.* Give `block` from the block lab a `residual` argument:
`residual=True` is $\operatorname{{LayerNorm}}(X + \operatorname{{MultiHead}}(X))$ as before,
`residual=False` is $\operatorname{{LayerNorm}}(\operatorname{{MultiHead}}(X))$. Run both on the same
tokens and compare: each row's mean and variance, and how well output row $i$ correlates
with input row $i$.

Then make `residual_answer()` return the number of the statement that describes what
changes:

{_choices}

The service draws the sizes and the weights afresh on every run, calls your block both
ways, and checks that the statement you chose holds on your block's own outputs. The
block's outputs must be `ndarray`s with a floating dtype (float64 or float32 both pass),
each entry {TOLERANCE.words()}; LayerNorm's $\varepsilon$ follows the block lab's rule.
"""

STARTER = '''import numpy as np


def block(X, W_Q, W_K, W_V, W_O, causal=False, residual=True):
    """(n, d_model) -> (n, d_model): LayerNorm(X + MultiHead(X)), or without X when
    residual is False."""
    raise NotImplementedError


def residual_answer():
    """-> the number (1 to 4) of the statement that describes what changes."""
    raise NotImplementedError
'''

_WITH_FLAG = ", residual=True"
_COMBINE = "layer_norm(X + mixed if residual else mixed)"


def _source(answer: int, combine: str = _COMBINE) -> str:
    answer_fn = (
        f'\n\ndef residual_answer():\n    """-> the statement that holds."""\n    return {answer}\n'
    )
    return block_source(combine=combine, residual_arg=_WITH_FLAG) + answer_fn


REFERENCE = _source(RIGHT)
MISTAKES = {
    "residual_statement_wrong": _source(1),
    "residual_not_removed": _source(RIGHT, combine="layer_norm(X + mixed)"),
    "residual_flag_inverted": _source(
        RIGHT, combine="layer_norm(mixed if residual else X + mixed)"
    ),
}

TESTS = (
    "with the residual: the engine's block",
    "without the residual: LayerNorm(MultiHead(X))",
    "the statement chosen holds on your outputs",
)
HINTS = (
    BLOCK_HINTS[1],
    "With residual=False, leave X out of the sum: apply LayerNorm (over the last axis) to "
    "MultiHead(X) alone.",
    "Compare your two outputs row by row: their means and variances over the last axis, "
    "and the correlation of output row i with input row i, with and without the residual.",
)


def row_correlation(Y: np.ndarray, X: np.ndarray) -> float:
    """The mean over rows of the correlation of output row i with input row i."""
    a = Y - Y.mean(axis=1, keepdims=True)
    b = X - X.mean(axis=1, keepdims=True)
    denominator = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        per_row = np.where(denominator > 0, (a * b).sum(axis=1) / denominator, 0.0)
    return float(per_row.mean())


def calls(rng: np.random.Generator) -> list[Call]:
    for _ in range(50):
        d_k = int(rng.choice([3, 4, 5]))
        W = head_weights(rng, heads=2, d_model=2 * d_k, d_k=d_k)
        X = rng.normal(0.0, 1.0, (int(rng.integers(5, 9)), 2 * d_k))
        drop = row_correlation(block(X, W), X) - row_correlation(block(X, W, residual=False), X)
        if drop >= DRAWN_DROP:
            break
    weights = (X, W["W_Q"], W["W_K"], W["W_V"], W["W_O"])
    return [
        Call("block/with", "block", weights, {"residual": True}),
        Call("block/without", "block", weights, {"residual": False}),
        Call("residual_answer", "residual_answer"),
    ]


def _inputs(call: Call) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    X, *Ws = call.args
    return np.asarray(X), dict(zip(("W_Q", "W_K", "W_V", "W_O"), Ws, strict=True))


def _with(r: Results) -> Failure | None:
    return right_block(r, "block/with")


def _without(r: Results) -> Failure | str | None:
    X, W = _inputs(r.call("block/without"))
    got = r.value("block/without")
    failure = right_block(r, "block/without", residual=False)
    if failure is not None and matches(block(X, W), got):
        return Failure(
            "block(residual=False) returned the block with the residual: leave X out of the sum",
            failure.expected,
            failure.got,
            failure.input,
        )
    return failure


def _inverted(r: Results) -> bool:
    X, W = _inputs(r.call("block/with"))
    return matches(block(X, W, residual=False), r.get("block/with")) and matches(
        block(X, W), r.get("block/without")
    )


def _diagnose_with(r: Results) -> str:
    if _inverted(r):
        return "residual_flag_inverted"
    X, W = _inputs(r.call("block/with"))
    return first_match(r.get("block/with"), block_variants(X, W))


def _diagnose_without(r: Results) -> str:
    if _inverted(r):
        return "residual_flag_inverted"
    X, W = _inputs(r.call("block/without"))
    got = r.get("block/without")
    if matches(block(X, W), got):
        return "residual_not_removed"
    variants: dict[str, list[np.ndarray]] = {}
    for code, mixed in multi_head_variants(X, W).items():
        candidates: list[np.ndarray | None] = [*mixed] if isinstance(mixed, list) else []
        if not isinstance(mixed, list):
            candidates.append(mixed)
        variants[code] = [
            layer_norm_forms(each)["inside"] for each in candidates if each is not None
        ]
    return first_match(got, variants)


def answer(r: Results) -> int:
    value = r.value("residual_answer")
    number = as_number(value)
    if number is None or number not in STATEMENTS:
        raise CallProblem(
            f"residual_answer() must return one of {', '.join(map(str, STATEMENTS))}; "
            f"got {describe(value)}"
        )
    return int(number)


def _statement(r: Results) -> str | None:
    chosen = answer(r)
    X = np.asarray(r.call("block/with").args[0])
    kept, removed = output(r, "block/with"), output(r, "block/without")
    means = float(np.abs(removed.mean(axis=1)).max())
    variances = removed.var(axis=1)
    before, after = row_correlation(kept, X), row_correlation(removed, X)
    facts = (
        f"without the residual your rows have means within {means:.1g} of 0 and variances "
        f"{variances.min():.3f} to {variances.max():.3f}; the correlation of output rows "
        f"with input rows is {before:.2f} with the residual and {after:.2f} without"
    )
    normalised = means < 1e-4 and bool(np.all(np.abs(variances - 1.0) < 1e-2))
    if chosen == RIGHT and normalised and before - after >= MIN_DROP:
        return None
    if chosen == RIGHT:
        return f"Statement 2 does not hold on your block's outputs: {facts}; check residual=False"
    return f"Statement {chosen} does not describe your block: {facts}"


def _diagnose_statement(r: Results) -> str:
    if as_number(r.get("residual_answer")) in set(STATEMENTS) - {RIGHT}:
        return "residual_statement_wrong"
    return ""


def judge_run(made: Sequence[Call], run: RunResult) -> Verdict:
    tests = (
        LabTest(TESTS[0], _with, HINTS[0], _diagnose_with),
        LabTest(TESTS[1], _without, HINTS[1], _diagnose_without),
        LabTest(TESTS[2], _statement, HINTS[2], _diagnose_statement),
    )
    return judge(tests, made, run)


LAB = Lab(
    slug="without-residual",
    title="Remove the residual connection",
    prompt=PROMPT.strip(),
    starter_code=STARTER,
    reference=REFERENCE,
    tests=TESTS,
    calls=calls,
    judge=judge_run,
    mistakes=MISTAKES,
)
