"""Trace readers: the three formats, and errors naming file, line and column."""

from __future__ import annotations

import json

import pytest

from simulation.engine.traces import (
    TraceError,
    parse_azure_timestamp,
    read_azure,
    read_mooncake,
    read_philly,
)


def test_azure_timestamps_with_seven_fraction_digits_parse_exactly():
    a = parse_azure_timestamp("2023-11-16 18:17:03.9799600")
    b = parse_azure_timestamp("2023-11-16 18:17:04.0000000")
    assert b - a == pytest.approx(0.02004, abs=1e-6)


def test_azure_reader_returns_relative_arrivals_and_token_counts(tmp_path):
    p = tmp_path / "azure.csv"
    p.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:17:03.9799600,374,44\n"
        "2023-11-16 18:17:05.0000000,1024,7\n"
        "2023-11-16 18:18:03.9799600,90,300\n"
    )
    tr = read_azure(p)
    assert tr.t.tolist() == pytest.approx([0.0, 1.02004, 60.0])
    assert tr.prompt_tokens.tolist() == [374, 1024, 90]
    assert tr.output_tokens.tolist() == [44, 7, 300]
    curve = tr.rate_curve(60.0)
    assert sum(curve) / len(curve) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("body", "line", "column"),
    [
        ("2023-11-16 18:17:03.9799600,374,44\n2023-11-16 18:17:04,abc,3\n", 3, "ContextTokens"),
        ("2023-13-16 18:17:03,1,1\n", 2, "TIMESTAMP"),
        ("2023-11-16 18:17:03,1,-5\n", 2, "GeneratedTokens"),
        ("2023-11-16 18:17:03,1\n", 2, "GeneratedTokens"),
    ],
)
def test_bad_azure_rows_name_file_line_and_column(tmp_path, body, line, column):
    p = tmp_path / "bad.csv"
    p.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + body)
    with pytest.raises(TraceError) as exc:
        read_azure(p)
    e = exc.value
    assert isinstance(e, ValueError)
    assert (e.path, e.line, e.column) == (str(p), line, column)
    assert str(p) in str(e) and f":{line}:" in str(e) and column in str(e)


def test_wrong_header_is_reported_on_line_one(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text("time,ContextTokens,GeneratedTokens\n")
    with pytest.raises(TraceError, match=":1:"):
        read_azure(p)


def test_mooncake_reader_and_its_errors(tmp_path):
    p = tmp_path / "m.jsonl"
    rows = [
        {"timestamp": 0, "input_length": 1024, "output_length": 10, "hash_ids": [1, 2]},
        {"timestamp": 27, "input_length": 600, "output_length": 5, "hash_ids": [1, 3]},
    ]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    reqs = read_mooncake(p)
    assert [r.hash_ids for r in reqs] == [[1, 2], [1, 3]]
    bad = tmp_path / "b.jsonl"
    bad.write_text(
        json.dumps(rows[0])
        + "\n"
        + json.dumps({"timestamp": 5, "input_length": "x", "output_length": 1, "hash_ids": []})
        + "\n"
    )
    with pytest.raises(TraceError) as exc:
        read_mooncake(bad)
    assert (exc.value.line, exc.value.column) == (2, "input_length")
    broken = tmp_path / "c.jsonl"
    broken.write_text('{"timestamp": 1,\n')
    with pytest.raises(TraceError, match=r"c\.jsonl:1:"):
        read_mooncake(broken)
    ids = tmp_path / "d.jsonl"
    ids.write_text('{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": "x"}\n')
    with pytest.raises(TraceError, match="hash_ids"):
        read_mooncake(ids)


def test_philly_reader_and_its_errors(tmp_path):
    p = tmp_path / "p.csv"
    p.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "100,3600,8,28800,philly-a\n200,60,1,60,philly-b\n"
    )
    jobs = read_philly(p)
    assert [(j.timestamp, j.num_gpus, j.cluster) for j in jobs] == [
        (0.0, 8, "philly-a"),
        (100.0, 1, "philly-b"),
    ]
    p.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n100,3600,0,0,x\n")
    with pytest.raises(TraceError) as exc:
        read_philly(p)
    assert (exc.value.line, exc.value.column) == (2, "num_gpus")
    p.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n100,3600,8,1,\n")
    with pytest.raises(TraceError, match="cluster"):
        read_philly(p)
