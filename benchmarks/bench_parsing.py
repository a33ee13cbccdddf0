"""How long crafted request bodies take to decide, beside json.loads of a plain body.

    .venv/bin/python -m benchmarks.bench_parsing [--repeat 3] [--sizes 65536 1048576 8388608]

For each size and each crafted shape it prints the depth guard alone
(``studyapp.common.jsonscan.json_depth``), the parser's own time on that body (``json.loads``,
which may refuse it), and the whole request: a POST to the unauthenticated
``/api/v1/auth/token/`` through the Django stack (guard, DRF's parser or its refusal,
the answer) on a throw-away SQLite file with ``DJANGO_DEBUG=0``. The last lines per
size give the worst case over the shapes beside a plain body of the same size (a list
of floats, as ``json.dumps`` writes them, which the endpoint parses in full and then
refuses because it wants an object): the guard against ``json.loads`` of it, the
request against its request.
Times are the best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import time
from collections.abc import Callable

SIZES = (64 * 1024, 1024 * 1024, 8 * 1024 * 1024)


def crafted(n: int) -> dict[str, bytes]:
    """Bodies of about n bytes shaped to stress a guard or a parser."""
    key = b'"k0000000":0,'
    return {
        "quote-backslash runs": b"[" + (b'"\\' * (n // 2))[: n - 1],
        "escaped quotes, unterminated": b'["' + b'\\"' * (n // 2 - 1),
        "backslash run": b'["' + b"\\" * (n - 4) + b'"]',
        "unterminated string": b'["' + b"a" * (n - 2),
        "quotes only": b'"' * n,
        "deep, unclosed": b"[" * n,
        "deep, closed": b"[" * (n // 2) + b"]" * (n // 2),
        "long integer": b"[" + b"1" * (n - 2) + b"]",
        "long fraction": b"[0." + b"1" * (n - 4) + b"]",
        "many keys": b"{" + b",".join(b'"k%07d":0' % i for i in range((n - 2) // len(key))) + b"}",
        "brackets in strings": b"[" + b'"[{]}\\"[",' * ((n - 3) // 10) + b"1]",
        "nested strings with brackets": nested_strings(n),
    }


def nested_strings(n: int, levels: int = 30) -> bytes:
    """Arrays 30 deep (inside the limit), each holding a string of brackets."""
    opening = b'["[[{{]}", ' * levels
    closing = b"]" * levels
    filler = n - len(opening) - len(closing) - 2
    return opening + b'"' + b"[{" * (filler // 2) + b'"' + closing


def plain(n: int) -> bytes:
    import numpy as np

    values = np.random.default_rng(0).standard_normal(n // 10 + 16).tolist()
    text = json.dumps(values).encode()
    cut = text.rfind(b",", 0, n)
    return text[:cut] + b"]"


def best(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return min(times)


def loads_or_refuse(body: bytes) -> None:
    with contextlib.suppress(ValueError, RecursionError):
        json.loads(body)


def setup() -> None:
    folder = tempfile.mkdtemp(prefix="bench-parsing-")
    os.environ["DATABASE_URL"] = f"sqlite:///{folder}/db.sqlite3"
    os.environ.pop("REDIS_URL", None)
    os.environ["DJANGO_DEBUG"] = "0"
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-parsing-" + "x" * 40)
    os.environ["DJANGO_ALLOWED_HOSTS"] = "testserver"
    os.environ["DJANGO_SECURE_SSL_REDIRECT"] = "0"
    os.environ["STUDY_THROTTLE_LOGIN"] = "off"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studyapp.settings")
    import logging
    import warnings

    import django

    warnings.filterwarnings("ignore", message="No directory at")
    django.setup()
    # Every crafted body is a 400, which Django logs as a warning each time.
    logging.getLogger("django.request").setLevel(logging.ERROR)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    args = parser.parse_args()
    setup()
    from django.test import Client

    from studyapp.common.jsonscan import json_depth

    client = Client()

    def post(body: bytes) -> int:
        response = client.post("/api/v1/auth/token/", body, content_type="application/json")
        return response.status_code

    print(f"{'size':>9}  {'shape':<30} {'guard':>11} {'json.loads':>11} {'request':>11}  answer")
    for size in args.sizes:
        worst_guard = worst_request = 0.0
        worst_guard_shape = worst_request_shape = ""
        for shape, body in crafted(size).items():
            guard = best(lambda body=body: json_depth(body), args.repeat)
            parser_own = best(lambda body=body: loads_or_refuse(body), args.repeat)
            status = post(body)
            request = best(lambda body=body: post(body), args.repeat)
            print(
                f"{len(body):>9,}  {shape:<30} {ms(guard):>11} {ms(parser_own):>11} "
                f"{ms(request):>11}  {status}"
            )
            if guard > worst_guard:
                worst_guard, worst_guard_shape = guard, shape
            if request > worst_request:
                worst_request, worst_request_shape = request, shape
        reference = plain(size)
        guard = best(lambda reference=reference: json_depth(reference), args.repeat)
        baseline = best(lambda reference=reference: json.loads(reference), args.repeat)
        status = post(reference)
        plain_request = best(lambda reference=reference: post(reference), args.repeat)
        print(
            f"{len(reference):>9,}  {'plain list of floats':<30} {ms(guard):>11} "
            f"{ms(baseline):>11} {ms(plain_request):>11}  {status}"
        )
        print(
            f"  worst guard {ms(worst_guard)} ({worst_guard_shape}): "
            f"{worst_guard / baseline:.2f}x json.loads of the plain body; "
            f"worst request {ms(worst_request)} ({worst_request_shape}): "
            f"{worst_request / plain_request:.2f}x the plain body's request\n"
        )


if __name__ == "__main__":
    main()
