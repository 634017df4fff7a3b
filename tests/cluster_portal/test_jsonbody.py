"""Fast JSON bodies: the same JSON DRF writes, and a key spliced into cached bytes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

import numpy as np
import pytest
from django.utils.translation import gettext_lazy
from rest_framework.renderers import JSONRenderer

from cluster_portal.web.jsonbody import FastJSONRenderer, json_bytes, with_key


def test_a_payload_encodes_to_what_drfs_renderer_writes():
    payload = {
        "label": gettext_lazy("time"),
        "when": datetime(2026, 11, 30, 17, 0, 5, 123456, tzinfo=UTC),
        "price": Decimal("1.50"),
        "cells": [1, 2.5, None, "上海"],
        "nested": {"ok": True},
    }
    assert json.loads(json_bytes(payload)) == json.loads(JSONRenderer().render(payload))
    assert json_bytes(payload) == JSONRenderer().render(payload)


def test_numpy_values_and_missing_numbers_become_plain_json():
    body = json.loads(json_bytes({"a": np.float64(0.5), "b": np.array([1.0, np.nan]), 3: "x"}))
    assert body == {"a": 0.5, "b": [1.0, None], "3": "x"}


def test_a_key_is_added_to_an_objects_bytes_without_touching_the_rest():
    body = json_bytes({"kpis": [], "tables": {"t": {"rows": [[1, "a"]]}}})
    spliced = with_key(body, "range", {"start": "s", "end": "e"})
    assert json.loads(spliced) == {
        "kpis": [],
        "tables": {"t": {"rows": [[1, "a"]]}},
        "range": {"start": "s", "end": "e"},
    }
    assert json.loads(with_key(b"{}", "range", 1)) == {"range": 1}


def test_splicing_into_something_other_than_an_object_is_refused():
    with pytest.raises(ValueError):
        with_key(b"[1, 2]", "range", 1)


def test_the_renderer_indents_through_drf_when_a_client_asks_for_it():
    renderer = FastJSONRenderer()
    indented = renderer.render({"a": 1}, "application/json; indent=2", {})
    assert indented == JSONRenderer().render({"a": 1}, "application/json; indent=2", {})
    assert renderer.render({"a": 1}, "application/json", {}) == b'{"a":1}'
    assert renderer.render(None) == b""
