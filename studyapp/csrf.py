"""The CSRF cookie on every page: one secret per browser, whatever it asks for at once."""

from __future__ import annotations

from django.middleware.csrf import get_token

from studyapp.middleware import is_api_path


class PageCsrfCookieMiddleware:
    """Every page a browser opens sets the CSRF cookie, forms or not.

    Without the cookie, each request that renders a form makes a secret of its own and
    sends it back as the cookie. A browser asks for several pages at once (the page it
    shows, and the offline worker keeping the dashboard and the review page), so the
    cookie that arrives last replaces the one the shown page's forms were signed with,
    and the learner's next form is refused as a CSRF failure. Set on the first page,
    the cookie travels with every later request, and no request makes a new one.

    Listed after ``CsrfViewMiddleware``, which writes the cookie on the way out.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            request.method == "GET"
            and not is_api_path(request)
            and response.get("Content-Type", "").startswith("text/html")
        ):
            get_token(request)
        return response
