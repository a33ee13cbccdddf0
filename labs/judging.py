"""What the labs' judges share: reading a returned value, comparing it with the engine's,
saying what differs, and naming the mistake it looks like.

Pure: no Django, and never the learner's code: a judge sees only the values the sandbox
handed back (``RunResult``), which may be anything at all (None, a string, a ragged list,
NaN, an array of the wrong shape, a huge number). Nothing here raises on such a value:
each test turns it into a message that names what was expected and what came back.

Messages follow one pattern: ``expected shape (6, 8), got (8, 6)``; ``entry [1, 0] is
0.377, expected 0.412``; ``entry [0, 2] is nan, expected 0.5``. A diagnosis is the name
of a registered mistake (``exercises.checking.mistakes.MISTAKES``, or the labs' own
``LAB_MISTAKES`` below) followed by its text: ``no_scale: This matches ...``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from exercises.checking.mistakes import MISTAKES
from labs.spec import Call, RunResult, TestOutcome, Value, Verdict

# Code computes in float64: a right answer agrees with the engine's to rounding, far
# inside these; a mistake (no scale, the wrong axis) is off by far more.
RTOL = 1e-6
ATOL = 1e-8
# The longest piece of a learner's value or error quoted back.
QUOTE_CHARS = 120
# Arrays larger than this are not looked at entry by entry (the labs' are tiny).
MAX_ENTRIES = 1_000_000

# Mistakes the labs name that no exercise kind makes (the registry lives with the kinds,
# and exercises imports nothing of labs).
LAB_MISTAKES: dict[str, str] = {
    "softmax_overflow": (
        "This overflows: exp() of scores near 1000 is infinite, so the weights come out nan. "
        "Subtract the row max before exp(): the softmax is unchanged and exp() never "
        "sees a positive number."
    ),
    "softmax_over_everything": (
        "This matches one softmax over the whole array: each row (the last axis) is "
        "normalised on its own, so every row sums to 1."
    ),
    "mask_inverted": (
        "This matches the mask inverted: True means blocked, so the keys marked True get "
        "minus infinity and the keys marked False stay open."
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
        "A constant vector has variance 0, and dividing by sqrt(0) gives nan: add eps "
        "inside the square root, sqrt(variance + eps)."
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
        "This divides by 10000^(i/d) instead of 10000^(2i/d): dimension pair i uses the "
        "angle pos / 10000^(2i/d), so the slowest pair still turns by the time it reaches d."
    ),
    "score_bytes_linear": (
        "This grows linearly with n: the score matrix has n x n entries, so doubling the "
        "context quadruples its bytes."
    ),
    "variance_for_sd": (
        "This is the variance, d_k; the spread asked is the standard deviation, sqrt(d_k)."
    ),
}


def mistake_text(code: str) -> str:
    if code in MISTAKES:
        return MISTAKES[code].text
    return LAB_MISTAKES[code]


def diagnosis(code: str) -> str:
    """The diagnosis field for a mistake: its name, then what it means."""
    return f"{code}: {mistake_text(code)}" if code else ""


# --- reading a value ----------------------------------------------------------------------


def quote(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 3] + "..."


def fmt(x: Any, digits: int = 6) -> str:
    """One number as a message shows it: 0.412, 1.23e-07, nan, inf."""
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError):
        return quote(repr(x))
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.{digits}g}"


def describe(value: Value) -> str:
    """What came back, in a few words: None, a str 'abc', an array of shape (8, 6)."""
    if value is None:
        return "None"
    if isinstance(value, np.ndarray):
        return f"an array of shape {tuple(value.shape)} ({value.dtype})"
    if isinstance(value, bool | np.bool_):
        return f"the bool {bool(value)}"
    if isinstance(value, int | float | np.integer | np.floating):
        return f"the number {fmt(value)}"
    if isinstance(value, str):
        return f"the str {quote(repr(value))}"
    if isinstance(value, tuple | list):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"a {quote(type(value).__name__)}"


def as_array(value: Value, dtype: type = float) -> np.ndarray | None:
    """A returned value as an ndarray of ``dtype`` (float64 or bool), or None when it is no
    such array: a string, None, a ragged list, numbers where booleans belong or back."""
    if value is None or isinstance(value, str | bytes | dict):
        return None
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError, OverflowError, RecursionError):
        return None
    if arr.size > MAX_ENTRIES or arr.dtype.kind not in "biuf":
        return None
    if dtype is bool:
        return arr if arr.dtype.kind == "b" else None
    if arr.dtype.kind == "b":
        return None
    return arr.astype(np.float64)


def as_number(value: Value) -> float | None:
    """A returned scalar (a number, or an array holding exactly one) as a float, or None."""
    if isinstance(value, bool | np.bool_):
        return None
    arr = as_array(value)
    if arr is None or arr.size != 1:
        return None
    return float(arr.reshape(()))


def _index(idx: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(int(i)) for i in idx) + "]"


def mismatch(
    expected: np.ndarray, value: Value, rtol: float = RTOL, atol: float = ATOL
) -> str | None:
    """None when ``value`` is ``expected`` within ``atol + rtol * |expected|`` entry by
    entry (NaN where NaN is expected), else what differs: the type, the shape, the first
    wrong entry with both values, and how many entries are wrong."""
    expected = np.asarray(expected)
    boolean = expected.dtype == np.bool_
    kind = "a bool array" if boolean else "an array"
    got = as_array(value, bool if boolean else float)
    if got is None:
        return f"expected {kind} of shape {expected.shape}, got {describe(value)}"
    if got.shape != expected.shape:
        if not isinstance(value, np.ndarray):
            return f"expected {kind} of shape {expected.shape}, got {describe(value)}"
        return f"expected shape {expected.shape}, got {got.shape}"
    if boolean:
        wrong = got != expected
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
        wrong = ~close
    if not wrong.any():
        return None
    first = tuple(np.argwhere(wrong)[0]) if wrong.ndim else ()
    g, e = got[first], expected[first]
    if boolean:
        shown, wanted = str(bool(g)), str(bool(e))
    else:
        digits = 6 if fmt(g) != fmt(e) else 12  # enough digits to show the difference
        shown, wanted = fmt(g, digits), fmt(e, digits)
    where = f"entry {_index(first)}" if first else "the value"
    count = int(wrong.sum())
    more = f" ({count} of {wrong.size} entries wrong)" if count > 1 else ""
    return f"{where} is {shown}, expected {wanted}{more}"


def matches(expected: np.ndarray | None, value: Value, rtol: float = RTOL) -> bool:
    return expected is not None and mismatch(expected, value, rtol=rtol) is None


def first_match(value: Value, variants: Mapping[str, np.ndarray | None]) -> str:
    """The first mistake whose output ``value`` is (in the mapping's order), or ""."""
    for code, expected in variants.items():
        if matches(expected, value):
            return code
    return ""


def non_finite(value: Value) -> str | None:
    """'entry [0, 1] is nan' when a returned array holds nan or inf, else None."""
    arr = as_array(value)
    if arr is None or arr.size == 0:
        return None
    bad = ~np.isfinite(arr)
    if not bad.any():
        return None
    first = tuple(np.argwhere(bad)[0]) if bad.ndim else ()
    where = f"entry {_index(first)}" if first else "the value"
    return f"{where} is {fmt(arr[first])}"


# --- the run's results, one call at a time ---------------------------------------------------


class CallProblem(Exception):
    """A call gave no value to judge: it raised, or it did not run."""


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
            raise CallProblem(f"{function}() was not called: the run stopped before it")
        if returned.error:
            raise CallProblem(f"{function}() raised {quote(returned.error)}")
        return returned.value

    def get(self, key: str) -> Value:
        """What call ``key`` returned, or None when it raised or did not run."""
        try:
            return self.value(key)
        except CallProblem:
            return None


Check = Callable[[Results], str | None]


@dataclass(frozen=True)
class LabTest:
    """One named test: ``check`` returns None on a pass, else the message."""

    name: str
    check: Check
    ok: str = "ok"


def run_problem(run: RunResult) -> str | None:
    """Why no call's value counts: the sandbox failed, a limit was broken, the code did not
    load; None when the calls ran."""
    if run.failure:
        return f"the code could not be run: {quote(run.failure)}"
    if run.limit:
        return quote(run.limit_message or f"stopped: the {run.limit} limit was reached")
    if run.load_error:
        return f"the code did not load: {quote(run.load_error)}"
    return None


def _outcome(test: LabTest, results: Results) -> TestOutcome:
    try:
        with np.errstate(all="ignore"):  # nan and overflow in a value are judged, not raised
            problem = test.check(results)
    except CallProblem as exc:
        problem = str(exc)
    except Exception as exc:  # a value no check foresaw must still give a verdict
        problem = f"the value returned could not be judged ({quote(type(exc).__name__)})"
    if problem is None:
        return TestOutcome(test.name, True, test.ok)
    return TestOutcome(test.name, False, problem)


def judge(
    tests: Sequence[LabTest],
    calls: Sequence[Call],
    run: RunResult,
    diagnose: Callable[[Results], str] | None = None,
) -> Verdict:
    """Every test in order, then the mistake the values look like (only when a test failed).

    A run that failed, broke a limit or did not load fails every test with that reason:
    values from a run cut short are not graded.
    """
    stopped = run_problem(run)
    if stopped is not None:
        return Verdict(tuple(TestOutcome(t.name, False, stopped) for t in tests))
    results = Results({c.key: c for c in calls}, run)
    outcomes = tuple(_outcome(t, results) for t in tests)
    code = ""
    if diagnose is not None and not all(o.passed for o in outcomes):
        try:
            with np.errstate(all="ignore"):
                code = diagnose(results)
        except Exception:  # a diagnosis is a hint: without one the tests still stand
            code = ""
    return Verdict(outcomes, diagnosis(code))
