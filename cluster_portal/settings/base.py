"""Settings shared by every environment, read from environment variables.

See the configuration table in README.md for every variable and its default.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dj_database_url
import plotly
from django.utils.translation import gettext_lazy as _

from cluster_portal.env import (
    demo_secret_key,
    env_bool,
    env_int,
    env_list,
    env_str,
    resolve_broker,
)

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("PORTAL_VAR_DIR") or BASE_DIR / "var")
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", False)
# The demo keeps a generated key under var/; production.py refuses to start without one.
SECRET_KEY = env_str("SECRET_KEY") or demo_secret_key(VAR_DIR)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    # Login brute-force protection (AXES_* below).
    "axes",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    # Domain apps, bottom of the dependency DAG first (docs/architecture.md §1).
    "accounts",
    "inventory",
    "telemetry",
    "alerts",
    "cost",
    "dashboards",
    "rollout",
    "scheduling",
    "simulation",
]

MIDDLEWARE = [
    # Outermost: every request's whole time, for /metrics' latency histogram.
    "cluster_portal.web.request_metrics.RequestLatencyMiddleware",
    # Security headers first, so every response carries them — including the static files
    # that WhiteNoise answers without running the middleware below it.
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Every JSON error under /api/ as RFC 9457 problem details, whichever layer answered it.
    "cluster_portal.web.problems.ProblemDetailsMiddleware",
    "cluster_portal.web.input_guard.RejectNulMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # A lost database connection inside a view: a retryable 503, not a 500.
    "cluster_portal.web.db_unavailable.DatabaseUnavailableMiddleware",
    # Under DEBUG (the demo), Django's technical 404 page only for staff; others get the 404 page.
    "cluster_portal.web.error_pages.FriendlyNotFoundMiddleware",
    # A page whose cluster's PromQL server is down answers 503 "data source unavailable".
    "telemetry.read.promql.middleware.DataSourceUnavailableMiddleware",
    # Last, as django-axes requires: turns a locked-out login into the 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "cluster_portal.urls"
WSGI_APPLICATION = "cluster_portal.wsgi.application"
ASGI_APPLICATION = "cluster_portal.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "cluster_portal.web.context_processors.portal",
            ],
        },
    },
]

DATABASE_URL = env_str("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'portal.sqlite3'}"
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60), conn_health_checks=True
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web, worker and beat share one SQLite file in the demo: wait for locks instead of failing.
    # WAL: readers (a person logging in, a page) never wait for the twin's writing tick, and
    # commits are cheaper (synchronous=NORMAL is safe under WAL: a crash loses no committed
    # transaction's integrity, at most the last ones before a power cut).
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        # journal_size_limit: a checkpointed WAL is cut back to 64 MiB when it restarts; without
        # it the -wal file keeps the size of the largest transaction ever written (a retention
        # delete, a tick) for good.
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
        "PRAGMA busy_timeout=20000; PRAGMA journal_size_limit=67108864;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # A file (not :memory:) so a real worker subprocess in the tests sees the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test_portal.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "monitoring.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes first: it refuses a locked-out username+IP before any password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("zh-hans", _("Simplified Chinese"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
# Our zh-hans grouping (1,024 rather than Django's ungrouped 1024); see the module.
FORMAT_MODULE_PATH = ["cluster_portal.formats"]
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT") or VAR_DIR / "static")
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# Serve straight from the app/static folders too, so the demo needs no collectstatic step.
WHITENOISE_USE_FINDERS = True
# Plotly's JavaScript ships inside the plotly package: served from there as
# /static/plotly/plotly.min.js, so pages never fetch it from a CDN.
STATICFILES_DIRS = [BASE_DIR / "static", ("plotly", Path(plotly.__file__).parent / "package_data")]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.api.authentication.IntegrationTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "cluster_portal.web.pagination.PortalPagination",
    "PAGE_SIZE": 100,
    # Unknown query parameters on a list are a 400 naming them (cluster_portal/web/filters.py).
    "DEFAULT_FILTER_BACKENDS": ["cluster_portal.web.filters.StrictFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # One error body everywhere: {"detail": ..., "code": ..., "errors": {field: [...]}}.
    "EXCEPTION_HANDLER": "cluster_portal.web.errors.portal_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

# Per-scope API throttling (cluster_portal/web/throttling.py): one budget per principal (user,
# token or, anonymous, address) and per scope of the endpoint. Generous: it stops runaway
# scripts, not people. "N/s|min|hour|day"; an empty variable keeps the default. Counters live
# in the Django cache; if the cache is down, requests pass (fail open) and a warning is logged.
REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"] = [
    "cluster_portal.web.throttling.ScopedPrincipalThrottle",
]
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {
    "read": env_str("API_THROTTLE_READ") or "600/min",
    "ingest": env_str("API_THROTTLE_INGEST") or "1200/min",
    "approve": env_str("API_THROTTLE_APPROVE") or "60/min",
    # Prometheus 2.42 drops a batch answered 429 for good (retry_on_http_429 is off by
    # default) and sends ~30 requests/s of 500 samples for a 10,240-card fleet: its own budget.
    "remote_write": env_str("API_THROTTLE_REMOTE_WRITE") or "60000/min",
}
for _scope, _rate in REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"].items():
    import re as _re

    if not _re.fullmatch(r"[1-9]\d*/(s|sec|second|m|min|minute|h|hour|d|day)", _rate):
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            f"API_THROTTLE_{_scope.upper()} must look like 600/min (N/s|min|hour|day), "
            f"got {_rate!r}"
        )

# OpenAPI 3 at /api/schema/, docs at /api/docs/ (Swagger UI served from the sidecar package,
# never from a CDN).
SPECTACULAR_SETTINGS = {
    "TITLE": "Cluster Portal API",
    "DESCRIPTION": (
        "Monitoring, cost, migration and digital-twin API of Cluster Portal. Authenticate with "
        "a browser session (CSRF enforced) or an integration token: "
        "`Authorization: Bearer cp_...` with scopes ingest, read, approve. Every error is RFC "
        "9457 problem details (`application/problem+json`): `type`, `title`, `status`, "
        "`instance`, `detail`, and the extension members `code` and, for invalid input, "
        "`errors`."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    # One name per choice set shared by several fields (spectacular would invent hashes).
    "ENUM_NAME_OVERRIDES": {
        "PlanStateEnum": "rollout.models.PlanState",
        "PhaseKindEnum": "rollout.models.plans.PhaseKind",
        "AnalysisOutcomeEnum": "rollout.models.Outcome",
        "WhatIfStatusEnum": "simulation.models.WhatIfRun.Status",
        "WorkloadKindEnum": "inventory.models.Workload.Kind",
        "ClusterKindEnum": "inventory.models.Cluster.Kind",
        "RouterKindEnum": "rollout.models.routers.RouterKind",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "cluster_portal.web.schema.add_error_responses",
    ],
}

# Dashboard data endpoints share computed payloads this long (0 disables). Redis when the
# broker is Redis (shared by every web process), else a per-process memory cache.
DASHBOARD_CACHE_SECONDS = env_int("DASHBOARD_CACHE_SECONDS", 10)
# After that, an entry may still answer for this long while one request recomputes it (the
# payload's "updated" stamp shows its age); see cluster_portal/web/caching.py.
DASHBOARD_CACHE_STALE_SECONDS = env_int("DASHBOARD_CACHE_STALE_SECONDS", 20)

# --- Celery -----------------------------------------------------------------------------------
CELERY_BROKER_URL, CELERY_BROKER_TRANSPORT_OPTIONS, BROKER_DESCRIPTION = resolve_broker(VAR_DIR)
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # An unacknowledged message (its worker died) is redelivered after this many seconds.
    # Ticks take seconds, so a few minutes is plenty and recovers a lost tick quickly.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 300)
    }
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or None
CACHES = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": env_str("CACHE_URL") or CELERY_BROKER_URL,
            "KEY_PREFIX": "portal",
            # A Redis that stops answering must not hang page loads: fail fast, read uncached.
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
        }
        if (env_str("CACHE_URL") or CELERY_BROKER_URL).startswith(("redis://", "rediss://"))
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}
CELERY_TASK_IGNORE_RESULT = CELERY_RESULT_BACKEND is None
CELERY_TASK_ACKS_LATE = True
# Queues (docs/architecture.md, "Workers and queues"): the twin's ticks and the gates'
# measurements never wait behind outbound work — a trickling webhook receiver, exporter,
# PromQL server or router holds only an "outbound" worker. Everything else (alerts, rollups,
# retention, what-ifs) runs on the default "celery" queue. Run at least one worker per group:
#   celery worker -Q ticks,gates   and   celery worker -Q outbound,celery
TICK_QUEUE, GATE_QUEUE, OUTBOUND_QUEUE = "ticks", "gates", "outbound"
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_ROUTES = {
    "simulation.advance_run": {"queue": TICK_QUEUE},
    "simulation.advance_pool": {"queue": TICK_QUEUE},
    "simulation.schedule_ticks": {"queue": TICK_QUEUE},
    "simulation.schedule_pool_ticks": {"queue": TICK_QUEUE},
    "rollout.measure_analyses": {"queue": GATE_QUEUE},
    "rollout.send_router_intents": {"queue": OUTBOUND_QUEUE},
    "rollout.deliver_webhook": {"queue": OUTBOUND_QUEUE},
    "rollout.sweep_webhook_deliveries": {"queue": OUTBOUND_QUEUE},
    "monitoring.scrape_due_targets": {"queue": OUTBOUND_QUEUE},
    "monitoring.scrape_target": {"queue": OUTBOUND_QUEUE},
    "monitoring.promql_sources_sync": {"queue": OUTBOUND_QUEUE},
    "scheduling.scheduler_sources_sync": {"queue": OUTBOUND_QUEUE},
    "scheduling.calendar_windows_follow": {"queue": OUTBOUND_QUEUE},
}
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# The filesystem transport cannot broadcast, so remote control (inspect/ping) is Redis-only;
# the status page relies on heartbeats written to the database instead.
CELERY_WORKER_ENABLE_REMOTE_CONTROL = not CELERY_BROKER_URL.startswith("filesystem://")
# A worker or beat is shown as alive when it reported within this many seconds.
HEARTBEAT_STALE_AFTER_SECONDS = env_int("HEARTBEAT_STALE_AFTER_SECONDS", 45)

# `make demo` sets PORTAL_DEMO=1: one machine, SQLite, two 4,096-card twins at 10 simulated
# minutes per 10 s. Its defaults bound each tier of the store by its retention, so the SQLite
# file levels off (BENCHMARKS.md "Demo storage: levelling off"); each value below can still be
# set explicitly.
PORTAL_DEMO = env_bool("PORTAL_DEMO", False)
# How long telemetry is kept. Dashboards read rollups, so raw data only needs to cover the
# shortest chart (1 h) with margin; per-accelerator raw rows are the bulk of the store.
TELEMETRY_RETENTION = {
    "raw_accelerator_hours": env_int("TELEMETRY_RAW_ACCELERATOR_HOURS", 1 if PORTAL_DEMO else 6),
    # Demo: 2 h, the floor (serving counters are most of it; the report's longest window).
    "raw_other_hours": env_int("TELEMETRY_RAW_OTHER_HOURS", 2 if PORTAL_DEMO else 48),
    # Minute rollups: what 5-75 h charts read. The demo keeps one day: its twins' serving
    # histogram counters alone are ~3,000 series, ~0.5 GB of SQLite per day of minutes.
    "rollup_minute_days": env_int("TELEMETRY_ROLLUP_MINUTE_DAYS", 1 if PORTAL_DEMO else 8),
    # 15-minute rollups: what 7-day charts read (672 points instead of 10,080 minutes).
    "rollup_15min_days": env_int("TELEMETRY_ROLLUP_15MIN_DAYS", 35),
    # Per-entity minute rollups of dense sources (twin frames): ~200 KB per metric-minute at
    # 10,240 cards, so two days by default (TELEMETRY_FRAME_MINUTE_HOURS overrides it in
    # hours: the demo keeps 2 h, the floor — the cost ledger closes each hour from its minute
    # detail); 15-minute frames for 8 days (a 7-day chart; demo 12 h),
    # hourly and daily frames follow the values below.
    "frame_minute_hours": env_int(
        "TELEMETRY_FRAME_MINUTE_HOURS",
        2 if PORTAL_DEMO else 24 * env_int("TELEMETRY_FRAME_MINUTE_DAYS", 2),
    ),
    "frame_15min_hours": env_int(
        "TELEMETRY_FRAME_15MIN_HOURS",
        12 if PORTAL_DEMO else 24 * env_int("TELEMETRY_FRAME_15MIN_DAYS", 8),
    ),
    "rollup_hour_days": env_int("TELEMETRY_ROLLUP_HOUR_DAYS", 30 if PORTAL_DEMO else 90),
    "rollup_day_days": env_int("TELEMETRY_ROLLUP_DAY_DAYS", 1100),
}

# --- Bounded ingestion (README "Security and operations") ----------------------------------
# Every ingestion body is read through a limit before parsing (413 beyond it); exporter text
# and JSON batches are parsed within per-push caps (400 naming the cap); what a push may add
# to the registries (metric names, entities) is capped per push and per cluster, and a push
# over a cap registers nothing.
INGEST_MAX_BODY_BYTES = env_int("INGEST_MAX_BODY_BYTES", 32 * 1024 * 1024)
INGEST_MAX_LINE_BYTES = env_int("INGEST_MAX_LINE_BYTES", 64 * 1024)
INGEST_MAX_LINES = env_int("INGEST_MAX_LINES", 400_000)
INGEST_MAX_SERIES = env_int("INGEST_MAX_SERIES", 100_000)
INGEST_MAX_LABELS = env_int("INGEST_MAX_LABELS", 64)
INGEST_MAX_LABEL_VALUE_CHARS = env_int("INGEST_MAX_LABEL_VALUE_CHARS", 1024)
INGEST_MAX_JSON_DEPTH = env_int("INGEST_MAX_JSON_DEPTH", 16)
# A remote-write body and what its snappy block declares it decompresses to (checked before
# decompressing); Prometheus' default batches are a few hundred kB.
INGEST_REMOTE_WRITE_MAX_BYTES = env_int("INGEST_REMOTE_WRITE_MAX_BYTES", 8 * 1024 * 1024)
# A remote-write request that waited longer than this in the web server's queue answers 503
# before doing any work: Prometheus (remote_timeout, 30 s by default) has given up on it and is
# resending the batch already (issue 22 §6). 0 turns the shedding off.
INGEST_REMOTE_WRITE_SHED_SECONDS = env_int("INGEST_REMOTE_WRITE_SHED_SECONDS", 30)
TELEMETRY_MAX_NEW_METRICS_PER_PUSH = env_int("TELEMETRY_MAX_NEW_METRICS_PER_PUSH", 100)
TELEMETRY_MAX_UNMAPPED_METRICS = env_int("TELEMETRY_MAX_UNMAPPED_METRICS", 2000)
TELEMETRY_MAX_NEW_ENTITIES_PER_PUSH = env_int("TELEMETRY_MAX_NEW_ENTITIES_PER_PUSH", 2048)
TELEMETRY_MAX_ENTITIES_PER_CLUSTER = env_int("TELEMETRY_MAX_ENTITIES_PER_CLUSTER", 200_000)
# Accepted sample times, the same on every path (JSON, Prometheus push, scrape): at most this
# far in the past (default: the daily rollups' retention, older data would be pruned at once)
# and in the future of the server's clock; values up to this magnitude.
TELEMETRY_MAX_PAST_SECONDS = env_int("TELEMETRY_MAX_PAST_SECONDS", 1100 * 24 * 3600)
TELEMETRY_MAX_FUTURE_SECONDS = env_int("TELEMETRY_MAX_FUTURE_SECONDS", 600)
TELEMETRY_MAX_ABS_VALUE = float(env_str("TELEMETRY_MAX_ABS_VALUE") or 1e18)

# --- Outbound requests (webhooks, exporter scrapes) -----------------------------------------
# Refused when the destination resolves to a loopback, link-local, private, multicast or
# reserved address (also after redirects), unless it lies in one of these networks (CIDR,
# comma-separated), e.g. "10.20.0.0/16,192.168.7.0/24" for exporters on a private LAN.
OUTBOUND_ALLOWED_NETWORKS = env_list("OUTBOUND_ALLOWED_NETWORKS", [])
# Directories whose unix sockets an HAProxy router may name (``unix:/run/haproxy/admin.sock``,
# Debian's default). Any other local socket — PostgreSQL's, Redis's — is refused at save and
# at connect time (comma-separated; empty refuses every unix: address).
ROUTER_SOCKET_DIRS = env_list("ROUTER_SOCKET_DIRS", ["/run/haproxy"])
# Anonymous CSP reports (/csp-report/) per client address: a browser sends a handful per page.
CSP_REPORT_RATE = env_str("CSP_REPORT_RATE") or "30/min"
# Every outbound call has one wall-clock deadline over connect, headers and body
# (cluster_portal.web.outbound): a scrape its target's timeout, a PromQL read its data source's
# timeout, a webhook this many seconds.
WEBHOOK_DEADLINE_SECONDS = env_int("WEBHOOK_DEADLINE_SECONDS", 10)
# PromQL answers larger than this are refused before they are parsed (a 60 MiB answer took a
# web worker to 1.1 GiB): JSON in Python costs ~15-20 times its size.
PROMQL_MAX_RESPONSE_BYTES = env_int("PROMQL_MAX_RESPONSE_BYTES", 8 * 1024 * 1024)
# All PromQL reads of one web request share this budget (seconds), well below gunicorn's
# 30 s worker timeout, so a slow data source answers 503, never a killed worker.
PROMQL_WEB_BUDGET_SECONDS = env_int("PROMQL_WEB_BUDGET_SECONDS", 10)
# Per process, at most this many reads wait on one data source at a time; more answer 503 at
# once, so a slow source cannot take every web thread (and /healthz stays answered).
PROMQL_MAX_INFLIGHT_PER_SOURCE = env_int("PROMQL_MAX_INFLIGHT_PER_SOURCE", 2)
# After a source timed out or refused the connection, reads of it answer 503 at once for
# this many seconds instead of each waiting out the deadline again.
PROMQL_BACKOFF_SECONDS = env_int("PROMQL_BACKOFF_SECONDS", 15)

# Keep at most one raw frame per this many seconds (0 = every frame). A twin tick of 10
# simulated minutes writes 10 frames per metric in 10 s; the demo keeps one per tick (rollups
# still fold in all ten).
TELEMETRY_RAW_FRAME_SECONDS = env_int("TELEMETRY_RAW_FRAME_SECONDS", 10 if PORTAL_DEMO else 0)
# Store frame arrays byte-shuffled and zstd-compressed (``telemetry.store.frame_codec``). On
# by default with SQLite (the demo: its file compresses nothing, and mostly-empty per-workload
# arrays were most of its bytes); off with PostgreSQL, whose TOAST already compresses them
# (LZ4). Either way every reader takes both forms, so switching it never rewrites old rows.
TELEMETRY_FRAME_COMPRESSION = env_bool(
    "TELEMETRY_FRAME_COMPRESSION", DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"
)

# Wall-clock seconds between twin ticks (each tick advances steps_per_tick engine steps).
TWIN_TICK_SECONDS = env_int("TWIN_TICK_SECONDS", 10)
# The memory pool ticks more often than the scheduler: KV-cache dynamics within a placement.
TWIN_POOL_TICK_SECONDS = env_int("TWIN_POOL_TICK_SECONDS", 5)
# Test-only fault injection: pause between writing a tick's telemetry and committing it.
TWIN_TICK_FAULT_PAUSE_SECONDS = float(env_str("TWIN_TICK_FAULT_PAUSE_SECONDS") or 0)
# Cards in each of the demo's two twin clusters (make demo: the same workloads on the same
# cards, so the report compares like with like; a what-if of this size is queued too, and
# what-if runs stop at 4,096 cards). Per-card data is stored as frames, so even SQLite
# writes a 8,192-card tick of 10 simulated minutes in about 2.5 s.
TWIN_DEMO_CARDS = env_int("TWIN_DEMO_CARDS", 4096)
# A twin run's engine stays resident in the worker between ticks; its state is checkpointed to
# the database once the ticks since the last checkpoint, times this share, cover what that
# checkpoint cost (saving stays within the share of tick time), and at least every N ticks
# (the ticks in between are journalled and replayed when a worker rebuilds the engine).
TWIN_CHECKPOINT_SHARE = float(env_str("TWIN_CHECKPOINT_SHARE") or 0.25)
TWIN_CHECKPOINT_TICKS = env_int("TWIN_CHECKPOINT_TICKS", 30)
# How many runs' engines one worker process keeps resident (least recently ticked dropped).
TWIN_RESIDENT_RUNS = env_int("TWIN_RESIDENT_RUNS", 8)

# Gates measure their own step (Argo's initialDelay): a criterion without its own initial delay
# waits two telemetry intervals, and at least one twin tick, after the step's traffic took
# effect before the first measurement.
TELEMETRY_INTERVAL_SECONDS = env_int("TELEMETRY_INTERVAL_SECONDS", TWIN_TICK_SECONDS)
# Attribution (who held a card): a holder not reported for longer than this ends its interval.
ATTRIBUTION_MAX_GAP_SECONDS = env_int("ATTRIBUTION_MAX_GAP_SECONDS", 300)
# Each ingesting process writes an interval's open end at most this often per card (the card's
# series arrive in many remote-write requests per scrape); a holder change is written at once.
# An open end lags by less than this; 0 writes on every observation.
ATTRIBUTION_WRITE_SECONDS = env_int("ATTRIBUTION_WRITE_SECONDS", 60)
# PromQL data sources are synced this often (cards registered, holders sampled into
# attribution intervals): the precision of a PromQL cluster's attribution. Keep it well below
# ATTRIBUTION_MAX_GAP_SECONDS, or every sync would start a new interval.
PROMQL_SYNC_SECONDS = env_int("PROMQL_SYNC_SECONDS", 60)
# How often beat syncs the scheduler sources (scheduling.tasks).
SCHEDULER_SYNC_SECONDS = env_int("SCHEDULER_SYNC_SECONDS", 30)
# Allocated but idle (scheduler page, /api/v1/scheduler-idle/): a card a running job holds
# counts as idle while its measured utilization stays under this percentage, and the job is
# listed once a card has been idle for at least this many minutes in a row.
SCHEDULER_IDLE_UTILIZATION_PERCENT = env_int("SCHEDULER_IDLE_UTILIZATION_PERCENT", 5)
SCHEDULER_IDLE_MINUTES = env_int("SCHEDULER_IDLE_MINUTES", 30)
# The overview's day/night curve on a scheduler-fed cluster: a job is inference when its
# partition (Slurm) or queue (Kueue ClusterQueue, Volcano queue) contains one of these words
# (case-insensitive), training otherwise. Comma-separated.
SCHEDULER_INFERENCE_PARTITIONS = env_list(
    "SCHEDULER_INFERENCE_PARTITIONS", ["infer", "serving", "online"]
)
ROLLOUT_INITIAL_DELAY_SECONDS = env_int(
    "ROLLOUT_INITIAL_DELAY_SECONDS", max(2 * TELEMETRY_INTERVAL_SECONDS, TWIN_TICK_SECONDS)
)

# --- Security headers and login protection (README "Security and operations") ----------------
# Sent on every response in every environment (Django's defaults, spelled out so they are not
# lost by accident); production.py adds HSTS and secure cookies on top.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
PLOTLY_EMPTY_STYLE_HASH = "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
PLOTLY_MAPLIBRE_STYLE_HASH = "'sha256-ji27qzEtxXZW+7dun6UwjHXJ18e6WAin1VvNtkzIE/o='"
DRF_BUTTON_STYLE_HASH = "'sha256-OfgyIBrd+/vP79JdFMYP+re4T+fIenvkrHPD2HZ8/cs='"
# Content-Security-Policy (django-csp 4). Pages load only their own static files: no inline
# scripts, no CDNs, no plugins, and no page may be framed. Violations are reported to
# /csp-report/, which logs them (logger "cluster_portal.csp").
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'", "'report-sample'"],
        # Plotly.js inserts two <style> elements when it loads; nothing else inline is allowed:
        # - an EMPTY one it then fills through CSSOM insertRule (which CSP does not police),
        #   allowed by the hash of the empty string — an empty style element can style nothing;
        # - MapLibre's stylesheet (map traces, unused here but injected at load), allowed by the
        #   hash of its exact text in the bundled plotly.js (tests/cluster_portal/
        #   test_security_headers.py recomputes it from the installed plotly package).
        # Everything else Plotly styles through CSSOM (element.style), which CSP allows.
        "style-src": [
            "'self'",
            PLOTLY_EMPTY_STYLE_HASH,
            PLOTLY_MAPLIBRE_STYLE_HASH,
            "'report-sample'",
        ],
        # Style attributes: only the empty one (Plotly's colour bars reset theirs with
        # setAttribute("style", "")) and DRF's browsable-API buttons' exact
        # style="float: right; margin-right: 10px"; 'unsafe-hashes' permits only these values.
        "style-src-attr": [
            "'unsafe-hashes'",
            PLOTLY_EMPTY_STYLE_HASH,
            DRF_BUTTON_STYLE_HASH,
            "'report-sample'",
        ],
        # blob: for images only: Plotly's PNG export ("Download plot as a png") draws the
        # chart's SVG through a blob: URL into a canvas. A blob: URL is made by the page's own
        # (self-hosted) scripts from data already in the page, so this admits no foreign origin.
        # Scripts, styles, frames and connections stay closed to blob:.
        "img-src": ["'self'", "data:", "blob:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
        "report-uri": ["/csp-report/"],
    },
}

# django-axes: after AXES_FAILURE_LIMIT wrong passwords for one username from one IP address,
# that pair is refused (HTTP 429, templates/registration/locked_out.html) for AXES_COOLOFF_TIME,
# even with the right password. Other users and other addresses are unaffected.
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_HTTP_RESPONSE_CODE = 429
AXES_LOCKOUT_CALLABLE = "cluster_portal.security.lockout_response"
# The client address is REMOTE_ADDR, or — behind TRUSTED_PROXY_COUNT reverse proxies that
# append to X-Forwarded-For — the address the outermost trusted proxy saw.
AXES_CLIENT_IP_CALLABLE = "cluster_portal.security.client_ip"
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
# The longest an expiring integration token may live (days; 0 = no bound). A token created
# without an expiry works until revoked; one with an expiry, or a rotation's renewal, stays
# within this bound.
TOKEN_MAX_LIFETIME_DAYS = env_int("TOKEN_MAX_LIFETIME_DAYS", 366)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "one_line_forbidden": {"()": "cluster_portal.web.error_pages.OneLineForbiddenFilter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        # Django's default config gives "django" its own console handler (under DEBUG) AND lets
        # it propagate to the root's: every record was printed twice. The root's handler alone.
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        # A 403 logs one line, not a traceback (cluster_portal/web/error_pages.py).
        "django.request": {"filters": ["one_line_forbidden"]},
        "django.db.backends": {"level": "WARNING"},
        # django-axes announces itself at INFO on every start-up (each manage.py command):
        # noise in command output. Its lockout warnings still reach the log.
        "axes.apps": {"level": "WARNING"},
    },
}
