# One module on purpose: Django reads its settings from one module, and every variable the
# service reads from the environment is found here, in one place, top to bottom.
"""Settings for the study service, read from the environment in one module.

With no environment at all the service runs on embedded defaults: SQLite and a
filesystem Celery broker under ``var/``. Production sets ``DJANGO_DEBUG=0``,
``DJANGO_SECRET_KEY``, ``DJANGO_ALLOWED_HOSTS``, ``DATABASE_URL`` and ``REDIS_URL``.
"""

import os
from pathlib import Path

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from cards.ladder import describe, parse_ladder

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("STUDY_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_number(name: str) -> float | None:
    """A positive number from the environment, or None when unset or empty."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    value = float(raw)
    if value <= 0:
        raise ValueError(f"{name} must be a positive number, not {raw!r}")
    return value


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DJANGO_DEBUG", True)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise RuntimeError("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off")
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "")
SITE_URL = os.environ.get("SITE_URL", "http://127.0.0.1:8000").rstrip("/")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "axes",
    "csp",
    "studyapp.common.apps.CommonConfig",
    "exercises",
    "labs",
    "cards",
]

MIDDLEWARE = [
    "studyapp.metrics.RequestLatencyMiddleware",
    # Outside the health checks and the guards, so their answers carry the policy too.
    # django-csp's, with the settings' policy built once per process.
    "studyapp.middleware.PolicyOnceCSPMiddleware",
    "studyapp.health.HealthCheckMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "studyapp.middleware.RequestGuardMiddleware",
    "studyapp.middleware.DatabaseOutageMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "studyapp.csrf.PageCsrfCookieMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Cache-Control on every answer; whom a page is for (the offline worker keeps per learner).
    "studyapp.cache_control.PrivatePagesMiddleware",
    # Django's messages for the pages; API requests skip their storage.
    "studyapp.middleware.PageMessagesMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "studyapp.throttling.WebFormThrottleMiddleware",
    # Last, so it sees the flag the log-in views leave on a locked-out request.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "studyapp.urls"
WSGI_APPLICATION = "studyapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "studyapp.cache_control.offline_learner",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A worker, beat and the web server share the file: wait for locks instead of failing.
    # BEGIN IMMEDIATE takes the write lock up front, so a read-then-write
    # transaction waits its turn instead of failing with "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE"}
    )
    DATABASES["default"]["CONN_MAX_AGE"] = 0

# A database that stops answering must become 503s within seconds, well inside
# gunicorn's 30 s worker timeout, and a request's last statement must end well before
# an Idempotency-Key's 60 s lease runs out (docs/security.md, "Fault paths"):
# libpq's connect timeout (seconds) and PostgreSQL's statement and lock timeouts
# (milliseconds; 0 turns one off). A connection opens with the job statement timeout
# (the Celery worker's tasks, management commands, scripts); the processes that serve
# requests switch to STUDY_DB_STATEMENT_TIMEOUT_MS where they load the WSGI
# application (studyapp.wsgi: gunicorn and runserver).
STUDY_DB_CONNECT_TIMEOUT = int(os.environ.get("STUDY_DB_CONNECT_TIMEOUT", "3"))
# After a connection to PostgreSQL fails (refused, timed out, cut), this process answers
# 503 without asking the database, and probes it every this many seconds until it answers
# (studyapp.common.db_breaker, docs/database-faults.md); 0: every request asks.
STUDY_DB_BREAKER_SECONDS = float(os.environ.get("STUDY_DB_BREAKER_SECONDS", "5"))
STUDY_DB_STATEMENT_TIMEOUT_MS = int(os.environ.get("STUDY_DB_STATEMENT_TIMEOUT_MS", "5000"))
STUDY_DB_LOCK_TIMEOUT_MS = int(os.environ.get("STUDY_DB_LOCK_TIMEOUT_MS", "3000"))
STUDY_DB_JOB_STATEMENT_TIMEOUT_MS = int(
    os.environ.get("STUDY_DB_JOB_STATEMENT_TIMEOUT_MS", str(10 * 60 * 1000))
)


def pg_session_options(*, statement_timeout_ms: int, base: str = "") -> str:
    """libpq's ``options``: the server settings each new connection starts with."""
    timeouts = (
        f"-c statement_timeout={statement_timeout_ms} -c lock_timeout={STUDY_DB_LOCK_TIMEOUT_MS}"
    )
    return f"{base} {timeouts}".strip()


if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    _pg_options = DATABASES["default"].setdefault("OPTIONS", {})
    _pg_base_options = _pg_options.get("options", "")
    _pg_options["connect_timeout"] = STUDY_DB_CONNECT_TIMEOUT
    # Parameters bound by the server, not spliced into the SQL text: psycopg then prepares
    # a statement its connection runs a fifth time, and PostgreSQL stops parsing and
    # planning it on every request (most of a request's time in the database; see
    # docs/benchmarks.md, "Request path"). Off (0) behind a pooler in transaction mode,
    # which cannot keep a connection's prepared statements (docs/operations.md).
    _pg_options["server_side_binding"] = env_bool("STUDY_DB_SERVER_SIDE_BINDING", True)
    if _pg_options["server_side_binding"]:
        # Django turns psycopg's preparing off unless told how often a statement must run.
        _pg_options["prepare_threshold"] = int(os.environ.get("STUDY_DB_PREPARE_THRESHOLD", "5"))
    _pg_options["options"] = pg_session_options(
        statement_timeout_ms=STUDY_DB_JOB_STATEMENT_TIMEOUT_MS, base=_pg_base_options
    )
    # What the processes that serve requests switch to (studyapp.wsgi).
    STUDY_DB_WEB_OPTIONS = pg_session_options(
        statement_timeout_ms=STUDY_DB_STATEMENT_TIMEOUT_MS, base=_pg_base_options
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The lockout check runs before the password is even compared (see docs/security.md).
AUTHENTICATION_BACKENDS = [
    "studyapp.throttling.LockoutBackend",
    "django.contrib.auth.backends.ModelBackend",
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# Where collectstatic writes and WhiteNoise serves from (docs/operations.md, "Behind a proxy").
STATIC_ROOT = Path(os.environ.get("STUDY_STATIC_ROOT") or BASE_DIR / "staticfiles")
STATICFILES_DIRS = [BASE_DIR / "static"] if (BASE_DIR / "static").is_dir() else []
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

CSRF_FAILURE_VIEW = "studyapp.views.csrf_failure"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

# --- Study rules -------------------------------------------------------------
# The ladder's days, "1,3,7,14,30" by default (cards.ladder.DEFAULT_LADDER); a setting that
# is not a ladder stops the start with what is wrong (CONTRIBUTING.md, "Change the ladder").
try:
    STUDY_LADDER_DAYS = parse_ladder(os.environ.get("STUDY_LADDER_DAYS") or describe(sep=","))
except ValueError as _ladder_error:
    raise ImproperlyConfigured(
        f"STUDY_LADDER_DAYS={os.environ.get('STUDY_LADDER_DAYS')!r} is not a ladder: "
        f"{_ladder_error}"
    ) from None
STUDY_DEFAULT_DAY_STARTS_AT = 4
STUDY_IDEMPOTENCY_TTL_HOURS = 24
STUDY_EXERCISE_TTL_DAYS = 7
# A card failed this many times (net of undos) is a leech for that learner.
STUDY_LEECH_LAPSES = int(os.environ.get("STUDY_LEECH_LAPSES", "8"))
# The recall the memory figures hold each ladder rung against (stats/memory/, docs/memory.md).
STUDY_TARGET_RETENTION = float(os.environ.get("STUDY_TARGET_RETENTION", "0.9"))
if not 0.5 <= STUDY_TARGET_RETENTION <= 0.99:
    raise ImproperlyConfigured(
        f"STUDY_TARGET_RETENTION={STUDY_TARGET_RETENTION!r}: give a recall from 0.5 to 0.99"
    )

# --- Labs (docs/labs.md) -----------------------------------------------------------
# The limits of one run of a learner's code in the sandbox (labs.grading.lab_limits);
# code that breaks one is judged not passed, with a message naming the limit. Unset
# (None), each keeps labs.sandbox.Limits' default: 5 s of CPU, 10 s of wall time,
# 512 MB, 32 processes, 8 MB files, 64 KB of output.
STUDY_LAB_CPU_SECONDS = env_number("STUDY_LAB_CPU_SECONDS")
STUDY_LAB_WALL_SECONDS = env_number("STUDY_LAB_WALL_SECONDS")
STUDY_LAB_MEMORY_MB = env_number("STUDY_LAB_MEMORY_MB")
STUDY_LAB_PROCESSES = env_number("STUDY_LAB_PROCESSES")
STUDY_LAB_FILE_MB = env_number("STUDY_LAB_FILE_MB")
STUDY_LAB_OUTPUT_KB = env_number("STUDY_LAB_OUTPUT_KB")
# What a submission keeps of the printed output (characters); the rest is cut with a note.
STUDY_LAB_OUTPUT_CHARS = int(os.environ.get("STUDY_LAB_OUTPUT_CHARS", "20000"))
# A grading not stored this many seconds past its run's wall limit is taken over once by
# another worker (its own was killed); a second time it fails as the service's fault.
STUDY_LAB_LEASE_MARGIN_SECONDS = float(os.environ.get("STUDY_LAB_LEASE_MARGIN_SECONDS", "30"))
# A labs worker reports whether it can start a sandbox every this many seconds, from a
# thread of its own (beat not needed); a report older than 4 of them no longer counts,
# and web processes that cannot start a sandbox then refuse submissions (labs.availability).
STUDY_LAB_HEARTBEAT_SECONDS = float(os.environ.get("STUDY_LAB_HEARTBEAT_SECONDS", "15"))

# --- Operations --------------------------------------------------------------
# Bearer token for /metrics (staff may read it with their session); unset: staff only.
STUDY_METRICS_TOKEN = os.environ.get("STUDY_METRICS_TOKEN", "")
# Learners per reminder chunk task. Sent reminders are stamped in one UPDATE per group
# of at most STAMP_EVERY messages sent within STAMP_WITHIN_MS milliseconds; a worker
# killed outright may resend the one group it had not stamped (docs/operations.md).
STUDY_REMINDER_CHUNK = int(os.environ.get("STUDY_REMINDER_CHUNK", "500"))
STUDY_REMINDER_STAMP_EVERY = int(os.environ.get("STUDY_REMINDER_STAMP_EVERY", "25"))
STUDY_REMINDER_STAMP_WITHIN_MS = int(os.environ.get("STUDY_REMINDER_STAMP_WITHIN_MS", "50"))

# --- REST API ----------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "cards.authentication.ProfileTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + (["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []),
    "DEFAULT_PAGINATION_CLASS": "studyapp.common.pagination.StrictPageNumberPagination",
    "PAGE_SIZE": 20,
    "DEFAULT_SCHEMA_CLASS": "studyapp.schema.AutoSchema",
    "EXCEPTION_HANDLER": "studyapp.common.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["studyapp.throttling.StudyThrottle"],
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Study service API",
    "DESCRIPTION": (
        "Spaced-repetition review of decks about attention and transformers, "
        "on a fixed 1, 3, 7, 14, 30-day ladder, plus generated numeric exercises "
        "checked by an embedded NumPy attention engine."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    # Swagger UI and ReDoc from the installed drf-spectacular-sidecar, not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Each choice set named "status" gets a name of its own in the schema.
    "ENUM_NAME_OVERRIDES": {"LabSubmissionStatusEnum": "labs.models.Submission.Status"},
}

# --- Celery ------------------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
# Seconds a Redis connect or read may take before it fails (broker and cache).
REDIS_SOCKET_TIMEOUT = float(os.environ.get("STUDY_REDIS_TIMEOUT", "0.5"))
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    # Longer than the longest countdown/ETA we use and than any task's hard time
    # limit, so Redis never redelivers a task that is still running.
    # Socket timeouts: a hung Redis fails a publish within about a second instead
    # of holding the request (the beat job catches up on what was not enqueued).
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {
        "visibility_timeout": 3600,
        "socket_timeout": REDIS_SOCKET_TIMEOUT,
        "socket_connect_timeout": REDIS_SOCKET_TIMEOUT,
        "max_retries": 0,
    }
    CELERY_BROKER_CONNECTION_TIMEOUT = REDIS_SOCKET_TIMEOUT
else:
    _broker_dir = VAR_DIR / "celery-broker"
    # kombu's filesystem transport, safe on a full disk (studyapp.broker_fs): a failed
    # publish leaves nothing behind; an unreadable message is set aside in unreadable/.
    CELERY_BROKER_URL = "studyfs://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "unreadable_folder": str(_broker_dir / "unreadable"),
        "store_processed": False,
    }
# /readyz reports the embedded broker's disk as full below this many MB free.
STUDY_BROKER_MIN_FREE_MB = float(os.environ.get("STUDY_BROKER_MIN_FREE_MB", "64"))
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_TIME_LIMIT = 15 * 60
CELERY_TASK_SOFT_TIME_LIMIT = 14 * 60
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"
# Lab submissions run learner code in the sandbox: their own queue and worker
# (`celery -A studyapp worker -Q labs`), so a burst of them never delays the study core.
CELERY_TASK_ROUTES = {"labs.tasks.*": {"queue": "labs"}}
# django-celery-beat's DatabaseScheduler, except that it writes the defaults below
# only when missing, so staff edits in the admin survive a restart of beat.
CELERY_BEAT_SCHEDULER = "cards.beat:DefaultsOnceScheduler"
# Defaults for the beat schedule; they reach the database on migrate (see
# cards.apps) and staff change them in the admin afterwards.
CELERY_BEAT_SCHEDULE = {
    "schedule-new-cards": {
        "task": "cards.tasks.schedule_new_cards",
        "schedule": crontab(minute="*/10"),
    },
    "send-due-reminders": {
        "task": "cards.tasks.send_due_reminders",
        "schedule": crontab(minute="*/15"),
    },
    "housekeeping": {
        "task": "cards.tasks.housekeeping",
        "schedule": crontab(minute=17, hour="*"),
    },
    # Fits each learner's FSRS parameters from their review log (cards.services.memory),
    # fanned out in chunks of learners; requests only read what it stores.
    "refresh-memory-parameters": {
        "task": "cards.tasks.refresh_memory_parameters",
        "schedule": crontab(minute=41, hour=3, day_of_week="sun"),
    },
    # Runs on the labs worker (the labs queue): whether it can start a sandbox, kept in
    # the cache for web processes that cannot start one themselves (labs.availability).
    "report-lab-sandbox": {
        "task": "labs.tasks.report_sandbox",
        "schedule": 60.0,
    },
    # Sends again the lab gradings queued for over a minute and those whose worker was
    # lost (running past their lease): no submission stays queued or running for ever.
    "sweep-lab-submissions": {
        "task": "labs.tasks.sweep_submissions",
        "schedule": 30.0,
    },
    # Keeps each learner's 20 newest submissions of a lab and those a review refers to
    # (labs.housekeeping); deletes the rest in one statement.
    "prune-lab-submissions": {
        "task": "labs.tasks.prune_submissions",
        "schedule": crontab(minute=37, hour="*"),
    },
}

# --- Cache: throttle counters and lockouts ------------------------------------------
# Redis when REDIS_URL is set, so every gunicorn worker and web container shares
# the counters; a per-process memory cache on the embedded default.
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": os.environ.get("STUDY_CACHE_URL", REDIS_URL),
            "KEY_PREFIX": "study",
            "OPTIONS": {
                "socket_timeout": REDIS_SOCKET_TIMEOUT,
                "socket_connect_timeout": REDIS_SOCKET_TIMEOUT,
                # After a failure Redis is skipped for this many seconds (the limits fail
                # open at once) instead of every request waiting the timeout.
                "pool_class": "studyapp.common.cache.CircuitBreakerPool",
                "circuit_cooldown": float(os.environ.get("STUDY_CACHE_SKIP_SECONDS", "5")),
            },
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Rate limits and lockout (docs/security.md) ----------------------------------
# STUDY_THROTTLE_<SCOPE> = "<n>/<second|minute|hour|day>" or "off".
STUDY_THROTTLE_DEFAULTS = {
    "register": "20/hour",  # per client address
    "login": "30/minute",  # per client address; web log-in and auth/token/ together
    "password_reset": "10/hour",  # per client address
    "exercise_create": "120/minute",  # per learner
    "exercise_submit": "120/minute",  # per learner
    "playground": "60/minute",  # per learner
    # per learner, in cost units, not requests (exercises.playground.playground_cost: about
    # a microsecond of CPU each; the largest request costs about 560,000)
    "playground_cost": "2000000/minute",
    "lab_submit": "10/minute",  # per learner: each submission runs code in the sandbox
    "user": "1200/minute",  # per learner, every other authenticated request
}


def _throttle_rate(scope: str) -> str | None:
    # Unset or empty: the default (an empty value from compose must not mean "off").
    raw = os.environ.get(f"STUDY_THROTTLE_{scope.upper()}", "").strip().lower()
    raw = raw or STUDY_THROTTLE_DEFAULTS[scope]
    if raw == "off":
        return None
    count, _, period = raw.partition("/")
    if not count.isdigit() or period[:1] not in {"s", "m", "h", "d"}:
        raise RuntimeError(
            f"STUDY_THROTTLE_{scope.upper()}: expected '<n>/<second|minute|hour|day>' "
            f"or 'off', got {raw!r}"
        )
    return raw


STUDY_THROTTLE_RATES = {scope: _throttle_rate(scope) for scope in STUDY_THROTTLE_DEFAULTS}
# Client addresses come from REMOTE_ADDR unless a proxy in front is trusted to set
# X-Forwarded-For (then the number of proxies, as DRF's NUM_PROXIES).
STUDY_TRUSTED_PROXIES = int(os.environ.get("STUDY_TRUSTED_PROXIES", "0"))

# django-axes: failed log-ins counted per username, web and API together.
AXES_LOCKOUT_PARAMETERS = ["username"]
AXES_FAILURE_LIMIT = int(os.environ.get("STUDY_LOCKOUT_FAILURES", "5"))
AXES_COOLOFF_TIME = float(os.environ.get("STUDY_LOCKOUT_MINUTES", "15")) / 60  # hours
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "studyapp.throttling.lockout_response"
AXES_HTTP_RESPONSE_CODE = 429
AXES_VERBOSE = False
# Lockout is per username whatever the address (the contract); per-address limits
# are the "login" throttle scope, which axes' W006 cannot see.
SILENCED_SYSTEM_CHECKS = ["axes.W006"]

# Playground requests computed at once per process; more wait up to this long.
# A maximum request peaks at about 125 MB of Python objects (a 6 MB body in, 13 MB out).
STUDY_PLAYGROUND_CONCURRENCY = int(os.environ.get("STUDY_PLAYGROUND_CONCURRENCY", "1"))
STUDY_PLAYGROUND_WAIT_SECONDS = float(os.environ.get("STUDY_PLAYGROUND_WAIT_SECONDS", "5"))
# Playground computations at once in the whole service (counted in the cache, so across
# every worker and container with Redis); one more is a 503 with Retry-After at once. Keep
# it below the web workers, so that one is always free for everyone else.
STUDY_PLAYGROUND_SLOTS = int(os.environ.get("STUDY_PLAYGROUND_SLOTS", "1"))
# Password hashings (240-250 ms of CPU each) run at once per web process; more wait for
# one in turn, up to STUDY_HASH_WAITING of them, and the next is a 503 with Retry-After
# (studyapp.hashing; nginx paces the log-in paths in front: docs/security.md).
STUDY_HASH_CONCURRENCY = int(os.environ.get("STUDY_HASH_CONCURRENCY", "1"))
STUDY_HASH_WAITING = int(os.environ.get("STUDY_HASH_WAITING", "2"))
# Django's list with its PBKDF2 hasher (the one that writes new hashes) replaced by the
# same algorithm behind that bound: stored hashes are read as before.
PASSWORD_HASHERS = [
    "studyapp.hashing.QueuedPBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.BCryptSHA256PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
]

# --- Request limits ---------------------------------------------------------------
# The largest request body accepted. The largest playground request the contract
# allows, X and W_Q, W_K, W_V of 256 x 256 at float64's full precision plus a
# 256 x 256 mask, is about 6.2 MB as Python's json writes it (Q, K, V alone: 4.3 MB).
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("STUDY_MAX_BODY_BYTES", str(8 * 1024 * 1024)))
STUDY_JSON_MAX_DEPTH = 32
# Values, keys and separators a JSON body may hold (studyapp.common.jsonscan.json_shape):
# what its parser's time grows with. No body but the playground's needs more than a few
# hundred; the playground's largest, five 256 x 256 matrices, holds 329,000.
STUDY_JSON_MAX_ELEMENTS = int(os.environ.get("STUDY_JSON_MAX_ELEMENTS", "20000"))
STUDY_PLAYGROUND_MAX_ELEMENTS = 6 * 256 * 256
# The log-in, sign-up and password paths take a few fields: a larger body is a 413, in
# nginx (its location's client_max_body_size) and here (docs/security.md, "Cost bounds").
STUDY_AUTH_MAX_BODY_BYTES = int(os.environ.get("STUDY_AUTH_MAX_BODY_BYTES", "4096"))
# An error answer larger than this is cut down to its first fields and messages.
STUDY_MAX_ERROR_BYTES = 64 * 1024

# --- Health ------------------------------------------------------------------------
# /readyz reports beat as stale when no periodic task ran for this long.
STUDY_BEAT_MAX_SILENCE_MINUTES = int(os.environ.get("STUDY_BEAT_MAX_SILENCE_MINUTES", "30"))

# --- Content-Security-Policy (django-csp) -------------------------------------------
# No inline script anywhere; inline style attributes remain (charts, heat maps).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
        "worker-src": ["'self'", "blob:"],
    }
}

# --- Email -------------------------------------------------------------------
EMAIL_BACKEND = os.environ.get(
    "DJANGO_EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend"
)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "study@localhost")
EMAIL_FILE_PATH = os.environ.get("DJANGO_EMAIL_FILE_PATH", str(VAR_DIR / "mail"))
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")  # the SMTP server, README's table
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS, EMAIL_USE_SSL = env_bool("EMAIL_USE_TLS", False), env_bool("EMAIL_USE_SSL", False)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise RuntimeError("EMAIL_USE_TLS and EMAIL_USE_SSL: set one of them, not both")
# A hung SMTP send must end well before a reminder claim can be taken over.
EMAIL_TIMEOUT = int(os.environ.get("EMAIL_TIMEOUT") or os.environ.get("DJANGO_EMAIL_TIMEOUT", "30"))

# --- Logging -----------------------------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}

# --- Production hardening ------------------------------------------------------
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", str(60 * 60 * 24 * 365)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_REFERRER_POLICY = "same-origin"
    X_FRAME_OPTIONS = "DENY"
