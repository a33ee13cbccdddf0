# One module on purpose: Django reads its settings from one module; every value comes from
# the table in studyapp/configuration/, read here top to bottom.
"""Settings for the study service, read from the environment in one module.

Every variable, with its kind, default and meaning, is in ``studyapp.configuration``
(docs/configuration.md); ``env`` holds their values, read once, and a bad one has
stopped the start before any setting is made. With no environment at all the service
runs on embedded defaults: SQLite and a filesystem Celery broker under ``var/``.
Production sets ``DJANGO_DEBUG=0``, ``DJANGO_SECRET_KEY``, ``DJANGO_ALLOWED_HOSTS``,
``DATABASE_URL`` and ``REDIS_URL``.
"""

from pathlib import Path

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from cards.ladder import describe
from studyapp.configuration import THROTTLES, read_all, throttle_variable

env = read_all()

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env["STUDY_VAR_DIR"] or BASE_DIR / "var")

DEBUG = env["DJANGO_DEBUG"]
SECRET_KEY = env["DJANGO_SECRET_KEY"]
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off")
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"

ALLOWED_HOSTS = env["DJANGO_ALLOWED_HOSTS"]
CSRF_TRUSTED_ORIGINS = env["DJANGO_CSRF_TRUSTED_ORIGINS"]
SITE_URL = env["SITE_URL"].rstrip("/")

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
    "default": dj_database_url.parse(
        env["DATABASE_URL"] or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=env["DB_CONN_MAX_AGE"],
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
STUDY_DB_CONNECT_TIMEOUT = env["STUDY_DB_CONNECT_TIMEOUT"]
# After a connection to PostgreSQL fails (refused, timed out, cut), this process answers
# 503 without asking the database, and probes it every this many seconds until it answers
# (studyapp.common.db_breaker, docs/database-faults.md); 0: every request asks.
STUDY_DB_BREAKER_SECONDS = env["STUDY_DB_BREAKER_SECONDS"]
STUDY_DB_STATEMENT_TIMEOUT_MS = env["STUDY_DB_STATEMENT_TIMEOUT_MS"]
STUDY_DB_LOCK_TIMEOUT_MS = env["STUDY_DB_LOCK_TIMEOUT_MS"]
STUDY_DB_JOB_STATEMENT_TIMEOUT_MS = env["STUDY_DB_JOB_STATEMENT_TIMEOUT_MS"]


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
    _pg_options["server_side_binding"] = env["STUDY_DB_SERVER_SIDE_BINDING"]
    if _pg_options["server_side_binding"]:
        # Django turns psycopg's preparing off unless told how often a statement must run.
        _pg_options["prepare_threshold"] = env["STUDY_DB_PREPARE_THRESHOLD"]
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
STATIC_ROOT = Path(env["STUDY_STATIC_ROOT"] or BASE_DIR / "staticfiles")
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
# The ladder's days, cards.ladder.DEFAULT_LADDER by default; a setting that is not a
# ladder stops the start with what is wrong (CONTRIBUTING.md, "Change the ladder").
STUDY_LADDER_DAYS = env["STUDY_LADDER_DAYS"]
STUDY_DEFAULT_DAY_STARTS_AT = 4
STUDY_IDEMPOTENCY_TTL_HOURS = 24
STUDY_EXERCISE_TTL_DAYS = 7
# A card failed this many times (net of undos) is a leech for that learner.
STUDY_LEECH_LAPSES = env["STUDY_LEECH_LAPSES"]
# The recall the memory figures hold each ladder rung against (stats/memory/, docs/memory.md).
STUDY_TARGET_RETENTION = env["STUDY_TARGET_RETENTION"]

# --- Labs (docs/labs.md) -----------------------------------------------------------
# The limits of one run of a learner's code in the sandbox, in their variables' units
# (labs.sandbox.limits.LIMITS, read by labs.grading.lab_limits); code that breaks one is
# judged not passed, with a message naming the limit.
STUDY_LAB_CPU_SECONDS = env["STUDY_LAB_CPU_SECONDS"]
STUDY_LAB_WALL_SECONDS = env["STUDY_LAB_WALL_SECONDS"]
STUDY_LAB_MEMORY_MB = env["STUDY_LAB_MEMORY_MB"]
STUDY_LAB_PROCESSES = env["STUDY_LAB_PROCESSES"]
STUDY_LAB_FILE_MB = env["STUDY_LAB_FILE_MB"]
STUDY_LAB_OUTPUT_KB = env["STUDY_LAB_OUTPUT_KB"]
# What a submission keeps of the printed output (characters); the rest is cut with a note.
STUDY_LAB_OUTPUT_CHARS = env["STUDY_LAB_OUTPUT_CHARS"]
# A grading not stored this many seconds past its run's wall limit is taken over once by
# another worker (its own was killed); a second time it fails as the service's fault.
STUDY_LAB_LEASE_MARGIN_SECONDS = env["STUDY_LAB_LEASE_MARGIN_SECONDS"]
# A labs worker reports whether it can start a sandbox every this many seconds, from a
# thread of its own (beat not needed); a report older than 4 of them no longer counts,
# and web processes that cannot start a sandbox then refuse submissions (labs.availability).
STUDY_LAB_HEARTBEAT_SECONDS = env["STUDY_LAB_HEARTBEAT_SECONDS"]

# --- Operations --------------------------------------------------------------
# Bearer token for /metrics (staff may read it with their session); unset: staff only.
STUDY_METRICS_TOKEN = env["STUDY_METRICS_TOKEN"]
# Learners per reminder chunk task. Sent reminders are stamped in one UPDATE per group
# of at most STAMP_EVERY messages sent within STAMP_WITHIN_MS milliseconds; a worker
# killed outright may resend the one group it had not stamped (docs/operations.md).
STUDY_REMINDER_CHUNK = env["STUDY_REMINDER_CHUNK"]
STUDY_REMINDER_STAMP_EVERY = env["STUDY_REMINDER_STAMP_EVERY"]
STUDY_REMINDER_STAMP_WITHIN_MS = env["STUDY_REMINDER_STAMP_WITHIN_MS"]

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
        f"on a fixed {describe(STUDY_LADDER_DAYS)}-day ladder, plus generated numeric exercises "
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
REDIS_URL = env["REDIS_URL"]
# Seconds a Redis connect or read may take before it fails (broker and cache).
REDIS_SOCKET_TIMEOUT = env["STUDY_REDIS_TIMEOUT"]
CELERY_TASK_ALWAYS_EAGER = env["CELERY_TASK_ALWAYS_EAGER"]
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
STUDY_BROKER_MIN_FREE_MB = env["STUDY_BROKER_MIN_FREE_MB"]
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
            "LOCATION": env["STUDY_CACHE_URL"] or REDIS_URL,
            "KEY_PREFIX": "study",
            "OPTIONS": {
                "socket_timeout": REDIS_SOCKET_TIMEOUT,
                "socket_connect_timeout": REDIS_SOCKET_TIMEOUT,
                # After a failure Redis is skipped for this many seconds (the limits fail
                # open at once) instead of every request waiting the timeout.
                "pool_class": "studyapp.common.cache.CircuitBreakerPool",
                "circuit_cooldown": env["STUDY_CACHE_SKIP_SECONDS"],
            },
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Rate limits and lockout (docs/security.md) ----------------------------------
# Per scope, "<n>/<second|minute|hour|day>" or None (off): STUDY_THROTTLE_<SCOPE>, whose
# defaults and what each counts are studyapp.configuration.THROTTLES.
STUDY_THROTTLE_RATES = {scope: env[throttle_variable(scope)] for scope in THROTTLES}
# Client addresses come from REMOTE_ADDR unless a proxy in front is trusted to set
# X-Forwarded-For (then the number of proxies, as DRF's NUM_PROXIES).
STUDY_TRUSTED_PROXIES = env["STUDY_TRUSTED_PROXIES"]

# django-axes: failed log-ins counted per username, web and API together.
AXES_LOCKOUT_PARAMETERS = ["username"]
AXES_FAILURE_LIMIT = env["STUDY_LOCKOUT_FAILURES"]
AXES_COOLOFF_TIME = env["STUDY_LOCKOUT_MINUTES"] / 60  # hours
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "studyapp.throttling.lockout_response"
AXES_HTTP_RESPONSE_CODE = 429
AXES_VERBOSE = False
# Lockout is per username whatever the address (the contract); per-address limits
# are the "login" throttle scope, which axes' W006 cannot see.
SILENCED_SYSTEM_CHECKS = ["axes.W006"]

# Playground requests computed at once per process; more wait up to this long.
# A maximum request peaks at about 125 MB of Python objects (a 6 MB body in, 13 MB out).
STUDY_PLAYGROUND_CONCURRENCY = env["STUDY_PLAYGROUND_CONCURRENCY"]
STUDY_PLAYGROUND_WAIT_SECONDS = env["STUDY_PLAYGROUND_WAIT_SECONDS"]
# Playground computations at once in the whole service (counted in the cache, so across
# every worker and container with Redis); one more is a 503 with Retry-After at once. Keep
# it below the web workers, so that one is always free for everyone else.
STUDY_PLAYGROUND_SLOTS = env["STUDY_PLAYGROUND_SLOTS"]
# Password hashings (240-250 ms of CPU each) run at once per web process; more wait for
# one in turn, up to STUDY_HASH_WAITING of them, and the next is a 503 with Retry-After
# (studyapp.hashing; nginx paces the log-in paths in front: docs/security.md).
STUDY_HASH_CONCURRENCY = env["STUDY_HASH_CONCURRENCY"]
STUDY_HASH_WAITING = env["STUDY_HASH_WAITING"]
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
DATA_UPLOAD_MAX_MEMORY_SIZE = env["STUDY_MAX_BODY_BYTES"]
STUDY_JSON_MAX_DEPTH = 32
# Values, keys and separators a JSON body may hold (studyapp.common.jsonscan.json_shape):
# what its parser's time grows with. No body but the playground's needs more than a few
# hundred; the playground's largest, five 256 x 256 matrices, holds 329,000.
STUDY_JSON_MAX_ELEMENTS = env["STUDY_JSON_MAX_ELEMENTS"]
STUDY_PLAYGROUND_MAX_ELEMENTS = 6 * 256 * 256
# The log-in, sign-up and password paths take a few fields: a larger body is a 413, in
# nginx (its location's client_max_body_size) and here (docs/security.md, "Cost bounds").
STUDY_AUTH_MAX_BODY_BYTES = env["STUDY_AUTH_MAX_BODY_BYTES"]
# An error answer larger than this is cut down to its first fields and messages.
STUDY_MAX_ERROR_BYTES = 64 * 1024

# --- Health ------------------------------------------------------------------------
# /readyz reports beat as stale when no periodic task ran for this long.
STUDY_BEAT_MAX_SILENCE_MINUTES = env["STUDY_BEAT_MAX_SILENCE_MINUTES"]

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
EMAIL_BACKEND = env["DJANGO_EMAIL_BACKEND"]
DEFAULT_FROM_EMAIL = env["DEFAULT_FROM_EMAIL"]
EMAIL_FILE_PATH = env["DJANGO_EMAIL_FILE_PATH"] or str(VAR_DIR / "mail")
EMAIL_HOST = env["EMAIL_HOST"]
EMAIL_PORT = env["EMAIL_PORT"]
EMAIL_HOST_USER = env["EMAIL_HOST_USER"]
EMAIL_HOST_PASSWORD = env["EMAIL_HOST_PASSWORD"]
EMAIL_USE_TLS, EMAIL_USE_SSL = env["EMAIL_USE_TLS"], env["EMAIL_USE_SSL"]
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL: set one of them, not both")
# A hung SMTP send must end well before a reminder claim can be taken over.
EMAIL_TIMEOUT = env["EMAIL_TIMEOUT"]

# --- Logging -----------------------------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env["LOG_LEVEL"]},
}

# --- Production hardening ------------------------------------------------------
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env["DJANGO_SECURE_SSL_REDIRECT"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env["DJANGO_HSTS_SECONDS"]
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_REFERRER_POLICY = "same-origin"
    X_FRAME_OPTIONS = "DENY"
