"""What a JSON value may hold to be stored, hashed and echoed back: one rule for every JSON input.

Python's ``json`` reads more than PostgreSQL's ``jsonb``, the canonical hash and a UTF-8 error
message can take: a lone UTF-16 surrogate (``"\\ud800"``) is a Python ``str`` that UTF-8 cannot
encode; ``1e309``, ``NaN`` and ``Infinity`` become non-finite floats that canonical JSON refuses;
an integer of 400 digits overflows every float or C integer it meets later. :func:`json_problem`
finds the first such value and names where it is, so the caller can refuse the input before it
reaches storage (the API answers 422 naming the field).
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import AfterValidator, WithJsonSchema

JSON_INT_MAX = 2**63 - 1
"""Largest magnitude of a JSON integer (a signed 64-bit integer, PostgreSQL ``bigint``)."""

JSON_MAX_DEPTH = 64
"""Deepest nesting of objects and arrays."""

JSON_TEXT_PATTERN = r"^[^\x00\ud800-\udfff]*$"
"""Strings and keys as a regular expression: no NUL, no lone UTF-16 surrogate."""

JSON_VALUE_SCHEMA: dict[str, Any] = {
    "description": "Any JSON value that storage holds: strings and keys without NUL or lone "
    "surrogates, numbers within +-(2^63 - 1), at most 64 levels deep.",
    "anyOf": [
        {"type": "null"},
        {"type": "boolean"},
        {"type": "string", "pattern": JSON_TEXT_PATTERN},
        {"type": "number", "minimum": -JSON_INT_MAX, "maximum": JSON_INT_MAX},
        {"type": "array", "items": {"$ref": "#/components/schemas/JsonValue"}},
        {
            "type": "object",
            "propertyNames": {"pattern": JSON_TEXT_PATTERN},
            "additionalProperties": {"$ref": "#/components/schemas/JsonValue"},
        },
    ],
}
""":data:`JsonValue` as JSON Schema (an OpenAPI component, recursive through its ``$ref``)."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_\-]+$")


def shown_key(key: str) -> str:
    """A key as it may appear in a message: plain keys as they are, others escaped and quoted
    (a key holding a lone surrogate cannot be encoded as UTF-8)."""
    return key if _PLAIN_KEY.match(key) else ascii(key)


def _join(path: str, part: str) -> str:
    return f"{path}.{part}" if path else part


def json_problem(value: Any, path: str = "", depth: int = 0) -> tuple[str, str] | None:
    """``(where, what)`` of the first value of ``value`` (parsed JSON) that cannot be stored,
    hashed or echoed; None when all can. ``where`` is a dotted path (list items by index)."""
    if depth > JSON_MAX_DEPTH:
        return path, f"nested deeper than {JSON_MAX_DEPTH} levels"
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found:
            code = f"U+{ord(found.group()):04X}"
            return path, f"holds a lone UTF-16 surrogate ({code}), which is not valid Unicode text"
        return None
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        if abs(value) > JSON_INT_MAX:
            return path, f"integer of {len(str(abs(value)))} digits is outside +-(2^63 - 1)"
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return path, f"number {value} is not finite (JSON numbers above ~1.8e308 overflow)"
        if abs(value) > JSON_INT_MAX:
            return path, f"number {value:g} is outside +-(2^63 - 1)"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            where = _join(path, shown_key(str(key)))
            if _SURROGATE.search(str(key)):
                return where, "key holds a lone UTF-16 surrogate, which is not valid Unicode text"
            problem = json_problem(item, where, depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            problem = json_problem(item, _join(path, str(index)), depth + 1)
            if problem:
                return problem
        return None
    return None


NUL_MESSAGE = "must not contain the NUL character (U+0000)"


def _json_without_nul(value: Any, path: str = "") -> None:
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError(f"{path or 'value'}: {NUL_MESSAGE}")
    elif isinstance(value, dict):
        for key, item in value.items():
            _json_without_nul(key, f"{path}.{key}".lstrip(".") if "\x00" not in key else path)
            _json_without_nul(item, f"{path}.{key}".lstrip("."))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _json_without_nul(item, f"{path}[{index}]")


def _object_without_nul(value: dict[str, Any]) -> dict[str, Any]:
    _json_without_nul(value)
    return value


# A JSON object stored in a jsonb column: no NUL in any key or string; every value within what
# storage holds (json_problem, enforced for every API body by api/middleware/request_body.py).
# The OpenAPI document names the rule through the JsonValue component (JSON_VALUE_SCHEMA, added
# by api/app.py).
JsonObject = Annotated[
    dict[str, Any],
    AfterValidator(_object_without_nul),
    WithJsonSchema(
        {
            "type": "object",
            "propertyNames": {"pattern": JSON_TEXT_PATTERN},
            "additionalProperties": {"$ref": "#/components/schemas/JsonValue"},
        }
    ),
]
