"""The Textual console: the App, its screens and the glue to the per-host sessions."""
