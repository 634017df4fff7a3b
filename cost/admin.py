"""Admin registration for the cost inputs."""

from django.contrib import admin

from cost.models import CostAssumptions, LedgerHour


@admin.register(CostAssumptions)
class CostAssumptionsAdmin(admin.ModelAdmin):
    """Cost inputs; validation is the model's, the same as the cost page's form."""

    list_display = (
        "__str__",
        "currency",
        "card_price",
        "amortisation_years",
        "electricity_price_per_kwh",
        "pue",
        "is_assumption",
        "updated_at",
    )


@admin.register(LedgerHour)
class LedgerHourAdmin(admin.ModelAdmin):
    """Closed ledger hours, read-only: they are written by the hourly close task alone."""

    list_display = ("cluster", "hour", "cost_cents", "billed_cents", "idle_cents", "revision")
    list_filter = ("cluster",)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
