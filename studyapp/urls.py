from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from . import metrics, views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("metrics", metrics.metrics, name="metrics"),
    path("api/v1/", include("cards.urls")),
    path("api/v1/", include("exercises.urls")),
    # Unknown API routes answer JSON, in debug mode too (where handler404 is not used).
    re_path(r"^api/", views.api_not_found),
    path("", include("exercises.web_urls")),
    path("", include("cards.web_urls")),
]

handler400 = "studyapp.views.bad_request"
handler404 = "studyapp.views.page_not_found"
handler500 = "studyapp.views.server_error"
