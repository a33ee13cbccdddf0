"""Production settings (``DJANGO_DEBUG=0``) serving the baseline view beside the API."""

from studyapp.settings import *  # noqa: F403

ROOT_URLCONF = "benchmarks.load_urls"
