"""Series selectors: PromQL's matcher syntax, refused with a message naming the problem."""

from __future__ import annotations

import pytest

from inventory.label_selectors import SelectorError, parse_selector, selector_matches


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ('namespace="acme-bank"', {"namespace": "acme-bank"}, True),
        (
            '{namespace="acme-bank", pod=~"llama-70b-.*"}',
            {"namespace": "acme-bank", "pod": "llama-70b-3"},
            True,
        ),
        ('pod=~"llama"', {"pod": "llama-70b-3"}, False),  # anchored, as in Prometheus
        ('namespace="a", container!="sidecar"', {"namespace": "a", "container": "sidecar"}, False),
        ('namespace="a", pod!~"debug-.*"', {"namespace": "a", "pod": "serve-1"}, True),
        ('hpc_job="4242"', {"hpc_job": "4242"}, True),
        ('pod="a\\"b"', {"pod": 'a"b'}, True),
    ],
)
def test_selectors_match_as_promql_does(text, labels, expected):
    assert selector_matches(parse_selector(text), labels) is expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        ('gpu="0"', "Unknown label 'gpu'"),
        ('pod=~"("', "regular expression for pod is invalid"),
        ('namespace="a" pod="b"', "Expected a comma at character 15"),
        ("namespace=a", "Cannot read a matcher at character 1"),
        ('{namespace="a"', "does not close"),
        ('pod!="x"', "at least one = or =~"),
        ('pod=~""', "at least one = or =~"),
    ],
)
def test_a_bad_selector_is_refused_naming_the_problem(text, problem):
    with pytest.raises(SelectorError, match=problem):
        parse_selector(text)
