"""Errors a person can act on. `UserError` means bad input: exit code 2, nothing written."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class UserError(Exception):
    """Bad input from the user (a suite file, a CLI argument). The CLI prints it and exits 2."""

    exit_code = 2


def choices_text(choices: Iterable[object]) -> str:
    return ", ".join(str(c) for c in choices)


def did_you_mean(value: object, choices: Iterable[object]) -> str:
    """'did you mean 'quickstart'?' for a typo of one of `choices` (the closest ones, case aside), else
    "": a newcomer's misspelt name gets its fix, not a list to read through."""
    if not isinstance(value, str):
        return ""
    names = {str(c).lower(): str(c) for c in choices}
    exact = [value.lower()] if value.lower() in names else []  # 'VLLM': 'vllm' alone
    close = exact or difflib.get_close_matches(value.lower(), list(names), n=3, cutoff=0.6)
    return f"did you mean {' or '.join(repr(names[c]) for c in close)}?" if close else ""


def choices_hint(value: object, choices: Iterable[object], label: str = "valid") -> str:
    """The tail of every "unknown NAME" message, "did you mean 'vllm'? valid: hf, trtllm, vllm": a misspelt
    engine, key, GPU or format reads the same everywhere (the nearest names first, then all of them)."""
    names = [str(c) for c in choices]
    hint = did_you_mean(value, names)
    return f"{hint + ' ' if hint else ''}{label}: {choices_text(names) or 'none'}"


class SuiteError(UserError):
    """A suite file that cannot be run: names the file, the key, the bad value, the valid choices."""

    def __init__(
        self,
        file: str,
        message: str,
        *,
        key: str | None = None,
        value: object = None,
        choices: Iterable[object] | None = None,
    ) -> None:
        self.file, self.key, self.value = file, key, value
        self.choices = list(choices) if choices is not None else None
        parts = [f"{file}:"]
        if key is not None:
            parts.append(f"key {key!r}:")
        parts.append(message)
        if value is not None:
            parts.append(f"(got {value!r})")
        text = " ".join(parts)
        if self.choices:
            text += f"; {choices_hint(value, self.choices)}"
        super().__init__(text)


class NotSaved(Exception):
    """Measured results that could not be written (a full disk, a lost mount): exit code 3, apart from
    a failed case's 1, because the answer was measured but not kept. The message names the file, the
    OS error and where the cases it lacks went."""

    exit_code = 3
