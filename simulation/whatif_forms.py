"""The what-if form: scenario parameters or an uploaded trace, validated by the engine."""

from __future__ import annotations

import re

from django import forms
from django.core.validators import MaxValueValidator, MinValueValidator
from django.utils.translation import gettext_lazy as _

from simulation.engine import HARDWARE, MODELS, TraceError
from simulation.models import MAX_WHATIF_SEEDS, WhatIfRun
from simulation.services.catalog import catalog_models_register
from simulation.services.whatif_run import build_scenario

MAX_TRACE_BYTES = 5 * 1024 * 1024


class WhatIfForm(forms.Form):
    cards = forms.IntegerField(
        label=_("Cards"), initial=256, validators=[MinValueValidator(64), MaxValueValidator(4096)]
    )
    hardware = forms.ChoiceField(
        label=_("Accelerator"),
        choices=[(k, v.name) for k, v in HARDWARE.items()],
        initial="ascend-950dt",
    )
    hours = forms.FloatField(
        label=_("Simulated hours"),
        initial=6,
        validators=[MinValueValidator(1), MaxValueValidator(48)],
    )
    seed = forms.IntegerField(label=_("Random seed"), initial=7, min_value=0)
    seeds = forms.IntegerField(
        label=_("Seeds"),
        initial=3,
        required=False,
        min_value=1,
        max_value=MAX_WHATIF_SEEDS,
        help_text=_(
            "Split and unified run on seeds seed, seed+1, …: every figure shows its mean and "
            "range over them (the ablation runs on the first seed)."
        ),
    )
    serve_model = forms.ChoiceField(
        label=_("Inference model"),
        required=False,
        help_text=_(
            "Empty: the default model mix. Otherwise every inference service (or the Azure "
            "trace's service) serves this model — day-0 models added from a config.json included."
        ),
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        catalog_models_register()  # day-0 models are choices at once
        self.fields["serve_model"].choices = [("", _("default mix"))] + [
            (k, f"{v.name} ({k})") for k, v in sorted(MODELS.items())
        ]

    trace_kind = forms.ChoiceField(
        label=_("Trace format"), choices=WhatIfRun.TraceKind.choices, required=False
    )
    trace_file = forms.FileField(
        label=_("Trace file"),
        required=False,
        help_text=_(
            "Azure LLM CSV (TIMESTAMP,ContextTokens,GeneratedTokens) replaces the inference "
            "demand curve; Philly CSV (timestamp,duration,num_gpus,gpu_time,cluster) replaces "
            "the training jobs. At most 5 MB."
        ),
    )

    def clean(self) -> dict:
        data = super().clean()
        if self.errors:
            return data
        if data.get("seeds") is None:  # omitted (an API client, an old form): the default
            data["seeds"] = WhatIfRun._meta.get_field("seeds").default
        upload, kind = data.get("trace_file"), data.get("trace_kind") or ""
        data["trace_text"], data["trace_name"] = "", ""
        if upload and not kind:
            raise forms.ValidationError({"trace_kind": _("Say which format the trace file is.")})
        if kind and not upload:
            raise forms.ValidationError({"trace_file": _("Upload the trace file.")})
        if upload:
            if upload.size > MAX_TRACE_BYTES:
                raise forms.ValidationError({"trace_file": _("The file is larger than 5 MB.")})
            try:
                data["trace_text"] = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise forms.ValidationError(
                    {"trace_file": _("%(name)s is not UTF-8 text.") % {"name": upload.name}}
                ) from None
            data["trace_name"] = upload.name[:200]
        try:
            # Builds the very scenario the task will run: a trace the engine refuses is
            # refused here, before anything is saved.
            build_scenario(
                cards=data["cards"],
                hardware=data["hardware"],
                hours=data["hours"],
                seed=data["seed"],
                trace_kind=kind,
                trace_text=data["trace_text"],
                serve_model=data.get("serve_model") or "",
            )
        except TraceError as exc:
            raise forms.ValidationError(
                {
                    "trace_file": _("%(name)s, line %(line)s, column %(column)s: %(problem)s")
                    % {
                        "name": data["trace_name"],
                        "line": exc.line,
                        "column": exc.column,
                        "problem": str(exc).split(": ", 2)[-1],
                    }
                }
            ) from None
        except ValueError as exc:
            # The engine names its temporary copy of the file; show the uploaded name instead.
            message = re.sub(r"\S*trace\.csv", data["trace_name"], str(exc))
            raise forms.ValidationError(message) from None
        data["trace_kind"] = kind
        return data
