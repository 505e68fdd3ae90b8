"""A stdio MCP server's stderr, kept in its log file without the secrets it was given.

A server may print what it was started with: a token from a ``${VAR}`` in its arguments, its
env or its headers. The child writes into a pipe, not into the file; a thread reads the pipe
and writes the log with every such value (and the provider keys in agentsh's environment)
replaced, line by line. A secret split across two reads is still caught: text is written up to
the last complete line, or, for a line longer than :data:`LINE_MAX`, all but the tail a secret
could still begin in. The file stays readable by the user only.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TextIO

from agentsh.llm.client import environment_secrets

LOG_MAX_BYTES = 1 << 20  # past this the log starts afresh (the old one kept as .log.1)
LINE_MAX = 1 << 16  # a line without a newline is written in pieces past this
_READ = 1 << 16
MARK = "[REDACTED]"


def scrubbed(text: str, secrets: Sequence[str]) -> str:
    """``text`` with each secret value replaced (the longest first, so one that holds another
    goes whole): the one redaction of what a server says, in its log and in messages."""
    for secret in sorted(secrets, key=len, reverse=True):
        if secret and secret in text:
            text = text.replace(secret, MARK)
    return text


class StderrLog:
    """One start of one server: the file, the pipe the child writes, the thread between."""

    def __init__(self, path: Path, secrets: Sequence[str]) -> None:
        self.path = path
        self.secrets = tuple(s for s in {*secrets, *environment_secrets()} if s)
        self.mark = 0  # where this start's output begins in the file
        self.first_output = threading.Event()  # the first line is in the file (or EOF)
        self.drained = threading.Event()  # every writer closed the pipe; all is in the file
        self._writer: TextIO | None = None

    @contextlib.contextmanager
    def opened(self, header: str) -> Iterator[TextIO]:
        """The pipe's writing end, for the child's stderr; closed again on the way out."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            if self.path.stat().st_size > LOG_MAX_BYTES:
                self.path.replace(self.path.with_suffix(".log.1"))
        log_fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with contextlib.suppress(OSError):
            os.fchmod(log_fd, 0o600)  # a file made by an earlier version
        os.write(log_fd, f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {header}\n".encode())
        self.mark = os.lseek(log_fd, 0, os.SEEK_END)
        read_fd, write_fd = os.pipe()
        os.set_inheritable(read_fd, False)
        thread = threading.Thread(
            target=self._pump, args=(read_fd, log_fd), name="mcp-stderr", daemon=True
        )
        thread.start()
        self._writer = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        try:
            yield self._writer
        finally:
            self.release()

    def release(self) -> None:
        """Close agentsh's copy of the writing end (the started child holds its own), so the
        log is drained when the child ends."""
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(OSError):
                writer.close()

    def _pump(self, read_fd: int, log_fd: int) -> None:
        keep = max((len(s) for s in self.secrets), default=1) - 1
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        pending = ""
        try:
            while True:
                try:
                    chunk = os.read(read_fd, _READ)
                except OSError:
                    chunk = b""
                pending = scrubbed(pending + decoder.decode(chunk, final=not chunk), self.secrets)
                if not chunk:
                    self._write(log_fd, pending)
                    return
                cut = pending.rfind("\n") + 1
                if not cut and len(pending) > LINE_MAX:
                    cut = len(pending) - keep  # a secret may still begin in the tail kept
                if cut:
                    self._write(log_fd, pending[:cut])
                    pending = pending[cut:]
                    self.first_output.set()
        finally:
            os.close(read_fd)
            os.close(log_fd)
            self.first_output.set()
            self.drained.set()

    @staticmethod
    def _write(log_fd: int, text: str) -> None:
        data = text.encode("utf-8", "replace")
        with contextlib.suppress(OSError):
            while data:
                data = data[os.write(log_fd, data) :]
