"""Dashboards: the operator and customer pages and their JSON payloads.

Reads go through telemetry's read API (:mod:`telemetry.read`) and the other apps' selectors;
``selectors`` assemble data per page, ``payloads`` turn it into ``{"kpis", "figures", "tables"}``,
``charts`` builds Plotly figures, ``timerange`` parses the range picker.
"""
