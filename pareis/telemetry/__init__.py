"""Observability: Prometheus metrics, structured logs and the per-process HTTP endpoints."""
