"""Attribution intervals: who held which card when, from the exporters' pod and Slurm labels."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from telemetry.models import AttributionInterval
from telemetry.read import attribution_bound_intervals, attribution_held_by_hour
from telemetry.receivers.text import ingest_prometheus_text

T0 = 1_764_400_000.0  # on an hour boundary minus 400 s is fine: tests use spans, not hours
H100 = 'modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"'


def dcgm(*cards: tuple[str, str, str]) -> str:
    """dcgm-exporter text with the Kubernetes pod mapping on: (uuid, namespace, pod)."""
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for index, (uuid, namespace, pod) in enumerate(cards):
        holder = f',namespace="{namespace}",pod="{pod}",container="main"' if pod else ""
        lines.append(
            f'DCGM_FI_DEV_GPU_UTIL{{gpu="{index}",UUID="{uuid}",{H100}{holder}}} {50 + index}'
        )
        lines.append(f'DCGM_FI_DEV_FB_USED{{gpu="{index}",UUID="{uuid}",{H100}{holder}}} 1024')
    return "\n".join(lines) + "\n"


def scrape(text: str, at: float) -> dict:
    return ingest_prometheus_text(
        text=text, cluster_name="unified-a", node=None, source="dcgm", scrape_time=at
    )


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


@pytest.mark.django_db
def test_consecutive_scrapes_of_one_holder_make_one_interval_per_card(cluster):
    text = dcgm(("GPU-a", "acme-bank", "llama-70b-0"), ("GPU-b", "acme-bank", "llama-70b-0"))
    for k in range(4):
        scrape(text, T0 + 15 * k)
    rows = list(AttributionInterval.objects.order_by("entity__key"))
    assert len(rows) == 2
    assert {r.pod for r in rows} == {"llama-70b-0"}
    assert all(r.started_at == at(T0) and r.last_seen_at == at(T0 + 45) for r in rows)
    assert all(r.step_seconds == 15 and r.observations == 4 for r in rows)


@pytest.mark.django_db
def test_a_retried_scrape_changes_no_interval(cluster):
    text = dcgm(("GPU-a", "acme-bank", "llama-70b-0"))
    scrape(text, T0)
    scrape(text, T0 + 15)
    before = list(AttributionInterval.objects.values())
    scrape(text, T0 + 15)  # Prometheus retries after a 5xx
    scrape(text, T0)
    assert list(AttributionInterval.objects.values()) == before


@pytest.mark.django_db
def test_a_new_pod_on_a_card_ends_the_old_interval_and_starts_its_own(cluster):
    scrape(dcgm(("GPU-a", "acme-bank", "llama-70b-0")), T0)
    scrape(dcgm(("GPU-a", "acme-bank", "llama-70b-0")), T0 + 15)
    scrape(dcgm(("GPU-a", "panda", "train-7")), T0 + 30)
    old, new = AttributionInterval.objects.order_by("started_at")
    assert (old.pod, old.ended_at) == ("llama-70b-0", at(T0 + 30))
    assert (new.namespace, new.pod, new.ended_at) == ("panda", "train-7", None)


@pytest.mark.django_db
def test_a_card_seen_free_ends_its_interval_and_free_cards_make_none(cluster):
    scrape(dcgm(("GPU-a", "acme-bank", "llama-70b-0"), ("GPU-b", "", "")), T0)
    scrape(dcgm(("GPU-a", "", ""), ("GPU-b", "", "")), T0 + 15)
    (only,) = AttributionInterval.objects.all()
    assert only.ended_at == at(T0 + 15)


@pytest.mark.django_db
def test_slurm_jobs_are_holders_too(cluster):
    text = (
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-a",{H100},hpc_job="4242"}} 90\n'
    )
    scrape(text, T0)
    (only,) = AttributionInterval.objects.all()
    assert only.hpc_job == "4242"


@pytest.mark.django_db
def test_held_card_seconds_bind_by_selector_and_say_what_is_unbound_or_ambiguous(cluster):
    text = dcgm(
        ("GPU-a", "acme-bank", "llama-70b-0"),
        ("GPU-b", "acme-bank", "llama-70b-1"),
        ("GPU-c", "panda", "train-7"),
    )
    for k in range(5):  # 4 steps of 15 s + one step after the last observation = 75 s
        scrape(text, T0 + 15 * k)
    held = attribution_held_by_hour(
        cluster_id=cluster.pk,
        bindings=[("chat", 'namespace="acme-bank", pod=~"llama-70b-.*"'), ("none", 'pod="x"')],
        start=at(T0 - 3600),
        end=at(T0 + 3600),
    )
    assert held.card_seconds[:, 0].sum() == pytest.approx(2 * 75)
    assert held.card_seconds[:, 1].sum() == 0
    assert held.unbound_card_seconds == pytest.approx(75)
    both = attribution_held_by_hour(
        cluster_id=cluster.pk,
        bindings=[("a", 'namespace="panda"'), ("b", 'pod=~"train-.*"')],
        start=at(T0 - 3600),
        end=at(T0 + 3600),
    )
    assert both.ambiguous_intervals == 1
    assert both.card_seconds.sum() == 0  # an ambiguous card is billed to nobody


@pytest.mark.django_db
def test_an_interval_is_clipped_to_the_window_and_split_by_hour(cluster):
    hour = 1_764_403_200.0  # an hour boundary
    text = dcgm(("GPU-a", "acme-bank", "llama-70b-0"))
    for k in range(9):  # 30 s before the boundary to 90 s after, every 15 s
        scrape(text, hour - 30 + 15 * k)
    held = attribution_held_by_hour(
        cluster_id=cluster.pk,
        bindings=[("chat", 'pod="llama-70b-0"')],
        start=at(hour - 3600),
        end=at(hour + 3600),
    )
    assert held.for_hour(hour - 3600)[0] == pytest.approx(30)
    assert held.for_hour(hour)[0] == pytest.approx(105)
    clipped = attribution_held_by_hour(
        cluster_id=cluster.pk,
        bindings=[("chat", 'pod="llama-70b-0"')],
        start=at(hour),
        end=at(hour + 60),
    )
    assert clipped.card_seconds.sum() == pytest.approx(60)


@pytest.mark.django_db
def test_overlapping_intervals_of_one_card_are_not_billed_twice(cluster):
    scrape(dcgm(("GPU-a", "acme-bank", "llama-70b-0")), T0)
    first = AttributionInterval.objects.get()
    # Two ingest workers raced: a second interval of the same holder overlapping the first.
    AttributionInterval.objects.create(
        cluster=cluster,
        entity=first.entity,
        pod=first.pod,
        namespace=first.namespace,
        container=first.container,
        host=first.host,
        started_at=at(T0 + 5),
        last_seen_at=at(T0 + 5),
        step_seconds=15,
    )
    first.step_seconds = 15
    first.save()
    held = attribution_held_by_hour(
        cluster_id=cluster.pk,
        bindings=[("chat", 'pod="llama-70b-0"')],
        start=at(T0 - 60),
        end=at(T0 + 600),
    )
    assert held.card_seconds.sum() == pytest.approx(20)  # [T0, T0+20), not 15 + 15


@pytest.mark.django_db
def test_the_workload_page_lists_what_bound(cluster):
    scrape(dcgm(("GPU-a", "acme-bank", "llama-70b-0"), ("GPU-b", "panda", "x")), T0)
    bound, total = attribution_bound_intervals(
        cluster_id=cluster.pk,
        selector='namespace="acme-bank"',
        start=at(T0 - 60),
        end=at(T0 + 600),
    )
    assert total == 1
    assert bound[0].pod == "llama-70b-0" and bound[0].host == "dgx-01"


@pytest.mark.django_db
def test_mig_slices_bill_their_share_of_the_gpu_to_their_own_pods(cluster):
    text = "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge\n" + "".join(
        f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu="0",UUID="GPU-m",{H100},GPU_I_PROFILE="{profile}",'
        f'GPU_I_ID="{gi}",namespace="{ns}",pod="{pod}"}} 0.5\n'
        for profile, gi, ns, pod in (
            ("3g.40gb", 1, "acme-bank", "chat-0"),
            ("4g.40gb", 2, "panda", "t-1"),
        )
    )
    for k in range(3):
        scrape(text, T0 + 60 * k)
    held = attribution_held_by_hour(
        cluster_id=cluster.pk,
        bindings=[("acme", 'namespace="acme-bank"'), ("panda", 'namespace="panda"')],
        start=at(T0 - 3600),
        end=at(T0 + 3600),
    )
    # Three one-minute scrapes = 180 s, at 3/7 and 4/7 of the GPU.
    assert held.card_seconds[:, 0].sum() == pytest.approx(180 * 3 / 7)
    assert held.card_seconds[:, 1].sum() == pytest.approx(180 * 4 / 7)


@pytest.mark.django_db(transaction=True)
def test_a_card_another_shard_is_updating_is_skipped_not_waited_for(cluster):
    import threading

    from django.db import connection, transaction

    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    from telemetry.ingest.attribution import Holder, Observation, attribution_record

    scrape(dcgm(("GPU-a", "acme-bank", "llama-70b-0")), T0)
    row = AttributionInterval.objects.get()
    holder = Holder(namespace="acme-bank", pod="llama-70b-0", container="main", host="dgx-01")
    locked, release = threading.Event(), threading.Event()

    def other_shard() -> None:
        with transaction.atomic():
            AttributionInterval.objects.select_for_update().get(pk=row.pk)
            locked.set()
            release.wait(10)
        connection.close()

    thread = threading.Thread(target=other_shard)
    thread.start()
    assert locked.wait(10)
    try:
        with transaction.atomic():
            counts = attribution_record(
                cluster_id=cluster.pk,
                observations=[Observation(row.entity_id, T0 + 15, holder)],
            )
    finally:
        release.set()
        thread.join(10)
    assert counts == {"started": 0, "extended": 0, "ended": 0}
    assert AttributionInterval.objects.get().last_seen_at == at(T0)
