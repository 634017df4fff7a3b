"""Prometheus text ingestion: the tokenizer and the dcgm / npu-exporter catalogue mapping.

Fixtures are written from the exporter facts in docs/architecture.md §5; no database is needed.
"""

from __future__ import annotations

import json
import math

import pytest

from telemetry.families.exposition import (
    MAPPED_METRICS,
    PrometheusMappingError,
    PrometheusParseError,
    map_exposition,
    parse_text,
)

SCRAPE = 1_700_000_000.0
MIB = 2**20
H100 = "GPU-5fa0c9b1-3f2a-4c3e-9d7e-0a1b2c3d4e5f"
H100_B = "GPU-8c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f"
GPU0 = f'gpu="0",UUID="{H100}",device="nvidia0",modelName="NVIDIA H100 80GB HBM3"'
GPU0 += ',Hostname="gpu-node-01",DCGM_FI_DRIVER_VERSION="550.54.15"'
GPU0 += ',container="trainer",namespace="ml",pod="llama-0"'

DCGM = f"""\
# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{{{GPU0}}} 1980
# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{{{GPU0}}} 61
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{{{GPU0}}} 612.337
# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{GPU0}}} 123456789
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{{{GPU0}}} 87
# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.
# TYPE DCGM_FI_DEV_XID_ERRORS gauge
DCGM_FI_DEV_XID_ERRORS{{{GPU0}}} 79
# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).
# TYPE DCGM_FI_DEV_FB_FREE gauge
DCGM_FI_DEV_FB_FREE{{{GPU0}}} 1559
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{{{GPU0}}} 79520
# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Ratio of time the graphics engine is active.
# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge
DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{GPU0}}} 0.912345
"""

NPU_LABELS = '{{id="{id}",model_name="Ascend910B3",pcie_bus_info="0000:C1:00.0",vdie_id="{vdie}"}}'
NPU = """\
# HELP machine_npu_nums Amount of npu installed on the machine.
# TYPE machine_npu_nums gauge
machine_npu_nums 8
# HELP npu_chip_info_utilization the ai core utilization
# TYPE npu_chip_info_utilization gauge
npu_chip_info_utilization<L0> 43 1700000001234
npu_chip_info_utilization<L1> -1 1700000001234
# HELP npu_chip_info_hbm_used_memory the npu hbm used memory
# TYPE npu_chip_info_hbm_used_memory gauge
npu_chip_info_hbm_used_memory<L0> 30415 1700000001234
# HELP npu_chip_info_hbm_total_memory the npu hbm total memory
# TYPE npu_chip_info_hbm_total_memory gauge
npu_chip_info_hbm_total_memory<L0> 65536 1700000001234
# HELP npu_chip_info_health_status the npu health status
# TYPE npu_chip_info_health_status gauge
npu_chip_info_health_status<L0> 1 1700000001234
npu_chip_info_health_status<L1> -1 1700000001234
# HELP npu_chip_info_link_status the npu link status
# TYPE npu_chip_info_link_status gauge
npu_chip_info_link_status<L0> 1 1700000001234
npu_chip_info_link_status<L1> 0 1700000001234
# HELP npu_chip_info_bandwidth_rx the npu interface receive speed, unit is 'MB/s'
# TYPE npu_chip_info_bandwidth_rx gauge
npu_chip_info_bandwidth_rx<L0> 12.5 1700000001234
# HELP npu_chip_info_hccs_statistic_info_tx_cnt_1_3 transmitted message count
# TYPE npu_chip_info_hccs_statistic_info_tx_cnt_1_3 gauge
npu_chip_info_hccs_statistic_info_tx_cnt_1_3<L0> 5021 1700000001234
""".replace("<L0>", NPU_LABELS.format(id=0, vdie="D5B1C3A2-0000")).replace(
    "<L1>", NPU_LABELS.format(id=1, vdie="")
)


def by_metric(report, metric: str) -> list:
    return [s for s in report.samples if s.metric == metric]


def one(report, metric: str):
    (sample,) = by_metric(report, metric)
    return sample


