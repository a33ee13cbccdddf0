"""The container definitions: docker-compose.yml against the Compose specification, and
every command the containers run (gunicorn, Celery, manage.py) resolved in this project.

No Docker engine is needed: the file is checked with check-jsonschema's vendored
``compose-spec`` schema, and the commands are parsed by the same code that would run them.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import yaml
from celery.app.utils import find_app
from celery.bin.base import CLIContext
from celery.bin.celery import celery as celery_cli
from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.core.management import get_commands, load_command_class

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
APP_SERVICES = ("migrate", "web", "worker", "lab-worker", "beat")
CHECK_JSONSCHEMA = Path(sys.executable).with_name("check-jsonschema")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def compose_schema() -> dict:
    vendored = resources.files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json"
    return json.loads(vendored.read_text())


def schema_errors(schema: dict, document: dict) -> list[str]:
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [error.message for error in validator.iter_errors(document)]


# Compose interpolation, for the forms this file uses: ${VAR:-default}, ${VAR:?message}, $$.
_VARIABLE = re.compile(r"\$\{(?P<name>\w+)(?::(?P<op>[-?])(?P<arg>[^}]*))?\}")


def interpolate(value: str) -> str:
    def substitute(match: re.Match) -> str:
        if match["op"] == "-":
            return match["arg"]
        return f"required-{match['name'].lower()}"

    return _VARIABLE.sub(substitute, value).replace("$$", "$")


def argv(command) -> list[str]:
    args = command if isinstance(command, list) else shlex.split(command)
    return [interpolate(a) for a in args]


def shell_steps(args: list[str]) -> list[list[str]]:
    """``sh -c "a && b"`` as [a, b]; any other command as itself."""
    if args[:2] == ["sh", "-c"]:
        return [shlex.split(step) for step in args[2].split("&&")]
    return [args]


# --- the Compose file -------------------------------------------------------------


@pytest.mark.skipif(not CHECK_JSONSCHEMA.exists(), reason="check-jsonschema is not installed")
def test_compose_file_passes_check_jsonschema_compose_spec(tmp_path):
    result = subprocess.run(
        [str(CHECK_JSONSCHEMA), "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok -- validation done" in result.stdout

    # The same tool rejects a broken copy, so the pass above means something.
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(COMPOSE.read_text().replace("condition: service_healthy", "condition: up", 1))
    result = subprocess.run(
        [str(CHECK_JSONSCHEMA), "--builtin-schema", "vendor.compose-spec", str(broken)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stdout + result.stderr


def test_compose_file_matches_the_schema_in_process(compose, compose_schema):
    assert schema_errors(compose_schema, compose) == []


def _set(doc: dict, path: tuple, value) -> dict:
    doc = copy.deepcopy(doc)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("services", "web", "depends_on", "postgres", "condition"), "service_ready"),
        (("services", "web", "comand"), ["gunicorn"]),
        (("services", "redis", "healthcheck", "test"), 5),
        (("services", "beat", "deploy", "replicas"), [1]),
        (("servces",), {}),
    ],
    ids=["bad-condition", "misspelt-key", "bad-healthcheck", "bad-replicas", "unknown-top-level"],
)
def test_schema_catches_breakage(compose, compose_schema, path, value):
    assert schema_errors(compose_schema, _set(compose, path, value))


def test_services_are_the_production_set(compose):
    assert set(compose["services"]) == {
        "migrate",
        "proxy",
        "web",
        "worker",
        "lab-worker",
        "beat",
        "redis",
        "postgres",
    }


def test_app_services_share_one_image_definition(compose):
    builds = {json.dumps(compose["services"][s].get("build"), sort_keys=True) for s in APP_SERVICES}
    images = {compose["services"][s].get("image") for s in APP_SERVICES}
    assert len(builds) == 1 and len(images) == 1
    build = compose["services"]["web"]["build"]
    context = (ROOT / build["context"]).resolve()
    assert (context / build.get("dockerfile", "Dockerfile")) == DOCKERFILE
    assert DOCKERFILE.exists()
    # The anchor is declared as an extension, which Compose ignores as a service.
    assert "x-app" in compose


def test_app_environment(compose):
    for name in APP_SERVICES:
        env = compose["services"][name]["environment"]
        assert env["DJANGO_DEBUG"] == "0", name
        assert re.fullmatch(r"\$\{DJANGO_SECRET_KEY:\?[^}]*\}", env["DJANGO_SECRET_KEY"]), name
        assert env["DJANGO_ALLOWED_HOSTS"], name
        assert interpolate(env["DATABASE_URL"]).startswith("postgres://study:"), name
        assert "@postgres:5432/study" in env["DATABASE_URL"], name
        assert env["REDIS_URL"].startswith("redis://redis:6379/"), name
    db = compose["services"]["postgres"]["environment"]
    assert (db["POSTGRES_USER"], db["POSTGRES_DB"]) == ("study", "study")
    assert db["POSTGRES_PASSWORD"].startswith("${POSTGRES_PASSWORD:?")


def test_backing_services_have_healthchecks_and_app_waits_for_them(compose):
    services = compose["services"]
    for name in ("redis", "postgres"):
        assert services[name]["healthcheck"]["test"], name
    for name in ("web", "worker", "lab-worker", "beat"):
        depends = services[name]["depends_on"]
        assert depends["postgres"]["condition"] == "service_healthy", name
        assert depends["redis"]["condition"] == "service_healthy", name
        assert depends["migrate"]["condition"] == "service_completed_successfully", name
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["migrate"]["restart"] == "no"


def test_workers_scale_and_beat_stays_single(compose):
    services = compose["services"]
    worker = services["worker"]
    assert "container_name" not in worker and "ports" not in worker
    assert not {"-B", "--beat"} & set(argv(worker["command"]))
    assert services["beat"]["deploy"]["replicas"] == 1
    running_beat = [
        name
        for name, service in services.items()
        if "command" in service
        and argv(service["command"])[:1] == ["celery"]
        and "beat" in argv(service["command"])
    ]
    assert running_beat == ["beat"]


# --- the commands the containers run ----------------------------------------------


def check_celery(args: list[str]) -> str:
    """Parse ``celery -A app <sub> ...`` with Celery's own CLI; returns the subcommand."""
    assert args[0] == "celery"
    ctx = celery_cli.make_context("celery", args[1:])
    app = find_app(ctx.params["app"])
    assert app.main == "studyapp"
    ctx.obj = CLIContext(app=app, no_color=True, workdir=None, quiet=True)
    protected = getattr(ctx, "_protected_args", None)
    if protected is None:
        protected = ctx.protected_args
    name, command, rest = celery_cli.resolve_command(ctx, [*protected, *ctx.args])
    sub = command.make_context(name, rest, parent=ctx)
    assert sub.args == [], f"unparsed arguments {sub.args}"
    return name


