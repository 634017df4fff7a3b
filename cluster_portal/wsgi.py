"""WSGI entry point (gunicorn cluster_portal.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cluster_portal.settings")
application = get_wsgi_application()
