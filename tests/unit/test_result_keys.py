"""ResultKey: the one format and the one parse of stored result keys."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from services.platform.leaderboard import det_key, summary_key
from services.results.keys import ResultKey

ROOT = Path(__file__).resolve().parents[2]


def test_format_and_parse_round_trip() -> None:
    key = ResultKey("semi-informed", "plda", "eer")
    assert key.format() == "semi-informed|plda|eer" == summary_key("semi-informed", "plda", "eer")
    assert ResultKey.parse(key.format()) == key
    assert key.pair == ResultKey("semi-informed", "plda") == ResultKey.parse("semi-informed|plda")
    assert key.pair.format() == det_key("semi-informed", "plda")
    assert key.pair.with_metric("eer") == key
    assert sorted([ResultKey("b", "x"), ResultKey("a", "y")])[0].scenario == "a"


def test_pages_name_a_key_by_its_label() -> None:
    from api.pages.rendering import templates

    assert ResultKey("ignorant", "cosine").label == "ignorant, cosine"
    assert ResultKey("ignorant", "cosine", "eer").label == "ignorant, cosine, eer"
    assert templates.env.filters["result_key"]("semi-informed|plda") == "semi-informed, plda"


@pytest.mark.parametrize("text", ["", "a", "a|b|c|d", "a||c", "|b"])
def test_parse_refuses_what_is_not_a_key(text: str) -> None:
    with pytest.raises(ValueError):
        ResultKey.parse(text)
    assert ResultKey.parse_value_key(text) is None


def test_parts_cannot_hold_the_separator() -> None:
    with pytest.raises(ValueError, match="holding"):
        ResultKey("a|b", "cosine", "eer")
    assert ResultKey.parse_value_key("a|b") is None  # a pair, not a value key


# Splitting, joining or rewriting "|" elsewhere (code, templates, scripts): the key type is the
# only place. Unrelated uses of the character are allowed by name: a manifest line format, an
# array hash's input, a word list, a Markdown table cell's escape, a regular expression's
# alternation.
ALLOWED = {
    "services/anonymizers/container_sandbox.py",
    "services/corpus/importers.py",
    "services/attacker/embeddings.py",
    "services/corpus/espeak.py",
    "services/pipeline/config_reference.py",
}
SURGERY = re.compile(
    r"""(split|count|replace|replaceAll|indexOf)\(\s*["']\|["']|["']\|["']\.join|\}\|\{"""
)
SOURCES = ("*.py", "*.html", "*.js")


def test_no_string_surgery_on_result_keys_outside_the_key_type() -> None:
    offenders = []
    for package in ("services", "api", "cli", "workers"):
        paths = {path for pattern in SOURCES for path in (ROOT / package).rglob(pattern)}
        for path in sorted(paths):
            rel = path.relative_to(ROOT).as_posix()
            if (
                rel.startswith("unmask_client/api_client/")
                or rel in ALLOWED
                or rel == "services/results/keys.py"
            ):
                continue
            offenders += [f"{rel}: {m.group(0)}" for m in SURGERY.finditer(path.read_text())]
    assert offenders == []
