"""Reads: queries the views, API and tasks share."""
