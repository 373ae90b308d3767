"""What an engine's processes log, read while it runs: vLLM's engine core and workers are child
processes that log to the stdout they inherit, so what they chose at start (the all-reduce backend of
a tensor-parallel engine) is only in their log. `LogTee` points this process's stdout at a pipe; a
thread passes every byte on to where stdout pointed before (the harness still reads progress lines
and the log tail there) and keeps the lines that match the caller's patterns."""

from __future__ import annotations

import os
import re
import sys
import threading


class LogTee:
    """Lines on file descriptor `fd` (stdout) from this process and every child started while the tee
    is open, passed through unchanged; lines matching `keep` are kept in `lines`."""

    def __init__(self, keep: re.Pattern[str], fd: int = 1) -> None:
        self.keep = keep
        self.lines: list[str] = []
        self._fd = fd
        sys.stdout.flush()
        self._saved = os.dup(fd)
        read, write = os.pipe()
        os.dup2(write, fd)
        os.close(write)
        self._pump = threading.Thread(target=self._pass_on, args=(read, os.dup(self._saved)), daemon=True)
        self._pump.start()

    def _pass_on(self, read: int, out: int) -> None:
        """Until every writer closed the pipe: copy to `out`, keep matching lines."""
        pending = b""
        with os.fdopen(read, "rb", buffering=0) as src:
            while chunk := src.read(1 << 16):
                os.write(out, chunk)
                pending += chunk
                *whole, pending = pending.split(b"\n")
                self.lines.extend(t for t in (w.decode(errors="replace") for w in whole) if self.keep.search(t))
        os.close(out)

    def close(self, wait_s: float = 5.0) -> None:
        """Point stdout back where it was. Children still running keep their end of the pipe: the
        thread ends when the last of them exits (waited for here up to `wait_s`)."""
        sys.stdout.flush()
        os.dup2(self._saved, self._fd)
        os.close(self._saved)
        self._pump.join(wait_s)
