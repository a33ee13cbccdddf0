"""What a lab is, what the sandbox hands back, and what the service decides.

A lab asks the learner to write NumPy functions (``softmax``, ``attention``, ``block``...).
Grading has three steps, and only the middle one ever touches the learner's code:

1. the lab makes its **calls** from a fresh seeded generator (``Lab.calls``): which
   function to call, on which arrays. New inputs on every submission, so an output
   cannot be hard-coded;
2. the **sandbox** (``labs.sandbox.run``) loads the learner's code in a sandboxed process,
   makes each call and returns only what came back (``RunResult``): values, or the
   exception a call raised, and the printed output, all bounded and parsed defensively;
3. the **judge** (``Lab.judge``) compares those values with the engine's, outside the
   sandbox, and names what is wrong (``Verdict``). Code running beside the tests could
   patch them; the learner's code never runs beside the judge.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# What a call's argument or a returned value may be: an ndarray (a call's arguments are
# float64 or bool; a returned array keeps its numeric or bool dtype), a float, an int, a
# bool, None, or a tuple/list of those (one level deep is enough for ``(raw, scaled)``
# pairs). A returned value of any other type crosses as ``labs.runner.Foreign``, its type
# named, so a judge can say "returned str, expected ndarray".
Value = Any


@dataclass(frozen=True)
class Call:
    """One call the sandbox makes of a function the learner wrote."""

    key: str  # unique within a run, e.g. "attention/masked"
    function: str  # the name the learner's code defines, e.g. "attention"
    args: tuple[Value, ...] = ()
    kwargs: Mapping[str, Value] = field(default_factory=dict)


@dataclass(frozen=True)
class Returned:
    """What one call gave back: a value, or the exception it raised (``error``)."""

    value: Value = None
    error: str | None = None  # e.g. "ValueError: shapes (6,8) and (4,4) not aligned"


@dataclass(frozen=True)
class RunResult:
    """What the sandbox hands back for one submission.

    - ``failure``: the sandbox itself could not run (status ``failed``); nothing else counts.
    - ``malformed``: set with ``failure`` when the run wrote to the result channel
      what the protocol does not allow (a malformed or cut line). The learner's code
      can write there, so the service grades it as a failed attempt that counts
      (``labs.grading``), not as a fault of the sandbox.
    - ``limit``: a limit the code broke ("time", "memory", "processes", "output",
      "file size"), with ``limit_message`` saying it in words for the learner.
    - ``load_error``: the code did not load (a SyntaxError, an import refused, an
      exception at module level), in the learner's words (type and message, line).
    - ``returned``: one entry per call key that was made; a call missing from it did not
      run (an earlier limit stopped the run).
    - ``output``: what the code printed (stdout and stderr), capped.
    """

    returned: Mapping[str, Returned] = field(default_factory=dict)
    output: str = ""
    duration_ms: int = 0
    failure: str | None = None
    malformed: str | None = None
    limit: str | None = None
    limit_message: str | None = None
    load_error: str | None = None


@dataclass(frozen=True)
class TestOutcome:
    """One test's result. ``message`` is a sentence for the learner; after a failure
    ``expected``, ``got`` and ``input`` show the values (small ones whole, large ones
    summarised), ``hint`` says what to compute, and ``mistake`` is the registered code the
    values look like: a machine field, never shown as words."""

    name: str
    passed: bool
    message: str
    expected: str = ""
    got: str = ""
    input: str = ""
    hint: str = ""
    mistake: str = ""


@dataclass(frozen=True)
class Verdict:
    tests: tuple[TestOutcome, ...]
    diagnosis: str = ""  # what the mistake means, in plain words; or ""
    mistake: str = ""  # the registered mistake's code, for machines; or ""

    @property
    def passed(self) -> bool:
        return bool(self.tests) and all(t.passed for t in self.tests)


@dataclass(frozen=True)
class Lab:
    """One lab: the prompt, the starter code, and how it is called and judged.

    ``reference`` is a solution that passes; ``mistakes`` maps a registered mistake's
    name (``exercises.checking.mistakes`` where one fits) to source that makes exactly
    that mistake and must be told so. Both are source text, run only in the sandbox.
    """

    slug: str
    title: str
    prompt: str  # Markdown with $math$, like cards
    starter_code: str
    reference: str
    tests: tuple[str, ...]  # the test names, in the order ``judge`` reports them
    calls: Callable[[np.random.Generator], Sequence[Call]]
    judge: Callable[[Sequence[Call], RunResult], Verdict]
    mistakes: Mapping[str, str] = field(default_factory=dict)
    position: int = 0  # order in the lab list
