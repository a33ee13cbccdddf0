"""What a request may bring, by path: the body's size and its JSON's elements, and the
reading of a body nobody read (``RequestGuardMiddleware`` applies them)."""

from __future__ import annotations

from django.conf import settings

from studyapp.common.budget import one_of

PLAYGROUND_PATH = "/api/v1/attention/"

# The paths that take a log-in, a sign-up or a password: a few fields each, so a body of
# at most STUDY_AUTH_MAX_BODY_BYTES. deploy/nginx/default.conf.template's location for
# them names the same paths (tests/test_cost_bounds.py holds the two equal).
AUTH_PATHS = (
    "/api/v1/auth/",
    "/api/v1/me/password/",
    "/login/",
    "/signup/",
    "/password/",
    "/admin/login/",
)
DRAIN_CHUNK_BYTES = 64 * 1024


def body_limit(path: str) -> int | None:
    """The largest body accepted on ``path``, in bytes (None: no limit)."""
    if path.startswith(AUTH_PATHS):
        return settings.STUDY_AUTH_MAX_BODY_BYTES
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def element_limit(path: str) -> int:
    """The most values, keys and separators a JSON body may hold on ``path``."""
    if path == PLAYGROUND_PATH:
        return settings.STUDY_PLAYGROUND_MAX_ELEMENTS
    return settings.STUDY_JSON_MAX_ELEMENTS


def drain_body(request) -> None:
    """Read what is left of a body nothing read, up to the service's largest (the most
    nginx passes on), so the connection closes cleanly after the answer."""
    if getattr(request, "_read_started", False) or hasattr(request, "_body"):
        return
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return
    largest = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if not 0 < length <= (largest if largest is not None else length):
        return
    try:
        while request.read(DRAIN_CHUNK_BYTES):
            pass
    except OSError:  # the client went away meanwhile
        return


def playground_slot():
    """One of the service's ``STUDY_PLAYGROUND_SLOTS`` playground slots, held in the cache
    (with Redis, across every worker and container): a context manager giving whether
    this request holds one. Taken before the body is read, so a request that finds none
    costs no scan and no parse, and a web worker is always left for everyone else."""
    return one_of("playground:slot", settings.STUDY_PLAYGROUND_SLOTS)
