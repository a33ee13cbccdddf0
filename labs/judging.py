"""What the labs' judges share: the run's results read one call at a time, the tests and
their verdict, and the mistakes a failed test may name, in plain words.

Pure: no Django, and never the learner's code: a judge sees only the values the sandbox
handed back (``RunResult``), read and shown by ``labs.values`` (which never raises on
whatever came). A check that raises still gives a verdict: each test turns what it found
into a sentence that names what was expected and what came.

A failed test carries what was expected, what came back and on which input (small
arrays in full, large ones by shape, dtype and their first entries), and a hint: what to
compute, from what, over which axis, never the answer. The mistake a failed test looks
like is a registered code (``exercises.checking.mistakes.MISTAKES`` or ``LAB_MISTAKES``
below) kept apart from the words: ``TestOutcome.mistake`` and ``Verdict.mistake`` are for
machines; the learner reads ``Verdict.diagnosis``, the mistake's plain text.

The rules every lab shares live here and in ``labs.values``: the tolerance
(``labs.values.TOLERANCE``; each lab states it in its prompt), what counts as an array
(``labs.values.array_problem``: an ``ndarray`` of the right shape and a floating dtype, or
bool for a mask; a list is not an array), and where LayerNorm's eps may go
(``layer_norm_forms``: inside the square root or added to the standard deviation).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from exercises.checking.mistakes import MISTAKES
from labs.spec import Call, RunResult, TestOutcome, Value, Verdict
from labs.values import (
    TOLERANCE,
    Tolerance,
    array_problem,
    matches,
    mismatch,
    quote,
    show,
    show_call,
)

PASSED = "Passed."

# LayerNorm's eps, and the one rule for where it may go (the layer-norm and block labs).
LAYER_NORM_EPS = 1e-5
EPS_RULE = (
    r"$\varepsilon$ may go inside the square root, $\sqrt{\sigma^2 + \varepsilon}$ (the "
    r"lesson's form), or be added to the standard deviation, $\sqrt{\sigma^2} + \varepsilon$: "
    "both are accepted, with any $\\varepsilon$ up to $10^{-5}$."
)


def layer_norm_forms(x: np.ndarray, eps: float = LAYER_NORM_EPS) -> dict[str, np.ndarray]:
    # (..., d) -> {form: (..., d)}: LayerNorm over the last axis, eps in either accepted place
    x = np.asarray(x, dtype=np.float64)
    centred = x - x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return {
        "inside": centred / np.sqrt(var + eps),
        "outside": centred / (np.sqrt(var) + eps),
    }


# Mistakes the labs name that no exercise kind makes (the registry lives with the kinds,
# and exercises imports nothing of labs).
LAB_MISTAKES: dict[str, str] = {
    "softmax_overflow": (
        "This overflows: exp() of a score near 1000 is infinite, and infinity over "
        "infinity is nan. Subtract each row's maximum before exp(): the softmax is "
        "unchanged and exp() never sees a positive number."
    ),
    "softmax_global_max": (
        "This subtracts one maximum taken over the whole array. A row whose scores sit "
        "far below that maximum underflows: every exp() in it is 0, and 0 / 0 is nan. "
        "Subtract each row's own maximum (over the last axis, keepdims=True)."
    ),
    "softmax_over_everything": (
        "This matches one softmax over the whole array: each row (the last axis) is "
        "normalised on its own, so every row sums to 1."
    ),
    "mask_inverted": (
        "This matches the mask inverted: True means blocked, so the keys marked True get "
        "minus infinity and the keys marked False stay open."
    ),
    "mask_when_off": (
        "This matches a causal mask applied when none was asked for: with mask=None (or "
        "causal=False) every query reads every key."
    ),
    "scale_by_d_v": (
        "This matches dividing the scores by the square root of d_v, the values' width: "
        "the scale comes from d_k, the width of the queries and keys."
    ),
    "scale_fixed": (
        "This matches the scores divided by one fixed number whatever the width: read d_k "
        "from the shape of Q (Q.shape[-1]) and divide by its square root."
    ),
    "heads_reshaped_without_transpose": (
        "This matches the heads' outputs, shape (h, n, d_k), reshaped straight to "
        "(n, h·d_k): that mixes tokens and heads. Move the head axis next to the features "
        "first (transpose to (n, h, d_k)), then reshape, so each token's row holds its "
        "heads side by side."
    ),
    "causal_mask_diagonal_blocked": (
        "This blocks the diagonal too: a query may read its own position, so only the "
        "keys strictly after it (np.triu with k=1) are True."
    ),
    "layer_norm_no_centering": (
        "This divides by the standard deviation without subtracting the mean first: "
        "LayerNorm centres each vector (mean 0) and then scales it (variance 1)."
    ),
    "layer_norm_over_tokens": (
        "This normalises each feature over the tokens (axis 0): LayerNorm normalises each "
        "token's vector over its own features, the last axis."
    ),
    "layer_norm_no_eps": (
        "A constant vector has variance 0, and dividing by the square root of 0 gives nan: "
        "add eps, inside the square root or to the standard deviation."
    ),
    "variance_ddof_one": (
        "This divides by the sample variance (ddof=1, dividing by d - 1): LayerNorm uses "
        "the population variance of the d features, dividing by d (NumPy's default, ddof=0)."
    ),
    "norm_before_residual": (
        "This adds the input after normalising, x + LayerNorm(out): the post-LN block "
        "normalises the sum, LayerNorm(x + out), so each output row has mean 0."
    ),
    "residual_left_out": (
        "This matches the block without its residual connection, LayerNorm(attention(X)): "
        "add the input back before the LayerNorm, LayerNorm(X + attention(X))."
    ),
    "residual_not_removed": (
        "block(residual=False) still adds the input back: without the residual the block "
        "is LayerNorm(MultiHead(X)), with X left out of the sum."
    ),
    "residual_flag_inverted": (
        "The residual flag is read the wrong way round: residual=True must add X back, "
        "LayerNorm(X + MultiHead(X)), and residual=False must leave it out."
    ),
    "residual_statement_wrong": (
        "The statement chosen does not hold on your block's own outputs: run it with and "
        "without the residual and compare each row's mean and variance, and how well each "
        "output row correlates with its input row."
    ),
    "positions_ignored": (
        "The outputs with and without positions permute alike: add the position vectors "
        "to the token vectors before attention; the block itself never reads positions."
    ),
    "pe_exponent_without_two": (
        "The 2 is missing from the exponent: this divides pos by 10000 raised to i/d, with "
        "i the pair's number, where the encoding divides by 10000 raised to 2i/d. With the "
        "2 the pairs' frequencies fall from 1 to about 1/10000 across the width; without "
        "it they stop near 1/100, so your slowest pairs turn about a hundred times too fast."
    ),
    "pe_table_pasted": (
        "This returns the same table whatever n and d are asked: compute the positions "
        "from the n and d passed in (np.arange(n), np.arange(d // 2))."
    ),
    "score_bytes_linear": (
        "This grows linearly with n: the score matrix has n × n entries, so doubling the "
        "context quadruples its bytes."
    ),
    "spread_not_scaled": (
        "qk_spread's scaled spread equals the raw one: divide each dot product by the "
        "square root of d_k before taking the standard deviation."
    ),
    "spread_divided_by_d_k": (
        "qk_spread divides the dot products by d_k: dividing by the square root of d_k is "
        "what brings their spread to about 1."
    ),
    "spread_fixed_d_k": (
        "qk_spread uses one fixed width whatever d_k is asked: draw vectors of the d_k "
        "passed in and divide by its square root."
    ),
    "variance_for_sd": (
        "This is the variance of the dot products, about d_k; the spread asked is their "
        "standard deviation, about the square root of d_k."
    ),
}


def mistake_text(code: str) -> str:
    if code in MISTAKES:
        return MISTAKES[code].text
    return LAB_MISTAKES[code]


def diagnosis(code: str) -> str:
    """The diagnosis a learner reads for a mistake: its plain text (the code stays a
    machine field of its own)."""
    return mistake_text(code) if code else ""


def mistake_codes() -> frozenset[str]:
    """Every code a lab may name: none of them may show in what a learner reads."""
    return frozenset(MISTAKES) | frozenset(LAB_MISTAKES)


# --- the run's results, one call at a time ---------------------------------------------------


class CallProblem(Exception):
    """A call gave no value to judge: it raised, or it did not run."""


@dataclass(frozen=True)
class Failure:
    """A failed test in full: the sentence, and what to show beside it. Empty fields are
    filled by the test (its hint) or left out."""

    message: str
    expected: str = ""
    got: str = ""
    input: str = ""
    hint: str = ""


@dataclass(frozen=True)
class Results:
    """The calls made and what each gave back, read one key at a time."""

    calls: Mapping[str, Call]
    run: RunResult

    def call(self, key: str) -> Call:
        return self.calls[key]

    def value(self, key: str) -> Value:
        """What call ``key`` returned; CallProblem with the learner's words when it raised or
        did not run."""
        function = self.calls[key].function
        returned = self.run.returned.get(key) if isinstance(self.run.returned, Mapping) else None
        if returned is None:
            raise CallProblem(f"{function}() was not called: the run stopped before it.")
        if returned.error:
            raise CallProblem(f"{function}() raised {quote(returned.error)}.")
        return returned.value

    def get(self, key: str) -> Value:
        """What call ``key`` returned, or None when it raised or did not run."""
        try:
            return self.value(key)
        except CallProblem:
            return None

    def compare(
        self,
        key: str,
        expected: np.ndarray,
        tol: Tolerance = TOLERANCE,
        accepted: Sequence[np.ndarray] = (),
    ) -> Failure | None:
        """None when call ``key`` returned ``expected`` (or one of ``accepted``, other
        right forms) within ``tol``, else the failure with both values and the input."""
        value = self.value(key)
        if (
            any(matches(each, value, tol) for each in accepted)
            and array_problem(value, np.shape(expected), np.asarray(expected).dtype == np.bool_)
            is None
        ):
            return None
        problem = mismatch(expected, value, tol)
        if problem is None:
            return None
        return Failure(problem, show(np.asarray(expected)), show(value), show_call(self.call(key)))


Check = Callable[[Results], "str | Failure | None"]
Diagnose = Callable[[Results], str]


@dataclass(frozen=True)
class LabTest:
    """One named test: ``check`` returns None on a pass, else the message or a
    ``Failure``; ``hint`` says what to compute after a failure; ``diagnose`` names the
    mistake this test's own values look like ("" when none)."""

    name: str
    check: Check
    hint: str = ""
    diagnose: Diagnose | None = None
    ok: str = PASSED


