"""Selector data → the JSON a dashboard page charts: ``{"kpis", "figures", "tables"}``.

Pages and the REST API serve exactly this payload; ``?format=csv&table=NAME`` exports one
of its tables (every chart's series is also a table of the same name).
"""
