"""Speed and memory of the attention engine, side by side with the baselines it must match.

    .venv/bin/python -m benchmarks.bench_engine [--threads 1] [--quick]

Rows (ratio = engine time / baseline time; below 1 the engine is faster):

- one head against the seeds' six-line NumPy formula at n = 3 (target ratio <= 1.5) and at
  n = 2048, d_k = 64 (target <= 1.1); medians over many timeit-style repeats, the two
  contenders interleaved so that drift in the machine hits both alike;
- batched multi-head attention against a Python loop over heads (n = 128, d_model = 512, h = 8);
- PyTorch's CPU ``scaled_dot_product_attention`` at the same thread count, when torch is
  importable (it is not a dependency; put a local install on PYTHONPATH to include it);
- peak memory of one head at n = 4096, d_k = 64 under tracemalloc (NumPy reports its buffers
  to it), in MB and in units of one n x n float64 array; target <= 2 for the engine;
- generate + check throughput of a default ``attention`` exercise, when the exercise kinds
  and the checker import (target >= 5,000 per second on one core).

BLAS threads are pinned before NumPy is imported (``--threads``, default 1) so that the
figures compare algorithms rather than core counts.
"""

from __future__ import annotations

import argparse
import os
import sys

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    parser.add_argument("--quick", action="store_true", help="fewer repeats, rough figures")
    return parser.parse_args(argv)


if __name__ == "__main__":
    ARGS = parse_args()
    # Run as a file (python benchmarks/bench_engine.py), the project root is not on the path.
    ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    if "numpy" in sys.modules:
        print("warning: NumPy was imported before the thread count could be pinned")
    for variable in THREAD_VARIABLES:
        os.environ[variable] = str(ARGS.threads)

import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402

from exercises import engine  # noqa: E402

NN_UNIT = "n x n float64"


def seeds_formula(Q, K, V):
    """The seeds' six lines, verbatim."""
    d_k = Q.shape[-1]
    s = Q @ K.T / np.sqrt(d_k)
    z = s - s.max(-1, keepdims=True)
    e = np.exp(z)
    A = e / e.sum(-1, keepdims=True)
    out = A @ V
    return out


def seeds_formula_masked(Q, K, V, mask):
    d_k = Q.shape[-1]
    s = np.where(mask, -np.inf, Q @ K.T / np.sqrt(d_k))
    z = s - s.max(-1, keepdims=True)
    e = np.exp(z)
    A = e / e.sum(-1, keepdims=True)
    return A @ V


# --- timing -------------------------------------------------------------------------


def calls_per_batch(fn: Callable[[], object], target_seconds: float) -> int:
    """timeit's autorange: grow the loop until one batch takes about target_seconds."""
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= target_seconds / 5 or number >= 1 << 20:
            return max(1, int(number * target_seconds / max(elapsed, 1e-9)))
        number *= 2


@dataclass(frozen=True)
class Timing:
    median: float
    best: float


def race(contenders: dict[str, Callable[[], object]], repeats: int, batch_seconds: float):
    """Seconds per call of each contender, measured in interleaved batches."""
    for fn in contenders.values():  # warm caches, BLAS buffers, the allocator
        for _ in range(3):
            fn()
    numbers = {name: calls_per_batch(fn, batch_seconds) for name, fn in contenders.items()}
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, fn in contenders.items():
            number = numbers[name]
            start = time.perf_counter()
            for _ in range(number):
                fn()
            samples[name].append((time.perf_counter() - start) / number)
    # The median is the figure; the best run is printed beside it because other work on the
    # machine only ever adds time.
    return {name: Timing(statistics.median(ts), min(ts)) for name, ts in samples.items()}


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:9.2f} us"
    return f"{seconds * 1e3:9.2f} ms"


def row(label: str, engine_t: Timing, baseline_label: str, baseline_t: Timing) -> float:
    """Print one comparison; returns the ratio of medians (engine / baseline)."""
    ratio = engine_t.median / baseline_t.median
    print(
        f"  {label:<32} engine {fmt_time(engine_t.median)}   {baseline_label:<19}"
        f"{fmt_time(baseline_t.median)}   ratio {ratio:5.2f} (best runs "
        f"{engine_t.best / baseline_t.best:4.2f})"
    )
    return ratio


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


# --- the rows -----------------------------------------------------------------------


