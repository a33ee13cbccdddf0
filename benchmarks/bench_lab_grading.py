"""Each lab's reference solution graded N times through the grading path, timed.

``labs.grading.grade`` is what the labs worker runs for a submission: the lab's calls
from a fresh seed, the real bubblewrap sandbox, the judge. Every grading must come back
``done`` and passed (a reference that fails is counted as an error). Run it alone, on an
idle machine (it needs bubblewrap)::

    .venv/bin/python -m benchmarks.bench_lab_grading --runs 20
    .venv/bin/python -m benchmarks.bench_lab_grading --runs 10 --wrong   # the mistakes

It prints p50, p95 and the worst per lab, then over all gradings (target: p95 <= 2 s).
``--wrong`` grades every registered mistake instead, each of which must fail with its
own diagnosis. The first grading of a process lists the sandbox's libraries once (about
0.4 s); it is made before timing starts.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import time

from benchmarks.labs_common import percentile


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="gradings per solution")
    parser.add_argument("--wrong", action="store_true", help="grade the mistakes instead")
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studyapp.settings")
    import django

    django.setup()
    from labs import grading, sandbox
    from labs.catalogue import LABS

    reason = sandbox.unavailable()
    if reason is not None:
        print(f"no sandbox: {reason}", file=sys.stderr)
        return 2
    first = next(iter(LABS.values()))
    grading.grade(lab=first, code=first.reference, seed=1)  # warm: the library list

    every: list[float] = []
    errors = 0
    kind = "mistakes" if args.wrong else "references"
    print(f"{kind}, {args.runs} gradings each, through labs.grading.grade")
    print(f"{'lab':18s} {'n':>4s} {'p50 s':>7s} {'p95 s':>7s} {'max s':>7s}")
    for slug, lab in LABS.items():
        sources = dict(lab.mistakes) if args.wrong else {"": lab.reference}
        times: list[float] = []
        for name, source in sources.items():
            for _ in range(args.runs):
                started = time.perf_counter()
                graded = grading.grade(lab=lab, code=source, seed=secrets.randbits(48))
                times.append(time.perf_counter() - started)
                if args.wrong:
                    found = {t.get("mistake") for t in graded.tests if not t["passed"]}
                    ok = graded.status == "done" and graded.passed is False and name in found
                else:
                    ok = graded.status == "done" and graded.passed is True
                errors += not ok
        every += times
        print(
            f"{slug:18s} {len(times):4d} {statistics.median(times):7.3f} "
            f"{percentile(times, 95):7.3f} {max(times):7.3f}"
        )
    print(
        f"{'all':18s} {len(every):4d} {statistics.median(every):7.3f} "
        f"{percentile(every, 95):7.3f} {max(every):7.3f}"
    )
    with open("/proc/loadavg") as load:
        print(f"errors: {errors}  load: {' '.join(load.read().split()[:3])}")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