def check_manage(args: list[str]) -> str:
    """``python manage.py <command> ...``: the command exists and accepts its options."""
    assert args[:2] == ["python", "manage.py"], args
    assert (ROOT / "manage.py").exists()
    name, options = args[2], args[3:]
    commands = get_commands()
    assert name in commands, f"manage.py has no command {name!r}"
    parser = load_command_class(commands[name], name).create_parser("manage.py", name)
    parser.parse_args(options)
    return name


def check_gunicorn(args: list[str]) -> None:
    assert args[0] == "gunicorn"
    target = next(a for a in args[1:] if not a.startswith("-"))
    module, _, attribute = target.partition(":")
    application = getattr(importlib.import_module(module), attribute or "application")
    assert callable(application)
    assert isinstance(application, WSGIHandler)
    prod = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"][
        "prod"
    ]
    assert any(req.startswith("gunicorn") for req in prod)


def test_every_service_command_exists_in_the_project(compose):
    ran = {}
    for name in APP_SERVICES:
        for step in shell_steps(argv(compose["services"][name]["command"])):
            if step[0] == "gunicorn":
                check_gunicorn(step)
                ran.setdefault(name, []).append("gunicorn")
            elif step[0] == "celery":
                ran.setdefault(name, []).append(check_celery(step))
            else:
                ran.setdefault(name, []).append(check_manage(step))
    assert ran == {
        "migrate": ["migrate", "load_starter_content"],
        "web": ["gunicorn"],
        "worker": ["worker"],
        "lab-worker": ["worker"],
        "beat": ["beat"],
    }


