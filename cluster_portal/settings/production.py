"""Production settings: secrets only from the environment, HTTPS-only cookies, HSTS.

Passes ``python manage.py check --deploy --fail-level WARNING`` (tested).
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from cluster_portal.env import env_bool, env_int

if not os.environ.get("SECRET_KEY", "").strip():
    raise ImproperlyConfigured(
        "SECRET_KEY must be set in the environment for production "
        "(cluster_portal.settings.production)."
    )

from cluster_portal.settings.base import *  # noqa: E402,F401,F403

DEBUG = False
# PORTAL_TRIAL_WITHOUT_TLS=1: a trial of the production settings over plain HTTP (no TLS in
# front yet). Without it the browser never sends the Secure session cookie back over HTTP and
# the login silently returns to the login page. Never in production: cookies travel in clear,
# and `manage.py check --deploy` warns about each relaxed setting.
TRIAL_WITHOUT_TLS = env_bool("PORTAL_TRIAL_WITHOUT_TLS", False)
SESSION_COOKIE_SECURE = not TRIAL_WITHOUT_TLS
CSRF_COOKIE_SECURE = not TRIAL_WITHOUT_TLS
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True) and not TRIAL_WITHOUT_TLS
SECURE_HSTS_SECONDS = 0 if TRIAL_WITHOUT_TLS else env_int("SECURE_HSTS_SECONDS", 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
