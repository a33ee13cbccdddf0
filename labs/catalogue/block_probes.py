"""The block lab's two measuring functions, apart from the block itself: ``qk_spread``
(the spread of q . k, raw and scaled by sqrt(d_k)) and ``score_bytes`` (the bytes of one
head's n x n score matrix). Their reference source, their calls, their tests and the
mistakes those tests name; ``labs.catalogue.block`` puts them into its lab."""

from __future__ import annotations

import math

import numpy as np

from labs.judging import CallProblem, Failure, Results
from labs.spec import Call
from labs.values import as_array, as_number, describe, fmt, show_call

PROBES = '''

def qk_spread(d_k, n, seed):
    """-> (raw_std, scaled_std) of n dot products of random unit-variance q and k."""
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(n, d_k)), rng.normal(size=(n, d_k))
    dots = (q * k).sum(axis=1)
    return float(dots.std()), float((dots / {scale}).std())


def score_bytes(n, bytes_per_entry=2):
    """-> bytes of one head's n x n score matrix."""
    return {size} * bytes_per_entry
'''


def source(scale: str = "np.sqrt(d_k)", size: str = "n * n") -> str:
    return PROBES.format(scale=scale, size=size)


SIZES = (1_000, 8_000, 32_000)
# Widths the spread is asked for: never the lesson's 64, so a hard-coded 64 fails.
SPREAD_WIDTHS = (16, 25, 36, 49, 81, 100, 128)


def calls(rng: np.random.Generator) -> list[Call]:
    """The calls of both functions: one spread at a width drawn afresh, and the bytes at the
    lesson's sizes and at one more size and entry width drawn afresh."""
    drawn = int(rng.integers(100, 50_000))
    return [
        Call(
            "qk_spread",
            "qk_spread",
            (
                int(rng.choice(SPREAD_WIDTHS)),
                int(rng.integers(3_000, 5_000)),
                int(rng.integers(1, 2**31)),
            ),
        ),
        *(Call(f"score_bytes/{n}", "score_bytes", (n,)) for n in SIZES),
        Call(
            "score_bytes/drawn",
            "score_bytes",
            (drawn,),
            {"bytes_per_entry": int(rng.choice([1, 4, 8]))},
        ),
    ]


def spread_bounds(d_k: int, n: int) -> tuple[float, float]:
    """(centre, tolerance) for the sample standard deviation of n dot products of d_k
    unit-variance pairs: sqrt(d_k), and six standard errors, sqrt(d_k) / sqrt(2 n) each
    (the sum of d_k products is close to normal)."""
    centre = math.sqrt(d_k)
    return centre, 6.0 * centre / math.sqrt(2.0 * n)


def spread_pair(r: Results) -> tuple[float, float]:
    value = r.value("qk_spread")
    pair = as_array(value)
    if pair is None or pair.shape != (2,) or not np.isfinite(pair).all():
        raise CallProblem(
            "qk_spread() must return (raw_std, scaled_std), two finite numbers; "
            f"got {describe(value)}"
        )
    return float(pair[0]), float(pair[1])


def check_spread(r: Results) -> Failure | None:
    call = r.call("qk_spread")
    d_k, n, _ = call.args
    raw, scaled = spread_pair(r)
    centre, tol = spread_bounds(d_k, n)
    got = f"raw_std = {fmt(raw)}, scaled_std = {fmt(scaled)}"
    expected = f"raw_std = {fmt(centre, 4)} ± {tol:.2f}, scaled_std = 1 ± {tol / centre:.3f}"
    if abs(raw - centre) > tol:
        message = f"raw_std is {fmt(raw)}; expected {fmt(centre, 4)} ± {tol:.2f} for {n} pairs"
        return Failure(message, expected, got, show_call(call))
    if abs(scaled - 1.0) > tol / centre:
        message = f"scaled_std is {fmt(scaled)}; expected 1 ± {tol / centre:.3f}"
        return Failure(message, expected, got, show_call(call))
    return None


def diagnose_spread(r: Results) -> str:
    d_k, n, _ = r.call("qk_spread").args
    raw, scaled = spread_pair(r)
    centre, tol = spread_bounds(d_k, n)
    close = 1e-6 * max(abs(raw), 1.0)
    if abs(raw - centre) <= tol:
        if abs(scaled - raw) <= close:
            return "spread_not_scaled"
        if abs(scaled - raw / d_k) <= close:
            return "spread_divided_by_d_k"
        if abs(scaled - raw / 8.0) <= close:
            return "spread_fixed_d_k"
    if abs(raw - 8.0) <= spread_bounds(64, n)[1]:
        return "spread_fixed_d_k"
    # A sample variance's relative standard error is twice a standard deviation's, so six
    # of its standard errors are twice ``tol`` relative to the centre.
    if abs(raw - d_k) <= 2.0 * tol * centre:
        return "variance_for_sd"
    return ""


BYTES_KEYS = (*(f"score_bytes/{n}" for n in SIZES), "score_bytes/drawn")


def check_bytes(r: Results) -> Failure | None:
    for key in BYTES_KEYS:
        call = r.call(key)
        n, per = call.args[0], call.kwargs.get("bytes_per_entry", 2)
        value = r.value(key)
        got, want = as_number(value), n * n * per
        if got is None or abs(got - want) > 1e-9 * want:
            shown = describe(value) if got is None else f"{got:,.0f}"
            message = f"score_bytes({n}, bytes_per_entry={per}) is {shown}; expected {want:,} bytes"
            return Failure(message, f"{want:,}", shown, show_call(call))
    return None


def diagnose_bytes(r: Results) -> str:
    for key in BYTES_KEYS:
        call = r.call(key)
        n, per = call.args[0], call.kwargs.get("bytes_per_entry", 2)
        if as_number(r.get(key)) == n * per:
            return "score_bytes_linear"
    return ""
