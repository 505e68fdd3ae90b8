"""Stdout belongs to the protocol: nothing else may write there, from the first moment on.

An ACP client reads the agent's stdout as JSON-RPC frames, one per line, and one stray line (a
library's ``print``, a warning, a child process's output) corrupts the stream; some clients drop
the agent for it. So before anything else runs, :func:`claim_stdio` moves the protocol onto
private copies of file descriptors 0 and 1 and points fd 1 at stderr and fd 0 at /dev/null.
Whatever prints afterwards, in Python or in C, in this process or in a command it starts, lands
on stderr (which editors keep as the agent's log), and no child process can read the client's
messages. Logging and Python warnings go to stderr too.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
import threading
from dataclasses import dataclass
from typing import BinaryIO

#: Messages may carry whole files (an embedded resource, a file read through the editor).
STREAM_LIMIT_BYTES = 50 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ProtocolPipes:
    """The descriptors the protocol reads and writes, out of everyone else's reach."""

    read_fd: int
    write_fd: int


def claim_stdio() -> ProtocolPipes:
    """Take fds 0 and 1 for the protocol; fd 1 becomes stderr, fd 0 /dev/null."""
    sys.stdout.flush()
    read_fd = os.dup(0)  # os.dup makes non-inheritable copies: children never see them
    write_fd = os.dup(1)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="agentsh acp: %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logging.captureWarnings(True)
    return ProtocolPipes(read_fd, write_fd)


async def open_streams(pipes: ProtocolPipes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Asyncio streams over the protocol's descriptors (the reader, then the writer). Pipes,
    sockets and terminals are watched by the event loop; a regular file (``agentsh acp <
    requests.jsonl > replies.jsonl``) is read by a thread and written directly."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STREAM_LIMIT_BYTES)
    source = os.fdopen(pipes.read_fd, "rb", buffering=0)
    if _is_stream(pipes.read_fd):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), source)
    else:
        threading.Thread(target=_feed, args=(loop, source, reader), daemon=True).start()
    protocol = asyncio.streams.FlowControlMixin()
    sink = os.fdopen(pipes.write_fd, "wb", buffering=0)
    transport: asyncio.WriteTransport
    if _is_stream(pipes.write_fd):
        transport, _ = await loop.connect_write_pipe(lambda: protocol, sink)
    else:
        transport = _FileTransport(sink)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


def _is_stream(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def _feed(loop: asyncio.AbstractEventLoop, source: BinaryIO, reader: asyncio.StreamReader) -> None:
    try:
        while data := source.readline():
            loop.call_soon_threadsafe(reader.feed_data, data)
    finally:
        loop.call_soon_threadsafe(reader.feed_eof)


class _FileTransport(asyncio.WriteTransport):
    """Writes go straight to a regular file (which never blocks for long)."""

    def __init__(self, sink: BinaryIO) -> None:
        super().__init__()
        self._sink = sink
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._closing:
            self._sink.write(data)

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True

    def can_write_eof(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0
