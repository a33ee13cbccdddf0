"""What the shared exercise tests need of each kind, kept beside the kind's own tests.

Each module ``tests/exercises/kinds/test_<module>.py`` tests the kinds of
``exercises/kinds/<module>.py`` and holds ``CASES``, a ``KindCases`` per kind of that
module. The shared tests (the sweeps, the hand work, the worked solutions) read them here
for every kind of the registry, so a new kind brings its cases in its own test module
and no shared table names it. ``test_every_registered_kind_has_its_cases`` fails while a
registered kind has none.

The sweeps also run each kind at the starter deck's own parameters (``deck_sets``): a
kind's cards in ``cards/content/`` are what a learner meets.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from exercises.kinds import KINDS

CONTENT = Path(__file__).resolve().parents[2] / "cards" / "content"

# A careful learner's answers to a variant: (inputs, prompt) -> the parts as JSON values.
Solver = Callable[[dict[str, Any], str], dict[str, Any]]


@dataclass(frozen=True)
class KindCases:
    # The hand solver (tests/exercises/hand_solver.py): every number written down by the
    # prompt's own rounding rule, from the prompt and the contract alone, no kind code.
    solver: Solver
    # One parameter set the tests through the API use (the starter deck's, where it fits).
    example: dict[str, Any]
    # Parameter sets at the largest allowed; the sweeps add the starter deck's.
    largest: tuple[dict[str, Any], ...]
    # Further parameter sets for the hand work alone.
    hand_only: tuple[dict[str, Any], ...] = ()
    # Whether the inputs differ from seed to seed at the default parameters.
    seeds_vary: bool = True


@cache
def kind_cases() -> dict[str, KindCases]:
    """Every kind's cases found in tests/exercises/kinds/, in the registry's order (kinds
    without any are left out; names the registry lacks are kept, for the test to show)."""
    from tests.exercises import kinds as package

    found: dict[str, KindCases] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found.update(getattr(module, "CASES", {}))
    ordered = {name: found[name] for name in KINDS if name in found}
    return ordered | {name: cases for name, cases in found.items() if name not in KINDS}


def cases_of(name: str) -> KindCases:
    try:
        return kind_cases()[name]
    except KeyError:
        raise LookupError(
            f"No cases for the kind {name!r}: add CASES to its test module in tests/exercises/kinds/"
        ) from None


@cache
def deck_sets() -> tuple[tuple[str, dict[str, Any]], ...]:
    """The parameters of every exercise card of the shipped decks, with its prediction and,
    where it asks one, without it: ``(kind, params)`` in the decks' order, each once."""
    sets: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(CONTENT.glob("*.yaml")):
        for card in yaml.safe_load(path.read_text())["cards"]:
            spec = card.get("exercise")
            if not spec:
                continue
            params = dict(spec.get("params") or {})
            variants = [params]
            if params.get("predict", "none") != "none":
                variants.append({k: v for k, v in params.items() if k != "predict"})
            for variant in variants:
                if (spec["kind"], variant) not in sets:
                    sets.append((spec["kind"], variant))
    return tuple(sets)


def parameter_id(name: str, raw: dict[str, Any]) -> str:
    return f"{name}-{'-'.join(f'{k}={v}' for k, v in raw.items())}"
