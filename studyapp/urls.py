from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerSplitView

from . import health, metrics, views
from .schema_view import SchemaOnceView

urlpatterns = [
    path("admin/", admin.site.urls),
    # Built once per process, served to anyone (studyapp.schema_view).
    path("api/schema/", SchemaOnceView.as_view(), name="schema"),
    # The split view serves Swagger UI's setup as a script file: no inline script (CSP).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="swagger-ui"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="redoc"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("sw.js", views.service_worker, name="service-worker"),
    path("api/v1/", include("cards.urls")),
    path("api/v1/", include("exercises.urls")),
    path("api/v1/", include("labs.urls")),
    # Unknown API routes answer JSON, in debug mode too (where handler404 is not used).
    re_path(r"^api/", views.api_not_found),
    path("", include("exercises.web_urls")),
    path("", include("labs.web_urls")),
    path("", include("cards.web_urls")),
]

handler400 = "studyapp.views.bad_request"
handler404 = "studyapp.views.page_not_found"
handler500 = "studyapp.views.server_error"
