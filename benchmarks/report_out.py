"""How every benchmark here hands over its figures: JSON on stdout, and the same in --out FILE."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def emit(res: Any, out: Path | None, *, echo: bool = True) -> None:
    """Print `res` as JSON (unless `echo` is off: a run that prints as it goes) and write it to `out`."""
    text = json.dumps(res, indent=1)
    if out:  # first: a closed stdout must not lose the file
        out.write_text(text)
    if echo:
        print(text)
