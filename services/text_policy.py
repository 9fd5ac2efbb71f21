"""One rule for every string people give that other people see: names, labels, descriptions.

Names and descriptions are shown on leaderboards, pages, CSV files and terminals next to other
teams' text, so none may carry a character that hides, moves or overwrites what surrounds it, and
two names that look the same must be the same string. :func:`check_text` refuses, naming the
first such character (``U+202E (RIGHT-TO-LEFT OVERRIDE)``):

- every control (Unicode category Cc: NUL, TAB, CR, LF, ESC, DEL, the C1 controls) and every
  format character (Cf: bidirectional embeddings, overrides and isolates such as U+202E, zero-width
  characters, U+00AD SOFT HYPHEN, the tag characters U+E0000-U+E007F, the byte-order mark);
- private-use characters (Co) and surrogates (Cs), which show as whatever a font makes of them;
- line and paragraph separators (Zl, Zp);
- the whole default-ignorable set of the Unicode standard (:data:`DEFAULT_IGNORABLE`: characters
  a renderer shows as nothing, such as U+3164 HANGUL FILLER, U+115F, U+FFA0, the variation
  selectors and the combining grapheme joiner), assigned or not;
- noncharacters (U+FDD0-U+FDEF and the last two code points of every plane).

A name (``kind="name"``) is stored in NFKC (full-width letters and ligatures fold into the
letters they look like), without surrounding spaces or U+2800 BRAILLE PATTERN BLANK, and must
hold a character that is not a space (category Zs, or U+2800). A description
(``kind="prose"``) is stored in NFC (NFKC would change its meaning: ``m²`` -> ``m2``), without
surrounding spaces, and may be empty. Unassigned code points outside those sets are accepted:
they are tomorrow's characters, and a name must not depend on the Unicode version of the server
that first saw it.

:func:`text_pattern` is the same rule as a regular expression, for the OpenAPI document (a
client generating values from the document makes only values the server accepts): Python's
``re`` and ECMA-262 in Unicode mode (the ``u`` or ``v`` flag, as JSON Schema's code-point
semantics and HTML's ``pattern`` attribute have it) read it alike.
"""

from __future__ import annotations

import unicodedata
from functools import cache
from typing import Literal

from services.errors import InvalidFieldError, InvalidInputError

TextKind = Literal["name", "prose"]

REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Zl", "Zp"})
"""Unicode general categories refused anywhere in a name or description."""

DEFAULT_IGNORABLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
"""Default_Ignorable_Code_Point of the Unicode Character Database (DerivedCoreProperties.txt,
stable since Unicode 14), as inclusive ranges: shown as nothing when not supported."""

BLANK_CHARACTERS = frozenset({"\u2800"})
"""Characters besides the spaces (Zs) that look blank: a name of only these is refused."""


def _is_noncharacter(code: int) -> bool:
    return 0xFDD0 <= code <= 0xFDEF or (code & 0xFFFE) == 0xFFFE


def _is_default_ignorable(code: int) -> bool:
    return any(low <= code <= high for low, high in DEFAULT_IGNORABLE)


def is_refused(char: str) -> bool:
    """Whether ``char`` (one code point) may not appear in a name or description."""
    code = ord(char)
    if 0x20 <= code < 0x7F:  # printable ASCII: the common case, decided at once
        return False
    return (
        unicodedata.category(char) in REFUSED_CATEGORIES
        or _is_default_ignorable(code)
        or _is_noncharacter(code)
    )


def _is_blank(char: str) -> bool:
    return unicodedata.category(char) == "Zs" or char in BLANK_CHARACTERS


def _strip_blanks(text: str) -> str:
    """``text`` without surrounding spaces or blanks: ``str.strip`` keeps U+2800, which is not
    whitespace, so ``alice`` followed by it would be a second name that looks the same."""
    start, end = 0, len(text)
    while start < end and (text[start].isspace() or _is_blank(text[start])):
        start += 1
    while end > start and (text[end - 1].isspace() or _is_blank(text[end - 1])):
        end -= 1
    return text[start:end]


def refused_character(text: str) -> str | None:
    """The first character of ``text`` the policy refuses, or None."""
    if text.isascii():
        return next((c for c in text if not 0x20 <= ord(c) < 0x7F), None)
    return next((c for c in text if is_refused(c)), None)


