"""Lab: sinusoidal positions, in the lab's layout or the paper's."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from exercises import engine
from labs.catalogue.references import sines_then_cosines
from labs.judging import Failure, LabTest, Results, judge
from labs.spec import Call, Lab, RunResult, Verdict
from labs.values import TOLERANCE, as_array, first_match

PROMPT = rf"""
Write `sinusoid(n, d)`: the sinusoidal position vectors of the original transformer for
positions $0 \ldots n-1$, an $(n, d)$ array ($d$ even). Dimension pair $i$ turns at its own
rate:

$$\theta_{{pos, i}} = \frac{{pos}}{{10000^{{2i/d}}}}, \qquad i = 0 \ldots d/2 - 1$$

The lab's layout puts all $d/2$ sines first, then the $d/2$ cosines of the same angles:
row $pos$ is
$(\sin\theta_{{pos,0}}, \ldots, \sin\theta_{{pos,d/2-1}}, \cos\theta_{{pos,0}}, \ldots, \cos\theta_{{pos,d/2-1}})$.
The paper interleaves them instead ($\sin$ on even
dimensions $2i$, $\cos$ on odd ones $2i+1$): that is the same encoding with the dimensions
reordered, and it is **accepted too**, as long as every call uses the same layout.

The tests ask for new sizes on every run, a small table and a wide one: compute from the
$n$ and $d$ passed in. Return an `ndarray` of shape $(n, d)$ with a floating dtype (float64
or float32 both pass); each entry must lie {TOLERANCE.words()}.

