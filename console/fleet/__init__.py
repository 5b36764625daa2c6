"""The fleet: one summary per host (what the overview screen and the exporter show), and the
OpenMetrics exporter that serves them. `models` is plain data (widgets may render it); the rest
reads sessions and the run history."""
