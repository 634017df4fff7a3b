"""Prometheus remote-write 1.0: the wire format (generated protobuf classes) and its decoder."""
