"""Content hashes shared by the platform's aggregates."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from services.storage.errors import ConflictError

SHA256_HEX_RE = re.compile(r"^[0-9a-f]{64}$")
"""A sha256 digest as 64 lowercase hex digits (blobs, archives, artifacts)."""


def canonical_json_hash(value: Any) -> str:
    """Hex sha256 of ``value`` as canonical JSON (sorted keys, no spaces).

    Matches ``EvaluationConfig.content_hash()`` for ``config.model_dump(mode="json")``.
    """
    try:
        blob = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConflictError(f"value is not canonical JSON: {exc}") from exc
    return hashlib.sha256(blob.encode()).hexdigest()
