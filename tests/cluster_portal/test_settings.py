"""Settings come from the environment, with safe defaults and a strict production module."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from cluster_portal import env

ROOT = Path(__file__).resolve().parents[2]

PRINT_SETTINGS = """
import json, django
from django.conf import settings
django.setup()
db = settings.DATABASES["default"]
print(json.dumps({"engine": db["ENGINE"], "name": str(db["NAME"]), "host": db.get("HOST"),
    "debug": settings.DEBUG, "secret": settings.SECRET_KEY, "broker": settings.CELERY_BROKER_URL,
    "hosts": settings.ALLOWED_HOSTS, "csrf": settings.CSRF_TRUSTED_ORIGINS}))
"""


def run_python(code: str, env_overrides: dict[str, str], module: str = "cluster_portal.settings"):
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    environment = {**keep, "DJANGO_SETTINGS_MODULE": module, **env_overrides}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def read_settings(tmp_path: Path, **overrides: str) -> dict:
    result = run_python(PRINT_SETTINGS, {"PORTAL_VAR_DIR": str(tmp_path), **overrides})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_defaults_are_sqlite_under_var_debug_off_and_a_kept_secret_key(tmp_path):
    first = read_settings(tmp_path)
    assert first["engine"] == "django.db.backends.sqlite3"
    assert first["name"] == str(tmp_path / "portal.sqlite3")
    assert first["debug"] is False
    assert (tmp_path / "secret_key").read_text().strip() == first["secret"]
    assert read_settings(tmp_path)["secret"] == first["secret"], "the demo key must be kept"


def test_environment_variables_override_the_defaults(tmp_path):
    values = read_settings(
        tmp_path,
        DATABASE_URL="postgres://portal@db.example.com:5433/portal",
        CELERY_BROKER_URL="redis://broker.example.com:6380/2",
        SECRET_KEY="x" * 60,
        DEBUG="true",
        ALLOWED_HOSTS="portal.example.com, api.example.com",
        CSRF_TRUSTED_ORIGINS="https://portal.example.com",
    )
    assert values["engine"] == "django.db.backends.postgresql"
    assert values["host"] == "db.example.com"
    assert values["broker"] == "redis://broker.example.com:6380/2"
    assert values["secret"] == "x" * 60
    assert values["debug"] is True
    assert values["hosts"] == ["portal.example.com", "api.example.com"]
    assert values["csrf"] == ["https://portal.example.com"]
    assert not (tmp_path / "secret_key").exists()


def test_a_misspelt_boolean_stops_start_up_with_its_name(tmp_path):
    result = run_python(PRINT_SETTINGS, {"PORTAL_VAR_DIR": str(tmp_path), "DEBUG": "ture"})
    assert result.returncode != 0
    assert "DEBUG must be one of" in result.stderr


def test_broker_falls_back_to_the_filesystem_when_no_redis_answers(tmp_path, monkeypatch):
    for name in ("CELERY_BROKER_URL", "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(env, "tcp_reachable", lambda host, port, timeout=0.3: False)
    url, options, description = env.resolve_broker(tmp_path)
    assert url == "filesystem://"
    assert "no Redis reachable" in description
    assert Path(options["data_folder_in"]).is_dir()
    assert options["data_folder_in"] == options["data_folder_out"]


def test_broker_uses_local_redis_when_it_answers(tmp_path, monkeypatch):
    for name in ("CELERY_BROKER_URL", "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(env, "tcp_reachable", lambda host, port, timeout=0.3: True)
    url, options, description = env.resolve_broker(tmp_path)
    assert url == "redis://127.0.0.1:6379/0"
    assert options == {}
    assert "redis" in description and "database 0" in description


def test_the_broker_description_names_the_redis_database_it_took(tmp_path, monkeypatch):
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6379/7")
    url, _options, description = env.resolve_broker(tmp_path)
    assert url == "redis://127.0.0.1:6379/7"
    assert description == "redis broker at 127.0.0.1:6379, database 7"


def test_env_int_names_the_variable_on_bad_input(monkeypatch):
    monkeypatch.setenv("DB_CONN_MAX_AGE", "sixty")
    with pytest.raises(ImproperlyConfigured, match="DB_CONN_MAX_AGE"):
        env.env_int("DB_CONN_MAX_AGE", 60)


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    result = run_python(
        PRINT_SETTINGS,
        {"PORTAL_VAR_DIR": str(tmp_path)},
        module="cluster_portal.settings.production",
    )
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_production_settings_pass_the_deploy_check_at_warning_level(tmp_path):
    code = (
        "import sys; from django.core.management import execute_from_command_line; "
        "execute_from_command_line(['manage.py', 'check', '--deploy', '--fail-level', 'WARNING'])"
    )
    result = run_python(
        code,
        {
            "PORTAL_VAR_DIR": str(tmp_path),
            "SECRET_KEY": "k9$Fq2!xZ7@pL4#vN8%tR1^wB6&yH3*mJ0(cD5)sG-eU_aQ=iO+oP[lK]",
            "ALLOWED_HOSTS": "portal.example.com",
        },
        module="cluster_portal.settings.production",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_ignores_the_demo_key_file_and_a_blank_secret_key(tmp_path):
    (tmp_path / "secret_key").write_text("demo-key-kept-under-var" * 3)
    for value in (None, "", "   "):
        overrides = {"PORTAL_VAR_DIR": str(tmp_path)}
        if value is not None:
            overrides["SECRET_KEY"] = value
        result = run_python(PRINT_SETTINGS, overrides, module="cluster_portal.settings.production")
        assert result.returncode != 0, value
        assert "SECRET_KEY must be set" in result.stderr


def test_database_credentials_come_only_from_the_environment(tmp_path):
    code = (
        "import json, django; from django.conf import settings; django.setup(); "
        "db = settings.DATABASES['default']; "
        "print(json.dumps({'user': db['USER'], 'password': db['PASSWORD'], 'host': db['HOST']}))"
    )
    result = run_python(
        code,
        {
            "PORTAL_VAR_DIR": str(tmp_path),
            "SECRET_KEY": "k9$Fq2!xZ7@pL4#vN8%tR1^wB6&yH3*mJ0(cD5)sG-eU_aQ=iO+oP[lK]",
            "DATABASE_URL": "postgres://portal:s3cr%40t@db.example.com:5432/portal",
        },
        module="cluster_portal.settings.production",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "user": "portal",
        "password": "s3cr@t",
        "host": "db.example.com",
    }
    # Nothing secret is written into the settings modules themselves.
    for module in (ROOT / "cluster_portal" / "settings").glob("*.py"):
        text = module.read_text(encoding="utf-8")
        assert "postgres://" not in text, module
        assert not re.search(r"SECRET_KEY\s*=\s*['\"]", text), module


def test_the_sqlite_demo_database_runs_in_wal_mode_with_a_busy_timeout(tmp_path):
    # Readers (a person logging in) no longer wait behind the twin's writing tick.
    code = """
