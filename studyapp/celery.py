"""The Celery app, configured from Django settings (``CELERY_*``)."""

import os
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studyapp.settings")

app = Celery("studyapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def _prepare_filesystem_broker() -> None:
    # The embedded broker (no REDIS_URL) is a set of folders every process must find.
    if not str(app.conf.broker_url).startswith("filesystem"):
        return
    options = app.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)


_prepare_filesystem_broker()
