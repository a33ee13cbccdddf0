"""Lab: sinusoidal positions, in the lab's layout or the paper's."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from exercises import engine
from labs.catalogue.references import sines_then_cosines
from labs.judging import LabTest, Results, as_array, first_match, judge, mismatch
from labs.spec import Call, Lab, RunResult, Verdict

PROMPT = r"""
Write `sinusoid(n, d)`: the sinusoidal position vectors of the original transformer for
positions $0 \ldots n-1$, an $(n, d)$ array ($d$ even). Dimension pair $i$ turns at its own
rate:

$$\theta_{pos, i} = \frac{pos}{10000^{2i/d}}, \qquad i = 0 \ldots d/2 - 1$$

The lab's layout puts all $d/2$ sines first, then the $d/2$ cosines of the same angles:
row $pos$ is
$(\sin\theta_{pos,0}, \ldots, \sin\theta_{pos,d/2-1}, \cos\theta_{pos,0}, \ldots, \cos\theta_{pos,d/2-1})$.
The paper interleaves them instead ($\sin$ on even
dimensions $2i$, $\cos$ on odd ones $2i+1$): that is the same encoding with the dimensions
reordered, and it is **accepted too**, as long as every call uses the same layout.

Either way the dot product of two position vectors depends only on their distance, not
on where they start: the last test checks that on your own output.
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
MISTAKES = {
    "pe_sin_cos_swapped": _source(first="np.cos(ang)", second="np.sin(ang)"),
    "pe_exponent_without_two": _source(exponent="i"),
}

TESTS = (
    "6 positions of width 8",
    "50 positions of width 64, the same layout",
    "dot products depend only on the distance",
)
LAYOUTS = ("sines then cosines", "interleaved")


def calls(rng: np.random.Generator) -> list[Call]:
    return [
        Call("sinusoid/small", "sinusoid", (6, 8)),
        Call("sinusoid/wide", "sinusoid", (50, 64)),
    ]


def _layouts(n: int, d: int) -> dict[str, np.ndarray]:
    return {
        "sines then cosines": sines_then_cosines(n, d),
        "interleaved": engine.sinusoidal_positions(n, d),
    }


def _layout_of(r: Results, key: str) -> str:
    n, d = r.call(key).args
    return first_match(r.value(key), _layouts(n, d))


def _small(r: Results) -> str | None:
    if _layout_of(r, "sinusoid/small"):
        return None
    problem = mismatch(sines_then_cosines(6, 8), r.value("sinusoid/small"))
    return f"{problem} (the lab's layout: sines then cosines; the interleaved one is accepted too)"


def _wide(r: Results) -> str | None:
    layout = _layout_of(r, "sinusoid/wide")
    small = _layout_of(r, "sinusoid/small")
    if layout and small and layout != small:
        return f"sinusoid(6, 8) is {small} but sinusoid(50, 64) is {layout}: use one layout"
    if layout:
        return None
    want = small or LAYOUTS[0]
    return f"{mismatch(_layouts(50, 64)[want], r.value('sinusoid/wide'))} (layout: {want})"


def _distance_only(r: Results) -> str | None:
    pe = as_array(r.value("sinusoid/wide"))
    if pe is None or pe.shape != (50, 64) or not np.isfinite(pe).all():
        return "sinusoid(50, 64) must return a finite (50, 64) array first"
    for k in (1, 5, 10):
        at_0, at_25 = float(pe[0] @ pe[k]), float(pe[25] @ pe[25 + k])
        if abs(at_0 - at_25) > 1e-6 * max(1.0, abs(at_0)):
            return (
                f"PE[0] . PE[{k}] = {at_0:.6g} but PE[25] . PE[{25 + k}] = {at_25:.6g}: "
                "the same distance should give the same dot product"
            )
    return None


def _diagnose(r: Results) -> str:
    n, d = r.call("sinusoid/small").args
    pos, i = np.arange(n)[:, None], np.arange(d // 2)[None]
    right = pos / 10000 ** (2 * i / d)
    slow = pos / 10000 ** (i / d)
    variants = {
        "pe_sin_cos_swapped": np.concatenate([np.cos(right), np.sin(right)], axis=1),
        "pe_exponent_without_two": np.concatenate([np.sin(slow), np.cos(slow)], axis=1),
    }
    swapped = np.empty((n, d))
    swapped[:, 0::2], swapped[:, 1::2] = np.cos(right), np.sin(right)
    without_two = np.empty((n, d))
    without_two[:, 0::2], without_two[:, 1::2] = np.sin(slow), np.cos(slow)
    got = r.value("sinusoid/small")
    return first_match(got, variants) or first_match(
        got, {"pe_sin_cos_swapped": swapped, "pe_exponent_without_two": without_two}
    )


def judge_run(made: Sequence[Call], run: RunResult) -> Verdict:
    tests = (LabTest(TESTS[0], _small), LabTest(TESTS[1], _wide), LabTest(TESTS[2], _distance_only))
    return judge(tests, made, run, _diagnose)


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
