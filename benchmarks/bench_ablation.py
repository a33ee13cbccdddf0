"""Cost of drawing and checking the ablation kind and of asking a prediction first.

    .venv/bin/python -m benchmarks.bench_ablation [--quick]

Rows (median microseconds per variant over seeds; ratio = row / the plain ``attention``
kind's generate + check, except the prediction row, whose ratio is against ``causal``
without a prediction):

- ``attention`` generate + check, the baseline;
- ``causal`` with ``predict: token_0`` against ``causal`` without (target ratio <= 1.2: the
  prediction reads the weights already computed);
- ``ablation`` at its defaults (3 inputs of 3 tokens), with each of its three verdicts
  fixed (``decoration`` draws the most: every change small while the token leads every
  input by 0.05), and at its largest (5 inputs of 5 tokens, ``case: reliance``): the
  variants are drawn until the verdict's case fits and no change sits near the
  threshold; target under 5 ms per default variant and under 50 ms at the largest, so
  an exercise page or a due-review list never waits on it;
- ``ablation, offered``: ``variants.draw_variant`` at the defaults, the variant check
  included (every registered mistake, exact and rounded, must be refused), which is
  what creating an exercise costs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

if __name__ == "__main__":
    ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = "1"

import numpy as np

from exercises.checking import check_answers
from exercises.kinds import get_kind
from exercises.predictions import numeric_asks
from exercises.variants import draw_variant


def per_variant(kind_name: str, params: dict, seeds: range) -> float:
    """Median seconds to generate one variant and check its own solution."""
    kind = get_kind(kind_name)
    times = []
    for seed in seeds:
        start = time.perf_counter()
        normalized = kind.normalize_params({**params, "seed": seed})
        g = kind.generate(normalized, np.random.default_rng(seed))
        asks = numeric_asks(g.asks)
        check_answers(
            asks=asks,
            solution=g.solution,
            answers={a["name"]: g.solution[a["name"]] for a in asks},
            rtol=g.rtol,
            atol=g.atol,
            inputs=g.inputs,
            kind=kind,
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def per_offered(kind_name: str, params: dict, seeds: range) -> float:
    """Median seconds to draw one offered variant, the variant check included."""
    kind = get_kind(kind_name)
    normalized = kind.normalize_params(params)
    times = []
    for seed in seeds:
        start = time.perf_counter()
        draw_variant(kind, normalized, seed)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer seeds, rough figures")
    args = parser.parse_args(argv)
    seeds = range(100 if args.quick else 500)
    base = per_variant("attention", {}, seeds)
    causal = per_variant("causal", {}, seeds)
    rows = [
        ("attention (baseline)", base, base, None),
        ("causal, no prediction", causal, base, None),
        (
            "causal, predict token_0",
            per_variant("causal", {"predict": "token_0"}, seeds),
            causal,
            1.2,
        ),
        ("ablation, defaults", per_variant("ablation", {}, seeds), base, None),
        *(
            (f"ablation, {case}", per_variant("ablation", {"case": case}, seeds), base, None)
            for case in ("reliance", "mixed", "decoration")
        ),
        ("ablation, offered", per_offered("ablation", {}, seeds), base, None),
        (
            "ablation, 5x5 reliance",
            per_variant("ablation", {"n": 5, "n_inputs": 5, "case": "reliance"}, seeds),
            base,
            None,
        ),
    ]
    print(f"{'row':28} {'median us':>10} {'ratio':>8}  target")
    for name, seconds, against, target in rows:
        ratio = seconds / against
        goal = f"ratio <= {target}" if target else ""
        if name.startswith("ablation, 5x5"):
            goal = "< 50000 us"
        elif name.startswith("ablation"):
            goal = "< 5000 us"
        print(f"{name:28} {seconds * 1e6:10.1f} {ratio:8.2f}  {goal}")


if __name__ == "__main__":
    main()
