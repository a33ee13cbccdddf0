"""The WSGI handler the service runs: Django's, with a request that never takes a refused
charset as its encoding.

Django's ``WSGIRequest`` sets ``encoding`` from the Content-Type's charset while it is
being built, and that setter decodes the query string in the charset there and then (it
reads ``GET`` to reset it). That is before any middleware: a request naming ``punycode``
or ``rot13`` with a query string raised out of the handler, and gunicorn answered its
bare 500. Here a refused charset (``studyapp.common.charsets``) stays in
``content_params`` and never becomes the encoding; ``RequestGuardMiddleware`` answers it
with a 415 naming it, before the body is read.

This overrides one private hook of Django's (``_set_content_type_params``);
``tests/studyapp/test_charsets.py`` fails if Django stops calling it.
"""

from __future__ import annotations

import django
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest
from django.utils.http import parse_header_parameters

from studyapp.common import charsets


class Request(WSGIRequest):
    def _set_content_type_params(self, meta):
        content_type, params = parse_header_parameters(meta.get("CONTENT_TYPE", ""))
        if charsets.refusal(params) is None:
            super()._set_content_type_params(meta)
        else:
            self.content_type, self.content_params = content_type, params


class Handler(WSGIHandler):
    request_class = Request


def get_wsgi_application() -> Handler:
    """As ``django.core.wsgi.get_wsgi_application``, with this module's handler."""
    django.setup(set_prefix=False)
    return Handler()
