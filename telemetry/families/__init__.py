"""Telemetry's bottom floor: what the exporter families are, in pure Python.

No Django, no rows, nothing of the project outside this package (``tests/test_architecture.py``):
``parse`` (the exposition tokenizer), ``mapping`` (dcgm-exporter / npu-exporter → the portal's
catalogue; ``mapping_pass``: decisions over a whole exposition; ``mapping_rules``: the name
table; ``mapped``: what it produces), ``identity`` (host chain, chip ids, refusal reasons),
``nvidia`` (PROF utilisation, XID and ECC health), ``serving`` (vLLM, SGLang, MindIE families
and histogram buckets), ``series_cache`` (the per-process label-set → mapping memo) and
``exposition`` (the stable import of them all). Every floor above may use them: the catalogue,
``read.promql`` (which writes the same mapping in PromQL), the pipeline and the receivers. See
``docs/architecture.md`` §2.
"""
