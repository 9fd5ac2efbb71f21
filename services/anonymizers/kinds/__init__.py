"""Anonymizer kinds: one module per kind, listed in ``registry.py`` (read its docstring first)."""