_CONTROL_NAMES = {
    0x00: "NUL",
    0x09: "TAB",
    0x0A: "LINE FEED",
    0x0D: "CARRIAGE RETURN",
    0x1B: "ESCAPE",
    0x7F: "DELETE",
}


def describe(char: str) -> str:
    """``U+202E (RIGHT-TO-LEFT OVERRIDE)``: how a message names one character."""
    name = _CONTROL_NAMES.get(ord(char)) or unicodedata.name(char, "")
    if not name:
        category = unicodedata.category(char)
        name = {"Cc": "a control character", "Co": "a private-use character"}.get(
            category, "an invisible or unassigned character"
        )
    return f"U+{ord(char):04X} ({name})"


def check_text(value: str, *, kind: TextKind = "name", max_length: int | None = None) -> str:
    """``value`` as stored (names: NFKC, stripped of surrounding spaces and U+2800;
    descriptions: NFC, stripped of surrounding spaces).

    :class:`InvalidInputError` (a ``ValueError``; the message does not name the field, callers
    that know it add it) for a refused character, a name holding nothing but spaces, or a value
    longer than ``max_length`` characters once normalized (NFKC may lengthen a string).
    """
    found = refused_character(value)
    normal = unicodedata.normalize("NFKC" if kind == "name" else "NFC", value)
    if found is None:
        found = refused_character(normal)  # NFKC never makes one; checked all the same
    if found is not None:
        what = "names" if kind == "name" else "text shown to others"
        raise InvalidInputError(
            f"must not contain {describe(found)}: control, format (bidirectional, zero-width), "
            f"private-use and invisible characters are not allowed in {what}"
        )
    if kind == "name" and value and all(_is_blank(c) for c in normal):
        raise InvalidInputError("must hold a visible character, not only spaces")
    normal = _strip_blanks(normal) if kind == "name" else normal.strip()
    if max_length is not None and len(normal) > max_length:
        raise InvalidInputError(
            f"{len(normal)} characters once normalized (NFKC), at most {max_length} allowed"
        )
    return normal


def check_field(
    field: str, value: str, *, kind: TextKind = "name", max_length: int | None = None
) -> str:
    """:func:`check_text` for entry points outside the API's schemas (the CLI, services):
    :class:`InvalidFieldError` naming ``field`` (the CLI's one line, exit code 2)."""
    try:
        return check_text(value, kind=kind, max_length=max_length)
    except InvalidInputError as exc:
        raise InvalidFieldError(field, str(exc)) from None


def _ranges(codes: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for code in codes:
        if out and out[-1][1] == code - 1:
            out[-1] = (out[-1][0], code)
        else:
            out.append((code, code))
    return out


def _class_item(code: int) -> str:
    # BMP code points as \\uXXXX escapes (read alike by Python's re and ECMA-262, and no lone
    # surrogate in the document); the others as themselves (ECMA-262 has no \\U escape). A range
    # of those is a range of code points in Unicode mode only (the u or v flag): without it
    # ECMA-262 reads two UTF-16 halves each and refuses the range as out of order, and no
    # pattern without astral ranges could refuse the tag and private-use planes.
    return f"\\u{code:04x}" if code <= 0xFFFF else chr(code)


def _class(ranges: list[tuple[int, int]]) -> str:
    return "".join(
        _class_item(low) if low == high else f"{_class_item(low)}-{_class_item(high)}"
        for low, high in ranges
    )


@cache
def text_pattern(kind: TextKind = "name") -> str:
    """The policy as a regular expression (Python ``re`` and ECMA-262 in Unicode mode, the ``u``
    or ``v`` flag, alike): names hold at least one visible character or nothing, descriptions
    anything the policy lets through. Built from this Python's Unicode tables on first use (a
    scan of every code point, about 0.1 s)."""
    refused: list[int] = []
    blank: list[int] = []
    for code in range(0x110000):
        char = chr(code)
        if is_refused(char):
            refused.append(code)
        elif _is_blank(char):
            blank.append(code)
    allowed = f"[^{_class(_ranges(refused))}]"
    if kind == "prose":
        return f"^{allowed}*$"
    visible = f"[^{_class(_ranges(sorted(refused + blank)))}]"
    return f"^(?:{allowed}*{visible}{allowed}*)?$"
