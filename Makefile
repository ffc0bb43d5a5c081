# Spark Structured Streaming × Kafka course. `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml 2>/dev/null | cksum | cut -d' ' -f1)
LAB_PORT ?= 8888

.PHONY: workshop workshop-deps help setup lab test test-fast test-docker test-cluster test-workshop bench release site seen broker-start broker-stop clean browser-deps compose-deps

help: ## list the targets, and the variables you may set
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'
	@echo "make variables:"
	@echo "  LAB_PORT=8888            JupyterLab's port for make lab"
	@echo "  PYTHON=python3.11        the Python 3.11 that creates .venv"
	@echo "  CLUSTER=1                make lab on 3 brokers and a Spark cluster"
	@echo "environment variables (docs/settings.md):"
	@echo "  STREAMLAB_BROKER_PORT=9092  the lab broker's port (one per lab on a machine)"
	@echo "  KAFKA_BOOTSTRAP=host:port   use another broker instead of starting one"
	@echo "  STREAMLAB_ENGINE=offline    the offline fallback engine (default: Spark's connector)"
	@echo "  STREAMLAB_SEED=N            your variant's seed (the numbers in exercises)"
	@echo "  STREAMLAB_HOME=dir          jar cache, broker data, variants (default .streamlab/)"
	@echo "  STREAMLAB_SPARK_UI=true     serve Spark's UI on 127.0.0.1:4040"
	@echo "  STREAMLAB_CDS=off           start Spark and the brokers without the class-data archives"
	@echo "  JAVA_HOME, CI=true, GRADER_DEBUG=1, STREAMLAB_DEMO_SECONDS=N; for clusters and workshops see docs/settings.md"
	@echo "  $(PY) -m streamlab settings lists every one: its value now, its default and what it does"

# rfc3987-syntax, jsonschema's non-GPL IRI checker (pulled in by jupyter-events' jsonschema[format-nongpl]), builds
# about 35 Earley parsers whenever jsonschema is imported: 2.5 s of CPU in every JupyterLab, nbgrader run and Check my
# work, for a format no notebook or Jupyter schema uses. Without it jsonschema skips that one format (its issue 1428).
$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found: install Python 3.11 (or run make PYTHON=/path/to/python3.11)"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,workshop]'
	$(PY) -m pip uninstall --quiet --yes rfc3987-syntax
	@rm -f $(VENV)/.installed-*; touch $(STAMP)

setup: $(STAMP) ## create .venv, resolve Apache Kafka's and Spark's connector jars, start the broker (seconds when done)
	@$(PY) -m streamlab setup

lab: $(STAMP) ## set up, start the broker and JupyterLab on the notebooks (127.0.0.1, with a token); Ctrl-C stops both; CLUSTER=1: on 3 brokers and a Spark cluster
	@$(if $(CLUSTER),STREAMLAB_CLUSTER=1 )$(PY) -m streamlab lab --port $(LAB_PORT)

browser-deps: ## install Debian's Chromium for the browser test (needs root; CI does this)
	@if ! command -v chromium >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then (apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null) || echo "warning: could not install chromium"; \
	  else echo "note: chromium is not installed and this is not root: the browser test will skip (apt-get install chromium)"; fi; fi

compose-deps: ## install Debian's docker-compose, which the tests use to validate docker-compose.yml (needs root; CI does this)
	@if ! command -v docker-compose >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then (apt-get update -qq && apt-get install -y -qq --no-install-recommends docker-compose >/dev/null) || echo "warning: could not install docker-compose"; \
	  else echo "note: docker-compose is not installed and this is not root: the compose tests will skip (apt-get install docker-compose)"; fi; fi

test: setup browser-deps compose-deps workshop-deps ## set up and run the suite CI runs: the course, and beside it the compose, cluster and hub labs (tests/lanes.py)
	$(PY) tests/lanes.py

test-workshop: setup workshop-deps ## the workshop hub with 5 learners, Kafka isolation between them, cohort grading (about 12 min)
	$(PY) -m pytest -q -p no:cacheprovider --durations=10 tests/workshop

test-cluster: setup ## the cluster lab's kill tests: 3 brokers and a Spark cluster, 10 broker and 10 executor kills
	$(PY) -m pytest -q -p no:cacheprovider --durations=15 tests/cluster

test-docker: setup browser-deps ## build and run the compose lab on podman, Debian's Docker API (installs it as root; else skips)
	$(PY) -m pytest -q -p no:cacheprovider --durations=15 tests/docker

test-fast: setup compose-deps ## unit tests only (no broker, no Spark)
	$(PY) -m pytest -q -p no:cacheprovider tests/unit

CHP := .streamlab/node/node_modules/.bin/configurable-http-proxy

workshop-deps: $(STAMP) ## install JupyterHub's proxy (configurable-http-proxy 5.3.0, npm) into .streamlab/node/, and Debian's nftables (root: the room's per-learner connection cap)
	@test -x $(CHP) || { command -v npm >/dev/null || { echo "error: npm not found: install Node.js 18+ and npm (Debian: apt-get install npm)"; exit 1; }; \
	  mkdir -p .streamlab/node && npm install --silent --prefix .streamlab/node --no-save --no-audit --no-fund configurable-http-proxy@5.3.0; }
	@if ! command -v nft >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  (apt-get install -y -qq --no-install-recommends nftables >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq --no-install-recommends nftables >/dev/null)) \
	  || echo "warning: could not install nftables: the room's Kafka will not cap each learner's connections"; fi

workshop: setup workshop-deps ## serve the course to a room: JupyterHub and the room's SCRAM Kafka on 127.0.0.1 (docs/workshop.md); Ctrl-C stops both
	@$(PY) -m workshop start

bench: setup compose-deps workshop-deps ## print the benchmark ratios: engine vs raw consumer, grading vs running, the cluster, compose and hub labs
	$(PY) -m bench

release: setup ## regenerate notebooks/ (student versions) from solutions/ with nbgrader
	$(PY) -m grader release

site: setup ## the course as a static site in .streamlab/site/ (docs/site.md): runs each student notebook, then builds the pages
	$(PY) -m grader site --run --executed .streamlab/site-executed

seen: setup ## each live demo's 'What you should see' figure from a real run (grader/seen.py), then make release
	$(PY) -m grader seen --run --cluster --executed .streamlab/site-executed
	$(PY) -m grader release

broker-start: setup ## start the lab's Kafka broker
cluster-start: setup ## start the lab's cluster: 3 Kafka brokers, a Spark Master and 2 Workers
	@$(PY) -m streamlab cluster start

cluster-stop: ## stop the lab's cluster and delete its folder
	@test -x $(PY) && $(PY) -m streamlab cluster stop || true

broker-stop: ## stop the lab's Kafka broker (if streamlab started it)
	@test -x $(PY) && $(PY) -m streamlab broker stop || true

clean: broker-stop ## stop the broker and delete its data and the logs (not .venv, not the jar cache)
	rm -rf .streamlab/kafka-* .streamlab/noida-* .streamlab/spark.log test-results
