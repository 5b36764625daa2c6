"""Themes as data files (TCSS + TOML)."""
