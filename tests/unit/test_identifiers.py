"""Names are NFKC and free of control, bidi and invisible characters (services/identifiers.py),
and the API's name fields apply that rule and document it."""

from __future__ import annotations

import re

import pytest
from pydantic import TypeAdapter, ValidationError

from api.schemas import LabelText, NameText, ShortText
from services.identifiers import IDENTIFIER_PATTERN, normalize_identifier


@pytest.mark.parametrize(
    "name",
    [
        "evil\u202egnp.exe",
        "a\rb",
        "tab\there",
        "line\nfeed",
        "zero\u200bwidth",
        "iso\u2066x",
        "\x85",
    ],
)
@pytest.mark.parametrize("kind", [NameText, ShortText, LabelText])
def test_control_bidi_and_invisible_characters_are_refused(name: str, kind: object) -> None:
    with pytest.raises(ValidationError, match=r"must not contain U\+[0-9A-F]{4}"):
        TypeAdapter(kind).validate_python(name)
    assert not re.match(IDENTIFIER_PATTERN, name)


def test_names_are_stored_in_nfkc() -> None:
    # Full-width letters and a ligature fold into the plain letters they look like.
    assert TypeAdapter(NameText).validate_python("\uff30itch \ufb01x") == "Pitch fix"
    assert normalize_identifier("Caf\u0065\u0301") == "Caf\u00e9"
    for plain in ("pitch-shift v2", "Équipe de Lyon", "語音匿名化", "team 🎙"):
        assert normalize_identifier(plain) == plain
        assert re.match(IDENTIFIER_PATTERN, plain)


def test_nul_keeps_its_own_message() -> None:
    with pytest.raises(ValidationError, match="NUL"):
        TypeAdapter(NameText).validate_python("a\x00b")
