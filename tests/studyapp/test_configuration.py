"""The variables of the environment: one table (``studyapp.configuration``) that the
settings read, docs/configuration.md shows and docker-compose.yml passes on."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from studyapp.common.environment import NUMBER, RATE, SWITCH, WHOLE, WORDS, env_number, read
from studyapp.configuration import THROTTLES, VARIABLE, VARIABLES, read_all, table

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "configuration.md"
COMPOSE = ROOT / "docker-compose.yml"
SOURCES = ("studyapp", "cards", "labs", "exercises")
# Read from the environment, but not settings of the service: Django's and prometheus_client's.
NOT_SETTINGS = {"DJANGO_SETTINGS_MODULE", "PROMETHEUS_MULTIPROC_DIR"}
# What compose fills in on purpose where the service's default is for a laptop.
PRODUCTION_CHOICES = {
    "DJANGO_ALLOWED_HOSTS": "localhost,127.0.0.1",  # no testserver, no [::1]
    "SITE_URL": "http://localhost:8000",  # the published port, by name
    "STUDY_TRUSTED_PROXIES": "1",  # behind compose's nginx
}


def documented_names(text: str) -> list[str]:
    """The variables named in the first column of the doc's table rows."""
    names = []
    for line in text.splitlines():
        cells = line.split("|")
        if line.startswith("|") and len(cells) > 2:
            names += re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[1])
    return names