def bench_single_head(rng, repeats: int, batch_seconds: float) -> None:
    print("One head: engine.scaled_dot_product_attention vs the seeds' six-line formula")
    sdpa = engine.scaled_dot_product_attention
    for n, d_k, limit in ((3, 2, 1.5), (2048, 64, 1.1)):
        Q, K, V = (rng.standard_normal((n, d_k)) for _ in range(3))
        np.testing.assert_allclose(sdpa(Q, K, V), seeds_formula(Q, K, V), rtol=1e-10, atol=1e-12)
        reps = repeats if n < 100 else max(7, repeats // 2)
        batch = batch_seconds if n < 100 else 0.0  # one call per sample at n = 2048
        t = race(
            {
                "engine": lambda Q=Q, K=K, V=V: sdpa(Q, K, V),
                "seeds": lambda Q=Q, K=K, V=V: seeds_formula(Q, K, V),
            },
            reps,
            batch,
        )
        r = row(f"n={n}, d_k={d_k}", t["engine"], "six-line formula", t["seeds"])
        print(f"    target <= {limit}: {verdict(r <= limit)}")
        mask = engine.causal_mask(n)
        t = race(
            {
                "engine": lambda Q=Q, K=K, V=V, m=mask: sdpa(Q, K, V, mask=m),
                "seeds": lambda Q=Q, K=K, V=V, m=mask: seeds_formula_masked(Q, K, V, m),
            },
            reps,
            batch,
        )
        row(f"n={n}, d_k={d_k}, causal mask", t["engine"], "formula + np.where", t["seeds"])


def heads_by_loop(X, W_Q, W_K, W_V, W_O, h):
    """The lab's multi-head: one projection and one attention call per head."""
    d_k = W_Q.shape[1] // h
    outs = []
    for j in range(h):
        cols = slice(j * d_k, (j + 1) * d_k)
        Q, K, V = X @ W_Q[:, cols], X @ W_K[:, cols], X @ W_V[:, cols]
        outs.append(engine.scaled_dot_product_attention(Q, K, V))
    return np.concatenate(outs, axis=-1) @ W_O


def bench_heads(rng, repeats: int, batch_seconds: float) -> None:
    print("Multi-head, batched over heads vs a Python loop over heads")
    for n, d_model, h in ((128, 512, 8), (16, 64, 8)):
        X = rng.standard_normal((n, d_model))
        W = [rng.standard_normal((d_model, d_model)) / math.sqrt(d_model) for _ in range(4)]
        batched = engine.multi_head_attention(X, *W, n_heads=h)
        np.testing.assert_allclose(batched, heads_by_loop(X, *W, h), rtol=1e-9, atol=1e-12)
        t = race(
            {
                "batched": lambda X=X, W=W, h=h: engine.multi_head_attention(X, *W, n_heads=h),
                "loop": lambda X=X, W=W, h=h: heads_by_loop(X, *W, h),
            },
            repeats,
            batch_seconds,
        )
        row(f"n={n}, d_model={d_model}, h={h}", t["batched"], "loop over heads", t["loop"])


def bench_grouped_query(rng, repeats: int, batch_seconds: float) -> None:
    n, d_model, h = 128, 512, 8
    print(f"Grouped-query vs multi-head attention, both the engine (n={n}, d_model={d_model})")
    X = rng.standard_normal((n, d_model))
    W = [rng.standard_normal((d_model, d_model)) / math.sqrt(d_model) for _ in range(4)]
    for g in (2, 1):
        W_kv = [w[:, : g * d_model // h] for w in W[1:3]]
        t = race(
            {
                "gqa": lambda W_kv=W_kv, g=g: engine.grouped_query_attention(
                    X, W[0], *W_kv, W[3], n_heads=h, n_kv_heads=g
                ),
                "mha": lambda: engine.multi_head_attention(X, *W, n_heads=h),
            },
            max(5, repeats // 2),
            batch_seconds,
        )
        row(f"h={h}, g={g} key/value head(s)", t["gqa"], f"multi-head, h={h}", t["mha"])


def bench_torch(rng, threads: int, repeats: int, batch_seconds: float) -> None:
    print("PyTorch CPU scaled_dot_product_attention, same thread count, float64")
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("  torch not installed")
        return
    torch.set_num_threads(threads)
    print(f"  torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    sdpa = engine.scaled_dot_product_attention
    for n, d_k in ((3, 2), (2048, 64)):
        Q, K, V = (rng.standard_normal((n, d_k)) for _ in range(3))
        Qt, Kt, Vt = (torch.from_numpy(a) for a in (Q, K, V))

        def torch_call(Qt=Qt, Kt=Kt, Vt=Vt):
            return F.scaled_dot_product_attention(Qt, Kt, Vt)

        np.testing.assert_allclose(torch_call().numpy(), sdpa(Q, K, V), rtol=1e-9, atol=1e-12)
        reps = repeats if n < 100 else max(7, repeats // 2)
        batch = batch_seconds if n < 100 else 0.0
        with torch.inference_mode():  # entered once: it is not part of the call being timed
            t = race(
                {"engine": lambda Q=Q, K=K, V=V: sdpa(Q, K, V), "torch": torch_call}, reps, batch
            )
        r = row(f"n={n}, d_k={d_k}", t["engine"], "torch", t["torch"])
        if n < 100:
            print(f"    torch / engine = {1 / r:.1f}x; target >= 3: {verdict(1 / r >= 3)}")


def peak_bytes(fn: Callable[[], object]) -> int:
    """Peak bytes allocated while fn runs, over what was already allocated."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return peak - before


def lesson_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def bench_memory(rng) -> None:
    n, d_k = 4096, 64
    unit = n * n * 8
    print(
        f"Peak memory of one head, n={n}, d_k={d_k} (tracemalloc; "
        f"1 {NN_UNIT} array = {unit / 1e6:.1f} MB)"
    )
    Q, K, V = (rng.standard_normal((n, d_k)) for _ in range(3))
    mask = engine.causal_mask(n)
    contenders = {
        "engine": (lambda: engine.scaled_dot_product_attention(Q, K, V), 2.0),
        "engine, causal mask": (
            lambda: engine.scaled_dot_product_attention(Q, K, V, mask=mask),
            2.0,
        ),
        "six-line formula (locals s, z, e, A)": (lambda: seeds_formula(Q, K, V), None),
        "lesson: softmax(Q K^T / sqrt(d_k)) V": (
            lambda: lesson_softmax(Q @ K.T / np.sqrt(d_k)) @ V,
            None,
        ),
    }
    for label, (fn, limit) in contenders.items():
        peak = peak_bytes(fn)
        note = f"   target <= {limit:.0f}: {verdict(peak / unit <= limit)}" if limit else ""
        print(f"  {label:<38} peak {peak / 1e6:8.1f} MB = {peak / unit:4.2f} x {NN_UNIT}{note}")


def bench_exercises(seconds: float) -> None:
    print("Exercise generate + check throughput (default 'attention' exercise, one core)")
    try:
        from exercises.checking import check_answers
        from exercises.kinds import get_kind

        kind = get_kind("attention")
        params = kind.normalize_params({})
        gen = kind.generate(params, np.random.default_rng(0))
        inputs, asks, solution = gen.inputs, gen.asks, gen.solution
        result = check_answers(
            asks=asks, solution=solution, answers=solution, rtol=0.01, atol=0.005
        )
    except ImportError as exc:
        print(f"  skipped: {exc}")
        return
    except (TypeError, AttributeError, KeyError, ValueError) as exc:
        print(f"  skipped: the exercise interface differs ({type(exc).__name__}: {exc})")
        return
    if not getattr(result, "correct", True):
        print("  skipped: the solution does not check as correct against itself")
        return
    del inputs

    def one(seed: int) -> None:
        g = kind.generate(params, np.random.default_rng(seed))
        check_answers(asks=g.asks, solution=g.solution, answers=g.solution, rtol=0.01, atol=0.005)

    for seed in range(50):
        one(seed)
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(100):
            one(done)
            done += 1
    rate = done / (time.perf_counter() - start)
    print(f"  {rate:10,.0f} exercises / s   target >= 5,000: {verdict(rate >= 5000)}")


def main(args: argparse.Namespace) -> None:
    repeats, batch_seconds = (7, 0.05) if args.quick else (25, 0.2)
    print(
        f"NumPy {np.__version__}, Python {sys.version.split()[0]}, "
        + ", ".join(f"{v}={os.environ.get(v, '(unset)')}" for v in THREAD_VARIABLES)
    )
    print()
    rng = np.random.default_rng(2024)
    bench_single_head(rng, repeats, batch_seconds)
    print()
    bench_heads(rng, repeats, batch_seconds)
    print()
    bench_grouped_query(rng, repeats, batch_seconds)
    print()
    bench_memory(rng)
    print()
    bench_exercises(1.0 if args.quick else 3.0)
    print()
    # Last: importing torch loads its own thread pools and allocator.
    bench_torch(rng, args.threads, repeats, batch_seconds)


if __name__ == "__main__":
    main(ARGS)
