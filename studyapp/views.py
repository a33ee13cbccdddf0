"""Error pages: JSON under /api/, HTML elsewhere; and the service worker at /sw.js."""

import functools
import hashlib
import json
import logging
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles import finders
from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage
from django.http import HttpResponse, HttpResponseServerError, JsonResponse
from django.template import loader
from django.templatetags.static import static
from django.urls import reverse
from django.views import csrf, defaults
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from studyapp.cache_control import KEPT_PAGES, LEARNER_COOKIE, LEARNER_HEADER, NOBODY

logger = logging.getLogger(__name__)

# The last resort when even 500.html cannot be rendered (a missing static manifest,
# say): the same words, no template, no static files.
PLAIN_SERVER_ERROR = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    "<title>Something went wrong · Attention study</title></head><body><main>"
    "<h1>Something went wrong on our side</h1>"
    "<p>The server could not complete this request. Try again in a minute.</p>"
    '<p><a href="/">Back to the start page</a></p></main></body></html>'
)


@csrf_exempt  # a 404 changes nothing; it must not turn into an HTML CSRF page
def api_not_found(request):
    return JsonResponse({"detail": "Not found."}, status=404)


def page_not_found(request, exception):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Server error; the request was not completed."}, status=500)
    # No request context: context processors would read the session and the user,
    # and the database may be what failed.
    try:
        body = loader.get_template("500.html").render()
    except Exception:
        logger.exception("The 500 page could not be rendered; answering the plain one")
        body = PLAIN_SERVER_ERROR
    return HttpResponseServerError(body)


def bad_request(request, exception):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Bad request."}, status=400)
    return defaults.bad_request(request, exception)


def csrf_failure(request, reason=""):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": f"CSRF check failed: {reason}"}, status=403)
    return csrf.csrf_failure(request, reason=reason)


# What the service worker keeps for offline use: the review page and the dashboard
# (studyapp.cache_control.KEPT_PAGES, kept per learner), and every static file they load.
OFFLINE_STATIC = (
    "css/site.css",
    "js/offline.js",
    "js/review.js",
    "js/controls.js",
    "manifest.webmanifest",
    "icons/icon.svg",
    "icons/icon-192.png",
    "icons/apple-touch-icon.png",
)
OFFLINE_PAGES = KEPT_PAGES


def _static_bytes(name: str) -> bytes:
    found = finders.find(name)
    if found:
        return Path(str(found)).read_bytes()
    with staticfiles_storage.open(name) as handle:
        return handle.read()


def _offline_version() -> str:
    """A hash of the kept files' URLs and contents and of the worker's own source.

    Any change to one of them names a new cache, and the new worker deletes the old.
    """
    digest = hashlib.sha256()
    for name in OFFLINE_STATIC:
        digest.update(static(name).encode())
        digest.update(_static_bytes(name))
    digest.update((Path(settings.BASE_DIR) / "templates" / "sw.js").read_bytes())
    return digest.hexdigest()[:16]


# Computed once per process where the static files cannot change under it.
_cached_offline_version = functools.cache(_offline_version)


@require_GET
def service_worker(request):
    """The service worker, from the site's root so that its scope covers every page."""
    version = _offline_version() if settings.DEBUG else _cached_offline_version()
    body = loader.render_to_string(
        "sw.js",
        {
            "version": version,
            "static_files": json.dumps([static(name) for name in OFFLINE_STATIC]),
            "pages": json.dumps([reverse(name) for name in OFFLINE_PAGES]),
            # The prefix itself, not a file: the manifest storage has no entry for "".
            "static_prefix": settings.STATIC_URL,
            "static_hashed": json.dumps(isinstance(staticfiles_storage, ManifestFilesMixin)),
            "logout_url": reverse("logout"),
            "learner_header": LEARNER_HEADER,
            "learner_cookie": LEARNER_COOKIE,
            "nobody": NOBODY,
            "review_url": reverse("review"),
        },
    )
    response = HttpResponse(body, content_type="text/javascript; charset=utf-8")
    # Checked on every visit, so a new version reaches the browser at once.
    response["Cache-Control"] = "no-cache"
    response["Service-Worker-Allowed"] = "/"
    return response
