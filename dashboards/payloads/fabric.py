"""The fabric graph as a Plotly figure: one line trace per link class (state, and load for
live links) and one marker trace per node role.

Every state is told apart by colour *and* dash (and failed links carry a marker at their
midpoint), so the graph reads in greyscale and with colour-vision deficiencies; colours are
the Okabe–Ito palette of :mod:`dashboards.charts`.
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from cluster_portal.web.charttext import chart_text
from cluster_portal.web.units import format_value
from dashboards.charts import OKABE_ITO, Figure
from dashboards.selectors.fabric import FabricEdge, FabricGraph, FabricNode
from inventory.models import Link

BLUE, ORANGE, _GREEN, VERMILLION, PURPLE = OKABE_ITO[:5]
GREY = "#555555"
BUSY, SATURATED = 0.5, 0.9


def _edge_class(edge: FabricEdge, measured: bool) -> str:
    if edge.rerouting:
        return "rerouting"
    if edge.status == "down":
        return "down"
    if edge.status == "degraded":
        return "degraded"
    if not measured or edge.utilization is None or edge.utilization < BUSY:
        return "up"
    return "saturated" if edge.utilization >= SATURATED else "busy"


def _classes(measured: bool) -> list[tuple[str, str, dict, str | None]]:
    """(class, legend name, line style, midpoint marker symbol) in legend order."""
    up = _("up, load under 50%") if measured else _("up")
    return [
        ("up", up, {"color": BLUE, "width": 1.5, "dash": "solid"}, None),
        ("busy", _("up, load 50–90%"), {"color": BLUE, "width": 3, "dash": "solid"}, None),
        (
            "saturated",
            _("up, load at least 90%"),
            {"color": BLUE, "width": 5, "dash": "solid"},
            None,
        ),
        ("degraded", _("degraded"), {"color": ORANGE, "width": 2.5, "dash": "dash"}, "diamond"),
        ("down", _("down"), {"color": VERMILLION, "width": 2.5, "dash": "dot"}, "x"),
        (
            "rerouting",
            _("traffic being rerouted (self-healing)"),
            {"color": PURPLE, "width": 3, "dash": "dashdot"},
            "x-open",
        ),
    ]


def _kind_label(kind: str) -> str:
    return str(dict(Link.Kind.choices).get(kind, kind))


def _status_label(edge: FabricEdge) -> str:
    label = str(dict(Link.Status.choices).get(edge.status, edge.status))
    if edge.rerouting:
        label = _("%(status)s, traffic being rerouted (self-healing)") % {"status": label}
    return label


def edge_hover(edge: FabricEdge) -> str:
    """What hovering a link says: its key, ends, kind, state, capacity and load."""
    lines = [
        _("Link %(key)s") % {"key": chart_text(edge.key)},
        f"{chart_text(edge.endpoint_a)} ↔ {chart_text(edge.endpoint_b)}",
        _("%(kind)s · %(status)s")
        % {"kind": _kind_label(edge.kind), "status": _status_label(edge)},
        _("capacity %(capacity)s · utilization %(load)s")
        % {
            "capacity": format_value(edge.capacity_bytes_per_s, "bytes_per_second"),
            "load": format_value(edge.utilization, "ratio"),
        },
    ]
    if edge.parallel_not_up:
        lines.append(
            _("%(count)d parallel link(s) not up: their traffic is spread over the live ones")
            % {"count": edge.parallel_not_up}
        )
    return "<br>".join(lines)


def node_hover(node: FabricNode) -> str:
    role = {"rack": _("rack"), "switch": _("switch"), "external": _("outside this supernode")}
    return "<br>".join(
        [
            f"{chart_text(node.key)} ({role[node.role]})",
            _("%(links)d link(s), %(not_up)d not up")
            % {"links": node.links, "not_up": node.not_up},
        ]
    )


def _short(node: FabricNode, supernode: str) -> str:
    prefix = supernode + "/"
    return chart_text(node.key[len(prefix) :] if node.key.startswith(prefix) else node.key)


def _label_side(node: FabricNode) -> str:
    # Labels point away from the centre, where the links converge.
    if node.y > 0.05:
        return "top center"
    if node.y < -0.05:
        return "bottom center"
    if node.x == 0:
        return "top right"
    return "middle right" if node.x > 0 else "middle left"


def fabric_figure(graph: FabricGraph) -> Figure:
    """The graph of ``graph.supernode`` (an empty figure when it has no links)."""
    measured = graph.utilization_measured
    traces = []
    for cls, name, line, symbol in _classes(measured):
        edges = [e for e in graph.edges if _edge_class(e, measured) == cls]
        if not edges:
            continue
        xs, ys, text = [], [], []
        for edge in edges:
            hover = edge_hover(edge)
            xs += [*edge.xs, None]
            ys += [*edge.ys, None]
            text += [hover] * len(edge.xs) + [None]
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": name,
                "legendgroup": cls,
                "x": xs,
                "y": ys,
                "text": text,
                "hoverinfo": "text",
                "line": line,
            }
        )
        if symbol:
            # A mark at each failed link's middle: a shape, not only a colour and a dash.
            middle = [len(e.xs) // 2 for e in edges]
            traces.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": name,
                    "legendgroup": cls,
                    "showlegend": False,
                    "x": [e.xs[m] for e, m in zip(edges, middle, strict=True)],
                    "y": [e.ys[m] for e, m in zip(edges, middle, strict=True)],
                    "text": [edge_hover(e) for e in edges],
                    "hoverinfo": "text",
                    "marker": {"symbol": symbol, "size": 11, "color": line["color"]},
                }
            )
    supernode = graph.supernode.name if graph.supernode else ""
    for role, name, marker in (
        ("rack", _("racks"), {"symbol": "square", "size": 16, "color": GREY}),
        ("switch", _("switches"), {"symbol": "diamond", "size": 18, "color": "#000000"}),
        (
            "external",
            _("outside this supernode"),
            {"symbol": "circle-open", "size": 14, "color": "#000000", "line": {"width": 2}},
        ),
    ):
        nodes = [n for n in graph.nodes if n.role == role]
        if not nodes:
            continue
        traces.append(
            {
                "type": "scatter",
                "mode": "markers+text",
                "name": name,
                "x": [n.x for n in nodes],
                "y": [n.y for n in nodes],
                "text": [_short(n, supernode) for n in nodes],
                "textposition": [_label_side(n) for n in nodes],
                "hovertext": [node_hover(n) for n in nodes],
                "hoverinfo": "text",
                "marker": marker,
            }
        )
    hidden = {"visible": False, "showgrid": False, "zeroline": False}
    # Room for the outermost ring plus its labels and loops.
    extent = max((max(abs(n.x), abs(n.y)) for n in graph.nodes), default=1.0) + 0.3
    return {
        "data": traces,
        "layout": {
            "title": {"text": _("Fabric of supernode %(name)s") % {"name": chart_text(supernode)}},
            "margin": {"l": 10, "r": 10, "t": 50, "b": 10},
            "hovermode": "closest",
            "showlegend": True,
            "legend": {"orientation": "h", "y": -0.02, "yanchor": "top"},
            "xaxis": {**hidden, "range": [-extent, extent]},
            # Equal scales keep the rack circle round at every width.
            "yaxis": {**hidden, "range": [-extent, extent], "scaleanchor": "x", "scaleratio": 1},
        },
    }
