"""Default settings (development and demo). Production: ``cluster_portal.settings.production``."""

from cluster_portal.settings.base import *  # noqa: F401,F403
