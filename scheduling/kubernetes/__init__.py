"""Kubernetes as a scheduler source: Pods, Nodes, Kueue and Volcano objects read through the
official ``kubernetes`` client (``client``) and normalised into the sync's records
(``normalise``). Tested on recorded objects only: no API server runs in this repository's CI."""
