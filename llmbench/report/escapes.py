"""What may not reach a reader raw, from a label, a param or a reason: one rule for the terminal and the
HTML report. A control character (C0 but tab and newline, DEL, C1: an ESC or a CSI moves the cursor,
clears the screen or retitles the window; a CR overwrites the line; a NUL or a BEL is no text), a format
character (Unicode Cf: bidi overrides and isolates that reorder what follows, zero-width spaces and
joiners that hide a difference), a line or paragraph separator and a lone surrogate are written as the
escape Python would write (`\\x1b`, `\\u202e`). Files keep the original text."""

from __future__ import annotations

import re
import unicodedata

_CANDIDATE = re.compile(r"[^\t\n\x20-\x7e]")  # printable ASCII, tab and newline are never escaped
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _escape(ch: str) -> str:
    if unicodedata.category(ch) not in UNSAFE_CATEGORIES:
        return ch
    n = ord(ch)
    return f"\\x{n:02x}" if n <= 0xFF else f"\\u{n:04x}" if n <= 0xFFFF else f"\\U{n:08x}"


def escape_controls(text: str) -> str:
    """`text` with every control, format (Cf), separator (Zl, Zp) and surrogate character written as its
    escape; everything else as it is."""
    return _CANDIDATE.sub(lambda m: _escape(m.group()), text)
