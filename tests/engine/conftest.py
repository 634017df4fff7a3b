"""Shared fixtures for the engine tests (plain pytest, no Django)."""

from __future__ import annotations

import pytest

from simulation.engine import Engine, default_scenario


@pytest.fixture
def small_scenario():
    """A 768-card cluster (2 supernodes) with the default mix scaled down."""
    return default_scenario(768, seed=3, n_training_jobs=24, n_services=8)


@pytest.fixture
def make_engine():
    """Factory: build an engine for a scenario."""

    def make(scenario):
        return Engine(scenario)

    return make
