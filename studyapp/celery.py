"""The Celery app, configured from Django settings (``CELERY_*``)."""

import os
from pathlib import Path

from celery import Celery
from celery.signals import celeryd_init
from kombu.transport import TRANSPORT_ALIASES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studyapp.settings")

# The embedded broker (``studyfs://``): kombu's filesystem transport, safe on a full disk.
TRANSPORT_ALIASES.setdefault("studyfs", "studyapp.broker_fs:Transport")

app = Celery("studyapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def _prepare_filesystem_broker() -> None:
    # The embedded broker (no REDIS_URL) is a set of folders every process must find.
    if not str(app.conf.broker_url).startswith(("filesystem", "studyfs")):
        return
    from .broker_fs import unreadable_folder

    options = app.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)
    if options.get("data_folder_in"):
        unreadable_folder(options).mkdir(parents=True, exist_ok=True)


_prepare_filesystem_broker()


@celeryd_init.connect
def _patient_worker_sockets(conf=None, **kwargs) -> None:
    # Web processes fail a publish fast when Redis hangs (settings.REDIS_SOCKET_TIMEOUT);
    # a worker instead waits on its queue, so its reads get a longer timeout.
    options = dict(conf.broker_transport_options or {})
    if "socket_timeout" in options:
        options["socket_timeout"] = max(float(options["socket_timeout"]), 30.0)
        conf.broker_transport_options = options
