"""Secrets out of everything llmbench writes or prints: a result set (its params, and so its case ids,
its info, reasons and tracebacks), a bundle's files, a log, the terminal. One mechanism, here: `redact`
for text, `redact_value` for a JSON-like value (an argv list among the params), applied where text leaves
the process. What it hides:

- the userinfo of any URL (`https://user:TOKEN@host`, `git+https://TOKEN@github.com/x.git` in a pip
  freeze, `ray://user:pw@head:10001`),
- the value of a secret-named query key (`?token=`, `&access-token=`, `private_token`, `X-Amz-Signature`,
  `sig`, `api_key`, `password`: `secret_name`),
- the value of a secret-named variable (`RAY_AUTH_TOKEN=...`, `"HF_TOKEN": "..."`),
- the value of a secret-named flag (`--api-key`, `--hf-token`, `--auth`, `--password`, `--secret`, `--key`:
  `secret_name`; and `-p`, a password's short flag) written `--flag=value` or `--flag value`, also as
  separate words of a command line (`["--api-key", "K"]` in a suite or its JSON, `'--api-key', 'K'` as
  Python prints a list),
- a bearer credential (`Authorization: Bearer X`, as Ray's token authentication sends its token).

A text without any of these comes back unchanged, so a case id hashed from redacted params is the id of
the same params before. `-p`'s value is kept where it is a port, a `{placeholder}` or a path.

What a result set is written with besides (`machine_paths`, in `results.to_json` and the packaged
reference data): no absolute path of the machine that measured it. A path under the working folder or the
llmbench checkout is written relative to it (`serving-logs/x.log`, `llmbench/harness/worker.py` in a
traceback); under the temporary folder as `$TMPDIR/...`, under the Python environment as
`$PYTHON_PREFIX/...`, under the home folder as `~/...`. A case id is the hash of its params as written so
(`ids.case_id`): a set's stored params give back its ids. System paths (`/usr/lib/...`) are kept."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterable, Mapping
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

HIDDEN = "***"

# The last word of a flag or query key (words split at '-', '_', '.', and camelCase) that names a
# credential: `--api-key`, `--hf-token`, `--auth`, `private_token`, `X-Amz-Signature`, `apiKey`. The last
# word only: `--max-tokens`, `--tokenizer`, `--auth-type` and `--ssl-keyfile` are no secrets.
SECRET_WORDS = frozenset({"token", "secret", "password", "passwd", "pwd", "key", "apikey", "auth", "credential",
                          "credentials", "signature", "sig"})
SHORT_SECRET_FLAGS = frozenset({"-p"})  # a password's short flag (mysql, psql's -W aside); its value kept if a port

# a URL's scheme, then userinfo up to the '@' before the host (no '/', space or quote in between)
_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.\-]*://)[^/\s@\"'<>]+@")
_QUERY = re.compile(r"([?&;]([A-Za-z][\w.\-]*)=)(?!\*\*\*)([^&#\s\"'\\<>]+)")
SECRET_NAME = re.compile(r"[A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY)")
_NAMED = r"\b([A-Z][A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY))"
_ASSIGNED = re.compile(_NAMED + r"=(?!\*\*\*)[^\s\"',;]+")
_JSON_VALUE = re.compile(r"\"" + _NAMED[2:] + r"\"(\s*:\s*)\"(?!\*\*\*\")(?:[^\"\\]|\\.)*\"")
# "Bearer" as written in a header (or "authorization: bearer"), then a credential-like word of 8+ characters
_BEARER = re.compile(r"((?:\bBearer|(?i:authorization:\s*bearer))\s+)(?!\*\*\*)[A-Za-z0-9._~+/=\-]{8,}")
# a flag, then its value: after '=' or spaces (`--api-key K`), or as the next quoted word of a list as JSON or
# Python write it (`"--api-key", "K"`, `'-p', 'K'`, `\"--auth\", \"K\"` inside a JSON string)
_FLAG_NAME = r"--?[A-Za-z][\w.\-]*"
_FLAG = re.compile(r"(?<![\w\-])(" + _FLAG_NAME + r")(=|\s+|\\?[\"']\s*,\s*\\?[\"'])(?!\*\*\*)(?!-)([^\s\"'\\]+)")
_WORD_SPLIT = re.compile(r"[-_.]+|(?<=[a-z0-9])(?=[A-Z])")
# what follows `-p` that is no password: a port (`-p 8000`, docker's `-p 8000:8000`), a placeholder (`-p
# {port}`), a path (`mkdir -p /tmp/x`, `./logs`, `~/x`, `$HOME/x`)
_KEPT_SHORT_VALUE = re.compile(r"[\d.:]+|\{\w+\}|[/~$].*|\.\.?/.*")


def secret_name(name: str) -> bool:
    """Whether a flag (`--api-key`) or a URL query key (`access-token`) names a credential: its last word is
    one of SECRET_WORDS."""
    words = [w for w in _WORD_SPLIT.split(name) if w]
    return bool(words) and words[-1].lower() in SECRET_WORDS


def secret_flag(word: str) -> bool:
    """Whether `word` is a flag whose value is a credential (`--api-key`, `--hf-token`, `-p`)."""
    if word in SHORT_SECRET_FLAGS:
        return True
    return word.startswith("--") and re.fullmatch(_FLAG_NAME, word) is not None and secret_name(word[2:])


def _hides(flag: str, value: str) -> bool:
    """Whether `value`, the word after `flag`, is hidden: a secret flag's, but a short flag's port,
    placeholder or path (`-p 8000`, `-p {port}`, `mkdir -p /x`) and a value hidden already are kept."""
    if value == HIDDEN or value.startswith("-") or not secret_flag(flag):
        return False
    return not (flag in SHORT_SECRET_FLAGS and _KEPT_SHORT_VALUE.fullmatch(value))


def _flag_value(m: re.Match[str]) -> str:
    flag, sep, value = m.group(1), m.group(2), m.group(3)
    return flag + sep + HIDDEN if _hides(flag, value) else m.group(0)


def _query_value(m: re.Match[str]) -> str:
    return m.group(1) + HIDDEN if secret_name(m.group(2)) else m.group(0)


def redact(text: str) -> str:
    """`text` with every credential it holds replaced by ***."""
    if not text:
        return text
    text = _USERINFO.sub(r"\1" + HIDDEN + "@", text)
    text = _QUERY.sub(_query_value, text)
    text = _ASSIGNED.sub(r"\1=" + HIDDEN, text)
    text = _JSON_VALUE.sub(r'"\1"\2"' + HIDDEN + '"', text)
    text = _BEARER.sub(r"\1" + HIDDEN, text)
    return _FLAG.sub(_flag_value, text)


def redact_bytes(data: bytes) -> bytes:
    """`redact` over bytes that are mostly text (a log, a pip freeze); undecodable bytes pass through."""
    return redact(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


def redact_value(value: Any) -> Any:
    """Strings anywhere in a JSON-like value redacted: a secret-named key's value hidden whole, and in a
    list (a command line) the word after a secret flag (`["--api-key", "K"]`)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: HIDDEN if isinstance(k, str) and SECRET_NAME.fullmatch(k) and v else redact_value(v)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        out: list[Any] = []
        for i, v in enumerate(value):
            before = value[i - 1] if i else None
            hide = isinstance(before, str) and isinstance(v, str) and _hides(before, v)
            out.append(HIDDEN if hide else redact_value(v))
        return out
    return value


