"""One text policy for every string shown to others (services/text_policy.py): each class of
refused character at each entry point outside HTTP (the API's field types, the evaluation config,
the admin CLI), the pattern documented in OpenAPI equal to the rule, the default-ignorable table
equal to the Unicode data."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from api.schemas import LabelText, NameText, Prose, ShortText
from services.errors import ConfigError, InvalidInputError
from services.text_policy import (
    DEFAULT_IGNORABLE,
    TextKind,
    check_text,
    refused_character,
    text_pattern,
)
from support.ecma import run_node

# One sample of each class of character the policy refuses: (id, text, code point named).
REFUSED = [
    ("soft-hyphen", "ab\u00adc", "U+00AD"),
    ("tag-character", "team\U000e0041", "U+E0041"),
    ("hangul-filler", "\u3164", "U+3164"),
    ("hangul-filler-inside", "a\u3164b", "U+3164"),
    ("private-use", "a\ue000b", "U+E000"),
    ("private-use-plane-15", "a\U000f0001", "U+F0001"),
    ("bidi-override", "evil\u202egnp.exe", "U+202E"),
    ("bidi-isolate", "iso\u2066x", "U+2066"),
    ("carriage-return", "a\rb", "U+000D"),
    ("line-feed", "line\nfeed", "U+000A"),
    ("escape", "red\x1b[31m", "U+001B"),
    ("tab", "tab\there", "U+0009"),
    ("c1-control", "a\x85b", "U+0085"),
    ("zero-width-space", "zero\u200bwidth", "U+200B"),
    ("zero-width-joiner", "a\u200db", "U+200D"),
    ("byte-order-mark", "\ufeffname", "U+FEFF"),
    ("line-separator", "a\u2028b", "U+2028"),
    ("variation-selector", "a\ufe0fb", "U+FE0F"),
    ("combining-grapheme-joiner", "a\u034fb", "U+034F"),
    ("unassigned-ignorable", "a\u2065b", "U+2065"),
    ("noncharacter", "a\ufdd0b", "U+FDD0"),
]
ONLY_SPACES = ["   ", "\u3000", "\u00a0 \u2003", "\u2800"]
ACCEPTED = ["pitch-shift v2", "Équipe de Lyon", "語音匿名化", "team 🎙", "O'Brien & Co. (2026)"]
NAME_TYPES = {"NameText": NameText, "ShortText": ShortText, "LabelText": LabelText}


@pytest.mark.parametrize(("text", "named"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
@pytest.mark.parametrize("kind", ["name", "prose"])
def test_each_class_of_character_is_refused_naming_it(text: str, named: str, kind: str) -> None:
    with pytest.raises(InvalidInputError, match=re.escape(named)):
        check_text(text, kind=kind)  # type: ignore[arg-type]
    assert not re.fullmatch(text_pattern(kind), text)  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "named"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
@pytest.mark.parametrize("type_name", [*NAME_TYPES, "Prose"])
def test_the_api_field_types_refuse_each_class(text: str, named: str, type_name: str) -> None:
    field = NAME_TYPES.get(type_name) or Prose(2000)
    with pytest.raises(ValidationError, match=re.escape(named)):
        TypeAdapter(field).validate_python(text)


@pytest.mark.parametrize("text", ONLY_SPACES)
def test_a_name_of_only_spaces_is_refused_a_description_is_emptied(text: str) -> None:
    with pytest.raises(InvalidInputError, match="only spaces"):
        check_text(text)
    assert not re.fullmatch(text_pattern("name"), text)
    for field in NAME_TYPES.values():
        with pytest.raises(ValidationError, match="only spaces"):
            TypeAdapter(field).validate_python(text)
    if text != "\u2800":  # braille blank is not a space: kept in a description
        assert check_text(text, kind="prose") == ""


@pytest.mark.parametrize("text", ACCEPTED)
def test_ordinary_text_passes_unchanged(text: str) -> None:
    assert check_text(text) == text
    assert check_text(text, kind="prose") == text
    assert re.fullmatch(text_pattern("name"), text)
    assert re.fullmatch(text_pattern("prose"), text)


def test_names_are_nfkc_and_stripped_descriptions_nfc() -> None:
    # Full-width letters and a ligature fold into the plain letters they look like.
    assert TypeAdapter(NameText).validate_python("\uff30itch \ufb01x") == "Pitch fix"
    assert check_text("  Caf\u0065\u0301 ") == "Caf\u00e9"
    assert check_text("m\u00b2 per s", kind="prose") == "m\u00b2 per s"  # NFKC would say m2
    assert TypeAdapter(ShortText).validate_python("") == ""
    with pytest.raises(InvalidInputError, match="at most 5"):
        check_text("\ufdfa", max_length=5)  # one character, 18 once normalized


def test_a_name_is_stripped_of_surrounding_braille_blanks() -> None:
    """U+2800 looks like a space: ``alice`` followed by it would be another name that looks
    the same. Inside a name it stays (as a space does); a description keeps it."""
    assert check_text("\u2800alice\u2800") == "alice"
    assert check_text(" \u2800 alice \u2800\u3000") == "alice"
    assert TypeAdapter(NameText).validate_python("alice\u2800") == "alice"
    assert check_text("a\u2800b") == "a\u2800b"
    assert check_text("alice\u2800", kind="prose") == "alice\u2800"


def test_nul_keeps_its_own_message() -> None:
    with pytest.raises(ValidationError, match="NUL"):
        TypeAdapter(NameText).validate_python("a\x00b")


def test_the_documented_pattern_is_the_rule_for_every_code_point_class() -> None:
    """Sampled across the whole code space: the pattern and the validator agree."""
    name, prose = re.compile(text_pattern("name")), re.compile(text_pattern("prose"))
    for code in [*range(0, 0x3400), *range(0xD7F0, 0x10000), *range(0xE0000, 0xE0200, 7)]:
        char = chr(code)
        refused = refused_character(char) is not None
        assert (prose.fullmatch(f"a{char}") is None) == refused, hex(code)
        assert (name.fullmatch(f"a{char}") is None) == refused, hex(code)


def test_the_default_ignorable_table_is_the_unicode_property() -> None:
    regex = pytest.importorskip("regex")
    from services.text_policy import _is_default_ignorable

    prop = regex.compile(r"\p{Default_Ignorable_Code_Point}")
    differ = [
        hex(c) for c in range(0x110000) if bool(prop.match(chr(c))) != _is_default_ignorable(c)
    ]
    assert not differ, differ[:20]
    assert DEFAULT_IGNORABLE[0] == (0x00AD, 0x00AD)


def test_a_config_name_is_under_the_policy() -> None:
    from services.pipeline.config import parse_config

    with pytest.raises(ConfigError, match=r"name: .*U\+202E"):
        parse_config({"name": "evil\u202eexe"})
    with pytest.raises(ConfigError, match="only spaces"):
        parse_config({"name": "  "})
    assert parse_config({"name": "  \uff41 run "}).name == "a run"


@pytest.fixture()
def admin_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    from services.settings import get_settings
    from services.storage.migrate import upgrade_database

    url = f"sqlite:///{tmp_path / 'unmask.db'}"
    upgrade_database(url)
    monkeypatch.setenv("UNMASK_DATABASE_URL", url)
    monkeypatch.setenv("UNMASK_TOKEN_HMAC_KEY", "cli-test-key")
    get_settings.cache_clear()
    yield url
    get_settings.cache_clear()


@pytest.mark.parametrize(("text", "named"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_the_admin_cli_refuses_each_class_in_one_line(
    admin_database: str, capsys: pytest.CaptureFixture[str], text: str, named: str
) -> None:
    from cli.main import main

    assert main(["admin", "create-team", "lab", "--display-name", text]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "display_name" in err and named in err, err
    assert main(["admin", "create-token", "--team", "lab", "--create-team", "--name", text]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "name:" in err and named in err, err
    assert main(["admin", "create-token", "--team", "lab"]) == 2  # the refused token made no team
    assert "team 'lab' not found" in capsys.readouterr().err


def test_the_documented_pattern_reads_alike_in_ecma_262_unicode_mode(tmp_path: Path) -> None:
    """JSON Schema validators (code-point semantics) and HTML's ``pattern`` attribute compile the
    pattern with the ``u`` or ``v`` flag: there it is the rule Python's ``re`` reads."""
    samples = [*ACCEPTED, *ONLY_SPACES, *(r[1] for r in REFUSED), "a\U0001bca1", "a\U0010fffd"]
    kinds: tuple[TextKind, ...] = ("name", "prose")
    python = {k: [re.fullmatch(text_pattern(k), t) is not None for t in samples] for k in kinds}
    script = (
        "const d = require(process.argv[1]); const out = {};"
        "for (const flag of ['u', 'v']) for (const k of ['name', 'prose']) {"
        " const r = new RegExp(d[k], flag); out[k + flag] = d.samples.map(s => r.test(s)); }"
        "console.log(JSON.stringify(out));"
    )
    ecma = run_node(script, {k: text_pattern(k) for k in kinds} | {"samples": samples}, tmp_path)
    for kind, matches in python.items():
        assert ecma[f"{kind}u"] == matches and ecma[f"{kind}v"] == matches, kind
