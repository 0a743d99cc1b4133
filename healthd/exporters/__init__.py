"""Exporters only read results: JSON and table reports here, Prometheus and traces beside."""
