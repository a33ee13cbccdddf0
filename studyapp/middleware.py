"""Guards in front of every view: request limits, bounded errors, and a database outage.

- A query string holding NUL is a 400 (PostgreSQL cannot store it). A Content-Type
  naming a charset other than UTF-8, UTF-16, UTF-32, US-ASCII or Latin-1 is a 415
  before a byte is decoded, on the API and the pages alike (``studyapp.common.charsets``).
- A body over its path's limit is a 413 (``studyapp.request_bounds``: a few KiB on the
  log-in paths); JSON nested deeper than ``STUDY_JSON_MAX_DEPTH`` or holding more
  elements than its path allows is a 400 before any parser reads it. Both are found in
  one scan linear in the body (``studyapp.common.jsonscan``) for every content type the
  view's parsers would read as JSON (``*/*``, ``application/*``, charsets, any case),
  as DRF's own content negotiation picks the parser. The guard
  reads the body's code units in its charset without decoding it; the parser decodes
  it once, with the codec the guard chose (a byte order mark dropped).
- A body answered unread (a refusal, a 401) is read to its end first, or nginx, still
  sending it, sees a reset and answers 502; a log-in that finds every hashing of the
  process taken is a 503 with ``Retry-After`` (``studyapp.hashing``).
- Error answers (4xx JSON) longer than ``STUDY_MAX_ERROR_BYTES`` are cut down to
  their first fields and messages.
- The playground computes at most ``STUDY_PLAYGROUND_SLOTS`` requests at once in the
  service (a 503 before the body is read) and ``STUDY_PLAYGROUND_CONCURRENCY`` per
  process, and hands freed memory back to the system after.
- A database that does not answer is a 503 with ``Retry-After``, not a 500; so is one
  that did not answer within its timeouts, and a write that kept losing to others.

And the request path's own costs, cut where a request does not need them
(docs/benchmarks.md, "Request path"): the Content-Security-Policy header built from the
settings once per process (``PolicyOnceCSPMiddleware``), message storage for the pages
only (``PageMessagesMiddleware``), DRF's parser choice for the depth check made once per
view class and Content-Type (``studyapp.json_body``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import json
import logging
import math
import threading

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject, CSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.contrib.messages.middleware import MessageMiddleware
from django.core.signals import setting_changed
from django.db import InterfaceError, OperationalError, connection
from django.dispatch import receiver
from django.http import HttpResponse, JsonResponse

from studyapp import json_body
from studyapp.common import charsets, db_breaker
from studyapp.common.db import database_fault, query_deadline
from studyapp.common.jsonscan import json_depth as json_depth  # re-exported: tests use it
from studyapp.common.jsonscan import json_shape
from studyapp.hashing import BUSY_DETAIL, RETRY_AFTER_SECONDS, HashingBusy
from studyapp.request_bounds import (
    PLAYGROUND_PATH,
    body_limit,
    drain_body,
    element_limit,
    playground_slot,
)

logger = logging.getLogger(__name__)

DB_RETRY_AFTER_SECONDS = 30
DB_TIMEOUT_RETRY_AFTER_SECONDS = 5
DB_CONFLICT_RETRY_AFTER_SECONDS = 1
# The server's statement timeout fires first; the client's deadline only for a server
# that cannot keep it.
QUERY_DEADLINE_MARGIN_SECONDS = 2
LARGE_BODY_BYTES = 256 * 1024


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def _error(request, status: int, detail: str, *, retry_after: int | None = None) -> HttpResponse:
    response: HttpResponse
    if _is_api(request):
        response = JsonResponse({"detail": detail}, status=status)
    else:
        response = HttpResponse(detail, status=status, content_type="text/plain; charset=utf-8")
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


def _trim(value, *, keys: int = 20, items: int = 10, chars: int = 500):
    if isinstance(value, dict):
        # A key can be the client's own text (a part name it sent): it is cut as a value is.
        return {_trim(k): _trim(v) for k, v in list(value.items())[:keys]}
    if isinstance(value, list):
        return [_trim(v) for v in value[:items]]
    if isinstance(value, str) and len(value) > chars:
        return value[:chars] + "…"
    return value


def bounded_error(content: bytes, limit: int | None = None) -> bytes | None:
    """A shorter version of an oversized JSON error body, or None when it is not JSON.

    The first fields, items and characters are kept; where even those exceed ``limit``
    bytes (errors nested deep), only the note is left.
    """
    try:
        data = json.loads(content)
    except ValueError:
        return None
    if isinstance(data, dict):
        shown = _trim(data)
        hidden = len(data) - len(shown)
        note = "The answer was cut to its first errors"
        if hidden:
            note += f" ({hidden} more fields not shown)"
        note += "; fix these and send the request again."
        if isinstance(shown.get("detail"), str):
            shown["detail"] = f"{shown['detail']} ({note})"
        else:
            shown["detail"] = note
        shorter = json.dumps(shown).encode()
    else:
        shorter = json.dumps(_trim(data)).encode()
    if limit is not None and len(shorter) > limit:
        return json.dumps(
            {"detail": "The errors were too long to show; send fewer or shorter fields."}
        ).encode()
    return shorter


def _release_memory() -> None:
    # Large JSON bodies leave freed arenas in the C allocator; give them back.
    if _libc is not None:
        _libc.malloc_trim(0)


def _load_libc():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        return libc
    except (OSError, AttributeError):
        return None


_libc = _load_libc()
_playground_slots: threading.BoundedSemaphore | None = None
_playground_lock = threading.Lock()


def _slots() -> threading.BoundedSemaphore:
    global _playground_slots
    with _playground_lock:
        if _playground_slots is None:
            _playground_slots = threading.BoundedSemaphore(settings.STUDY_PLAYGROUND_CONCURRENCY)
        return _playground_slots


class RequestGuardMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path == PLAYGROUND_PATH and request.method == "POST":
            # The slot is taken before the body is read, so waiting requests hold no body.
            response = self._playground(request)
        else:
            response = self._refuse(request) or self.get_response(request)
        drain_body(request)
        return self._bound(response)

    def _refuse(self, request) -> HttpResponse | None:
        query = request.META.get("QUERY_STRING", "")
        if "\x00" in query or "%00" in query:
            return _error(
                request,
                400,
                "The query string holds a NUL character (%00); no parameter may contain one.",
            )
        # Before anything reads the body or the query string in that charset.
        refused = charsets.refusal(request.content_params)
        if refused is not None:
            return _error(request, 415, refused)
        limit = body_limit(request.path)
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return _error(request, 400, "Content-Length is not a number.")
        if limit is not None and length > limit:
            return _error(
                request,
                413,
                f"The request body is {length:,} bytes; at most {limit:,} are accepted.",
            )
        return None

    def process_view(self, request, view_func, view_args, view_kwargs):
        # DRF parses no body without a length (_refuse has checked that it is a number).
        if not int(request.META.get("CONTENT_LENGTH") or 0):
            return None
        if not json_body.parser_reads(request, view_func):
            return None
        try:
            units = json_body.code_units(request)  # the parser alone decodes the body
        except json_body.NotText as exc:
            return _error(request, 400, str(exc))
        shape = json_shape(units)
        if shape.depth > settings.STUDY_JSON_MAX_DEPTH:
            return _error(
                request,
                400,
                f"JSON parse error: arrays and objects nest {shape.depth} levels deep; at "
                f"most {settings.STUDY_JSON_MAX_DEPTH} are accepted.",
            )
        most = element_limit(request.path)
        if shape.elements > most:
            return _error(
                request,
                400,
                f"JSON parse error: the body holds {shape.elements:,} values, keys and "
                f"separators; at most {most:,} are accepted here.",
            )
        request.json_shape = shape  # what the parser will meet (the playground's cost)
        return None

    def process_exception(self, request, exception):
        if isinstance(exception, HashingBusy):
            return _error(request, 503, BUSY_DETAIL, retry_after=RETRY_AFTER_SECONDS)
        return None

    def _playground(self, request):
        busy = "The playground is busy with other requests; try again in a few seconds."
        with playground_slot() as free:
            slots = _slots()
            if not free or not slots.acquire(timeout=settings.STUDY_PLAYGROUND_WAIT_SECONDS):
                return _error(request, 503, busy, retry_after=2)
            try:
                response = self._refuse(request) or self.get_response(request)
            finally:
                slots.release()
        if len(getattr(request, "_body", b"") or b"") > LARGE_BODY_BYTES:
            request._body = b""
            _release_memory()
        return response

    def _bound(self, response):
        if (
            400 <= response.status_code < 500
            and not getattr(response, "streaming", False)
            and response.get("Content-Type", "").startswith("application/json")
            and len(response.content) > settings.STUDY_MAX_ERROR_BYTES
        ):
            shorter = bounded_error(response.content, settings.STUDY_MAX_ERROR_BYTES)
            if shorter is not None:
                response.content = shorter
        return response


class DatabaseOutageMiddleware:
    """A database that refuses or drops connections answers 503 with Retry-After.

    Each query of a request also ends on the client's side within the statement
    timeout plus ``QUERY_DEADLINE_MARGIN_SECONDS``: a server frozen outright keeps no
    timeout of its own (``studyapp.common.db.query_deadline``).

    A connection that failed (refused, timed out, cut) opens the process's breaker
    (``studyapp.common.db_breaker``): until a probe reaches the database again, requests
    answer 503 at once, without asking it.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        retry_after = db_breaker.default.breaker.retry_after()
        if retry_after is not None:
            return _error(
                request,
                503,
                "The database is not answering; nothing was changed. "
                f"Try again in {retry_after} s.",
                retry_after=retry_after,
            )
        timeout_ms = getattr(settings, "STUDY_DB_STATEMENT_TIMEOUT_MS", 0)
        if connection.vendor != "postgresql" or not timeout_ms:
            return self.get_response(request)
        deadline = timeout_ms / 1000 + QUERY_DEADLINE_MARGIN_SECONDS
        with connection.execute_wrapper(query_deadline(deadline)):
            return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        fault = database_fault(exception)
        if fault == "conflict":
            # Still losing to other writers after the retries: busy, not down.
            logger.warning("Write conflict after retries: %s", exception)
            return _error(
                request,
                503,
                "The database was busy with a conflicting change; nothing was changed. Try again.",
                retry_after=DB_CONFLICT_RETRY_AFTER_SECONDS,
            )
        if fault == "timeout":
            logger.error("Database too slow: %s: %s", type(exception).__name__, exception)
            return _error(
                request,
                503,
                "The database did not answer in time; nothing was changed. Try again shortly.",
                retry_after=DB_TIMEOUT_RETRY_AFTER_SECONDS,
            )
        logger.error("Database unavailable: %s: %s", type(exception).__name__, exception)
        retry_after = DB_RETRY_AFTER_SECONDS
        window = settings.STUDY_DB_BREAKER_SECONDS
        if window > 0 and db_breaker.is_connection_failure(exception, connection):
            db_breaker.default.failed(exception, window=window)
            retry_after = math.ceil(window)  # the first probe
        return _error(
            request,
            503,
            "The database is not answering; nothing was changed. Try again shortly.",
            retry_after=retry_after,
        )


