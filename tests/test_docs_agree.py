"""What the README and CONTRIBUTING.md say of the code's shape is held to the code: the
order imports run in (the contracts of ``[tool.importlinter]`` in pyproject.toml) and the
decorator a task is written with."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APPS = ("studyapp", "cards", "labs", "exercises")
# "`studyapp` → `cards` → `labs` → `exercises` → NumPy": the apps, from the top down.
CHAIN = re.compile(r"`[a-z_.]+`(?:\s*→\s*`[a-z_.]+`)+")


def forbidden_pairs() -> set[tuple[str, str]]:
    """(importer, imported) pairs of apps a ``forbidden`` contract refuses."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    pairs = set()
    for contract in config["contracts"]:
        if contract["type"] != "forbidden":
            continue
        for source in contract["source_modules"]:
            for target in contract["forbidden_modules"]:
                if source in APPS and target in APPS:
                    pairs.add((source, target))
    return pairs


def stated_orders(name: str) -> list[list[str]]:
    text = " ".join((ROOT / name).read_text().split())
    return [re.findall(r"`([a-z_.]+)`", chain) for chain in CHAIN.findall(text)]


def test_the_contracts_make_one_order_of_the_apps():
    # Each app may import those below it and none above: every upward pair is refused.
    upward = {(APPS[j], APPS[i]) for i in range(len(APPS)) for j in range(i + 1, len(APPS))}
    assert forbidden_pairs() == upward


@pytest.mark.parametrize("name", ["README.md", "CONTRIBUTING.md"])
def test_the_docs_give_the_order_the_contracts_enforce(name):
    orders = stated_orders(name)
    assert orders, f"{name} states no import order"
    for order in orders:
        assert order == list(APPS), (name, order)


def test_contributing_writes_a_task_as_the_tasks_module_does():
    from cards import tasks

    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    beat_job = contributing.split("## Add a beat job", 1)[1].split("\n## ", 1)[0]
    assert "@_task(" in beat_job and "@shared_task" not in beat_job
    assert callable(tasks._task)
    assert tasks.housekeeping.acks_late and tasks.housekeeping.reject_on_worker_lost