def test_dcgm_metrics_are_converted_to_catalogue_units_at_scrape_time():
    report = map_exposition(DCGM, default_host=None, scrape_time=SCRAPE)

    # DCGM_FI_PROF_GR_ENGINE_ACTIVE wins over DEV_GPU_UTIL (kept under its own name).
    assert one(report, "accelerator_utilization_ratio").value == 0.912345
    assert one(report, "dcgm_fi_dev_gpu_util").value == 87
    assert one(report, "accelerator_temperature_celsius").value == 61
    assert one(report, "accelerator_power_watts").value == 612.337
    assert one(report, "accelerator_sm_clock_hertz").value == 1980e6
    assert one(report, "accelerator_xid_last").value == 79
    assert one(report, "accelerator_energy_joules_total").value == pytest.approx(123456.789)
    assert one(report, "accelerator_hbm_used_bytes").value == 79520 * MIB
    assert {s.timestamp for s in report.samples} == {SCRAPE}
    assert all(s.unit == MAPPED_METRICS[s.metric][0] for s in report.samples if s.mapped)


def test_a_dcgm_gpu_is_identified_by_uuid_with_its_host_model_and_workload_hints():
    report = map_exposition(DCGM, default_host=None, scrape_time=SCRAPE)
    xid = one(report, "accelerator_xid_last")
    entity = xid.entity

    assert (entity.kind, entity.vendor_id, entity.index) == ("accelerator", H100, 0)
    assert (entity.host, entity.model_name) == ("gpu-node-01", "NVIDIA H100 80GB HBM3")
    assert entity.attributes == {"device": "nvidia0", "driver_version": "550.54.15"}
    assert xid.attribution == {"namespace": "ml", "pod": "llama-0", "container": "trainer"}


def test_lowercase_uuid_and_hostname_and_pod_name_spellings_give_the_same_entity():
    upper = 'gpu="1",UUID="{u}",modelName="H100",Hostname="n1",pod="p",pod_namespace="ns"'
    lower = 'gpu="1",uuid="{u}",modelName="H100",hostname="n1",pod_name="p",namespace="ns"'
    text = (
        f"DCGM_FI_DEV_GPU_TEMP{{{upper.format(u=H100_B)}}} 50\n"
        f"DCGM_FI_DEV_GPU_TEMP{{{lower.format(u=H100_B)}}} 51\n"
    )
    first, second = map_exposition(text, default_host="ignored", scrape_time=SCRAPE).samples

    assert first.entity == second.entity
    assert first.entity.vendor_id == H100_B
    assert first.entity.host == "n1"
    assert first.attribution == second.attribution == {"namespace": "ns", "pod": "p"}


def test_a_gpu_without_uuid_is_named_after_its_host_and_index():
    text = 'DCGM_FI_DEV_GPU_TEMP{gpu="3",modelName="A100"} 40\n'
    entity = map_exposition(text, default_host="node-7", scrape_time=SCRAPE).samples[0].entity

    assert (entity.vendor_id, entity.host, entity.index) == ("node-7/gpu3", "node-7", 3)


def test_fb_used_plus_fb_free_becomes_total_bytes_and_a_lone_fb_free_is_kept_unmapped():
    report = map_exposition(DCGM, default_host=None, scrape_time=SCRAPE)
    total = one(report, "accelerator_hbm_total_bytes")
    assert total.value == (79520 + 1559) * MIB
    assert total.mapped and total.entity.vendor_id == H100

    lone = map_exposition(
        f'DCGM_FI_DEV_FB_FREE{{gpu="0",UUID="{H100}",Hostname="h"}} 1559\n'
        f'DCGM_FI_DEV_FB_USED{{gpu="1",UUID="{H100_B}",Hostname="h"}} 10\n',
        default_host=None,
        scrape_time=SCRAPE,
    )
    free = one(lone, "dcgm_fi_dev_fb_free")
    assert (free.value, free.mapped, free.entity.vendor_id) == (1559, False, H100)
    assert by_metric(lone, "accelerator_hbm_total_bytes") == []


def test_dcgm_blank_sentinels_are_dropped_and_counted():
    text = (
        f'DCGM_FI_DEV_POWER_USAGE{{gpu="0",UUID="{H100}",Hostname="h"}} 9223372036854775792\n'
        f'DCGM_FI_DEV_SM_CLOCK{{gpu="0",UUID="{H100}",Hostname="h"}} 9223372036854775794\n'
        f'DCGM_FI_DEV_GPU_TEMP{{gpu="0",UUID="{H100}",Hostname="h"}} 9.223372036854776e+18\n'
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="{H100}",Hostname="h"}} 0\n'
    )
    report = map_exposition(text, default_host=None, scrape_time=SCRAPE)

    assert report.dropped == {"dcgm_blank_sentinel": 3}
    assert [s.metric for s in report.samples] == ["accelerator_utilization_ratio"]


