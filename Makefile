# Two commands: `make run` serves the site with a Celery worker and beat,
# `make test` runs ruff and the whole pytest suite.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000

.PHONY: run test install dev lint format bench clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.dev-installed: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

install: $(VENV)/.installed

dev: $(VENV)/.dev-installed

run: install
	PORT=$(PORT) VENV=$(VENV) bin/run

test: dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	set -a; eval "$$($(PY) bin/services_env)"; set +a; \
	  $(PY) -m pytest $(PYTEST_ARGS)

# Benchmarks print figures; they are not part of `make test`. See README.
bench: dev
	$(PY) -m benchmarks.bench_engine
	$(PY) -m benchmarks.bench_api

lint: dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean:
	rm -rf $(VENV) var db.sqlite3 staticfiles artifacts
