"""Dashboard framework: pure chart builders, time-range parsing and CSV export.

Nothing in this package touches the database or a request object except ``csv`` (which only
builds responses): data assembly lives in :mod:`monitoring.selectors.dashboards`.
"""