def run_problem(run: RunResult) -> str | None:
    """Why no call's value counts: the sandbox failed, a limit was broken, the code did not
    load; None when the calls ran."""
    if run.failure:
        return f"The code could not be run: {quote(run.failure)}"
    if run.limit:
        return quote(run.limit_message or f"Stopped: the {run.limit} limit was reached.")
    if run.load_error:
        return f"The code did not load: {quote(run.load_error)}"
    return None


def _sentence(text: str) -> str:
    """A message ends as a sentence does (one that starts with a function's name keeps it
    as the code spells it)."""
    text = text.strip()
    if not text:
        return text
    return text if text[-1] in ".!?…" else text + "."


def _diagnosed(diagnose: Diagnose | None, results: Results) -> str:
    if diagnose is None:
        return ""
    try:
        with np.errstate(all="ignore"):
            code = diagnose(results)
    except Exception:  # a diagnosis is a hint: without one the tests still stand
        return ""
    return code if code in mistake_codes() else ""


def _outcome(test: LabTest, results: Results) -> TestOutcome:
    try:
        with np.errstate(all="ignore"):  # nan and overflow in a value are judged, not raised
            problem = test.check(results)
    except CallProblem as exc:
        problem = str(exc)
    except Exception as exc:  # a value no check foresaw must still give a verdict
        problem = f"The value returned could not be judged ({quote(type(exc).__name__)})."
    if problem is None:
        return TestOutcome(test.name, True, test.ok)
    failure = problem if isinstance(problem, Failure) else Failure(str(problem))
    return TestOutcome(
        test.name,
        False,
        _sentence(failure.message),
        expected=failure.expected,
        got=failure.got,
        input=failure.input,
        hint=failure.hint or test.hint,
        mistake=_diagnosed(test.diagnose, results),
    )


