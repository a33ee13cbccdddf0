"""Production settings come from the environment and pass Django's deployment checks."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_manage(*args, env_overrides):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_settings_pass_check_deploy():
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        env_overrides={
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": "k" * 20 + "-production-secret-from-the-environment-9f8e7d6c",
            "DJANGO_ALLOWED_HOSTS": "study.example.com",
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_settings_with_redis_and_limits_pass_check_deploy():
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        env_overrides={
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": "k" * 20 + "-production-secret-from-the-environment-9f8e7d6c",
            "DJANGO_ALLOWED_HOSTS": "study.example.com",
            "REDIS_URL": "redis://127.0.0.1:6399/0",
            "STUDY_THROTTLE_USER": "off",
            "STUDY_LOCKOUT_FAILURES": "3",
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_to_start_without_a_secret_key():
    result = run_manage("check", env_overrides={"DJANGO_DEBUG": "0"})
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_development_defaults_fail_the_deployment_check():
    # The embedded defaults are for a laptop; the check must say so.
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env_overrides={})
    assert result.returncode != 0


def test_unknown_api_routes_answer_json_404(client, settings):
    for debug in (False, True):
        settings.DEBUG = debug
        response = client.get("/api/v1/no-such-thing/")
        assert response.status_code == 404
        assert response.json() == {"detail": "Not found."}
    settings.DEBUG = False
    page = client.get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")


def test_unknown_api_routes_answer_json_even_to_cookie_posts(make_user, client):
    from django.test import Client

    user = make_user("cookie")
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(user)
    response = csrf_client.put("/api/v1/cards/%C2%84/", "{}", content_type="application/json")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}
