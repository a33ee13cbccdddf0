"""Error pages: JSON under /api/, HTML elsewhere."""

from django.http import JsonResponse
from django.views import defaults


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
