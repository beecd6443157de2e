"""Prometheus metrics of the owner: the GPUs and the queue at ``http://127.0.0.1:9835/metrics`` when the
config says ``[metrics] listen`` (off by default). ``listen`` checks where it may listen (pure, read by the
config check), ``exporter`` builds the series (prometheus_client), ``server`` serves them and
``endpoint`` ties them to the owner. docs/metrics.md explains each series.
"""