# --- Work an API request does not need ------------------------------------------------


@functools.cache
def _default_policy(report_only: bool) -> str:
    # Cleared when a test changes the policy settings (see _policy_settings_changed).
    return build_policy(report_only=report_only)


@receiver(setting_changed)
def _policy_settings_changed(*, setting: str, **kwargs) -> None:
    if setting.startswith("CONTENT_SECURITY_POLICY"):
        _default_policy.cache_clear()


class PolicyOnceCSPMiddleware(CSPMiddleware):
    """django-csp's middleware with the settings' policy built once per process.

    A response that carries no policy of its own (``csp_update``, ``csp_replace`` and
    ``csp_override`` leave one) for a request that used no nonce gets the settings'
    policy, which django-csp would otherwise build from the settings on every response;
    any other response gets its policy built as django-csp builds it. Which responses
    get the headers is django-csp's rule, unchanged.
    """

    def process_response(self, request, response):
        if response.status_code in (500, 404) and settings.DEBUG:
            return response  # django-csp leaves the debug pages alone
        for report_only, header, exempt, setting in (
            (False, HEADER, "_csp_exempt", "CONTENT_SECURITY_POLICY"),
            (True, HEADER_REPORT_ONLY, "_csp_exempt_ro", "CONTENT_SECURITY_POLICY_REPORT_ONLY"),
        ):
            parts = self.get_policy_parts(request, response, report_only=report_only)
            if parts.config is parts.update is parts.replace is parts.nonce is None:
                policy = _default_policy(report_only)
            else:
                policy = build_policy(
                    config=parts.config,
                    update=parts.update,
                    replace=parts.replace,
                    nonce=parts.nonce,
                    report_only=report_only,
                )
            if not policy or header in response or getattr(response, exempt, False) is not False:
                continue
            prefixes = (getattr(settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES") or ()
            if not request.path_info.startswith(tuple(prefixes)):
                response[header] = policy
        if getattr(request, "_csp_nonce", None) is None:
            # As django-csp: a nonce asked for after the header was written is an error.
            request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)
        return response


def is_api_path(request) -> bool:
    return request.path_info.startswith("/api/")


class PageMessagesMiddleware(MessageMiddleware):
    """Django's messages for the server-rendered pages; API requests, which never show
    or leave a message, skip its storage."""

    def process_request(self, request):
        if not is_api_path(request):
            super().process_request(request)

    def process_response(self, request, response):
        if not hasattr(request, "_messages"):
            return response
        return super().process_response(request, response)
