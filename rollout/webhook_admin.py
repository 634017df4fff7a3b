"""Admin for webhook subscriptions, whose signing secret is write-only.

The secret signs every delivery, so it is stored as it is (an HMAC needs it), but nobody reads
it back: the form takes a new one in a password field that never renders its value, and
keeps the current secret when the field is left empty. Saving goes through the service, so
deactivating a subscription cancels its open deliveries on the spot.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from rollout.models import WebhookSubscription
from rollout.services.webhooks import webhook_subscription_save


class WebhookSubscriptionForm(forms.ModelForm):
    """The subscription without its secret; ``new_secret`` replaces it when filled in."""

    new_secret = forms.CharField(
        label=_("signing secret"),
        required=False,
        max_length=200,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=_(
            "Write-only: it is never shown again. Leave empty to keep the current secret. "
            "A Standard Webhooks secret is written whsec_ and base64; any other text is used "
            "as it is."
        ),
    )

    class Meta:
        model = WebhookSubscription
        fields = ["name", "url", "events", "tenant", "active"]

    def clean(self) -> dict:
        cleaned = super().clean()
        if not self.instance.pk and not cleaned.get("new_secret"):
            self.add_error("new_secret", _("A new subscription needs a signing secret."))
        return cleaned

    def _update_errors(self, errors) -> None:
        # The model names its ``secret``, which this form shows as ``new_secret``.
        if hasattr(errors, "error_dict") and "secret" in errors.error_dict:
            errors.error_dict["new_secret"] = errors.error_dict.pop("secret")
        super()._update_errors(errors)

    def _post_clean(self) -> None:
        # The model's validation (and its NOT NULL secret) sees the secret that will be saved.
        if self.cleaned_data.get("new_secret"):
            self.instance.secret = self.cleaned_data["new_secret"]
        super()._post_clean()


@admin.register(WebhookSubscription)
class WebhookSubscriptionAdmin(admin.ModelAdmin):
    """Subscriptions; the signing secret can be replaced but never read."""

    form = WebhookSubscriptionForm
    list_display = ("name", "url", "events", "tenant", "active")

    def save_model(self, request, obj: WebhookSubscription, form, change: bool) -> None:
        webhook_subscription_save(subscription=obj)
