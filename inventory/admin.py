"""Admin registrations for hardware and the inventory."""

from django.contrib import admin
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from inventory.models import (
    Accelerator,
    AcceleratorMove,
    Cluster,
    HardwareModel,
    Link,
    Node,
    Rack,
    Supernode,
    TopologyMapping,
    Workload,
)
from inventory.services import (
    cluster_default_set,
    topology_mapping_apply,
    workload_selector_set,
)
from inventory.signals import nodes_placed


@admin.register(HardwareModel)
class HardwareModelAdmin(admin.ModelAdmin):
    """Seeded from the twin's catalogue (figures cited in its README); operators correct them."""

    list_display = (
        "slug",
        "name",
        "vendor",
        "hbm_bytes",
        "hbm_bandwidth_bytes_per_s",
        "peak_flops",
        "tdp_watts",
        "confidence",
    )
    list_filter = ("vendor", "confidence")


class TopologyMappingInline(admin.StackedInline):
    """Where a real cluster's exporter-registered nodes go: a rack label or a hostname
    pattern (validated by ``TopologyMapping.clean``)."""

    model = TopologyMapping
    extra = 0
    max_num = 1
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "rack_label",
                    "supernode_label",
                    "hostname_pattern",
                    "default_supernode",
                ],
                "description": _(
                    "A hostname pattern is applied to the cluster's known nodes when you save "
                    "(nodes without a rack, and nodes the previous pattern placed). A rack "
                    "label applies at the next scrape or push of each node without a rack "
                    "(labels arrive with its series). Nodes an inventory import placed stay."
                ),
            },
        )
    ]


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "kind",
        "hardware_model",
        "default_for_pages",
        "host_labels",
        "created_at",
    )
    list_filter = ("kind", "default_for_pages")
    actions = ["make_default_for_pages"]
    inlines = [TopologyMappingInline]

    def save_related(self, request, form, formsets, change) -> None:
        previous = TopologyMapping.objects.filter(cluster=form.instance).first()
        super().save_related(request, form, formsets, change)
        # Known nodes follow a hostname pattern now, not at their next push.
        moved = topology_mapping_apply(cluster=form.instance, previous=previous)
        mapping = TopologyMapping.objects.filter(cluster=form.instance).first()
        if mapping is None:
            return
        if mapping.hostname_pattern:
            self.message_user(
                request,
                ngettext(
                    "Hostname pattern applied: %(count)d node placed or moved.",
                    "Hostname pattern applied: %(count)d nodes placed or moved.",
                    moved,
                )
                % {"count": moved},
            )
        if mapping.rack_label:
            self.message_user(
                request,
                _(
                    "The rack label %(label)s applies at the next scrape or push of each node "
                    "without a rack (labels arrive with its series); none was moved now."
                )
                % {"label": mapping.rack_label},
            )

    @admin.action(
        description=_("Make default for pages (replaces the default of its side)"),
        permissions=["change"],
    )
    def make_default_for_pages(self, request, queryset) -> None:
        for cluster in queryset.order_by("name"):
            cluster_default_set(cluster)
        self.message_user(request, _("Default for pages updated."))


@admin.register(Supernode)
class SupernodeAdmin(admin.ModelAdmin):
    list_display = ("name", "cluster")
    list_filter = ("cluster",)


@admin.register(Rack)
class RackAdmin(admin.ModelAdmin):
    list_display = ("name", "supernode")
    list_filter = ("supernode__cluster",)


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = (
        "hostname",
        "cluster",
        "rack",
        "hardware_model",
        "cards_expected",
        "registered_by_exporter",
    )
    list_filter = ("cluster", "registered_by_exporter")
    search_fields = ("hostname",)
    raw_id_fields = ("rack",)

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        if change and "rack" in form.changed_data:
            # The entities' topology path follows the node (telemetry listens).
            nodes_placed.send(sender=Node, cluster=obj.cluster, node_ids=[obj.pk])


@admin.register(Accelerator)
class AcceleratorAdmin(admin.ModelAdmin):
    list_display = (
        "__str__",
        "vendor_id",
        "model_name",
        "mig_profile",
        "hardware_model",
        "health",
        "last_seen",
    )
    list_filter = ("health", "hardware_model", "node__cluster")
    search_fields = ("vendor_id", "node__hostname")
    raw_id_fields = ("node", "parent")


@admin.register(AcceleratorMove)
class AcceleratorMoveAdmin(admin.ModelAdmin):
    """Append-only record of chips seen under a new host: read, never edited."""

    list_display = ("accelerator", "from_hostname", "to_hostname", "seen_at")
    search_fields = ("accelerator__vendor_id", "from_hostname", "to_hostname")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Link)
class LinkAdmin(admin.ModelAdmin):
    list_display = ("key", "cluster", "kind", "endpoint_a", "endpoint_b", "status")
    list_filter = ("cluster", "kind", "status")
    search_fields = ("key",)


@admin.register(Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "tenant",
        "cluster",
        "kind",
        "criticality",
        "slo_ttft_ms",
        "slo_tpot_ms",
        "slo_p99_ms",
    )
    list_filter = ("cluster", "tenant", "kind", "criticality")
    search_fields = ("name", "series_selector")

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        if "series_selector" in form.changed_data:
            # The one code path for the selector (validated by the model's clean()).
            workload_selector_set(workload_id=obj.pk, selector=obj.series_selector)