import django
django.setup()
from django.db import connection
with connection.cursor() as c:
    print(*(c.execute(f"PRAGMA {p}").fetchone()[0]
            for p in ("journal_mode", "busy_timeout", "journal_size_limit")))
"""
    result = run_python(code, {"PORTAL_VAR_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    # A checkpointed WAL is cut back to 64 MiB instead of keeping its largest size for good.
    assert result.stdout.split() == ["wal", "20000", str(64 * 2**20)]


def test_a_trial_without_tls_is_one_named_setting_and_the_deploy_check_warns(tmp_path):
    # Production settings over plain HTTP: the Secure session cookie never came back and the
    # login silently returned to the login page.
    env = {
        "PORTAL_VAR_DIR": str(tmp_path),
        "SECRET_KEY": "k9$Fq2!xZ7@pL4#vN8%tR1^wB6&yH3*mJ0(cD5)sG-eU_aQ=iO+oP[lK]",
        "ALLOWED_HOSTS": "portal.example.com",
        "PORTAL_TRIAL_WITHOUT_TLS": "1",
    }
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT)"
    )
    result = run_python(code, env, module="cluster_portal.settings.production")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False", "False"]
    check = (
        "from django.core.management import execute_from_command_line; "
        "execute_from_command_line(['manage.py', 'check', '--deploy'])"
    )
    warned = run_python(check, env, module="cluster_portal.settings.production")
    assert "SESSION_COOKIE_SECURE" in warned.stdout + warned.stderr


LOGIN_WHILE_A_TICK_WRITES = """
import sqlite3, threading, time, django
django.setup()
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
call_command("migrate", verbosity=0, interactive=False)
from accounts.models import User
User.objects.create_user(username="ann", password="a-long-demo-password")
# Another process's tick: a write transaction held open for 1.5 s on the same file.
tick = sqlite3.connect(settings.DATABASES["default"]["NAME"], isolation_level=None,
                       check_same_thread=False)
tick.execute("BEGIN IMMEDIATE")
tick.execute("UPDATE monitoring_user SET first_name = 'ticking' WHERE username = 'ann'")
threading.Timer(1.5, lambda: tick.execute("COMMIT")).start()
started = time.monotonic()
answer = Client().post(reverse("login"), {"username": "ann", "password": "a-long-demo-password"})
print(answer.status_code, answer.headers.get("Location"), round(time.monotonic() - started, 1))
print(User.objects.get(username="ann").last_login is not None)
"""


def test_a_login_while_another_connection_holds_a_write_transaction_waits_instead_of_failing(
    tmp_path,
):
    # The demo's worker commits a tick while someone logs in: the login's writes (session,
    # last_login) wait for the lock (busy_timeout) instead of "database is locked".
    result = run_python(LOGIN_WHILE_A_TICK_WRITES, {"PORTAL_VAR_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "database is locked" not in result.stderr
    status, location, waited, logged_in = result.stdout.split()
    assert status == "302" and location != "None", result.stdout
    assert float(waited) >= 1.0  # it really waited for the other writer
    assert logged_in == "True"
