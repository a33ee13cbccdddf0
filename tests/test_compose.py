"""The container definitions: docker-compose.yml against the Compose specification, and
every command the containers run (gunicorn, Celery, manage.py) resolved in this project.

No Docker engine is needed: the file is checked with check-jsonschema's vendored
``compose-spec`` schema, and the commands are parsed by the same code that would run them.
"""

from __future__ import annotations

import copy
import fnmatch
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
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests import production_stack

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


# --- the proxy in front of gunicorn -------------------------------------------------


def test_only_the_proxy_publishes_a_port_and_gunicorn_listens_inside(compose):
    services = compose["services"]
    published = {name for name, service in services.items() if "ports" in service}
    assert published == {"proxy"}
    assert argv(services["proxy"]["ports"])[0].endswith(":80")
    bind = next(a for a in argv(services["web"]["command"]) if a.startswith("--bind="))
    assert services["web"]["expose"] == [bind.rsplit(":", 1)[1]]
    proxy_env = services["proxy"]["environment"]
    assert proxy_env["STUDY_PROXY_UPSTREAM"] == f"web:{services['web']['expose'][0]}"
    assert proxy_env["STUDY_PROXY_LISTEN"] == "80"


def test_the_proxy_fills_the_template_in_the_repository_from_its_environment(compose):
    proxy = compose["services"]["proxy"]
    assert proxy["image"].startswith("nginx:")
    (volume,) = proxy["volumes"]
    source, target, mode = volume.split(":")
    assert (ROOT / source).resolve() == production_stack.SITE_TEMPLATE and mode == "ro"
    # The image's entrypoint fills /etc/nginx/templates/*.template into conf.d.
    assert target == "/etc/nginx/templates/default.conf.template"
    env = proxy["environment"]
    names = production_stack.template_names()
    assert names and names <= set(env)
    assert all(re.match(env["NGINX_ENVSUBST_FILTER"], name) for name in names)
    # nginx's own variables are lower case and pass through untouched.
    assert not any(re.match(env["NGINX_ENVSUBST_FILTER"], n) for n in ("host", "scheme"))


def test_the_proxy_refuses_bodies_at_the_services_own_limit(compose):
    proxy_limit = compose["services"]["proxy"]["environment"]["STUDY_MAX_BODY_BYTES"]
    assert proxy_limit == compose["x-app"]["environment"]["STUDY_MAX_BODY_BYTES"]
    if "STUDY_MAX_BODY_BYTES" not in os.environ:
        assert int(interpolate(proxy_limit)) == settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    site = production_stack.render_site({**_proxy_values(compose), "STUDY_MAX_BODY_BYTES": "12345"})
    assert re.search(r"^\s*client_max_body_size 12345;$", site, re.MULTILINE)


def _proxy_values(compose) -> dict[str, str]:
    env = compose["services"]["proxy"]["environment"]
    return {name: interpolate(str(env[name])) for name in production_stack.template_names()}


def test_the_proxy_buffers_whole_requests_with_short_client_timeouts(compose):
    site = production_stack.render_site(_proxy_values(compose))
    directives = dict(
        re.findall(r"^\s*(\w+) ([^;{]+);$", site, re.MULTILINE)
    )  # the last of a name wins, as in nginx
    assert directives["proxy_request_buffering"] == "on"
    assert directives["proxy_buffering"] == "on"
    for name in ("client_header_timeout", "client_body_timeout"):
        assert 1 <= int(directives[name].rstrip("s")) <= 30, name
    assert int(directives["send_timeout"].rstrip("s")) <= 60
    # nginx waits for gunicorn longer than gunicorn lets a request run.
    gunicorn = argv(compose["services"]["web"]["command"])
    worker_timeout = int(next(a for a in gunicorn if a.startswith("--timeout=")).split("=")[1])
    assert int(directives["proxy_read_timeout"].rstrip("s")) > worker_timeout
    # The headers Django reads behind it: the Host with its port, the client's address
    # appended, the scheme never taken from the client unless a TLS proxy is trusted.
    assert "proxy_set_header Host $http_host;" in site
    assert "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;" in site
    assert "proxy_set_header X-Forwarded-Proto $study_forwarded_proto;" in site
    assert '"on:https" https;' in site and "default    $scheme;" in site
    assert compose["x-app"]["environment"]["STUDY_TRUSTED_PROXIES"].endswith(":-1}")


