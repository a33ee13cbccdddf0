"""The service's URLs plus the hand-written baseline, for benchmarks only."""

from django.urls import path

from studyapp.urls import *  # noqa: F403
from studyapp.urls import urlpatterns as service_urls

from .baseline import baseline_due

urlpatterns = [path("bench/baseline-due/", baseline_due), *service_urls]
