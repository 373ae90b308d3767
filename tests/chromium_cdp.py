"""A headless Chromium driven over the DevTools protocol through a pipe (--remote-debugging-pipe: the
browser reads commands from fd 3 and writes replies to fd 4, each a JSON object ended by a NUL byte).
No Playwright, no websocket library: what Debian's chromium package gives is enough. Used by the
report's browser tests and for the screenshots of the published report.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
]


class Browser:
    """One page of a headless Chromium; `console` collects every console and log entry it reports."""

    def __init__(self, width: int = 1280, height: int = 900, timeout_s: float = 60.0) -> None:
        assert CHROMIUM is not None, "chromium is not installed"
        self._profile = tempfile.mkdtemp(prefix="llmbench-chromium-")
        to_browser_r, self._out = os.pipe()
        self._in, from_browser_w = os.pipe()
        def child() -> None:  # the browser's fds 3 and 4 are these pipe ends (inheritable copies)
            r, w = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10), fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={self._profile}", f"--window-size={width},{height}",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=child, close_fds=False,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        self._id = 0
        self._deadline = time.monotonic() + timeout_s
        self.console: list[str] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = self._deadline - time.monotonic()
            if left <= 0 or not select.select([self._in], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)  # type: ignore[no-any-return]

    def _event(self, msg: dict[str, Any]) -> None:
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Runtime.consoleAPICalled":
            self.console.append(f"console.{p['type']}: " + " ".join(str(a.get("value", a.get("description")))
                                                               for a in p.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            self.console.append(f"exception: {p['exceptionDetails'].get('text')}")
        elif method == "Log.entryAdded":
            e = p["entry"]
            self.console.append(f"log.{e['level']} ({e['source']}): {e['text']}")

    def call(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self._session
        os.write(self._out, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})  # type: ignore[no-any-return]
            self._event(reply)

    def wait_event(self, method: str) -> None:
        while True:
            msg = self._read()
            self._event(msg)
            if msg.get("method") == method:
                return

    def open(self, path: Path) -> None:
        """Load a file and wait for its load event."""
        self.call("Page.navigate", session=True, url=path.resolve().as_uri())
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        got = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        if "exceptionDetails" in got:
            raise RuntimeError(f"evaluate failed: {got['exceptionDetails']}")
        return got["result"].get("value")

    def screenshot(self, out: Path, clip: dict[str, float] | None = None) -> None:
        """A PNG of the viewport, or of `clip` (x, y, width, height in CSS px, page coordinates)."""
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": clip is not None}
        if clip:
            params["clip"] = {**clip, "scale": 1}
        data = self.call("Page.captureScreenshot", session=True, **params)["data"]
        out.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError, TimeoutError):
            self.call("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._out)
        os.close(self._in)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# Every <text> of every chart: its rendered font size in CSS px (computed size times the SVG's scale on
# screen) and the text of each figure. Runs in the page through the protocol (the page has no scripts).
CHART_TEXT_JS = """(() => {
  const figs = [...document.querySelectorAll('figure')];
  return figs.map(f => {
    const texts = [...f.querySelectorAll('svg text')];
    const sizes = texts.filter(t => t.textContent.trim()).map(t => {
      const px = parseFloat(getComputedStyle(t).fontSize);
      const m = t.getScreenCTM();
      return px * Math.sqrt(Math.abs(m.a * m.d - m.b * m.c));
    });
    return {title: f.getAttribute('aria-label'), text: texts.map(t => t.textContent).join(' | '),
            min_px: sizes.length ? Math.min(...sizes) : null, n: sizes.length,
            top: f.getBoundingClientRect().top + window.scrollY,
            width: f.getBoundingClientRect().width, height: f.getBoundingClientRect().height};
  });
})()"""
