"""Signals inventory sends to the apps above it (which it may not import: the DAG points up).

``nodes_placed`` — existing nodes got a new rack (an inventory import, a topology mapping):
``cluster`` and ``node_ids``. Telemetry keeps its entities' topology path in step with it, so a
node registered by an exporter before it had a rack shows in its rack's heatmap cells.
"""

from django.dispatch import Signal

nodes_placed = Signal()
