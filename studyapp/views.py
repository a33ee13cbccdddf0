"""Error pages: JSON under /api/, HTML elsewhere."""

from django.http import JsonResponse
from django.views import csrf, defaults
from django.views.decorators.csrf import csrf_exempt


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
    return defaults.server_error(request)


def bad_request(request, exception):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Bad request."}, status=400)
    return defaults.bad_request(request, exception)


def csrf_failure(request, reason=""):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": f"CSRF check failed: {reason}"}, status=403)
    return csrf.csrf_failure(request, reason=reason)
