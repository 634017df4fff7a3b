"""The one ``ReadBackend`` interface (issue 33 §1): a backend that lacks a method, or takes an
argument positionally, fails when its class is written; ``backend_for`` chooses by the
cluster's source; a figure a backend cannot answer is a named 503, never an empty figure."""

from __future__ import annotations

import pytest

from inventory.models import Cluster
from telemetry import read
from telemetry.models import PromQLDataSource
from telemetry.read.backend import FigureUnavailable, ReadBackend
from telemetry.read.choice import backend_for, group_by_backend
from telemetry.read.local.backend import LocalBackend
from telemetry.read.promql.backend import PromQLBackend
from telemetry.read.promql.client import DataSourceUnavailable
from telemetry.read.promql.middleware import DataSourceUnavailableMiddleware


def test_a_backend_missing_a_method_fails_when_its_class_is_created():
    with pytest.raises(TypeError, match="does not implement .*top_entities"):

        class Partial(LocalBackend):  # noqa: F841 - the class statement itself must fail
            top_entities = ReadBackend.top_entities

    with pytest.raises(TypeError, match="does not implement .*latest_kind.*series_read"):

        class Empty(ReadBackend):  # noqa: F841
            pass


def test_a_backend_method_taking_arguments_positionally_fails_when_its_class_is_created():
    with pytest.raises(TypeError, match=r"Positional.latest_kind takes \['kind', 'names'\]"):

        class Positional(LocalBackend):  # noqa: F841
            def latest_kind(self, kind, names):
                return super().latest_kind(kind=kind, names=names)


def test_a_shared_base_may_leave_methods_to_its_subclasses_when_it_says_so():
    class Shared(ReadBackend, abstract=True):
        pass

    with pytest.raises(TypeError):
        Shared(None)  # still abstract: it cannot answer anything
    assert read.BACKENDS == (LocalBackend, PromQLBackend)


@pytest.mark.django_db
def test_backend_for_chooses_the_promql_server_only_for_a_cluster_with_an_enabled_source():
    stored = Cluster.objects.create(name="stored", kind=Cluster.Kind.UNIFIED)
    remote = Cluster.objects.create(name="remote", kind=Cluster.Kind.UNIFIED)
    paused = Cluster.objects.create(name="paused", kind=Cluster.Kind.UNIFIED)
    source = PromQLDataSource.objects.create(cluster=remote, url="http://prom.example:9090")
    PromQLDataSource.objects.create(cluster=paused, url="http://p.example:9090", enabled=False)

    assert type(backend_for(stored)) is LocalBackend and backend_for(stored).cluster_id == stored.pk
    chosen = backend_for(remote.pk)
    assert type(chosen) is PromQLBackend and chosen.source == source
    assert chosen.derived_source == "promql" and backend_for(stored).derived_source == "derived"
    assert type(backend_for(paused)) is LocalBackend
    assert type(backend_for(None)) is LocalBackend
    assert read.backend_for is backend_for

    # The store answers every stored cluster in one group; each server answers its own.
    groups = group_by_backend([stored.pk, remote.pk, paused.pk, remote.pk], lambda c: c)
    assert [(type(b), picks) for b, picks in groups] == [
        (LocalBackend, [0, 2]),
        (PromQLBackend, [1, 3]),
    ]

    source.enabled = False
    source.save()  # the per-process cache forgets the source at once
    assert type(backend_for(remote)) is LocalBackend


@pytest.mark.django_db
def test_a_figure_a_backend_cannot_answer_is_a_named_503_on_the_page(rf, monkeypatch):
    cluster = Cluster.objects.create(name="vm-a", kind=Cluster.Kind.UNIFIED)
    PromQLDataSource.objects.create(cluster=cluster, url="http://vm.example:8428")

    def unavailable(self, **_kwargs):
        raise FigureUnavailable("vm-a", "recording rule fleet:health:count is missing")

    monkeypatch.setattr(PromQLBackend, "latest_kind", unavailable)
    with pytest.raises(FigureUnavailable) as caught:
        read.latest_kind(cluster.pk, "accelerator", ["accelerator_utilization_ratio"])
    error = caught.value
    assert isinstance(error, DataSourceUnavailable) and error.status_code == 503
    assert error.default_code == "figure_unavailable"
    page = DataSourceUnavailableMiddleware(lambda r: None).process_exception(rf.get("/"), error)
    assert page.status_code == 503
    body = page.content.decode()
    assert "vm-a" in body and "figure unavailable: recording rule fleet:health:count" in body
