"""Live monitoring of flows and guards: status, throughput history, Prometheus metrics, dashboard."""