def test_npu_millisecond_timestamps_become_unix_seconds():
    report = map_exposition(NPU, default_host="npu-node-03", scrape_time=SCRAPE)

    assert parse_text(NPU)[1].timestamp_ms == 1_700_000_001_234
    assert one(report, "accelerator_utilization_ratio").timestamp == 1_700_000_001.234


def test_npu_minus_one_is_dropped_as_collection_failed_but_health_minus_one_means_unknown():
    report = map_exposition(NPU, default_host="npu-node-03", scrape_time=SCRAPE)

    assert report.dropped == {"npu_collection_failed": 1}
    health = {s.entity.index: s.value for s in by_metric(report, "accelerator_health_status")}
    assert health == {0: 1, 1: -1}
    assert [s.value for s in by_metric(report, "accelerator_utilization_ratio")] == [0.43]


def test_npu_metrics_map_with_mb_read_as_mebibytes():
    report = map_exposition(NPU, default_host="npu-node-03", scrape_time=SCRAPE)

    assert one(report, "accelerator_hbm_used_bytes").value == 30415 * MIB
    assert one(report, "accelerator_hbm_total_bytes").value == 65536 * MIB
    assert one(report, "accelerator_network_receive_bytes_per_second").value == 12.5 * MIB
    links = {s.entity.index: s.value for s in by_metric(report, "accelerator_link_up")}
    assert links == {0: 1, 1: 0}


def test_an_npu_is_identified_by_vdie_id_or_else_by_host_and_id():
    report = map_exposition(NPU, default_host="npu-node-03", scrape_time=SCRAPE)
    entities = {s.entity.index: s.entity for s in by_metric(report, "accelerator_health_status")}

    assert entities[0].vendor_id == "D5B1C3A2-0000"
    assert entities[1].vendor_id == "npu-node-03/npu1"
    assert entities[0].host == "npu-node-03"
    assert entities[0].model_name == "Ascend910B3"
    assert entities[0].attributes == {"pci_bus_id": "0000:C1:00.0"}


def test_older_npu_exporters_name_the_model_in_name_and_report_workloads():
    text = (
        'npu_chip_info_temperature{id="2",name="Ascend910A",namespace="ml",pod_name="bert-1",'
        'container_name="main"} 48 1700000001000\n'
    )
    sample = map_exposition(text, default_host="n9", scrape_time=SCRAPE).samples[0]
    entity = sample.entity

    assert (entity.model_name, entity.vendor_id, entity.index) == ("Ascend910A", "n9/npu2", 2)
    assert sample.attribution == {"namespace": "ml", "pod": "bert-1", "container": "main"}


def test_machine_npu_nums_is_a_node_metric():
    sample = one(
        map_exposition(NPU, default_host="npu-node-03", scrape_time=SCRAPE), "node_accelerators"
    )

    assert sample.value == 8
    assert (sample.entity.kind, sample.entity.vendor_id) == ("node", "npu-node-03")


def test_per_port_npu_metrics_are_kept_unmapped_under_their_own_name():
    report = map_exposition(NPU, default_host="npu-node-03", scrape_time=SCRAPE)
    port = one(report, "npu_chip_info_hccs_statistic_info_tx_cnt_1_3")

    assert (port.value, port.mapped, port.unit) == (5021, False, "")
    assert port.entity.vendor_id == "D5B1C3A2-0000"


def test_dcgm_prof_gr_engine_active_is_the_utilisation_when_present():
    report = map_exposition(DCGM, default_host=None, scrape_time=SCRAPE)
    prof = one(report, "accelerator_utilization_ratio")

    assert (prof.value, prof.mapped, prof.source_name) == (
        0.912345,
        True,
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    )
    alone = 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-x",Hostname="h"} 44\n'
    fallback = one(
        map_exposition(alone, default_host=None, scrape_time=SCRAPE),
        "accelerator_utilization_ratio",
    )
    assert (fallback.value, fallback.source_name) == (0.44, "DCGM_FI_DEV_GPU_UTIL")


