"""The inventory import page (operators): the same service as the API and the command."""

from __future__ import annotations

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.access import operator_page
from inventory.models import Cluster, HardwareModel
from inventory.services import InventoryImportError, inventory_import
from inventory.services.imports import COLUMNS, format_of

MAX_IMPORT_BYTES = 5 * 1024 * 1024


class InventoryImportForm(forms.Form):
    cluster = forms.ModelChoiceField(
        label=gettext_lazy("Cluster"), queryset=Cluster.objects.order_by("name")
    )
    file = forms.FileField(
        label=gettext_lazy("File"),
        required=False,
        help_text=gettext_lazy("CSV or YAML, at most 5 MB."),
    )
    content = forms.CharField(
        label=gettext_lazy("Or paste it"),
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 8, "cols": 80}),
    )
    dry_run = forms.BooleanField(
        label=gettext_lazy("Dry run (validate and count, write nothing)"), required=False
    )

    def clean(self) -> dict:
        data = super().clean()
        upload = data.get("file")
        data["format"] = "auto"
        if upload is not None:
            if upload.size > MAX_IMPORT_BYTES:
                raise forms.ValidationError({"file": _("The file is larger than 5 MB.")})
            try:
                data["content"] = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise forms.ValidationError({"file": _("The file is not UTF-8 text.")}) from None
            data["format"] = format_of(upload.name or "")
        elif not (data.get("content") or "").strip():
            raise forms.ValidationError(_("Choose a file or paste its content."))
        return data


@operator_page
def inventory_import_page(request: HttpRequest) -> HttpResponse:
    """GET: the form and the file format; POST: import (or dry-run) and show the counts, or
    every problem with its line (400, nothing written)."""
    form = InventoryImportForm()
    report = problems = None
    unlisted = 0
    status = 200
    if request.method == "POST":
        form = InventoryImportForm(request.POST, request.FILES)
        if form.is_valid():
            data = form.cleaned_data
            try:
                report = inventory_import(
                    cluster=data["cluster"],
                    text=data["content"],
                    format=data["format"],
                    dry_run=data["dry_run"],
                )
            except InventoryImportError as exc:
                problems, unlisted = exc.problems, exc.unlisted
                status = 400
        else:
            status = 400
    return render(
        request,
        "inventory/import.html",
        {
            "form": form,
            "report": report,
            "problems": problems,
            "unlisted": unlisted,
            "columns": COLUMNS,
            "models": HardwareModel.objects.order_by("slug"),
        },
        status=status,
    )
