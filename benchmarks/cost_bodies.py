"""CPU per hostile request, in process, with the cost bounds and with them lifted.

Part of ``benchmarks.bench_costs`` (its docstring has the command). Each request goes
through the whole Django stack (the test client, in this thread, on a throw-away SQLite
file, DEBUG off), and its CPU is this process's (``time.process_time``: the hashing thread counts), which other
processes on a busy machine cannot stretch. "Lifted" is the same request with the log-in
paths' body bound and the JSON guard's element count raised to the whole service's
limits (8 MiB, no count): the service before those bounds.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time

EIGHT_MB = 8 * 1024 * 1024


def setup() -> dict[str, str]:
    """A throw-away database, the playground's learner; their tokens by name."""
    folder = tempfile.mkdtemp(prefix="bench-costs-")
    os.environ["DATABASE_URL"] = f"sqlite:///{folder}/db.sqlite3"
    os.environ.pop("REDIS_URL", None)
    os.environ.update(
        DJANGO_SETTINGS_MODULE="studyapp.settings",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="bench-costs-" + "k" * 40,
        DJANGO_SECURE_SSL_REDIRECT="0",
        DJANGO_ALLOWED_HOSTS="testserver",
        STUDY_STATIC_ROOT=folder,
    )
    os.environ["STUDY_LOCKOUT_FAILURES"] = "100000"  # the same unknown name, every time
    for scope in ("LOGIN", "USER", "PLAYGROUND", "PLAYGROUND_COST"):
        os.environ[f"STUDY_THROTTLE_{scope}"] = "off"
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench", password="bench-pass-123")
    return {"bench": Token.objects.create(user=user).key}


def bodies() -> dict[str, tuple[str, bytes, bool]]:
    """name -> (path, body, authenticated)."""
    empties = b"[" + b",".join([b"[]"] * (EIGHT_MB // 3 - 1)) + b"]"
    keys = b"{" + b",".join(b'"k%07d":0' % i for i in range(EIGHT_MB // 13)) + b"}"
    login = json.dumps({"username": "nobody", "password": "wrong-pass-123"}).encode()
    return {
        "8 MB of [] to auth/token/": ("/api/v1/auth/token/", empties, False),
        "8 MB of keys to auth/token/": ("/api/v1/auth/token/", keys[:EIGHT_MB], False),
        "8 MB of [] to reviews/ (no token)": ("/api/v1/reviews/", empties, False),
        "8 MB of [] to exercises/ (a learner)": ("/api/v1/exercises/", empties, True),
        "8 MB of [] to attention/ (a learner)": ("/api/v1/attention/", empties, True),
        "a log-in, unknown username": ("/api/v1/auth/token/", login, False),
    }


def _cpu(action, repeat: int) -> float:
    seconds = []
    for _ in range(repeat):
        started = time.process_time()
        action()
        seconds.append(time.process_time() - started)
    return statistics.median(seconds)


def measure(repeat: int = 3) -> list[str]:
    tokens = setup()
    from django.test import Client, override_settings

    from studyapp import schema_view

    lines = [f"CPU per request, median of {repeat} (ms): bounded / lifted, and the answer"]
    lifted = override_settings(STUDY_AUTH_MAX_BODY_BYTES=EIGHT_MB, STUDY_JSON_MAX_ELEMENTS=10**9)
    lifted.enable()
    lifted_playground = override_settings(STUDY_PLAYGROUND_MAX_ELEMENTS=10**9)
    for name, (path, body, authenticated) in bodies().items():
        headers = {"HTTP_AUTHORIZATION": f"Token {tokens['bench']}"} if authenticated else {}
        statuses: dict[str, int] = {}

        def post(key: str, path=path, body=body, headers=headers, statuses=statuses) -> None:
            response = Client().post(path, body, content_type="application/json", **headers)
            statuses[key] = response.status_code

        lifted.disable()
        bounded = _cpu(lambda post=post: post("bounded"), repeat)
        lifted.enable()
        lifted_playground.enable()
        before = _cpu(lambda post=post: post("lifted"), repeat)
        lifted_playground.disable()
        lines.append(
            f"  {name:<38} {bounded * 1000:8.1f} / {before * 1000:8.1f}"
            f"   ({statuses['bounded']} / {statuses['lifted']})"
        )
    lifted.disable()
    schema_view.clear_schema()
    first = _cpu(lambda: Client().get("/api/schema/"), 1)
    later = _cpu(lambda: Client().get("/api/schema/"), repeat)
    lines.append(
        f"  {'GET /api/schema/, first / later':<38} {first * 1000:8.1f} / {later * 1000:8.1f}"
    )
    return lines
