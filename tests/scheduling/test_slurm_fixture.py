"""The private Slurm the scheduler tests use is real: sbatch runs a job on a fake-GPU node and
slurmrestd v0.0.38 reports its cards."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.slow


def test_a_submitted_job_runs_and_slurmrestd_reports_its_gpu_indices(slurm):
    job = slurm.sbatch("-J", "smoke", "-A", "tenant-a", "--gres=gpu:1", "--wrap", "sleep 60")
    try:
        slurm.wait_state(job, {"RUNNING"})
        deadline = time.monotonic() + 60
        while True:  # slurmrestd may lag the controller by a moment under load
            answer = slurm.get("/slurm/v0.0.38/jobs")
            mine = [j for j in answer["jobs"] if j["job_id"] == job]
            if mine and mine[0]["gres_detail"] or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert answer["errors"] == []
        assert mine[0]["account"] == "tenant-a"
        assert mine[0]["gres_detail"][0].startswith("gpu:h100:1(IDX:")
    finally:
        slurm.scancel(job)