def test_the_doc_holds_the_table_as_the_command_prints_it():
    printed = subprocess.run(
        [sys.executable, "-m", "studyapp.configuration"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert printed.returncode == 0 and printed.stderr == "", printed.stderr
    assert printed.stdout == table()
    assert table() in DOC.read_text(), (
        "docs/configuration.md's table is not the table's: replace it with the output of "
        "`python -m studyapp.configuration`"
    )


def test_every_variable_is_in_the_doc_once_with_its_default_and_none_besides():
    text = DOC.read_text()
    names = documented_names(text)
    assert sorted(names) == sorted(v.name for v in VARIABLES)
    assert len(names) == len(set(names))
    defaults = {
        cells[1].strip("`"): cells[3]
        for cells in ([c.strip() for c in line.split("|")] for line in text.splitlines())
        if len(cells) > 4
    }
    for variable in VARIABLES:
        shown = f"`{variable.default}`" if variable.default else variable.shown or "empty"
        assert defaults[variable.name] == shown, variable.name


def test_every_default_is_a_value_of_its_kind():
    values = read_all({})
    assert set(values) == set(VARIABLE)
    assert values["STUDY_LADDER_DAYS"] == (1, 3, 7, 14, 30)
    assert values["DJANGO_DEBUG"] is True and values["CELERY_TASK_ALWAYS_EAGER"] is False
    assert values["STUDY_MAX_BODY_BYTES"] == 8 * 2**20
    assert values["STUDY_THROTTLE_USER"] == "1200/minute"
    assert {name: values[f"STUDY_THROTTLE_{name.upper()}"] for name in THROTTLES} == {
        name: rate for name, (rate, _) in THROTTLES.items()
    }


def _environment_reads(path: Path) -> set[str]:
    """The variable names a module reads: os.environ.get/[], os.getenv, env_number."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = ast.unparse(node.func)
            if func in {"os.environ.get", "os.getenv", "os.environ.setdefault", "env_number"}:
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    names.add(first.value)
        elif (
            isinstance(node, ast.Subscript)
            and ast.unparse(node.value) == "os.environ"
            and isinstance(node.slice, ast.Constant)
        ):
            names.add(node.slice.value)
    return names


def test_the_settings_read_the_environment_through_the_table_alone():
    assert _environment_reads(ROOT / "studyapp" / "settings.py") == set()
    read = set()
    for package in SOURCES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                read |= _environment_reads(path)
    assert sorted(read - set(VARIABLE) - NOT_SETTINGS) == []


def test_the_settings_hold_the_tables_values():
    values = read_all()
    assert values["STUDY_LEECH_LAPSES"] == settings.STUDY_LEECH_LAPSES
    assert values["STUDY_LOCKOUT_FAILURES"] == settings.AXES_FAILURE_LIMIT
    assert values["STUDY_MAX_BODY_BYTES"] == settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def test_the_api_description_names_the_ladder_of_the_setting():
    days = ", ".join(str(d) for d in settings.STUDY_LADDER_DAYS)
    assert f"on a fixed {days}-day ladder" in settings.SPECTACULAR_SETTINGS["DESCRIPTION"]


# --- reading one variable ------------------------------------------------------------


def test_unset_or_empty_is_the_default_and_a_value_is_read_by_its_kind():
    assert read("X", WHOLE, "8", {}) == 8
    assert read("X", WHOLE, "8", {"X": "  "}) == 8
    assert read("X", WHOLE, "8", {"X": " 12 "}) == 12
    assert read("X", NUMBER, "5", {"X": "0.25"}) == 0.25
    assert read("X", WORDS, "a,b", {"X": " c , ,d "}) == ["c", "d"]
    assert read("X", RATE, "20/hour", {"X": "OFF"}) is None
    assert read("X", RATE, "20/hour", {"X": ""}) == "20/hour"
    # An empty switch is off, whatever its default.
    assert read("X", SWITCH, "1", {}) is True
    assert read("X", SWITCH, "1", {"X": ""}) is False
    assert read("X", SWITCH, "0", {"X": "Yes"}) is True


def test_an_older_name_is_read_where_the_name_is_unset():
    timeout = VARIABLE["EMAIL_TIMEOUT"]
    assert timeout.read({"DJANGO_EMAIL_TIMEOUT": "12"}) == 12
    assert timeout.read({"EMAIL_TIMEOUT": "7", "DJANGO_EMAIL_TIMEOUT": "12"}) == 7
    assert timeout.read({"EMAIL_TIMEOUT": "", "DJANGO_EMAIL_TIMEOUT": ""}) == 30
    with pytest.raises(ImproperlyConfigured, match=r"^DJANGO_EMAIL_TIMEOUT='x' is not"):
        timeout.read({"DJANGO_EMAIL_TIMEOUT": "x"})


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("STUDY_LEECH_LAPSES", "eight", "is not a whole number (0 or more)"),
        ("STUDY_LEECH_LAPSES", "-1", "is not a whole number (0 or more)"),
        ("STUDY_LOCKOUT_MINUTES", "nan", "is not a number (0 or more)"),
        ("STUDY_DB_BREAKER_SECONDS", "-5", "is not a number (0 or more)"),
        ("DJANGO_DEBUG", "maybe", "is not a switch (1, true, yes or on; 0, false, no, off"),
        ("STUDY_THROTTLE_LOGIN", "lots", "is not a rate ('<n>/<second|minute|hour|day>'"),
        ("STUDY_TARGET_RETENTION", "0.3", "is not a recall from 0.5 to 0.99"),
        ("STUDY_LAB_WALL_SECONDS", "0", "is not a positive number"),
        ("STUDY_LADDER_DAYS", "1,3,3", "is not a ladder: rung 3 (3 days) is not longer"),
    ],
)
def test_a_bad_value_is_refused_naming_the_variable_and_what_was_expected(name, value, message):
    with pytest.raises(ImproperlyConfigured) as refused:
        VARIABLE[name].read({name: value})
    assert str(refused.value).startswith(f"{name}={value!r} {message}")


def test_every_bad_variable_is_named_at_once():
    with pytest.raises(ImproperlyConfigured) as refused:
        read_all({"EMAIL_PORT": "smtp", "STUDY_HASH_WAITING": "2.5"})
    assert str(refused.value).splitlines() == [
        "EMAIL_PORT='smtp' is not a whole number (0 or more)",
        "STUDY_HASH_WAITING='2.5' is not a whole number (0 or more)",
    ]


def test_env_number_is_a_positive_number_or_the_default():
    assert env_number("N", 7, {"N": " 300 "}) == 300.0
    assert env_number("N", 7, {"N": ""}) == env_number("N", 7, {}) == 7
    for bad in ("0", "-5", "lots", "inf"):
        with pytest.raises(ImproperlyConfigured, match=f"^N='{bad}' is not a positive number"):
            env_number("N", 7, {"N": bad})


def _start(**environment: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in VARIABLE or k.endswith("_URL")}
    env.update(environment, DJANGO_SETTINGS_MODULE="studyapp.settings")
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_bad_value_stops_the_start_naming_the_variable():
    assert _start().returncode == 0
    refused = _start(STUDY_LEECH_LAPSES="eight")
    assert refused.returncode != 0
    assert refused.stderr.strip().splitlines()[-1] == (
        "django.core.exceptions.ImproperlyConfigured: STUDY_LEECH_LAPSES='eight' is not a "
        "whole number (0 or more)"
    )
    # docs/configuration.md quotes the same line.
    assert refused.stderr.strip().splitlines()[-1] in DOC.read_text()


# --- docker-compose.yml ------------------------------------------------------------------

_FILLED = re.compile(r"\$\{(?P<name>\w+):-(?P<default>[^}]*)\}")


def test_compose_fills_in_the_tables_defaults_or_a_production_choice():
    environment = yaml.safe_load(COMPOSE.read_text())["x-app"]["environment"]
    for name, value in environment.items():
        filled = _FILLED.fullmatch(str(value))
        if name not in VARIABLE or filled is None:
            continue
        assert filled["name"] == name, value
        variable = VARIABLE[name]
        if name in PRODUCTION_CHOICES:
            assert filled["default"] == PRODUCTION_CHOICES[name], name
        elif filled["default"]:
            # The same value as the service's own default, written as compose writes it.
            assert variable.read({name: filled["default"]}) == variable.read({}), name
    # The ladder is left to its one definition (cards.ladder.DEFAULT_LADDER).
    assert environment["STUDY_LADDER_DAYS"] == "${STUDY_LADDER_DAYS:-}"
