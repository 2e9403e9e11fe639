"""Exporters: findings out to Prometheus (gauges with bounded labels) and elsewhere."""
