"""Every pattern the OpenAPI document gives a parameter (query, path, header) compiles as Swagger
UI compiles it: ``new RegExp(pattern)``, without the ``u`` flag. A pattern that only Unicode mode
reads (ranges of code points beyond U+FFFF, as the text policy's) would make "Try it out" throw
on that operation instead of sending the request; such parameters are validated by the server
(a 422 naming the value) and carry no pattern."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from api.app import create_app
from services.settings import Settings
from support.ecma import run_node


def _document() -> dict[str, Any]:
    settings = Settings(_env_file=None, database_url="sqlite://", token_hmac_key="k")  # type: ignore[call-arg]
    return create_app(settings, senders={}).openapi()


def _patterns(schema: dict[str, Any], schemas: dict[str, Any]) -> Iterator[str]:
    if "$ref" in schema:
        yield from _patterns(schemas[schema["$ref"].rsplit("/", 1)[-1]], schemas)
        return
    if "pattern" in schema:
        yield schema["pattern"]
    for key in ("anyOf", "oneOf", "allOf"):
        for member in schema.get(key, []):
            yield from _patterns(member, schemas)
    if isinstance(schema.get("items"), dict):
        yield from _patterns(schema["items"], schemas)


def _parameter_patterns() -> dict[str, str]:
    """``"METHOD path in:name"`` -> its pattern, for every parameter with one."""
    document = _document()
    schemas = document["components"]["schemas"]
    found: dict[str, str] = {}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for param in operation.get("parameters", []):
                for i, pattern in enumerate(_patterns(param.get("schema", {}), schemas)):
                    found[f"{method.upper()} {path} {param['in']}:{param['name']}#{i}"] = pattern
    return found


def test_parameter_patterns_hold_no_code_point_beyond_the_bmp() -> None:
    patterns = _parameter_patterns()
    assert patterns  # the scan sees the document's patterns (cursors, phase names, ...)
    astral = [where for where, p in patterns.items() if any(ord(c) > 0xFFFF for c in p)]
    assert astral == []


def test_parameter_patterns_compile_without_the_unicode_flag(tmp_path: Path) -> None:
    script = (
        "const d = require(process.argv[1]); const bad = [];"
        "for (const [where, p] of Object.entries(d)) {"
        " try { new RegExp(p); } catch (e) { bad.push(where + ': ' + e.message); } }"
        "console.log(JSON.stringify(bad));"
    )
    assert run_node(script, _parameter_patterns(), tmp_path) == []
