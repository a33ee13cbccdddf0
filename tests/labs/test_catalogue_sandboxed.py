"""Every lab's reference and every registered mistake, run through the real sandbox and
judged: the reference passes, each mistake fails with its own diagnosis.

The sources run only inside ``labs.sandbox.run``. Where no sandbox can start these tests
skip with the reason, except under ``REQUIRE_SERVICES=1`` (CI), where they fail.
"""

from __future__ import annotations

import numpy as np
import pytest

from labs import sandbox
from labs.catalogue import LABS, lab
from labs.judging import mistake_text

pytestmark = pytest.mark.sandbox

CASES = [(slug, name) for slug, each in LABS.items() for name in ("reference", *each.mistakes)]


def sandboxed_verdict(slug: str, name: str, seed: int):
    the_lab = lab(slug)
    source = the_lab.reference if name == "reference" else the_lab.mistakes[name]
    calls = list(the_lab.calls(np.random.default_rng(seed)))
    run = sandbox.run(source, calls)
    assert run.failure is None and run.limit is None and run.load_error is None, run
    return the_lab.judge(calls, run)


@pytest.mark.parametrize(("slug", "name"), CASES)
def test_through_the_sandbox_the_reference_passes_and_each_mistake_is_named(slug, name):
    seed = int(np.random.default_rng().integers(2**31))  # fresh sizes on every run
    verdict = sandboxed_verdict(slug, name, seed=seed)
    if name == "reference":
        assert verdict.passed, [t for t in verdict.tests if not t.passed]
        assert verdict.diagnosis == "" and verdict.mistake == ""
    else:
        assert not verdict.passed
        assert verdict.mistake == name, (verdict.mistake, verdict.tests)
        assert verdict.diagnosis == mistake_text(name)


@pytest.mark.parametrize("slug", list(LABS))
def test_the_starter_code_loads_and_fails_every_test_by_name(slug):
    the_lab = lab(slug)
    calls = list(the_lab.calls(np.random.default_rng(12)))
    verdict = the_lab.judge(calls, sandbox.run(the_lab.starter_code, calls))
    assert not any(t.passed for t in verdict.tests)
    assert all("raised NotImplementedError" in t.message for t in verdict.tests), verdict.tests
