"""Reading a value the sandbox handed back, comparing it with the engine's, and showing it
after a failed test.

Pure: no Django, and never the learner's code: a value here is what came back in a
``RunResult``, which may be anything at all (None, a str, a ragged list, NaN, an array of
the wrong shape or dtype, a huge number). Nothing here raises on such a value: each
reader turns it into None or a sentence that names what was expected and what came.

What counts as an array is decided here (``array_problem``: an ``ndarray`` of the right
shape and a floating dtype, or bool for a mask; a list is not an array), and so is the
tolerance every lab shares (``TOLERANCE``; each lab states it in its prompt). A failed
test shows small arrays in full and large ones by shape, dtype and their first entries
(``show``), and its input one argument a line (``show_call``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from labs.runner import Foreign
from labs.spec import Call, Value


@dataclass(frozen=True)
class Tolerance:
    """An entry is right when ``|got - expected| <= atol + rtol * |expected|``."""

    rtol: float
    atol: float

    def words(self) -> str:
        return f"within {sci(self.atol)} + {sci(self.rtol)} × |expected| of the expected value"


def sci(x: float) -> str:
    """1e-04 as 10^-4 reads in a sentence: '1e-4'."""
    mantissa, exponent = f"{x:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


# float32 keeps about 7 significant digits; work in it drifts by about 1e-6 relative
# through a few matrix products, so this tolerance accepts it (and any eps up to 1e-5 in
# LayerNorm) and still refuses every registered mistake, each off by percents.
TOLERANCE = Tolerance(rtol=1e-4, atol=1e-6)
# The longest piece of a learner's value or error quoted back.
QUOTE_CHARS = 120
# Arrays larger than this are not looked at entry by entry (the labs' are tiny).
MAX_ENTRIES = 1_000_000
# An array up to this many entries is shown whole after a failed test; a larger one by its
# shape, dtype and first entries.
SHOWN_ENTRIES = 64
FIRST_ENTRIES = 6


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


def type_name(value: Value) -> str:
    """The returned value's type as Python names it: ndarray, list, str, float, None."""
    if isinstance(value, Foreign):
        return value.kind
    if value is None:
        return "None"
    if isinstance(value, np.ndarray):
        return "ndarray"
    if isinstance(value, np.generic):
        return type(value.item()).__name__
    return type(value).__name__


def describe(value: Value) -> str:
    """What came back, in a few words: None, str 'abc', an ndarray of shape (8, 6) (float32)."""
    if value is None:
        return "None"
    if isinstance(value, Foreign):
        text = f" {quote(value.text)}" if value.kind in ("str", "bytes") and value.text else ""
        return f"{value.kind}{text}"
    if isinstance(value, np.ndarray):
        return f"an ndarray of shape {tuple(value.shape)} ({value.dtype})"
    if isinstance(value, bool | np.bool_):
        return f"the bool {bool(value)}"
    if isinstance(value, int | float | np.integer | np.floating):
        return f"the number {fmt(value)}"
    if isinstance(value, str):
        return f"str {quote(repr(value))}"
    if isinstance(value, tuple | list):
        return f"a {type(value).__name__} of {len(value)} items"
    return quote(type(value).__name__)


def as_array(value: Value, dtype: type = float) -> np.ndarray | None:
    """A returned value as an ndarray of ``dtype`` (float64 or bool), or None when it is no
    such array: a string, None, a ragged list, numbers where booleans belong or back.
    Lenient on purpose (a list of numbers reads as an array): ``array_problem`` is where
    the type is judged."""
    if value is None or isinstance(value, str | bytes | dict | Foreign):
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


def array_problem(value: Value, shape: tuple[int, ...], boolean: bool = False) -> str | None:
    """None when ``value`` is an ndarray of ``shape`` with a floating dtype (bool when
    ``boolean``), else a sentence naming what came: a list is not an array, an int mask
    is not a bool one, and the dtype named is the one that came."""
    want = f"an ndarray of shape {tuple(shape)}"
    if not isinstance(value, np.ndarray):
        extra = ""
        if isinstance(value, list | tuple):
            extra = (
                " (a Python list or tuple is not an array: return np.array(...) or NumPy's result)"
            )
        return f"Returned {type_name(value)}, expected ndarray: {want}{extra}."
    if boolean and value.dtype != np.bool_:
        return (
            f"Returned an ndarray of dtype {value.dtype}, expected dtype bool "
            "(True = blocked, False = open)."
        )
    if not boolean and value.dtype.kind != "f":
        return (
            f"Returned an ndarray of dtype {value.dtype}, expected a floating dtype "
            "(float64 or float32)."
        )
    if tuple(value.shape) != tuple(shape):
        return f"Expected shape {tuple(shape)}, got {tuple(value.shape)}."
    return None


