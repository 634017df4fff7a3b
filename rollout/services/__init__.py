"""Writes of the migration workflow: plans, transitions, analysis, webhooks."""
