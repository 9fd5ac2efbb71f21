# The README's two commands are `make demo` and `make test`; everything else supports them.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=
# The suite runs in this many pytest-xdist processes, one test file each at a time (`--dist
# loadfile`: a file's tests share its module fixtures). Most tests wait on subprocesses, workers
# and servers, so on the 2-core CI machine two processes ran the suite in 833 s against 1,651 s
# serially (same commit, same machine). PYTEST_WORKERS=0 runs it serially in this process.
PYTEST_WORKERS ?= 2

.PHONY: demo test venv services lint typecheck pytest benchmarks clean constraints client client-tool \
	deploy-check

$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=24"
	$(PY) -m pip install -q -c constraints.txt -e ".[dev]"
	@touch $(STAMP)

venv: $(STAMP)

# A demo evaluation of the embedded default: synthetic corpus, built-in pitch anonymizer.
demo: venv
	$(VENV)/bin/unmask demo

# PostgreSQL and Redis on loopback (started, or installed then started, when they don't answer);
# rootful Podman serving the Docker Engine API for the container sandbox tests; Debian's Chromium
# for the browser tests; Debian's espeak-ng for the eSpeak NG corpus test.
services:
	@bash scripts/ensure_services.sh
	@bash scripts/ensure_podman.sh
	@bash scripts/ensure_browser.sh
	@bash scripts/ensure_espeak.sh

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: venv
	$(VENV)/bin/mypy services api workers cli unmask_client

pytest: venv
	$(VENV)/bin/pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# Lint, types, then every test (slow, integration, end-to-end and browser tests included; the
# client drift test needs the generator: client-tool).
test: venv services client-tool lint typecheck pytest

# The generated HTTP client (unmask_client/api_client/) from the API's OpenAPI document: regenerate it after
# changing a route or schema. The generator goes into .tools/ (its typer pin conflicts with ours).
client-tool: venv
	@test -d .tools/openapi-python-client/openapi_python_client || $(PY) scripts/generate_client.py --install-tool

client: client-tool
	$(PY) scripts/generate_client.py

# The deployment for real (docs/deploy.md): images built on local Debian base images, the compose
# stack started with Podman (Docker elsewhere), a job run through it, a restart, two API replicas
# on a fresh database, everything torn down. Needs root; `make test` runs it only under CI (see the doc for
# its duration). Extra flags: DEPLOY_CHECK_ARGS="--skip-compare" etc.
DEPLOY_CHECK_ARGS ?=
deploy-check: venv
	@bash scripts/deploy_prepare.sh
	$(PY) scripts/deploy_check.py $(DEPLOY_CHECK_ARGS)

benchmarks: venv
	for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# Regenerate the pinned constraints from the current environment (after changing dependencies).
constraints: venv
	$(PY) -m pip freeze --exclude-editable | grep -v '^unmask' > constraints.txt

clean:
	rm -rf .unmask .pytest_cache .mypy_cache .ruff_cache
