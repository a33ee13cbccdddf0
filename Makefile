# Two commands: `make run` serves the site with Celery workers (the study core's and the
# labs') and beat, `make test` runs ruff, mypy, lint-imports, a check that the models need no
# new migration, and the whole pytest suite; `make coverage` runs the same under coverage.
# Installs come from the pinned lock files in requirements/; `make lock` regenerates
# them from the ranges in pyproject.toml.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000

.PHONY: run test coverage install dev lint typecheck imports lock bench clean

$(VENV)/.installed: pyproject.toml requirements/prod.lock
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements/prod.lock
	$(PY) -m pip install -q -e . --no-deps
	touch $@

$(VENV)/.dev-installed: $(VENV)/.installed requirements/dev.lock
	$(PY) -m pip install -q -r requirements/dev.lock
	$(PY) -m pip install -q -e . --no-deps
	touch $@

install: $(VENV)/.installed

dev: $(VENV)/.dev-installed

run: install
	PORT=$(PORT) VENV=$(VENV) bin/run

# Coverage (branch, with the floor `fail_under` in pyproject.toml) is measured over the
# whole suite by `make coverage` (CI runs it); it slows the numeric tests by two thirds, so
# `make test` leaves it out. Pass PYTEST_ARGS to narrow either run.
COV ?=
# The ladder, the engine and the checker keep 100% branch coverage (after a whole-suite run).
FULLY_COVERED = cards/ladder.py,exercises/engine.py,exercises/checking/*
# Two pytest workers, one per core of the machines CI runs on; XDIST= runs in one process.
XDIST ?= -n 2 --dist worksteal

# The counts tables are kept by triggers written for each backend: when the suite ran on
# PostgreSQL, their recount tests run once more on SQLite (about 15 s; the test that
# migrates a fresh SQLite file ran on SQLite in the main run already).
COUNTS_TESTS = tests/cards/test_item_analysis_figures.py tests/cards/test_lapse_counts.py \
  tests/cards/test_state_counts.py tests/cards/test_count_checks.py

test: dev typecheck imports
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	set -a; eval "$$($(PY) bin/services_env)"; set +a; \
	  $(PY) manage.py makemigrations --check --dry-run && \
	  $(PY) -m pytest $(XDIST) $(COV) --durations=20 $(PYTEST_ARGS) && \
	  if [ -z "$(PYTEST_ARGS)" ] && [ -n "$${DATABASE_URL:-}" ]; then \
	    env -u DATABASE_URL -u REDIS_URL -u REQUIRE_SERVICES \
	      $(PY) -m pytest -q $(COUNTS_TESTS) -k "not a_fresh_sqlite_database"; \
	  fi
	$(if $(COV),$(if $(PYTEST_ARGS),,$(VENV)/bin/coverage report --fail-under=100 --include=$(FULLY_COVERED)))

# `make test` with branch coverage, its floor, and 100% on the ladder, engine and checker.
coverage:
	$(MAKE) test COV="--cov --cov-report=term"

typecheck: dev
	$(VENV)/bin/mypy

# The one-way import rule (studyapp -> cards -> exercises, studyapp.common below both):
# the contracts are [tool.importlinter] in pyproject.toml.
imports: dev
	$(VENV)/bin/lint-imports

# Benchmarks print figures; they are not part of `make test`. See README.
bench: dev
	$(PY) -m benchmarks.bench_engine
	$(PY) -m benchmarks.bench_api

# ruff (check and format), lint-imports and the file hygiene hooks of .pre-commit-config.yaml,
# on every file. `$(VENV)/bin/pre-commit install` runs the same hooks on each commit.
lint: dev
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/pre-commit run --all-files

# Pin every dependency for Python 3.11 on any platform: prod.lock is what the Docker image
# installs, dev.lock adds the test and tooling extras.
UV_COMPILE = $(VENV)/bin/uv pip compile pyproject.toml --quiet --universal --python-version 3.11 \
	--custom-compile-command 'make lock'

lock: dev
	$(UV_COMPILE) --extra prod -o requirements/prod.lock
	$(UV_COMPILE) --extra dev --extra prod -o requirements/dev.lock

clean:
	rm -rf $(VENV) var db.sqlite3 staticfiles artifacts
