"""Writes: every change to monitoring data goes through a function here."""
