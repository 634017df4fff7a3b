"""Day-0 model add (operators): upload a Hugging Face ``config.json``; the model is then a
choice for what-if runs and usable in twin scenarios at once."""

from __future__ import annotations

import json

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.access import operator_page
from simulation.engine import MODELS
from simulation.labels import attention_label
from simulation.services.catalog import catalog_model_add, catalog_models_register

MAX_CONFIG_BYTES = 256 * 1024


class ModelAddForm(forms.Form):
    model_id = forms.RegexField(
        label=gettext_lazy("Model id"),
        regex=r"^[a-z0-9][a-z0-9._-]{0,63}$",
        help_text=gettext_lazy("Lowercase letters, digits, '.', '_' or '-', e.g. qwen3-32b."),
    )
    name = forms.CharField(label=gettext_lazy("Display name"), max_length=200, required=False)
    config_file = forms.FileField(
        label=gettext_lazy("config.json"),
        help_text=gettext_lazy(
            "The model's published Hugging Face config.json: layers, hidden size, heads, KV "
            "heads, experts, attention type. At most 256 KB."
        ),
    )

    def clean(self) -> dict:
        data = super().clean()
        upload = data.get("config_file")
        if self.errors or upload is None:
            return data
        if upload.size > MAX_CONFIG_BYTES:
            raise forms.ValidationError({"config_file": _("The file is larger than 256 KB.")})
        try:
            data["config"] = json.loads(upload.read().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise forms.ValidationError(
                {
                    "config_file": _("%(name)s is not JSON: %(problem)s")
                    % {"name": upload.name, "problem": exc}
                }  # fmt: skip
            ) from None
        return data


@operator_page
def models_page(request: HttpRequest) -> HttpResponse:
    """GET: the catalog (built-in and day-0 models); POST: add a model from its config.json."""
    form = ModelAddForm()
    if request.method == "POST":
        form = ModelAddForm(request.POST, request.FILES)
        if form.is_valid():
            data = form.cleaned_data
            try:
                row = catalog_model_add(
                    model_id=data["model_id"],
                    name=data["name"],
                    config=data["config"],
                    created_by=request.user,
                )
            except ValueError as exc:
                # The engine's message names the field (e.g. "field 'hidden_size' ...").
                form.add_error("config_file", str(exc))
            else:
                messages.success(
                    request,
                    _("Model %(id)s added: choose it for a what-if run.") % {"id": row.model_id},
                )
                return redirect("catalog-models")
    catalog_models_register()
    models = [
        {
            "id": m.id,
            "name": m.name,
            "params_b": m.params / 1e9,
            "active_b": m.active / 1e9,
            "layers": m.layers,
            "attention": attention_label(m.attention_type),
            "experts": m.n_experts,
            "kv_bytes_per_token": m.kv_bytes_per_token,
            "source": m.source,
        }
        for m in sorted(MODELS.values(), key=lambda m: m.id)
    ]
    status = 400 if form.errors else 200
    return render(
        request, "simulation/models.html", {"form": form, "models": models}, status=status
    )
