"""API token generation and hashing.

A token is ``unm_`` + 43 URL-safe characters (256 random bits). The database stores only
``HMAC-SHA256(key, token)`` as hex: a stolen database dump yields no usable tokens, and without the
key (``Settings.token_hmac_key``, kept outside the database) the hashes cannot even be brute-forced
offline. Verification hashes the presented token and looks the hash up through a unique index, so
the comparison never runs character by character over secret material.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

TOKEN_PREFIX = "unm_"
TOKEN_RANDOM_BYTES = 32
# Characters of the plaintext kept in clear (``ApiToken.prefix``) to tell tokens apart in a UI.
DISPLAY_PREFIX_LENGTH = 12


def generate_token() -> str:
    """A new random plaintext token (shown to its owner once, never stored)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_RANDOM_BYTES)


def hash_token(token: str, key: str) -> str:
    """Hex HMAC-SHA256 of ``token`` under ``key`` (64 characters)."""
    if not key:
        raise ValueError("token HMAC key is empty: set UNMASK_TOKEN_HMAC_KEY")
    return hmac.new(key.encode(), token.encode(), hashlib.sha256).hexdigest()


def hashes_equal(a: str, b: str) -> bool:
    """Constant-time equality of two hex digests."""
    return hmac.compare_digest(a.encode(), b.encode())