def judge(
    tests: Sequence[LabTest],
    calls: Sequence[Call],
    run: RunResult,
    diagnose: Diagnose | None = None,
) -> Verdict:
    """Every test in order, then the mistake: the first failed test's own diagnosis, else
    what the lab's ``diagnose`` finds over all the values (only when a test failed).

    A run that failed, broke a limit or did not load fails every test with that reason:
    values from a run cut short are not graded.
    """
    stopped = run_problem(run)
    if stopped is not None:
        return Verdict(tuple(TestOutcome(t.name, False, stopped, hint=t.hint) for t in tests))
    results = Results({c.key: c for c in calls}, run)
    outcomes = tuple(_outcome(t, results) for t in tests)
    if all(o.passed for o in outcomes):
        return Verdict(outcomes)
    return _with_mistake(outcomes, diagnose, results)


def _with_mistake(
    outcomes: tuple[TestOutcome, ...], diagnose: Diagnose | None, results: Results
) -> Verdict:
    # The first failed test's own diagnosis, else the lab's over all the values, which is
    # then named beside the first failed test.
    code = next((o.mistake for o in outcomes if o.mistake), "")
    if not code and (code := _diagnosed(diagnose, results)):
        first = next(i for i, o in enumerate(outcomes) if not o.passed)
        outcomes = tuple(
            replace(o, mistake=code) if i == first else o for i, o in enumerate(outcomes)
        )
    return Verdict(outcomes, diagnosis(code), code)
