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

Then, at ``--charset-size`` (1 MiB), the same through every charset a body may name:
the plain body in each accepted charset (with and without a byte order mark, both byte
orders, aliases), the worst crafted shape in it, and bodies under refused charsets
(``punycode`` with the report's body, ``idna``, ``utf-7``, ``unicode_escape``, ``rot13``,
an unknown name), each beside the plain UTF-8 body's request; and, in process, the part
of a request a charset changes (the depth guard over the code units, DRF's JSONParser
decoding and parsing). The cases run round-robin, so a machine busy with other work
slows them alike. ``--charsets-only`` skips the sizes above.
Times are the best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import functools
import io
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


# (label in the Content-Type, codec that writes the body, byte order mark written first)
ACCEPTED = (
    ("utf-8", "utf-8", b""),
    ("utf-8", "utf-8", codecs.BOM_UTF8),
    ("utf8", "utf-8", b""),
    ("utf-16", "utf-16-le", codecs.BOM_UTF16_LE),
    ("utf-16", "utf-16-be", codecs.BOM_UTF16_BE),
    ("utf-16", "utf-16-le", b""),
    ("utf-16", "utf-16-be", b""),
    ("utf-16le", "utf-16-le", b""),
    ("utf-16be", "utf-16-be", b""),
    ("utf-32", "utf-32-le", codecs.BOM_UTF32_LE),
    ("utf-32", "utf-32-be", codecs.BOM_UTF32_BE),
    ("utf-32", "utf-32-le", b""),
    ("utf-32le", "utf-32-le", b""),
    ("utf-32be", "utf-32-be", b""),
    ("us-ascii", "ascii", b""),
    ("iso-8859-1", "latin-1", b""),
)
REFUSED = ("punycode", "idna", "utf-7", "unicode_escape", "rot13", "no-such-charset")


def in_charset(body: bytes, codec: str, bom: bytes) -> bytes:
    """An ASCII body written in ``codec`` after ``bom``."""
    return bom + body.decode("ascii").encode(codec)


def charset_cases(size: int) -> list[tuple[str, str, str, bytes, int]]:
    """(name shown, label, codec, mark, characters) per accepted case: a body of that
    many characters in the codec, after the mark, is at most ``size`` bytes."""
    cases = []
    for label, codec, bom in ACCEPTED:
        chars = (size - len(bom)) // len("[".encode(codec))
        name = f"{label}{' +BOM' if bom else ''}" + (f" ({codec})" if label != codec else "")
        cases.append((name, label, codec, bom, chars))
    return cases


def round_robin(jobs: dict, repeat: int) -> dict:
    """The best time of each job (a callable) over ``repeat`` rounds that each run every
    job once, so a machine busy with other work slows every case alike."""
    times: dict = {}
    for _ in range(repeat):
        for key, job in jobs.items():
            spent = best(job, 1)
            times[key] = min(times.get(key, spent), spent)
    return times


def guard_and_parse(body: bytes, label: str) -> None:
    """What a charset changes in a request: the depth guard over the body's code units,
    then the parser's decode and parse (DRF's JSONParser, as the view runs it)."""
    from rest_framework.exceptions import ParseError
    from rest_framework.parsers import JSONParser

    from studyapp.common import charsets
    from studyapp.common.jsonscan import json_depth

    reading = charsets.json_reading(label, body[:4])
    json_depth(charsets.code_units(body, reading))
    with contextlib.suppress(ParseError):
        JSONParser().parse(io.BytesIO(body), parser_context={"encoding": reading.codec})


def charset_jobs(size: int) -> tuple[list, dict[tuple[str, str], tuple[bytes, str]]]:
    """Every case's plain body and crafted shapes, then the refused charsets' bodies."""
    cases = charset_cases(size)
    jobs: dict[tuple[str, str], tuple[bytes, str]] = {}
    for name, label, codec, bom, chars in cases:
        jobs[(name, "plain")] = (in_charset(plain(chars), codec, bom), label)
        for shape, raw in crafted(chars).items():
            jobs[(name, shape)] = (in_charset(raw, codec, bom), label)
    half = size // 2
    bomb = b"a" * half + b"-" + b"a" * half  # the report's: 12 s at 512 KiB before
    for label in REFUSED:
        jobs[(label, "plain")] = (bomb if label == "punycode" else plain(size), label)
    return cases, jobs


