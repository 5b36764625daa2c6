"""Sharing a run's evidence outside the terminal: a self-contained HTML report, a Markdown
summary for an issue comment, and exports other tools read (OpenMetrics, llm-d's Benchmark
Report). Pure functions of what the store holds; nothing here talks to a host."""
