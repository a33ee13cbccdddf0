# One module on purpose: every environment variable the service reads, in one table that the settings and docs/configuration.md share.
"""Every variable of the environment the service reads: its name, kind, default and meaning.

``studyapp/settings.py`` reads them all at once through :func:`read_all`, so a process
with a bad value stops at its start, every bad one named with what was expected
(``studyapp.common.environment``). Unset or empty, a variable takes its default. The lab
sandbox reads ``STUDY_LAB_CGROUP``, ``STUDY_LAB_PYTHON`` and ``STUDY_LAB_UID_BASE`` again at
each run; the limits of a run are ``labs.sandbox.limits.LIMITS``.

docs/configuration.md holds this table as Markdown: ``python -m studyapp.configuration``
prints it, and tests/studyapp/test_configuration.py holds the two equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from cards.ladder import DEFAULT_LADDER, describe, parse_ladder
from labs.sandbox.bwrap import UID_BASE
from labs.sandbox.limits import LIMITS
from studyapp.common import environment
from studyapp.common.environment import (
    NUMBER,
    PATH,
    POSITIVE,
    RATE,
    SWITCH,
    TEXT,
    WHOLE,
    WORDS,
    Kind,
    between,
)

LADDER = Kind("days", "a ladder", parse_ladder)


@dataclass(frozen=True)
class Variable:
    name: str
    kind: Kind
    default: str  # as the environment would hold it; "" where ``shown`` says what applies
    meaning: str
    shown: str = ""  # the default in words, when it is worked out at start
    also: str = ""  # an older name, read when this one is unset

    def read(self, environ: Mapping[str, str] | None = None) -> Any:
        return environment.read(self.name, self.kind, self.default, environ, also=self.also)


SECURITY = "([security.md](security.md))"

# scope: (default rate, what is counted and per whom)
THROTTLES = {
    "register": ("20/hour", "sign-ups per client address"),
    "login": ("30/minute", "log-ins and password checks per client address, web and API together"),
    "password_reset": ("10/hour", "password resets and confirmation mails per client address"),
    "exercise_create": ("120/minute", "exercises generated per learner"),
    "exercise_submit": ("120/minute", "exercise answers per learner"),
    "playground": ("60/minute", "playground requests per learner"),
    "playground_cost": (
        "2000000/minute",
        "playground cost units per learner, about a microsecond of CPU each (the largest "
        "request costs about 560,000)",
    ),
    "lab_submit": ("10/minute", "lab submissions per learner (each runs code in the sandbox)"),
    "user": ("1200/minute", "every other authenticated API request, per learner"),
}


def throttle_variable(scope: str) -> str:
    return f"STUDY_THROTTLE_{scope.upper()}"


def _unit(unit: str) -> str:
    return f" ({unit})" if unit else ""


VARIABLES: tuple[Variable, ...] = (
    # --- the site
    Variable(
        "DJANGO_DEBUG",
        SWITCH,
        "1",
        "`0` in production (then `DJANGO_SECRET_KEY` is required and the HTTPS settings apply)",
    ),
    Variable(
        "DJANGO_SECRET_KEY",
        TEXT,
        "",
        "Django's secret key; required when `DJANGO_DEBUG` is off",
        shown="a development key, in debug only",
    ),
    Variable(
        "DJANGO_ALLOWED_HOSTS",
        WORDS,
        "localhost,127.0.0.1,[::1],testserver",
        "the host names the site answers to, comma-separated",
    ),
    Variable(
        "DJANGO_CSRF_TRUSTED_ORIGINS",
        WORDS,
        "",
        "origins (scheme and host) the CSRF check trusts besides the site's own, comma-separated",
    ),
    Variable(
        "SITE_URL",
        TEXT,
        "http://127.0.0.1:8000",
        "the site's address (under `make run`, the port it serves): every mailed link "
        "(reminders, password reset, address confirmation) is built from it, never from a "
        "request's `Host`",
    ),
    Variable(
        "DJANGO_SECURE_SSL_REDIRECT",
        SWITCH,
        "1",
        "with `DJANGO_DEBUG=0`: plain HTTP is redirected to HTTPS, as a TLS proxy in front says "
        "by `X-Forwarded-Proto`",
    ),
    Variable(
        "DJANGO_HSTS_SECONDS",
        WHOLE,
        "31536000",
        "with `DJANGO_DEBUG=0`: `Strict-Transport-Security`'s max-age, subdomains and preload "
        "included",
    ),
    Variable("LOG_LEVEL", TEXT, "INFO", "the level of the root logger"),
    Variable(
        "STUDY_VAR_DIR",
        PATH,
        "",
        "local state: the embedded broker's folders, mail written to files",
        shown="`var/` in the checkout",
    ),
    Variable(
        "STUDY_STATIC_ROOT",
        PATH,
        "",
        "where `collectstatic` writes and WhiteNoise serves from ([operations.md](operations.md), "
        '"Behind a proxy")',
        shown="`staticfiles/` in the checkout",
    ),
    # --- the database
    Variable(
        "DATABASE_URL",
        TEXT,
        "",
        "e.g. `postgres://user:pw@host:5432/study`",
        shown="`sqlite:///db.sqlite3` in the checkout",
    ),
    Variable(
        "DB_CONN_MAX_AGE",
        WHOLE,
        "60",
        "seconds a PostgreSQL connection is kept for the next request (SQLite keeps none)",
    ),
    Variable(
        "STUDY_DB_CONNECT_TIMEOUT",
        WHOLE,
        "3",
        "PostgreSQL: seconds a new connection may take; a database too slow to answer is a 503 "
        f"within seconds {SECURITY}",
    ),
    Variable(
        "STUDY_DB_STATEMENT_TIMEOUT_MS",
        WHOLE,
        "5000",
        "PostgreSQL: milliseconds a statement of the web server may run (`0` off)",
    ),
    Variable(
        "STUDY_DB_LOCK_TIMEOUT_MS",
        WHOLE,
        "3000",
        "PostgreSQL: milliseconds a statement may wait for a lock (`0` off)",
    ),
    Variable(
        "STUDY_DB_JOB_STATEMENT_TIMEOUT_MS",
        WHOLE,
        "600000",
        "PostgreSQL: the statement timeout of everything but the web server (Celery tasks, "
        "management commands, scripts)",
    ),
    Variable(
        "STUDY_DB_BREAKER_SECONDS",
        NUMBER,
        "5",
        "after a PostgreSQL connection fails, every request is a 503 with `Retry-After` at "
        "once, and a probe tries the database this often until it answers; `0` off "
        "([database-faults.md](database-faults.md))",
    ),
    Variable(
        "STUDY_DB_SERVER_SIDE_BINDING",
        SWITCH,
        "1",
        "PostgreSQL: parameters bound by the server; `0` behind PgBouncer in transaction mode "
        "([operations.md](operations.md))",
    ),
    Variable(
        "STUDY_DB_PREPARE_THRESHOLD",
        WHOLE,
        "5",
        "PostgreSQL, with server-side binding: a statement is prepared on this run of it on a "
        "connection",
    ),
    # --- the broker and the cache
    Variable(
        "REDIS_URL",
        TEXT,
        "",
        "e.g. `redis://host:6379/0`: Celery's broker and the cache",
        shown="unset: a filesystem broker under `var/`, a memory cache per process",
    ),
    Variable(
        "STUDY_REDIS_TIMEOUT",
        NUMBER,
        "0.5",
        "seconds a Redis connect or read may take before it fails (broker and cache)",
    ),
    Variable(
        "STUDY_CACHE_URL",
        TEXT,
        "",
        "the cache's Redis, where it is not the broker's",
        shown="`REDIS_URL`",
    ),
    Variable(
        "STUDY_CACHE_SKIP_SECONDS",
        NUMBER,
        "5",
        "after a Redis cache failure, skip Redis this long (rate limits fail open at once)",
    ),
    Variable(
        "STUDY_BROKER_MIN_FREE_MB",
        NUMBER,
        "64",
        "`/readyz` reports the embedded broker's disk as full below this many MB free "
        "([operations-embedded.md](operations-embedded.md))",
    ),
    Variable(
        "CELERY_TASK_ALWAYS_EAGER",
        SWITCH,
        "0",
        "tasks run in the process that sends them, not on a worker (tests, scripts)",
    ),
    # --- mail
    Variable(
        "DJANGO_EMAIL_BACKEND",
        TEXT,
        "django.core.mail.backends.console.EmailBackend",
        "any Django email backend; `django.core.mail.backends.smtp.EmailBackend` for a real server",
    ),
    Variable(
        "DJANGO_EMAIL_FILE_PATH",
        PATH,
        "",
        "where the file email backend writes",
        shown="`mail/` under `STUDY_VAR_DIR`",
    ),
    Variable("EMAIL_HOST", TEXT, "localhost", "the SMTP server"),
    Variable("EMAIL_PORT", WHOLE, "25", "the SMTP server's port"),
    Variable("EMAIL_HOST_USER", TEXT, "", "SMTP log-in (none when empty)"),
    Variable("EMAIL_HOST_PASSWORD", TEXT, "", "SMTP log-in's password"),
    Variable(
        "EMAIL_USE_TLS",
        SWITCH,
        "0",
        "STARTTLS (usually port 587); with `EMAIL_USE_SSL` too, the start stops",
    ),
    Variable("EMAIL_USE_SSL", SWITCH, "0", "implicit TLS (usually port 465)"),
    Variable(
        "EMAIL_TIMEOUT",
        WHOLE,
        "30",
        "seconds an SMTP send may take (`DJANGO_EMAIL_TIMEOUT` is read where it is unset)",
        also="DJANGO_EMAIL_TIMEOUT",
    ),
    Variable("DEFAULT_FROM_EMAIL", TEXT, "study@localhost", "sender of every mail"),
    # --- study rules and the reminder pass
    Variable(
        "STUDY_LADDER_DAYS",
        LADDER,
        describe(DEFAULT_LADDER, sep=","),
        "the ladder's days: at least 2 rungs of whole days, each longer than the one before; "
        'a bad value stops the start ([CONTRIBUTING.md](../CONTRIBUTING.md), "Change the '
        'ladder")',
    ),
    Variable(
        "STUDY_LEECH_LAPSES",
        WHOLE,
        "8",
        "net failures after which a card is a leech for that learner",
    ),
    Variable(
        "STUDY_TARGET_RETENTION",
        between(0.5, 0.99, "recall"),
        "0.9",
        "the recall the memory figures hold each ladder rung against, and the retention the "
        "staff's suggested ladder aims at ([memory.md](memory.md))",
    ),
    Variable(
        "STUDY_REMINDER_CHUNK",
        WHOLE,
        "500",
        "learners per reminder chunk task (the beat job fans a pass out in chunks)",
    ),
    Variable(
        "STUDY_REMINDER_STAMP_EVERY",
        WHOLE,
        "25",
        "sent reminders are stamped in one `UPDATE` per group of at most this many; a worker "
        "killed outright may resend that one group (`1`: stamp each message alone)",
    ),
    Variable(
        "STUDY_REMINDER_STAMP_WITHIN_MS",
        WHOLE,
        "50",
        "a group stamped in one `UPDATE` holds what was sent within this many milliseconds "
        "(and at most `STUDY_REMINDER_STAMP_EVERY`)",
    ),
    # --- the labs
    *(
        Variable(
            limit.variable,
            POSITIVE,
            str(limit.default),
            f"one lab run's limit{_unit(limit.unit)}: {limit.meaning} ([labs.md](labs.md#limits))",
        )
        for limit in LIMITS
    ),
    Variable(
        "STUDY_LAB_OUTPUT_CHARS",
        WHOLE,
        "20000",
        "what a submission keeps of the printed output (characters); the rest is cut with a note",
    ),
    Variable(
        "STUDY_LAB_LEASE_MARGIN_SECONDS",
        NUMBER,
        "30",
        "seconds past a run's wall limit before its grading may be taken over by another worker",
    ),
    Variable(
        "STUDY_LAB_HEARTBEAT_SECONDS",
        NUMBER,
        "15",
        "how often a labs worker reports whether it can start a sandbox; a report counts for four",
    ),
    Variable(
        "STUDY_LAB_CGROUP",
        PATH,
        "",
        "cgroup v2 under which each lab run gets its own memory cgroup (v1 and a container's "
        "own namespace need none; [labs.md](labs.md))",
        shown="unset",
    ),
    Variable(
        "STUDY_LAB_PYTHON",
        PATH,
        "",
        "the interpreter of a lab run, inside the sandbox; of the service's Python version",
        shown="the system's `python3.X`",
    ),
    Variable(
        "STUDY_LAB_UID_BASE",
        POSITIVE,
        str(UID_BASE),
        "a service run as root hands each lab run the outer uid this + a random 0–99,999",
    ),
    # --- operations
    Variable(
        "STUDY_METRICS_TOKEN",
        TEXT,
        "",
        "bearer token for `/metrics`; staff may read it with their session (empty: staff only)",
    ),
    Variable(
        "STUDY_BEAT_MAX_SILENCE_MINUTES",
        WHOLE,
        "30",
        "`/readyz` reports beat as stale when no periodic task ran for this long",
    ),
    # --- rate limits and the lockout
    *(
        Variable(throttle_variable(scope), RATE, rate, f"{counted}; `off` disables it {SECURITY}")
        for scope, (rate, counted) in THROTTLES.items()
    ),
    Variable(
        "STUDY_TRUSTED_PROXIES",
        WHOLE,
        "0",
        "proxies in front that set `X-Forwarded-For` (`1` in compose, behind its nginx)",
    ),
    Variable("STUDY_LOCKOUT_FAILURES", WHOLE, "5", "failed log-ins that lock a username"),
    Variable("STUDY_LOCKOUT_MINUTES", NUMBER, "15", "how long a locked username stays locked"),
    # --- cost bounds
    Variable(
        "STUDY_PLAYGROUND_CONCURRENCY",
        WHOLE,
        "1",
        "playground requests computed at once per process; more wait up to "
        "`STUDY_PLAYGROUND_WAIT_SECONDS`",
    ),
    Variable(
        "STUDY_PLAYGROUND_WAIT_SECONDS",
        NUMBER,
        "5",
        "how long a playground request waits for its turn in the process",
    ),
    Variable(
        "STUDY_PLAYGROUND_SLOTS",
        WHOLE,
        "1",
        "playground computations at once in the whole service; one more is a 503 with "
        "`Retry-After` (keep it below the web workers)",
    ),
    Variable(
        "STUDY_HASH_CONCURRENCY",
        WHOLE,
        "1",
        "password hashings at once per web process",
    ),
    Variable(
        "STUDY_HASH_WAITING",
        WHOLE,
        "2",
        "password hashings that may wait for their turn; the next is a 503 with `Retry-After`",
    ),
    Variable(
        "STUDY_MAX_BODY_BYTES",
        WHOLE,
        str(8 * 1024 * 1024),
        "largest request body (413 above), here and in nginx",
    ),
    Variable(
        "STUDY_AUTH_MAX_BODY_BYTES",
        WHOLE,
        "4096",
        "largest body of the log-in, sign-up and password paths (413 above), here and in nginx",
    ),
    Variable(
        "STUDY_JSON_MAX_ELEMENTS",
        WHOLE,
        "20000",
        "values, keys and separators a JSON body may hold (the playground's own bound aside)",
    ),
)
VARIABLE = {variable.name: variable for variable in VARIABLES}


def read_all(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Every variable's value, by name; ``ImproperlyConfigured`` naming every bad one."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for variable in VARIABLES:
        try:
            values[variable.name] = variable.read(environ)
        except ImproperlyConfigured as error:
            problems.append(str(error))
    if problems:
        raise ImproperlyConfigured("\n".join(problems))
    return values


def table() -> str:
    """The table as docs/configuration.md holds it."""
    rows = ["| variable | type | default | meaning |", "|---|---|---|---|"]
    for variable in VARIABLES:
        default = f"`{variable.default}`" if variable.default else variable.shown or "empty"
        rows.append(
            f"| `{variable.name}` | {variable.kind.name} | {default} | {variable.meaning} |"
        )
    return "\n".join(rows) + "\n"
