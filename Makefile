# Cluster Portal — the two commands: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
PASSWORD ?=

.PHONY: demo test install install-dev browser prometheus victoria-metrics haproxy slurm lint format messages bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Re-install only when the requirement files change.
$(VENV)/.installed: requirements.txt $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements-dev.txt requirements.txt $(VENV)/.installed
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: install
	DEBUG=1 $(BIN)/python manage.py migrate --noinput
	DEBUG=1 $(BIN)/python manage.py seed_demo $(if $(PASSWORD),--password "$(PASSWORD)")
	DEBUG=1 $(BIN)/python manage.py seed_twin
	DEBUG=1 $(BIN)/python manage.py seed_migrations
	DEBUG=1 $(BIN)/python manage.py demo_banner --url http://127.0.0.1:$(PORT)/
	DEBUG=1 PORTAL_DEMO=1 PORT=$(PORT) PYTHONUNBUFFERED=1 $(BIN)/honcho start -f Procfile

# Browser tests drive Debian's chromium; install it when we can (root + apt), else they skip.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    apt-get install -y -q chromium chromium-driver >/dev/null; } || \
	  echo "chromium/chromium-driver not installed: browser tests will be skipped"

# The remote-write / PromQL tests run Debian's prometheus; install it the same way, else they skip.
prometheus:
	@command -v prometheus >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    apt-get install -y -q --no-install-recommends prometheus >/dev/null; } || \
	  echo "prometheus not installed: the real-Prometheus tests will be skipped"

# The scale tests read a real VictoriaMetrics as a cluster's PromQL source; same install rule.
victoria-metrics:
	@command -v victoria-metrics >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    { apt-get install -y -q --no-install-recommends victoria-metrics >/dev/null || \
	      { apt-get update -q >/dev/null && \
	        apt-get install -y -q --no-install-recommends victoria-metrics >/dev/null; }; }; } || \
	  echo "victoria-metrics not installed: the VictoriaMetrics tests will be skipped"

# The traffic-router tests drive Debian's haproxy through its Runtime API; same install rule.
haproxy:
	@command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    apt-get install -y -q --no-install-recommends haproxy >/dev/null; } || \
	  echo "haproxy not installed: the HAProxy router tests will be skipped"

# The scheduler tests start a private, real Slurm (controller, two slurmd, slurmrestd with JWT)
# from Debian's packages; same install rule (apt-get update only when the install fails).
SLURM_PACKAGES := slurmctld slurmd slurm-client slurmrestd slurm-wlm-jwt-plugin munge
slurm:
	@command -v slurmctld >/dev/null && command -v slurmrestd >/dev/null && command -v munged >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    { apt-get install -y -q --no-install-recommends $(SLURM_PACKAGES) >/dev/null || \
	      { apt-get update -q >/dev/null && \
	        apt-get install -y -q --no-install-recommends $(SLURM_PACKAGES) >/dev/null; }; }; } || \
	  echo "slurm not installed: the real-Slurm scheduler tests will be skipped"

test: install-dev browser prometheus victoria-metrics haproxy slurm
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python manage.py spectacular --validate --fail-on-warn --file /dev/null
	$(BIN)/python -m pytest

lint: install-dev
	$(BIN)/ruff check .

format: install-dev
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Regenerate and compile the translation catalogues (needs GNU gettext).
messages: install
	$(BIN)/python manage.py makemessages -l zh_Hans --no-obsolete --ignore=.venv --ignore=var --ignore=tests --ignore=bench
	$(BIN)/python manage.py compilemessages --ignore=.venv

# Every benchmark, then the summary table at the top of BENCHMARKS.md. Needs PostgreSQL and
# Redis on 127.0.0.1 (as CI has); takes about 20 minutes on 2 cores. Not part of `make test`.
bench: install-dev
	@for script in bench/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done
	$(BIN)/python bench/summary.py

clean:
	rm -rf $(VENV) var/broker var/*.sqlite3 staticfiles
