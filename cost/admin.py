"""Admin registration for the cost inputs."""

from django.contrib import admin

from cost.models import CostAssumptions


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
