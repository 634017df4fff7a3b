"""WSGI entry point (gunicorn cluster_portal.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cluster_portal.settings")
application = get_wsgi_application()

# Imported after Django is set up, so what it freezes includes the apps and URL resolvers.
from cluster_portal.web.heap import settle_after_first_request, settle_heap  # noqa: E402

settle_heap()
settle_after_first_request()
