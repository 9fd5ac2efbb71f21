"""Names people give things (submissions, tokens, teams, webhooks): one Unicode form, nothing
that hides or reorders text.

Names are shown on leaderboards and pages next to other teams' names, so two names that look the
same must be the same string, and none may carry characters that move or hide what surrounds it.
:func:`normalize_identifier` returns the NFKC form (compatibility forms such as full-width letters
and ligatures folded into their plain letters) and refuses control characters (C0, DEL, C1: CR,
LF, TAB, ...), bidirectional controls (U+202A-U+202E RLO/LRO..., U+2066-U+2069 isolates, U+200E,
U+200F, U+061C), zero-width characters and line or paragraph separators.
:data:`IDENTIFIER_PATTERN` is the same rule as a regular expression (documented in OpenAPI).
"""

from __future__ import annotations

import re
import unicodedata

_REFUSED_RANGES = (
    "\x00-\x1f\x7f-\x9f"  # C0 controls (CR, LF, TAB, NUL, ...), DEL and C1 controls
    "\u061c"  # Arabic letter mark
    "\u200b-\u200f"  # zero-width space/non-joiner/joiner, LRM, RLM
    "\u2028-\u202e"  # line and paragraph separators, LRE/RLE/PDF/LRO/RLO
    "\u2060-\u2069"  # word joiner, invisible operators, LRI/RLI/FSI/PDI
    "\ufeff"  # zero-width no-break space (BOM)
)
IDENTIFIER_PATTERN = f"^[^{_REFUSED_RANGES}]*$"
_REFUSED = re.compile(f"[{_REFUSED_RANGES}]")


def normalize_identifier(value: str) -> str:
    """``value`` in NFKC; ``ValueError`` naming the first control, bidi or invisible character."""
    text = unicodedata.normalize("NFKC", value)
    found = _REFUSED.search(text)
    if found:
        char = found.group()
        name = unicodedata.name(char, "a control character")
        raise ValueError(
            f"must not contain U+{ord(char):04X} ({name}): control, bidirectional and "
            "invisible characters are not allowed in names"
        )
    return text