def mismatch(expected: np.ndarray, value: Value, tol: Tolerance = TOLERANCE) -> str | None:
    """None when ``value`` is an ndarray of ``expected``'s shape and kind whose every
    entry is within ``tol`` (NaN where NaN is expected), else what differs: the type, the
    dtype, the shape, the first wrong entry with both values, how many entries are wrong."""
    expected = np.asarray(expected)
    boolean = expected.dtype == np.bool_
    problem = array_problem(value, expected.shape, boolean)
    if problem is not None:
        return problem
    got = as_array(value, bool if boolean else float)
    if got is None:  # an ndarray of a right dtype always reads; kept for safety
        return f"Expected an ndarray of shape {expected.shape}, got {describe(value)}."
    if boolean:
        wrong = got != expected
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.isclose(got, expected, rtol=tol.rtol, atol=tol.atol, equal_nan=True)
        wrong = ~close
    if not wrong.any():
        return None
    first = tuple(np.argwhere(wrong)[0]) if wrong.ndim else ()
    shown, wanted = _entry_pair(got[first], expected[first], boolean)
    where = f"Entry {_index(first)}" if first else "The value"
    count = int(wrong.sum())
    more = f" ({count} of {wrong.size} entries wrong)" if count > 1 else ""
    return f"{where} is {shown}; expected {wanted}{more}."


def _entry_pair(got: Any, expected: Any, boolean: bool) -> tuple[str, str]:
    # A wrong entry and the one expected, with enough digits to show them apart.
    if boolean:
        return str(bool(got)), str(bool(expected))
    digits = 6 if fmt(got) != fmt(expected) else 12
    return fmt(got, digits), fmt(expected, digits)


def matches(expected: np.ndarray | None, value: Value, tol: Tolerance = TOLERANCE) -> bool:
    """Whether ``value`` holds ``expected``'s numbers (whatever its type: a diagnosis
    names the mistake behind numbers even when they came as a list)."""
    if expected is None:
        return False
    expected = np.asarray(expected)
    got = as_array(value, bool if expected.dtype == np.bool_ else float)
    if got is None or got.shape != expected.shape:
        return False
    if expected.dtype == np.bool_:
        return bool((got == expected).all())
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(np.isclose(got, expected, rtol=tol.rtol, atol=tol.atol, equal_nan=True).all())


def first_match(
    value: Value,
    variants: Mapping[str, np.ndarray | Sequence[np.ndarray] | None],
    tol: Tolerance = TOLERANCE,
) -> str:
    """The first mistake whose output ``value`` is (in the mapping's order), or "". A
    mistake may come with several candidate outputs (a list): any one names it."""
    for code, expected in variants.items():
        candidates = expected if isinstance(expected, list | tuple) else [expected]
        if any(matches(each, value, tol) for each in candidates):
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


# --- showing values after a failed test ------------------------------------------------------


def show(value: Value) -> str:
    """A value as a failed test shows it: a small array whole, a large one by its shape,
    dtype and first entries; anything else in a few words."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return _show_array(value)
    if isinstance(value, list | tuple) and len(value) <= 8:
        inner = ", ".join(show(v) if not isinstance(v, list | tuple) else "…" for v in value)
        brackets = "[]" if isinstance(value, list) else "()"
        text = f"{brackets[0]}{inner}{brackets[1]}"
        return f"a {type(value).__name__}: {quote(text)}"
    if isinstance(value, bool | np.bool_ | int | float | np.integer | np.floating):
        return fmt(value)
    return describe(value)


def _show_array(value: np.ndarray) -> str:
    # An array of numbers or bools: whole when small, else its shape, dtype and first entries.
    if value.size <= SHOWN_ENTRIES:
        with np.printoptions(precision=4, suppress=True, threshold=SHOWN_ENTRIES + 1):
            text = np.array2string(value, separator=", ")
        return text if value.dtype in (np.float64, np.bool_) else f"{text} ({value.dtype})"
    flat = value.reshape(-1)[:FIRST_ENTRIES]
    firsts = ", ".join(
        str(bool(v)) if value.dtype == np.bool_ else fmt(v, 4) for v in flat.tolist()
    )
    return (
        f"an ndarray of shape {tuple(value.shape)} ({value.dtype}); its first entries: {firsts}, …"
    )


# The learner's parameter names, so an input reads "Q = ..., K = ...".
PARAMETERS: dict[str, tuple[str, ...]] = {
    "softmax": ("z",),
    "attention": ("Q", "K", "V"),
    "causal_mask": ("n",),
    "multi_head": ("X", "W_Q", "W_K", "W_V", "W_O"),
    "layer_norm": ("x",),
    "residual_norm": ("x", "sublayer_out"),
    "sinusoid": ("n", "d"),
    "block": ("X", "W_Q", "W_K", "W_V", "W_O"),
    "qk_spread": ("d_k", "n", "seed"),
    "score_bytes": ("n",),
}


def show_call(call: Call) -> str:
    """The input of a call, one argument a line: ``Q = [[...]]`` or ``W_Q = an ndarray of
    shape (2, 8, 4) ...``; the keyword arguments after them."""
    names = PARAMETERS.get(call.function, ())
    lines = []
    for i, arg in enumerate(call.args):
        name = names[i] if i < len(names) else f"argument {i + 1}"
        lines.append(f"{name} = {show(arg)}")
    for name, arg in call.kwargs.items():
        lines.append(f"{name} = {show(arg)}")
    return "\n".join(lines) or f"{call.function}() takes no input"
