"""The run's one private, real Slurm (session-scoped: it starts in about a second and every
scheduler test submits its own jobs, so sharing it costs nothing and keeps the run short)."""

from __future__ import annotations

import pytest

from tests.slurm_server import SlurmCluster, slurm_missing


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    reason = slurm_missing()
    if reason:
        pytest.skip(reason)
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm")).start()
    try:
        yield cluster
    finally:
        cluster.stop()
