"""A lab of the tests' own and a sandbox that runs nothing.

``TINY`` asks for ``double(x)``; ``FakeSandbox`` never sees code run: it hands back the
``RunResult`` a test chose (``reply``), or computes the right or wrong values from the
calls' own inputs, as the judge would expect them. No submitted source is executed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest

from labs import grading, selectors
from labs.spec import Call, Lab, Returned, RunResult, TestOutcome, Verdict


def _calls(rng: np.random.Generator) -> list[Call]:
    return [
        Call("double/vector", "double", (rng.normal(size=3),)),
        Call("double/matrix", "double", (rng.normal(size=(2, 2)),)),
        Call("halve/number", "halve", (float(rng.normal()),)),
    ]


def _judge(calls: Sequence[Call], run: RunResult) -> Verdict:
    outcomes = []
    for name, function, factor in (("double", "double", 2.0), ("halve", "halve", 0.5)):
        ok, message, details = True, "Passed.", {}
        for call in calls:
            if call.function != function:
                continue
            back = run.returned.get(call.key)
            if back is None or back.error is not None:
                ok, message = False, f"{call.key}: {back.error if back else 'did not run'}"
                break
            expected = np.asarray(call.args[0]) * factor
            got = np.asarray(back.value, dtype=float)
            if got.shape != expected.shape or not np.allclose(got, expected):
                ok, message = False, f"{call.key}: expected {expected!r}, got {got!r}"
                details = {
                    "expected": repr(expected.tolist()),
                    "got": repr(got.tolist()),
                    "input": f"x = {np.asarray(call.args[0]).tolist()!r}",
                    "hint": f"Multiply x by {factor:g}.",
                    "mistake": "no_scale",
                }
                break
        outcomes.append(TestOutcome(name, ok, message, **details))
    passed = all(o.passed for o in outcomes)
    return Verdict(
        tuple(outcomes),
        diagnosis="" if passed else "The code does not double.",
        mistake="" if passed else "no_scale",
    )


TINY = Lab(
    slug="tiny",
    title="Double and halve",
    prompt="Write `double(x)` returning $2x$ and `halve(x)` returning $x/2$.",
    starter_code="import numpy as np\n\n\ndef double(x):\n    ...\n",
    reference="def double(x):\n    return 2 * x\n\n\ndef halve(x):\n    return x / 2\n",
    tests=("double", "halve"),
    calls=_calls,
    judge=_judge,
    position=1,
)
SECOND = Lab(
    slug="second",
    title="A second lab",
    prompt="Anything.",
    starter_code="",
    reference="",
    tests=("double", "halve"),
    calls=_calls,
    judge=_judge,
    position=0,
)
CATALOGUE = {"tiny": TINY, "second": SECOND}


def right(calls: Sequence[Call]) -> RunResult:
    factor = {"double": 2.0, "halve": 0.5}
    return RunResult(
        returned={c.key: Returned(np.asarray(c.args[0]) * factor[c.function]) for c in calls},
        output="hello from the code\n",
        duration_ms=42,
    )


def wrong(calls: Sequence[Call]) -> RunResult:
    return RunResult(
        returned={c.key: Returned(np.asarray(c.args[0]) * 3) for c in calls}, duration_ms=7
    )


@dataclass
class FakeSandbox:
    """Stands in for ``labs.sandbox``: ``reply(calls)`` is what a run gives back."""

    reply: Callable[[Sequence[Call]], RunResult] = right
    unavailable: str | None = None
    runs: list[tuple[str, list[Call]]] = field(default_factory=list)

    def run(self, code: str, calls: Sequence[Call]) -> RunResult:
        self.runs.append((code, list(calls)))
        if self.unavailable is not None:
            raise grading.RunnerUnavailable(self.unavailable)
        return self.reply(calls)


def install(monkeypatch: pytest.MonkeyPatch) -> FakeSandbox:
    """The tiny labs as the catalogue, and a sandbox that runs nothing, for one test."""
    fake = FakeSandbox()
    monkeypatch.setattr(selectors, "catalogue", lambda: CATALOGUE)
    monkeypatch.setattr(grading, "sandbox_run", fake.run)
    monkeypatch.setattr(grading, "sandbox_unavailable", lambda: fake.unavailable)
    return fake
