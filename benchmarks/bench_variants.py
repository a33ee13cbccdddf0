"""Do generated variants tell right from wrong? Prints, per kind and parameter set:

- for each registered mistake of the kind, the share of variants that reject it, done
  exactly and with every step rounded to three decimals (must be 100%);
- the share of variants that accept the right method with every step rounded to three
  decimals, the unasked ones too (must be 100%);
- the share that accept the hand solver of the tests (``tests/exercises/hand_solver.py``),
  written from each prompt's own rounding rule, every kind (must be 100%);
- how many draws a seed needed on average and the time per variant.

Variants come from ``exercises.variants.draw_variant``, the path every created exercise
takes, and are marked by ``exercises.checking.check_given``, the path every submission
takes (the mistaken answers come from the kind's own ``answers_under``).

    python -m benchmarks.bench_variants            # 2,000 seeds per parameter set
    python -m benchmarks.bench_variants -n 200 --kind attention

Not part of the test run. Exits with status 1 when any share is below 100%.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict

import numpy as np

from exercises.checking import MISTAKES
from exercises.kinds import KINDS, get_kind
from exercises.kinds.base import STEP_DECIMALS
from exercises.variants import accepted, draw_rng, draw_variant, variant_problems
from tests.exercises.hand_solver import SOLVERS, hand_answers
from tests.exercises.sweep import PARAMETER_SETS


def _draws(kind, params, seed) -> tuple[int, list[str]]:
    """How many draws ``seed`` needed (1 = the first draw told right from wrong), and what
    was wrong with its first draw (the variant offered before draws were checked)."""
    first: list[str] = []
    for draw in range(1000):
        problems = variant_problems(kind, kind.generate(params, draw_rng(seed, draw)))
        if draw == 0:
            first = problems
        if not problems:
            return draw + 1, first
    return 1000, first


def _count_rejected(kind, g, rejected: dict[str, list[int]]) -> None:
    """Add to ``rejected`` (label -> [rejected, applied]) each registered mistake on ``g``."""
    for code in kind.mistakes:
        for decimals in (None, STEP_DECIMALS):
            answers = kind.answers_under(g.inputs, MISTAKES[code].recipe, decimals)
            if answers is None:
                continue
            counts = rejected[f"{code}{'' if decimals is None else ' (rounded)'}"]
            counts[0] += not accepted(kind, g, answers)
            counts[1] += 1


def bench(name: str, raw: dict, seeds: int) -> bool:
    kind = get_kind(name)
    params = kind.normalize_params(raw)
    rejected: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    right_ok = hand_ok = 0
    started = time.perf_counter()
    for seed in range(seeds):
        g = draw_variant(kind, params, seed)
        rounded = kind.answers_under(g.inputs, {}, STEP_DECIMALS)
        right_ok += accepted(kind, g, rounded)
        if name in SOLVERS:
            hand_ok += accepted(kind, g, hand_answers(name, g.inputs, g.prompt))
        _count_rejected(kind, g, rejected)
    elapsed = time.perf_counter() - started
    sample = min(seeds, 200)
    drawn = [_draws(kind, params, s) for s in range(sample)]
    first_problems: dict[str, int] = defaultdict(int)
    for _, problems in drawn:
        for problem in problems:
            first_problems[problem] += 1
    ok = (
        right_ok == seeds
        and hand_ok == (seeds if name in SOLVERS else 0)
        and all(r == n for r, n in rejected.values())
    )
    print(
        f"\n{name} {raw}: {seeds} variants, {elapsed / seeds * 1000:.1f} ms each; over the "
        f"first {sample} seeds {np.mean([d for d, _ in drawn]):.2f} draws per seed, "
        f"{sum(1 for _, p in drawn if p) / sample:.1%} of first draws redrawn"
    )
    for problem, count in sorted(first_problems.items()):
        print(f"    first draw redrawn because {problem}: {count / sample:.1%}")
    print(f"  {'right method, steps rounded, accepted':48s} {right_ok / seeds:8.2%}")
    if name in SOLVERS:
        label = "hand solver (each prompt's rounding rule) accepted"
        print(f"  {label:48s} {hand_ok / seeds:8.2%}")
    for label, (r, n) in sorted(rejected.items()):
        print(f"  {label + ' rejected':48s} {r / n:8.2%}  (of {n} where it applies)")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--seeds", type=int, default=2000)
    parser.add_argument("--kind", choices=sorted(KINDS))
    args = parser.parse_args()
    good = True
    for name, raw in PARAMETER_SETS:
        if args.kind and name != args.kind:
            continue
        good &= bench(name, raw, args.seeds)
    print("\nall shares 100%" if good else "\nSOME SHARE BELOW 100%")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
