"""The benchmark scripts as modules: no import cycle between them, and the beat benchmark's
modules change nothing (``sys.path``, the environment) when imported; ``main`` does that.

The benchmarks themselves print figures and are not run here (docs/benchmarks.md).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "benchmarks"


def benchmark_imports(name: str, source: str) -> set[str]:
    """The modules of ``benchmarks`` that module ``benchmarks.<name>`` imports, anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative to the package
                base = PACKAGE if node.level == 1 else ""
                module = f"{base}.{node.module}" if node.module else base
                modules = [module] if node.module else [f"{base}.{a.name}" for a in node.names]
            else:
                modules = [node.module or ""]
                if node.module == PACKAGE:
                    modules = [f"{PACKAGE}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {m.split(".")[1] for m in modules if m.startswith(f"{PACKAGE}.")}
    return found - {name}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each cycle of ``graph`` once, as the modules around it from its smallest name."""
    cycles: set[tuple[str, ...]] = set()

    def walk(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                cycle = path[path.index(nxt) :]
                turn = cycle.index(min(cycle))
                cycles.add(tuple(cycle[turn:] + cycle[:turn]))
            else:
                walk(nxt, [*path, nxt])

    for start in sorted(graph):
        walk(start, [start])
    return [list(c) for c in sorted(cycles)]


def tree_graph() -> dict[str, set[str]]:
    return {
        path.stem: benchmark_imports(path.stem, path.read_text(encoding="utf-8"))
        for path in sorted((ROOT / PACKAGE).glob("*.py"))
        if path.stem != "__init__"
    }


# --- the checkers on planted sources ---------------------------------------------------


def test_imports_of_the_package_are_found_in_every_form():
    source = (
        "import os\n"
        "import benchmarks.pg\n"
        "from benchmarks.beat_seed import seed\n"
        "from benchmarks import mail\n"
        "from .baseline import baseline_due\n"
        "from . import load_urls\n"
        "def main():\n"
        "    from benchmarks.beat_fanout import bench_fanout\n"
    )
    assert benchmark_imports("x", source) == {
        "pg",
        "beat_seed",
        "mail",
        "baseline",
        "load_urls",
        "beat_fanout",
    }
    assert benchmark_imports("pg", "from benchmarks.pg import sql\n") == set()


def test_a_cycle_is_found_once_however_long():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert import_cycles({"bench": {"fanout"}, "fanout": {"bench", "pg"}, "pg": set()}) == [
        ["bench", "fanout"]
    ]
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]


# --- the tree ----------------------------------------------------------------------------


def test_no_benchmark_module_imports_one_that_imports_it_back():
    graph = tree_graph()
    assert {"bench_beat", "beat_fanout", "beat_seed"} <= set(graph)
    assert import_cycles(graph) == []


def test_importing_the_beat_and_labs_benchmarks_changes_neither_the_path_nor_the_environment():
    # After django.setup(), as bench_beat.main imports the fan-out part.
    script = (
        "import json, os, sys\n"
        "import django\n"
        "django.setup()\n"
        "path, environ = list(sys.path), dict(os.environ)\n"
        "import benchmarks.bench_beat, benchmarks.beat_seed, benchmarks.beat_fanout\n"
        "import benchmarks.bench_labs\n"
        "print(json.dumps({\n"
        "    'path_unchanged': sys.path == path,\n"
        "    'environ': sorted(k for k in os.environ if os.environ[k] != environ.get(k)),\n"
        "}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in {"LOG_LEVEL", "DJANGO_DEBUG"}}
    env["DJANGO_SETTINGS_MODULE"] = "studyapp.settings"
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout.splitlines()[-1]) == {"path_unchanged": True, "environ": []}


# --- the labs benchmark's own logic (the benchmark itself needs bwrap, PostgreSQL, Redis) ---


def test_the_labs_benchmark_submits_references_or_registered_mistakes():
    from benchmarks.labs_common import sources
    from labs.catalogue import LABS

    softmax = sources("softmax", wrong=False)
    assert [(s.slug, s.name, s.passes) for s in softmax] == [("softmax", "reference", True)]
    assert softmax[0].code == LABS["softmax"].reference

    mixed = sources("mixed", wrong=False)
    assert [s.slug for s in mixed] == list(LABS)
    assert all(s.passes and s.code == LABS[s.slug].reference for s in mixed)

    wrong = sources("wrong", wrong=False)
    assert wrong == sources("mixed", wrong=True)
    expected = {(slug, name) for slug, each in LABS.items() for name in each.mistakes}
    assert {(s.slug, s.name) for s in wrong} == expected
    assert len(wrong) == len(expected) > len(LABS)
    assert not any(s.passes for s in wrong)
    assert all(s.code == LABS[s.slug].mistakes[s.name] for s in wrong)
    assert {s.slug for s in sources("softmax", wrong=True)} == {"softmax"}


def test_the_labs_benchmark_targets_pass_at_their_bounds_and_miss_past_them():
    from benchmarks.labs_common import verdicts

    (p95_name, p95, p95_ratio, p95_met), (rate_name, rate, rate_ratio, rate_met) = verdicts(
        2.0, 4.0
    )
    assert "p95" in p95_name and "<= 2 s" in p95_name and p95 == "2.00 s"
    assert ">= 4" in rate_name and rate == "4.00/s"
    assert (p95_ratio, p95_met, rate_ratio, rate_met) == (1.0, True, 1.0, True)
    missed = verdicts(2.5, 3.0)
    assert [(round(ratio, 2), met) for _, _, ratio, met in missed] == [(1.25, False), (0.75, False)]


def test_the_labs_benchmark_options_default_to_the_specified_run():
    from benchmarks.bench_labs import parse_args
    from benchmarks.labs_common import percentile

    args = parse_args([])
    assert (args.seconds, args.lab, args.learners, args.poll, args.workers) == (
        30.0,
        "softmax",
        8,
        0.05,
        [1, 2],
    )
    assert parse_args(["--workers", "2", "--lab", "mixed", "--wrong"]).workers == [2]
    assert percentile([1.0], 95) != percentile([1.0], 95)  # nan below two values
    assert percentile([float(n) for n in range(1, 101)], 50) == 50.5


class ScriptedClient:
    """Answers the benchmark's requests from a script: (status, body) per request."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests = []

    def request(self, method, path, body=None):
        self.requests.append((method, path, body))
        return self.answers.pop(0)


def test_a_grading_counts_only_when_the_result_is_the_one_its_source_should_get():
    from benchmarks.labs_common import Source, grade_once

    reference = Source("softmax", "reference", "def softmax(z): ...", True)
    mistake = Source("softmax", "overflow", "def softmax(z): ...", False)
    queued = (202, {"id": 7, "status": "queued"})
    running = (200, {"status": "running"})

    def done(passed, status="done"):
        return 200, {"status": status, "passed": passed, "diagnosis": "no_max: ..."}

    client = ScriptedClient([queued, running, done(True)])
    latency, sid, polls, error = grade_once(client, reference, poll=0, give_up=60)
    assert (sid, polls, error) == (7, 2, None) and latency >= 0
    assert client.requests == [
        ("POST", "/api/v1/labs/softmax/submissions/", {"code": reference.code}),
        ("GET", "/api/v1/labs/submissions/7/", None),
        ("GET", "/api/v1/labs/submissions/7/", None),
    ]
    assert grade_once(ScriptedClient([queued, done(False)]), mistake, 0, 60)[3] is None

    wrong = grade_once(ScriptedClient([queued, done(False)]), reference, 0, 60)[3]
    assert wrong.startswith("softmax reference: passed expected, got done, passed=False")
    failed = grade_once(ScriptedClient([queued, done(None, "failed")]), mistake, 0, 60)[3]
    assert "failed expected, got failed" in failed
    refused = grade_once(ScriptedClient([(429, {"detail": "slow down"})]), reference, 0, 60)
    assert refused[0] is None and refused[3].startswith("POST softmax: 429")
    gone = grade_once(ScriptedClient([queued, (404, {})]), reference, 0, 60)
    assert gone[0] is None and gone[3].startswith("GET /api/v1/labs/submissions/7/: 404")
    stuck = grade_once(ScriptedClient([queued, running]), reference, 0, give_up=0)
    assert stuck[0] is None and "still running after 0 s" in stuck[3]


# --- the compressed study day (benchmarks/load_mix.py) ------------------------------------


def test_a_rate_whose_writes_ran_out_does_not_count_as_capacity(capsys):
    from benchmarks import load_mix

    kinds = {name: load_mix.Kind(name, [0.005] * 30) for name, _ in load_mix.DAY}
    assert load_mix.report(100, 100.0, kinds, "0.1 0.1 0.1") is True
    short = dict.fromkeys(kinds, 0) | {"POST reviews/": 3}
    assert load_mix.report(100, 100.0, kinds, "0.1 0.1 0.1", short) is False
    assert "mix NOT served: 3 POST reviews/ drawn" in capsys.readouterr().out


def test_the_mix_counts_writes_drawn_after_their_pool_ran_out():
    from benchmarks import load_mix

    mix = load_mix.Mix([(1, "token")], {1: "sessionid=x"}, targets=[], pool=[])
    drawn = [mix.next()[0] for _ in range(400)]
    # Every review and submission drawn found nothing to write and became the due queue.
    assert "POST reviews/" not in drawn and "POST exercises/{id}/submit/" not in drawn
    assert mix.short["POST reviews/"] > 200 and mix.short["POST exercises/{id}/submit/"] > 0
    assert drawn.count("GET reviews/due/") >= sum(mix.short.values())


def test_the_mix_submits_the_lab_reference_and_looks_for_its_result():
    from benchmarks import load_mix
    from labs.catalogue import LABS

    mix = load_mix.Mix([(1, "token")], {1: "sessionid=x"}, targets=[], pool=[])
    drawn = [mix.next() for _ in range(3000)]
    submits = [d for d in drawn if d[0] == "POST labs/{slug}/submissions/"]
    looks = [d for d in drawn if d[0] == "GET labs/{slug}/submissions/"]
    assert submits and len(looks) > len(submits)  # three looks a day to one submission
    _, method, path, headers, body, expected = submits[0]
    assert (method, path, expected) == (
        "POST",
        "/api/v1/labs/softmax/submissions/",
        (202, 409),
    )
    assert body == {"code": LABS["softmax"].reference}
    assert headers == {"Authorization": "Token token"}
    assert looks[0][1:3] == ("GET", "/api/v1/labs/softmax/submissions/")
    assert load_mix.REQUESTS_PER_DAY == 58
