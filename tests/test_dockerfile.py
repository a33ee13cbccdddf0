"""The image: the Dockerfile's instructions, what .dockerignore keeps from the build
context, and the lock files it installs, against the project (the commands are parsed as
tests/test_compose.py parses the containers')."""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.test_compose import check_gunicorn, check_manage

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"


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


def test_the_image_installs_bubblewrap():
    runs = " ".join(args for kw, args in dockerfile_instructions() if kw == "RUN")
    assert re.search(r"apt-get install -y --no-install-recommends bubblewrap", runs)
