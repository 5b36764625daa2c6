"""Textual widgets that render typed data from console/; no I/O here."""
