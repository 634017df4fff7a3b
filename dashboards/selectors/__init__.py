"""Data assembly for the dashboards, one module per page.

Every read goes through the telemetry selectors or the models; nothing here scans raw
history: latest values come from the newest frame (one row per metric for the whole fleet)
or the newest sample per point, and range reads go through
:func:`telemetry.read.local.series.series_read` (rollups at a resolution chosen for the
range) or whole-layout rollup frames.
"""