def test_whitespace_inside_label_sets_is_accepted():
    text = f'DCGM_FI_DEV_GPU_TEMP  {{ gpu = "0" ,\tUUID="{H100}" , Hostname= "h" , }}   57  \n'
    (sample,) = parse_text(text)

    assert sample.labels == {"gpu": "0", "UUID": H100, "Hostname": "h"}
    assert sample.value == 57


def test_escaped_quotes_backslashes_newlines_commas_and_braces_survive_in_label_values():
    text = r'up{job="a \"quoted\", job",path="C:\\dcgm",note="line1\nline2",weird="}{="} 1'
    (sample,) = parse_text(text)

    assert sample.labels == {
        "job": 'a "quoted", job',
        "path": "C:\\dcgm",
        "note": "line1\nline2",
        "weird": "}{=",
    }


def test_crlf_line_endings_and_a_missing_final_newline_are_accepted():
    text = '# TYPE a gauge\r\na 1\r\n\r\n# a comment\r\nb{x="y"} 2 1700000000000'
    samples = parse_text(text)

    assert [(s.name, s.value, s.timestamp_ms, s.line) for s in samples] == [
        ("a", 1, None, 2),
        ("b", 2, 1_700_000_000_000, 5),
    ]
    assert samples[0].family_type == "gauge"


def test_special_values_and_scientific_notation_parse_and_nan_is_dropped():
    values = [s.value for s in parse_text("a NaN\nb +Inf\nc -Inf\nd 1.5e3\ne -2E-2\nf .5\n")]
    assert math.isnan(values[0]) and values[1:] == [math.inf, -math.inf, 1500, -0.02, 0.5]

    report = map_exposition("a NaN\nb +Inf\nd 1.5e3\n", default_host="h", scrape_time=SCRAPE)
    assert report.dropped == {"nan_value": 1, "infinite_value": 1}
    assert one(report, "d").entity.kind == "node"


def test_counters_map_the_same_with_or_without_the_total_suffix():
    labels = f'gpu="0",UUID="{H100}",Hostname="h"'
    raw = (
        "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
        f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{labels}}} 5000\n"
        "# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter\n"
        f"DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{{labels}}} 3\n"
    )
    relabelled = (
        "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
        f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION_total{{{labels}}} 5000\n"
        "# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter\n"
        f"DCGM_FI_DEV_PCIE_REPLAY_COUNTER_total{{{labels}}} 3\n"
        f"DCGM_FI_DEV_PCIE_REPLAY_COUNTER_created{{{labels}}} 1.7e9\n"
    )
    first = map_exposition(raw, default_host=None, scrape_time=SCRAPE).samples
    second = map_exposition(relabelled, default_host=None, scrape_time=SCRAPE).samples

    expected = [
        ("accelerator_energy_joules_total", 5.0, True),
        ("dcgm_fi_dev_pcie_replay_counter_total", 3, False),
    ]
    assert [(s.metric, s.value, s.mapped) for s in first] == expected
    assert [(s.metric, s.value, s.mapped) for s in second[:2]] == expected
    assert second[2].metric == "dcgm_fi_dev_pcie_replay_counter_created"
    assert parse_text(relabelled)[1].family_type == "counter"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('DCGM_FI_DEV_GPU_TEMP{gpu="0" 61', "',' or '}'"),
        ("DCGM_FI_DEV_GPU_TEMP{gpu=0} 61", "double-quoted"),
        ('DCGM_FI_DEV_GPU_TEMP{gpu="0} 61', "not closed"),
        ('DCGM_FI_DEV_GPU_TEMP{gpu "0"} 61', "expected '='"),
        ('DCGM_FI_DEV_GPU_TEMP{gpu="0",gpu="1"} 61', "duplicate label 'gpu'"),
        ('DCGM_FI_DEV_GPU_TEMP{gpu="\\t"} 61', "invalid escape"),
        ("DCGM_FI_DEV_GPU_TEMP", "missing sample value"),
        ("DCGM_FI_DEV_GPU_TEMP sixty", "invalid sample value 'sixty'"),
        ("DCGM_FI_DEV_GPU_TEMP 1_000", "invalid sample value"),
        ("DCGM_FI_DEV_GPU_TEMP 61 1.5", "invalid timestamp"),
        ("DCGM_FI_DEV_GPU_TEMP 61 17 extra", "unexpected text 'extra'"),
        ("9lives 1", "expected a metric name"),
        ("# TYPE DCGM_FI_DEV_GPU_TEMP thermometer", "# TYPE DCGM_FI_DEV_GPU_TEMP"),
    ],
)
def test_a_malformed_line_raises_a_parse_error_naming_its_line_number(line, problem):
    text = f"# HELP ok fine\nok 1\n{line}\nok 2\n"
    with pytest.raises(PrometheusParseError) as caught:
        parse_text(text)

    assert caught.value.line == 3
    assert str(caught.value).startswith("line 3: ")
    assert problem in caught.value.message
    assert isinstance(caught.value, ValueError)


