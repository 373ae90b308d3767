"""Secrets out of everything llmbench writes or prints: a result set, a bundle's files, a log, the
terminal. One function, `redact`, applied where text leaves the process; what it hides:

- the userinfo of any URL (`https://user:TOKEN@host`, `git+https://TOKEN@github.com/x.git` in a pip
  freeze, `ray://user:pw@head:10001`),
- token-like query values (`?token=`, `&access_token=`, `api_key`, `password`, `sig`),
- the value of a secret-named variable (`RAY_AUTH_TOKEN=...`, `"HF_TOKEN": "..."`), and of a secret-named
  flag (`--ray-auth-token X`, `--api-key=X`),
- a bearer credential (`Authorization: Bearer X`, as Ray's token authentication sends its token).

A text without any of these comes back unchanged (a case id hashed from redacted params is the id of
the same params before)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

HIDDEN = "***"

# a URL's scheme, then userinfo up to the '@' before the host (no '/', space or quote in between)
_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.\-]*://)[^/\s@\"'<>]+@")
_QUERY = re.compile(r"([?&;](?:access_token|auth_token|token|api_key|apikey|key|password|secret|sig)=)[^&#\s\"']+",
                    re.IGNORECASE)
SECRET_NAME = re.compile(r"[A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY)")
_NAMED = r"\b([A-Z][A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY))"
_ASSIGNED = re.compile(_NAMED + r"=(?!\*\*\*)[^\s\"',;]+")
_JSON_VALUE = re.compile(r"\"" + _NAMED[2:] + r"\"(\s*:\s*)\"(?!\*\*\*\")(?:[^\"\\]|\\.)*\"")
# "Bearer" as written in a header (or "authorization: bearer"), then a credential-like word of 8+ characters
_BEARER = re.compile(r"((?:\bBearer|(?i:authorization:\s*bearer))\s+)(?!\*\*\*)[A-Za-z0-9._~+/=\-]{8,}")
_FLAG = re.compile(r"(--[a-z0-9-]*(?:token|secret|password|api-key)(?:=|\s+))(?!\*\*\*)(?!-)[^\s\"']+")


def redact(text: str) -> str:
    """`text` with every credential it holds replaced by ***."""
    if not text:
        return text
    text = _USERINFO.sub(r"\1" + HIDDEN + "@", text)
    text = _QUERY.sub(r"\1" + HIDDEN, text)
    text = _ASSIGNED.sub(r"\1=" + HIDDEN, text)
    text = _JSON_VALUE.sub(r'"\1"\2"' + HIDDEN + '"', text)
    text = _BEARER.sub(r"\1" + HIDDEN, text)
    return _FLAG.sub(r"\1" + HIDDEN, text)


def redact_bytes(data: bytes) -> bytes:
    """`redact` over bytes that are mostly text (a log, a pip freeze); undecodable bytes pass through."""
    return redact(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


def redact_value(value: Any) -> Any:
    """Strings anywhere in a JSON-like value redacted (a secret-named key's value hidden whole)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: HIDDEN if isinstance(k, str) and SECRET_NAME.fullmatch(k) and v else redact_value(v)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v) for v in value]
    return value