Either layout, the dot product of two position vectors depends only on their distance,
not on where they start: the last test checks that on your own output.
"""

STARTER = '''import numpy as np


def sinusoid(n, d):
    """-> (n, d): all sines of pos / 10000^(2i/d), then all cosines."""
    raise NotImplementedError
'''

_SINUSOID = '''import numpy as np


def sinusoid(n, d):
    """-> (n, d): all sines of pos / 10000^(2i/d), then all cosines."""
    pos, i = np.arange(n)[:, None], np.arange(d // 2)[None]
    ang = pos / 10000 ** ({exponent} / d)
    return np.concatenate([{first}, {second}], axis=-1)
'''


def _source(
    exponent: str = "2 * i", first: str = "np.sin(ang)", second: str = "np.cos(ang)"
) -> str:
    return _SINUSOID.format(exponent=exponent, first=first, second=second)


REFERENCE = _source()


def _pasted_source() -> str:
    # A table computed once for the lesson's (6, 8) and pasted in as numbers.
    table = sines_then_cosines(*LESSON_TABLE)
    rows = ",\n".join("    [" + ", ".join(repr(float(v)) for v in row) + "]" for row in table)
    return (
        "import numpy as np\n\nTABLE = np.array([\n" + rows + "\n])\n\n\n"
        "def sinusoid(n, d):\n    return TABLE\n"
    )


LESSON_TABLE = (6, 8)
MISTAKES = {
    "pe_table_pasted": _pasted_source(),
    "pe_sin_cos_swapped": _source(first="np.cos(ang)", second="np.sin(ang)"),
    "pe_exponent_without_two": _source(exponent="i"),
}

TESTS = (
    "a small table",
    "a wide table, in the same layout",
    "dot products depend only on the distance",
)
LAYOUTS = ("sines then cosines", "interleaved")
HINT = (
    "Build the angles from the sizes passed in: positions np.arange(n) as a column, pair "
    "numbers i = np.arange(d // 2) as a row, angle = pos / 10000 ** (2 * i / d); then the "
    "sines of all angles, then their cosines, joined along the last axis."
)
# The lesson's sizes, (6, 8) and (50, 64), are never asked: a table pasted from it fails.
SMALL_WIDTHS = (4, 6, 10, 12, 14)
WIDE_WIDTHS = (32, 40, 48, 56, 72, 80)
LESSON_SIZES = ((6, 8), (50, 64))


def calls(rng: np.random.Generator) -> list[Call]:
    small = (int(rng.integers(4, 13)), int(rng.choice(SMALL_WIDTHS)))
    wide = (int(rng.choice([n for n in range(30, 61) if n != 50])), int(rng.choice(WIDE_WIDTHS)))
    return [
        Call("sinusoid/small", "sinusoid", small),
        Call("sinusoid/wide", "sinusoid", wide),
    ]


def _layouts(n: int, d: int) -> dict[str, np.ndarray]:
    return {
        "sines then cosines": sines_then_cosines(n, d),
        "interleaved": engine.sinusoidal_positions(n, d),
    }


def _layout_of(r: Results, key: str) -> str:
    n, d = r.call(key).args
    value = r.value(key)
    if not isinstance(value, np.ndarray) or value.dtype.kind != "f":
        return ""  # the type is judged by the comparison below
    return first_match(value, _layouts(n, d))


def _table(r: Results, key: str, layout: str) -> Failure | None:
    n, d = r.call(key).args
    return r.compare(key, _layouts(n, d)[layout])


def _small(r: Results) -> Failure | None:
    if _layout_of(r, "sinusoid/small"):
        return None
    return _table(r, "sinusoid/small", LAYOUTS[0])


def _wide(r: Results) -> Failure | str | None:
    layout = _layout_of(r, "sinusoid/wide")
    small = _layout_of(r, "sinusoid/small")
    if layout and small and layout != small:
        return (
            f"The small table is {small} but the wide one is {layout}: use one layout "
            "for every call"
        )
    if layout:
        return None
    return _table(r, "sinusoid/wide", small or LAYOUTS[0])


def _distance_only(r: Results) -> str | None:
    n, d = r.call("sinusoid/wide").args
    pe = as_array(r.value("sinusoid/wide"))
    if pe is None or pe.shape != (n, d) or not np.isfinite(pe).all():
        return f"sinusoid({n}, {d}) must first return a finite ({n}, {d}) array"
    start = n // 2
    for k in (1, 5, 10):
        at_0, at_mid = float(pe[0] @ pe[k]), float(pe[start] @ pe[start + k])
        if abs(at_0 - at_mid) > 1e-4 * max(1.0, abs(at_0)):
            return (
                f"PE[0] · PE[{k}] = {at_0:.6g} but PE[{start}] · PE[{start + k}] = "
                f"{at_mid:.6g}: the same distance should give the same dot product"
            )
    return None


def _variants(n: int, d: int) -> dict[str, list[np.ndarray]]:
    pos, i = np.arange(n)[:, None], np.arange(d // 2)[None]
    right = pos / 10000 ** (2 * i / d)
    slow = pos / 10000 ** (i / d)
    swapped = np.empty((n, d))
    swapped[:, 0::2], swapped[:, 1::2] = np.cos(right), np.sin(right)
    without_two = np.empty((n, d))
    without_two[:, 0::2], without_two[:, 1::2] = np.sin(slow), np.cos(slow)
    return {
        "pe_sin_cos_swapped": [np.concatenate([np.cos(right), np.sin(right)], axis=1), swapped],
        "pe_exponent_without_two": [
            np.concatenate([np.sin(slow), np.cos(slow)], axis=1),
            without_two,
        ],
    }


def _pasted(value: object, n: int, d: int) -> bool:
    """A table of other sizes than asked, right for its own: computed once and pasted."""
    arr = as_array(value)
    if arr is None or arr.ndim != 2 or arr.shape == (n, d) or arr.shape[1] % 2:
        return False
    rows, width = arr.shape
    return bool(first_match(arr, _layouts(rows, width))) or (rows, width) in LESSON_SIZES


def _diagnosing(key: str) -> Callable[[Results], str]:
    def diagnose(r: Results) -> str:
        n, d = r.call(key).args
        got = r.get(key)
        if _pasted(got, n, d):
            return "pe_table_pasted"
        return first_match(got, _variants(n, d))

    return diagnose


def judge_run(made: Sequence[Call], run: RunResult) -> Verdict:
    tests = (
        LabTest(TESTS[0], _small, HINT, _diagnosing("sinusoid/small")),
        LabTest(TESTS[1], _wide, HINT, _diagnosing("sinusoid/wide")),
        LabTest(TESTS[2], _distance_only, HINT),
    )
    return judge(tests, made, run)


LAB = Lab(
    slug="sinusoid",
    title="Sinusoidal positions",
    prompt=PROMPT.strip(),
    starter_code=STARTER,
    reference=REFERENCE,
    tests=TESTS,
    calls=calls,
    judge=judge_run,
    mistakes=MISTAKES,
)
