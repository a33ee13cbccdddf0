"""``/api/schema/``, built once per process.

Apart from ``studyapp.schema``, which drf-spectacular imports as the schema class while
its own views module loads.
"""

from __future__ import annotations

import threading

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SCHEMA_KWARGS, SpectacularAPIView


class SchemaOnceView(SpectacularAPIView):
    """``/api/schema/``: drf-spectacular's view, serving the schema it built and rendered
    once per process (94 ms of CPU a build, open to anyone).

    The schema is public (``SERVE_PUBLIC``): it depends on the code alone, never on who
    asks, so one copy per renderer (YAML, JSON) serves every request. The ``version``
    and ``lang`` query parameters are ignored: the API has one version, in English, and
    a parameter must not buy a fresh build. A test that changes the settings drops the
    copies (``_schema_settings_changed``).
    """

    @extend_schema(**SCHEMA_KWARGS)  # as the view it extends: out of its own schema
    def get(self, request, *args, **kwargs):
        renderer = request.accepted_renderer
        content = _rendered(self, request, type(renderer))
        media_type = request.accepted_media_type or renderer.media_type
        charset = getattr(renderer, "charset", None)
        response = HttpResponse(
            content, content_type=f"{media_type}; charset={charset}" if charset else media_type
        )
        response["Content-Disposition"] = f'inline; filename="{schema_title()}.{renderer.format}"'
        return response


def schema_title() -> str:
    from drf_spectacular.settings import spectacular_settings

    return spectacular_settings.TITLE or "schema"


_schema_lock = threading.Lock()
_schema: dict | None = None
_renderings: dict[type, bytes] = {}


def _rendered(view: SpectacularAPIView, request, renderer_class: type) -> bytes:
    global _schema
    with _schema_lock:
        if renderer_class not in _renderings:
            if _schema is None:
                generator = view.generator_class(urlconf=view.urlconf, patterns=view.patterns)
                _schema = generator.get_schema(request=request, public=True)
            _renderings[renderer_class] = renderer_class().render(
                _schema, renderer_context={"request": request, "view": view}
            )
        return _renderings[renderer_class]


def clear_schema() -> None:
    global _schema
    with _schema_lock:
        _schema = None
        _renderings.clear()


@receiver(setting_changed)
def _schema_settings_changed(*, setting: str, **kwargs) -> None:
    if setting in ("REST_FRAMEWORK", "SPECTACULAR_SETTINGS", "ROOT_URLCONF", "DEBUG"):
        clear_schema()
