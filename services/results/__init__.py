"""Names of stored result values (``keys.py``)."""
