"""Alerts and diagnostics: default rules, their evaluation over telemetry, and triage actions.

- ``defaults``: the rules the portal ships with and ``alert_rules_ensure()``.
- ``evaluate``: ``alerts_evaluate()`` opens, refreshes and resolves alerts (the beat task).
- ``actions``: ``alert_acknowledge()`` and ``alert_resolve()`` for operators.
"""