def test_a_sample_without_any_host_raises_a_mapping_error_naming_the_line():
    with pytest.raises(
        PrometheusMappingError, match=r"line 3: machine_npu_nums: no host label \(Hostname, "
    ):
        map_exposition(NPU, default_host=None, scrape_time=SCRAPE)


def test_auto_detection_handles_a_mixed_document_per_sample():
    mixed = DCGM + NPU + "# TYPE go_goroutines gauge\ngo_goroutines 17\n"
    report = map_exposition(mixed, default_host="mixed-node", scrape_time=SCRAPE)

    utilisation = by_metric(report, "accelerator_utilization_ratio")
    assert {(s.entity.vendor_id, s.entity.host, s.value) for s in utilisation} == {
        (H100, "gpu-node-01", 0.912345),
        ("D5B1C3A2-0000", "mixed-node", 0.43),
    }
    assert report.dropped == {"npu_collection_failed": 1}  # npu rule applied to npu lines only
    goroutines = one(report, "go_goroutines")
    assert (goroutines.entity.kind, goroutines.entity.host, goroutines.mapped) == (
        "node",
        "mixed-node",
        False,
    )


def test_an_explicit_source_overrides_detection_and_unknown_sources_are_rejected():
    text = 'custom_temp{id="0"} -1 1700000000000\n'
    assert map_exposition(text, source="npu", default_host="h", scrape_time=SCRAPE).dropped == {
        "npu_collection_failed": 1
    }
    assert map_exposition(text, default_host="h", scrape_time=SCRAPE).samples[0].value == -1
    with pytest.raises(ValueError, match="source must be one of"):
        map_exposition(text, source="rocm", default_host="h", scrape_time=SCRAPE)


def test_a_chip_metric_without_chip_labels_is_dropped_as_no_entity():
    text = 'DCGM_FI_DEV_GPU_TEMP{Hostname="h"} 40\nnpu_chip_info_power{model_name="x"} 90 1\n'
    report = map_exposition(text, default_host="h", scrape_time=SCRAPE)

    assert report.samples == []
    assert report.dropped == {"no_entity": 2}


def test_report_counts_add_up_and_serialise_to_json():
    text = DCGM + NPU + 'DCGM_FI_DEV_GPU_TEMP{Hostname="h"} 40\nx NaN\n'
    report = map_exposition(text, default_host="n1", scrape_time=SCRAPE)

    assert report.accepted == report.mapped + report.unmapped_kept == len(report.samples)
    assert report.derived == 1  # the H100's health, from its XID
    assert report.accepted - report.derived + sum(report.dropped.values()) == len(parse_text(text))
    assert report.mapped == sum(s.mapped for s in report.samples)
    assert set(report.dropped) == {"npu_collection_failed", "no_entity", "nan_value"}
    summary = json.loads(json.dumps(report.as_dict()))
    assert summary["accepted"] == report.accepted and "samples" not in summary
    full = json.loads(json.dumps(report.as_dict(include_samples=True)))
    assert len(full["samples"]) == report.accepted
    assert full["samples"][0]["entity"]["vendor_id"] == H100


def test_a_large_scrape_of_several_thousand_lines_is_parsed_and_mapped():
    metrics = [
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_PROF_SM_ACTIVE",
    ]
    lines = []
    for metric in metrics:
        lines += [f"# HELP {metric} help", f"# TYPE {metric} gauge"]
        for node in range(128):
            for gpu in range(8):
                lines.append(
                    f'{metric}{{gpu="{gpu}",UUID="GPU-{node}-{gpu}",Hostname="n{node}"}} {gpu}'
                )
    report = map_exposition("\n".join(lines), default_host=None, scrape_time=SCRAPE)

    assert report.accepted == 5 * 128 * 8
    assert len(by_metric(report, "accelerator_hbm_total_bytes")) == 128 * 8