def charsets_table(post, size: int, repeat: int) -> None:
    """Each charset's plain body and its costliest crafted shape, beside UTF-8's."""
    cases, jobs = charset_jobs(size)
    statuses = {key: post(body, label) for key, (body, label) in jobs.items()}
    times = round_robin(
        {key: functools.partial(post, body, label) for key, (body, label) in jobs.items()}, repeat
    )
    own = round_robin(
        {name: functools.partial(guard_and_parse, *jobs[(name, "plain")]) for name, *_ in cases},
        3 * repeat,
    )
    shapes = ["plain", *crafted(64)]
    utf8 = cases[0][0]
    yardstick, own_yardstick = times[(utf8, "plain")], own[utf8]
    utf8_worst = max(times[(utf8, shape)] for shape in shapes[1:])
    print(f"\ncharsets at {size:,} bytes: the plain UTF-8 body's request {ms(yardstick)}")
    print(
        f"{'charset':<32} {'request':>9} {'x utf-8':>7} {'guard+parse':>11} {'x utf-8':>7} "
        f"{'worst crafted':>13} {'x utf-8':>7}"
    )
    worst_ratio = 0.0
    for name, *_ in cases:
        took = times[(name, "plain")]
        shape = max(shapes[1:], key=lambda shape, name=name: times[(name, shape)])
        worst = times[(name, shape)]
        worst_ratio = max(worst_ratio, took / yardstick)
        print(
            f"{name:<32} {ms(took):>9} {took / yardstick:>6.2f}x {ms(own[name]):>11} "
            f"{own[name] / own_yardstick:>6.2f}x {ms(worst):>13} {worst / utf8_worst:>6.2f}x"
            f"  {statuses[(name, 'plain')]} (worst: {shape})"
        )
    for label in REFUSED:
        took = times[(label, "plain")]
        worst_ratio = max(worst_ratio, took / yardstick)
        refused = f"{label} (refused)"
        print(
            f"{refused:<32} {ms(took):>9} {took / yardstick:>6.2f}x  {statuses[(label, 'plain')]}"
        )
    print(
        f"  the costliest plain body: {worst_ratio:.2f}x the plain UTF-8 body's request; "
        "guard+parse is the part a charset changes, in process (best of 3x the rounds); "
        "the crafted column is against UTF-8's costliest crafted shape"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--charset-size", type=int, default=1024 * 1024)
    parser.add_argument("--charsets-only", action="store_true")
    args = parser.parse_args()
    setup()
    from django.test import Client

    client = Client()

    def post(body: bytes, charset: str | None = None) -> int:
        content_type = "application/json" + (f"; charset={charset}" if charset else "")
        # generic(), as post() would re-encode the bytes in the charset.
        response = client.generic("POST", "/api/v1/auth/token/", body, content_type)
        return response.status_code

    if not args.charsets_only:
        sizes_table(post, args.sizes, args.repeat)
    charsets_table(post, args.charset_size, args.repeat)


def sizes_table(post, sizes: list[int], repeat: int) -> None:
    from studyapp.common.jsonscan import json_depth

    print(f"{'size':>9}  {'shape':<30} {'guard':>11} {'json.loads':>11} {'request':>11}  answer")
    for size in sizes:
        worst_guard = worst_request = 0.0
        worst_guard_shape = worst_request_shape = ""
        for shape, body in crafted(size).items():
            guard = best(lambda body=body: json_depth(body), repeat)
            parser_own = best(lambda body=body: loads_or_refuse(body), repeat)
            status = post(body)
            request = best(lambda body=body: post(body), repeat)
            print(
                f"{len(body):>9,}  {shape:<30} {ms(guard):>11} {ms(parser_own):>11} "
                f"{ms(request):>11}  {status}"
            )
            if guard > worst_guard:
                worst_guard, worst_guard_shape = guard, shape
            if request > worst_request:
                worst_request, worst_request_shape = request, shape
        reference = plain(size)
        guard = best(lambda reference=reference: json_depth(reference), repeat)
        baseline = best(lambda reference=reference: json.loads(reference), repeat)
        status = post(reference)
        plain_request = best(lambda reference=reference: post(reference), repeat)
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
