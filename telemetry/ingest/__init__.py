"""Telemetry's write path: everything that turns outside data into store rows.

Receivers (``json_batch``, ``prometheus``, ``remote_write``, ``scrape``) parse and validate a
whole batch, ``exposition``/``parse``/``mapping`` turn exporter families into catalogue samples,
``registry`` resolves metrics and entities, ``limits`` holds the caps every path shares, and
``twin`` is the digital twin's writer. All of them end in ``telemetry.store``. See
``docs/architecture.md`` for the layers and the write path end to end.
"""
