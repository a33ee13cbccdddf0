"""The mail server is configured from the environment, like every other setting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMES = [
    "EMAIL_HOST",
    "EMAIL_PORT",
    "EMAIL_HOST_USER",
    "EMAIL_HOST_PASSWORD",
    "EMAIL_USE_TLS",
    "EMAIL_USE_SSL",
    "EMAIL_TIMEOUT",
    "DEFAULT_FROM_EMAIL",
]
SCRIPT = (
    "import json, django; from django.conf import settings; django.setup(); "
    f"print(json.dumps({{n: getattr(settings, n) for n in {NAMES!r}}}))"
)


def _settings(**environment):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMAIL_", "DEFAULT_FROM"))}
    env.update(environment, DJANGO_SETTINGS_MODULE="studyapp.settings")
    return subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True
    )


def test_the_smtp_server_comes_from_the_environment():
    done = _settings(
        EMAIL_HOST="smtp.example.org",
        EMAIL_PORT="587",
        EMAIL_HOST_USER="study",
        EMAIL_HOST_PASSWORD="app-password",
        EMAIL_USE_TLS="1",
        EMAIL_TIMEOUT="12",
        DEFAULT_FROM_EMAIL="Study <study@example.org>",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "EMAIL_HOST": "smtp.example.org",
        "EMAIL_PORT": 587,
        "EMAIL_HOST_USER": "study",
        "EMAIL_HOST_PASSWORD": "app-password",
        "EMAIL_USE_TLS": True,
        "EMAIL_USE_SSL": False,
        "EMAIL_TIMEOUT": 12,
        "DEFAULT_FROM_EMAIL": "Study <study@example.org>",
    }
    ssl = json.loads(_settings(EMAIL_USE_SSL="true", EMAIL_PORT="465").stdout)
    assert ssl["EMAIL_USE_SSL"] is True and ssl["EMAIL_USE_TLS"] is False
    assert ssl["EMAIL_PORT"] == 465


def test_tls_and_ssl_together_stop_the_start():
    done = _settings(EMAIL_USE_TLS="1", EMAIL_USE_SSL="1")
    assert done.returncode != 0
    assert "EMAIL_USE_TLS" in done.stderr and "EMAIL_USE_SSL" in done.stderr
