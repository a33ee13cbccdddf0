"""What a browser may keep of an answer, and whom a kept page belongs to.

A shared browser keeps what the server lets it: the HTTP cache keeps a page that says
nothing, and the offline worker (``templates/sw.js``) keeps every page that does not say
``no-store``. So every answer that passes here and sets no ``Cache-Control`` of its own
is sent ``private, no-store``, except the pages offline review needs (``KEPT_PAGES``, by
URL name): those are sent ``private, no-cache`` (kept by the browser for this learner,
checked with the server before each use) and the worker keeps them per learner.

Whom a page was answered for travels three ways, always as an opaque key
(``learner_key``: an HMAC of the user's id under the secret key, never the e-mail):

- the ``X-Study-Learner`` header of every page (``none`` when no one is signed in): the
  worker keeps a page under its learner and drops the pages of any other;
- ``data-learner`` on the page's ``<html>`` (``offline_learner``, a context processor):
  the offline answer queue is kept and sent per learner;
- the ``study_learner`` cookie, readable by scripts and the worker, which lives exactly
  as long as the session cookie: set again whenever the session cookie is, deleted with
  it at log-out. Offline, the worker compares it with the kept pages' learner, so a
  session that ended without a log-out (cookie expired or cleared) shows nothing kept.

The design is in docs/offline.md.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.http import HttpRequest, HttpResponseBase
from django.utils.crypto import salted_hmac

# The pages the offline worker keeps, by URL name: the review shell, and the dashboard the
# installed app starts on (the manifest's start_url).
KEPT_PAGES = ("review", "dashboard")
PRIVATE = "private, no-store"
KEPT = "private, no-cache"
LEARNER_HEADER = "X-Study-Learner"
LEARNER_COOKIE = "study_learner"
NOBODY = "none"
_SALT = "studyapp.cache_control.learner_key"


def learner_key(user) -> str:
    """The opaque key of a learner: the same for them on every page and every visit."""
    return salted_hmac(_SALT, str(user.pk), algorithm="sha256").hexdigest()[:32]


def session_learner(request: HttpRequest) -> str:
    """The key of the learner signed in on this request's session, or "" for no one.

    A user authenticated by an API token, not the session, is not the browser's learner.
    """
    user = getattr(request, "user", None)
    session = getattr(request, "session", None)
    if user is None or session is None or not user.is_authenticated:
        return ""
    if session.get(SESSION_KEY) != user._meta.pk.value_to_string(user):
        return ""
    return learner_key(user)


def offline_learner(request: HttpRequest) -> dict[str, str]:
    """Context processor: ``offline_learner``, the signed-in learner's key or ""."""
    return {"offline_learner": session_learner(request)}


def _is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/")


def _is_kept(request: HttpRequest, response: HttpResponseBase) -> bool:
    match = getattr(request, "resolver_match", None)
    return response.status_code == 200 and match is not None and match.view_name in KEPT_PAGES


def _set_learner_cookie(request: HttpRequest, response: HttpResponseBase, key: str) -> None:
    """Sends the learner's cookie whenever the session middleware will send the session
    cookie, with the same lifetime (as SessionMiddleware computes it)."""
    session = request.session
    if request.COOKIES.get(LEARNER_COOKIE) != key:
        # The session cookie goes out again, and the learner's beside it.
        session.modified = True
    if not (session.modified or settings.SESSION_SAVE_EVERY_REQUEST):
        return
    if response.status_code >= 500:
        return  # the session middleware saves nothing either
    max_age = None if session.get_expire_at_browser_close() else session.get_expiry_age()
    response.set_cookie(
        LEARNER_COOKIE,
        key,
        max_age=max_age,
        path=settings.SESSION_COOKIE_PATH,
        domain=settings.SESSION_COOKIE_DOMAIN,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=False,  # read by the pages' scripts and the offline worker
        samesite=settings.SESSION_COOKIE_SAMESITE,
    )


def _sync_learner(request: HttpRequest, response: HttpResponseBase, key: str) -> None:
    response[LEARNER_HEADER] = key or NOBODY
    if key:
        _set_learner_cookie(request, response, key)
    elif LEARNER_COOKIE in request.COOKIES:
        response.delete_cookie(
            LEARNER_COOKIE,
            path=settings.SESSION_COOKIE_PATH,
            domain=settings.SESSION_COOKIE_DOMAIN,
            samesite=settings.SESSION_COOKIE_SAMESITE,
        )


class PrivatePagesMiddleware:
    """``Cache-Control: private, no-store`` on every answer that sets none, the kept pages
    aside; the learner's header and cookie on every page.

    Listed after ``AuthenticationMiddleware``: its response phase runs before the session
    middleware's, so it can have the session cookie sent again beside the learner's.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        key = ""
        if not _is_api(request):
            key = session_learner(request)
            _sync_learner(request, response, key)
        if not response.has_header("Cache-Control"):
            # Kept only for a learner: the worker keeps nothing for no one.
            kept = bool(key) and _is_kept(request, response)
            response["Cache-Control"] = KEPT if kept else PRIVATE
        return response
