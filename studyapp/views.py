"""Error pages: JSON under /api/, HTML elsewhere."""

import logging

from django.http import HttpResponseServerError, JsonResponse
from django.template import loader
from django.views import csrf, defaults
from django.views.decorators.csrf import csrf_exempt

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
