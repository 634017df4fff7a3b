"""Slurm hostlists, gres_detail and TRES requests parse strictly; what does not parse is
refused naming the text (and a job with such an allocation is refused, not miscounted)."""

from __future__ import annotations

import pytest

from scheduling.slurm import v0_0_38
from scheduling.slurm.notation import (
    NotationError,
    expand_hostlist,
    parse_gres_detail,
    parse_tres_gres,
)


def test_a_hostlist_expands_ranges_padding_and_products():
    assert expand_hostlist("gpu-[001-002],cpu1,r[1-2]n[1,3]") == [
        "gpu-001", "gpu-002", "cpu1", "r1n1", "r1n3", "r2n1", "r2n3",
    ]  # fmt: skip
    assert expand_hostlist("") == []


@pytest.mark.parametrize("text", ["gpu-[001-", "gpu-[3-1]", "gpu-[a-b]", "gpu-[1-[2]]", "g p u"])
def test_an_unparseable_hostlist_is_refused_naming_it(text):
    with pytest.raises(NotationError, match="hostlist"):
        expand_hostlist(text)


def test_gres_detail_gives_cards_with_their_indices():
    cards = parse_gres_detail("gpu:h100:3(IDX:0,2-3),npu:910b:0(IDX:N/A)")
    assert [(c.name, c.type, c.indices) for c in cards] == [("gpu", "h100", (0, 2, 3))]


@pytest.mark.parametrize("text", ["gpu:h100:2(IDX:0)", "gpu:h100", "gpu:h100:1(IDX:x)"])
def test_unparseable_gres_is_refused_naming_it(text):
    with pytest.raises(NotationError, match=text.replace("(", r"\(").replace(")", r"\)")):
        parse_gres_detail(text)


def test_tres_requests_count_gres_only():
    assert parse_tres_gres("gres:gpu:h100:1,cpu=2,gres:npu:2") == {"gpu": 1, "npu": 2}
    with pytest.raises(NotationError):
        parse_tres_gres("gres:gpu:lots")


def test_a_job_with_an_unreadable_allocation_is_refused_with_the_reason():
    answer = {"jobs": [{"job_id": 7, "job_state": "RUNNING", "nodes": "gpu-[001-002]",
                        "gres_detail": ["gpu:h100:1(IDX:0)"]}]}  # fmt: skip
    records, refused = v0_0_38.jobs(answer)
    assert records == [] and refused[0][0] == 7 and "gpu-[001-002]" in refused[0][1]


def test_a_pending_per_job_gpu_request_is_counted_from_tres_per_job():
    answer = {"jobs": [{"job_id": 8, "job_state": "PENDING", "nodes": "", "gres_detail": [],
                        "tres_per_job": "gres:gpu:4", "node_count": 1}]}  # fmt: skip
    records, refused = v0_0_38.jobs(answer)
    assert refused == [] and records[0].gpus == 4 and records[0].start_time is None
