"""Management commands: what the README tells an operator to type works, and prints only what
the operator asked for."""

from __future__ import annotations

import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from accounts.models import IntegrationToken
from accounts.services.demo import demo_seed

ROOT = Path(__file__).resolve().parents[2]


def test_a_management_command_prints_no_axes_start_up_banner():
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"DEBUG": "1", "PATH": "/usr/bin:/bin", "PORTAL_VAR_DIR": str(ROOT / "var")},
    )
    assert done.returncode == 0, done.stderr
    assert "AXES" not in done.stdout + done.stderr


@pytest.mark.django_db
def test_the_readme_token_example_creates_a_tenant_token_on_the_demo_data():
    demo_seed(password="a-long-demo-password")
    line = next(
        text
        for text in (ROOT / "README.md").read_text().splitlines()
        if "manage.py create_integration_token" in text
    )
    words = shlex.split(re.sub(r"[\[\]]", "", line.split("manage.py", 1)[1]))
    out, err = io.StringIO(), io.StringIO()
    call_command(*words, stdout=out, stderr=err)
    token = IntegrationToken.objects.get(name="dcgm-rack1")
    assert token.tenant is not None and token.tenant.slug in line
    assert out.getvalue().strip().startswith("cp_")