def test_the_filled_template_passes_nginx_t(compose, tmp_path):
    nginx = production_stack.nginx_binary()
    if nginx is None:
        if os.environ.get("REQUIRE_SERVICES") == "1":
            pytest.fail("REQUIRE_SERVICES=1 but nginx is not installed")
        pytest.skip("nginx is not installed")
    # The compose values, with an upstream this machine resolves and a port it may open.
    values = {**_proxy_values(compose), "STUDY_PROXY_UPSTREAM": "127.0.0.1:8000"}
    values["STUDY_PROXY_LISTEN"] = f"127.0.0.1:{production_stack.free_port()}"
    config = tmp_path / "nginx.conf"
    config.write_text(production_stack.main_config(production_stack.render_site(values), tmp_path))
    done = subprocess.run(
        [nginx, "-t", "-p", str(tmp_path), "-e", str(tmp_path / "error.log"), "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    # A template with a name nothing fills is refused before nginx sees it.
    with pytest.raises(KeyError, match="STUDY_PROXY_UPSTREAM"):
        production_stack.render_site({k: v for k, v in values.items() if "UPSTREAM" not in k})


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


def test_the_image_installs_bubblewrap():
    runs = " ".join(args for kw, args in dockerfile_instructions() if kw == "RUN")
    assert re.search(r"apt-get install -y --no-install-recommends bubblewrap", runs)


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


# --- the Dockerfile -----------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    instructions, pending = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        full = pending + stripped
        pending = ""
        keyword, _, rest = full.partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
    assert not pending, "Dockerfile ends inside a continued line"
    return instructions


def dockerignore_patterns() -> list[str]:
    lines = DOCKERIGNORE.read_text().splitlines()
    return [p.strip() for p in lines if p.strip() and not p.strip().startswith("#")]


def ignored(relative: str, patterns: list[str]) -> bool:
    result = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").rstrip("/")
        parts = relative.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(
            fnmatch.fnmatch(prefix, pattern)
            or (pattern.startswith("**/") and fnmatch.fnmatch(prefix, pattern[3:]))
            for prefix in prefixes
        ):
            result = not negate
    return result


def test_dockerfile_base_user_and_static():
    instructions = dockerfile_instructions()
    assert instructions[0] == ("FROM", "python:3.11-slim")
    users = [args for kw, args in instructions if kw == "USER"]
    assert users and users[-1] not in {"root", "0", "0:0"}
    cmd_index = max(i for i, (kw, _) in enumerate(instructions) if kw == "CMD")
    user_index = max(i for i, (kw, _) in enumerate(instructions) if kw == "USER")
    assert user_index < cmd_index
    runs = " ".join(args for kw, args in instructions if kw == "RUN")
    assert "pip install -r /tmp/prod.lock" in runs and "pip install --no-deps -e ." in runs
    assert re.search(r"DJANGO_SECRET_KEY=\S+ python manage\.py collectstatic --noinput", runs)
    # No secret baked into the image: the key above lives only for that one RUN.
    env = " ".join(args for kw, args in instructions if kw == "ENV")
    assert "DJANGO_SECRET_KEY" not in env
    assert "DJANGO_DEBUG=0" in env


def test_dockerfile_runs_existing_commands():
    instructions = dockerfile_instructions()
    runs = [args for kw, args in instructions if kw == "RUN"]
    manage_steps = [
        shlex.split(step.strip()) for run in runs for step in run.split("&&") if "manage.py" in step
    ]
    assert manage_steps
    for step in manage_steps:
        # Drop leading VAR=value assignments.
        while "=" in step[0] and not step[0].startswith("-"):
            step = step[1:]
        check_manage(step)
    cmd = json.loads(next(args for kw, args in reversed(instructions) if kw == "CMD"))
    check_gunicorn(cmd)


def test_dockerfile_copies_existing_files_that_the_context_keeps():
    patterns = dockerignore_patterns()
    for must_skip in (".venv", ".git", "db.sqlite3", ".env"):
        assert ignored(must_skip, patterns), must_skip
    copies = [shlex.split(args) for kw, args in dockerfile_instructions() if kw in {"COPY", "ADD"}]
    assert copies
    for args in copies:
        args = [a for a in args if not a.startswith("--")]
        *sources, _destination = args
        for source in sources:
            assert (ROOT / source).exists(), source
            if source != ".":
                assert not ignored(source, patterns), f"{source} is excluded by .dockerignore"
    # What the running image needs must survive .dockerignore.
    for needed in ("manage.py", "pyproject.toml", "studyapp/wsgi.py", "cards", "exercises"):
        assert (ROOT / needed).exists() and not ignored(needed, patterns), needed
    for needed in ("templates", "static", "cards/content"):
        if (ROOT / needed).exists():
            assert not ignored(needed, patterns), needed


def _locked(path: Path) -> dict[str, str]:
    # name -> pinned version, from a uv / pip-tools lock file ("name==1.2.3 ; marker").
    pins = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith((" ", "#")):
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            assert spec.operator == "==", line
            pins[canonicalize_name(requirement.name)] = spec.version
    return pins


def test_image_installs_the_pinned_lock_then_the_project_without_dependencies():
    """The Dockerfile installs requirements/prod.lock, then the project with --no-deps."""
    runs = [args for kw, args in dockerfile_instructions() if kw == "RUN"]
    assert any("pip install -r /tmp/prod.lock" in args for args in runs)
    assert any("pip install --no-deps -e ." in args for args in runs)
    copies = [shlex.split(args) for kw, args in dockerfile_instructions() if kw == "COPY"]
    assert ["requirements/prod.lock", "/tmp/prod.lock"] in copies


@pytest.mark.parametrize(
    ("lock", "extras"), [("prod.lock", ["prod"]), ("dev.lock", ["prod", "dev"])]
)
def test_lock_pins_every_dependency_within_its_pyproject_range(lock, extras):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + [
        r for extra in extras for r in project["optional-dependencies"][extra]
    ]
    pins = _locked(ROOT / "requirements" / lock)
    for line in wanted:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is missing from requirements/{lock}: run make lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"requirements/{lock} pins {name}=={pins[name]}, outside {requirement.specifier}"
        )
    if lock == "prod.lock":
        assert not {"pytest", "mypy", "ruff"} & set(pins), "prod.lock holds dev tools"


def readme_configuration_variables() -> set[str]:
    """Every variable named in the first column of the README's configuration table."""
    text = (ROOT / "README.md").read_text()
    table = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in table.splitlines():
        cells = line.split("|")
        if len(cells) > 2 and "`" in cells[1]:
            names.update(n for n in re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[1]))
    return names


def test_every_configuration_variable_reaches_the_containers(compose):
    # An operator sets what the README lists; the containers must pass it on.
    names = readme_configuration_variables()
    assert {"EMAIL_HOST", "STUDY_DB_STATEMENT_TIMEOUT_MS", "SITE_URL"} <= names
    environment = compose["x-app"]["environment"]
    assert sorted(names - set(environment)) == []
