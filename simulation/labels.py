"""Labels, in the reader's language, for the engine's codes (ablation rows, features, attention).

Shared by the what-if pages and the validation report's ablation table; the codes stay what the
result JSON, the CSV and the API carry.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy

ABLATION_NAMES = {
    "split": gettext_lazy("split"),
    "+time-sharing": gettext_lazy("+time-sharing"),
    "+preemption/elastic": gettext_lazy("+preemption/elastic"),
    "+pooled memory": gettext_lazy("+pooled memory"),
    "unified": gettext_lazy("unified"),
}
FEATURE_LABELS = {
    "time_sharing": gettext_lazy("time-sharing"),
    "preemption": gettext_lazy("preemption"),
    "elastic": gettext_lazy("elastic scaling"),
    "pooled_memory": gettext_lazy("pooled memory"),
    "weight_cache": gettext_lazy("weight cache"),
    "prefix_reuse": gettext_lazy("prefix reuse"),
}


ATTENTION_TYPES = {
    "mha": gettext_lazy("multi-head attention (MHA)"),
    "gqa": gettext_lazy("grouped-query attention (GQA)"),
    "mla": gettext_lazy("multi-head latent attention (MLA)"),
}


def attention_label(code: str) -> str:
    return str(ATTENTION_TYPES.get(code, code))


def ablation_label(name: str) -> str:
    return str(ABLATION_NAMES.get(name, name))


def feature_label(code: str) -> str:
    return str(FEATURE_LABELS.get(code, code))
