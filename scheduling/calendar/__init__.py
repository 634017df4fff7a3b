"""Day/night window calendars: the window arithmetic (``windows``), what the portal asks a
Slurm controller for (``slurm``) and a Kueue ClusterQueue (``kueue``). Models live in
``scheduling.models_calendar``, writes in ``scheduling.services.calendar``."""