TMP_WORD, PREFIX_WORD, HOME_WORD = "$TMPDIR", "$PYTHON_PREFIX", "~"
SYSTEM_ROOTS = frozenset({"/", "/usr", "/usr/local", "/opt", "/home"})  # too wide to stand for a machine
PACKAGE_CHECKOUT = str(Path(__file__).resolve().parents[1])  # the folder that holds llmbench/


def machine_roots() -> list[tuple[str, str]]:
    """This machine's folders a written path must not name, each with what it is written as ("" for
    relative), longest first: the working folder, the llmbench checkout, the temporary folder, the Python
    environment, the home folder."""
    roots: list[tuple[str, str]] = [(os.getcwd(), ""), (PACKAGE_CHECKOUT, ""), (tempfile.gettempdir(), TMP_WORD),
                                    ("/tmp", TMP_WORD), (sys.prefix, PREFIX_WORD), (os.path.expanduser("~"), HOME_WORD)]
    seen: dict[str, str] = {}
    for root, word in roots:
        for form in {root, os.path.realpath(root)}:
            form = form.rstrip("/")
            if form and form not in SYSTEM_ROOTS and form not in seen:
                seen[form] = word
    return sorted(seen.items(), key=lambda rw: -len(rw[0]))


def machine_paths(text: str, roots: Iterable[tuple[str, str]] | None = None) -> str:
    """`text` (a result set's JSON, a traceback) with every path under one of `roots` (`machine_roots`:
    this machine's) written without it: relative for the working folder and the checkout, else as its
    word (`$TMPDIR/x`). A root matches whole folder names only (`/tmp` not in `/tmpfs`)."""
    for root, word in machine_roots() if roots is None else roots:
        text = _root_pattern(root).sub(partial(_without_root, word), text)
    return text


@lru_cache(maxsize=64)
def _root_pattern(root: str) -> re.Pattern[str]:
    """`root` where a path starts (not inside a longer word or path), then '/' or the path's end."""
    return re.compile(r"(?<![\w.~$/-])" + re.escape(root) + r"(/|(?=[\"'\s\\:,;)\]}]|$))")


def _without_root(word: str, m: re.Match[str]) -> str:
    """A path's root as written: its word (`$TMPDIR/`), or nothing (relative; `.` for the root itself)."""
    if word:
        return word + m.group(1)
    return "" if m.group(1) else "."