def test_healthcheck_commands_parse(compose):
    worker_check = compose["services"]["worker"]["healthcheck"]["test"]
    assert worker_check[0] == "CMD-SHELL"
    assert check_celery(argv(worker_check[1].replace("$$HOSTNAME", "worker"))) == "inspect"
    web_check = compose["services"]["web"]["healthcheck"]["test"]
    assert web_check[:3] == ["CMD", "python", "-c"]
    compile(web_check[3], "healthcheck", "exec")


def test_the_lab_worker_takes_only_the_labs_queue_with_what_bwrap_needs(compose):
    lab = compose["services"]["lab-worker"]
    args = argv(lab["command"])
    assert check_celery(args) == "worker"
    assert args[args.index("-Q") + 1] == "labs" and "--concurrency=2" in args
    assert args[args.index("-n") + 1] == "labs@%h"
    assert "-Q" not in argv(compose["services"]["worker"]["command"])
    # Namespaces and a fresh /proc need these; no capability is added, no privilege given.
    assert set(lab["security_opt"]) == {
        "seccomp=unconfined",
        "apparmor=unconfined",
        "systempaths=unconfined",
    }
    assert "cap_add" not in lab and not lab.get("privileged") and "user" not in lab
    assert lab["init"] is True
    env = lab["environment"]
    assert env["DATABASE_URL"] == compose["services"]["worker"]["environment"]["DATABASE_URL"]
    assert interpolate(env["STUDY_LAB_CPU_SECONDS"]) == "5"
    for name in ("web", "worker", "beat", "migrate"):
        assert "security_opt" not in compose["services"][name], name
    check = lab["healthcheck"]["test"]
    assert check_celery(argv(check[1].replace("$$HOSTNAME", "lab"))) == "inspect"
    assert "labs@$$HOSTNAME" in check[1]


def test_web_healthcheck_asks_readyz_and_needs_a_200(compose):
    script = compose["services"]["web"]["healthcheck"]["test"][3]
    assert "'/readyz'" in script and "!= 200" in script


def test_health_endpoints_answer_behind_the_https_redirect_and_any_host(tmp_path):
    # Production settings: the probe speaks plain HTTP with a Host that is not allowed.
    script = (
        "import django, json; django.setup(); from django.test import Client; c = Client(); "
        "r = c.get('/healthz', HTTP_HOST='10.0.0.7:8000'); "
        "p = c.get('/api/v1/decks/', HTTP_HOST='10.0.0.7:8000'); "
        "print(json.dumps([r.status_code, r.json(), p.status_code]))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(
        {
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": "k" * 50,
            "DJANGO_ALLOWED_HOSTS": "study.example.com",
            "DJANGO_SETTINGS_MODULE": "studyapp.settings",
        }
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    healthz, body, other = json.loads(done.stdout.strip().splitlines()[-1])
    assert (healthz, body) == (200, {"status": "ok"})
    assert other == 400  # everything else still refuses the unknown host


def test_beat_schedule_tasks_are_registered():
    app = find_app("studyapp")
    app.loader.import_default_modules()
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in app.tasks, entry["task"]


def readme_configuration_variables() -> set[str]:
    """Every variable named in the first column of the configuration table (the README
    points at docs/configuration.md)."""
    assert "docs/configuration.md" in (ROOT / "README.md").read_text()
    table = (ROOT / "docs" / "configuration.md").read_text()
    names: set[str] = set()
    for line in table.splitlines():
        cells = line.split("|")
        if len(cells) > 2 and "`" in cells[1]:
            names.update(n for n in re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[1]))
    return names


def test_every_configuration_variable_reaches_the_containers(compose):
    # An operator sets what the configuration table lists; the containers must pass it on.
    names = readme_configuration_variables()
    assert {"EMAIL_HOST", "STUDY_DB_STATEMENT_TIMEOUT_MS", "SITE_URL"} <= names
    environment = compose["x-app"]["environment"]
    assert sorted(names - set(environment)) == []
