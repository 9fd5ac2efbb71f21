"""A submission's optional public description and its paper / code links.

Shown on the leaderboard and the submission page, so they are checked when stored: the
description is one line of plain text of at most :data:`MAX_DESCRIPTION_CHARS` characters under
the text policy (``services.text_policy``), the links are
absolute ``http(s)`` URLs (no ``javascript:``, ``data:``, relative or protocol-relative links
that a page would turn into a script or an open redirect); NUL is refused everywhere.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from services.errors import InvalidInputError
from services.text_policy import check_text

MAX_DESCRIPTION_CHARS = 2000
"""Longest accepted description (characters)."""

MAX_URL_CHARS = 2048
"""Longest accepted paper / code URL (characters; the column's width)."""


def check_description(value: str | None, field: str = "description") -> str | None:
    """``value`` under the text policy (``services.text_policy``: NFC, stripped, no control,
    format or invisible character; None or empty: None); :class:`InvalidInputError` naming
    ``field``."""
    if value is None:
        return None
    if "\x00" in value:
        raise InvalidInputError(f"{field}: contains a NUL character")
    if len(value.strip()) > MAX_DESCRIPTION_CHARS:
        raise InvalidInputError(
            f"{field}: {len(value.strip())} characters, at most {MAX_DESCRIPTION_CHARS} allowed"
        )
    try:
        value = check_text(value, kind="prose", max_length=MAX_DESCRIPTION_CHARS)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{field}: {exc}") from None
    return value or None


def check_link(value: str | None, field: str) -> str | None:
    """An absolute http(s) URL with a host, or None; :class:`InvalidInputError` naming ``field``."""
    if value is None:
        return None
    if "\x00" in value:
        raise InvalidInputError(f"{field}: contains a NUL character")
    value = value.strip()
    if not value:
        return None
    if len(value) > MAX_URL_CHARS:
        raise InvalidInputError(f"{field}: longer than {MAX_URL_CHARS} characters")
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in value):
        raise InvalidInputError(f"{field}: contains whitespace or a control character")
    try:
        parts = urlsplit(value)
    except ValueError as exc:
        raise InvalidInputError(f"{field}: not a URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise InvalidInputError(f"{field}: must be an absolute http:// or https:// URL")
    return value
